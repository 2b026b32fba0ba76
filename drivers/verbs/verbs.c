/*
 * InfiniBand / RoCE verbs driver: one RC queue pair per rail per peer, a
 * rail being one active HCA port (verbs_rails.c). This file holds the
 * instance (devices, their CQ and completion channel), listen/connect,
 * endpoints' QPs and the progress loop; the UD connection handshake is in
 * verbs_conn.c, frames, credits and get/put in verbs_data.c. Every verbs
 * call goes through drv->api (verbs_api.h), so tests run the driver on
 * the fake HCA in double/. docs/driver-verbs.md is the reference.
 *
 * Lifetime rule: a closed endpoint moves its QP to the error state and
 * waits on drv->zombies until every work request it posted has completed
 * (flushed), then is destroyed at the end of the outermost progress.
 */
#include "drivers/verbs/verbs_internal.h"
#include "mrail_config.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/params.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/timerfd.h>
#include <unistd.h>

const struct mrail_drv_ops mrail_verbs_driver_ops;

/* ---- instance ---------------------------------------------------------- */

static int dev_open(struct mrail_drv *drv, struct vb_dev *d,
		    struct ibv_device *ibdev)
{
	const struct mrail_verbs_api *api = drv->api;
	struct ibv_device_attr da;
	struct epoll_event ev = {.events = EPOLLIN};
	int cqe = VB_CQ_SIZE;

	d->drv = drv;
	d->ibdev = ibdev;
	snprintf(d->name, sizeof d->name, "%s", api->get_device_name(ibdev));
	d->ctx = api->open_device(ibdev);
	if (!d->ctx || api->query_device(d->ctx, &da)) {
		mrail_error("verbs: cannot open device %s: %s", d->name,
			    strerror(errno));
		return MRAIL_ERR_IO;
	}
	if (da.max_cqe > 0 && da.max_cqe < cqe)
		cqe = da.max_cqe;
	d->pd = api->alloc_pd(d->ctx);
	d->ch = d->pd ? api->create_comp_channel(d->ctx) : NULL;
	d->cq = d->ch ? api->create_cq(d->ctx, cqe, d, d->ch, 0) : NULL;
	if (!d->cq) {
		mrail_error("verbs: %s: protection domain, completion channel "
			    "or CQ of %d entries: %s",
			    d->name, cqe, strerror(errno));
		return MRAIL_ERR_IO;
	}
	fcntl(d->ch->fd, F_SETFL, fcntl(d->ch->fd, F_GETFL) | O_NONBLOCK);
	ev.data.ptr = d;
	if (epoll_ctl(drv->epfd, EPOLL_CTL_ADD, d->ch->fd, &ev) < 0 ||
	    api->req_notify_cq(d->cq, 0)) {
		mrail_error("verbs: %s: completion channel: %s", d->name,
			    strerror(errno));
		return MRAIL_ERR_IO;
	}
	vb_add_ports(drv, d, da.phys_port_cnt);
	return 0;
}

static void dev_close(struct mrail_drv *drv, struct vb_dev *d)
{
	const struct mrail_verbs_api *api = drv->api;

	if (d->cq)
		api->destroy_cq(d->cq);
	if (d->ch)
		api->destroy_comp_channel(d->ch);
	if (d->pd)
		api->dealloc_pd(d->pd);
	if (d->ctx)
		api->close_device(d->ctx);
	memset(d, 0, sizeof *d);
}

static const struct mrail_verbs_api *choose_api(struct mrail_drv *drv,
					       const char *params)
{
	const char *conf = getenv("MRAIL_VERBS_DOUBLE");
	char key[32], val[64], *end;
	const char *pos = params;
	int rc;

	while (params && (rc = mrail_params_next(&pos, key, sizeof key, val,
						 sizeof val)) != 0) {
		if (rc == 1 && !strcmp(key, "gid_index")) {
			long v = strtol(val, &end, 10);
			if (*val && !*end && v >= 0 && v < 256) {
				drv->gid_index = (int)v;
				continue;
			}
		} else if (rc == 1 && !strcmp(key, "double") &&
			   (!strcmp(val, "0") || !strcmp(val, "1"))) {
			if (!strcmp(val, "1") &&
			    (!conf || !*conf || !strcmp(conf, "0")))
				conf = "1";
			continue;
		}
		mrail_error("verbs: unknown or malformed parameter '%s' "
			    "(known: double=0|1, gid_index=0..255)",
			    rc < 0 ? params : key);
		return NULL;
	}
	if (conf && *conf && strcmp(conf, "0")) {
		const struct mrail_verbs_api *d = mrail_verbs_double_api(conf);
		if (!d)
			mrail_error("verbs: MRAIL_VERBS_DOUBLE='%s' asks for "
				    "the verbs test double, which %s",
				    conf,
				    mrail_verbs_double_why());
		return d;
	}
	return &mrail_verbs_real_api;
}

static void vb_close(struct mrail_drv *drv);
static void ep_closing(struct dc_ep *dc);
static void ep_drop_ops(struct dc_ep *dc);
static bool ep_busy(const struct dc_ep *dc);
static void ep_free(struct dc_ep *dc);

static const struct dc_hooks vb_hooks = {
	.name = "verbs",
	.ep_free = ep_free,
	.ep_closing = ep_closing,
	.ep_drop_ops = ep_drop_ops,
	.ep_busy = ep_busy,
};

static int vb_open(const struct mrail_drv_open_args *args,
		   struct mrail_drv **out)
{
	struct mrail_drv *drv;
	struct ibv_device **list;
	struct epoll_event ev = {.events = EPOLLIN};
	int n = 0, rc = 0;

	if (!args || !args->upcalls || !out)
		return MRAIL_ERR_INVALID;
	drv = calloc(1, sizeof *drv);
	if (!drv)
		return MRAIL_ERR_NOMEM;
	dc_drv_init(&drv->dc, &vb_hooks, &mrail_verbs_driver_ops, args);
	drv->api = choose_api(drv, args->params);
	drv->epfd = epoll_create1(EPOLL_CLOEXEC);
	drv->timerfd = timerfd_create(CLOCK_MONOTONIC,
				      TFD_NONBLOCK | TFD_CLOEXEC);
	ev.data.ptr = NULL; /* the timer */
	if (!drv->api) {
		rc = MRAIL_ERR_CONFIG;
		goto fail;
	}
	if (drv->epfd < 0 || drv->timerfd < 0 ||
	    epoll_ctl(drv->epfd, EPOLL_CTL_ADD, drv->timerfd, &ev) < 0) {
		mrail_error("verbs: epoll/timerfd: %s", strerror(errno));
		rc = MRAIL_ERR_IO;
		goto fail;
	}
	getrandom(&drv->next_req_id, sizeof drv->next_req_id, 0);
	errno = 0;
	list = drv->api->get_device_list(&n);
	if (!list || n <= 0) {
		mrail_error("verbs: no RDMA device found (%s%s%s): this host "
			    "has no InfiniBand/RoCE HCA, or its kernel "
			    "drivers (ib_uverbs and the HCA's) are not "
			    "loaded; tests can use the verbs test double "
			    "(MRAIL_VERBS_DOUBLE=1)",
			    drv->api->name,
			    list ? "" : ": ibv_get_device_list: ",
			    list ? "" : strerror(errno ? errno : ENODEV));
		if (list)
			drv->api->free_device_list(list);
		rc = MRAIL_ERR_NOT_FOUND;
		goto fail;
	}
	for (int i = 0; i < n && i < VB_MAX_DEV && rc == 0; i++) {
		drv->devs[i].index = i;
		drv->ndev++;
		rc = dev_open(drv, &drv->devs[i], list[i]);
	}
	if (rc == 0)
		vb_locality(drv, list);
	drv->api->free_device_list(list);
	if (rc)
		goto fail;
	if (drv->nports == 0) {
		mrail_error("verbs: %d RDMA device%s but no active port (link "
			    "down?)",
			    n, n > 1 ? "s" : "");
		rc = MRAIL_ERR_NOT_FOUND;
		goto fail;
	}
	vb_order_ports(drv);
	for (int i = 0; i < drv->nports; i++)
		mrail_debug("verbs: rail %s fabric %s %.0f Mbit/s%s (%s)",
			    drv->ports[i].name, drv->ports[i].fabric,
			    drv->ports[i].bw * 8e-6,
			    drv->ports[i].dev->near ? " near" : "",
			    drv->api->name);
	*out = drv;
	return 0;
fail:
	vb_close(drv);
	return rc;
}

static void vb_close(struct mrail_drv *drv)
{
	if (!drv)
		return;
	dc_drv_fini(&drv->dc);
	for (int i = 0; i < drv->nports; i++)
		vb_listener_close(&drv->ports[i]);
	for (int i = 0; i < drv->ndev; i++)
		dev_close(drv, &drv->devs[i]);
	if (drv->timerfd >= 0)
		close(drv->timerfd);
	if (drv->epfd >= 0)
		close(drv->epfd);
	free(drv);
}

static void vb_query_caps(struct mrail_drv *drv, struct mrail_drv_caps *caps)
{
	double bw = 0;

	for (int i = 0; drv && i < drv->nports; i++)
		if (drv->ports[i].bw > 0 && (bw == 0 || drv->ports[i].bw < bw))
			bw = drv->ports[i].bw;
	memset(caps, 0, sizeof *caps);
	caps->max_head = VB_MAX_HEAD;
	caps->max_body = VB_MAX_BODY;
	caps->max_body_iov = VB_MAX_BODY_IOV;
	caps->eager_max_hint = VB_EAGER_MAX_HINT;
	caps->flags = MRAIL_DRV_CAP_RECV_INTO_USER | MRAIL_DRV_CAP_RDMA_READ |
		      MRAIL_DRV_CAP_RDMA_WRITE | MRAIL_DRV_CAP_NEEDS_REG;
	caps->nominal_bandwidth = bw;
	caps->nominal_latency = 2e-6;
	caps->max_rma = VB_MAX_RMA;
}

static int vb_wait_fd(struct mrail_drv *drv)
{
	return drv ? drv->epfd : -1;
}

void vb_timer_want(struct mrail_drv *drv, double due)
{
	struct itimerspec its = {0};

	if (drv->timer_due > 0 && drv->timer_due <= due)
		return;
	if (due < 1e-9)
		due = 1e-9;
	its.it_value.tv_sec = (time_t)due;
	its.it_value.tv_nsec = (long)((due - (double)its.it_value.tv_sec) * 1e9);
	timerfd_settime(drv->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
	drv->timer_due = due;
}

/* ---- listeners and connections ----------------------------------------- */

static struct vb_port *port_named(struct mrail_drv *drv, const char *name)
{
	if (!name || !*name)
		return drv->nports ? &drv->ports[0] : NULL;
	for (int i = 0; i < drv->nports; i++)
		if (!strcmp(drv->ports[i].name, name))
			return &drv->ports[i];
	return NULL;
}

static int vb_listen(struct mrail_drv *drv, const char *local, void *addr,
		     size_t *addr_len, char *name, size_t name_len)
{
	struct vb_port *p;
	uint8_t *b = addr;
	int rc;

	if (!drv || !addr || !addr_len)
		return MRAIL_ERR_INVALID;
	p = port_named(drv, local);
	if (!p) {
		mrail_error("verbs: cannot listen on '%s': not an active port "
			    "of this host",
			    local);
		return MRAIL_ERR_NOT_FOUND;
	}
	if (*addr_len < VB_BLOB_LEN) {
		*addr_len = VB_BLOB_LEN;
		return MRAIL_ERR_INVALID;
	}
	rc = vb_listener_open(p);
	if (rc)
		return rc;
	memset(b, 0, VB_BLOB_LEN);
	memcpy(b, "MRVA", 4);
	b[4] = VB_BLOB_VERSION;
	b[5] = p->eth ? 2 : 1;
	b[6] = p->num;
	b[7] = (uint8_t)p->dev->index;
	b[8] = (uint8_t)p->attr.lid;
	b[9] = (uint8_t)(p->attr.lid >> 8);
	vb_put32(b + 12, p->ud->qp_num);
	memcpy(b + 16, p->gid.raw, 16);
	*addr_len = VB_BLOB_LEN;
	if (name && name_len)
		snprintf(name, name_len, "%s/ud%#x", p->name, p->ud->qp_num);
	return (int)(p - drv->ports);
}

struct mrail_drv_ep *vb_ep_by_qpn(struct mrail_drv *drv, struct vb_dev *dev,
				  uint32_t qpn)
{
	struct mrail_list *pos, *tmp;

	dc_foreach_ep(pos, tmp, &drv->dc) {
		struct mrail_drv_ep *ep = (struct mrail_drv_ep *)dc_ep_entry(pos);
		if (ep->dc.state != DC_EP_CLOSED && ep->qp &&
		    ep->qp->qp_num == qpn && ep->port->dev == dev)
			return ep;
	}
	return NULL;
}

int vb_ep_setup(struct mrail_drv_ep *ep)
{
	struct mrail_drv *drv = vb_drv(ep);
	struct vb_dev *d = ep->port->dev;
	size_t bytes = (size_t)(VB_RECV_DEPTH + VB_SEND_BUFS) * VB_BUF;
	struct ibv_qp_init_attr ia = {0};
	struct ibv_qp_attr a = {0};

	ep->buf = aligned_alloc(4096, bytes);
	ep->mr = ep->buf ? drv->api->reg_mr(d->pd, ep->buf, bytes,
					    IBV_ACCESS_LOCAL_WRITE)
			 : NULL;
	if (!ep->mr) {
		mrail_error("verbs: %s: registering %zu bytes of buffers: %s",
			    ep->port->name, bytes, strerror(errno));
		return MRAIL_ERR_NOMEM;
	}
	ia.send_cq = ia.recv_cq = d->cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = VB_SEND_BUFS + VB_RMA_DEPTH;
	ia.cap.max_recv_wr = VB_RECV_DEPTH;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = VB_INLINE;
	ep->qp = drv->api->create_qp(d->pd, &ia);
	if (!ep->qp) {
		/* Some HCAs grant less inline data: ask for none. */
		ia.cap.max_inline_data = 0;
		ep->qp = drv->api->create_qp(d->pd, &ia);
	}
	if (!ep->qp) {
		mrail_error("verbs: %s: cannot create an RC QP: %s",
			    ep->port->name, strerror(errno));
		return MRAIL_ERR_IO;
	}
	ep->max_inline = ia.cap.max_inline_data;
	ep->sq_max = VB_SEND_BUFS + VB_RMA_DEPTH;
	a.qp_state = IBV_QPS_INIT;
	a.port_num = ep->port->num;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_WRITE;
	if (drv->api->modify_qp(ep->qp, &a,
				IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		mrail_error("verbs: %s: RC QP to INIT failed", ep->port->name);
		return MRAIL_ERR_IO;
	}
	for (int i = 0; i < VB_SEND_BUFS; i++) {
		ep->swr[i] = (struct vb_wr){VB_WR_SEND, i, ep, NULL, NULL};
		ep->sfree[i] = VB_SEND_BUFS - 1 - i;
	}
	ep->nsfree = VB_SEND_BUFS;
	for (int i = 0; i < VB_RECV_DEPTH; i++) {
		ep->rwr[i] = (struct vb_wr){VB_WR_RECV, i, ep, NULL, NULL};
		if (vb_post_recv(ep, i))
			return MRAIL_ERR_IO;
	}
	getrandom(&ep->psn, sizeof ep->psn, 0);
	ep->psn &= 0xffffff;
	return 0;
}

int vb_qp_connect(struct mrail_drv_ep *ep)
{
	const struct mrail_verbs_api *api = vb_drv(ep)->api;
	struct vb_port *p = ep->port;
	struct ibv_qp_attr a = {0};
	uint8_t mtu = p->attr.active_mtu;

	if (ep->mtu && ep->mtu < mtu)
		mtu = ep->mtu;
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = (enum ibv_mtu)mtu;
	a.dest_qp_num = ep->rqpn;
	a.rq_psn = ep->rpsn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 12;
	a.ah_attr.port_num = p->num;
	a.ah_attr.dlid = ep->rlid;
	if (p->eth || !ep->rlid) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = ep->rgid;
		a.ah_attr.grh.sgid_index = (uint8_t)vb_drv(ep)->gid_index;
		a.ah_attr.grh.hop_limit = 64;
	}
	if (api->modify_qp(ep->qp, &a,
			   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				   IBV_QP_MAX_DEST_RD_ATOMIC |
				   IBV_QP_MIN_RNR_TIMER)) {
		mrail_error("verbs: %s: RC QP to RTR failed", p->name);
		return MRAIL_ERR_IO;
	}
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;   /* 4.096 us * 2^14 = 67 ms per try */
	a.retry_cnt = 7;
	a.rnr_retry = 0;  /* credits: a missing receive is a bug */
	a.sq_psn = ep->psn;
	a.max_rd_atomic = 16;
	if (api->modify_qp(ep->qp, &a,
			   IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				   IBV_QP_MAX_QP_RD_ATOMIC)) {
		mrail_error("verbs: %s: RC QP to RTS failed", p->name);
		return MRAIL_ERR_IO;
	}
	return 0;
}

void vb_ep_destroy(struct mrail_drv_ep *ep)
{
	const struct mrail_verbs_api *api = vb_drv(ep)->api;

	vb_ep_drop_pending(ep);
	if (ep->qp)
		api->destroy_qp(ep->qp);
	vb_ep_free_dead(ep);
	if (ep->ah)
		api->destroy_ah(ep->ah);
	if (ep->mr)
		api->dereg_mr(ep->mr);
	free(ep->buf);
	free(ep);
}

static int vb_connect(struct mrail_drv *drv, const char *local,
		      const void *addr, size_t addr_len, void *ep_ctx,
		      struct mrail_drv_ep **out)
{
	const uint8_t *b = addr;
	struct mrail_drv_ep *ep;
	struct vb_port *p;
	int rc;

	if (!drv || !out)
		return MRAIL_ERR_INVALID;
	if (!b || addr_len != VB_BLOB_LEN || memcmp(b, "MRVA", 4) ||
	    b[4] != VB_BLOB_VERSION || (b[5] != 1 && b[5] != 2)) {
		mrail_error("verbs: peer address of %zu bytes is not a verbs "
			    "address of version %u",
			    addr_len, VB_BLOB_VERSION);
		return MRAIL_ERR_INVALID;
	}
	p = port_named(drv, local);
	if (!p) {
		mrail_error("verbs: cannot connect from '%s': not an active "
			    "port of this host",
			    local);
		return MRAIL_ERR_NOT_FOUND;
	}
	if ((b[5] == 2) != p->eth) {
		mrail_error("verbs: cannot connect %s (%s) to a %s port",
			    p->name, p->eth ? "RoCE" : "InfiniBand",
			    b[5] == 2 ? "RoCE" : "InfiniBand");
		return MRAIL_ERR_INVALID;
	}
	rc = vb_listener_open(p);
	if (rc)
		return rc;
	ep = calloc(1, sizeof *ep);
	if (!ep)
		return MRAIL_ERR_NOMEM;
	ep->dc.drv = &drv->dc; /* set-up needs it; listed once set up */
	ep->port = p;
	ep->rlid = (uint16_t)(b[8] | b[9] << 8);
	ep->rud_qpn = vb_get32(b + 12);
	memcpy(ep->rgid.raw, b + 16, 16);
	ep->rdev = b[7];
	ep->req_id = ++drv->next_req_id;
	rc = vb_ep_setup(ep);
	if (rc == 0) {
		ep->ah = vb_ah_create(p, &ep->rgid, ep->rlid);
		if (!ep->ah)
			rc = MRAIL_ERR_IO;
	}
	if (rc) {
		vb_ep_destroy(ep);
		return rc;
	}
	vb_ep_add(drv, ep, DC_EP_CONNECTING, ep_ctx);
	snprintf(ep->dc.local_name, sizeof ep->dc.local_name, "%s/qp%#x", p->name,
		 ep->qp->qp_num);
	snprintf(ep->dc.remote_name, sizeof ep->dc.remote_name, "ud%#x@%s",
		 ep->rud_qpn, "peer");
	vb_cm_send(p, ep->ah, ep->rud_qpn, VB_CM_REQ, ep, 0);
	ep->tries = 1;
	ep->next_retx = mrail_now() + VB_RETX;
	vb_timer_want(drv, ep->next_retx);
	*out = ep;
	return 0;
}

/* ---- endpoint operations ----------------------------------------------- */

static void vb_ep_query(struct mrail_drv_ep *ep, struct mrail_drv_ep_info *info)
{
	(void)ep;
	if (info) {
		memset(info, 0, sizeof *info);
		info->fd = -1;
	}
}

static void qp_to_error(struct mrail_drv_ep *ep)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};

	/* Outstanding work requests complete (flushed) from now on. */
	if (ep->qp)
		vb_drv(ep)->api->modify_qp(ep->qp, &a, IBV_QP_STATE);
}

/* The peer learns at once (as from a CM disconnect request), not at its
 * next send's retry timeout. */
static void ep_closing(struct dc_ep *dc)
{
	struct mrail_drv_ep *ep = (struct mrail_drv_ep *)dc;

	if (ep->dc.state == DC_EP_CONNECTED && ep->established)
		vb_cm_send(ep->port, ep->ah, ep->rud_qpn, VB_CM_DISC, ep,
			   ep->rqpn);
}

static void ep_drop_ops(struct dc_ep *dc)
{
	struct mrail_drv_ep *ep = (struct mrail_drv_ep *)dc;

	vb_ep_drop_pending(ep);
	qp_to_error(ep);
}

/* Work requests still outstanding may complete into its buffers. */
static bool ep_busy(const struct dc_ep *dc)
{
	return ((const struct mrail_drv_ep *)dc)->posted > 0;
}

static void ep_free(struct dc_ep *dc)
{
	vb_ep_destroy((struct mrail_drv_ep *)dc);
}

void vb_ep_add(struct mrail_drv *drv, struct mrail_drv_ep *ep,
	       enum dc_ep_state state, void *ctx)
{
	dc_ep_add(&drv->dc, &ep->dc, -1, state, ctx);
}

void vb_ep_fail(struct mrail_drv_ep *ep, int status, bool tell_peer,
		const char *fmt, ...)
{
	char why[256];
	va_list ap;

	if (ep->dc.state != DC_EP_CONNECTED)
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	mrail_info("verbs: %s -> %s: %s", ep->dc.local_name, ep->dc.remote_name,
		   why);
	ep->dc.state = DC_EP_FAILED;
	qp_to_error(ep);
	if (tell_peer)
		vb_cm_send(ep->port, ep->ah, ep->rud_qpn, VB_CM_DISC, ep,
			   ep->rqpn);
	vb_drv(ep)->dc.base.up->ep_error(ep->dc.ctx, status, why);
	if (ep->dc.state == DC_EP_CLOSED)
		return;
	vb_ep_fail_pending(ep, status);
}

/* ---- progress ---------------------------------------------------------- */

static void dispatch(struct vb_dev *d, const struct ibv_wc *wc)
{
	struct vb_wr *w = (struct vb_wr *)(uintptr_t)wc->wr_id;

	(void)d;
	if (w->kind == VB_WR_UD_RECV || w->kind == VB_WR_UD_SEND) {
		vb_ud_completion(w->port, wc);
		return;
	}
	w->ep->posted--;
	if (w->kind != VB_WR_RECV)
		w->ep->sq_out--;
	vb_rc_completion(w->ep, w, wc);
}

static int poll_dev(struct mrail_drv *drv, struct vb_dev *d)
{
	struct ibv_wc wc[32];
	int n, total = 0;

	for (int round = 0; round < 2; round++) {
		while ((n = drv->api->poll_cq(d->cq, 32, wc)) > 0) {
			for (int i = 0; i < n; i++)
				dispatch(d, &wc[i]);
			total += n;
		}
		if (n < 0)
			mrail_error("verbs: %s: poll_cq failed", d->name);
		/* Arm, then look again: a completion between the last poll
		 * and the arming would not wake wait_fd. */
		if (round == 0)
			drv->api->req_notify_cq(d->cq, 0);
	}
	return total;
}

static void drain_events(struct mrail_drv *drv)
{
	struct epoll_event evs[16];
	int n = epoll_wait(drv->epfd, evs, 16, 0);
	uint64_t ticks;

	for (int i = 0; i < n; i++) {
		struct vb_dev *d = evs[i].data.ptr;
		struct ibv_cq *cq;
		void *cctx;
		if (!d) {
			if (read(drv->timerfd, &ticks, sizeof ticks) < 0)
				(void)0;
			drv->timer_due = 0;
			continue;
		}
		while (drv->api->get_cq_event(d->ch, &cq, &cctx) == 0)
			drv->api->ack_cq_events(cq, 1);
	}
}

static int vb_progress(struct mrail_drv *drv)
{
	struct mrail_list *pos, *tmp;
	int n = 0;
	double now, next;

	if (!drv || !dc_progress_enter(&drv->dc))
		return 0;
	drain_events(drv);
	for (int i = 0; i < drv->ndev; i++)
		n += poll_dev(drv, &drv->devs[i]);
	now = mrail_now();
	next = vb_cm_retransmit(drv, now);
again:
	dc_foreach_ep(pos, tmp, &drv->dc) {
		struct mrail_drv_ep *ep = (struct mrail_drv_ep *)dc_ep_entry(pos);
		if (ep->dc.state == DC_EP_CLOSED)
			continue;
		if (ep->dc.state == DC_EP_CONNECTED && ep->post_err) {
			int err = ep->post_err;
			ep->post_err = 0;
			vb_ep_fail(ep, MRAIL_ERR_IO, true,
				   "posting a work request failed: %s",
				   strerror(err));
			goto again; /* the list may have changed */
		}
		if (ep->dc.state == DC_EP_CONNECTED && ep->flushed) {
			vb_ep_fail(ep, MRAIL_ERR_PEER, true,
				   "the QP entered the error state (work "
				   "requests flushed)");
			goto again;
		}
		vb_ep_push(ep);
	}
	if (!isinf(next))
		vb_timer_want(drv, next);
	dc_progress_leave(&drv->dc);
	return n;
}

const struct mrail_drv_ops mrail_verbs_driver_ops = {
	.name = "verbs",
	.abi_version = MRAIL_DRV_ABI_VERSION,
	.open = vb_open,
	.close = vb_close,
	.query_caps = vb_query_caps,
	.listen = vb_listen,
	.connect = vb_connect,
	.ep_set_ctx = dc_op_ep_set_ctx,
	.send = vb_send,
	.ep_backlog = dc_op_ep_backlog,
	.progress = vb_progress,
	.wait_fd = vb_wait_fd,
	.ep_names = dc_op_ep_names,
	.ep_close = dc_op_ep_close,
	.list_rails = vb_list_rails,
	.ep_query = vb_ep_query,
	.rma = &vb_rma_ops,
};
