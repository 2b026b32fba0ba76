/*
 * drivers/common: the endpoint registry. Lifetime rule that makes
 * re-entrant upcalls safe: ep_close() called while progress() runs only
 * marks the endpoint closed and parks it on drv->zombies (still in
 * drv->eps, so a walk of the endpoints stays valid); the memory is freed
 * when the outermost progress() returns, so code that made an upcall may
 * still look at ep->state afterwards. An endpoint the driver says is
 * still busy (hooks->ep_busy: verbs work requests outstanding) stays
 * parked until a later progress finds it idle.
 */
#include "drivers/common/dc.h"
#include "util/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void dc_drv_init(struct dc_drv *drv, const struct dc_hooks *hooks,
		 const struct mrail_drv_ops *ops,
		 const struct mrail_drv_open_args *args)
{
	mrail_drv_base_init(&drv->base, ops, args);
	drv->hooks = hooks;
	drv->epfd = -1;
	mrail_list_init(&drv->eps);
}

static bool ep_busy(const struct dc_ep *ep)
{
	return ep->drv->hooks->ep_busy && ep->drv->hooks->ep_busy(ep);
}

/* all: busy ones too (the instance closes). */
static void free_zombies(struct dc_drv *drv, bool all)
{
	struct dc_ep **pp = &drv->zombies;

	while (*pp) {
		struct dc_ep *ep = *pp;
		if (!all && ep_busy(ep)) {
			pp = &ep->zombie_next;
			continue;
		}
		*pp = ep->zombie_next;
		mrail_list_remove(&ep->link);
		drv->hooks->ep_free(ep);
	}
}

void dc_drv_fini(struct dc_drv *drv)
{
	struct mrail_list *pos, *tmp;

	dc_foreach_ep(pos, tmp, drv)
		dc_ep_close(dc_ep_entry(pos));
	free_zombies(drv, true);
	for (int i = 0; i < drv->nlisteners; i++) {
		close(drv->listeners[i]->poll.fd);
		free(drv->listeners[i]);
	}
	free(drv->listeners);
	drv->listeners = NULL;
	drv->nlisteners = 0;
	while (drv->send_pool) {
		struct dc_send *rec = drv->send_pool;
		drv->send_pool = rec->next;
		free(rec);
	}
	drv->send_pool_cnt = 0;
	if (drv->epfd >= 0)
		close(drv->epfd);
	drv->epfd = -1;
}

void dc_ep_add(struct dc_drv *drv, struct dc_ep *ep, int fd,
	       enum dc_ep_state state, void *ctx)
{
	ep->poll.kind = DC_OBJ_EP;
	ep->poll.fd = fd;
	ep->drv = drv;
	ep->ctx = ctx;
	ep->state = state;
	/* Newest first, as progress has always walked them. */
	mrail_list_insert_before(drv->eps.next, &ep->link);
}

void dc_ep_need_attention(struct dc_ep *ep)
{
	if (ep->needs_attention)
		return;
	ep->needs_attention = true;
	ep->attention_next = ep->drv->attention;
	ep->drv->attention = ep;
	if (ep->drv->hooks->wake)
		ep->drv->hooks->wake(ep->drv);
}

static void forget_attention(struct dc_ep *ep)
{
	struct dc_ep **pp = &ep->drv->attention;

	if (!ep->needs_attention)
		return;
	while (*pp && *pp != ep)
		pp = &(*pp)->attention_next;
	if (*pp)
		*pp = ep->attention_next;
	ep->needs_attention = false;
	ep->attention_next = NULL;
}

int dc_attend(struct dc_drv *drv)
{
	int n = 0;

	while (drv->attention) {
		struct dc_ep *ep = drv->attention;
		drv->attention = ep->attention_next;
		ep->attention_next = NULL;
		ep->needs_attention = false;
		drv->hooks->ep_attend(ep);
		n++;
	}
	return n;
}

void dc_ep_accepted(struct dc_ep *ep)
{
	struct dc_drv *drv = ep->drv;
	void *ctx = drv->base.up->accepted(drv->base.engine_ctx,
					   (struct mrail_drv_ep *)ep);

	if (ep->state == DC_EP_CLOSED)
		return;
	if (!ctx) {
		dc_ep_close(ep);
		return;
	}
	ep->ctx = ctx;
}

void dc_ep_fail(struct dc_ep *ep, int status, bool sends_first,
		const char *fmt, ...)
{
	const struct dc_hooks *h = ep->drv->hooks;
	char why[256];
	va_list ap;

	if (ep->state != DC_EP_CONNECTED)
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	if (status == MRAIL_ERR_PROTO)
		mrail_warn("%s: %s", h->name, why);
	else
		mrail_info("%s: %s", h->name, why);

	ep->state = DC_EP_FAILED;
	dc_ep_update_events(ep); /* stop reading and writing */
	if (h->ep_stop)
		h->ep_stop(ep);
	if (sends_first)
		dc_sendq_fail(ep, status);
	/* Frames that did leave are reported before the error. */
	dc_report_done_of(ep);
	if (ep->state == DC_EP_CLOSED)
		return;
	ep->drv->base.up->ep_error(ep->ctx, status, why);
	if (ep->state == DC_EP_CLOSED)
		return;
	dc_sendq_fail(ep, status);
	if (h->ep_fail_ops)
		h->ep_fail_ops(ep, status);
}

static struct dc_connect_err *connect_err_find(struct dc_drv *drv,
						const struct dc_ep *ep)
{
	for (unsigned i = 0; i < DC_CONNECT_ERRS; i++) {
		struct dc_connect_err *c = &drv->connect_errs[i];
		if (c->err && !strcmp(c->from, ep->local_name) &&
		    !strcmp(c->to, ep->remote_name))
			return c;
	}
	return NULL;
}

static void connect_err_log(struct dc_ep *ep, int err)
{
	struct dc_drv *drv = ep->drv;
	const char *name = drv->hooks->name;
	struct dc_connect_err *c = connect_err_find(drv, ep);
	if (c && c->err == err) {
		mrail_debug("%s: connect from %s to %s failed again: %s", name,
			    ep->local_name, ep->remote_name, strerror(err));
		return;
	}
	mrail_warn("%s: connect from %s to %s failed: %s%s", name,
		   ep->local_name, ep->remote_name, strerror(err),
		   c ? "" : " (retries failing the same way are not logged)");
	if (!c) {
		c = &drv->connect_errs[drv->connect_errs_next++ %
				       DC_CONNECT_ERRS];
		snprintf(c->from, sizeof c->from, "%s", ep->local_name);
		snprintf(c->to, sizeof c->to, "%s", ep->remote_name);
	}
	c->err = err;
}

void dc_ep_connect_ok(struct dc_ep *ep)
{
	struct dc_connect_err *c = connect_err_find(ep->drv, ep);
	if (!c)
		return;
	mrail_info("%s: connect from %s to %s works again",
		   ep->drv->hooks->name, ep->local_name, ep->remote_name);
	c->err = 0;
}

void dc_ep_connect_failed(struct dc_ep *ep, int err)
{
	const struct dc_hooks *h = ep->drv->hooks;

	connect_err_log(ep, err);
	ep->state = DC_EP_FAILED;
	dc_ep_update_events(ep);
	/* Nobody listens: the peer process is gone, not a link (the engine
	 * fails the peer at once rather than after the rail timeout). */
	ep->drv->base.up->connected(ep->ctx, err == ECONNREFUSED
						     ? MRAIL_ERR_PEER_CLOSED
						     : MRAIL_ERR_PEER);
	if (ep->state == DC_EP_CLOSED)
		return;
	dc_sendq_fail(ep, MRAIL_ERR_PEER);
	if (h->ep_fail_ops)
		h->ep_fail_ops(ep, MRAIL_ERR_PEER);
}

void dc_ep_close(struct dc_ep *ep)
{
	struct dc_drv *drv;

	if (!ep || ep->state == DC_EP_CLOSED)
		return;
	drv = ep->drv;
	if (drv->hooks->ep_closing)
		drv->hooks->ep_closing(ep);
	ep->state = DC_EP_CLOSED;
	/* Explicit removal from epoll: a forked child may share the
	 * socket, and then close() alone would leave it registered. */
	dc_ep_update_events(ep);
	if (ep->poll.fd >= 0)
		close(ep->poll.fd);
	ep->poll.fd = -1;
	dc_sendq_drop(ep);
	dc_drop_done_of(ep);
	if (drv->hooks->ep_drop_ops)
		drv->hooks->ep_drop_ops(ep);
	forget_attention(ep);
	if (drv->progress_depth > 0 || ep_busy(ep)) {
		ep->zombie_next = drv->zombies;
		drv->zombies = ep;
	} else {
		mrail_list_remove(&ep->link);
		drv->hooks->ep_free(ep);
	}
}

void dc_free_idle_zombies(struct dc_drv *drv)
{
	free_zombies(drv, false);
}

void dc_op_ep_set_ctx(struct mrail_drv_ep *ep, void *ep_ctx)
{
	if (ep)
		dc_ep_of(ep)->ctx = ep_ctx;
}

void dc_op_ep_names(struct mrail_drv_ep *ep, char *local, size_t llen,
		    char *remote, size_t rlen)
{
	if (local && llen)
		snprintf(local, llen, "%s", ep ? dc_ep_of(ep)->local_name : "?");
	if (remote && rlen)
		snprintf(remote, rlen, "%s",
			 ep ? dc_ep_of(ep)->remote_name : "?");
}

uint64_t dc_op_ep_backlog(struct mrail_drv_ep *ep)
{
	return ep ? dc_ep_of(ep)->backlog : 0;
}

void dc_op_ep_close(struct mrail_drv_ep *ep)
{
	dc_ep_close(dc_ep_of(ep));
}
