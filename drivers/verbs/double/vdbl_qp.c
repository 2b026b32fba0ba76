/*
 * The verbs test double: queue pairs. The state machine checks the
 * attribute masks an HCA requires for each transition; work requests run
 * at post time in the posting process (vdbl_internal.h), with the checks
 * an HCA makes: QP states, lkeys and rkeys with their access rights,
 * receive buffer sizes, a posted receive for every SEND (else RNR retry
 * exceeded, since the driver asks for no RNR retries), a live peer QP
 * connected to us (else transport retry exceeded).
 */
#include "drivers/verbs/double/vdbl_internal.h"
#include "util/log.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

static struct vdbl_sqp *own(struct ibv_qp *qp)
{
	return &vdbl_g.shm->qp[((struct vdbl_qp *)qp)->slot];
}

struct ibv_qp *vdbl_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	struct vdbl_shm *s = vdbl_g.shm;
	struct vdbl_qp *q;
	int slot = -1;

	if ((a->qp_type != IBV_QPT_RC && a->qp_type != IBV_QPT_UD) ||
	    !a->send_cq || !a->recv_cq || a->srq ||
	    a->cap.max_recv_wr > VDBL_RQ_MAX ||
	    a->cap.max_send_sge > VDBL_MAX_SGE ||
	    a->cap.max_recv_sge > VDBL_MAX_SGE ||
	    a->cap.max_inline_data > VDBL_MAX_INLINE) {
		errno = EINVAL;
		return NULL;
	}
	q = calloc(1, sizeof *q);
	if (!q)
		return NULL;
	vdbl_lock(s);
	for (int i = 0; i < VDBL_MAX_QP; i++) {
		int k = (int)((s->qp_gen + (uint32_t)i) % VDBL_MAX_QP);
		if (!s->qp[k].used) {
			slot = k;
			break;
		}
	}
	if (slot >= 0) {
		struct vdbl_sqp *p = &s->qp[slot];
		s->qp_gen++;
		memset(p, 0, offsetof(struct vdbl_sqp, rq));
		p->used = 1;
		p->qpn = ((s->qp_gen & 0x7fffu) << VDBL_QP_SLOT_BITS) |
			 (uint32_t)slot;
		p->type = a->qp_type;
		p->state = IBV_QPS_RESET;
		p->send_cq = ((struct vdbl_cq *)a->send_cq)->slot;
		p->recv_cq = ((struct vdbl_cq *)a->recv_cq)->slot;
		p->max_recv_wr = a->cap.max_recv_wr;
		p->max_inline = a->cap.max_inline_data;
		p->dev = (uint32_t)((struct vdbl_ctx *)pd->context)->d->index;
		q->qp.qp_num = p->qpn;
	}
	vdbl_unlock(s);
	if (slot < 0) {
		free(q);
		errno = ENOMEM;
		return NULL;
	}
	q->slot = slot;
	q->qp.context = pd->context;
	q->qp.qp_context = a->qp_context;
	q->qp.pd = pd;
	q->qp.send_cq = a->send_cq;
	q->qp.recv_cq = a->recv_cq;
	q->qp.qp_type = a->qp_type;
	q->qp.state = IBV_QPS_RESET;
	return &q->qp;
}

int vdbl_qp_to_err(struct vdbl_shm *s, struct vdbl_sqp *q)
{
	int ch = -1;

	q->state = IBV_QPS_ERR;
	while (q->rq_count) {
		struct vdbl_swc wc = {.wr_id = q->rq[q->rq_head].wr_id,
				      .status = IBV_WC_WR_FLUSH_ERR,
				      .opcode = IBV_WC_RECV,
				      .qp_num = q->qpn};
		int c = vdbl_push_wc(s, q->recv_cq, &wc);
		if (c >= 0)
			ch = c;
		q->rq_head = (q->rq_head + 1) % VDBL_RQ_MAX;
		q->rq_count--;
	}
	return ch;
}

static bool has(int mask, int need)
{
	return (mask & need) == need;
}

int vdbl_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	struct vdbl_shm *s = vdbl_g.shm;
	struct vdbl_sqp *q = own(qp);
	bool rc = q->type == IBV_QPT_RC;
	int cur, ch = -1, err = 0;

	if (!(mask & IBV_QP_STATE))
		return EINVAL;
	vdbl_lock(s);
	cur = (int)q->state;
	switch (a->qp_state) {
	case IBV_QPS_INIT:
		if (cur != IBV_QPS_RESET ||
		    !has(mask, IBV_QP_PKEY_INDEX | IBV_QP_PORT) ||
		    !(mask & (rc ? IBV_QP_ACCESS_FLAGS : IBV_QP_QKEY)) ||
		    a->port_num < 1 || a->port_num > vdbl_g.conf.ports) {
			err = EINVAL;
			break;
		}
		q->port = a->port_num;
		if (rc)
			q->access = (uint32_t)a->qp_access_flags;
		else
			q->qkey = a->qkey;
		break;
	case IBV_QPS_RTR:
		if (cur != IBV_QPS_INIT ||
		    (rc && !has(mask, IBV_QP_AV | IBV_QP_PATH_MTU |
					      IBV_QP_DEST_QPN |
					      IBV_QP_RQ_PSN |
					      IBV_QP_MAX_DEST_RD_ATOMIC |
					      IBV_QP_MIN_RNR_TIMER)) ||
		    (rc && !a->ah_attr.is_global)) {
			err = EINVAL;
			break;
		}
		if (rc) {
			memcpy(q->rgid, a->ah_attr.grh.dgid.raw, 16);
			q->rqpn = a->dest_qp_num;
		}
		break;
	case IBV_QPS_RTS:
		if (cur != IBV_QPS_RTR || !(mask & IBV_QP_SQ_PSN) ||
		    (rc && !has(mask, IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					      IBV_QP_RNR_RETRY |
					      IBV_QP_MAX_QP_RD_ATOMIC))) {
			err = EINVAL;
			break;
		}
		break;
	case IBV_QPS_ERR:
		ch = vdbl_qp_to_err(s, q);
		break;
	case IBV_QPS_RESET:
		q->rq_count = 0;
		break;
	default:
		err = EINVAL;
	}
	if (!err && a->qp_state != IBV_QPS_ERR)
		q->state = a->qp_state;
	if (!err)
		qp->state = a->qp_state;
	vdbl_unlock(s);
	vdbl_notify(s, ch);
	return err;
}

int vdbl_destroy_qp(struct ibv_qp *qp)
{
	struct vdbl_shm *s = vdbl_g.shm;

	vdbl_lock(s);
	/* No completions for a destroyed QP, as on an HCA. */
	own(qp)->used = 0;
	own(qp)->state = IBV_QPS_RESET;
	vdbl_unlock(s);
	free(qp);
	return 0;
}

int vdbl_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad)
{
	struct vdbl_shm *s = vdbl_g.shm;
	struct vdbl_sqp *q = own(qp);
	int err = 0, ch = -1;

	vdbl_lock(s);
	for (; wr; wr = wr->next) {
		struct vdbl_rwr *r;
		if (q->state == IBV_QPS_RESET || wr->num_sge < 0 ||
		    wr->num_sge > VDBL_MAX_SGE) {
			err = EINVAL;
			break;
		}
		if (q->rq_count >= q->max_recv_wr) {
			err = ENOMEM;
			break;
		}
		r = &q->rq[(q->rq_head + q->rq_count) % VDBL_RQ_MAX];
		r->wr_id = wr->wr_id;
		r->num_sge = (uint32_t)wr->num_sge;
		for (int i = 0; i < wr->num_sge; i++)
			r->sge[i] = (struct vdbl_sge){wr->sg_list[i].addr,
						      wr->sg_list[i].length,
						      wr->sg_list[i].lkey};
		q->rq_count++;
		if (q->state == IBV_QPS_ERR)
			ch = vdbl_qp_to_err(s, q);
	}
	vdbl_unlock(s);
	vdbl_notify(s, ch);
	if (err && bad)
		*bad = wr;
	return err;
}

/* ---- executing one send work request ----------------------------------- */

struct exec {
	struct vdbl_sqp me; /* snapshot of the posting QP */
	struct ibv_send_wr *wr;
	struct iovec liov[VDBL_MAX_SGE + 1];
	int nliov;
	uint64_t len;
	uint8_t inl[VDBL_GRH + VDBL_MAX_INLINE];
	uint8_t grh[VDBL_GRH];
	uint8_t rgid[16];
	uint32_t rqpn;
	enum ibv_wc_status remote_status; /* for a receive that failed */
};

static enum ibv_wc_status errno_status(int err)
{
	return err == ESRCH ? IBV_WC_RETRY_EXC_ERR : IBV_WC_REM_ACCESS_ERR;
}

/* Gather the local side (inline data is copied now, as at post time). */
static enum ibv_wc_status gather(struct exec *x)
{
	struct ibv_send_wr *wr = x->wr;
	struct vdbl_shm *s = vdbl_g.shm;
	bool inl = wr->send_flags & IBV_SEND_INLINE;
	bool writes_local = wr->opcode == IBV_WR_RDMA_READ;
	uint64_t off = 0;

	x->len = 0;
	x->nliov = 0;
	if (wr->num_sge < 0 || wr->num_sge > VDBL_MAX_SGE)
		return IBV_WC_LOC_LEN_ERR;
	for (int i = 0; i < wr->num_sge; i++)
		x->len += wr->sg_list[i].length;
	if (inl) {
		if (x->len > x->me.max_inline || writes_local)
			return IBV_WC_LOC_LEN_ERR;
		for (int i = 0; i < wr->num_sge; i++) {
			memcpy(x->inl + off,
			       (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			off += wr->sg_list[i].length;
		}
		x->liov[x->nliov++] = (struct iovec){x->inl, x->len};
		return IBV_WC_SUCCESS;
	}
	vdbl_lock(s);
	for (int i = 0; i < wr->num_sge; i++) {
		const struct ibv_sge *g = &wr->sg_list[i];
		if (!g->length)
			continue;
		if (!vdbl_mr_ok(s, g->lkey, g->addr, g->length,
				writes_local ? IBV_ACCESS_LOCAL_WRITE : 0)) {
			vdbl_unlock(s);
			return IBV_WC_LOC_PROT_ERR;
		}
		x->liov[x->nliov++] =
			(struct iovec){(void *)(uintptr_t)g->addr, g->length};
	}
	vdbl_unlock(s);
	return IBV_WC_SUCCESS;
}

/* The target QP, checked (segment r locked). */
static struct vdbl_sqp *target(struct vdbl_shm *r, const struct exec *x)
{
	struct vdbl_sqp *t = &r->qp[x->rqpn % VDBL_MAX_QP];
	uint8_t mygid[16];

	if (!t->used || t->qpn != x->rqpn || t->type != x->me.type ||
	    (t->state != IBV_QPS_RTR && t->state != IBV_QPS_RTS))
		return NULL;
	if (x->me.type == IBV_QPT_RC) {
		vdbl_gid((int)x->me.dev, (int)x->me.port, mygid);
		if (t->rqpn != x->me.qpn || memcmp(t->rgid, mygid, 16))
			return NULL;
	}
	return t;
}

/* SEND: into the target's next posted receive. */
static enum ibv_wc_status do_send(struct vdbl_shm *r, struct exec *x, int *ch)
{
	bool ud = x->me.type == IBV_QPT_UD;
	struct vdbl_sqp *t = target(r, x);
	struct iovec riov[VDBL_MAX_SGE];
	struct iovec liov[VDBL_MAX_SGE + 2];
	struct vdbl_rwr *rw;
	uint64_t room = 0, need = x->len + (ud ? VDBL_GRH : 0);
	int nl = 0;
	struct vdbl_swc wc = {0};

	if (!t)
		return ud ? IBV_WC_SUCCESS : IBV_WC_RETRY_EXC_ERR;
	if (ud && (t->qkey != (uint32_t)x->wr->wr.ud.remote_qkey ||
		   x->len > 4096))
		return IBV_WC_SUCCESS; /* dropped on the wire */
	if (!t->rq_count)
		/* UD: dropped; RC: no RNR retries configured. */
		return ud ? IBV_WC_SUCCESS : IBV_WC_RNR_RETRY_EXC_ERR;
	rw = &t->rq[t->rq_head];
	t->rq_head = (t->rq_head + 1) % VDBL_RQ_MAX;
	t->rq_count--;
	wc.wr_id = rw->wr_id;
	wc.opcode = IBV_WC_RECV;
	wc.qp_num = t->qpn;
	wc.src_qp = x->me.qpn;
	wc.byte_len = (uint32_t)need;
	for (uint32_t i = 0; i < rw->num_sge; i++) {
		if (rw->sge[i].len &&
		    !vdbl_mr_ok(r, rw->sge[i].lkey, rw->sge[i].addr,
				rw->sge[i].len, IBV_ACCESS_LOCAL_WRITE)) {
			wc.status = IBV_WC_LOC_PROT_ERR;
			break;
		}
		riov[i] = (struct iovec){(void *)(uintptr_t)rw->sge[i].addr,
					 rw->sge[i].len};
		room += rw->sge[i].len;
	}
	if (!wc.status && room < need)
		wc.status = IBV_WC_LOC_LEN_ERR;
	if (!wc.status && need) {
		ssize_t n;
		if (ud) {
			memset(x->grh, 0, sizeof x->grh);
			vdbl_gid((int)x->me.dev, (int)x->me.port, x->grh + 8);
			liov[nl++] = (struct iovec){x->grh, VDBL_GRH};
			wc.wc_flags = IBV_WC_GRH;
		}
		for (int i = 0; i < x->nliov; i++)
			liov[nl++] = x->liov[i];
		n = process_vm_writev((pid_t)r->pid, liov, (unsigned long)nl,
				      riov, rw->num_sge, 0);
		if (n != (ssize_t)need) {
			int e = n < 0 ? errno : EFAULT;
			if (e == ESRCH)
				return IBV_WC_RETRY_EXC_ERR;
			wc.status = IBV_WC_LOC_PROT_ERR;
		}
	}
	if (wc.status) {
		/* The receiver's error, and its QP breaks (RC). */
		int c = vdbl_push_wc(r, t->recv_cq, &wc);
		if (c >= 0)
			*ch = c;
		if (!ud) {
			c = vdbl_qp_to_err(r, t);
			if (c >= 0)
				*ch = c;
		}
		return ud ? IBV_WC_SUCCESS : IBV_WC_REM_OP_ERR;
	}
	*ch = vdbl_push_wc(r, t->recv_cq, &wc);
	return IBV_WC_SUCCESS;
}

static enum ibv_wc_status do_rdma(struct vdbl_shm *r, struct exec *x)
{
	struct ibv_send_wr *wr = x->wr;
	bool rd = wr->opcode == IBV_WR_RDMA_READ;
	uint32_t need = rd ? IBV_ACCESS_REMOTE_READ : IBV_ACCESS_REMOTE_WRITE;
	struct vdbl_sqp *t = target(r, x);
	struct iovec riov;
	ssize_t n;

	if (!t)
		return IBV_WC_RETRY_EXC_ERR;
	if (!(t->access & need) ||
	    (x->len && !vdbl_mr_ok(r, wr->wr.rdma.rkey,
				   wr->wr.rdma.remote_addr, x->len, need)))
		return IBV_WC_REM_ACCESS_ERR;
	if (!x->len)
		return IBV_WC_SUCCESS;
	riov = (struct iovec){(void *)(uintptr_t)wr->wr.rdma.remote_addr,
			      x->len};
	n = rd ? process_vm_readv((pid_t)r->pid, x->liov,
				  (unsigned long)x->nliov, &riov, 1, 0)
	       : process_vm_writev((pid_t)r->pid, x->liov,
				   (unsigned long)x->nliov, &riov, 1, 0);
	if (n != (ssize_t)x->len)
		return errno_status(n < 0 ? errno : EFAULT);
	return IBV_WC_SUCCESS;
}

static enum ibv_wc_opcode wc_opcode(enum ibv_wr_opcode op)
{
	return op == IBV_WR_RDMA_READ	 ? IBV_WC_RDMA_READ
	       : op == IBV_WR_RDMA_WRITE ? IBV_WC_RDMA_WRITE
					 : IBV_WC_SEND;
}

/* Runs one work request; returns its completion status. */
static enum ibv_wc_status execute(struct exec *x)
{
	struct vdbl_global *g = &vdbl_g;
	struct ibv_send_wr *wr = x->wr;
	struct vdbl_shm *r;
	enum ibv_wc_status st;
	int ch = -1;
	bool fault = false;

	if (x->me.type == IBV_QPT_RC) {
		uint64_t len = 0;
		for (int i = 0; i < wr->num_sge && i < VDBL_MAX_SGE; i++)
			len += wr->sg_list[i].length;
		pthread_mutex_lock(&g->mu);
		if (g->fail_here &&
		    (!g->conf.fail_min || (wr->opcode != IBV_WR_SEND &&
					   len >= (uint64_t)g->conf.fail_min)))
			fault = g->rc_posted++ == g->conf.fail_after;
		pthread_mutex_unlock(&g->mu);
		if (fault) {
			mrail_info("verbs double: fault injected: work request "
				   "%lld on QP %#x fails with %s (fail_after)",
				   (long long)g->conf.fail_after, x->me.qpn,
				   ibv_wc_status_str(g->conf.fail_status));
			return (enum ibv_wc_status)g->conf.fail_status;
		}
		memcpy(x->rgid, x->me.rgid, 16);
		x->rqpn = x->me.rqpn;
	} else {
		struct vdbl_ah *ah = (struct vdbl_ah *)wr->wr.ud.ah;
		if (!ah)
			return IBV_WC_LOC_QP_OP_ERR;
		memcpy(x->rgid, ah->dgid.raw, 16);
		x->rqpn = wr->wr.ud.remote_qpn;
	}
	st = gather(x);
	if (st)
		return st;
	r = vdbl_peer(x->rgid);
	if (!r)
		return x->me.type == IBV_QPT_UD ? IBV_WC_SUCCESS
						: IBV_WC_RETRY_EXC_ERR;
	vdbl_lock(r);
	st = wr->opcode == IBV_WR_SEND ? do_send(r, x, &ch) : do_rdma(r, x);
	vdbl_unlock(r);
	vdbl_notify(r, ch);
	return st;
}

int vdbl_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad)
{
	struct vdbl_shm *s = vdbl_g.shm;
	struct vdbl_sqp *q = own(qp);
	struct exec *x = malloc(sizeof *x);
	int err = 0;

	if (!x) {
		*bad = wr;
		return ENOMEM;
	}
	for (; wr; wr = wr->next) {
		enum ibv_wc_status st;
		struct vdbl_swc wc = {0};
		int ch = -1;

		vdbl_lock(s);
		/* The receive queue is not needed. */
		memcpy(&x->me, q, offsetof(struct vdbl_sqp, rq));
		vdbl_unlock(s);
		x->wr = wr;
		if (x->me.state != IBV_QPS_RTS && x->me.state != IBV_QPS_ERR) {
			err = EINVAL;
			break;
		}
		if (wr->opcode != IBV_WR_SEND &&
		    (x->me.type != IBV_QPT_RC ||
		     (wr->opcode != IBV_WR_RDMA_READ &&
		      wr->opcode != IBV_WR_RDMA_WRITE))) {
			err = EINVAL;
			break;
		}
		st = x->me.state == IBV_QPS_ERR ? IBV_WC_WR_FLUSH_ERR
						: execute(x);
		vdbl_lock(s);
		/* The error completion first, then the flushed receives. */
		if (st || (wr->send_flags & IBV_SEND_SIGNALED)) {
			wc.wr_id = wr->wr_id;
			wc.status = st;
			wc.opcode = wc_opcode(wr->opcode);
			wc.byte_len = st ? 0 : (uint32_t)x->len;
			wc.qp_num = q->qpn;
			ch = vdbl_push_wc(s, q->send_cq, &wc);
		}
		if (st && q->state != IBV_QPS_ERR) {
			int c = vdbl_qp_to_err(s, q);
			if (c >= 0)
				ch = c;
		}
		vdbl_unlock(s);
		vdbl_notify(s, ch);
	}
	free(x);
	if (err && bad)
		*bad = wr;
	return err;
}
