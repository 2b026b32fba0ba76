/*
 * Data transfer: the fi_tsend and fi_trecv families and their untagged
 * fi_send/fi_recv twins onto mrail_isend_x / mrail_irecv_x /
 * mrail_improbe / mrail_imrecv_x. Every operation is one allocation of
 * ours (plus the engine's request) and completes through an engine callback that writes the CQ
 * entry. Tag mapping, probe/claim and cancel: docs/provider.md.
 */
#include "mrfi.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN_UP(x, a) (((x) + (a) - 1) & ~((size_t)(a) - 1))

static size_t op_hdr(void)
{
	return ALIGN_UP(sizeof(struct mrfi_op), _Alignof(max_align_t));
}

/* The engine allocates the request itself: the op is freed inside its
 * completion callback, and the engine still touches caller storage
 * after the callback returns. */
struct mrfi_op *mrfi_op_new(struct mrfi_ep *ep, size_t extra)
{
	struct mrfi_op *o = malloc(op_hdr() + extra);
	if (!o)
		return NULL;
	memset(o, 0, sizeof *o);
	o->ep = ep;
	return o;
}

static void *op_extra(struct mrfi_op *o)
{
	return (char *)o + op_hdr();
}

void mrfi_op_link(struct mrfi_ep *ep, struct mrfi_op *o)
{
	pthread_mutex_lock(&ep->lock);
	o->prev = NULL;
	o->next = ep->pending;
	if (ep->pending)
		ep->pending->prev = o;
	ep->pending = o;
	o->pending = 1;
	pthread_mutex_unlock(&ep->lock);
}

static void op_unlink_locked(struct mrfi_ep *ep, struct mrfi_op *o)
{
	if (!o->pending)
		return;
	if (o->prev)
		o->prev->next = o->next;
	else
		ep->pending = o->next;
	if (o->next)
		o->next->prev = o->prev;
	o->pending = 0;
}


/* The engine finished an operation: report it on the right CQ. Errors are
 * always reported, successes unless selective completion left them out. */
void mrfi_op_done(mrail_request_t *req, const mrail_status_t *st, void *ctx)
{
	struct mrfi_op *o = ctx;
	struct mrfi_ep *ep = o->ep;
	pthread_mutex_lock(&ep->lock);
	op_unlink_locked(ep, o);
	pthread_mutex_unlock(&ep->lock);

	int err = st->error;
	if (err == MRAIL_ERR_TRUNCATE && o->discard)
		err = MRAIL_OK;
	struct mrfi_cq *cq = (o->flags & FI_RECV) ? ep->rx_cq : ep->tx_cq;
	struct mrfi_mrecv *multi = o->multi;
	/* Counters see every completion, reported to the CQ or not. */
	mrfi_cntr_inc(ep->cntr[(o->flags & FI_RECV) ? MRFI_CNTR_RECV
						    : MRFI_CNTR_SEND],
		      err != MRAIL_OK);
	if (err == MRAIL_OK && !o->report) {
		free(o);
		if (multi)
			mrfi_multi_piece_done(multi);
		return;
	}
	struct mrfi_cqe e = { 0 };
	e.e.op_context = o->context;
	e.e.flags = o->flags;
	e.src = FI_ADDR_NOTAVAIL;
	if (o->flags & FI_RECV) {
		e.e.len = o->discard ? 0 : st->length;
		e.e.buf = o->discard ? NULL : o->buf;
		e.e.tag = (o->flags & FI_TAGGED) ? st->tag : 0;
		e.src = mrfi_ep_addr_of(ep, st->source);
		if (mrail_request_data(req, &e.e.data))
			e.e.flags |= FI_REMOTE_CQ_DATA;
	}
	if (err != MRAIL_OK) {
		e.err = -mrfi_err(err);
		e.prov_errno = err;
		/* fi_cq(3): olen is what did not fit; len stays the
		 * bytes placed. */
		if (err == MRAIL_ERR_TRUNCATE && st->msg_length > st->length)
			e.olen = st->msg_length - st->length;
	}
	mrfi_cq_push(cq, &e);
	free(o);
	/* After the message's entry: the buffer's release comes last. */
	if (multi)
		mrfi_multi_piece_done(multi);
}

static int peer_for(struct mrfi_ep *ep, fi_addr_t a, mrail_peer_t *p)
{
	if (mrfi_ep_peer_of(ep, a, p)) {
		FI_WARN(&mrfi_prov, FI_LOG_EP_DATA, "fi_addr %llu is not in "
			"the endpoint's address vector\n",
			(unsigned long long)a);
		return -FI_EINVAL;
	}
	return 0;
}

static ssize_t post_send(struct mrfi_ep *ep, const struct iovec *iov,
			 size_t count, fi_addr_t dest, uint64_t tag,
			 uint64_t data, void *context, uint64_t flags,
			 int tagged, int silent)
{
	/* silent: fi_inject and fi_tinject, which generate no completion
	 * (FI_INJECT on fi_sendmsg still does). */
	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (count > 1024)
		return -FI_EINVAL;
	mrail_peer_t peer;
	int rc = peer_for(ep, dest, &peer);
	if (rc)
		return rc;
	uint64_t etag;
	if (tagged) {
		etag = tag;
	} else {
		etag = MRFI_MSG_TAG;
	}
	size_t total = 0;
	for (size_t i = 0; i < count; i++)
		total += iov[i].iov_len;
	int inject = !!(flags & FI_INJECT);
	if (inject && total > ep->info->tx_attr->inject_size)
		return -FI_EINVAL;
	struct mrfi_op *o = mrfi_op_new(ep, inject ? total : 0);
	if (!o)
		return -FI_ENOMEM;
	o->context = context;
	o->flags = FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
	o->report = !silent && (!(ep->tx_flags & FI_SELECTIVE_COMPLETION) ||
				(flags & FI_COMPLETION));
	struct mrail_req_args a = MRAIL_REQ_ARGS_INIT;
	a.cb = mrfi_op_done;
	a.cb_ctx = o;
	/* Done inside the post (eager data already in a packet): completed
	 * below, without waiting for the next progress call. */
	a.flags = MRAIL_REQ_IMMEDIATE;
	if (flags & FI_REMOTE_CQ_DATA) { /* rides beside the payload */
		a.flags |= MRAIL_REQ_DATA;
		a.data = data;
	}
	const void *buf = NULL;
	size_t len = 0;
	if (inject) {
		/* The application may reuse its buffer on return. */
		char *p = op_extra(o);
		for (size_t i = 0; i < count; i++) {
			memcpy(p, iov[i].iov_base, iov[i].iov_len);
			p += iov[i].iov_len;
		}
		buf = op_extra(o);
		len = total;
	} else if (count == 1) {
		buf = iov[0].iov_base;
		len = iov[0].iov_len;
	} else if (count > 1) {
		a.iov = iov;
		a.iovcnt = (int)count;
	}
	o->buf = (void *)buf;
	o->len = len;
	mrfi_op_link(ep, o);
	/* Not o->req: once the post returns, another thread's progress may
	 * have run the callback, which frees o. */
	mrail_request_t *req;
	rc = mrail_isend_x(ep->engine, peer, buf, len, etag, &a, &req);
	if (rc != MRAIL_OK) {
		pthread_mutex_lock(&ep->lock);
		op_unlink_locked(ep, o);
		pthread_mutex_unlock(&ep->lock);
		free(o);
		return mrfi_err(rc);
	}
	if (!req) {
		mrail_status_t st = {0};
		st.length = total;
		mrfi_op_done(NULL, &st, o);
	}
	return 0;
}

/* A probe's answer goes straight to the receive CQ: the message found
 * (FI_PEEK) or FI_ENOMSG. */
static int peek_result(struct mrfi_ep *ep, void *context, uint64_t flags,
		       int found, const mrail_status_t *st, int has_data,
		       uint64_t data)
{
	struct mrfi_cqe e = { 0 };
	e.e.op_context = context;
	e.e.flags = flags;
	e.src = FI_ADDR_NOTAVAIL;
	if (found) {
		e.e.len = st->length;
		e.e.tag = (flags & FI_TAGGED) ? st->tag : 0;
		e.src = mrfi_ep_addr_of(ep, st->source);
		if (has_data) {
			e.e.flags |= FI_REMOTE_CQ_DATA;
			e.e.data = data;
		}
	} else {
		e.err = FI_ENOMSG;
		e.prov_errno = MRAIL_ERR_NOT_FOUND;
	}
	return mrfi_cq_push(ep->rx_cq, &e);
}

static ssize_t post_recv(struct mrfi_ep *ep, const struct iovec *iov,
			 size_t count, fi_addr_t src, uint64_t tag,
			 uint64_t ignore, void *context, uint64_t flags,
			 int tagged)
{
	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (count > 1024)
		return -FI_EINVAL;
	if (flags & FI_MULTI_RECV) /* untagged only, any source */
		return tagged || !(ep->caps & FI_MULTI_RECV)
			       ? -FI_EINVAL
			       : mrfi_multi_post(ep, iov, count, context,
						 !(ep->rx_flags &
						   FI_SELECTIVE_COMPLETION) ||
							 (flags & FI_COMPLETION));
	mrail_peer_t peer = MRAIL_ANY_PEER;
	if (src != FI_ADDR_UNSPEC && (ep->caps & FI_DIRECTED_RECV)) {
		int rc = peer_for(ep, src, &peer);
		if (rc)
			return rc;
	}
	uint64_t etag, mask;
	if (tagged) {
		etag = tag;
		mask = ~ignore;
	} else {
		etag = MRFI_MSG_TAG;
		mask = MRAIL_TAG_MASK_ALL;
	}
	uint64_t cflags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG);
	struct fi_context *fctx = context;
	mrail_message_t *msg = NULL;
	int rc;

	if (flags & FI_PEEK) {
		int found = 0, has_data = 0;
		uint64_t data = 0;
		mrail_status_t st;
		if (flags & (FI_CLAIM | FI_DISCARD)) {
			rc = mrail_improbe(ep->engine, peer, etag, mask, &found,
					   &msg, &st);
			if (rc == MRAIL_OK && found)
				has_data = mrail_message_data(msg, &data);
		} else {
			rc = mrail_iprobe_data(ep->engine, peer, etag, mask,
					       &found, &st, &has_data, &data);
		}
		if (rc != MRAIL_OK)
			return mrfi_err(rc);
		if (!found || !(flags & FI_DISCARD)) {
			/* FI_CLAIM: the message waits in the context for
			 * the fi_trecvmsg(FI_CLAIM) that takes it. */
			if (found && (flags & FI_CLAIM))
				fctx->internal[0] = msg;
			return peek_result(ep, context, cflags, found, &st,
					   has_data, data);
		}
		/* FI_PEEK | FI_DISCARD: found, now dropped below. */
	} else if (flags & FI_CLAIM) {
		msg = fctx ? fctx->internal[0] : NULL;
		if (!msg)
			return -FI_EINVAL; /* no FI_PEEK|FI_CLAIM before */
	}

	int discard = !!(flags & FI_DISCARD);
	if (discard && !msg)
		return -FI_EINVAL; /* FI_DISCARD needs FI_PEEK or FI_CLAIM */
	struct mrfi_op *o = mrfi_op_new(ep, 0);
	if (!o)
		return -FI_ENOMEM;
	o->context = context;
	o->flags = cflags;
	o->discard = discard;
	o->report = !(ep->rx_flags & FI_SELECTIVE_COMPLETION) ||
		    (flags & FI_COMPLETION);
	struct mrail_req_args a = MRAIL_REQ_ARGS_INIT;
	a.cb = mrfi_op_done;
	a.cb_ctx = o;
	void *buf = NULL;
	size_t len = 0;
	if (!discard) {
		if (count == 1) {
			buf = iov[0].iov_base;
			len = iov[0].iov_len;
		} else if (count > 1) {
			a.iov = iov;
			a.iovcnt = (int)count;
		}
	}
	o->buf = count ? iov[0].iov_base : NULL;
	o->len = len;
	mrfi_op_link(ep, o);
	if (msg) {
		rc = mrail_imrecv_x(ep->engine, buf, len, msg, &a, &o->req);
		if (rc == MRAIL_OK && fctx && (flags & FI_CLAIM))
			fctx->internal[0] = NULL;
	} else {
		rc = mrail_irecv_x(ep->engine, peer, buf, len, etag, mask, &a,
				   &o->req);
	}
	if (rc != MRAIL_OK) {
		pthread_mutex_lock(&ep->lock);
		op_unlink_locked(ep, o);
		pthread_mutex_unlock(&ep->lock);
		free(o);
		return mrfi_err(rc);
	}
	return 0;
}

ssize_t mrfi_cancel(struct mrfi_ep *ep, void *context)
{
	ssize_t rc = -FI_ENOENT;
	/* Under the endpoint lock the op's callback has not run (it unlinks
	 * first), so the request is still valid for mrail_cancel. */
	pthread_mutex_lock(&ep->lock);
	for (struct mrfi_op *o = ep->pending; o; o = o->next) {
		if (o->context != context || !(o->flags & FI_RECV) ||
		    o->multi)
			continue; /* a multi-recv buffer is not cancelled */
		if (!o->req)
			break; /* still being posted by another thread */
		int r = mrail_cancel(ep->engine, o->req);
		/* Already matched: it completes with its data. */
		rc = (r == MRAIL_OK || r == MRAIL_ERR_BUSY) ? 0 : mrfi_err(r);
		break;
	}
	pthread_mutex_unlock(&ep->lock);
	return rc;
}

#define EP(fep) ((struct mrfi_ep *)(fep))
#define TXF(fep) (EP(fep)->tx_op_flags)
#define RXF(fep) (EP(fep)->rx_op_flags)

/* ---- tagged ---------------------------------------------------------- */

static ssize_t t_recv(struct fid_ep *fep, void *buf, size_t len, void *desc,
		      fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx)
{
	(void)desc;
	struct iovec iov = { buf, len };
	return post_recv(EP(fep), &iov, 1, src, tag, ignore, ctx, RXF(fep), 1);
}

static ssize_t t_recvv(struct fid_ep *fep, const struct iovec *iov,
		       void **desc, size_t count, fi_addr_t src, uint64_t tag,
		       uint64_t ignore, void *ctx)
{
	(void)desc;
	return post_recv(EP(fep), iov, count, src, tag, ignore, ctx, RXF(fep),
			 1);
}

static ssize_t t_recvmsg(struct fid_ep *fep, const struct fi_msg_tagged *m,
			 uint64_t flags)
{
	return post_recv(EP(fep), m->msg_iov, m->iov_count, m->addr, m->tag,
			 m->ignore, m->context, flags, 1);
}

static ssize_t t_send(struct fid_ep *fep, const void *buf, size_t len,
		      void *desc, fi_addr_t dest, uint64_t tag, void *ctx)
{
	(void)desc;
	struct iovec iov = { (void *)buf, len };
	return post_send(EP(fep), &iov, 1, dest, tag, 0, ctx, TXF(fep), 1, 0);
}

static ssize_t t_sendv(struct fid_ep *fep, const struct iovec *iov,
		       void **desc, size_t count, fi_addr_t dest, uint64_t tag,
		       void *ctx)
{
	(void)desc;
	return post_send(EP(fep), iov, count, dest, tag, 0, ctx, TXF(fep), 1, 0);
}

static ssize_t t_sendmsg(struct fid_ep *fep, const struct fi_msg_tagged *m,
			 uint64_t flags)
{
	return post_send(EP(fep), m->msg_iov, m->iov_count, m->addr, m->tag,
			 m->data, m->context, flags, 1, 0);
}

static ssize_t t_inject(struct fid_ep *fep, const void *buf, size_t len,
			fi_addr_t dest, uint64_t tag)
{
	struct iovec iov = { (void *)buf, len };
	return post_send(EP(fep), &iov, 1, dest, tag, 0, NULL, FI_INJECT,
			 1, 1);
}

static ssize_t t_senddata(struct fid_ep *fep, const void *buf, size_t len,
			  void *desc, uint64_t data, fi_addr_t dest,
			  uint64_t tag, void *ctx)
{
	(void)desc;
	struct iovec iov = { (void *)buf, len };
	return post_send(EP(fep), &iov, 1, dest, tag, data, ctx,
			 TXF(fep) | FI_REMOTE_CQ_DATA, 1, 0);
}

static ssize_t t_injectdata(struct fid_ep *fep, const void *buf, size_t len,
			    uint64_t data, fi_addr_t dest, uint64_t tag)
{
	struct iovec iov = { (void *)buf, len };
	return post_send(EP(fep), &iov, 1, dest, tag, data, NULL,
			 FI_INJECT | FI_REMOTE_CQ_DATA, 1, 1);
}

struct fi_ops_tagged mrfi_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = t_recv,
	.recvv = t_recvv,
	.recvmsg = t_recvmsg,
	.send = t_send,
	.sendv = t_sendv,
	.sendmsg = t_sendmsg,
	.inject = t_inject,
	.senddata = t_senddata,
	.injectdata = t_injectdata,
};

/* ---- untagged -------------------------------------------------------- */

static ssize_t m_recv(struct fid_ep *fep, void *buf, size_t len, void *desc,
		      fi_addr_t src, void *ctx)
{
	(void)desc;
	struct iovec iov = { buf, len };
	return post_recv(EP(fep), &iov, 1, src, 0, 0, ctx, RXF(fep), 0);
}

static ssize_t m_recvv(struct fid_ep *fep, const struct iovec *iov,
		       void **desc, size_t count, fi_addr_t src, void *ctx)
{
	(void)desc;
	return post_recv(EP(fep), iov, count, src, 0, 0, ctx, RXF(fep), 0);
}

static ssize_t m_recvmsg(struct fid_ep *fep, const struct fi_msg *m,
			 uint64_t flags)
{
	return post_recv(EP(fep), m->msg_iov, m->iov_count, m->addr, 0, 0,
			 m->context, flags, 0);
}

static ssize_t m_send(struct fid_ep *fep, const void *buf, size_t len,
		      void *desc, fi_addr_t dest, void *ctx)
{
	(void)desc;
	struct iovec iov = { (void *)buf, len };
	return post_send(EP(fep), &iov, 1, dest, 0, 0, ctx, TXF(fep), 0, 0);
}

static ssize_t m_sendv(struct fid_ep *fep, const struct iovec *iov,
		       void **desc, size_t count, fi_addr_t dest, void *ctx)
{
	(void)desc;
	return post_send(EP(fep), iov, count, dest, 0, 0, ctx, TXF(fep), 0, 0);
}

static ssize_t m_sendmsg(struct fid_ep *fep, const struct fi_msg *m,
			 uint64_t flags)
{
	return post_send(EP(fep), m->msg_iov, m->iov_count, m->addr, 0,
			 m->data, m->context, flags, 0, 0);
}

static ssize_t m_inject(struct fid_ep *fep, const void *buf, size_t len,
			fi_addr_t dest)
{
	struct iovec iov = { (void *)buf, len };
	return post_send(EP(fep), &iov, 1, dest, 0, 0, NULL, FI_INJECT,
			 0, 1);
}

static ssize_t m_senddata(struct fid_ep *fep, const void *buf, size_t len,
			  void *desc, uint64_t data, fi_addr_t dest, void *ctx)
{
	(void)desc;
	struct iovec iov = { (void *)buf, len };
	return post_send(EP(fep), &iov, 1, dest, 0, data, ctx,
			 TXF(fep) | FI_REMOTE_CQ_DATA, 0, 0);
}

static ssize_t m_injectdata(struct fid_ep *fep, const void *buf, size_t len,
			    uint64_t data, fi_addr_t dest)
{
	struct iovec iov = { (void *)buf, len };
	return post_send(EP(fep), &iov, 1, dest, 0, data, NULL,
			 FI_INJECT | FI_REMOTE_CQ_DATA, 0, 1);
}

struct fi_ops_msg mrfi_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = m_recv,
	.recvv = m_recvv,
	.recvmsg = m_recvmsg,
	.send = m_send,
	.sendv = m_sendv,
	.sendmsg = m_sendmsg,
	.inject = m_inject,
	.senddata = m_senddata,
	.injectdata = m_injectdata,
};
