/*
 * TCP driver, sending: frame posting, the per-endpoint send queue, and the
 * completion list that feeds send_done upcalls from progress.
 *
 * A frame is written straight from the caller's memory: the driver copies
 * the iovec array (into a pooled record) but never the payload.
 */
#include "drivers/tcp/tcp_internal.h"
#include "util/iov.h"
#include "util/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* ---- send records ------------------------------------------------------ */

static struct tcp_send *send_alloc(struct mrail_drv *drv, int iov_needed)
{
	struct tcp_send *rec;
	int cap = iov_needed > TCP_SEND_POOLED_IOV ? iov_needed
						   : TCP_SEND_POOLED_IOV;

	if (cap == TCP_SEND_POOLED_IOV && drv->send_pool) {
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

static void send_free(struct mrail_drv *drv, struct tcp_send *rec)
{
	if (rec->iov_cap == TCP_SEND_POOLED_IOV &&
	    drv->send_pool_cnt < TCP_SEND_POOL_MAX) {
		rec->next = drv->send_pool;
		drv->send_pool = rec;
		drv->send_pool_cnt++;
		return;
	}
	free(rec);
}

void tcp_send_pool_free(struct mrail_drv *drv)
{
	while (drv->send_pool) {
		struct tcp_send *rec = drv->send_pool;
		drv->send_pool = rec->next;
		free(rec);
	}
	drv->send_pool_cnt = 0;
}

/* ---- completion list --------------------------------------------------- */

static void done_push(struct mrail_drv *drv, struct tcp_send *rec, int status)
{
	rec->status = status;
	rec->next = NULL;
	if (drv->done_tail)
		drv->done_tail->next = rec;
	else
		drv->done_head = rec;
	drv->done_tail = rec;
	drv->done_count++;
}

static struct tcp_send *done_pop(struct mrail_drv *drv)
{
	struct tcp_send *rec = drv->done_head;

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
static struct tcp_send *done_take_of(struct mrail_drv_ep *ep)
{
	struct mrail_drv *drv = ep->drv;
	struct tcp_send **pp = &drv->done_head, *taken = NULL, **tail = &taken;

	drv->done_tail = NULL;
	while (*pp) {
		struct tcp_send *rec = *pp;
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

void tcp_drop_done_of(struct mrail_drv_ep *ep)
{
	struct tcp_send *rec = done_take_of(ep);

	while (rec) {
		struct tcp_send *next = rec->next;
		send_free(ep->drv, rec);
		rec = next;
	}
}

void tcp_report_done_of(struct mrail_drv_ep *ep)
{
	struct mrail_drv *drv = ep->drv;
	struct tcp_send *rec = done_take_of(ep);

	while (rec) {
		struct tcp_send *next = rec->next;
		void *send_ctx = rec->send_ctx;
		int status = rec->status;

		send_free(drv, rec);
		rec = next;
		if (ep->state == TCP_EP_CLOSED)
			continue; /* closed by an upcall: no more upcalls */
		drv->base.up->send_done(ep->ctx, send_ctx, status);
	}
}

int tcp_run_completions(struct mrail_drv *drv)
{
	/* Only what is listed now: a send_done that posts a send which
	 * completes at once must not keep this loop going forever. */
	unsigned limit = drv->done_count;
	int n = 0;

	while (limit-- > 0) {
		struct tcp_send *rec = done_pop(drv);
		if (!rec)
			break;
		struct mrail_drv_ep *ep = rec->ep;
		void *send_ctx = rec->send_ctx;
		int status = rec->status;
		send_free(drv, rec);
		/* ep is open: ep_close removes its records from the list. */
		drv->base.up->send_done(ep->ctx, send_ctx, status);
		n++;
	}
	return n;
}

/* ---- send queue -------------------------------------------------------- */

static void sendq_push(struct mrail_drv_ep *ep, struct tcp_send *rec)
{
	rec->next = NULL;
	if (ep->sq_tail)
		ep->sq_tail->next = rec;
	else
		ep->sq_head = rec;
	ep->sq_tail = rec;
	ep->backlog += rec->left;
}

static struct tcp_send *sendq_pop(struct mrail_drv_ep *ep)
{
	struct tcp_send *rec = ep->sq_head;

	ep->sq_head = rec->next;
	if (!ep->sq_head)
		ep->sq_tail = NULL;
	ep->backlog -= rec->left;
	rec->next = NULL;
	return rec;
}

void tcp_sendq_fail(struct mrail_drv_ep *ep, int status)
{
	while (ep->sq_head)
		done_push(ep->drv, sendq_pop(ep), status);
}

void tcp_sendq_drop(struct mrail_drv_ep *ep)
{
	while (ep->sq_head)
		send_free(ep->drv, sendq_pop(ep));
}

/* Account for n bytes of rec handed to the kernel. */
static void send_advance(struct tcp_send *rec, uint64_t n)
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

/* Bytes written, or -errno (-EAGAIN when the socket buffer is full). */
static ssize_t write_iov(int fd, struct iovec *iov, int cnt)
{
	struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)cnt};

	for (;;) {
		/* MSG_NOSIGNAL: a dead peer must give EPIPE, not SIGPIPE. */
		ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n >= 0)
			return n;
		if (errno != EINTR)
			return -errno;
	}
}

/* Gather the queue's unsent entries (up to TCP_IOV_MAX) into drv->gather. */
static int gather_queue(struct mrail_drv_ep *ep, uint64_t *bytes)
{
	struct iovec *g = ep->drv->gather;
	int cnt = 0;

	*bytes = 0;
	for (struct tcp_send *rec = ep->sq_head; rec && cnt < TCP_IOV_MAX;
	     rec = rec->next) {
		for (int i = rec->iov_pos; i < rec->iov_cnt && cnt < TCP_IOV_MAX;
		     i++) {
			if (rec->iov[i].iov_len == 0)
				continue;
			g[cnt++] = rec->iov[i];
			*bytes += rec->iov[i].iov_len;
		}
	}
	return cnt;
}

/* n bytes from the head of the queue left: complete finished frames. */
static void sendq_consume(struct mrail_drv_ep *ep, uint64_t n)
{
	while (n > 0) {
		struct tcp_send *rec = ep->sq_head;
		if (n >= rec->left) {
			n -= rec->left;
			rec = sendq_pop(ep);
			done_push(ep->drv, rec, 0);
		} else {
			ep->backlog -= n;
			send_advance(rec, n);
			n = 0;
		}
	}
}

int tcp_flush(struct mrail_drv_ep *ep)
{
	while (ep->sq_head) {
		uint64_t want;
		int cnt = gather_queue(ep, &want);
		ssize_t n = write_iov(ep->poll.fd, ep->drv->gather, cnt);

		if (n == -EAGAIN)
			break;
		if (n < 0)
			return (int)n;
		sendq_consume(ep, (uint64_t)n);
		/* A short write means the socket buffer is full: asking
		 * again would only return EAGAIN. */
		if ((uint64_t)n < want)
			break;
	}
	tcp_ep_update_events(ep);
	return 0;
}

/* ---- posting ----------------------------------------------------------- */

static int check_frame(const void *head, size_t head_len,
		       const struct iovec *body, int body_cnt,
		       uint64_t *body_len)
{
	size_t total;

	if (head_len > TCP_MAX_HEAD || (!head && head_len)) {
		mrail_error("tcp: send of a %zu-byte head (limit %zu)",
			    head_len, (size_t)TCP_MAX_HEAD);
		return MRAIL_ERR_INVALID;
	}
	if (body_cnt < 0 || body_cnt > TCP_MAX_BODY_IOV ||
	    (!body && body_cnt)) {
		mrail_error("tcp: send with a body of %d iovec entries "
			    "(limit %d)",
			    body_cnt, TCP_MAX_BODY_IOV);
		return MRAIL_ERR_INVALID;
	}
	total = mrail_iov_length(body, body_cnt);
	if ((uint64_t)total > TCP_MAX_BODY) {
		mrail_error("tcp: send with a body of %zu bytes (limit %llu)",
			    total, (unsigned long long)TCP_MAX_BODY);
		return MRAIL_ERR_INVALID;
	}
	*body_len = total;
	return 0;
}

static void frame_header(uint8_t *h, size_t head_len, uint64_t body_len)
{
	tcp_put_le32(h, TCP_WIRE_MAGIC | TCP_WIRE_VERSION << 24);
	tcp_put_le32(h + 4, (uint32_t)head_len);
	tcp_put_le64(h + 8, body_len);
}

static struct tcp_send *build_frame(struct mrail_drv_ep *ep, const void *head,
				    size_t head_len, const struct iovec *body,
				    int body_cnt, uint64_t body_len,
				    void *send_ctx)
{
	struct tcp_send *rec = send_alloc(ep->drv, body_cnt + 2);

	if (!rec)
		return NULL;
	rec->next = NULL;
	rec->ep = ep;
	rec->send_ctx = send_ctx;
	rec->status = 0;
	rec->iov_pos = 0;
	rec->iov_cnt = body_cnt + 2;
	rec->left = TCP_FRAME_HDR_LEN + head_len + body_len;
	frame_header(rec->hdr, head_len, body_len);
	rec->iov[0].iov_base = rec->hdr;
	rec->iov[0].iov_len = TCP_FRAME_HDR_LEN;
	rec->iov[1].iov_base = (void *)head;
	rec->iov[1].iov_len = head_len;
	if (body_cnt)
		memcpy(&rec->iov[2], body, (size_t)body_cnt * sizeof *body);
	return rec;
}

/*
 * Lowest-latency path: nothing queued, so write now. Returns true when the
 * whole frame left; otherwise what is left goes to the queue.
 */
static bool write_now(struct mrail_drv_ep *ep, struct tcp_send *rec)
{
	int cnt = rec->iov_cnt < TCP_IOV_MAX ? rec->iov_cnt : TCP_IOV_MAX;
	ssize_t n = write_iov(ep->poll.fd, rec->iov, cnt);

	if (n >= 0 && (uint64_t)n == rec->left)
		return true;
	if (n > 0) {
		send_advance(rec, (uint64_t)n);
	} else if (n < 0 && n != -EAGAIN) {
		/* Reported as ep_error by the next progress. */
		ep->send_errno = (int)-n;
		tcp_ep_need_attention(ep);
	}
	return false;
}

int tcp_send(struct mrail_drv_ep *ep, const void *head, size_t head_len,
	     const struct iovec *body, int body_cnt, void *send_ctx)
{
	struct tcp_send *rec;
	uint64_t body_len;
	int rc;

	if (!ep || ep->state == TCP_EP_CLOSED)
		return MRAIL_ERR_INVALID;
	if (ep->state == TCP_EP_FAILED)
		return MRAIL_ERR_PEER;
	rc = check_frame(head, head_len, body, body_cnt, &body_len);
	if (rc < 0)
		return rc;
	rec = build_frame(ep, head, head_len, body, body_cnt, body_len,
			  send_ctx);
	if (!rec)
		return MRAIL_ERR_NOMEM;
	if (ep->state == TCP_EP_CONNECTED && !ep->sq_head && !ep->send_errno &&
	    write_now(ep, rec)) {
		done_push(ep->drv, rec, 0);
		return 0;
	}
	sendq_push(ep, rec);
	if (ep->state == TCP_EP_CONNECTED)
		tcp_ep_update_events(ep);
	return 0;
}

uint64_t tcp_ep_backlog(struct mrail_drv_ep *ep)
{
	return ep ? ep->backlog : 0;
}
