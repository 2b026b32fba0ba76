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
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

/* A stamped word at the frame position (rx.pos): its fields, checked. */
static bool parse_word(struct mrail_drv_ep *ep, uint64_t w)
{
	if ((w & 0xff) != SHM_W_MAGIC) {
		dc_ep_fail(&ep->dc, MRAIL_ERR_PROTO, false, "malformed ring entry "
			    "from %s: bad frame magic 0x%02x", ep->dc.remote_name,
			    (unsigned)(w & 0xff));
		return false;
	}
	if (((w >> 8) & 0xf) != SHM_FRAME_VERSION) {
		dc_ep_fail(&ep->dc, MRAIL_ERR_PROTO, false, "ring entry from %s has "
			    "frame version %u, we speak %u", ep->dc.remote_name,
			    (unsigned)((w >> 8) & 0xf), SHM_FRAME_VERSION);
		return false;
	}
	ep->rx_hdr_len = shm_frame_hdr_len(w);
	ep->rx_head_len = (uint32_t)((w >> 16) & SHM_W_HEAD_MAX);
	ep->rx_body_len = 0;
	if (w & SHM_W_BODY) {
		/* Written before the word: visible after its acquire. */
		uint8_t len[8];
		shm_ring_copy_out(&ep->rx, 8, len, sizeof len);
		ep->rx_body_len = shm_get_le64(len);
	}
	if (ep->rx_head_len > SHM_MAX_HEAD || ep->rx_body_len > SHM_MAX_BODY) {
		dc_ep_fail(&ep->dc, MRAIL_ERR_PROTO, false, "malformed ring entry "
			    "from %s: head of %u bytes (at most %zu), body of "
			    "%llu (at most %llu)", ep->dc.remote_name,
			    ep->rx_head_len, SHM_MAX_HEAD,
			    (unsigned long long)ep->rx_body_len,
			    (unsigned long long)SHM_MAX_BODY);
		return false;
	}
	/* A whole frame needs no look at the tail (another cache line). */
	if (w & SHM_W_WHOLE)
		shm_ring_seen(&ep->rx, ep->rx.pos + ep->rx_hdr_len +
					       ep->rx_head_len + ep->rx_body_len);
	return true;
}

/*
 * At a frame boundary: the next frame's word, polled where it will be
 * (the next 64-byte boundary). 1: a frame starts at rx.pos now (padding
 * consumed, fields parsed); 0: none yet; -1: the connection failed.
 */
static int next_frame(struct mrail_drv_ep *ep)
{
	uint64_t at = shm_pad64(ep->rx.pos);
	uint64_t w = shm_ring_get_word(&ep->rx, at);

	if ((w >> 40) != shm_frame_stamp(at)) {
		/* Published bytes past the boundary, yet no frame there. */
		if (ep->rx.peer >= at + 8) {
			dc_ep_fail(&ep->dc, MRAIL_ERR_PROTO, false,
				   "malformed ring entry from %s: no frame "
				   "stamp at ring position %llu",
				   ep->dc.remote_name,
				   (unsigned long long)at);
			return -1;
		}
		return 0;
	}
	/* Not our magic and version: only an error once the producer has
	 * published past the word (what sits at an unpublished line is
	 * nobody's frame yet; the slot clearing should keep it zero). */
	if ((w & 0xfff) != (SHM_W_MAGIC | (uint64_t)SHM_FRAME_VERSION << 8)) {
		if (!shm_ring_refresh(&ep->rx))
			return 0; /* a corrupt tail: the audit reports it */
		if (ep->rx.peer < at + 8) {
			if (ep->rx_unpublished == at + 1)
				return 0;
			ep->rx_unpublished = at + 1;
			mrail_debug("shm: unpublished word 0x%016llx at ring "
				    "position %llu from %s: waiting",
				    (unsigned long long)w,
				    (unsigned long long)at,
				    ep->dc.remote_name);
			return 0;
		}
	}
	if (at != ep->rx.pos) { /* the padding, consumed: its slot cleared */
		shm_ring_seen(&ep->rx, at);
		shm_ring_consume(&ep->rx, at - ep->rx.pos);
	}
	return parse_word(ep, w) ? 1 : -1;
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
		if (ep->rx_state == SHM_RX_HDR) {
			int r = next_frame(ep);
			if (r <= 0)
				break;
		}
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
			uint32_t hdr = ep->rx_hdr_len;
			uint64_t hl = ep->rx_head_len, contig;
			if (avail < hdr)
				break;
			const uint8_t *p = shm_ring_peek(&ep->rx, hdr, &contig);
			if (avail >= hdr + hl && contig >= hl) {
				/* In place: released after the upcall. */
				bool ok = deliver_head(ep, p);
				if (ep->dc.state == DC_EP_CLOSED)
					break;
				shm_ring_consume(&ep->rx, hdr + hl);
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
			shm_ring_consume(&ep->rx, hdr);
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
	/* Space goes back when the ring is found empty (after the answers
	 * the frames made us send), or once a quarter of it waits. */
	if (ep->rx.freed != shm_ring_head_due(&ep->rx) &&
	    ep->dc.state != DC_EP_CLOSED &&
	    (ep->rx.pos == before ||
	     ep->rx.pos - ep->rx.freed >= ep->rx.size / 4))
		shm_rx_release(ep);
	return frames;
}

void shm_rx_release(struct mrail_drv_ep *ep)
{
	shm_ring_release(&ep->rx);
	/* Freed space a waiting producer asked to hear of. */
	if (ep->peer_bell >= 0 && shm_ring_space_wanted(&ep->rx))
		shm_ring_bell(ep);
}

void shm_rx_audit(struct mrail_drv_ep *ep)
{
	if (ep->rx_state == SHM_RX_HDR && !shm_ring_refresh(&ep->rx))
		dc_ep_fail(&ep->dc, MRAIL_ERR_PROTO, false, "ring from %s is "
			    "corrupt (its tail is outside the ring)",
			    ep->dc.remote_name);
}
