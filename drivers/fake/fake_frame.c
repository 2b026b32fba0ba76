/*
 * Fake driver, two-sided frames: one frame is one AF_UNIX seqpacket
 * message [16-byte header, head, body], written straight from the caller's
 * memory and received scattered into [header, head buffer, engine iovec],
 * so a body lands in engine memory without an extra copy.
 *
 * A frame waits in its endpoint's queue (drivers/common's) until the
 * modelled link lets it go (its due time) and the socket takes it;
 * send_done comes from progress.
 */
#include "drivers/fake/fake_internal.h"
#include "util/iov.h"
#include "util/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* Messages one endpoint may receive per progress call (fairness). */
#define FAKE_RX_BUDGET 16

_Static_assert(FAKE_FRAME_HDR_LEN <= DC_SEND_HDR_MAX,
	       "the frame header fits a send record");

static bool faults_left(const struct mrail_drv *drv)
{
	return drv->par.faults < 0 ||
	       drv->cnt.errors_injected < (uint64_t)drv->par.faults;
}

/* 0 sent, 1 held (stall fault), -EAGAIN socket full, -EPIPE the drop
 * fault fired, or -errno. */
static int write_frame(struct mrail_drv_ep *ep, struct dc_send *rec)
{
	struct mrail_drv *drv = fake_drv(ep);
	bool faulty = fake_rail_faulty(drv, ep->rail);
	ssize_t n;

	/* A black hole: frames stay queued, no error, ever. A connection
	 * that sent into an outage stays so when the link is back: the
	 * engine has to find it dead and reconnect. */
	if (ep->stalled)
		return 1;
	if (faulty && (fake_rail_out(drv, ep->rail) ||
		       (drv->par.stall_after >= 0 &&
			drv->frames_posted_faulty >=
				(uint64_t)drv->par.stall_after &&
			faults_left(drv)))) {
		drv->cnt.errors_injected++;
		ep->stalled = true;
		return 1;
	}

	if (faulty && drv->par.drop_after >= 0 &&
	    drv->frames_posted_faulty >= (uint64_t)drv->par.drop_after &&
	    faults_left(drv)) {
		ep->drop_injected = true;
		drv->cnt.errors_injected++;
		dc_ep_need_attention(&ep->dc);
		return -EPIPE;
	}
	n = dc_sock_writev(ep->dc.poll.fd, rec->iov, rec->iov_cnt);
	if (n < 0)
		return (int)n;
	if ((uint64_t)n != rec->left) /* seqpacket: all or nothing */
		return -EMSGSIZE;
	if (faulty)
		drv->frames_posted_faulty++;
	drv->cnt.frames++;
	drv->cnt.body_bytes += rec->body_len;
	return 0;
}

int fake_flush(struct mrail_drv_ep *ep, double now, double *next_due)
{
	int rc = 0;

	while (ep->dc.sq_head && !ep->drop_injected && !ep->dc.send_errno) {
		struct dc_send *rec = ep->dc.sq_head;

		if (rec->due > now) {
			if (rec->due < *next_due)
				*next_due = rec->due;
			break;
		}
		rc = write_frame(ep, rec);
		if (rc == 1) { /* stalled: nothing will wake it */
			rc = 0;
			break;
		}
		if (rc == -EAGAIN) {
			ep->want_out = true;
			rc = 0;
			break;
		}
		if (rc == -EPIPE && ep->drop_injected) {
			rc = 0;
			break;
		}
		if (rc < 0)
			break;
		dc_done_push(dc_sendq_pop(&ep->dc), 0);
	}
	dc_ep_update_events(&ep->dc);
	return rc;
}

/* ---- posting ----------------------------------------------------------- */

int fake_send(struct mrail_drv_ep *ep, const void *head, size_t head_len,
	      const struct iovec *body, int body_cnt, void *send_ctx)
{
	static const struct dc_frame_limits lim = {
		.max_head = FAKE_MAX_HEAD, .max_iov = FAKE_MAX_BODY_IOV,
		.max_body = FAKE_MAX_BODY, .hdr_len = FAKE_FRAME_HDR_LEN};
	struct dc_send *rec;
	int rc = dc_send_begin(ep ? &ep->dc : NULL, &lim, head, head_len, body,
			       body_cnt, send_ctx, &rec);

	if (rc < 0)
		return rc;
	fake_put_le32(rec->hdr, FAKE_FRAME_MAGIC | FAKE_FRAME_VERSION << 24);
	fake_put_le32(rec->hdr + 4, (uint32_t)head_len);
	fake_put_le64(rec->hdr + 8, rec->body_len);
	rec->due = fake_link_due(fake_drv(ep), ep->rail, rec->left);

	/* Lowest-latency path: nothing queued, no modelled delay. */
	if (ep->dc.state == DC_EP_CONNECTED && !ep->dc.sq_head &&
	    rec->due == 0 && !ep->drop_injected && !ep->dc.send_errno) {
		rc = write_frame(ep, rec);
		if (rc == 0) {
			dc_done_push(rec, 0);
			return 0;
		}
		if (rc == -EAGAIN) {
			ep->want_out = true;
			dc_ep_update_events(&ep->dc);
		} else if (rc != -EPIPE && rc != 1) {
			ep->dc.send_errno = -rc; /* ep_error from progress */
			dc_ep_need_attention(&ep->dc);
		}
	}
	dc_sendq_push(&ep->dc, rec);
	if (rec->due > 0)
		fake_timer_want(fake_drv(ep), rec->due);
	return 0;
}

/*
 * inject (drivers/driver.h), offered with the parameter inject=on only:
 * a fake connection can lose frames with its peer alive (drop_after,
 * stall_after, outage), which the contract rules out for a driver that
 * injects. That is what it is for: a frame the drop or stall fault hits
 * is reported taken and is lost, so that tests see what the engine does
 * when injected frames are lost (it fails the peer, docs/failover.md).
 * Taken only when it can be written to the socket now.
 */
int fake_inject(struct mrail_drv_ep *ep, const struct iovec *head, int cnt)
{
	enum { PIECES = 8 };
	union {
		struct dc_send rec;
		char space[sizeof(struct dc_send) +
			   (PIECES + 1) * sizeof(struct iovec)];
	} u;
	struct dc_send *rec = &u.rec;
	uint64_t len = mrail_iov_length(head, cnt);

	if (!fake_drv(ep)->par.inject || ep->dc.state != DC_EP_CONNECTED ||
	    ep->dc.sq_head || ep->drop_injected || ep->dc.send_errno ||
	    fake_drv(ep)->par.lat[ep->rail] > 0 ||
	    fake_drv(ep)->par.bw[ep->rail] > 0) /* modelled: not at once */
		return 0;
	if (cnt < 1 || cnt > PIECES || len > FAKE_MAX_HEAD) {
		mrail_error("fake: injection of a %llu-byte frame in %d pieces "
			    "(limits %d pieces, %zu bytes)",
			    (unsigned long long)len, cnt, PIECES,
			    FAKE_MAX_HEAD);
		return MRAIL_ERR_INVALID;
	}
	memset(rec, 0, sizeof *rec);
	fake_put_le32(rec->hdr, FAKE_FRAME_MAGIC | FAKE_FRAME_VERSION << 24);
	fake_put_le32(rec->hdr + 4, (uint32_t)len);
	fake_put_le64(rec->hdr + 8, 0);
	rec->iov[0] = (struct iovec){rec->hdr, FAKE_FRAME_HDR_LEN};
	memcpy(rec->iov + 1, head, (size_t)cnt * sizeof *head);
	rec->iov_cnt = rec->iov_cap = cnt + 1;
	rec->left = len + FAKE_FRAME_HDR_LEN;
	int rc = write_frame(ep, rec);
	if (rc == 0 || rc == 1 || rc == -EPIPE)
		return 1; /* sent, or lost to the stall or drop fault */
	if (rc == -EAGAIN)
		return 0;
	return rc == -EMSGSIZE ? MRAIL_ERR_INVALID : MRAIL_ERR_PEER;
}

/* ---- receiving --------------------------------------------------------- */

static bool rx_header_ok(struct mrail_drv_ep *ep, const uint8_t *h,
			 ssize_t msg_len, uint32_t *head_len,
			 uint64_t *body_len)
{
	uint32_t magic = fake_get_le32(h);

	if (msg_len < FAKE_FRAME_HDR_LEN) {
		fake_ep_fail(ep, MRAIL_ERR_PROTO, false,
			     "%s sent a %zd-byte message, shorter than a "
			     "frame header (%d bytes)",
			     ep->dc.remote_name, msg_len, FAKE_FRAME_HDR_LEN);
		return false;
	}
	if ((magic & FAKE_FRAME_MAGIC_MASK) != FAKE_FRAME_MAGIC) {
		fake_ep_fail(ep, MRAIL_ERR_PROTO, false,
			     "%s sent a message that is not a fake driver "
			     "frame (starts %02x %02x %02x, expected \"MRF\")",
			     ep->dc.remote_name, h[0], h[1], h[2]);
		return false;
	}
	if (magic >> 24 != FAKE_FRAME_VERSION) {
		fake_ep_fail(ep, MRAIL_ERR_PROTO, false,
			     "%s speaks fake frame version %u, this driver "
			     "speaks %u",
			     ep->dc.remote_name, magic >> 24, FAKE_FRAME_VERSION);
		return false;
	}
	*head_len = fake_get_le32(h + 4);
	*body_len = fake_get_le64(h + 8);
	if (*head_len > FAKE_MAX_HEAD || *body_len > FAKE_MAX_BODY ||
	    (uint64_t)msg_len != FAKE_FRAME_HDR_LEN + *head_len + *body_len) {
		fake_ep_fail(ep, MRAIL_ERR_PROTO, false,
			     "%s sent a %zd-byte message announcing a %u-byte "
			     "head and a %llu-byte body (limits %zu, %llu)",
			     ep->dc.remote_name, msg_len, *head_len,
			     (unsigned long long)*body_len, FAKE_MAX_HEAD,
			     (unsigned long long)FAKE_MAX_BODY);
		return false;
	}
	return true;
}

/* recvmsg into iov; the message length, or -errno. */
static ssize_t rx_msg(struct mrail_drv_ep *ep, struct iovec *iov, int cnt,
		      int flags, int *msg_flags)
{
	struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)cnt};
	ssize_t n;

	do {
		n = recvmsg(ep->dc.poll.fd, &msg, flags | MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (msg_flags)
		*msg_flags = msg.msg_flags;
	return n < 0 ? -errno : n;
}

static bool rx_dst_ok(struct mrail_drv_ep *ep, const struct iovec *dst,
		      int cnt, uint64_t body_len)
{
	if (cnt < 1 || cnt > FAKE_MAX_BODY_IOV) {
		fake_ep_fail(ep, MRAIL_ERR_PROTO, false,
			     "engine gave %d receive iovec entries for a "
			     "%llu-byte body from %s (allowed 1..%d)",
			     cnt, (unsigned long long)body_len, ep->dc.remote_name,
			     FAKE_MAX_BODY_IOV);
		return false;
	}
	if ((uint64_t)mrail_iov_length(dst, cnt) != body_len) {
		fake_ep_fail(ep, MRAIL_ERR_PROTO, false,
			     "engine gave a %zu-byte receive iovec for a "
			     "%llu-byte body from %s",
			     mrail_iov_length(dst, cnt),
			     (unsigned long long)body_len, ep->dc.remote_name);
		return false;
	}
	return true;
}

/* One message; false when the endpoint is empty or no longer usable. */
static bool rx_one(struct mrail_drv_ep *ep)
{
	const struct mrail_drv_upcalls *up = fake_drv(ep)->dc.base.up;
	uint8_t hdr[FAKE_FRAME_HDR_LEN];
	struct iovec iov[FAKE_MAX_BODY_IOV + 2];
	uint32_t head_len;
	uint64_t body_len;
	ssize_t n, total;
	int cnt = FAKE_MAX_BODY_IOV, flags;
	void *cookie;

	/* MSG_TRUNC: the length of the whole message, not of what fits. */
	do {
		total = recv(ep->dc.poll.fd, hdr, sizeof hdr,
			     MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
	} while (total < 0 && errno == EINTR);
	if (total == 0) {
		fake_ep_fail(ep, MRAIL_ERR_PEER, false,
			     "connection closed by peer %s", ep->dc.remote_name);
		return false;
	}
	if (total < 0) {
		if (errno != EAGAIN)
			fake_ep_fail(ep, MRAIL_ERR_PEER, false,
				     "receive from %s failed: %s",
				     ep->dc.remote_name, strerror(errno));
		return false;
	}
	if (!rx_header_ok(ep, hdr, total, &head_len, &body_len))
		return false;
	if (!ep->head_buf) {
		ep->head_buf = malloc(FAKE_MAX_HEAD);
		if (!ep->head_buf) {
			fake_ep_fail(ep, MRAIL_ERR_NOMEM, false,
				     "no memory for a receive buffer for %s",
				     ep->dc.remote_name);
			return false;
		}
	}
	iov[0].iov_base = hdr;
	iov[0].iov_len = sizeof hdr;
	iov[1].iov_base = ep->head_buf;
	iov[1].iov_len = head_len;
	if (body_len == 0) {
		n = rx_msg(ep, iov, 2, 0, &flags);
		if (n != total || (flags & MSG_TRUNC)) {
			fake_ep_fail(ep, MRAIL_ERR_PEER, false,
				     "receive from %s: message changed "
				     "between peek and read (%zd)",
				     ep->dc.remote_name, n);
			return false;
		}
		fake_drv(ep)->cnt.frames_received++;
		up->recv_frame(ep->dc.ctx, ep->head_buf, head_len);
		return ep->dc.state == DC_EP_CONNECTED;
	}
	/* The engine picks the body's place from the head: peek it. */
	n = rx_msg(ep, iov, 2, MSG_PEEK, NULL);
	if (n != (ssize_t)(FAKE_FRAME_HDR_LEN + head_len)) {
		fake_ep_fail(ep, MRAIL_ERR_PEER, false,
			     "peek of a frame head from %s failed (%zd)",
			     ep->dc.remote_name, n);
		return false;
	}
	cookie = up->recv_body(ep->dc.ctx, ep->head_buf, head_len, body_len,
			       iov + 2, &cnt);
	if (ep->dc.state != DC_EP_CONNECTED)
		return false;
	if (!cookie) {
		fake_ep_fail(ep, MRAIL_ERR_PROTO, false,
			     "engine rejected a frame with a %u-byte head and "
			     "a %llu-byte body from %s",
			     head_len, (unsigned long long)body_len,
			     ep->dc.remote_name);
		return false;
	}
	if (!rx_dst_ok(ep, iov + 2, cnt, body_len))
		return false;
	n = rx_msg(ep, iov, cnt + 2, 0, &flags);
	if (n != total || (flags & MSG_TRUNC)) {
		fake_ep_fail(ep, MRAIL_ERR_PEER, false,
			     "receive of a frame body from %s failed (%zd of "
			     "%zd bytes)",
			     ep->dc.remote_name, n, total);
		return false;
	}
	fake_drv(ep)->cnt.frames_received++;
	up->recv_body_done(ep->dc.ctx, cookie);
	return ep->dc.state == DC_EP_CONNECTED;
}

void fake_rx_process(struct mrail_drv_ep *ep)
{
	for (int i = 0; i < FAKE_RX_BUDGET && rx_one(ep); i++)
		;
}
