/*
 * TCP driver, sending: frame posting and writing the endpoint's send queue
 * to the socket. The queue, its records and the completion list behind
 * send_done are drivers/common's (dc_send.c).
 *
 * A frame is written straight from the caller's memory: the driver copies
 * the iovec array (into a pooled record) but never the payload.
 */
#include "drivers/tcp/tcp_internal.h"
#include "util/log.h"

#include <errno.h>
#include <string.h>

_Static_assert(TCP_FRAME_HDR_LEN <= DC_SEND_HDR_MAX,
	       "the frame header fits a send record");

int tcp_flush(struct mrail_drv_ep *ep)
{
	struct iovec *g = tcp_drv(ep)->gather;

	while (ep->dc.sq_head) {
		uint64_t want;
		int cnt = dc_sendq_gather(&ep->dc, g, TCP_IOV_MAX, &want);
		ssize_t n = dc_sock_writev(ep->dc.poll.fd, g, cnt);

		if (n == -EAGAIN)
			break;
		if (n < 0)
			return (int)n;
		dc_sendq_consume(&ep->dc, (uint64_t)n);
		/* A short write means the socket buffer is full: asking
		 * again would only return EAGAIN. */
		if ((uint64_t)n < want)
			break;
	}
	dc_ep_update_events(&ep->dc);
	return 0;
}

static void frame_header(uint8_t *h, size_t head_len, uint64_t body_len)
{
	tcp_put_le32(h, TCP_WIRE_MAGIC | TCP_WIRE_VERSION << 24);
	tcp_put_le32(h + 4, (uint32_t)head_len);
	tcp_put_le64(h + 8, body_len);
}

/*
 * Lowest-latency path: nothing queued, so write now. Returns true when the
 * whole frame left; otherwise what is left goes to the queue.
 */
static bool write_now(struct mrail_drv_ep *ep, struct dc_send *rec)
{
	int cnt = rec->iov_cnt < TCP_IOV_MAX ? rec->iov_cnt : TCP_IOV_MAX;
	ssize_t n = dc_sock_writev(ep->dc.poll.fd, rec->iov, cnt);

	if (n >= 0 && (uint64_t)n == rec->left)
		return true;
	if (n > 0) {
		dc_send_advance(rec, (uint64_t)n);
	} else if (n < 0 && n != -EAGAIN) {
		/* Reported as ep_error by the next progress. */
		ep->dc.send_errno = (int)-n;
		dc_ep_need_attention(&ep->dc);
	}
	return false;
}

int tcp_send(struct mrail_drv_ep *ep, const void *head, size_t head_len,
	     const struct iovec *body, int body_cnt, void *send_ctx)
{
	static const struct dc_frame_limits lim = {
		.max_head = TCP_MAX_HEAD, .max_iov = TCP_MAX_BODY_IOV,
		.max_body = TCP_MAX_BODY, .hdr_len = TCP_FRAME_HDR_LEN};
	struct dc_send *rec;
	int rc = dc_send_begin(ep ? &ep->dc : NULL, &lim, head, head_len, body,
			       body_cnt, send_ctx, &rec);

	if (rc < 0)
		return rc;
	frame_header(rec->hdr, head_len, rec->body_len);
	if (ep->dc.state == DC_EP_CONNECTED && !ep->dc.sq_head &&
	    !ep->dc.send_errno && write_now(ep, rec)) {
		dc_done_push(rec, 0);
		return 0;
	}
	dc_sendq_push(&ep->dc, rec);
	if (ep->dc.state == DC_EP_CONNECTED)
		dc_ep_update_events(&ep->dc);
	return 0;
}
