/*
 * Verbs driver data path. A frame travels as one or more RC SENDs of at
 * most VB_BUF bytes copied into registered bounce buffers: the first
 * carries the head and the start of the body, CONT messages the rest of
 * the body, which the receiver copies straight into the engine's iovec.
 * Credits: a message may only go when the peer has a receive posted for
 * it (initially VB_RECV_DEPTH); every message returns the receives
 * reposted since the last one, and an explicit CREDIT message returns
 * them when no frame is going out. The last VB_CREDIT_RESERVE credits
 * are kept for CREDIT messages, so two sides that both wait for credits
 * can always tell each other. get/put are RDMA READ/WRITE between the
 * registered user buffers.
 */
#include "drivers/verbs/verbs_internal.h"
#include "util/clock.h"
#include "util/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define VB_MR_MAGIC 0x76624d52u

struct mrail_drv_mr {
	uint32_t magic;
	struct mrail_drv *drv;
	void *addr;
	size_t len;
	unsigned access;
	struct ibv_mr *m[VB_MAX_DEV];
};

static uint8_t *rbuf(struct mrail_drv_ep *ep, int i)
{
	return ep->buf + (size_t)i * VB_BUF;
}

static uint8_t *sbuf(struct mrail_drv_ep *ep, int i)
{
	return ep->buf + (size_t)(VB_RECV_DEPTH + i) * VB_BUF;
}

int vb_post_recv(struct mrail_drv_ep *ep, int idx)
{
	struct ibv_sge sge = {(uintptr_t)rbuf(ep, idx), VB_BUF, ep->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = (uintptr_t)&ep->rwr[idx],
				 .sg_list = &sge, .num_sge = 1}, *bad;
	int rc = vb_drv(ep)->api->post_recv(ep->qp, &wr, &bad);

	if (rc == 0)
		ep->posted++;
	return rc;
}

static int status_err(enum ibv_wc_status st)
{
	switch (st) {
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return MRAIL_ERR_PEER;
	case IBV_WC_REM_ACCESS_ERR:
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_LOC_LEN_ERR:
		return MRAIL_ERR_PROTO;
	default:
		return MRAIL_ERR_IO;
	}
}

/* ---- sending ----------------------------------------------------------- */

/* Post one message of len bytes from bounce buffer idx. */
static int post_msg(struct mrail_drv_ep *ep, int idx, uint32_t len,
		    struct vb_frame *f)
{
	struct ibv_sge sge = {(uintptr_t)sbuf(ep, idx), len, ep->mr->lkey};
	struct ibv_send_wr wr = {0}, *bad;
	int rc;

	ep->swr[idx].frame = f;
	wr.wr_id = (uintptr_t)&ep->swr[idx];
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED |
			(len <= ep->max_inline ? IBV_SEND_INLINE : 0);
	rc = vb_drv(ep)->api->post_send(ep->qp, &wr, &bad);
	if (rc) {
		ep->sfree[ep->nsfree++] = idx;
		ep->post_err = rc;
		vb_timer_want(vb_drv(ep), mrail_now()); /* progress reports it */
		return rc;
	}
	ep->credits--;
	ep->sq_out++;
	ep->posted++;
	return 0;
}

static void put_hdr(struct mrail_drv_ep *ep, uint8_t *m, int type,
		    uint32_t head_len, uint64_t body_len)
{
	int back = ep->to_return > 0xffff ? 0xffff : ep->to_return;

	m[0] = (uint8_t)type;
	m[1] = VB_MSG_VERSION;
	m[2] = (uint8_t)back;
	m[3] = (uint8_t)(back >> 8);
	vb_put32(m + 4, head_len);
	vb_put64(m + 8, body_len);
	ep->to_return -= back;
}

static int send_ctrl(struct mrail_drv_ep *ep, int type)
{
	int idx;

	if (!ep->nsfree || ep->credits < 1 || ep->sq_out >= ep->sq_max)
		return -1;
	idx = ep->sfree[--ep->nsfree];
	put_hdr(ep, sbuf(ep, idx), type, 0, 0);
	return post_msg(ep, idx, VB_HDR, NULL);
}

int vb_send_rtu(struct mrail_drv_ep *ep)
{
	return send_ctrl(ep, VB_MSG_RTU);
}

/* Copy n body bytes of f from offset f->body_sent into dst. */
static void copy_body(struct vb_frame *f, uint8_t *dst, size_t n)
{
	uint64_t skip = f->body_sent;

	for (int i = 0; i < f->body_cnt && n; i++) {
		size_t l = f->body[i].iov_len;
		if (skip >= l) {
			skip -= l;
			continue;
		}
		size_t take = l - skip < n ? l - skip : n;
		memcpy(dst, (uint8_t *)f->body[i].iov_base + skip, take);
		dst += take;
		n -= take;
		f->body_sent += take;
		skip = 0;
	}
}

/* Post the next message of the frame being posted; false if it must
 * wait (credits, buffers, send queue) or a post failed. */
static bool post_next(struct mrail_drv_ep *ep)
{
	struct vb_frame *f = ep->fq_post;
	uint8_t *m;
	size_t room, n;
	int idx;

	if (ep->credits <= VB_CREDIT_RESERVE || !ep->nsfree ||
	    ep->sq_out >= ep->sq_max)
		return false;
	idx = ep->sfree[--ep->nsfree];
	m = sbuf(ep, idx);
	room = VB_BUF - VB_HDR;
	if (!f->head_sent) {
		put_hdr(ep, m, VB_MSG_FRAME, (uint32_t)f->head_len,
			f->body_len);
		memcpy(m + VB_HDR, f->head, f->head_len);
		room -= f->head_len;
		n = f->body_len < room ? f->body_len : room;
		copy_body(f, m + VB_HDR + f->head_len, n);
		n += f->head_len;
		f->head_sent = true;
	} else {
		put_hdr(ep, m, VB_MSG_CONT, 0, 0);
		n = f->body_len - f->body_sent < room
			    ? f->body_len - f->body_sent
			    : room;
		copy_body(f, m + VB_HDR, n);
	}
	if (post_msg(ep, idx, (uint32_t)(VB_HDR + n), f))
		return false;
	f->inflight++;
	if (f->body_sent == f->body_len)
		ep->fq_post = f->next;
	return true;
}

static void post_rma(struct mrail_drv_ep *ep)
{
	for (struct vb_rma *op = ep->rma_head; op; op = op->next) {
		struct ibv_sge sge;
		struct ibv_send_wr wr = {0}, *bad;
		int rc;

		if (op->posted)
			continue;
		if (ep->sq_out >= ep->sq_max)
			return;
		sge = (struct ibv_sge){(uintptr_t)op->laddr, (uint32_t)op->len,
				       op->lkey};
		wr.wr_id = (uintptr_t)&op->wr;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = op->read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = op->raddr;
		wr.wr.rdma.rkey = op->rkey;
		rc = vb_drv(ep)->api->post_send(ep->qp, &wr, &bad);
		if (rc) {
			ep->post_err = rc;
			vb_timer_want(vb_drv(ep), mrail_now());
			return;
		}
		op->posted = true;
		ep->sq_out++;
		ep->posted++;
	}
}

void vb_ep_push(struct mrail_drv_ep *ep)
{
	if (ep->dc.state != DC_EP_CONNECTED || !ep->established || ep->post_err)
		return;
	post_rma(ep);
	while (ep->fq_post && !ep->post_err && post_next(ep))
		;
	/* Nothing carried the credits back: say it on its own. */
	if (ep->to_return >= VB_CREDIT_THRESH && !ep->post_err)
		send_ctrl(ep, VB_MSG_CREDIT);
}

int vb_send(struct mrail_drv_ep *ep, const void *head, size_t head_len,
	    const struct iovec *body, int body_cnt, void *send_ctx)
{
	struct vb_frame *f;
	uint64_t blen = 0;

	if (!ep || ep->dc.state == DC_EP_CLOSED || (head_len && !head) ||
	    head_len > VB_MAX_HEAD || body_cnt < 0 ||
	    body_cnt > VB_MAX_BODY_IOV || (body_cnt && !body))
		return MRAIL_ERR_INVALID;
	if (ep->dc.state == DC_EP_FAILED)
		return MRAIL_ERR_PEER;
	for (int i = 0; i < body_cnt; i++)
		blen += body[i].iov_len;
	if (blen > VB_MAX_BODY)
		return MRAIL_ERR_INVALID;
	f = calloc(1, sizeof *f + (size_t)body_cnt * sizeof f->body[0]);
	if (!f)
		return MRAIL_ERR_NOMEM;
	f->send_ctx = send_ctx;
	f->head = head;
	f->head_len = head_len;
	f->body_len = blen;
	f->body_cnt = body_cnt;
	if (body_cnt)
		memcpy(f->body, body, (size_t)body_cnt * sizeof *body);
	if (ep->fq_tail)
		ep->fq_tail->next = f;
	else
		ep->fq_head = f;
	ep->fq_tail = f;
	if (!ep->fq_post)
		ep->fq_post = f;
	ep->dc.backlog += head_len + blen;
	vb_ep_push(ep); /* posting makes no upcall */
	return 0;
}

/* Frames at the head whose messages all completed: send_done. */
static void complete_frames(struct mrail_drv_ep *ep)
{
	while (ep->fq_head && ep->fq_head != ep->fq_post &&
	       ep->fq_head->inflight == 0 && ep->dc.state == DC_EP_CONNECTED) {
		struct vb_frame *f = ep->fq_head;
		ep->fq_head = f->next;
		if (!ep->fq_head)
			ep->fq_tail = NULL;
		ep->dc.backlog -= f->head_len + f->body_len;
		vb_drv(ep)->dc.base.up->send_done(ep->dc.ctx, f->send_ctx, 0);
		free(f);
	}
}

/* ---- receiving --------------------------------------------------------- */

static void body_copy(struct mrail_drv_ep *ep, const uint8_t *src, size_t n)
{
	while (n && ep->rx_i < ep->rx_cnt) {
		struct iovec *v = &ep->rx_iov[ep->rx_i];
		size_t take = v->iov_len - ep->rx_off < n
				      ? v->iov_len - ep->rx_off
				      : n;
		memcpy((uint8_t *)v->iov_base + ep->rx_off, src, take);
		src += take;
		n -= take;
		ep->rx_off += take;
		ep->rx_left -= take;
		if (ep->rx_off == v->iov_len) {
			ep->rx_i++;
			ep->rx_off = 0;
		}
	}
}

/* One received message; false if the connection failed. */
static bool on_message(struct mrail_drv_ep *ep, const uint8_t *m,
		       uint32_t len)
{
	const struct mrail_drv_upcalls *up = vb_drv(ep)->dc.base.up;
	uint32_t head_len;
	uint64_t body_len, here;

	if (len < VB_HDR || m[1] != VB_MSG_VERSION || m[0] < VB_MSG_FRAME ||
	    m[0] > VB_MSG_RTU) {
		vb_ep_fail(ep, MRAIL_ERR_PROTO, true,
			   "malformed message of %u bytes (type %u, version "
			   "%u)",
			   len, len ? m[0] : 0, len > 1 ? m[1] : 0);
		return false;
	}
	ep->credits += m[2] | m[3] << 8;
	ep->established = true;
	head_len = vb_get32(m + 4);
	body_len = vb_get64(m + 8);
	switch (m[0]) {
	case VB_MSG_FRAME:
		if (ep->rx_body || head_len > len - VB_HDR ||
		    body_len > VB_MAX_BODY ||
		    len - VB_HDR - head_len > body_len ||
		    (!body_len && len != VB_HDR + head_len)) {
			vb_ep_fail(ep, MRAIL_ERR_PROTO, true,
				   "malformed frame: head %u, body %llu bytes "
				   "in a message of %u%s",
				   head_len, (unsigned long long)body_len, len,
				   ep->rx_body ? " inside a body" : "");
			return false;
		}
		if (!body_len) {
			up->recv_frame(ep->dc.ctx, m + VB_HDR, head_len);
			return ep->dc.state == DC_EP_CONNECTED;
		}
		ep->rx_cnt = VB_MAX_BODY_IOV;
		ep->rx_cookie = up->recv_body(ep->dc.ctx, m + VB_HDR, head_len,
					      body_len, ep->rx_iov,
					      &ep->rx_cnt);
		if (ep->dc.state != DC_EP_CONNECTED)
			return false;
		if (!ep->rx_cookie || ep->rx_cnt < 0 ||
		    ep->rx_cnt > VB_MAX_BODY_IOV) {
			vb_ep_fail(ep, MRAIL_ERR_PROTO, true,
				   "the engine refused a body of %llu bytes",
				   (unsigned long long)body_len);
			return false;
		}
		ep->rx_body = true;
		ep->rx_i = 0;
		ep->rx_off = 0;
		ep->rx_left = body_len;
		here = len - VB_HDR - head_len;
		body_copy(ep, m + VB_HDR + head_len, here);
		break;
	case VB_MSG_CONT:
		here = len - VB_HDR;
		if (!ep->rx_body || here > ep->rx_left) {
			vb_ep_fail(ep, MRAIL_ERR_PROTO, true,
				   "body continuation of %llu bytes %s",
				   (unsigned long long)here,
				   ep->rx_body ? "beyond the body"
					       : "without a body");
			return false;
		}
		body_copy(ep, m + VB_HDR, here);
		break;
	default: /* CREDIT, RTU: the header said it all */
		return true;
	}
	if (ep->rx_left == 0) {
		ep->rx_body = false;
		up->recv_body_done(ep->dc.ctx, ep->rx_cookie);
	}
	return ep->dc.state == DC_EP_CONNECTED;
}

static void rma_finish(struct mrail_drv_ep *ep, struct vb_rma *op,
		       int status)
{
	struct vb_rma **pp = &ep->rma_head;

	while (*pp && *pp != op)
		pp = &(*pp)->next;
	if (*pp) {
		*pp = op->next;
		if (op == ep->rma_tail) {
			ep->rma_tail = NULL;
			for (struct vb_rma *o = ep->rma_head; o; o = o->next)
				ep->rma_tail = o;
		}
	}
	vb_drv(ep)->dc.base.up->rma_done(ep->dc.ctx, op->op_ctx, status);
	free(op);
}

void vb_rc_completion(struct mrail_drv_ep *ep, struct vb_wr *w,
		      const struct ibv_wc *wc)
{
	bool ok = wc->status == IBV_WC_SUCCESS;
	bool live = ep->dc.state == DC_EP_CONNECTED;

	if (w->kind == VB_WR_SEND)
		ep->sfree[ep->nsfree++] = w->idx;
	if (!live)
		return; /* failed or closed: the work was dealt with */
	if (!ok && wc->status == IBV_WC_WR_FLUSH_ERR && w->kind != VB_WR_RMA) {
		/* The QP broke: the completion naming why may come after
		 * the flushed ones (progress fails ep if none does). */
		ep->flushed = true;
		return;
	}
	if (!ok) {
		int st = status_err(wc->status);
		/* A failed get/put gets its rma_done from the failure of
		 * every pending operation, after ep_error. */
		vb_ep_fail(ep, st, true, "%s completion error: %s",
			   w->kind == VB_WR_RECV   ? "receive"
			   : w->kind == VB_WR_SEND ? "send"
						   : "RDMA",
			   ibv_wc_status_str(wc->status));
		return;
	}
	switch (w->kind) {
	case VB_WR_RECV:
		if (!on_message(ep, rbuf(ep, w->idx), wc->byte_len))
			return;
		if (vb_post_recv(ep, w->idx)) {
			vb_ep_fail(ep, MRAIL_ERR_IO, true,
				   "reposting a receive failed");
			return;
		}
		ep->to_return++;
		break;
	case VB_WR_SEND:
		if (w->frame) {
			w->frame->inflight--;
			complete_frames(ep);
		}
		break;
	case VB_WR_RMA:
		rma_finish(ep, (struct vb_rma *)w, 0);
		break;
	default:
		break;
	}
}

/* ---- failure and teardown ---------------------------------------------- */

static void bury_frame(struct mrail_drv_ep *ep, struct vb_frame *f)
{
	if (f->inflight > 0) {
		f->next = ep->dead_frames;
		ep->dead_frames = f;
	} else {
		free(f);
	}
}

static void bury_rma(struct mrail_drv_ep *ep, struct vb_rma *op)
{
	if (op->posted) {
		op->next = ep->dead_rma;
		ep->dead_rma = op;
	} else {
		free(op);
	}
}

void vb_ep_fail_pending(struct mrail_drv_ep *ep, int status)
{
	const struct mrail_drv_upcalls *up = vb_drv(ep)->dc.base.up;

	while (ep->fq_head && ep->dc.state != DC_EP_CLOSED) {
		struct vb_frame *f = ep->fq_head;
		ep->fq_head = f->next;
		if (!ep->fq_head)
			ep->fq_tail = NULL;
		if (ep->fq_post == f)
			ep->fq_post = f->next;
		ep->dc.backlog -= f->head_len + f->body_len;
		up->send_done(ep->dc.ctx, f->send_ctx, status);
		bury_frame(ep, f);
	}
	while (ep->rma_head && ep->dc.state != DC_EP_CLOSED) {
		struct vb_rma *op = ep->rma_head;
		ep->rma_head = op->next;
		if (!ep->rma_head)
			ep->rma_tail = NULL;
		up->rma_done(ep->dc.ctx, op->op_ctx, status);
		bury_rma(ep, op);
	}
}

void vb_ep_drop_pending(struct mrail_drv_ep *ep)
{
	while (ep->fq_head) {
		struct vb_frame *f = ep->fq_head;
		ep->fq_head = f->next;
		bury_frame(ep, f);
	}
	ep->fq_tail = ep->fq_post = NULL;
	ep->dc.backlog = 0;
	while (ep->rma_head) {
		struct vb_rma *op = ep->rma_head;
		ep->rma_head = op->next;
		bury_rma(ep, op);
	}
	ep->rma_tail = NULL;
}

void vb_ep_free_dead(struct mrail_drv_ep *ep)
{
	{
		while (ep->dead_frames) {
			struct vb_frame *f = ep->dead_frames;
			ep->dead_frames = f->next;
			free(f);
		}
		while (ep->dead_rma) {
			struct vb_rma *op = ep->dead_rma;
			ep->dead_rma = op->next;
			free(op);
		}
	}
}

/* ---- memory registration and get/put ----------------------------------- */

static int vb_mr_reg(struct mrail_drv *drv, void *addr, size_t len,
		     unsigned access, struct mrail_drv_mr **out)
{
	const unsigned known = MRAIL_DRV_ACCESS_LOCAL |
			       MRAIL_DRV_ACCESS_REMOTE_READ |
			       MRAIL_DRV_ACCESS_REMOTE_WRITE;
	struct mrail_drv_mr *mr;
	int ib = IBV_ACCESS_LOCAL_WRITE;

	if (!drv || !out || !addr || !len || !access || (access & ~known)) {
		mrail_error("verbs: mr_reg(%p, %zu bytes, access %#x): invalid",
			    addr, len, access);
		return MRAIL_ERR_INVALID;
	}
	if (access & MRAIL_DRV_ACCESS_REMOTE_READ)
		ib |= IBV_ACCESS_REMOTE_READ;
	if (access & MRAIL_DRV_ACCESS_REMOTE_WRITE)
		ib |= IBV_ACCESS_REMOTE_WRITE;
	mr = calloc(1, sizeof *mr);
	if (!mr)
		return MRAIL_ERR_NOMEM;
	mr->magic = VB_MR_MAGIC;
	mr->drv = drv;
	mr->addr = addr;
	mr->len = len;
	mr->access = access;
	/* One registration per device: rails of any HCA may use it. */
	for (int i = 0; i < drv->ndev; i++) {
		mr->m[i] = drv->api->reg_mr(drv->devs[i].pd, addr, len, ib);
		if (!mr->m[i]) {
			mrail_error("verbs: registering %zu bytes at %p on %s: "
				    "%s",
				    len, addr, drv->devs[i].name,
				    strerror(errno));
			while (i-- > 0)
				drv->api->dereg_mr(mr->m[i]);
			free(mr);
			return MRAIL_ERR_NOMEM;
		}
	}
	*out = mr;
	return 0;
}

static void vb_mr_dereg(struct mrail_drv_mr *mr)
{
	if (!mr || mr->magic != VB_MR_MAGIC) {
		mrail_error("verbs: mr_dereg of a handle that is not "
			    "registered");
		return;
	}
	for (int i = 0; i < mr->drv->ndev; i++)
		if (mr->m[i])
			mr->drv->api->dereg_mr(mr->m[i]);
	mr->magic = 0;
	free(mr);
}

/* Remote key, version 1: version, device count n, 2 zero bytes, address
 * (u64), length (u64), then n rkeys (u32), little-endian. */
static int vb_mr_pack(struct mrail_drv_mr *mr, void *rkey, size_t *rkey_len)
{
	uint8_t *k = rkey;
	size_t need;

	if (!mr || mr->magic != VB_MR_MAGIC || !rkey || !rkey_len)
		return MRAIL_ERR_INVALID;
	need = 20 + 4 * (size_t)mr->drv->ndev;
	if (*rkey_len < need) {
		*rkey_len = need;
		return MRAIL_ERR_INVALID;
	}
	memset(k, 0, need);
	k[0] = VB_RKEY_VERSION;
	k[1] = (uint8_t)mr->drv->ndev;
	vb_put64(k + 4, (uintptr_t)mr->addr);
	vb_put64(k + 12, mr->len);
	for (int i = 0; i < mr->drv->ndev; i++)
		vb_put32(k + 20 + 4 * i, mr->m[i]->rkey);
	*rkey_len = need;
	return 0;
}

static int post_op(struct mrail_drv_ep *ep, bool read, void *laddr,
		   size_t len, struct mrail_drv_mr *lmr, uint64_t raddr,
		   const void *rkey, size_t rkey_len, void *op_ctx)
{
	const uint8_t *k = rkey;
	uint64_t base, rlen;
	struct vb_rma *op;
	int dev;

	if (!ep || ep->dc.state == DC_EP_CLOSED || !laddr || !len ||
	    len > VB_MAX_RMA || !k || !lmr || lmr->magic != VB_MR_MAGIC)
		return MRAIL_ERR_INVALID;
	if (ep->dc.state == DC_EP_FAILED)
		return MRAIL_ERR_PEER;
	dev = ep->port->dev->index;
	if ((uintptr_t)laddr < (uintptr_t)lmr->addr || len > lmr->len ||
	    (uintptr_t)laddr - (uintptr_t)lmr->addr > lmr->len - len) {
		mrail_error("verbs: %s: local memory outside its registration",
			    read ? "get" : "put");
		return MRAIL_ERR_INVALID;
	}
	if (rkey_len < 20 || k[0] != VB_RKEY_VERSION ||
	    rkey_len != 20 + 4 * (size_t)k[1] || ep->rdev >= k[1]) {
		mrail_error("verbs: remote key of %zu bytes (version %u) does "
			    "not fit the peer's device %u",
			    rkey_len, rkey_len ? k[0] : 0, ep->rdev);
		return MRAIL_ERR_INVALID;
	}
	base = vb_get64(k + 4);
	rlen = vb_get64(k + 12);
	if (raddr < base || len > rlen || raddr - base > rlen - len) {
		mrail_error("verbs: %s of %zu bytes at %#llx outside the remote "
			    "registration",
			    read ? "get" : "put", len,
			    (unsigned long long)raddr);
		return MRAIL_ERR_INVALID;
	}
	op = calloc(1, sizeof *op);
	if (!op)
		return MRAIL_ERR_NOMEM;
	op->wr = (struct vb_wr){VB_WR_RMA, 0, ep, NULL, NULL};
	op->read = read;
	op->op_ctx = op_ctx;
	op->laddr = laddr;
	op->len = len;
	op->lkey = lmr->m[dev]->lkey;
	op->rkey = vb_get32(k + 20 + 4 * ep->rdev);
	op->raddr = raddr;
	if (ep->rma_tail)
		ep->rma_tail->next = op;
	else
		ep->rma_head = op;
	ep->rma_tail = op;
	vb_ep_push(ep);
	return 0;
}

static int vb_get(struct mrail_drv_ep *ep, void *laddr, size_t len,
		  struct mrail_drv_mr *lmr, uint64_t raddr, const void *rkey,
		  size_t rkey_len, void *op_ctx)
{
	return post_op(ep, true, laddr, len, lmr, raddr, rkey, rkey_len,
		       op_ctx);
}

static int vb_put(struct mrail_drv_ep *ep, const void *laddr, size_t len,
		  struct mrail_drv_mr *lmr, uint64_t raddr, const void *rkey,
		  size_t rkey_len, void *op_ctx)
{
	return post_op(ep, false, (void *)laddr, len, lmr, raddr, rkey,
		       rkey_len, op_ctx);
}

const struct mrail_drv_rma_ops vb_rma_ops = {
	.mr_reg = vb_mr_reg,
	.mr_dereg = vb_mr_dereg,
	.mr_pack = vb_mr_pack,
	.get = vb_get,
	.put = vb_put,
};
