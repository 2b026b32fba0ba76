/*
 * The receive side of a connection: parses frames off the peer's ring.
 * A head that lies whole and unwrapped in the ring goes to the engine in
 * place (no copy); one that wraps or has not fully arrived is gathered in
 * head_buf. Bodies are copied from the ring straight into the memory the
 * engine names. Anything not a frame of ours is a protocol error naming
 * what was wrong, and ends the connection (that peer only).
 */
#include "drivers/shm/shm_internal.h"
#include "mrail.h"

#include <stdlib.h>
#include <string.h>

static bool parse_hdr(struct mrail_drv_ep *ep)
{
	uint8_t h[SHM_FRAME_HDR_LEN];
	uint32_t magic;

	shm_ring_copy_out(&ep->rx, 0, h, sizeof h);
	magic = shm_get_le32(h);
	if ((magic & SHM_FRAME_MAGIC_MASK) != SHM_FRAME_MAGIC) {
		dc_ep_fail(&ep->dc, MRAIL_ERR_PROTO, false, "malformed ring entry "
			    "from %s: bad frame magic 0x%08x", ep->dc.remote_name,
			    magic);
		return false;
	}
	if (magic >> 24 != SHM_FRAME_VERSION) {
		dc_ep_fail(&ep->dc, MRAIL_ERR_PROTO, false, "ring entry from %s has "
			    "frame version %u, we speak %u", ep->dc.remote_name,
			    magic >> 24, SHM_FRAME_VERSION);
		return false;
	}
	ep->rx_head_len = shm_get_le32(h + 4);
	ep->rx_body_len = shm_get_le64(h + 8);
	if (ep->rx_head_len > SHM_MAX_HEAD || ep->rx_body_len > SHM_MAX_BODY) {
		dc_ep_fail(&ep->dc, MRAIL_ERR_PROTO, false, "malformed ring entry "
			    "from %s: head of %u bytes (at most %zu), body of "
			    "%llu (at most %llu)", ep->dc.remote_name,
			    ep->rx_head_len, SHM_MAX_HEAD,
			    (unsigned long long)ep->rx_body_len,
			    (unsigned long long)SHM_MAX_BODY);
		return false;
	}
	return true;
}

/* The head is complete at `head`: hand it up. False if the connection
 * ended meanwhile. */
static bool deliver_head(struct mrail_drv_ep *ep, const uint8_t *head)
{
	const struct mrail_drv_upcalls *up = ep->dc.drv->base.up;

	if (ep->rx_body_len == 0) {
		up->recv_frame(ep->dc.ctx, head, ep->rx_head_len);
		ep->rx_state = SHM_RX_HDR;
		return ep->dc.state == DC_EP_CONNECTED;
	}
	ep->rx_dst_cnt = SHM_MAX_BODY_IOV;
	ep->rx_cookie = up->recv_body(ep->dc.ctx, head, ep->rx_head_len,
				      ep->rx_body_len, ep->rx_dst,
				      &ep->rx_dst_cnt);
	if (ep->dc.state != DC_EP_CONNECTED)
		return false;
	if (!ep->rx_cookie) {
		dc_ep_fail(&ep->dc, MRAIL_ERR_PROTO, false, "engine rejected a "
			    "frame body of %llu bytes from %s",
			    (unsigned long long)ep->rx_body_len,
			    ep->dc.remote_name);
		return false;
	}
	ep->rx_state = SHM_RX_BODY;
	ep->rx_got = 0;
	ep->rx_dst_idx = 0;
	ep->rx_dst_off = 0;
	return true;
}

/* Copy up to avail body bytes into the engine's memory; returns bytes. */
static uint64_t body_step(struct mrail_drv_ep *ep, uint64_t avail)
{
	uint64_t done = 0, want = ep->rx_body_len - ep->rx_got;

	if (want > avail)
		want = avail;
	while (done < want && ep->rx_dst_idx < ep->rx_dst_cnt) {
		struct iovec *d = &ep->rx_dst[ep->rx_dst_idx];
		uint64_t n = d->iov_len - ep->rx_dst_off;
		if (n > want - done)
			n = want - done;
		shm_ring_copy_out(&ep->rx, done,
				  (uint8_t *)d->iov_base + ep->rx_dst_off, n);
		done += n;
		ep->rx_dst_off += n;
		if (ep->rx_dst_off == d->iov_len) {
			ep->rx_dst_idx++;
			ep->rx_dst_off = 0;
		}
	}
	return done;
}

/* A head that wraps or has not all arrived is gathered here: sized to
 * the largest seen, not to max_head, as most connections never need it. */
static bool head_room(struct mrail_drv_ep *ep, uint32_t len)
{
	size_t cap = ep->head_cap ? ep->head_cap : 4096;

	if (len <= ep->head_cap)
		return true;
	while (cap < len)
		cap *= 2;
	uint8_t *p = realloc(ep->head_buf, cap);
	if (!p)
		return false;
	ep->head_buf = p;
	ep->head_cap = cap;
	return true;
}

static int rx_loop(struct mrail_drv_ep *ep)
{
	int frames = 0;

	while (ep->dc.state == DC_EP_CONNECTED) {
		uint64_t avail = shm_ring_avail(&ep->rx);
		if (avail == UINT64_MAX) {
			dc_ep_fail(&ep->dc, MRAIL_ERR_PROTO, false, "ring from %s is "
				    "corrupt (its tail is outside the ring)",
				    ep->dc.remote_name);
			break;
		}
		if (avail == 0)
			break;
		if (ep->rx_state == SHM_RX_HDR) {
			/* Frames start 8-aligned: skip the zeros before. */
			uint64_t pad = (-ep->rx.pos) & 7;
			if (pad) {
				if (avail < pad)
					break;
				shm_ring_consume(&ep->rx, pad);
				continue;
			}
			if (avail < SHM_FRAME_HDR_LEN)
				break;
			if (!parse_hdr(ep))
				break;
			uint64_t hl = ep->rx_head_len, contig;
			const uint8_t *p = shm_ring_peek(&ep->rx,
							 SHM_FRAME_HDR_LEN,
							 &contig);
			if (avail >= SHM_FRAME_HDR_LEN + hl && contig >= hl) {
				/* In place: released after the upcall. */
				bool ok = deliver_head(ep, p);
				if (ep->dc.state == DC_EP_CLOSED)
					break;
				shm_ring_consume(&ep->rx, SHM_FRAME_HDR_LEN + hl);
				if (ep->rx_body_len == 0)
					frames++;
				if (!ok)
					break;
				continue;
			}
			if (!head_room(ep, ep->rx_head_len)) {
				dc_ep_fail(&ep->dc, MRAIL_ERR_NOMEM, false,
					   "no memory for a %u-byte head",
					   ep->rx_head_len);
				break;
			}
			shm_ring_consume(&ep->rx, SHM_FRAME_HDR_LEN);
			ep->rx_state = SHM_RX_HEAD;
			ep->rx_got = 0;
			continue;
		}
		if (ep->rx_state == SHM_RX_HEAD) {
			uint64_t n = ep->rx_head_len - ep->rx_got;
			if (n > avail)
				n = avail;
			shm_ring_copy_out(&ep->rx, 0, ep->head_buf + ep->rx_got,
					  n);
			shm_ring_consume(&ep->rx, n);
			ep->rx_got += n;
			if (ep->rx_got < ep->rx_head_len)
				continue;
			bool body = ep->rx_body_len > 0;
			if (!deliver_head(ep, ep->head_buf))
				break;
			if (!body)
				frames++;
			continue;
		}
		/* SHM_RX_BODY */
		uint64_t n = body_step(ep, avail);
		if (n == 0) {
			dc_ep_fail(&ep->dc, MRAIL_ERR_PROTO, false,
				   "the engine's buffers for a body from %s "
				   "hold fewer than its %llu bytes",
				   ep->dc.remote_name,
				   (unsigned long long)ep->rx_body_len);
			break;
		}
		shm_ring_consume(&ep->rx, n);
		ep->rx_got += n;
		if (ep->rx_got < ep->rx_body_len)
			continue;
		ep->rx_state = SHM_RX_HDR;
		ep->dc.drv->base.up->recv_body_done(ep->dc.ctx, ep->rx_cookie);
		frames++;
	}
	return frames;
}

int shm_rx(struct mrail_drv_ep *ep)
{
	int frames;

	if (ep->in_rx)
		return 0;
	uint64_t before = ep->rx.pos;
	ep->in_rx = true;
	frames = rx_loop(ep);
	ep->in_rx = false;
	/* Freed space a waiting producer asked to hear of. */
	if (ep->rx.pos != before && ep->peer_bell >= 0 &&
	    ep->dc.state != DC_EP_CLOSED && shm_ring_space_wanted(&ep->rx))
		shm_ring_bell(ep);
	return frames;
}
