/*
 * Send records and the completion list of the shm driver. A frame is
 * copied into the peer's ring as far as it fits at once; the rest waits
 * in the endpoint's queue (its bytes are the backlog) and moves on from
 * progress as the consumer frees space. send_done upcalls come from the
 * completion list, from progress only, in posting order per endpoint.
 */
#include "drivers/shm/shm_internal.h"
#include "mrail.h"
#include "util/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const uint8_t zeros[8];

/* Records with room for this many body entries are kept for reuse. */
#define SHM_SEND_COMMON_IOV 4

static struct shm_send *send_alloc(struct mrail_drv *drv, int iov_cnt)
{
	struct shm_send *s;

	if (iov_cnt <= SHM_SEND_COMMON_IOV + 4 && drv->send_free) {
		s = drv->send_free;
		drv->send_free = s->next;
		return s;
	}
	if (iov_cnt < SHM_SEND_COMMON_IOV + 4)
		iov_cnt = SHM_SEND_COMMON_IOV + 4;
	return malloc(sizeof *s + (size_t)iov_cnt * sizeof s->iov[0]);
}

static void send_free(struct mrail_drv *drv, struct shm_send *s)
{
	if (s->iov_cnt <= SHM_SEND_COMMON_IOV + 4) {
		s->next = drv->send_free;
		drv->send_free = s;
	} else {
		free(s);
	}
}

int shm_send(struct mrail_drv_ep *ep, const void *head, size_t head_len,
	     const struct iovec *body, int body_cnt, void *send_ctx)
{
	struct mrail_drv *drv = ep->drv;
	uint64_t body_len = 0;

	if (ep->state == SHM_EP_FAILED || ep->state == SHM_EP_CLOSED)
		return MRAIL_ERR_PEER;
	if (head_len > SHM_MAX_HEAD || body_cnt < 0 ||
	    body_cnt > SHM_MAX_BODY_IOV)
		return MRAIL_ERR_INVALID;
	for (int i = 0; i < body_cnt; i++)
		body_len += body[i].iov_len;
	if (body_len > SHM_MAX_BODY)
		return MRAIL_ERR_INVALID;

	struct shm_send *s = send_alloc(drv, body_cnt + 4);
	if (!s)
		return MRAIL_ERR_NOMEM;
	s->next = NULL;
	s->send_ctx = send_ctx;
	shm_put_le32(s->hdr, SHM_FRAME_MAGIC | SHM_FRAME_VERSION << 24);
	shm_put_le32(s->hdr + 4, (uint32_t)head_len);
	shm_put_le64(s->hdr + 8, body_len);
	int n = 0;
	s->iov[n++] = (struct iovec){s->hdr, SHM_FRAME_HDR_LEN};
	s->iov[n++] = (struct iovec){(void *)head, head_len};
	s->iov[n++] = (struct iovec){(void *)zeros, shm_pad8(head_len) - head_len};
	for (int i = 0; i < body_cnt; i++)
		if (body[i].iov_len)
			s->iov[n++] = body[i];
	s->iov[n++] = (struct iovec){(void *)zeros, shm_pad8(body_len) - body_len};
	s->iov_cnt = n;
	s->iov_idx = 0;
	s->iov_off = 0;
	s->left = SHM_FRAME_HDR_LEN + shm_pad8(head_len) + shm_pad8(body_len);
	ep->backlog += s->left;
	if (ep->sq_tail)
		ep->sq_tail->next = s;
	else
		ep->sq_head = s;
	ep->sq_tail = s;
	if (ep->state == SHM_EP_CONNECTED)
		shm_flush(ep);
	return MRAIL_OK;
}

uint64_t shm_ep_backlog(struct mrail_drv_ep *ep)
{
	return ep->backlog;
}

void shm_ring_bell(struct mrail_drv_ep *ep)
{
	uint64_t one = 1;

	/* EAGAIN: the counter is full, the consumer will wake anyway. */
	if (write(ep->peer_bell, &one, sizeof one) < 0 && errno != EAGAIN)
		mrail_debug("shm: doorbell of %s: %s", ep->remote_name,
			    strerror(errno));
}

int shm_flush(struct mrail_drv_ep *ep)
{
	struct mrail_drv *drv = ep->drv;
	uint64_t wrote = 0;
	int frames = 0;

	while (ep->sq_head) {
		struct shm_send *s = ep->sq_head;
		uint64_t space = shm_ring_space(&ep->tx, s->left);

		/* Full: have the consumer wake us when it frees space, unless
		 * it did so just now. */
		if (space == 0 && !(shm_ring_want_space(&ep->tx) &&
				    (space = shm_ring_space(&ep->tx, 1)) > 0))
			break;

		while (space > 0 && s->left > 0) {
			struct iovec *v = &s->iov[s->iov_idx];
			uint64_t n = v->iov_len - s->iov_off;
			if (n > space)
				n = space;
			shm_ring_write(&ep->tx, (uint8_t *)v->iov_base +
					       s->iov_off, n);
			s->iov_off += n;
			s->left -= n;
			space -= n;
			wrote += n;
			if (s->iov_off == v->iov_len) {
				s->iov_idx++;
				s->iov_off = 0;
			}
		}
		if (s->left > 0)
			break;
		ep->sq_head = s->next;
		if (!ep->sq_head)
			ep->sq_tail = NULL;
		if (shm_done_add(drv, ep, SHM_DONE_SEND, s->send_ctx, 0))
			mrail_error("shm: no memory for a completion on %s",
				    ep->remote_name);
		send_free(drv, s);
		frames++;
	}
	if (wrote) {
		ep->backlog -= wrote;
		if (shm_ring_publish(&ep->tx))
			shm_ring_bell(ep);
	}
	return frames;
}

/* ---- completion list --------------------------------------------------- */

int shm_done_add(struct mrail_drv *drv, struct mrail_drv_ep *ep,
		 enum shm_done_kind kind, void *ctx, int status)
{
	struct shm_done *d = drv->done_free;

	if (d)
		drv->done_free = d->next;
	else if (!(d = malloc(sizeof *d)))
		return MRAIL_ERR_NOMEM;
	*d = (struct shm_done){NULL, ep, kind, ctx, status};
	if (drv->done_tail)
		drv->done_tail->next = d;
	else
		drv->done_head = d;
	drv->done_tail = d;
	return 0;
}

static void done_upcall(struct mrail_drv *drv, struct shm_done *d)
{
	const struct mrail_drv_upcalls *up = drv->base.up;

	if (d->kind == SHM_DONE_SEND)
		up->send_done(d->ep->ctx, d->ctx, d->status);
	else
		up->rma_done(d->ep->ctx, d->ctx, d->status);
}

/* Take the entries matching ep (all if NULL) off the list, in order. */
static struct shm_done *take(struct mrail_drv *drv, struct mrail_drv_ep *ep)
{
	struct shm_done *out = NULL, **tail = &out, **pp = &drv->done_head;

	drv->done_tail = NULL;
	while (*pp) {
		struct shm_done *d = *pp;
		if (!ep || d->ep == ep) {
			*pp = d->next;
			d->next = NULL;
			*tail = d;
			tail = &d->next;
		} else {
			drv->done_tail = d;
			pp = &d->next;
		}
	}
	return out;
}

static void recycle(struct mrail_drv *drv, struct shm_done *d)
{
	d->next = drv->done_free;
	drv->done_free = d;
}

int shm_run_completions(struct mrail_drv *drv)
{
	struct shm_done *d = take(drv, NULL);
	int n = 0;

	while (d) {
		struct shm_done *next = d->next;
		/* An upcall may close another endpoint: its entries must
		 * then be dropped, not reported. */
		if (d->ep->state != SHM_EP_CLOSED) {
			done_upcall(drv, d);
			n++;
		}
		recycle(drv, d);
		d = next;
	}
	return n;
}

void shm_report_done_of(struct mrail_drv_ep *ep)
{
	struct shm_done *d = take(ep->drv, ep);

	while (d) {
		struct shm_done *next = d->next;
		if (ep->state != SHM_EP_CLOSED)
			done_upcall(ep->drv, d);
		recycle(ep->drv, d);
		d = next;
	}
}

void shm_drop_of(struct mrail_drv_ep *ep)
{
	struct shm_done *d = take(ep->drv, ep);

	while (d) {
		struct shm_done *next = d->next;
		recycle(ep->drv, d);
		d = next;
	}
	while (ep->sq_head) {
		struct shm_send *s = ep->sq_head;
		ep->sq_head = s->next;
		send_free(ep->drv, s);
	}
	ep->sq_tail = NULL;
	ep->backlog = 0;
}

void shm_sendq_fail(struct mrail_drv_ep *ep, int status)
{
	while (ep->sq_head && ep->state != SHM_EP_CLOSED) {
		struct shm_send *s = ep->sq_head;
		ep->sq_head = s->next;
		if (!ep->sq_head)
			ep->sq_tail = NULL;
		ep->backlog -= s->left;
		void *ctx = s->send_ctx;
		send_free(ep->drv, s);
		ep->drv->base.up->send_done(ep->ctx, ctx, status);
	}
}

void shm_sendq_fini(struct mrail_drv *drv)
{
	struct shm_done *d = take(drv, NULL);

	while (d) {
		struct shm_done *next = d->next;
		free(d);
		d = next;
	}
	while ((d = drv->done_free)) {
		drv->done_free = d->next;
		free(d);
	}
	struct shm_send *s;
	while ((s = drv->send_free)) {
		drv->send_free = s->next;
		free(s);
	}
}
