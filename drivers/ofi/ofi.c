/*
 * libfabric driver: rails over any libfabric provider with reliable
 * datagram endpoints (FI_EP_RDM). This file holds the instance, the
 * emulated connections (RDM has none: HELLO / ACCEPT driver messages make
 * them), the completion-queue progress loop and failure reporting; rails
 * are in ofi_rails.c, frames in ofi_frame.c, RMA in ofi_rma.c. See
 * docs/driver-ofi.md.
 *
 * Endpoint lifetime is drivers/common's (as for the TCP and fake drivers):
 * ep_close() during progress parks the endpoint until the outermost
 * progress returns, so code that made an upcall may still look at
 * ep->dc.state afterwards. Operations still posted when their endpoint
 * closes become orphans, freed by their completion (or at close).
 */
#include "drivers/ofi/ofi_internal.h"
#include "util/clock.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

const char *ofi_strerror(int fi_rc)
{
	return fi_strerror(fi_rc < 0 ? -fi_rc : fi_rc);
}

void ofi_hdr_write(uint8_t *p, const struct ofi_hdr *h)
{
	ofi_put_le32(p, OFI_MAGIC | OFI_VERSION << 24);
	p[4] = h->type;
	p[5] = h->src_rail;
	p[6] = p[7] = 0;
	ofi_put_le32(p + 8, h->dst_id);
	ofi_put_le32(p + 12, h->src_id);
	ofi_put_le32(p + 16, h->len);
	ofi_put_le32(p + 20, h->seq);
	ofi_put_le64(p + 24, h->body_len);
}

static void kick_now(struct mrail_drv *drv)
{
	uint64_t one = 1;

	if (write(drv->kickfd, &one, sizeof one) < 0 && errno != EAGAIN)
		mrail_debug("ofi: eventfd write: %s", strerror(errno));
}

void ofi_kick(struct mrail_drv *drv)
{
	/* Busy: some thread polls again at once. Idle: a thread may sleep
	 * on wait_fd (another thread posted this work): wake it. */
	if (drv->idle_rounds >= OFI_ARM_AFTER)
		kick_now(drv);
}

static void unkick(struct mrail_drv *drv)
{
	uint64_t v;

	if (!drv->busy_poll && read(drv->kickfd, &v, sizeof v) < 0 &&
	    errno != EAGAIN)
		mrail_debug("ofi: eventfd read: %s", strerror(errno));
}

/* ---- orphans ----------------------------------------------------------- */

void ofi_orphan(struct mrail_drv *drv, struct ofi_op *op)
{
	op->ep = NULL;
	op->orphan = true;
	op->orphan_next = drv->orphans;
	drv->orphans = op;
}

static void unlist(struct mrail_drv *drv, struct ofi_op *op)
{
	struct ofi_op **pp = &drv->orphans;

	while (*pp && *pp != op)
		pp = &(*pp)->orphan_next;
	if (*pp)
		*pp = op->orphan_next;
}

bool ofi_orphan_done(struct mrail_drv *drv, struct ofi_op *op)
{
	if (!op->orphan)
		return false;
	if (op->kind == OFI_OP_TX) {
		/* A send record carries two ops (head, body) and is listed
		 * by the first: freed with the last completion. */
		struct ofi_send *s = op->owner;
		if (--s->pending > 0)
			return true;
		unlist(drv, &s->op);
		ofi_mr_local_release(s->mr, s->iov_cnt + 1);
	} else {
		unlist(drv, op);
		if (op->kind == OFI_OP_RX_BODY) {
			struct ofi_body_rx *b = op->owner;
			ofi_mr_local_release(b->mr, b->cnt);
			free(b->bounce);
		}
	}
	free(op->owner);
	return true;
}

/* ---- endpoints --------------------------------------------------------- */

static void ep_free(struct dc_ep *dc)
{
	free(dc);
}

static void ep_closing(struct dc_ep *dc);
static void ep_drop_ops(struct dc_ep *dc);

static const struct dc_hooks ofi_hooks = {
	.name = "ofi",
	.ep_free = ep_free,
	.ep_closing = ep_closing,
	.ep_drop_ops = ep_drop_ops,
};

/* Address blob "MROA" (docs/driver-ofi.md). */
static const struct dc_blob_format blob_format = {
	.magic = "MROA", .version = OFI_BLOB_VERSION,
	.max_payload = OFI_ADDR_MAX, .max_rails = OFI_MAX_RAILS,
	.a_driver = "an ofi", .payload_what = "address"};

static struct mrail_drv_ep *ep_at(struct mrail_list *pos)
{
	return (struct mrail_drv_ep *)dc_ep_entry(pos);
}

static struct mrail_drv_ep *ep_new(struct ofi_rail *r, enum dc_ep_state st,
				   void *ctx)
{
	struct mrail_drv *drv = r->drv;
	struct mrail_drv_ep *ep = calloc(1, sizeof *ep);

	if (!ep)
		return NULL;
	if (drv->next_id >= OFI_ID_MAX) {
		mrail_error("ofi: connection ids exhausted (%u)", OFI_ID_MAX);
		free(ep);
		return NULL;
	}
	ep->rail = r;
	ep->id = ++drv->next_id;
	ep->peer_rail = -1;
	ep->last_heard = ep->last_sent = mrail_now();
	dc_ep_add(&drv->dc, &ep->dc, -1, st, ctx);
	return ep;
}

struct mrail_drv_ep *ofi_ep_by_id(struct ofi_rail *r, uint32_t id)
{
	struct mrail_list *pos, *tmp;

	dc_foreach_ep(pos, tmp, &r->drv->dc) {
		struct mrail_drv_ep *ep = ep_at(pos);
		if (ep->id == id && ep->rail == r &&
		    ep->dc.state != DC_EP_CLOSED)
			return ep;
	}
	return NULL;
}

void ofi_ep_fail(struct mrail_drv_ep *ep, int status, const char *fmt, ...)
{
	va_list ap;

	if (ep->dc.state == DC_EP_CLOSED || ep->dc.state == DC_EP_FAILED ||
	    ep->fail_pending)
		return;
	va_start(ap, fmt);
	vsnprintf(ep->fail_why, sizeof ep->fail_why, fmt, ap);
	va_end(ap);
	ep->fail_pending = true;
	ep->fail_status = status;
	ofi_kick(ofi_drv(ep));
}

/* From progress: the upcall for a failure ofi_ep_fail recorded. */
static void report_failure(struct mrail_drv_ep *ep)
{
	const struct mrail_drv_upcalls *up = ofi_drv(ep)->dc.base.up;
	bool was_connecting = ep->dc.state == DC_EP_CONNECTING;

	ep->fail_pending = false;
	if (ep->fail_status == MRAIL_ERR_PROTO)
		mrail_warn("ofi: %s", ep->fail_why);
	else
		mrail_info("ofi: %s", ep->fail_why);
	ep->dc.state = DC_EP_FAILED;
	ofi_rx_drop(ep);
	if (was_connecting)
		up->connected(ep->dc.ctx, MRAIL_ERR_PEER);
	else
		up->ep_error(ep->dc.ctx, ep->fail_status, ep->fail_why);
	if (ep->dc.state == DC_EP_CLOSED)
		return;
	ofi_sends_fail(ep, ep->fail_status);
	ofi_rma_fail(ep, ep->fail_status);
}

/* ---- control messages -------------------------------------------------- */

static void send_refuse(struct ofi_rail *r, fi_addr_t fa, uint32_t to)
{
	struct ofi_hdr h = {.type = OFI_REFUSE, .src_rail = (uint8_t)r->index,
			    .dst_id = to};
	ofi_send_loose(r, fa, &h, NULL, 0);
}

static void on_hello(struct ofi_rail *r, const struct ofi_hdr *h,
		     const uint8_t *payload)
{
	struct mrail_drv *drv = r->drv;
	struct mrail_drv_ep *ep;
	struct ofi_hdr ack = {.type = OFI_ACCEPT,
			      .src_rail = (uint8_t)r->index};
	uint8_t pid[4];
	fi_addr_t fa;
	char straddr[80];
	size_t slen = sizeof straddr;
	void *ctx;

	if (h->len < 5 || h->len - 4 > OFI_ADDR_MAX) {
		mrail_warn("ofi: %s: HELLO with a %u-byte payload (expected "
			   "a pid and an address of at most %d bytes): dropped",
			   r->printable, h->len, OFI_ADDR_MAX);
		return;
	}
	if (ofi_rail_peer(r, payload + 4, h->len - 4, &fa) < 0)
		return;
	ep = ep_new(r, DC_EP_CONNECTED, NULL);
	if (!ep) {
		send_refuse(r, fa, h->src_id);
		return;
	}
	ep->peer = fa;
	ep->peer_id = h->src_id;
	ep->peer_rail = h->src_rail;
	ep->peer_pid = (pid_t)ofi_get_le32(payload);
	straddr[0] = 0;
	fi_av_straddr(r->av, payload + 4, straddr, &slen);
	snprintf(ep->dc.local_name, sizeof ep->dc.local_name, "%s#%u", r->printable,
		 ep->id);
	snprintf(ep->dc.remote_name, sizeof ep->dc.remote_name, "%s#%u (pid %d)",
		 straddr, ep->peer_id, (int)ep->peer_pid);
	/* ACCEPT leaves before anything the engine sends from the upcall. */
	ack.dst_id = ep->peer_id;
	ack.src_id = ep->id;
	ofi_put_le32(pid, (uint32_t)getpid());
	ep->tx_hold = true;
	if (ofi_send_internal(ep, &ack, pid, sizeof pid) < 0) {
		send_refuse(r, fa, h->src_id);
		ep->dc.state = DC_EP_FAILED; /* no CLOSE: REFUSE said it */
		dc_ep_close(&ep->dc);
		return;
	}
	ctx = drv->dc.base.up->accepted(drv->dc.base.engine_ctx, ep);
	if (ep->dc.state == DC_EP_CLOSED)
		return;
	ep->tx_hold = false;
	if (!ctx) {
		send_refuse(r, fa, h->src_id);
		ep->dc.state = DC_EP_FAILED; /* no CLOSE: REFUSE said it */
		dc_ep_close(&ep->dc);
		return;
	}
	ep->dc.ctx = ctx;
	ofi_sq_flush(ep);
}

static void on_accept(struct mrail_drv_ep *ep, const struct ofi_hdr *h,
		      const uint8_t *payload)
{
	if (ep->dc.state != DC_EP_CONNECTING || ep->fail_pending)
		return;
	ep->peer_id = h->src_id;
	ep->peer_rail = h->src_rail;
	ep->peer_pid = h->len >= 4 ? (pid_t)ofi_get_le32(payload) : 0;
	ep->dc.state = DC_EP_CONNECTED;
	snprintf(ep->dc.remote_name + strlen(ep->dc.remote_name),
		 sizeof ep->dc.remote_name - strlen(ep->dc.remote_name),
		 "#%u (pid %d)", ep->peer_id, (int)ep->peer_pid);
	mrail_debug("ofi: connected %s -> %s", ep->dc.local_name, ep->dc.remote_name);
	ofi_drv(ep)->dc.base.up->connected(ep->dc.ctx, 0);
	if (ep->dc.state == DC_EP_CONNECTED)
		ofi_sq_flush(ep);
	if (ep->dc.state == DC_EP_CONNECTED)
		ofi_run_held(ep);
}

void ofi_handle_control(struct ofi_rail *r, const struct ofi_hdr *h,
			const uint8_t *payload)
{
	struct mrail_drv_ep *ep;

	if (h->type == OFI_HELLO) {
		on_hello(r, h, payload);
		return;
	}
	ep = ofi_ep_by_id(r, h->dst_id);
	if (!ep) {
		mrail_debug("ofi: %s: message type %u for connection #%u, "
			    "which is gone: dropped",
			    r->printable, h->type, h->dst_id);
		return;
	}
	ep->last_heard = mrail_now();
	switch (h->type) {
	case OFI_ACCEPT:
		on_accept(ep, h, payload);
		break;
	case OFI_REFUSE:
		if (ep->dc.state == DC_EP_CONNECTING)
			ofi_ep_fail(ep, MRAIL_ERR_PEER,
				    "%s refused the connection from %s",
				    ep->dc.remote_name, ep->dc.local_name);
		break;
	case OFI_CLOSE:
		if (ep->dc.state == DC_EP_CONNECTED && h->src_id == ep->peer_id)
			ofi_ep_fail(ep, MRAIL_ERR_PEER,
				    "connection closed by peer %s",
				    ep->dc.remote_name);
		break;
	default: /* PING: hearing it was the point */
		break;
	}
}

/* ---- instance ---------------------------------------------------------- */

static void ofi_close(struct mrail_drv *drv);

static int add_fd(struct mrail_drv *drv, int fd)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};

	if (epoll_ctl(drv->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		mrail_error("ofi: epoll_ctl: %s", strerror(errno));
		return MRAIL_ERR_IO;
	}
	return 0;
}

static int ofi_open(const struct mrail_drv_open_args *args,
		    struct mrail_drv **out)
{
	struct itimerspec its = {0};
	struct mrail_drv *drv;
	int rc;

	if (!args || !args->upcalls || !out)
		return MRAIL_ERR_INVALID;
	if ((rc = ofi_lib_load()))
		return rc;
	drv = calloc(1, sizeof *drv);
	if (!drv)
		return MRAIL_ERR_NOMEM;
	drv->epfd = drv->kickfd = drv->timerfd = -1;
	rc = ofi_params_parse(args->params, &drv->par);
	if (rc < 0) {
		free(drv);
		return rc;
	}
	dc_drv_init(&drv->dc, &ofi_hooks, &mrail_ofi_driver_ops, args);
	drv->mr_next_key = 1;
	drv->epfd = epoll_create1(EPOLL_CLOEXEC);
	drv->kickfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	drv->timerfd = timerfd_create(CLOCK_MONOTONIC,
				      TFD_NONBLOCK | TFD_CLOEXEC);
	if (drv->epfd < 0 || drv->kickfd < 0 || drv->timerfd < 0 ||
	    add_fd(drv, drv->kickfd) || add_fd(drv, drv->timerfd)) {
		mrail_error("ofi: epoll/eventfd/timerfd set-up: %s",
			    strerror(errno));
		ofi_close(drv);
		return MRAIL_ERR_IO;
	}
	/* Pings detect dead peers while the engine sleeps on wait_fd. */
	its.it_value.tv_nsec = its.it_interval.tv_nsec =
		(long)(OFI_PING_INTERVAL * 1e9);
	timerfd_settime(drv->timerfd, 0, &its, NULL);
	rc = ofi_rails_discover(drv);
	if (rc < 0) {
		ofi_close(drv);
		return rc;
	}
	*out = drv;
	return 0;
}

static void ofi_close(struct mrail_drv *drv)
{
	if (!drv)
		return;
	dc_drv_fini(&drv->dc);
	/* Closing the endpoints stops every operation: orphans go now. */
	for (int i = 0; i < drv->nrails; i++)
		if (drv->rails[i].ep) {
			fi_close(&drv->rails[i].ep->fid);
			drv->rails[i].ep = NULL;
		}
	while (drv->orphans) {
		struct ofi_op *op = drv->orphans;
		if (op->kind == OFI_OP_TX)
			((struct ofi_send *)op->owner)->pending = 1;
		ofi_orphan_done(drv, op);
	}
	for (int i = 0; i < drv->nrails; i++)
		ofi_rail_fini(&drv->rails[i]);
	if (drv->epfd >= 0)
		close(drv->epfd);
	if (drv->kickfd >= 0)
		close(drv->kickfd);
	if (drv->timerfd >= 0)
		close(drv->timerfd);
	free(drv);
}

static void ofi_query_caps(struct mrail_drv *drv, struct mrail_drv_caps *caps)
{
	bool rma = drv && drv->nrails > 0, local = false;
	int iov = OFI_MAX_BODY_IOV;
	uint64_t body = OFI_MAX_BODY;

	for (int i = 0; drv && i < drv->nrails; i++) {
		const struct fi_info *fi = drv->rails[i].info;
		rma = rma && drv->rails[i].rma;
		local = local || drv->rails[i].mr_local;
		if (fi->tx_attr->iov_limit && (int)fi->tx_attr->iov_limit < iov)
			iov = (int)fi->tx_attr->iov_limit;
		if (fi->rx_attr->iov_limit && (int)fi->rx_attr->iov_limit < iov)
			iov = (int)fi->rx_attr->iov_limit;
		if (fi->ep_attr->max_msg_size &&
		    fi->ep_attr->max_msg_size < body)
			body = fi->ep_attr->max_msg_size;
	}
	/* RMA keys of at most OFI_RKEY_MAX_KEYS rails fit a packed key. */
	if (drv && drv->nrails > OFI_RKEY_MAX_KEYS)
		rma = false;
	memset(caps, 0, sizeof *caps);
	caps->max_head = OFI_MAX_HEAD;
	caps->max_body = body;
	caps->max_body_iov = iov;
	caps->eager_max_hint = OFI_EAGER_MAX_HINT;
	caps->flags = MRAIL_DRV_CAP_RECV_INTO_USER;
	if (rma)
		caps->flags |= MRAIL_DRV_CAP_RDMA_READ |
			       MRAIL_DRV_CAP_RDMA_WRITE |
			       MRAIL_DRV_CAP_NEEDS_REG;
	caps->max_rma = rma ? OFI_MAX_RMA : 0;
	(void)local;
}

static int ofi_list_rails(struct mrail_drv *drv,
			  struct mrail_drv_rail_desc *out, int max)
{
	int n = 0;

	if (!drv || (max > 0 && !out))
		return MRAIL_ERR_INVALID;
	for (; n < drv->nrails && n < max; n++) {
		const struct ofi_rail *r = &drv->rails[n];
		struct mrail_drv_rail_desc *d = &out[n];
		memset(d, 0, sizeof *d);
		snprintf(d->name, sizeof d->name, "%s", r->name);
		/* Socket providers name domains after interfaces. */
		if (r->info->addr_format == FI_SOCKADDR_IN ||
		    r->info->addr_format == FI_SOCKADDR_IN6)
			snprintf(d->ifname, sizeof d->ifname, "%.15s", r->name);
		snprintf(d->fabric, sizeof d->fabric, "%s", r->fabric_name);
		snprintf(d->listen, sizeof d->listen, "%s", r->name);
		d->scope = r->scope;
		d->numa_node = r->info->nic && r->info->nic->bus_attr ? -1 : -1;
	}
	return n;
}

static int ofi_wait_fd(struct mrail_drv *drv)
{
	return drv ? drv->epfd : -1;
}

/* ---- listen / connect -------------------------------------------------- */

static struct ofi_rail *rail_named(struct mrail_drv *drv, const char *local)
{
	if (!local || !*local)
		return drv->nrails ? &drv->rails[0] : NULL;
	for (int i = 0; i < drv->nrails; i++)
		if (!strcmp(drv->rails[i].name, local))
			return &drv->rails[i];
	return NULL;
}

static int rail_bring_up(struct mrail_drv *drv, struct ofi_rail *r)
{
	int rc;

	if (r->up)
		return 0;
	rc = ofi_rail_up(r);
	if (rc)
		return rc;
	if (r->cq_fd >= 0) {
		rc = add_fd(drv, r->cq_fd);
		if (rc)
			return rc;
	} else if (!drv->busy_poll) {
		drv->busy_poll = true;
		kick_now(drv); /* never drained: wait_fd stays readable */
	}
	return 0;
}

static void rail_names(struct mrail_drv *drv, char *list, size_t cap)
{
	size_t used = 0;

	list[0] = 0;
	for (int i = 0; i < drv->nrails && used < cap; i++)
		used += (size_t)snprintf(list + used, cap - used, "%s%s",
					 i ? ", " : "", drv->rails[i].name);
}

static int ofi_listen(struct mrail_drv *drv, const char *local, void *addr,
		      size_t *addr_len, char *name, size_t name_len)
{
	struct ofi_rail *r;
	char str[80];
	size_t slen = sizeof str;
	int rc;

	if (!drv || !addr || !addr_len)
		return MRAIL_ERR_INVALID;
	r = rail_named(drv, local);
	if (!r) {
		char list[256];
		rail_names(drv, list, sizeof list);
		mrail_error("ofi: cannot listen on '%s': not a domain of "
			    "provider %s here (%s)",
			    local, drv->par.provider, list);
		return MRAIL_ERR_NOT_FOUND;
	}
	rc = rail_bring_up(drv, r);
	if (rc)
		return rc;
	rc = dc_blob_encode(&drv->dc, &blob_format, r->index, r->addr,
			    r->addr_len, addr, addr_len);
	if (rc < 0)
		return rc;
	str[0] = 0;
	fi_av_straddr(r->av, r->addr, str, &slen);
	if (name && name_len)
		snprintf(name, name_len, "%s@%s", r->printable, str);
	mrail_debug("ofi: listening on %s@%s", r->printable, str);
	return r->index;
}

static int ofi_connect(struct mrail_drv *drv, const char *local,
		       const void *addr, size_t addr_len, void *ep_ctx,
		       struct mrail_drv_ep **out)
{
	struct ofi_hdr h = {.type = OFI_HELLO};
	struct mrail_drv_ep *ep;
	struct ofi_rail *r;
	const uint8_t *a;
	uint8_t payload[4 + OFI_ADDR_MAX];
	char str[80];
	size_t alen, slen = sizeof str;
	fi_addr_t fa;
	int rail, rc;

	if (!drv || !out)
		return MRAIL_ERR_INVALID;
	rc = dc_blob_decode(&drv->dc, &blob_format, addr, addr_len, &rail, &a,
			    &alen);
	if (rc < 0)
		return rc;
	r = rail_named(drv, local);
	if (!r) {
		mrail_error("ofi: cannot connect from '%s': not a domain of "
			    "provider %s here",
			    local, drv->par.provider);
		return MRAIL_ERR_NOT_FOUND;
	}
	rc = rail_bring_up(drv, r);
	if (rc)
		return rc;
	rc = ofi_rail_peer(r, a, alen, &fa);
	if (rc)
		return rc;
	ep = ep_new(r, DC_EP_CONNECTING, ep_ctx);
	if (!ep)
		return MRAIL_ERR_NOMEM;
	ep->peer = fa;
	ep->peer_rail = rail;
	str[0] = 0;
	fi_av_straddr(r->av, a, str, &slen);
	snprintf(ep->dc.local_name, sizeof ep->dc.local_name, "%s#%u", r->printable,
		 ep->id);
	snprintf(ep->dc.remote_name, sizeof ep->dc.remote_name, "%s", str);
	h.src_rail = (uint8_t)r->index;
	h.src_id = ep->id;
	ofi_put_le32(payload, (uint32_t)getpid());
	memcpy(payload + 4, r->addr, r->addr_len);
	rc = ofi_send_internal(ep, &h, payload, 4 + r->addr_len);
	if (rc < 0) {
		dc_ep_close(&ep->dc);
		return rc;
	}
	*out = ep;
	return 0;
}

/* ---- endpoint operations ----------------------------------------------- */

static void ofi_ep_query(struct mrail_drv_ep *ep,
			 struct mrail_drv_ep_info *info)
{
	(void)ep;
	if (!info)
		return;
	memset(info, 0, sizeof *info); /* no socket of ours */
	info->fd = -1;
}

/* Tell the peer (its requests fail at once rather than at its next
 * ping). */
static void ep_closing(struct dc_ep *dc)
{
	struct mrail_drv_ep *ep = (struct mrail_drv_ep *)dc;

	/* shm maps peers of this process through one shared table: a
	 * closed instance's region is gone, never write to it. */
	if (ep->dc.state == DC_EP_CONNECTED && ep->rail->up &&
	    !(ep->rail->scope == MRAIL_DRV_SCOPE_HOST &&
	      ep->peer_pid == getpid() &&
	      strstr(ep->rail->info->fabric_attr->prov_name, "shm"))) {
		struct ofi_hdr h = {.type = OFI_CLOSE,
				    .src_rail = (uint8_t)ep->rail->index,
				    .dst_id = ep->peer_id,
				    .src_id = ep->id,
				    .seq = ep->tx_seq}; /* after posted frames */
		ofi_send_loose(ep->rail, ep->peer, &h, NULL, 0);
	}
}

static void ep_drop_ops(struct dc_ep *dc)
{
	struct mrail_drv_ep *ep = (struct mrail_drv_ep *)dc;

	ofi_sends_drop(ep);
	ofi_rx_drop(ep);
	ofi_rma_drop(ep);
}

/* ---- progress ---------------------------------------------------------- */

static void complete(struct mrail_drv *drv, struct ofi_op *op, size_t len,
		     int status)
{
	if (ofi_orphan_done(drv, op))
		return;
	switch (op->kind) {
	case OFI_OP_RX_HEAD:
		if (status == 0) {
			ofi_rx_head_complete((struct ofi_rx *)op, len);
		} else {
			if (status != -FI_ECANCELED)
				mrail_warn("ofi: %s: head receive failed: %s",
					   op->rail->printable,
					   ofi_strerror(status));
			if (op->rail->ep)
				ofi_rx_post(op->rail, (struct ofi_rx *)op);
		}
		break;
	case OFI_OP_TX:
		ofi_tx_complete(op, status);
		break;
	case OFI_OP_RX_BODY:
		ofi_rx_body_complete(op->ep, len, status);
		break;
	case OFI_OP_RMA:
		ofi_rma_complete((struct ofi_rma_op *)op, status);
		break;
	}
}

static int poll_cq(struct ofi_rail *r)
{
	struct fi_cq_tagged_entry ent[OFI_CQ_BATCH];
	int n = 0;

	for (int round = 0; round < 4; round++) {
		ssize_t got = fi_cq_read(r->cq, ent, OFI_CQ_BATCH);
		if (got == -FI_EAGAIN)
			break;
		if (got == -FI_EAVAIL) {
			struct fi_cq_err_entry err = {0};
			if (fi_cq_readerr(r->cq, &err, 0) != 1)
				break;
			if (err.err != FI_ECANCELED)
				mrail_debug("ofi: %s: completion error: %s "
					    "(%s)",
					    r->printable, fi_strerror(err.err),
					    fi_cq_strerror(r->cq,
							   err.prov_errno,
							   err.err_data, NULL,
							   0));
			if (err.op_context)
				complete(r->drv, err.op_context, err.len,
					 -err.err);
			n++;
			continue;
		}
		if (got < 0) {
			mrail_error("ofi: %s: fi_cq_read: %s", r->printable,
				    ofi_strerror((int)got));
			break;
		}
		for (ssize_t i = 0; i < got; i++)
			if (ent[i].op_context)
				complete(r->drv, ent[i].op_context, ent[i].len,
					 0);
		n += (int)got;
		if (got < OFI_CQ_BATCH)
			break;
	}
	return n;
}

/* A host-scope peer process is gone: kill(pid, 0) alone is not enough,
 * since an exited child of ours (or of a launcher that has not reaped it
 * yet) is a zombie that still "exists". */
static bool pid_dead(pid_t pid)
{
	char path[64], buf[256];
	const char *rp;
	ssize_t n;
	int fd;

	if (kill(pid, 0) < 0 && errno == ESRCH)
		return true;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	/* "pid (comm) S ...": comm may hold ')' itself, so the last one. */
	rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
}

static void ping_scan(struct mrail_drv *drv, double now)
{
	if (now - drv->last_ping_scan < OFI_PING_INTERVAL)
		return;
	drv->last_ping_scan = now;
	struct mrail_list *pos, *tmp;

	dc_foreach_ep(pos, tmp, &drv->dc) {
		struct mrail_drv_ep *ep = ep_at(pos);
		struct ofi_hdr h = {.type = OFI_PING};
		if (ep->dc.state != DC_EP_CONNECTED || ep->fail_pending)
			continue;
		/* Same host: a dead process is seen at once. */
		if (ep->rail->scope == MRAIL_DRV_SCOPE_HOST &&
		    ep->peer_pid > 0 && pid_dead(ep->peer_pid)) {
			ofi_ep_fail(ep, MRAIL_ERR_PEER,
				    "peer process %d of %s died",
				    (int)ep->peer_pid, ep->dc.remote_name);
			continue;
		}
		/* Otherwise a message to a dead peer fails (tcp: reset). */
		if (now - ep->last_heard < OFI_PING_INTERVAL ||
		    now - ep->last_sent < OFI_PING_INTERVAL || ep->sq_head)
			continue;
		h.src_rail = (uint8_t)ep->rail->index;
		h.dst_id = ep->peer_id;
		h.src_id = ep->id;
		ofi_send_internal(ep, &h, NULL, 0);
	}
}

static void drain_fds(struct mrail_drv *drv)
{
	struct epoll_event ev[8];
	uint64_t v;
	int n = epoll_wait(drv->epfd, ev, 8, 0);

	for (int i = 0; i < n; i++)
		if (ev[i].data.fd == drv->kickfd)
			unkick(drv);
		else if (ev[i].data.fd == drv->timerfd &&
			 read(drv->timerfd, &v, sizeof v) < 0 && errno != EAGAIN)
			mrail_debug("ofi: timerfd read: %s", strerror(errno));
}

/* Arm the CQ fds before the engine sleeps on wait_fd: if a CQ already
 * holds events, keep wait_fd readable instead. */
static void arm_wait(struct mrail_drv *drv)
{
	for (int i = 0; i < drv->nrails; i++) {
		struct ofi_rail *r = &drv->rails[i];
		struct fid *f;
		if (!r->up || r->cq_fd < 0)
			continue;
		f = &r->cq->fid;
		if (fi_trywait(r->fabric, &f, 1) == -FI_EAGAIN) {
			kick_now(drv);
			return;
		}
	}
}

static int ofi_progress(struct mrail_drv *drv)
{
	struct mrail_list *pos, *tmp;
	double now;
	int n = 0;

	if (!drv || !dc_progress_enter(&drv->dc))
		return 0;
	if (drv->idle_rounds >= OFI_ARM_AFTER)
		drain_fds(drv); /* we may have slept on them */
	for (int i = 0; i < drv->nrails; i++)
		if (drv->rails[i].up)
			n += poll_cq(&drv->rails[i]);
	for (int i = 0; i < drv->nrails; i++)
		if (drv->rails[i].nrepost)
			ofi_rx_repost_pending(&drv->rails[i]);
	dc_foreach_ep(pos, tmp, &drv->dc) {
		struct mrail_drv_ep *ep = ep_at(pos);
		if (ep->dc.state == DC_EP_CLOSED)
			continue;
		if (ep->fail_pending) {
			report_failure(ep);
			n++;
			continue;
		}
		if (ep->sq_head && (ep->dc.state == DC_EP_CONNECTED ||
				    ep->dc.state == DC_EP_CONNECTING))
			ofi_sq_flush(ep); /* HELLO while connecting */
		if (ep->dc.state != DC_EP_CONNECTED)
			continue;
		if (ep->rq_head)
			ofi_rma_flush(ep);
		if (ep->body && ep->body->post_again)
			ofi_body_repost(ep);
	}
	n += ofi_run_done(drv);
	now = mrail_now();
	ping_scan(drv, now);
	if (n > 0)
		drv->idle_rounds = 0;
	else if (++drv->idle_rounds >= OFI_ARM_AFTER)
		arm_wait(drv); /* before every round that may precede a sleep */
	dc_progress_leave(&drv->dc);
	return n;
}

const struct mrail_drv_ops mrail_ofi_driver_ops = {
	.name = "ofi",
	.abi_version = MRAIL_DRV_ABI_VERSION,
	.open = ofi_open,
	.close = ofi_close,
	.query_caps = ofi_query_caps,
	.listen = ofi_listen,
	.connect = ofi_connect,
	.ep_set_ctx = dc_op_ep_set_ctx,
	.send = ofi_send,
	.ep_backlog = ofi_ep_backlog,
	.progress = ofi_progress,
	.wait_fd = ofi_wait_fd,
	.ep_names = dc_op_ep_names,
	.ep_close = dc_op_ep_close,
	.list_rails = ofi_list_rails,
	.ep_query = ofi_ep_query,
	.rma = &ofi_rma_ops,
};
