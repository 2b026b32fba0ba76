/*
 * Frames into the peer's ring. A frame is copied in as far as it fits at
 * once; the rest waits in the endpoint's queue (drivers/common's send
 * records: its bytes are the backlog) and moves on from progress as the
 * consumer frees space. send_done comes from drivers/common's completion
 * list, from progress only.
 */
#include "drivers/shm/shm_internal.h"
#include "mrail.h"
#include "util/iov.h"
#include "util/log.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

static const uint8_t zeros[SHM_FRAME_ALIGN];

/* The header's first word is stored last (shm_ring_put_word): the record
 * carries zeros there. A frame with a body vector has a 16-byte header. */
static const struct dc_frame_limits limits_head = {
	.max_head = SHM_MAX_HEAD,
	.max_iov = SHM_MAX_BODY_IOV,
	.max_body = SHM_MAX_BODY,
	.hdr_len = 8,
};
static const struct dc_frame_limits limits_body = {
	.max_head = SHM_MAX_HEAD,
	.max_iov = SHM_MAX_BODY_IOV,
	.max_body = SHM_MAX_BODY,
	.hdr_len = 16,
};

static const struct dc_frame_limits *frame_limits(int body_cnt)
{
	return body_cnt ? &limits_body : &limits_head;
}

/*
 * Nothing queued and room for the whole frame: straight into the ring,
 * without a queued record (the common case of small messages, where the
 * queue's bookkeeping was a quarter of the driver's share of a send).
 * Returns 1 if the frame left, 0 to queue it, < 0 on error.
 */
static int send_whole(struct mrail_drv_ep *ep, const void *head,
		      size_t head_len, const struct iovec *body, int body_cnt,
		      void *send_ctx)
{
	const struct dc_frame_limits *lim = frame_limits(body_cnt);
	uint64_t body_len;
	int rc = dc_send_check(&ep->dc, lim, head, head_len, body, body_cnt,
			       &body_len);

	if (rc)
		return rc;
	uint64_t at = shm_pad64(ep->tx.pos), pad = at - ep->tx.pos;
	uint64_t total = pad + lim->hdr_len + head_len + body_len;
	if (shm_ring_space(&ep->tx, total) < total)
		return 0;
	struct dc_send *rec = dc_send_record(&ep->dc, send_ctx);
	if (!rec)
		return MRAIL_ERR_NOMEM;
	if (pad)
		shm_ring_write(&ep->tx, zeros, pad);
	ep->tx.pos += 8; /* the word, stored last */
	if (body_cnt) {
		uint8_t len[8];
		shm_put_le64(len, body_len);
		shm_ring_write(&ep->tx, len, sizeof len);
	}
	shm_ring_write(&ep->tx, head, head_len);
	for (int i = 0; i < body_cnt; i++)
		shm_ring_write(&ep->tx, body[i].iov_base, body[i].iov_len);
	shm_ring_put_word(&ep->tx, at,
			  shm_frame_word(at, (uint32_t)head_len, body_cnt, 1));
	if (shm_ring_publish(&ep->tx))
		shm_ring_bell(ep);
	dc_done_push(rec, 0);
	return 1;
}

/*
 * A frame gathered from pieces, straight into the ring or not at all
 * (driver.h): the engine's small messages go from the caller's buffer
 * into the ring with no staging copy and no send record.
 */
int shm_inject(struct mrail_drv_ep *ep, const struct iovec *head, int cnt)
{
	/* A failed connection too: send reports it as it always has. */
	if (ep->dc.state != DC_EP_CONNECTED || ep->dc.sq_head)
		return 0;
	uint64_t len = mrail_iov_length(head, cnt);
	if (cnt < 1 || len == 0 || len > SHM_MAX_HEAD) {
		mrail_error("shm: injection of a %llu-byte frame in %d pieces "
			    "(limit %zu bytes)", (unsigned long long)len, cnt,
			    SHM_MAX_HEAD);
		return MRAIL_ERR_INVALID;
	}
	uint64_t at = shm_pad64(ep->tx.pos), pad = at - ep->tx.pos;
	uint64_t total = pad + limits_head.hdr_len + len;
	if (shm_ring_space(&ep->tx, total) < total)
		return 0;
	if (pad)
		shm_ring_write(&ep->tx, zeros, pad);
	ep->tx.pos += 8; /* the word, stored last */
	for (int i = 0; i < cnt; i++)
		shm_ring_write(&ep->tx, head[i].iov_base, head[i].iov_len);
	shm_ring_put_word(&ep->tx, at,
			  shm_frame_word(at, (uint32_t)len, 0, 1));
	if (shm_ring_publish(&ep->tx))
		shm_ring_bell(ep);
	return 1;
}

int shm_send(struct mrail_drv_ep *ep, const void *head, size_t head_len,
	     const struct iovec *body, int body_cnt, void *send_ctx)
{
	struct dc_send *rec;
	int rc;

	if (!ep->dc.sq_head && ep->dc.state == DC_EP_CONNECTED) {
		rc = send_whole(ep, head, head_len, body, body_cnt, send_ctx);
		if (rc != 0)
			return rc < 0 ? rc : MRAIL_OK;
	}
	rc = dc_send_begin(&ep->dc, frame_limits(body_cnt), head, head_len,
			   body, body_cnt, send_ctx, &rec);
	if (rc)
		return rc;
	memset(rec->hdr, 0, 8); /* the word: at flush time */
	if (body_cnt)
		shm_put_le64(rec->hdr + 8, rec->body_len);
	dc_sendq_push(&ep->dc, rec);
	if (ep->dc.state == DC_EP_CONNECTED)
		shm_flush(ep);
	return MRAIL_OK;
}

void shm_ring_bell(struct mrail_drv_ep *ep)
{
	uint64_t one = 1;

	/* EAGAIN: the counter is full, the consumer will wake anyway. */
	if (write(ep->peer_bell, &one, sizeof one) < 0 && errno != EAGAIN)
		mrail_debug("shm: doorbell of %s: %s", ep->dc.remote_name,
			    strerror(errno));
}

/* Copy the head record's next bytes, at most space; returns how many. */
static uint64_t write_rec(struct shm_ring *r, const struct dc_send *rec,
			  uint64_t space)
{
	uint64_t done = 0;

	for (int i = rec->iov_pos; i < rec->iov_cnt && done < space; i++) {
		uint64_t n = rec->iov[i].iov_len;
		if (n > space - done)
			n = space - done;
		shm_ring_write(r, rec->iov[i].iov_base, n);
		done += n;
	}
	return done;
}

int shm_flush(struct mrail_drv_ep *ep)
{
	struct dc_ep *dc = &ep->dc;
	uint64_t wrote = 0;
	int frames = 0;

	while (dc->sq_head) {
		struct dc_send *rec = dc->sq_head;
		bool fresh = rec->iov_pos == 0 &&
			     rec->iov[0].iov_base == (void *)rec->hdr;
		uint64_t at = fresh ? shm_pad64(ep->tx.pos) : ep->tx.pos;
		uint64_t pad = at - ep->tx.pos;
		/* A fresh frame starts only with its whole header in. */
		uint64_t need = pad + (fresh ? rec->iov[0].iov_len : 1);
		uint64_t space = shm_ring_space(&ep->tx, pad + rec->left);

		/* Full: have the consumer wake us when it frees space, unless
		 * it did so just now. */
		if (space < need && !(shm_ring_want_space(&ep->tx) &&
				      (space = shm_ring_space(&ep->tx, need)) >=
					      need))
			break;
		if (pad) {
			shm_ring_write(&ep->tx, zeros, pad);
			space -= pad;
			wrote += pad;
		}
		uint64_t left = rec->left;
		uint64_t word = fresh ? shm_frame_word(
						at, (uint32_t)rec->iov[1].iov_len,
						rec->iov[0].iov_len == 16, 0)
				      : 0;
		uint64_t n = write_rec(&ep->tx, rec, space);
		if (fresh)
			shm_ring_put_word(&ep->tx, at,
					  word | (n == left ? SHM_W_WHOLE : 0));
		wrote += n;
		dc_sendq_consume(dc, n);
		if (n < left)
			break;
		frames++;
	}
	if (wrote && shm_ring_publish(&ep->tx))
		shm_ring_bell(ep);
	return frames;
}
