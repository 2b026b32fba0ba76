/* Gates: one per peer, with its rails, send queue and receive order. */
#include "libmrail/engine.h"
#include "sampler/predict.h"
#include "util/clock.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

struct gate *gate_get(struct mrail_engine *e, mrail_peer_t id)
{
	return id < e->ngates ? e->gates[id] : NULL;
}

static uint32_t uuid_slot(uint64_t uuid, uint32_t cap)
{
	/* uuids are random already; mix anyway against a poor source. */
	uuid ^= uuid >> 33;
	uuid *= 0xff51afd7ed558ccdULL;
	uuid ^= uuid >> 33;
	return (uint32_t)uuid & (cap - 1);
}

struct gate *gate_find_uuid(struct mrail_engine *e, uint64_t uuid)
{
	if (!e->by_uuid_cap)
		return NULL;
	for (uint32_t i = uuid_slot(uuid, e->by_uuid_cap);;
	     i = (i + 1) & (e->by_uuid_cap - 1)) {
		struct gate *g = e->by_uuid[i];
		if (!g || g->uuid == uuid)
			return g;
	}
}

/* Kept at most half full, so lookups stop at an empty slot. */
static int uuid_index_add(struct mrail_engine *e, struct gate *g)
{
	if (2 * (e->ngates + 1) > e->by_uuid_cap) {
		uint32_t cap = e->by_uuid_cap ? 2 * e->by_uuid_cap : 32;
		struct gate **t = calloc(cap, sizeof *t);
		if (!t)
			return MRAIL_ERR_NOMEM;
		for (uint32_t k = 0; k < e->ngates; k++) {
			uint32_t i = uuid_slot(e->gates[k]->uuid, cap);
			while (t[i])
				i = (i + 1) & (cap - 1);
			t[i] = e->gates[k];
		}
		free(e->by_uuid);
		e->by_uuid = t;
		e->by_uuid_cap = cap;
	}
	uint32_t i = uuid_slot(g->uuid, e->by_uuid_cap);
	while (e->by_uuid[i])
		i = (i + 1) & (e->by_uuid_cap - 1);
	e->by_uuid[i] = g;
	return MRAIL_OK;
}

/* Accepted rails that authenticated before their gate was added. */
static void adopt_waiting_rails(struct mrail_engine *e, struct gate *g)
{
	struct mrail_list *pos, *tmp;
	mrail_list_foreach_safe(pos, tmp, &e->handshaking) {
		struct rail *r = mrail_list_entry(pos, struct rail, link);
		if (!r->authenticated || r->peer_uuid != g->uuid)
			continue;
		if (r->hello_nrails != g->nrails || r->index >= g->nrails ||
		    g->rails[r->index]) {
			mrail_warn("%s: connection for rail %u of %u does not "
				   "match our %u rail(s); dropped", g->name,
				   r->index, r->hello_nrails, g->nrails);
			mrail_list_remove(&r->link);
			rail_close(e, r);
			free(r);
			continue;
		}
		rail_up(e, r);
	}
}

/*
 * Connect the rails of this gate now: the first message to an idle peer
 * (lazy connection), or every peer at creation (eager). Rails the peer
 * already connected to us are kept; both sides connecting the same rail
 * at once is settled in handshake.c (the connection initiated by the
 * smaller uuid stays).
 */
void gate_connect_now(struct mrail_engine *e, struct gate *g)
{
	ENGINE_ASSERT_LOCKED(e);
	if (g->state != GATE_IDLE)
		return;
	g->state = GATE_CONNECTING;
	gate_set_active(e, g);
	g->deadline = mrail_now() + e->cfg.connect_timeout;
	for (unsigned i = 0; i < g->nrails; i++) {
		if (g->rails[i])
			continue;
		struct rail_plan *p = &g->plan[i];
		struct local_rail *l = &e->local[p->local_ep];
		struct rail *r = rail_new(e, l);
		if (!r) {
			gate_fail(e, g, MRAIL_ERR_NOMEM, "no memory for a rail");
			return;
		}
		r->gate = g;
		r->index = i;
		r->state = RAIL_CONNECTING;
		r->deadline = g->deadline;
		g->rails[i] = r;
		int rc = l->ops->connect(l->drv, l->local, p->remote_blob,
					 p->remote_len, r, &r->ep);
		if (rc == MRAIL_OK) {
			rail_update_names(r);
			rc = handshake_send_hello(e, r);
		}
		if (rc != MRAIL_OK) {
			gate_fail(e, g, rc, "connecting a rail failed");
			return;
		}
	}
}

void gate_first_use(struct mrail_engine *e, struct gate *g)
{
	if (e->lazy_connect && g->state == GATE_IDLE)
		gate_connect_now(e, g);
}

static struct gate *gate_new(struct mrail_engine *e, uint64_t uuid,
			     uint32_t job_rank)
{
	struct gate *g = calloc(1, sizeof *g);
	if (!g)
		return NULL;
	if (e->ngates == e->gates_cap) {
		uint32_t cap = e->gates_cap ? 2 * e->gates_cap : 16;
		struct gate **gs = realloc(e->gates, sizeof *gs * cap);
		if (!gs) {
			free(g);
			return NULL;
		}
		e->gates = gs;
		e->gates_cap = cap;
	}
	mrail_list_init(&g->sched_link);
	mrail_list_init(&g->sendq);
	g->burst_pass = UINT64_MAX;
	mrail_list_init(&g->rdv);
	mrail_list_init(&g->ooo);
	mrail_list_init(&g->pull_wait);
	mrail_list_init(&g->parts);
	mrail_list_init(&g->dead_rails);
	mrail_list_init(&g->owed);
	g->id = e->ngates;
	g->uuid = uuid;
	g->self = uuid == e->uuid;
	g->state = g->self ? GATE_UP : GATE_IDLE;
	g->eager_max = e->cfg.eager_max;
	g->deadline = mrail_now() + e->cfg.connect_timeout;
	g->job_rank = job_rank == GATE_NO_JOB_RANK ? g->id : job_rank;
	snprintf(g->name, sizeof g->name, "%s %u",
		 job_rank == GATE_NO_JOB_RANK ? "peer" : "rank", g->job_rank);
	if (e->strategy && e->strategy->peer_init &&
	    e->strategy->peer_init(e->strategy_state, g->id, &g->strategy_peer)) {
		mrail_error("strategy '%s' could not set up its state for %s",
			    e->strategy->name, g->name);
		free(g);
		return NULL;
	}
	if (uuid_index_add(e, g)) {
		if (e->strategy && e->strategy->peer_fini)
			e->strategy->peer_fini(e->strategy_state,
					       g->strategy_peer);
		free(g);
		return NULL;
	}
	e->gates[e->ngates++] = g;
	return g;
}

int gate_add_parsed(struct mrail_engine *e, const struct peer_address *pa,
		    uint32_t job_rank, mrail_peer_t *out)
{
	ENGINE_ASSERT_LOCKED(e);
	char reason[1024];

	if (gate_find_uuid(e, pa->uuid)) {
		mrail_error("mrail_peer_add: this peer was already added");
		return MRAIL_ERR_INVALID;
	}
	struct gate *g = gate_new(e, pa->uuid, job_rank);
	if (!g)
		return MRAIL_ERR_NOMEM;
	*out = g->id;
	if (g->self)
		return MRAIL_OK;
	if (pa->host_id == e->host_id)
		e->host_peers++;
	int rc = gate_plan_rails(e, g, pa, reason, sizeof reason);
	if (rc != MRAIL_OK) {
		char msg[1100];
		snprintf(msg, sizeof msg, "no rail to this peer: %s", reason);
		gate_fail(e, g, MRAIL_ERR_PEER, msg);
		return MRAIL_OK;
	}
	/* Rails the peer connected before we knew it. */
	adopt_waiting_rails(e, g);
	/* Eager: the engine with the larger id connects, the other accepts,
	 * so both sides agree without talking first. Lazy: whoever sends
	 * first (gate_first_use from send_post). */
	if (!e->lazy_connect && e->uuid > pa->uuid &&
	    g->state != GATE_FAILED)
		gate_connect_now(e, g);
	return MRAIL_OK;
}

int gate_add(struct mrail_engine *e, const void *addr, size_t len,
	     uint32_t job_rank, mrail_peer_t *out)
{
	ENGINE_ASSERT_LOCKED(e);
	struct peer_address pa;
	const char *why = NULL;

	if (address_parse(addr, len, &pa, &why)) {
		mrail_error("mrail_peer_add: %s (%zu bytes)", why, len);
		return MRAIL_ERR_INVALID;
	}
	int rc = gate_add_parsed(e, &pa, job_rank, out);
	address_free(&pa);
	return rc;
}

void gate_fail(struct mrail_engine *e, struct gate *g, int error,
	       const char *why)
{
	ENGINE_ASSERT_LOCKED(e);
	struct mrail_list *pos, *tmp;

	if (g->state == GATE_FAILED || g->state == GATE_CLOSED)
		return;
	if (error == MRAIL_ERR_PEER_CLOSED)
		mrail_debug("%s: %s", g->name, why);
	else
		mrail_error("%s: %s; its requests fail with \"%s\"", g->name,
			    why, mrail_strerror(error));
	g->state = error == MRAIL_ERR_PEER_CLOSED ? GATE_CLOSED : GATE_FAILED;
	g->error = error;
	/* Rendezvous requests first: those with chunks posted or arriving
	 * only take the gate's error now and complete when the rails below
	 * settle their chunks (completing hands the buffer back to the
	 * user, so the driver must be done with it first). */
	mrail_list_foreach_safe(pos, tmp, &g->rdv)
		request_fail(e, mrail_list_entry(pos, struct mrail_request,
						 gate_link),
			     error);
	/* A peer that said BYE keeps its connections until we close too,
	 * except those still carrying a request's chunks: ep_close makes
	 * the driver drop them and stop touching their memory. */
	for (unsigned i = 0; i < g->nrails; i++)
		if (g->rails[i] && (error != MRAIL_ERR_PEER_CLOSED ||
				    rdv_rail_busy(g->rails[i])))
			rail_close(e, g->rails[i]);
	mrail_list_foreach_safe(pos, tmp, &g->sendq)
		request_fail(e, mrail_list_entry(pos, struct mrail_request, link),
			     error);
	recv_fail_gate(e, g, error);
	failover_drop_owed(e, g);
	if (g->scheduled) {
		mrail_list_remove(&g->sched_link);
		g->scheduled = 0;
	}
}

void gate_free(struct mrail_engine *e, struct gate *g)
{
	struct mrail_list *pos, *tmp;
	for (unsigned i = 0; i < g->nrails; i++) {
		if (!g->rails[i])
			continue;
		rail_close(e, g->rails[i]);
		mrail_model_free(g->rails[i]->model);
		free(g->rails[i]);
	}
	mrail_list_foreach_safe(pos, tmp, &g->dead_rails) {
		struct rail *r = mrail_list_entry(pos, struct rail, link);
		mrail_list_remove(pos);
		failover_rail_release(e, r);
		mrail_model_free(r->model);
		free(r);
	}
	mrail_list_foreach_safe(pos, tmp, &g->ooo) {
		mrail_list_remove(pos);
		unexpected_free(e, mrail_list_entry(pos, struct unexpected,
						    link));
	}
	failover_drop_owed(e, g);
	/* Requests outlive the gate until requests_fini(), which unlinks
	 * them: detach them now so it does not write into a freed gate. */
	mrail_list_foreach_safe(pos, tmp, &g->sendq)
		mrail_list_remove(pos);
	mrail_list_foreach_safe(pos, tmp, &g->rdv)
		mrail_list_remove(pos);
	reasm_free_gate(g);
	free(g->plan);
	if (e->strategy && e->strategy->peer_fini)
		e->strategy->peer_fini(e->strategy_state, g->strategy_peer);
	free(g);
}

/* ---- what the API reports about a gate's rails ------------------------ */

int gate_rail_info(struct mrail_engine *e, mrail_peer_t peer, int rail,
		   struct mrail_rail_info *info)
{
	ENGINE_ASSERT_LOCKED(e);
	struct gate *g = gate_get(e, peer);
	if (!g || rail < 0 || (unsigned)rail >= g->nrails || !g->plan)
		return MRAIL_ERR_NOT_FOUND;
	const struct rail_plan *p = &g->plan[rail];
	const struct local_rail *l = &e->local[p->local_ep];
	const struct rail *r = g->rails[rail];
	memset(info, 0, sizeof *info);
	snprintf(info->driver, sizeof info->driver, "%s", l->ops->name);
	snprintf(info->local_if, sizeof info->local_if, "%s", p->local_if);
	snprintf(info->remote_if, sizeof info->remote_if, "%s", p->remote_if);
	if (r) {
		snprintf(info->local_addr, sizeof info->local_addr, "%s",
			 r->stats.local);
		snprintf(info->remote_addr, sizeof info->remote_addr, "%s",
			 r->stats.remote);
		info->up = r->state == RAIL_UP;
		snprintf(info->state, sizeof info->state, "%s",
			 rail_state_name(r->state));
		snprintf(info->model, sizeof info->model, "%s",
			 r->model_source ? r->model_source : "default");
		info->latency = r->latency;
		info->bandwidth = r->bandwidth;
		info->threshold = r->threshold;
	}
	else
		snprintf(info->state, sizeof info->state, "connecting");
	info->conn_type = p->conn_type;
	info->speed_mbps = l->netif >= 0 ? e->netifs[l->netif].speed_mbps : 0;
	return MRAIL_OK;
}

int gate_rail_stats(struct mrail_engine *e, mrail_peer_t peer, int rail,
		    struct mrail_rail_stats *st)
{
	ENGINE_ASSERT_LOCKED(e);
	struct gate *g = gate_get(e, peer);
	if (!g || rail < 0 || (unsigned)rail >= g->nrails)
		return MRAIL_ERR_NOT_FOUND;
	if (g->rails[rail])
		rail_read_stats(g->rails[rail], st);
	else
		memset(st, 0, sizeof *st);
	return MRAIL_OK;
}

void gate_set_active(struct mrail_engine *e, struct gate *g)
{
	if (g->in_active || g->self || e->active_overflow)
		return;
	if (e->nactive == e->active_cap) {
		uint32_t cap = e->active_cap ? 2 * e->active_cap : 16;
		struct gate **a = realloc(e->active, cap * sizeof *a);
		if (!a) {
			/* Timers then visit every gate, as they can. */
			e->active_overflow = 1;
			return;
		}
		e->active = a;
		e->active_cap = cap;
	}
	e->active[e->nactive++] = g;
	g->in_active = 1;
}

struct gate **gate_active(struct mrail_engine *e, uint32_t *n)
{
	if (e->active_overflow) {
		*n = e->ngates;
		return e->gates;
	}
	for (uint32_t i = 0; i < e->nactive;) {
		struct gate *g = e->active[i];
		if (g->state == GATE_CONNECTING || g->state == GATE_UP) {
			i++;
			continue;
		}
		g->in_active = 0;
		e->active[i] = e->active[--e->nactive];
	}
	*n = e->nactive;
	return e->active;
}
