/*
 * libfabric driver, frames. A frame is one tagged message [driver header,
 * engine head] with tag OFI_TAG_HEAD, received into a pre-posted head
 * buffer, then (if it has a body) a second tagged message whose tag names
 * the receiving connection and the body's sequence number: the receiver
 * posts that receive straight into the engine's iovec once the engine
 * chose it (recv_body), so the body is never copied by the driver (the
 * provider may still buffer a small unexpected one).
 *
 * Sends wait in their connection's queue until connected and until the
 * provider takes them (-FI_EAGAIN: retried from progress); send_done is
 * reported from progress in posting order.
 */
#include "drivers/ofi/ofi_internal.h"
#include "util/clock.h"
#include "util/iov.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

/* ---- local registration (providers with FI_MR_LOCAL) ------------------- */

void ofi_mr_local_release(struct fid_mr **mr, int n)
{
	for (int i = 0; i < n; i++)
		if (mr[i]) {
			fi_close(&mr[i]->fid);
			mr[i] = NULL;
		}
}

int ofi_mr_local(struct ofi_rail *r, const struct iovec *iov, int cnt,
		 uint64_t access, struct fid_mr **mr, void **desc)
{
	for (int i = 0; i < cnt; i++) {
		int rc;
		mr[i] = NULL;
		desc[i] = NULL;
		if (!r->mr_local || !iov[i].iov_len)
			continue;
		rc = fi_mr_reg(r->domain, iov[i].iov_base, iov[i].iov_len,
			       access, 0, r->prov_key ? 0 : r->drv->mr_next_key++,
			       0, &mr[i], NULL);
		if (!rc && r->mr_endpoint) {
			rc = fi_mr_bind(mr[i], &r->ep->fid, 0);
			if (!rc)
				rc = fi_mr_enable(mr[i]);
		}
		if (rc) {
			mrail_error("ofi: %s: registering %zu bytes for a "
				    "message: %s",
				    r->printable, iov[i].iov_len,
				    ofi_strerror(rc));
			ofi_mr_local_release(mr, i + 1);
			return MRAIL_ERR_IO;
		}
		desc[i] = fi_mr_desc(mr[i]);
	}
	return 0;
}

/* ---- send records ------------------------------------------------------ */

static struct ofi_send *send_new(struct mrail_drv_ep *ep, size_t payload_len)
{
	struct ofi_send *s = calloc(1, sizeof *s + OFI_HDR_LEN + payload_len);

	if (!s)
		return NULL;
	s->buf = (uint8_t *)(s + 1);
	s->buf_len = OFI_HDR_LEN + payload_len;
	s->op.kind = OFI_OP_TX;
	s->op.ep = ep;
	s->op.rail = ep->rail;
	s->op.owner = s;
	s->body_op = s->op;
	return s;
}

static void sq_push(struct mrail_drv_ep *ep, struct ofi_send *s)
{
	s->next = NULL;
	if (ep->sq_tail)
		ep->sq_tail->next = s;
	else
		ep->sq_head = s;
	ep->sq_tail = s;
	ep->dc.backlog += s->bytes;
}

static void inflight_push(struct mrail_drv_ep *ep, struct ofi_send *s)
{
	ep->sq_head = s->next;
	if (!ep->sq_head)
		ep->sq_tail = NULL;
	s->next = NULL;
	if (ep->if_tail)
		ep->if_tail->next = s;
	else
		ep->if_head = s;
	ep->if_tail = s;
}

static void release(struct ofi_send *s)
{
	ofi_mr_local_release(s->mr, s->iov_cnt + 1);
	free(s);
}

/* ---- posting ----------------------------------------------------------- */

static int post_head(struct mrail_drv_ep *ep, struct ofi_send *s)
{
	struct ofi_rail *r = ep->rail;
	struct iovec one = {s->buf, s->buf_len};
	ssize_t rc;

	if (r->mr_local && !s->mr[0] &&
	    ofi_mr_local(r, &one, 1, FI_SEND, &s->mr[0], &s->desc[0]) < 0)
		return -FI_ENOMEM;
	if (!s->body_len && s->buf_len <= r->inject_size && !r->mr_local) {
		rc = fi_tinject(r->ep, s->buf, s->buf_len, ep->peer,
				OFI_TAG_HEAD);
		if (rc == 0)
			s->done = true; /* no completion will come */
		return (int)rc;
	}
	rc = fi_tsend(r->ep, s->buf, s->buf_len, s->desc[0], ep->peer,
		      OFI_TAG_HEAD, &s->op.fctx);
	if (rc == 0)
		s->pending++;
	return (int)rc;
}

static int post_body(struct mrail_drv_ep *ep, struct ofi_send *s)
{
	struct ofi_rail *r = ep->rail;
	ssize_t rc;

	if (r->mr_local && !s->mr[1] &&
	    ofi_mr_local(r, s->iov, s->iov_cnt, FI_SEND, &s->mr[1],
			 &s->desc[1]) < 0)
		return -FI_ENOMEM;
	rc = fi_tsendv(r->ep, s->iov, s->desc + 1, (size_t)s->iov_cnt,
		       ep->peer, ofi_body_tag(ep->peer_id, s->body_tag_seq),
		       &s->body_op.fctx);
	if (rc == 0)
		s->pending++;
	return (int)rc;
}

/* 0 posted, -FI_EAGAIN try later, other: failed. */
static int post(struct mrail_drv_ep *ep, struct ofi_send *s)
{
	int rc = 0;

	if (s->posted == 0) {
		if (!s->internal) {
			/* The peer's id is known once connected. */
			struct ofi_hdr h = {.type = OFI_FRAME,
					    .src_rail =
						    (uint8_t)ep->rail->index,
					    .dst_id = ep->peer_id,
					    .src_id = ep->id,
					    .len = (uint32_t)(s->buf_len -
							      OFI_HDR_LEN),
					    .seq = ep->tx_seq,
					    .body_len = s->body_len};
			ofi_hdr_write(s->buf, &h);
		}
		if (s->body_len)
			s->body_tag_seq = ep->tx_body_seq;
		rc = post_head(ep, s);
		if (rc)
			return rc;
		s->posted = 1;
		if (!s->internal) {
			ep->tx_seq++;
			if (s->body_len)
				ep->tx_body_seq++;
		}
		ep->last_sent = mrail_now();
	}
	if (s->posted == 1 && s->body_len) {
		rc = post_body(ep, s);
		if (rc)
			return rc;
	}
	s->posted = 2;
	return 0;
}

void ofi_sq_flush(struct mrail_drv_ep *ep)
{
	while (ep->sq_head && !ep->fail_pending && !ep->tx_hold) {
		struct ofi_send *s = ep->sq_head;
		int rc;

		if (ep->dc.state != DC_EP_CONNECTED &&
		    !(ep->dc.state == DC_EP_CONNECTING && s->internal))
			break;
		rc = post(ep, s);
		if (rc == -FI_EAGAIN) {
			/* The provider's queue is full: progress retries. */
			ofi_kick(ofi_drv(ep));
			break;
		}
		if (rc) {
			ofi_ep_fail(ep, MRAIL_ERR_PEER, "send to %s failed: %s",
				    ep->dc.remote_name, ofi_strerror(rc));
			break;
		}
		ep->dc.backlog -= s->bytes;
		inflight_push(ep, s);
		if (s->done)
			ofi_kick(ofi_drv(ep)); /* inject: report from progress */
	}
}

int ofi_send(struct mrail_drv_ep *ep, const void *head, size_t head_len,
	     const struct iovec *body, int body_cnt, void *send_ctx)
{
	struct ofi_send *s;
	uint64_t body_len;

	if (!ep || ep->dc.state == DC_EP_CLOSED)
		return MRAIL_ERR_INVALID;
	if (ep->dc.state == DC_EP_FAILED || ep->fail_pending)
		return MRAIL_ERR_PEER;
	if (head_len > OFI_MAX_HEAD || (!head && head_len)) {
		mrail_error("ofi: send of a %zu-byte head (limit %zu)",
			    head_len, OFI_MAX_HEAD);
		return MRAIL_ERR_INVALID;
	}
	if (body_cnt < 0 || body_cnt > OFI_MAX_BODY_IOV ||
	    (!body && body_cnt)) {
		mrail_error("ofi: send with a body of %d iovec entries "
			    "(limit %d)",
			    body_cnt, OFI_MAX_BODY_IOV);
		return MRAIL_ERR_INVALID;
	}
	body_len = mrail_iov_length(body, body_cnt);
	if (body_len > OFI_MAX_BODY) {
		mrail_error("ofi: send with a body of %llu bytes (limit %llu)",
			    (unsigned long long)body_len,
			    (unsigned long long)OFI_MAX_BODY);
		return MRAIL_ERR_INVALID;
	}
	s = send_new(ep, head_len);
	if (!s)
		return MRAIL_ERR_NOMEM;
	if (head_len)
		memcpy(s->buf + OFI_HDR_LEN, head, head_len);
	s->send_ctx = send_ctx;
	s->body_len = body_len;
	s->bytes = s->buf_len + body_len;
	/* Empty entries dropped: some providers refuse them. */
	for (int i = 0; i < body_cnt; i++)
		if (body[i].iov_len)
			s->iov[s->iov_cnt++] = body[i];
	sq_push(ep, s);
	if (ep->sq_head == s)
		ofi_sq_flush(ep);
	return 0;
}

int ofi_send_internal(struct mrail_drv_ep *ep, const struct ofi_hdr *h,
		      const void *payload, size_t len)
{
	struct ofi_send *s = send_new(ep, len);
	struct ofi_hdr hh = *h;

	if (!s)
		return MRAIL_ERR_NOMEM;
	hh.len = (uint32_t)len;
	ofi_hdr_write(s->buf, &hh);
	if (len)
		memcpy(s->buf + OFI_HDR_LEN, payload, len);
	s->internal = true;
	s->bytes = s->buf_len;
	sq_push(ep, s);
	if (ep->sq_head == s)
		ofi_sq_flush(ep);
	return 0;
}

void ofi_send_loose(struct ofi_rail *r, fi_addr_t to, const struct ofi_hdr *h,
		    const void *payload, size_t len)
{
	uint8_t small[OFI_HDR_LEN + 16];
	struct ofi_hdr hh = *h;
	struct ofi_send *s;
	ssize_t rc;

	hh.len = (uint32_t)len;
	if (!r->mr_local && OFI_HDR_LEN + len <= r->inject_size &&
	    len <= 16) {
		ofi_hdr_write(small, &hh);
		if (len)
			memcpy(small + OFI_HDR_LEN, payload, len);
		rc = fi_tinject(r->ep, small, OFI_HDR_LEN + len, to,
				OFI_TAG_HEAD);
		if (rc)
			mrail_debug("ofi: %s: driver message type %u not sent: "
				    "%s",
				    r->printable, h->type,
				    ofi_strerror((int)rc));
		return;
	}
	/* Through an orphan record, freed by its completion. */
	s = calloc(1, sizeof *s + OFI_HDR_LEN + len);
	if (!s)
		return;
	s->buf = (uint8_t *)(s + 1);
	s->buf_len = OFI_HDR_LEN + len;
	s->op.kind = OFI_OP_TX;
	s->op.rail = r;
	s->op.owner = s;
	ofi_hdr_write(s->buf, &hh);
	if (len)
		memcpy(s->buf + OFI_HDR_LEN, payload, len);
	{
		struct iovec one = {s->buf, s->buf_len};
		if (ofi_mr_local(r, &one, 1, FI_SEND, &s->mr[0], &s->desc[0])) {
			free(s);
			return;
		}
	}
	rc = fi_tsend(r->ep, s->buf, s->buf_len, s->desc[0], to, OFI_TAG_HEAD,
		      &s->op.fctx);
	if (rc) {
		mrail_debug("ofi: %s: driver message type %u not sent: %s",
			    r->printable, h->type, ofi_strerror((int)rc));
		release(s);
		return;
	}
	s->pending = 1;
	ofi_orphan(r->drv, &s->op);
}

uint64_t ofi_ep_backlog(struct mrail_drv_ep *ep)
{
	uint64_t n;

	if (!ep)
		return 0;
	/* Posted but not completed counts: the provider may still read
	 * the memory (rendezvous), so the engine must not close yet. */
	n = ep->dc.backlog;
	for (struct ofi_send *s = ep->if_head; s; s = s->next)
		if (!s->done)
			n += s->bytes;
	return n;
}

/* ---- completions ------------------------------------------------------- */

void ofi_tx_complete(struct ofi_op *op, int status)
{
	struct ofi_send *s = op->owner;
	struct mrail_drv_ep *ep = op->ep;

	if (status && !s->status)
		s->status = status;
	if (--s->pending > 0)
		return;
	s->done = true;
	if (s->status && ep)
		ofi_ep_fail(ep, MRAIL_ERR_PEER, "send to %s failed: %s",
			    ep->dc.remote_name, ofi_strerror(s->status));
}

static int report_done(struct mrail_drv_ep *ep)
{
	const struct mrail_drv_upcalls *up = ofi_drv(ep)->dc.base.up;
	int n = 0;

	while (ep->if_head && ep->if_head->done &&
	       ep->dc.state != DC_EP_CLOSED) {
		struct ofi_send *s = ep->if_head;
		int status = s->status ? MRAIL_ERR_PEER : 0;
		bool internal = s->internal;
		void *ctx = s->send_ctx;

		if (ep->dc.state == DC_EP_FAILED)
			status = ep->fail_status;
		ep->if_head = s->next;
		if (!ep->if_head)
			ep->if_tail = NULL;
		release(s);
		if (!internal)
			up->send_done(ep->dc.ctx, ctx, status);
		n++;
	}
	return n;
}

int ofi_run_done(struct mrail_drv *drv)
{
	int n = 0;

	struct mrail_list *pos, *tmp;

	dc_foreach_ep(pos, tmp, &drv->dc) {
		struct mrail_drv_ep *ep = (struct mrail_drv_ep *)dc_ep_entry(pos);
		if (ep->fail_pending || ep->dc.state == DC_EP_CLOSED)
			continue; /* its ep_error first */
		n += report_done(ep);
	}
	return n;
}

void ofi_sends_fail(struct mrail_drv_ep *ep, int status)
{
	const struct mrail_drv_upcalls *up = ofi_drv(ep)->dc.base.up;

	report_done(ep);
	while (ep->sq_head && ep->dc.state != DC_EP_CLOSED) {
		struct ofi_send *s = ep->sq_head;
		/* A partly posted frame is in the provider's hands. */
		if (s->posted) {
			ep->dc.backlog -= s->bytes;
			s->done = s->pending == 0;
			inflight_push(ep, s);
			continue;
		}
		ep->sq_head = s->next;
		if (!ep->sq_head)
			ep->sq_tail = NULL;
		ep->dc.backlog -= s->bytes;
		bool internal = s->internal;
		void *ctx = s->send_ctx;
		release(s);
		if (!internal)
			up->send_done(ep->dc.ctx, ctx, status);
	}
}

static void drop_one(struct mrail_drv_ep *ep, struct ofi_send *s)
{
	s->next = NULL;
	if (!s->pending) {
		release(s);
		return;
	}
	/* Still in the provider's hands: the last completion frees it. */
	s->body_op.ep = NULL;
	s->body_op.orphan = true;
	ofi_orphan(ofi_drv(ep), &s->op);
}

void ofi_sends_drop(struct mrail_drv_ep *ep)
{
	while (ep->sq_head) {
		struct ofi_send *s = ep->sq_head;
		ep->sq_head = s->next;
		drop_one(ep, s);
	}
	ep->sq_tail = NULL;
	ep->dc.backlog = 0;
	while (ep->if_head) {
		struct ofi_send *s = ep->if_head;
		ep->if_head = s->next;
		drop_one(ep, s);
	}
	ep->if_tail = NULL;
}

/* ---- receiving --------------------------------------------------------- */

static bool parse_hdr(const uint8_t *p, size_t len, struct ofi_hdr *h,
		      const char **why)
{
	uint32_t magic;

	if (len < OFI_HDR_LEN) {
		*why = "shorter than a driver header";
		return false;
	}
	magic = ofi_get_le32(p);
	if ((magic & OFI_MAGIC_MASK) != OFI_MAGIC) {
		*why = "not an ofi driver message (bad magic)";
		return false;
	}
	if (magic >> 24 != OFI_VERSION) {
		*why = "another ofi driver wire version";
		return false;
	}
	h->type = p[4];
	h->src_rail = p[5];
	h->dst_id = ofi_get_le32(p + 8);
	h->src_id = ofi_get_le32(p + 12);
	h->len = ofi_get_le32(p + 16);
	h->seq = ofi_get_le32(p + 20);
	h->body_len = ofi_get_le64(p + 24);
	if ((size_t)h->len != len - OFI_HDR_LEN) {
		*why = "payload length disagrees with the message length";
		return false;
	}
	if (h->type < OFI_HELLO || h->type > OFI_PING) {
		*why = "unknown message type";
		return false;
	}
	return true;
}

static void body_post(struct mrail_drv_ep *ep)
{
	struct ofi_body_rx *b = ep->body;
	struct ofi_rail *r = ep->rail;
	ssize_t rc;

	struct iovec one;
	const struct iovec *iov = b->iov;
	int cnt = b->cnt;

	b->post_again = false;
	if ((size_t)b->cnt > r->rx_iov_limit) {
		if (!b->bounce)
			b->bounce = malloc(b->len);
		if (!b->bounce) {
			ofi_ep_fail(ep, MRAIL_ERR_NOMEM,
				    "no memory for a body from %s",
				    ep->dc.remote_name);
			return;
		}
		one = (struct iovec){b->bounce, b->len};
		iov = &one;
		cnt = 1;
	}
	if (r->mr_local && !b->mr[0] &&
	    ofi_mr_local(r, iov, cnt, FI_RECV, b->mr, b->desc) < 0) {
		ofi_ep_fail(ep, MRAIL_ERR_IO,
			    "cannot register a receive buffer for %s",
			    ep->dc.remote_name);
		return;
	}
	rc = fi_trecvv(r->ep, iov, b->desc, (size_t)cnt,
		       r->directed ? ep->peer : FI_ADDR_UNSPEC,
		       ofi_body_tag(ep->id, b->seq), 0, &b->op.fctx);
	if (rc == 0) {
		b->posted = true;
	} else if (rc == -FI_EAGAIN) {
		b->post_again = true;
		ofi_kick(ofi_drv(ep));
	} else {
		ofi_ep_fail(ep, MRAIL_ERR_PEER,
			    "posting a body receive from %s failed: %s",
			    ep->dc.remote_name, ofi_strerror((int)rc));
	}
}

void ofi_body_repost(struct mrail_drv_ep *ep)
{
	if (ep->body && ep->body->post_again && !ep->fail_pending)
		body_post(ep);
}

static void deliver(struct mrail_drv_ep *ep, const struct ofi_hdr *h,
		    const uint8_t *payload)
{
	const struct mrail_drv_upcalls *up = ofi_drv(ep)->dc.base.up;
	struct ofi_body_rx *b;
	uint64_t cap_body = OFI_MAX_BODY;
	void *cookie;
	int cnt = OFI_RX_IOV_CAP;

	if (h->type == OFI_CLOSE) {
		ofi_handle_control(ep->rail, h, payload);
		return;
	}
	if (h->body_len == 0) {
		up->recv_frame(ep->dc.ctx, payload, h->len);
		return;
	}
	if (h->body_len > cap_body) {
		ofi_ep_fail(ep, MRAIL_ERR_PROTO,
			    "%s announced a %llu-byte body (limit %llu)",
			    ep->dc.remote_name, (unsigned long long)h->body_len,
			    (unsigned long long)cap_body);
		return;
	}
	b = calloc(1, sizeof *b);
	if (!b) {
		ofi_ep_fail(ep, MRAIL_ERR_NOMEM,
			    "no memory for a body receive from %s",
			    ep->dc.remote_name);
		return;
	}
	b->op.kind = OFI_OP_RX_BODY;
	b->op.ep = ep;
	b->op.rail = ep->rail;
	b->op.owner = b;
	b->seq = ep->rx_body_seq++;
	b->len = h->body_len;
	cookie = up->recv_body(ep->dc.ctx, payload, h->len, h->body_len, b->iov,
			       &cnt);
	if (ep->dc.state != DC_EP_CONNECTED || ep->fail_pending) {
		free(b);
		return;
	}
	if (!cookie) {
		free(b);
		ofi_ep_fail(ep, MRAIL_ERR_PROTO,
			    "engine rejected a frame with a %u-byte head and "
			    "a %llu-byte body from %s",
			    h->len, (unsigned long long)h->body_len,
			    ep->dc.remote_name);
		return;
	}
	if (cnt < 1 || cnt > OFI_RX_IOV_CAP ||
	    (uint64_t)mrail_iov_length(b->iov, cnt) != h->body_len) {
		size_t got = cnt > 0 && cnt <= OFI_RX_IOV_CAP
				     ? mrail_iov_length(b->iov, cnt)
				     : 0;
		free(b);
		ofi_ep_fail(ep, MRAIL_ERR_PROTO,
			    "engine gave %d receive iovec entries of %zu bytes "
			    "for a %llu-byte body from %s",
			    cnt, got, (unsigned long long)h->body_len,
			    ep->dc.remote_name);
		return;
	}
	/* Empty entries dropped, as on the sending side. */
	b->cnt = 0;
	for (int i = 0; i < cnt; i++)
		if (b->iov[i].iov_len)
			b->iov[b->cnt++] = b->iov[i];
	b->cookie = cookie;
	ep->body = b;
	body_post(ep);
}

static void hold(struct mrail_drv_ep *ep, const struct ofi_hdr *h,
		 const uint8_t *payload)
{
	struct ofi_held *k = malloc(sizeof *k + h->len), **pp;

	if (!k) {
		ofi_ep_fail(ep, MRAIL_ERR_NOMEM,
			    "no memory to keep a frame from %s",
			    ep->dc.remote_name);
		return;
	}
	k->h = *h;
	k->len = h->len;
	memcpy(k->data, payload, h->len);
	/* Sorted by number (wrapping): usually appended. */
	pp = &ep->held_head;
	while (*pp && (int32_t)((*pp)->h.seq - h->seq) < 0)
		pp = &(*pp)->next;
	k->next = *pp;
	*pp = k;
	if (!k->next)
		ep->held_tail = k;
}

void ofi_run_held(struct mrail_drv_ep *ep)
{
	while (ep->held_head && !ep->body && ep->dc.state == DC_EP_CONNECTED &&
	       !ep->fail_pending && ep->held_head->h.seq == ep->rx_seq) {
		struct ofi_held *k = ep->held_head;
		ep->held_head = k->next;
		if (!ep->held_head)
			ep->held_tail = NULL;
		ep->rx_seq++;
		if (k->h.src_id != ep->peer_id)
			ofi_ep_fail(ep, MRAIL_ERR_PROTO,
				    "frame from connection #%u, expected #%u",
				    k->h.src_id, ep->peer_id);
		else
			deliver(ep, &k->h, k->data);
		free(k);
	}
}

void ofi_rx_head_complete(struct ofi_rx *rx, size_t len)
{
	struct ofi_rail *r = rx->op.rail;
	struct mrail_drv_ep *ep;
	struct ofi_hdr h;
	const char *why;

	if (!parse_hdr(rx->buf, len, &h, &why)) {
		mrail_warn("ofi: %s: dropped a %zu-byte message: %s",
			   r->printable, len, why);
		goto repost;
	}
	if (h.type != OFI_FRAME && h.type != OFI_CLOSE) {
		ofi_handle_control(r, &h, rx->buf + OFI_HDR_LEN);
		goto repost;
	}
	ep = ofi_ep_by_id(r, h.dst_id);
	if (!ep || ep->fail_pending ||
	    (ep->dc.state != DC_EP_CONNECTED && ep->dc.state != DC_EP_CONNECTING) ||
	    (ep->dc.state == DC_EP_CONNECTED && h.src_id != ep->peer_id)) {
		mrail_debug("ofi: %s: frame for connection #%u (from #%u), "
			    "which is gone: dropped",
			    r->printable, h.dst_id, h.src_id);
		goto repost;
	}
	ep->last_heard = mrail_now();
	if ((int32_t)(h.seq - ep->rx_seq) < 0) {
		ofi_ep_fail(ep, MRAIL_ERR_PROTO,
			    "%s sent frame %u twice (expected %u)",
			    ep->dc.remote_name, h.seq, ep->rx_seq);
		goto repost;
	}
	/* In order: early frames, and frames behind a body still
	 * arriving, wait. */
	if (ep->dc.state == DC_EP_CONNECTED && !ep->body && !ep->held_head &&
	    h.seq == ep->rx_seq) {
		ep->rx_seq++;
		deliver(ep, &h, rx->buf + OFI_HDR_LEN);
	} else {
		hold(ep, &h, rx->buf + OFI_HDR_LEN);
		ofi_run_held(ep);
	}
repost:
	if (r->ep)
		ofi_rx_post(r, rx);
}

void ofi_rx_body_complete(struct mrail_drv_ep *ep, size_t len, int status)
{
	struct ofi_body_rx *b = ep ? ep->body : NULL;

	if (!b)
		return;
	ep->body = NULL;
	ofi_mr_local_release(b->mr, b->cnt);
	if (b->bounce && !status && len == b->len)
		mrail_buf_to_iov(b->iov, b->cnt, 0, b->bounce, b->len);
	free(b->bounce);
	if (status || len != b->len) {
		int st = status == -FI_ETRUNC || !status ? MRAIL_ERR_PROTO
							 : MRAIL_ERR_PEER;
		ofi_ep_fail(ep, st, "body receive from %s failed: %s (%zu of "
				    "%llu bytes)",
			    ep->dc.remote_name,
			    status ? ofi_strerror(status) : "wrong length", len,
			    (unsigned long long)b->len);
		free(b);
		return;
	}
	void *cookie = b->cookie;
	free(b);
	ofi_drv(ep)->dc.base.up->recv_body_done(ep->dc.ctx, cookie);
	if (ep->dc.state == DC_EP_CONNECTED)
		ofi_run_held(ep);
}

void ofi_rx_drop(struct mrail_drv_ep *ep)
{
	while (ep->held_head) {
		struct ofi_held *k = ep->held_head;
		ep->held_head = k->next;
		free(k);
	}
	ep->held_tail = NULL;
	if (ep->body) {
		struct ofi_body_rx *b = ep->body;
		ep->body = NULL;
		if (b->posted) {
			/* Its cancel completion frees it. */
			fi_cancel(&ep->rail->ep->fid, &b->op.fctx);
			ofi_orphan(ofi_drv(ep), &b->op);
		} else {
			ofi_mr_local_release(b->mr, b->cnt);
			free(b->bounce);
			free(b);
		}
	}
}
