/*
 * Endpoints: one libmrail engine each, created at fi_endpoint (so
 * fi_getname works before fi_enable), with the usual MRAIL_* environment
 * choosing drivers, rails and strategy. Binding, enabling, names, and the
 * map between AV indices and the engine's peer ids.
 */
#include "mrfi.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int mrfi_err(int e)
{
	switch (e) {
	case MRAIL_OK: return 0;
	case MRAIL_ERR_INVALID: return -FI_EINVAL;
	case MRAIL_ERR_NOMEM: return -FI_ENOMEM;
	case MRAIL_ERR_TRUNCATE: return -FI_ETRUNC;
	case MRAIL_ERR_PEER: return -FI_EHOSTUNREACH;
	case MRAIL_ERR_CANCELED: return -FI_ECANCELED;
	case MRAIL_ERR_CONFIG: return -FI_EINVAL;
	case MRAIL_ERR_NOT_FOUND: return -FI_ENOENT;
	case MRAIL_ERR_AGAIN: return -FI_EAGAIN;
	case MRAIL_ERR_BUSY: return -FI_EBUSY;
	case MRAIL_ERR_TIMEOUT: return -FI_ETIMEDOUT;
	case MRAIL_ERR_PEER_CLOSED: return -FI_ECONNRESET;
	case MRAIL_ERR_AUTH: return -FI_EACCES;
	case MRAIL_ERR_PROTO: return -FI_EIO;
	default: return -FI_EOTHER;
	}
}

static int grow(void **arr, size_t *n, size_t need, size_t elem, int fill)
{
	if (need <= *n)
		return 0;
	size_t cap = *n ? *n : 16;
	while (cap < need)
		cap *= 2;
	unsigned char *p = realloc(*arr, cap * elem);
	if (!p)
		return -FI_ENOMEM;
	memset(p + *n * elem, fill, (cap - *n) * elem);
	*arr = p;
	*n = cap;
	return 0;
}

static uint64_t blob_uuid(const unsigned char *blob, size_t len)
{
	uint64_t u = 0;
	if (len >= 16)
		memcpy(&u, blob + 8, 8);
	return u;
}

static int peer_by_blob_locked(struct mrfi_ep *ep, const unsigned char *blob,
			       size_t len, mrail_peer_t *peer)
{
	uint64_t u = blob_uuid(blob, len);
	for (size_t i = 0; i < ep->nknown; i++)
		if (ep->known[i].uuid == u) {
			*peer = ep->known[i].peer;
			return 0;
		}
	if (ep->nknown == ep->capknown) {
		size_t cap = ep->capknown ? 2 * ep->capknown : 16;
		struct mrfi_known *k = realloc(ep->known, cap * sizeof *k);
		if (!k)
			return -FI_ENOMEM;
		ep->known = k;
		ep->capknown = cap;
	}
	int rc = mrfi_err(mrail_peer_add(ep->engine, blob, len, peer));
	if (rc) {
		FI_WARN(&mrfi_prov, FI_LOG_AV, "the engine refused a peer's "
			"address (%s; see the libmrail log)\n",
			fi_strerror(-rc));
		return rc;
	}
	ep->known[ep->nknown].uuid = u;
	ep->known[ep->nknown].peer = *peer;
	ep->nknown++;
	return 0;
}

int mrfi_ep_peer_by_uuid(struct mrfi_ep *ep, uint64_t uuid,
			 mrail_peer_t *peer)
{
	int rc = -FI_ENOENT;
	pthread_mutex_lock(&ep->lock);
	for (size_t i = 0; i < ep->nknown; i++)
		if (ep->known[i].uuid == uuid) {
			*peer = ep->known[i].peer;
			rc = 0;
			break;
		}
	pthread_mutex_unlock(&ep->lock);
	return rc;
}

uint64_t mrfi_ep_uuid(struct mrfi_ep *ep)
{
	unsigned char *blob;
	size_t len;
	uint64_t u = 0;
	if (mrfi_ep_blob(ep, &blob, &len) == 0) {
		u = blob_uuid(blob, len);
		free(blob);
	}
	return u;
}

int mrfi_ep_peer_by_blob(struct mrfi_ep *ep, const unsigned char *blob,
			 size_t len, mrail_peer_t *peer)
{
	pthread_mutex_lock(&ep->lock);
	int rc = peer_by_blob_locked(ep, blob, len, peer);
	pthread_mutex_unlock(&ep->lock);
	return rc;
}

int mrfi_ep_blob(struct mrfi_ep *ep, unsigned char **blob, size_t *len)
{
	*len = MRAIL_ADDR_MAX;
	*blob = malloc(*len);
	if (!*blob)
		return -FI_ENOMEM;
	int rc = mrfi_err(mrail_address(ep->engine, *blob, len));
	if (rc) {
		free(*blob);
		*blob = NULL;
	}
	return rc;
}

int mrfi_ep_add_peer(struct mrfi_ep *ep, fi_addr_t addr)
{
	pthread_mutex_lock(&ep->lock);
	int rc = grow((void **)&ep->peer_of, &ep->npeer_of, addr + 1,
		      sizeof *ep->peer_of, 0xff);
	if (rc || ep->peer_of[addr] != MRAIL_ANY_PEER) {
		pthread_mutex_unlock(&ep->lock);
		return rc;
	}
	unsigned char *blob;
	size_t len;
	rc = mrfi_av_blob(ep->av, addr, &blob, &len);
	mrail_peer_t peer = MRAIL_ANY_PEER;
	if (!rc) {
		rc = peer_by_blob_locked(ep, blob, len, &peer);
		free(blob);
	}
	if (!rc)
		rc = grow((void **)&ep->addr_of, &ep->naddr_of,
			  (size_t)peer + 1, sizeof *ep->addr_of, 0xff);
	if (!rc) {
		ep->peer_of[addr] = peer;
		ep->addr_of[peer] = addr;
	}
	pthread_mutex_unlock(&ep->lock);
	return rc;
}

fi_addr_t mrfi_ep_addr_of(struct mrfi_ep *ep, mrail_peer_t peer)
{
	pthread_mutex_lock(&ep->lock);
	fi_addr_t a = peer < ep->naddr_of ? ep->addr_of[peer]
					  : FI_ADDR_NOTAVAIL;
	pthread_mutex_unlock(&ep->lock);
	return a;
}

int mrfi_ep_peer_of(struct mrfi_ep *ep, fi_addr_t addr, mrail_peer_t *peer)
{
	pthread_mutex_lock(&ep->lock);
	mrail_peer_t p = addr < ep->npeer_of ? ep->peer_of[addr]
					     : MRAIL_ANY_PEER;
	pthread_mutex_unlock(&ep->lock);
	if (p == MRAIL_ANY_PEER)
		return -FI_EINVAL;
	*peer = p;
	return 0;
}

void mrfi_ep_progress(struct mrfi_ep *ep)
{
	if (ep->engine) {
		(void)mrail_progress(ep->engine);
		mrfi_multi_progress(ep);
	}
}

static int cntr_bound(struct mrfi_ep *ep, struct mrfi_cntr *c)
{
	for (int k = 0; k < MRFI_CNTR_KINDS; k++)
		if (ep->cntr[k] == c)
			return 1;
	return 0;
}

/* fi_ep_bind of a counter: one slot per kind of operation named. */
static int bind_cntr(struct mrfi_ep *ep, struct mrfi_cntr *c, uint64_t flags)
{
	static const uint64_t kind_flag[MRFI_CNTR_KINDS] = {
		[MRFI_CNTR_SEND] = FI_SEND, [MRFI_CNTR_RECV] = FI_RECV,
		[MRFI_CNTR_READ] = FI_READ, [MRFI_CNTR_WRITE] = FI_WRITE,
		[MRFI_CNTR_RREAD] = FI_REMOTE_READ,
		[MRFI_CNTR_RWRITE] = FI_REMOTE_WRITE,
	};
	uint64_t all = FI_SEND | FI_RECV | FI_READ | FI_WRITE |
		       FI_REMOTE_READ | FI_REMOTE_WRITE;
	if (!flags || (flags & ~all)) {
		FI_WARN(&mrfi_prov, FI_LOG_EP_CTRL, "counter bind flags "
			"%#llx: only FI_SEND, FI_RECV, FI_READ, FI_WRITE, "
			"FI_REMOTE_READ, FI_REMOTE_WRITE\n",
			(unsigned long long)flags);
		return -FI_EINVAL;
	}
	int rc = mrfi_cntr_attach(c, ep);
	if (rc)
		return rc;
	for (int k = 0; k < MRFI_CNTR_KINDS; k++)
		if (flags & kind_flag[k]) {
			/* Rebinding a kind: the old counter lets go of
			 * us unless it still counts another kind. */
			struct mrfi_cntr *old = ep->cntr[k];
			ep->cntr[k] = c;
			if (old && old != c && !cntr_bound(ep, old))
				mrfi_cntr_detach(old, ep);
		}
	return 0;
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct mrfi_ep *ep = (struct mrfi_ep *)fid;
	if (ep->enabled)
		return -FI_EOPBADSTATE;
	switch (bfid->fclass) {
	case FI_CLASS_CQ: {
		struct mrfi_cq *cq = (struct mrfi_cq *)bfid;
		if (!(flags & (FI_TRANSMIT | FI_RECV)))
			return -FI_EINVAL;
		int rc = mrfi_cq_attach(cq, ep);
		if (rc)
			return rc;
		if (flags & FI_TRANSMIT) {
			ep->tx_cq = cq;
			ep->tx_flags = flags & FI_SELECTIVE_COMPLETION;
		}
		if (flags & FI_RECV) {
			ep->rx_cq = cq;
			ep->rx_flags = flags & FI_SELECTIVE_COMPLETION;
		}
		return 0;
	}
	case FI_CLASS_CNTR:
		return bind_cntr(ep, (struct mrfi_cntr *)bfid, flags);
	case FI_CLASS_AV:
		if (ep->av)
			return -FI_EINVAL;
		ep->av = (struct mrfi_av *)bfid;
		return mrfi_av_attach(ep->av, ep);
	default:
		/* Event queues: not offered (no connections). */
		return -FI_ENOSYS;
	}
}

static int ep_control(struct fid *fid, int command, void *arg)
{
	struct mrfi_ep *ep = (struct mrfi_ep *)fid;
	switch (command) {
	case FI_ENABLE:
		if (!ep->av)
			return -FI_ENOAV;
		if (!ep->tx_cq || !ep->rx_cq)
			return -FI_ENOCQ;
		ep->enabled = 1;
		return 0;
	case FI_GETOPSFLAG: {
		uint64_t *f = arg;
		*f = (*f & FI_TRANSMIT) ? ep->tx_op_flags : ep->rx_op_flags;
		return 0;
	}
	case FI_SETOPSFLAG: {
		uint64_t *f = arg;
		if (*f & FI_TRANSMIT)
			ep->tx_op_flags = *f & ~(uint64_t)FI_TRANSMIT;
		else
			ep->rx_op_flags = *f & ~(uint64_t)FI_RECV;
		return 0;
	}
	default:
		return -FI_ENOSYS;
	}
}

static void op_free_all(struct mrfi_ep *ep)
{
	while (ep->pending) {
		struct mrfi_op *o = ep->pending;
		ep->pending = o->next;
		if (o->multi)
			mrfi_multi_drop_piece(o->multi);
		free(o);
	}
}

static int ep_close(struct fid *fid)
{
	struct mrfi_ep *ep = (struct mrfi_ep *)fid;
	/* The engine first: it flushes sends, says goodbye to the peers and
	 * frees the requests still pending (their callbacks never run). */
	/* The name service first: it adds peers to the engine. */
	mrfi_name_srv_stop(ep->srv);
	ep->srv = NULL;
	if (ep->engine)
		mrail_engine_destroy(ep->engine);
	ep->engine = NULL;
	mrfi_multi_free_all(ep); /* before the ops: they hold buffers */
	op_free_all(ep);
	free(ep->known);
	if (ep->tx_cq)
		mrfi_cq_detach(ep->tx_cq, ep);
	if (ep->rx_cq && ep->rx_cq != ep->tx_cq)
		mrfi_cq_detach(ep->rx_cq, ep);
	if (ep->av)
		mrfi_av_detach(ep->av, ep);
	for (int k = 0; k < MRFI_CNTR_KINDS; k++)
		if (ep->cntr[k])
			mrfi_cntr_detach(ep->cntr[k], ep);
	fi_freeinfo(ep->info);
	free(ep->peer_of);
	free(ep->addr_of);
	pthread_mutex_destroy(&ep->lock);
	pthread_mutex_destroy(&ep->mr_lock);
	free(ep);
	return 0;
}

static struct fi_ops ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = ep_close,
	.bind = ep_bind,
	.control = ep_control,
	.ops_open = mrfi_no_ops_open,
};

static ssize_t ep_cancel(fid_t fid, void *context)
{
	return mrfi_cancel((struct mrfi_ep *)fid, context);
}

static int ep_getopt(fid_t fid, int level, int optname, void *optval,
		     size_t *optlen)
{
	struct mrfi_ep *ep = (struct mrfi_ep *)fid;
	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (optname == FI_OPT_MIN_MULTI_RECV) {
		if (*optlen < sizeof(size_t))
			return -FI_ETOOSMALL;
		*(size_t *)optval = ep->min_multi_recv;
		*optlen = sizeof(size_t);
		return 0;
	}
	if (optname == FI_OPT_CM_DATA_SIZE) {
		if (*optlen < sizeof(size_t))
			return -FI_ETOOSMALL;
		*(size_t *)optval = 0;
		*optlen = sizeof(size_t);
		return 0;
	}
	return -FI_ENOPROTOOPT;
}

static int ep_setopt(fid_t fid, int level, int optname, const void *optval,
		     size_t optlen)
{
	struct mrfi_ep *ep = (struct mrfi_ep *)fid;
	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (optname == FI_OPT_MIN_MULTI_RECV) {
		if (optlen != sizeof(size_t) || !optval)
			return -FI_EINVAL;
		memcpy(&ep->min_multi_recv, optval, sizeof(size_t));
		return 0;
	}
	return -FI_ENOPROTOOPT;
}

static ssize_t ep_size_left(struct fid_ep *ep)
{
	(void)ep;
	return 65536;
}

static struct fi_ops_ep ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = ep_cancel,
	.getopt = ep_getopt,
	.setopt = ep_setopt,
	.tx_ctx = mrfi_no_tx_ctx,
	.rx_ctx = mrfi_no_rx_ctx,
	.rx_size_left = ep_size_left,
	.tx_size_left = ep_size_left,
};

static int ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct mrfi_ep *ep = (struct mrfi_ep *)fid;
	size_t n = ep->name_len;
	if (*addrlen < n) {
		*addrlen = n;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, ep->name, n);
	*addrlen = n;
	return 0;
}

static struct fi_ops_cm ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = mrfi_no_setname,
	.getname = ep_getname,
	.getpeer = mrfi_no_getpeer,
	.connect = mrfi_no_connect,
	.listen = mrfi_no_listen,
	.accept = mrfi_no_accept,
	.reject = mrfi_no_reject,
	.shutdown = mrfi_no_shutdown,
	.join = mrfi_no_join,
};

static int engine_open(mrail_engine_t **engine)
{
	struct mrail_config cfg;
	int rc = mrail_config_init(&cfg);
	if (rc != MRAIL_OK) {
		FI_WARN(&mrfi_prov, FI_LOG_EP_CTRL, "bad MRAIL_* environment: "
			"%s (the libmrail log line above names it)\n",
			mrail_strerror(rc));
		return -FI_EINVAL;
	}
	/* Peers come from the AV, never from a launcher's bootstrap; every
	 * provider call may come from any thread (FI_THREAD_SAFE). */
	cfg.bootstrap = 0;
	cfg.thread_level = MRAIL_THREAD_MULTIPLE;
	rc = mrail_engine_create(&cfg, engine);
	if (rc != MRAIL_OK) {
		FI_WARN(&mrfi_prov, FI_LOG_EP_CTRL, "mrail_engine_create: %s\n",
			mrail_strerror(rc));
		return mrfi_err(rc);
	}
	return 0;
}

int mrfi_ep_open(struct fid_domain *domain, struct fi_info *info,
		 struct fid_ep **fep, void *context)
{
	if (!info || !info->ep_attr || info->ep_attr->type != FI_EP_RDM)
		return -FI_EINVAL;
	struct mrfi_ep *ep = calloc(1, sizeof *ep);
	if (!ep)
		return -FI_ENOMEM;
	pthread_mutex_init(&ep->lock, NULL);
	pthread_mutex_init(&ep->mr_lock, NULL);
	ep->seed = (unsigned)getpid() ^ (unsigned)(uintptr_t)ep;
	ep->dom = (struct mrfi_domain *)domain;
	ep->info = fi_dupinfo(info);
	ep->caps = info->caps ? info->caps : (FI_MSG | FI_TAGGED);
	if (info->tx_attr)
		ep->tx_op_flags = info->tx_attr->op_flags;
	if (info->rx_attr)
		ep->rx_op_flags = info->rx_attr->op_flags;
	int rc = ep->info ? engine_open(&ep->engine) : -FI_ENOMEM;
	if (!rc)
		rc = mrfi_name_srv_start(ep, &ep->srv, ep->name,
					 &ep->name_len);
	if (rc) {
		if (ep->engine)
			mrail_engine_destroy(ep->engine);
		fi_freeinfo(ep->info);
		pthread_mutex_destroy(&ep->lock);
		pthread_mutex_destroy(&ep->mr_lock);
		free(ep);
		return rc;
	}
	ep->ep.fid.fclass = FI_CLASS_EP;
	ep->ep.fid.context = context;
	ep->ep.fid.ops = &ep_fi_ops;
	ep->ep.ops = &ep_ops;
	ep->ep.cm = &ep_cm_ops;
	ep->ep.msg = &mrfi_msg_ops;
	ep->ep.tagged = &mrfi_tagged_ops;
	*fep = &ep->ep;
	return 0;
}
