/*
 * drivers/common: ordered send records. A frame is queued on its endpoint
 * in posting order; when it has left (or failed) it moves to the driver's
 * completion list, whose send_done upcalls run from progress only
 * (driver.h: upcalls never come from inside send). The driver copies the
 * iovec array into the record, never the payload.
 */
#include "drivers/common/dc.h"
#include "util/iov.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

/* Records this small are recycled instead of freed. */
#define DC_SEND_POOLED_IOV 8
#define DC_SEND_POOL_MAX 256

/* ---- records ----------------------------------------------------------- */

static struct dc_send *send_alloc(struct dc_drv *drv, int iov_needed)
{
	struct dc_send *rec;
	int cap = iov_needed > DC_SEND_POOLED_IOV ? iov_needed
						  : DC_SEND_POOLED_IOV;

	if (cap == DC_SEND_POOLED_IOV && drv->send_pool) {
		rec = drv->send_pool;
		drv->send_pool = rec->next;
		drv->send_pool_cnt--;
		return rec;
	}
	rec = malloc(sizeof *rec + (size_t)cap * sizeof rec->iov[0]);
	if (rec)
		rec->iov_cap = cap;
	return rec;
}

void dc_send_free(struct dc_drv *drv, struct dc_send *rec)
{
	if (rec->iov_cap == DC_SEND_POOLED_IOV &&
	    drv->send_pool_cnt < DC_SEND_POOL_MAX) {
		rec->next = drv->send_pool;
		drv->send_pool = rec;
		drv->send_pool_cnt++;
		return;
	}
	free(rec);
}

static int frame_check(const struct dc_drv *drv,
		       const struct dc_frame_limits *lim, const void *head,
		       size_t head_len, const struct iovec *body, int body_cnt,
		       uint64_t *body_len)
{
	const char *name = drv->hooks->name;

	if (head_len > lim->max_head || (!head && head_len)) {
		mrail_error("%s: send of a %zu-byte head (limit %zu)", name,
			    head_len, lim->max_head);
		return MRAIL_ERR_INVALID;
	}
	if (body_cnt < 0 || body_cnt > lim->max_iov || (!body && body_cnt)) {
		mrail_error("%s: send with a body of %d iovec entries "
			    "(limit %d)",
			    name, body_cnt, lim->max_iov);
		return MRAIL_ERR_INVALID;
	}
	*body_len = mrail_iov_length(body, body_cnt);
	if (*body_len > lim->max_body) {
		mrail_error("%s: send with a body of %llu bytes (limit %llu)",
			    name, (unsigned long long)*body_len,
			    (unsigned long long)lim->max_body);
		return MRAIL_ERR_INVALID;
	}
	return 0;
}

int dc_send_check(struct dc_ep *ep, const struct dc_frame_limits *lim,
		  const void *head, size_t head_len, const struct iovec *body,
		  int body_cnt, uint64_t *body_len)
{
	if (!ep || ep->state == DC_EP_CLOSED)
		return MRAIL_ERR_INVALID;
	if (ep->state == DC_EP_FAILED)
		return MRAIL_ERR_PEER;
	return frame_check(ep->drv, lim, head, head_len, body, body_cnt,
			   body_len);
}

static void record_init(struct dc_send *rec, struct dc_ep *ep,
			void *send_ctx)
{
	rec->next = NULL;
	rec->ep = ep;
	rec->send_ctx = send_ctx;
	rec->status = 0;
	rec->due = 0;
	rec->iov_pos = 0;
}

struct dc_send *dc_send_record(struct dc_ep *ep, void *send_ctx)
{
	struct dc_send *rec = send_alloc(ep->drv, 0);

	if (!rec)
		return NULL;
	record_init(rec, ep, send_ctx);
	rec->iov_cnt = 0;
	rec->body_len = 0;
	rec->left = 0;
	return rec;
}

int dc_send_begin(struct dc_ep *ep, const struct dc_frame_limits *lim,
		  const void *head, size_t head_len, const struct iovec *body,
		  int body_cnt, void *send_ctx, struct dc_send **out)
{
	struct dc_send *rec;
	uint64_t body_len;
	int rc = dc_send_check(ep, lim, head, head_len, body, body_cnt,
			       &body_len);

	if (rc < 0)
		return rc;
	rec = send_alloc(ep->drv, body_cnt + 2);
	if (!rec)
		return MRAIL_ERR_NOMEM;
	record_init(rec, ep, send_ctx);
	rec->iov_cnt = body_cnt + 2;
	rec->body_len = body_len;
	rec->left = lim->hdr_len + head_len + body_len;
	rec->iov[0].iov_base = rec->hdr;
	rec->iov[0].iov_len = lim->hdr_len;
	rec->iov[1].iov_base = (void *)head;
	rec->iov[1].iov_len = head_len;
	if (body_cnt)
		memcpy(&rec->iov[2], body, (size_t)body_cnt * sizeof *body);
	*out = rec;
	return 0;
}

/* ---- completion list --------------------------------------------------- */

void dc_done_push(struct dc_send *rec, int status)
{
	struct dc_drv *drv = rec->ep->drv;

	rec->status = status;
	rec->next = NULL;
	if (drv->done_tail)
		drv->done_tail->next = rec;
	else
		drv->done_head = rec;
	drv->done_tail = rec;
	drv->done_count++;
}

static struct dc_send *done_pop(struct dc_drv *drv)
{
	struct dc_send *rec = drv->done_head;

	if (!rec)
		return NULL;
	drv->done_head = rec->next;
	if (!drv->done_head)
		drv->done_tail = NULL;
	drv->done_count--;
	rec->next = NULL;
	return rec;
}

/* Unlink ep's records from the completion list, keeping their order. */
static struct dc_send *done_take_of(struct dc_ep *ep)
{
	struct dc_drv *drv = ep->drv;
	struct dc_send **pp = &drv->done_head, *taken = NULL, **tail = &taken;

	drv->done_tail = NULL;
	while (*pp) {
		struct dc_send *rec = *pp;
		if (rec->ep == ep) {
			*pp = rec->next;
			rec->next = NULL;
			*tail = rec;
			tail = &rec->next;
			drv->done_count--;
		} else {
			drv->done_tail = rec;
			pp = &rec->next;
		}
	}
	return taken;
}

void dc_drop_done_of(struct dc_ep *ep)
{
	struct dc_send *rec = done_take_of(ep);

	while (rec) {
		struct dc_send *next = rec->next;
		dc_send_free(ep->drv, rec);
		rec = next;
	}
}

void dc_report_done_of(struct dc_ep *ep)
{
	struct dc_drv *drv = ep->drv;
	struct dc_send *rec = done_take_of(ep);

	while (rec) {
		struct dc_send *next = rec->next;
		void *send_ctx = rec->send_ctx;
		int status = rec->status;

		dc_send_free(drv, rec);
		rec = next;
		if (ep->state == DC_EP_CLOSED)
			continue; /* closed by an upcall: no more upcalls */
		drv->base.up->send_done(ep->ctx, send_ctx, status);
	}
}

int dc_run_completions_now(struct dc_drv *drv)
{
	/* Only what is listed now: a send_done that posts a send which
	 * completes at once must not keep this loop going forever. */
	unsigned limit = drv->done_count;
	int n = 0;

	while (limit-- > 0) {
		struct dc_send *rec = done_pop(drv);
		if (!rec)
			break;
		struct dc_ep *ep = rec->ep;
		void *send_ctx = rec->send_ctx;
		int status = rec->status;
		dc_send_free(drv, rec);
		/* ep is open: ep_close removes its records from the list. */
		drv->base.up->send_done(ep->ctx, send_ctx, status);
		n++;
	}
	return n;
}

/* ---- send queue -------------------------------------------------------- */

void dc_sendq_push(struct dc_ep *ep, struct dc_send *rec)
{
	rec->next = NULL;
	if (ep->sq_tail)
		ep->sq_tail->next = rec;
	else
		ep->sq_head = rec;
	ep->sq_tail = rec;
	ep->backlog += rec->left;
}

struct dc_send *dc_sendq_pop(struct dc_ep *ep)
{
	struct dc_send *rec = ep->sq_head;

	ep->sq_head = rec->next;
	if (!ep->sq_head)
		ep->sq_tail = NULL;
	ep->backlog -= rec->left;
	rec->next = NULL;
	return rec;
}

void dc_sendq_fail(struct dc_ep *ep, int status)
{
	while (ep->sq_head)
		dc_done_push(dc_sendq_pop(ep), status);
}

void dc_sendq_drop(struct dc_ep *ep)
{
	while (ep->sq_head)
		dc_send_free(ep->drv, dc_sendq_pop(ep));
}

void dc_send_advance(struct dc_send *rec, uint64_t n)
{
	rec->left -= n;
	while (n > 0) {
		struct iovec *v = &rec->iov[rec->iov_pos];
		if (n >= v->iov_len) {
			n -= v->iov_len;
			rec->iov_pos++;
		} else {
			v->iov_base = (char *)v->iov_base + n;
			v->iov_len -= n;
			n = 0;
		}
	}
}

int dc_sendq_gather(const struct dc_ep *ep, struct iovec *g, int max,
		    uint64_t *bytes)
{
	int cnt = 0;

	*bytes = 0;
	for (struct dc_send *rec = ep->sq_head; rec && cnt < max;
	     rec = rec->next) {
		for (int i = rec->iov_pos; i < rec->iov_cnt && cnt < max; i++) {
			if (rec->iov[i].iov_len == 0)
				continue;
			g[cnt++] = rec->iov[i];
			*bytes += rec->iov[i].iov_len;
		}
	}
	return cnt;
}

void dc_sendq_consume(struct dc_ep *ep, uint64_t n)
{
	while (n > 0) {
		struct dc_send *rec = ep->sq_head;
		if (n >= rec->left) {
			n -= rec->left;
			dc_done_push(dc_sendq_pop(ep), 0);
		} else {
			ep->backlog -= n;
			dc_send_advance(rec, n);
			n = 0;
		}
	}
}
