/*
 * Per-connection hooks: layers above (the SDN tagger, offload workers)
 * attach their own state to each rail as it comes up, and drop it before
 * its connection closes.
 */
#include "libmrail/engine.h"

#include <netinet/in.h>
#include <string.h>

static void conn_of(const struct rail *r, struct mrail_rail_conn *c,
		    struct mrail_drv_ep_info *info)
{
	memset(c, 0, sizeof *c);
	memset(info, 0, sizeof *info);
	info->fd = -1;
	if (r->ep && r->local->ops->ep_query)
		r->local->ops->ep_query(r->ep, info);
	c->peer = r->gate ? r->gate->id : MRAIL_ANY_PEER;
	c->rail = (int)r->index;
	c->driver = r->local->ops->name;
	c->fd = info->fd;
	if (info->local.ss_family && info->remote.ss_family) {
		c->local = (const struct sockaddr *)&info->local;
		c->remote = (const struct sockaddr *)&info->remote;
		c->addr_len = info->local.ss_family == AF_INET6
				      ? sizeof(struct sockaddr_in6)
				      : sizeof(struct sockaddr_in);
	}
}

void hooks_rail_up(struct mrail_engine *e, struct rail *r)
{
	struct mrail_rail_conn c;
	struct mrail_drv_ep_info info;
	if (!e->hooks.rail_up || r->hooked)
		return;
	conn_of(r, &c, &info);
	r->hook_state = e->hooks.rail_up(e->hooks_ctx, &c);
	r->hooked = 1;
}

void hooks_rail_down(struct mrail_engine *e, struct rail *r)
{
	struct mrail_rail_conn c;
	struct mrail_drv_ep_info info;
	if (!r->hooked)
		return;
	r->hooked = 0;
	if (!e->hooks.rail_down)
		return;
	conn_of(r, &c, &info);
	e->hooks.rail_down(e->hooks_ctx, &c, r->hook_state);
	r->hook_state = NULL;
}

void hooks_msg_tx(struct mrail_engine *e, struct rail *r, uint64_t tag)
{
	if (e->hooks.msg_tx)
		e->hooks.msg_tx(e->hooks_ctx, r->hook_state, tag);
}

void hooks_set(struct mrail_engine *e, const struct mrail_rail_hooks *hooks,
	       void *ctx)
{
	ENGINE_ASSERT_LOCKED(e);
	for (uint32_t i = 0; i < e->ngates; i++)
		for (unsigned k = 0; k < e->gates[i]->nrails; k++)
			if (e->gates[i]->rails[k])
				hooks_rail_down(e, e->gates[i]->rails[k]);
	memset(&e->hooks, 0, sizeof e->hooks);
	if (hooks)
		e->hooks = *hooks;
	e->hooks_ctx = ctx;
	for (uint32_t i = 0; i < e->ngates; i++)
		for (unsigned k = 0; k < e->gates[i]->nrails; k++) {
			struct rail *r = e->gates[i]->rails[k];
			if (r && r->state == RAIL_UP)
				hooks_rail_up(e, r);
		}
}

int hooks_rail_conn(struct mrail_engine *e, mrail_peer_t peer, int rail,
		    struct mrail_rail_conn *conn, void **state)
{
	static __thread struct mrail_drv_ep_info info;
	ENGINE_ASSERT_LOCKED(e);
	struct gate *g = gate_get(e, peer);
	if (!g || rail < 0 || (unsigned)rail >= g->nrails || !g->rails[rail])
		return MRAIL_ERR_NOT_FOUND;
	/* The addresses point into thread-local storage: valid until this
	 * thread's next call. */
	conn_of(g->rails[rail], conn, &info);
	if (state)
		*state = g->rails[rail]->hook_state;
	return MRAIL_OK;
}
