/*
 * libfabric driver, one-sided operations: a registration covers every
 * rail (domain) that is up, so one engine registration serves any rail of
 * the instance; get/put are fi_read/fi_write on the connection's rail.
 * FI_MR_* modes: PROV_KEY (keys chosen by the provider, one per domain,
 * all packed in the remote key), VIRT_ADDR (else remote addresses are
 * offsets from the registration's base, packed too), ENDPOINT (bind and
 * enable each registration on the rail's endpoint), LOCAL (local memory of
 * an operation needs the registration's descriptor: always passed).
 */
#include "drivers/ofi/ofi_internal.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

static uint64_t fi_access(unsigned access)
{
	uint64_t a = 0;

	if (access & MRAIL_DRV_ACCESS_LOCAL)
		a |= FI_READ | FI_WRITE | FI_SEND | FI_RECV;
	if (access & MRAIL_DRV_ACCESS_REMOTE_READ)
		a |= FI_REMOTE_READ;
	if (access & MRAIL_DRV_ACCESS_REMOTE_WRITE)
		a |= FI_REMOTE_WRITE;
	return a;
}

static void mr_close_all(struct mrail_drv_mr *mr)
{
	for (int i = 0; i < OFI_MAX_RAILS; i++)
		if (mr->mr[i])
			fi_close(&mr->mr[i]->fid);
}

static int ofi_mr_reg(struct mrail_drv *drv, void *addr, size_t len,
		      unsigned access, struct mrail_drv_mr **out)
{
	const unsigned known = MRAIL_DRV_ACCESS_LOCAL |
			       MRAIL_DRV_ACCESS_REMOTE_READ |
			       MRAIL_DRV_ACCESS_REMOTE_WRITE;
	struct mrail_drv_mr *mr;
	uint64_t key;

	if (!drv || !out || !addr || !len || !access || (access & ~known)) {
		mrail_error("ofi: mr_reg(%p, %zu bytes, access %#x): invalid",
			    addr, len, access);
		return MRAIL_ERR_INVALID;
	}
	mr = calloc(1, sizeof *mr);
	if (!mr)
		return MRAIL_ERR_NOMEM;
	mr->drv = drv;
	mr->addr = addr;
	mr->len = len;
	/* Without FI_MR_PROV_KEY we choose: the same key on every rail. */
	key = drv->mr_next_key++;
	for (int i = 0; i < drv->nrails; i++) {
		struct ofi_rail *r = &drv->rails[i];
		int rc;
		if (!r->up || !r->rma)
			continue;
		rc = fi_mr_reg(r->domain, addr, len, fi_access(access), 0,
			       r->prov_key ? 0 : key, 0, &mr->mr[i], NULL);
		if (!rc && r->mr_endpoint) {
			rc = fi_mr_bind(mr->mr[i], &r->ep->fid, 0);
			if (!rc)
				rc = fi_mr_enable(mr->mr[i]);
		}
		if (rc) {
			mrail_error("ofi: %s: registering %zu bytes at %p: %s",
				    r->printable, len, addr, ofi_strerror(rc));
			mr_close_all(mr);
			free(mr);
			return rc == -FI_ENOMEM ? MRAIL_ERR_NOMEM : MRAIL_ERR_IO;
		}
	}
	*out = mr;
	return 0;
}

static void ofi_mr_dereg(struct mrail_drv_mr *mr)
{
	if (!mr)
		return;
	mr_close_all(mr);
	free(mr);
}

static int ofi_mr_pack(struct mrail_drv_mr *mr, void *rkey, size_t *rkey_len)
{
	struct mrail_drv *drv;
	uint8_t *p = rkey;
	uint64_t keys[OFI_MAX_RAILS] = {0};
	int n = 0;
	bool same = true;

	if (!mr || !rkey || !rkey_len)
		return MRAIL_ERR_INVALID;
	drv = mr->drv;
	for (int i = 0; i < drv->nrails; i++) {
		if (!mr->mr[i])
			continue;
		keys[i] = fi_mr_key(mr->mr[i]);
		if (keys[i] == FI_KEY_NOTAVAIL) {
			mrail_error("ofi: %s gives raw memory keys, which this "
				    "driver does not carry",
				    drv->rails[i].printable);
			return MRAIL_ERR_IO;
		}
		n = i + 1;
	}
	for (int i = 1; i < n; i++)
		if (mr->mr[i] && mr->mr[0] && keys[i] != keys[0])
			same = false;
	if (same && n > 1)
		n = 1;
	if (n > OFI_RKEY_MAX_KEYS || *rkey_len < OFI_RKEY_HDR + 8 * (size_t)n)
		return MRAIL_ERR_INVALID;
	memset(p, 0, OFI_RKEY_HDR);
	p[0] = OFI_RKEY_VERSION;
	p[1] = (uint8_t)n;
	ofi_put_le64(p + 8, (uint64_t)(uintptr_t)mr->addr);
	for (int i = 0; i < n; i++)
		ofi_put_le64(p + OFI_RKEY_HDR + 8 * i, keys[i]);
	*rkey_len = OFI_RKEY_HDR + 8 * (size_t)n;
	return 0;
}

/* ---- operations -------------------------------------------------------- */

static void rq_push(struct mrail_drv_ep *ep, struct ofi_rma_op *op)
{
	op->next = NULL;
	if (ep->rq_tail)
		ep->rq_tail->next = op;
	else
		ep->rq_head = op;
	ep->rq_tail = op;
}

static void inflight_unlink(struct mrail_drv_ep *ep, struct ofi_rma_op *op)
{
	struct ofi_rma_op **pp = &ep->rma_inflight;

	while (*pp && *pp != op)
		pp = &(*pp)->next;
	if (*pp)
		*pp = op->next;
	op->next = NULL;
}

/* 0 posted, -FI_EAGAIN later, other: failed. */
static int rma_post(struct mrail_drv_ep *ep, struct ofi_rma_op *op)
{
	struct ofi_rail *r = ep->rail;
	ssize_t rc;

	if (op->is_put) {
		/* Done means in the peer's memory: the engine tells the
		 * peer so right after (a FIN frame). */
		struct iovec iov = {op->laddr, op->len};
		struct fi_rma_iov riov = {op->raddr, op->len, op->key};
		struct fi_msg_rma msg = {.msg_iov = &iov,
					 .desc = &op->desc,
					 .iov_count = 1,
					 .addr = ep->peer,
					 .rma_iov = &riov,
					 .rma_iov_count = 1,
					 .context = &op->op.fctx};
		rc = fi_writemsg(r->ep, &msg,
				 FI_COMPLETION | FI_DELIVERY_COMPLETE);
	} else
		rc = fi_read(r->ep, op->laddr, op->len, op->desc, ep->peer,
			     op->raddr, op->key, &op->op.fctx);
	if (rc == 0) {
		op->posted = true;
		op->next = ep->rma_inflight;
		ep->rma_inflight = op;
	}
	return (int)rc;
}

void ofi_rma_flush(struct mrail_drv_ep *ep)
{
	while (ep->rq_head && ep->dc.state == DC_EP_CONNECTED &&
	       !ep->fail_pending) {
		struct ofi_rma_op *op = ep->rq_head;
		struct ofi_rma_op *next = op->next;
		int rc = rma_post(ep, op);
		if (rc == -FI_EAGAIN) {
			ofi_kick(ofi_drv(ep));
			return;
		}
		ep->rq_head = next;
		if (!next)
			ep->rq_tail = NULL;
		if (rc) {
			rq_push(ep, op); /* failed with the others */
			ofi_ep_fail(ep, MRAIL_ERR_PEER, "%s to %s failed: %s",
				    op->is_put ? "fi_write" : "fi_read",
				    ep->dc.remote_name, ofi_strerror(rc));
			return;
		}
	}
}

static int rma_start(struct mrail_drv_ep *ep, bool is_put, void *laddr,
		     size_t len, struct mrail_drv_mr *lmr, uint64_t raddr,
		     const void *rkey, size_t rkey_len, void *op_ctx)
{
	const uint8_t *k = rkey;
	struct ofi_rma_op *op;
	struct ofi_rail *r;
	uint64_t base, key;
	unsigned n;

	if (!ep || ep->dc.state == DC_EP_CLOSED || !lmr || !rkey || !len)
		return MRAIL_ERR_INVALID;
	if (ep->dc.state == DC_EP_FAILED || ep->fail_pending)
		return MRAIL_ERR_PEER;
	r = ep->rail;
	if (rkey_len < OFI_RKEY_HDR || k[0] != OFI_RKEY_VERSION || !k[1] ||
	    rkey_len != OFI_RKEY_HDR + 8u * k[1] || k[1] > OFI_RKEY_MAX_KEYS) {
		mrail_error("ofi: malformed remote key (%zu bytes, version %u)",
			    rkey_len, rkey_len ? k[0] : 0);
		return MRAIL_ERR_INVALID;
	}
	n = k[1];
	if (n > 1 && (ep->peer_rail < 0 || (unsigned)ep->peer_rail >= n)) {
		mrail_error("ofi: remote key for %u rails, none for the peer's "
			    "rail %d of %s",
			    n, ep->peer_rail, ep->dc.remote_name);
		return MRAIL_ERR_INVALID;
	}
	if (!lmr->mr[r->index] || (uintptr_t)laddr < (uintptr_t)lmr->addr ||
	    (uintptr_t)laddr + len > (uintptr_t)lmr->addr + lmr->len ||
	    len > OFI_MAX_RMA) {
		mrail_error("ofi: %s of %zu bytes at %p: outside its local "
			    "registration or rail %s not registered",
			    is_put ? "put" : "get", len, laddr, r->printable);
		return MRAIL_ERR_INVALID;
	}
	base = ofi_get_le64(k + 8);
	key = ofi_get_le64(k + OFI_RKEY_HDR + 8 * (n > 1 ? ep->peer_rail : 0));
	op = calloc(1, sizeof *op);
	if (!op)
		return MRAIL_ERR_NOMEM;
	op->op.kind = OFI_OP_RMA;
	op->op.ep = ep;
	op->op.rail = r;
	op->op.owner = op;
	op->is_put = is_put;
	op->op_ctx = op_ctx;
	op->laddr = laddr;
	op->len = len;
	op->desc = fi_mr_desc(lmr->mr[r->index]);
	op->raddr = r->virt_addr ? raddr : raddr - base;
	op->key = key;
	rq_push(ep, op);
	if (ep->rq_head == op)
		ofi_rma_flush(ep);
	return 0;
}

static int ofi_get(struct mrail_drv_ep *ep, void *laddr, size_t len,
		   struct mrail_drv_mr *lmr, uint64_t raddr, const void *rkey,
		   size_t rkey_len, void *op_ctx)
{
	return rma_start(ep, false, laddr, len, lmr, raddr, rkey, rkey_len,
			 op_ctx);
}

static int ofi_put(struct mrail_drv_ep *ep, const void *laddr, size_t len,
		   struct mrail_drv_mr *lmr, uint64_t raddr, const void *rkey,
		   size_t rkey_len, void *op_ctx)
{
	return rma_start(ep, true, (void *)laddr, len, lmr, raddr, rkey,
			 rkey_len, op_ctx);
}

void ofi_rma_complete(struct ofi_rma_op *op, int status)
{
	struct mrail_drv_ep *ep = op->op.ep;
	int st = 0;

	inflight_unlink(ep, op);
	if (status) {
		mrail_warn("ofi: %s of %zu bytes with %s failed: %s",
			   op->is_put ? "put" : "get", op->len, ep->dc.remote_name,
			   ofi_strerror(status));
		st = MRAIL_ERR_IO;
	}
	if (ep->dc.state == DC_EP_FAILED)
		st = ep->fail_status;
	void *ctx = op->op_ctx;
	free(op);
	if (ep->dc.state != DC_EP_CLOSED)
		ofi_drv(ep)->dc.base.up->rma_done(ep->dc.ctx, ctx, st);
}

void ofi_rma_fail(struct mrail_drv_ep *ep, int status)
{
	while (ep->rq_head && ep->dc.state != DC_EP_CLOSED) {
		struct ofi_rma_op *op = ep->rq_head;
		void *ctx = op->op_ctx;
		ep->rq_head = op->next;
		if (!ep->rq_head)
			ep->rq_tail = NULL;
		free(op);
		ofi_drv(ep)->dc.base.up->rma_done(ep->dc.ctx, ctx, status);
	}
}

void ofi_rma_drop(struct mrail_drv_ep *ep)
{
	while (ep->rq_head) {
		struct ofi_rma_op *op = ep->rq_head;
		ep->rq_head = op->next;
		free(op);
	}
	ep->rq_tail = NULL;
	while (ep->rma_inflight) {
		struct ofi_rma_op *op = ep->rma_inflight;
		ep->rma_inflight = op->next;
		ofi_orphan(ofi_drv(ep), &op->op);
	}
}

const struct mrail_drv_rma_ops ofi_rma_ops = {
	.mr_reg = ofi_mr_reg,
	.mr_dereg = ofi_mr_dereg,
	.mr_pack = ofi_mr_pack,
	.get = ofi_get,
	.put = ofi_put,
};
