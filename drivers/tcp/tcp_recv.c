/*
 * TCP driver, receiving: frame parsing and delivery.
 *
 * Small frames are read in batches into a per-endpoint buffer and handed to
 * the engine from there. A body goes straight into the memory the engine
 * names in recv_body: bytes already buffered are copied, the rest is read
 * with readv directly into place. That readv also names the (empty) receive
 * buffer after the body, so frames that follow the body arrive in the same
 * system call.
 *
 * Every upcall may close or fail the endpoint; after each one the code
 * checks tcp_ep_usable() before touching the connection again (the memory
 * itself stays valid until progress returns).
 */
#include "drivers/tcp/tcp_internal.h"
#include "util/iov.h"
#include "util/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

enum rx_result {
	RX_MORE,    /* the read filled what we offered: more may wait */
	RX_DRAINED, /* short read: the socket is very likely empty */
	RX_STOP,    /* the endpoint failed, or no room to read into */
	RX_EMPTY,   /* would block: nothing was waiting */
};

void tcp_rx_free(struct mrail_drv_ep *ep)
{
	free(ep->rbuf);
	free(ep->dst);
	ep->rbuf = NULL;
	ep->dst = NULL;
}

/* ---- failures ---------------------------------------------------------- */

static void rx_eof(struct mrail_drv_ep *ep)
{
	/* MRAIL_ERR_PEER_CLOSED: the peer's end closed (its process may be
	 * gone), which the engine tells from a dead link (timeouts). */
	size_t partial = ep->rend - ep->rstart;

	if (ep->in_body)
		tcp_ep_fail(ep, MRAIL_ERR_PEER_CLOSED,
			    "connection closed by peer %s in the middle of a "
			    "frame body (%llu of %llu bytes missing)",
			    ep->dc.remote_name,
			    (unsigned long long)ep->body_left,
			    (unsigned long long)ep->body_len);
	else if (partial)
		tcp_ep_fail(ep, MRAIL_ERR_PEER_CLOSED,
			    "connection closed by peer %s in the middle of a "
			    "frame (%zu bytes of it received)",
			    ep->dc.remote_name, partial);
	else
		tcp_ep_fail(ep, MRAIL_ERR_PEER_CLOSED,
			    "connection closed by peer %s", ep->dc.remote_name);
}

static void rx_socket_error(struct mrail_drv_ep *ep, int err)
{
	tcp_ep_fail(ep, tcp_closed_status(err), "receive from %s failed: %s",
		    ep->dc.remote_name, strerror(err));
}

static void rx_nomem(struct mrail_drv_ep *ep, size_t bytes)
{
	tcp_ep_fail(ep, MRAIL_ERR_NOMEM,
		    "no memory for a %zu-byte receive buffer for %s", bytes,
		    ep->dc.remote_name);
}

/* Common tail of the read calls: classify a read's result. */
static enum rx_result rx_read_result(struct mrail_drv_ep *ep, ssize_t n,
				     int err)
{
	if (n == 0) {
		rx_eof(ep);
		return RX_STOP;
	}
	if (n < 0) {
		if (err == EAGAIN)
			return RX_EMPTY;
		rx_socket_error(ep, err);
		return RX_STOP;
	}
	return RX_MORE;
}

/* ---- body into engine memory ------------------------------------------- */

static void rx_skip_empty_dst(struct mrail_drv_ep *ep)
{
	while (ep->dst_pos < ep->dst_cnt && ep->dst[ep->dst_pos].iov_len == 0)
		ep->dst_pos++;
}

/* n body bytes are in place (copied from src if src is not NULL). */
static void rx_body_advance(struct mrail_drv_ep *ep, const char *src,
			    uint64_t n)
{
	ep->body_left -= n;
	while (n > 0) {
		rx_skip_empty_dst(ep);
		struct iovec *v = &ep->dst[ep->dst_pos];
		size_t take = v->iov_len < n ? v->iov_len : (size_t)n;
		if (src) {
			memcpy(v->iov_base, src, take);
			src += take;
		}
		v->iov_base = (char *)v->iov_base + take;
		v->iov_len -= take;
		n -= take;
	}
}

static void rx_body_finish(struct mrail_drv_ep *ep)
{
	void *cookie = ep->body_cookie;

	ep->in_body = false;
	ep->body_cookie = NULL;
	ep->dc.drv->base.up->recv_body_done(ep->dc.ctx, cookie);
}

static bool rx_dst_ok(struct mrail_drv_ep *ep, int cnt, uint64_t body_len)
{
	size_t total;

	if (cnt < 1 || cnt > TCP_MAX_BODY_IOV) {
		tcp_ep_fail(ep, MRAIL_ERR_PROTO,
			    "engine gave %d receive iovec entries for a "
			    "%llu-byte body from %s (allowed 1..%d)",
			    cnt, (unsigned long long)body_len, ep->dc.remote_name,
			    TCP_MAX_BODY_IOV);
		return false;
	}
	total = mrail_iov_length(ep->dst, cnt);
	if ((uint64_t)total != body_len) {
		tcp_ep_fail(ep, MRAIL_ERR_PROTO,
			    "engine gave a %zu-byte receive iovec for a "
			    "%llu-byte body from %s",
			    total, (unsigned long long)body_len,
			    ep->dc.remote_name);
		return false;
	}
	return true;
}

static void rx_body_start(struct mrail_drv_ep *ep, const void *head,
			  size_t head_len, uint64_t body_len)
{
	int cnt = TCP_MAX_BODY_IOV;
	size_t buffered;
	uint64_t take;
	void *cookie;

	if (!ep->dst) {
		/* +1: room to name the receive buffer after the body. */
		ep->dst = malloc((TCP_MAX_BODY_IOV + 1) * sizeof *ep->dst);
		if (!ep->dst) {
			rx_nomem(ep, (TCP_MAX_BODY_IOV + 1) * sizeof *ep->dst);
			return;
		}
	}
	cookie = ep->dc.drv->base.up->recv_body(ep->dc.ctx, head, head_len, body_len,
					ep->dst, &cnt);
	if (!tcp_ep_usable(ep))
		return;
	if (!cookie) {
		tcp_ep_fail(ep, MRAIL_ERR_PROTO,
			    "engine rejected a frame with a %zu-byte head and "
			    "a %llu-byte body from %s",
			    head_len, (unsigned long long)body_len,
			    ep->dc.remote_name);
		return;
	}
	if (!rx_dst_ok(ep, cnt, body_len))
		return;
	ep->in_body = true;
	ep->body_cookie = cookie;
	ep->dst_pos = 0;
	ep->dst_cnt = cnt;
	ep->body_len = ep->body_left = body_len;

	buffered = ep->rend - ep->rstart;
	take = buffered < body_len ? buffered : body_len;
	rx_body_advance(ep, ep->rbuf + ep->rstart, take);
	ep->rstart += take;
	if (ep->body_left == 0)
		rx_body_finish(ep);
}

static enum rx_result rx_read_body(struct mrail_drv_ep *ep)
{
	int avail_entries, cnt;
	uint64_t want = 0;
	bool spill;
	ssize_t n;
	int err = 0;

	rx_skip_empty_dst(ep);
	avail_entries = ep->dst_cnt - ep->dst_pos;
	cnt = avail_entries < TCP_IOV_MAX ? avail_entries : TCP_IOV_MAX;
	for (int i = 0; i < cnt; i++)
		want += ep->dst[ep->dst_pos + i].iov_len;
	/* The buffer is empty while in a body (see rx_body_start). */
	ep->rstart = ep->rend = 0;
	spill = cnt < TCP_IOV_MAX && ep->rbuf;
	if (spill) {
		ep->dst[ep->dst_pos + cnt].iov_base = ep->rbuf;
		ep->dst[ep->dst_pos + cnt].iov_len = ep->rcap;
		want += ep->rcap;
		cnt++;
	}
	do {
		n = readv(ep->dc.poll.fd, &ep->dst[ep->dst_pos], cnt);
	} while (n < 0 && errno == EINTR);
	if (n <= 0) {
		err = errno;
		return rx_read_result(ep, n, err);
	}
	uint64_t body_part =
		(uint64_t)n < ep->body_left ? (uint64_t)n : ep->body_left;
	rx_body_advance(ep, NULL, body_part);
	if (spill)
		ep->rend = (size_t)((uint64_t)n - body_part);
	if (ep->body_left == 0)
		rx_body_finish(ep);
	return (uint64_t)n < want ? RX_DRAINED : RX_MORE;
}

/* ---- frames from the receive buffer ------------------------------------ */

static bool rx_header_ok(struct mrail_drv_ep *ep, const uint8_t *h,
			 uint32_t head_len, uint64_t body_len)
{
	uint32_t magic = tcp_get_le32(h);

	if ((magic & TCP_WIRE_MAGIC_MASK) != TCP_WIRE_MAGIC) {
		tcp_ep_fail(ep, MRAIL_ERR_PROTO,
			    "%s sent bytes that are not a libmrail tcp frame "
			    "(header starts %02x %02x %02x %02x, expected "
			    "4d 52 54 = \"MRT\")",
			    ep->dc.remote_name, h[0], h[1], h[2], h[3]);
		return false;
	}
	if (magic >> 24 != TCP_WIRE_VERSION) {
		tcp_ep_fail(ep, MRAIL_ERR_PROTO,
			    "%s speaks tcp wire version %u, this driver "
			    "speaks version %u",
			    ep->dc.remote_name, magic >> 24, TCP_WIRE_VERSION);
		return false;
	}
	if (head_len > TCP_MAX_HEAD) {
		tcp_ep_fail(ep, MRAIL_ERR_PROTO,
			    "%s sent a frame head of %u bytes, the limit is "
			    "%zu",
			    ep->dc.remote_name, head_len, (size_t)TCP_MAX_HEAD);
		return false;
	}
	if (body_len > TCP_MAX_BODY) {
		tcp_ep_fail(ep, MRAIL_ERR_PROTO,
			    "%s sent a frame body of %llu bytes, the limit is "
			    "%llu",
			    ep->dc.remote_name, (unsigned long long)body_len,
			    (unsigned long long)TCP_MAX_BODY);
		return false;
	}
	return true;
}

/* Deliver every complete frame in the buffer (a body may start). */
static void rx_deliver_frames(struct mrail_drv_ep *ep)
{
	while (tcp_ep_usable(ep) && !ep->in_body) {
		size_t avail = ep->rend - ep->rstart;
		const uint8_t *h;
		uint32_t head_len;
		uint64_t body_len;

		/* Before any read rbuf is NULL: no pointer into it yet. */
		if (avail < TCP_FRAME_HDR_LEN)
			return;
		h = (const uint8_t *)ep->rbuf + ep->rstart;
		head_len = tcp_get_le32(h + 4);
		body_len = tcp_get_le64(h + 8);
		if (!rx_header_ok(ep, h, head_len, body_len))
			return;
		if (avail - TCP_FRAME_HDR_LEN < head_len)
			return;
		/* Consumed before the upcall; the bytes stay in place
		 * because nothing moves the buffer during an upcall. */
		ep->rstart += TCP_FRAME_HDR_LEN + head_len;
		if (body_len == 0)
			ep->dc.drv->base.up->recv_frame(ep->dc.ctx, h + TCP_FRAME_HDR_LEN,
						head_len);
		else
			rx_body_start(ep, h + TCP_FRAME_HDR_LEN, head_len,
				      body_len);
	}
}

/* Bytes the partial frame at rstart needs in total (its header is valid:
 * rx_deliver_frames checked it). */
static size_t rx_partial_frame_size(const struct mrail_drv_ep *ep)
{
	if (ep->rend - ep->rstart < TCP_FRAME_HDR_LEN)
		return TCP_FRAME_HDR_LEN;
	return TCP_FRAME_HDR_LEN +
	       tcp_get_le32((const uint8_t *)ep->rbuf + ep->rstart + 4);
}

/* Make room for the rest of the partial frame plus a useful batch. */
static bool rx_make_room(struct mrail_drv_ep *ep)
{
	size_t avail = ep->rend - ep->rstart;
	size_t frame = rx_partial_frame_size(ep);
	size_t want = ep->rcap ? ep->rcap : TCP_RBUF_MIN;
	if (ep->rfull && want < TCP_RBUF_SIZE)
		want = 2 * want < TCP_RBUF_SIZE ? 2 * want : TCP_RBUF_SIZE;
	ep->rfull = false;
	size_t cap = frame > want ? frame : want;

	if (ep->rcap < cap) {
		struct mrail_drv *drv = tcp_drv(ep);
		char *grown;
		if (!ep->rbuf && cap == TCP_RBUF_MIN && drv->rbuf_spare) {
			grown = drv->rbuf_spare;
			drv->rbuf_spare = NULL;
		} else {
			grown = realloc(ep->rbuf, cap);
		}
		if (!grown) {
			rx_nomem(ep, cap);
			return false;
		}
		ep->rbuf = grown;
		ep->rcap = cap;
	}
	if (avail == 0) {
		ep->rstart = ep->rend = 0;
	} else if (ep->rstart + frame > ep->rcap ||
		   ep->rcap - ep->rend < ep->rcap / 4) {
		/* Only a partial frame moves: it is small unless its head
		 * is big, and then the move is rare. */
		memmove(ep->rbuf, ep->rbuf + ep->rstart, avail);
		ep->rstart = 0;
		ep->rend = avail;
	}
	return true;
}

static enum rx_result rx_read_frames(struct mrail_drv_ep *ep)
{
	size_t room;
	ssize_t n;

	if (!rx_make_room(ep))
		return RX_STOP;
	room = ep->rcap - ep->rend;
	do {
		n = recv(ep->dc.poll.fd, ep->rbuf + ep->rend, room, 0);
	} while (n < 0 && errno == EINTR);
	if (n <= 0)
		return rx_read_result(ep, n, errno);
	ep->rend += (size_t)n;
	ep->rfull = (size_t)n == room;
	return (size_t)n < room ? RX_DRAINED : RX_MORE;
}

/* ---- entry point ------------------------------------------------------- */

/* A drained connection gives its buffer up: to the instance's spare slot
 * when that is empty and the buffer has the starting size, else to free. */
static void rx_release_rbuf(struct mrail_drv_ep *ep)
{
	struct mrail_drv *drv = tcp_drv(ep);
	if (ep->rbuf && ep->rcap == TCP_RBUF_MIN && !drv->rbuf_spare)
		drv->rbuf_spare = ep->rbuf;
	else
		free(ep->rbuf);
	ep->rbuf = NULL;
	ep->rcap = 0;
}

bool tcp_rx_process(struct mrail_drv_ep *ep)
{
	int syscalls = 0;
	bool drained = false, got = false;

	while (tcp_ep_usable(ep)) {
		enum rx_result r;

		if (!ep->in_body) {
			rx_deliver_frames(ep);
			if (!tcp_ep_usable(ep))
				return true;
		}
		/* A short read emptied the socket; level-triggered epoll
		 * reports anything newer (or left by the budget) next time. */
		if (drained && !ep->in_body && ep->rstart == ep->rend) {
			/* Nothing pending: an idle connection keeps no
			 * buffer (TCP_RBUF_MIN). */
			rx_release_rbuf(ep);
			ep->rstart = ep->rend = 0;
			ep->rfull = false;
			if (ep->dst) { /* 16 KiB: malloc'd at the next body */
				free(ep->dst);
				ep->dst = NULL;
			}
		}
		if (drained || syscalls++ >= TCP_RX_SYSCALL_BUDGET)
			return got;
		r = ep->in_body ? rx_read_body(ep) : rx_read_frames(ep);
		if (r == RX_EMPTY)
			return got;
		got = true;
		if (r == RX_STOP)
			return got;
		drained = r == RX_DRAINED;
	}
	return true;
}
