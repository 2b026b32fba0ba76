/* Gates: one per peer, with its rails, send queue and receive order. */
#include "libmrail/engine.h"
#include "util/clock.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

#define ADDR_MAGIC 0x41524d00u /* "\0MRA" as little-endian u32 */
#define ADDR_VERSION 1u

struct addr_hdr {
	uint32_t magic_version;
	uint16_t nrails;
	uint16_t reserved;
	uint64_t uuid;
};

/*
 * Address blob (docs/wire.md): header, then per rail: u8 driver name
 * length, the name, u16 address length, the driver's address blob.
 */
int engine_address(struct mrail_engine *e, void *buf, size_t *len)
{
	uint8_t tmp[MRAIL_ADDR_MAX];
	struct addr_hdr h = {ADDR_MAGIC | ADDR_VERSION, (uint16_t)e->nlocal, 0,
			     e->uuid};
	size_t n = sizeof h;

	memcpy(tmp, &h, sizeof h);
	for (unsigned i = 0; i < e->nlocal; i++) {
		const struct local_rail *l = &e->local[i];
		uint8_t dl = (uint8_t)strlen(l->ops->name);
		uint16_t al = (uint16_t)l->addr_len;
		if (n + 1 + dl + 2 + al > sizeof tmp)
			return MRAIL_ERR_INVALID;
		tmp[n++] = dl;
		memcpy(tmp + n, l->ops->name, dl);
		n += dl;
		memcpy(tmp + n, &al, 2);
		n += 2;
		memcpy(tmp + n, l->addr, al);
		n += al;
	}
	if (*len < n) {
		*len = n;
		return MRAIL_ERR_INVALID;
	}
	memcpy(buf, tmp, n);
	*len = n;
	return MRAIL_OK;
}

static int parse_address(const void *blob, size_t len, uint64_t *uuid,
			 struct gate *g, const char **why)
{
	const uint8_t *p = blob;
	struct addr_hdr h;
	size_t off = sizeof h;

	if (len < sizeof h || len > MRAIL_ADDR_MAX) {
		*why = "address blob has an impossible length";
		return -1;
	}
	memcpy(&h, p, sizeof h);
	if ((h.magic_version & ~0xffu) != ADDR_MAGIC) {
		*why = "not a libmrail address blob";
		return -1;
	}
	if ((h.magic_version & 0xffu) != ADDR_VERSION) {
		*why = "address blob of an unsupported version";
		return -1;
	}
	if (h.nrails > MRAIL_MAX_RAILS) {
		*why = "address blob lists too many rails";
		return -1;
	}
	for (unsigned i = 0; i < h.nrails; i++) {
		struct remote_rail *rr = &g->remote[i];
		uint16_t al;
		if (off + 1 > len || off + 1 + p[off] + 2 > len ||
		    p[off] >= sizeof rr->driver) {
			*why = "address blob truncated or driver name too long";
			return -1;
		}
		memcpy(rr->driver, p + off + 1, p[off]);
		rr->driver[p[off]] = '\0';
		off += 1 + p[off];
		memcpy(&al, p + off, 2);
		off += 2;
		if (al > sizeof rr->addr || off + al > len) {
			*why = "address blob truncated or rail address too long";
			return -1;
		}
		memcpy(rr->addr, p + off, al);
		rr->addr_len = al;
		off += al;
	}
	if (off != len) {
		*why = "trailing bytes after the address blob";
		return -1;
	}
	g->nremote = h.nrails;
	*uuid = h.uuid;
	return 0;
}

struct gate *gate_get(struct mrail_engine *e, mrail_peer_t id)
{
	return id < e->ngates ? e->gates[id] : NULL;
}

static struct gate *gate_by_uuid(struct mrail_engine *e, uint64_t uuid)
{
	for (uint32_t i = 0; i < e->ngates; i++)
		if (e->gates[i]->uuid == uuid)
			return e->gates[i];
	return NULL;
}

/* Accepted rails that authenticated before their gate was added. */
static void adopt_waiting_rails(struct mrail_engine *e, struct gate *g)
{
	struct mrail_list *pos, *tmp;
	mrail_list_foreach_safe(pos, tmp, &e->handshaking) {
		struct rail *r = mrail_list_entry(pos, struct rail, link);
		if (r->authenticated && r->peer_uuid == g->uuid)
			rail_up(e, r);
	}
}

static int connect_rails(struct mrail_engine *e, struct gate *g)
{
	for (unsigned i = 0; i < g->nrails; i++) {
		struct local_rail *l = &e->local[i];
		struct rail *r = rail_new(e, l);
		if (!r)
			return MRAIL_ERR_NOMEM;
		r->gate = g;
		r->index = i;
		r->state = RAIL_CONNECTING;
		r->deadline = g->deadline;
		g->rails[i] = r;
		int rc = l->ops->connect(l->drv, l->local, g->remote[i].addr,
					 g->remote[i].addr_len, r, &r->ep);
		if (rc == MRAIL_OK) {
			rail_update_names(r);
			rc = handshake_send_hello(e, r);
		}
		if (rc != MRAIL_OK) {
			gate_fail(e, g, rc, "connecting a rail failed");
			return MRAIL_OK; /* the gate exists; it failed */
		}
	}
	return MRAIL_OK;
}

int gate_add(struct mrail_engine *e, const void *addr, size_t len,
	     mrail_peer_t *out)
{
	const char *why = NULL;
	uint64_t uuid;
	struct gate *g = calloc(1, sizeof *g);

	if (!g)
		return MRAIL_ERR_NOMEM;
	if (parse_address(addr, len, &uuid, g, &why)) {
		mrail_error("mrail_peer_add: %s (%zu bytes)", why, len);
		free(g);
		return MRAIL_ERR_INVALID;
	}
	if (gate_by_uuid(e, uuid)) {
		mrail_error("mrail_peer_add: this peer was already added");
		free(g);
		return MRAIL_ERR_INVALID;
	}
	if (e->ngates == e->gates_cap) {
		uint32_t cap = e->gates_cap ? 2 * e->gates_cap : 16;
		struct gate **gs = realloc(e->gates, sizeof *gs * cap);
		if (!gs) {
			free(g);
			return MRAIL_ERR_NOMEM;
		}
		e->gates = gs;
		e->gates_cap = cap;
	}
	mrail_list_init(&g->sched_link);
	mrail_list_init(&g->sendq);
	mrail_list_init(&g->rdv);
	mrail_list_init(&g->ooo);
	g->id = e->ngates;
	g->uuid = uuid;
	g->self = uuid == e->uuid;
	g->state = g->self ? GATE_UP : GATE_CONNECTING;
	g->eager_max = e->cfg.eager_max;
	g->deadline = mrail_now() + e->cfg.connect_timeout;
	snprintf(g->name, sizeof g->name, "%s %u",
		 e->bootstrapped ? "rank" : "peer", g->id);
	e->gates[e->ngates++] = g;
	*out = g->id;
	if (g->self)
		return MRAIL_OK;

	g->nrails = e->nlocal < g->nremote ? e->nlocal : g->nremote;
	for (unsigned i = 0; i < g->nrails; i++) {
		if (strcmp(g->remote[i].driver, e->local[i].ops->name)) {
			mrail_error("%s: rail %u uses driver '%s', we use '%s'",
				    g->name, i, g->remote[i].driver,
				    e->local[i].ops->name);
			g->nrails = 0;
		}
	}
	if (g->nrails == 0) {
		gate_fail(e, g, MRAIL_ERR_PEER, "no usable rail to this peer");
		return MRAIL_OK;
	}
	/* The engine with the larger id connects, the other accepts: both
	 * sides agree without talking first. */
	if (e->uuid > uuid)
		return connect_rails(e, g);
	adopt_waiting_rails(e, g);
	return MRAIL_OK;
}

void gate_fail(struct mrail_engine *e, struct gate *g, int error,
	       const char *why)
{
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
	/* Rails first: settling their posted chunks may complete sends. A
	 * peer that said BYE keeps its connections until we close too. */
	for (unsigned i = 0; i < g->nrails; i++)
		if (g->rails[i] && error != MRAIL_ERR_PEER_CLOSED)
			rail_close(e, g->rails[i]);
	mrail_list_foreach_safe(pos, tmp, &g->sendq)
		request_complete(e, mrail_list_entry(pos, struct mrail_request, link),
				 error);
	mrail_list_foreach_safe(pos, tmp, &g->rdv)
		request_complete(e, mrail_list_entry(pos, struct mrail_request,
						     gate_link),
				 error);
	recv_fail_gate(e, g, error);
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
		free(g->rails[i]);
	}
	mrail_list_foreach_safe(pos, tmp, &g->ooo) {
		mrail_list_remove(pos);
		free(mrail_list_entry(pos, struct unexpected, link));
	}
	free(g);
}

/* ---- API -------------------------------------------------------------- */

MRAIL_API int mrail_address(mrail_engine_t *e, void *buf, size_t *len)
{
	if (!e || !buf || !len)
		return MRAIL_ERR_INVALID;
	engine_lock(e);
	int rc = engine_address(e, buf, len);
	engine_unlock(e);
	return rc;
}

MRAIL_API int mrail_peer_add(mrail_engine_t *e, const void *addr, size_t len,
			     mrail_peer_t *peer)
{
	if (!e || !addr || !peer)
		return MRAIL_ERR_INVALID;
	engine_lock(e);
	int rc = gate_add(e, addr, len, peer);
	engine_unlock(e);
	return rc;
}

MRAIL_API uint32_t mrail_peer_count(const mrail_engine_t *e)
{
	return e ? e->ngates : 0;
}

MRAIL_API int mrail_rail_count(const mrail_engine_t *e, mrail_peer_t peer)
{
	if (!e)
		return MRAIL_ERR_INVALID;
	struct gate *g = peer < e->ngates ? e->gates[peer] : NULL;
	return g ? (int)g->nrails : MRAIL_ERR_NOT_FOUND;
}

MRAIL_API int mrail_rail_stats(mrail_engine_t *e, mrail_peer_t peer, int rail,
			       struct mrail_rail_stats *st)
{
	if (!e || !st)
		return MRAIL_ERR_INVALID;
	engine_lock(e);
	struct gate *g = gate_get(e, peer);
	int rc = MRAIL_OK;
	if (!g || rail < 0 || (unsigned)rail >= g->nrails)
		rc = MRAIL_ERR_NOT_FOUND;
	else if (g->rails[rail])
		*st = g->rails[rail]->stats;
	else
		memset(st, 0, sizeof *st);
	engine_unlock(e);
	return rc;
}
