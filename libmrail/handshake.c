/*
 * Connection set-up and the driver upcalls. The connecting side sends a
 * HELLO carrying a MAC over a fresh nonce with the job key; the accepting
 * side checks it, binds the connection to its gate and rail, and answers
 * with a HELLO_ACK proving the key in turn. Nothing else is accepted on a
 * connection before that, and a connection that does not complete the
 * exchange in time is dropped.
 */
#include "libmrail/engine.h"
#include "sampler/predict.h"
#include "util/clock.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

static const uint8_t *job_key(struct mrail_engine *e)
{
	static const uint8_t no_key[MRAIL_AUTH_KEY_BYTES];
	return e->cfg.has_job_key ? e->cfg.job_key : no_key;
}

static void ack_mac(struct mrail_engine *e, const uint8_t *nonce,
		    uint64_t uuid, uint8_t mac[MRAIL_AUTH_MAC_BYTES])
{
	uint8_t msg[MRAIL_AUTH_NONCE_BYTES + 8 + 3];
	memcpy(msg, nonce, MRAIL_AUTH_NONCE_BYTES);
	memcpy(msg + MRAIL_AUTH_NONCE_BYTES, &uuid, 8);
	memcpy(msg + MRAIL_AUTH_NONCE_BYTES + 8, "ack", 3);
	mrail_auth_mac(job_key(e), msg, sizeof msg, mac);
}

static void remote_name(struct rail *r, char *buf, size_t len)
{
	char local[64];
	if (r->ep)
		r->local->ops->ep_names(r->ep, local, sizeof local, buf, len);
	else
		snprintf(buf, len, "?");
}

int handshake_send_hello(struct mrail_engine *e, struct rail *r)
{
	struct mrail_wire_hello h;
	struct send_op *op = packet_get(e);
	if (!op)
		return MRAIL_ERR_NOMEM;
	memset(&h, 0, sizeof h);
	h.h.type = MRAIL_WIRE_HELLO;
	h.version = MRAIL_WIRE_VERSION;
	h.rail_index = (uint16_t)r->index;
	h.nrails = (uint16_t)r->gate->nrails;
	h.epoch = (uint16_t)r->epoch; /* which connection of the rail (v5) */
	h.src_uuid = e->uuid;
	h.dst_uuid = r->gate->uuid;
	int rc = mrail_auth_random(h.nonce, sizeof h.nonce);
	if (rc) {
		packet_put(e, op);
		return MRAIL_ERR_IO;
	}
	memcpy(r->hello_nonce, h.nonce, sizeof h.nonce);
	mrail_auth_mac(job_key(e), &h, offsetof(struct mrail_wire_hello, mac),
		       h.mac);
	memcpy(op->buf + op->len, &h, sizeof h);
	op->len += sizeof h;
	rc = rail_post_packet(e, r, op);
	if (rc)
		packet_put(e, op);
	return rc;
}

static int send_ack(struct mrail_engine *e, struct rail *r)
{
	struct mrail_wire_hello_ack a;
	struct send_op *op = packet_get(e);
	if (!op)
		return MRAIL_ERR_NOMEM;
	memset(&a, 0, sizeof a);
	a.h.type = MRAIL_WIRE_HELLO_ACK;
	a.src_uuid = e->uuid;
	ack_mac(e, r->hello_nonce, e->uuid, a.mac);
	memcpy(op->buf + op->len, &a, sizeof a);
	op->len += sizeof a;
	int rc = rail_post_packet(e, r, op);
	if (rc)
		packet_put(e, op);
	return rc;
}

void rail_update_names(struct rail *r)
{
	if (r->ep)
		r->local->ops->ep_names(r->ep, r->stats.local,
					sizeof r->stats.local, r->stats.remote,
					sizeof r->stats.remote);
}

void rail_up(struct mrail_engine *e, struct rail *r)
{
	struct gate *g;
	int again = 0;

	if (!r->gate) { /* accepted: bind to the gate the HELLO named */
		g = gate_find_uuid(e, r->peer_uuid);
		mrail_list_remove(&r->link);
		r->gate = g;
		/* A reconnection replaces the failed rail (failover.c). */
		again = g->rails[r->index] != NULL;
		if (again)
			failover_takeover(e, g->rails[r->index], r);
		g->rails[r->index] = r;
		struct local_rail *l = &e->local[g->plan[r->index].local_ep];
		if (l->di != r->local->di) {
			mrail_warn("%s: rail %u uses driver '%s' but its "
				   "connection came through '%s'; dropped",
				   g->name, r->index, l->ops->name,
				   r->local->ops->name);
			rail_close(e, r);
			gate_fail(e, g, MRAIL_ERR_PEER, "rail on the wrong driver");
			return;
		}
		r->local = l;
		if (g->state == GATE_IDLE) { /* the peer connects first */
			g->state = GATE_CONNECTING;
			gate_set_active(e, g);
			g->deadline = mrail_now() + e->cfg.connect_timeout;
		}
		if ((g->state != GATE_CONNECTING &&
		     !(again && g->state == GATE_UP)) ||
		    send_ack(e, r) != MRAIL_OK) {
			rail_close(e, r);
			gate_fail(e, g, MRAIL_ERR_PEER, "answering a HELLO failed");
			return;
		}
	}
	g = r->gate;
	r->state = RAIL_UP;
	r->stats.up = 1;
	rail_update_names(r);
	g->rails_up++;
	failover_rail_up(e, r);
	rail_load_model(e, r);
	hooks_rail_up(e, r);
	gate_update_eager_max(e, g);
	mrail_debug("%s: rail %u up (%s %s <-> %s)", g->name, r->index,
		    r->stats.driver, r->stats.local, r->stats.remote);
	if (g->rails_up == g->nrails && g->state == GATE_CONNECTING) {
		g->state = GATE_UP;
		mrail_info("%s: %u rail(s) up", g->name, g->nrails);
		credit_grant(e, g); /* the peer's first eager credit */
		gate_schedule(e, g);
	} else if (g->state == GATE_UP) {
		gate_schedule(e, g); /* a failed rail is back */
	}
}

static void drop_unbound(struct mrail_engine *e, struct rail *r,
			 const char *why)
{
	char remote[64];
	remote_name(r, remote, sizeof remote);
	mrail_warn("rejected connection from %s: %s", remote, why);
	mrail_list_remove(&r->link);
	rail_close(e, r);
	free(r);
}

/* check_hello's answer when both sides connected the same rail at once
 * and ours stays: not worth a warning. */
static const char lost_race[] = "both sides connected this rail; ours stays";

/*
 * Both sides connected rail `index` at once (lazy connection: each sent
 * its first message before the other's HELLO arrived). Both decide alike
 * without talking: the connection initiated by the smaller uuid stays.
 * Ours goes: close it quietly, so the peer's is accepted in its place.
 * Returns whether the peer's connection is the one to drop instead.
 */
static int settle_race(struct mrail_engine *e, struct gate *g, unsigned index)
{
	struct rail *mine = g->rails[index];
	if (e->uuid < g->uuid)
		return 1;
	mrail_debug("%s rail %u: both sides connected; keeping the peer's",
		    g->name, index);
	rail_close(e, mine);
	mrail_model_free(mine->model);
	free(mine);
	g->rails[index] = NULL;
	return 0;
}

static const char *check_hello(struct mrail_engine *e, struct rail *r,
			       const struct mrail_wire_hello *h)
{
	uint8_t mac[MRAIL_AUTH_MAC_BYTES];
	mrail_auth_mac(job_key(e), h, offsetof(struct mrail_wire_hello, mac),
		       mac);
	if (!mrail_auth_mac_equal(mac, h->mac))
		return "bad job key (HELLO MAC mismatch)";
	if (h->version != MRAIL_WIRE_VERSION)
		return "unsupported protocol version";
	if (h->dst_uuid != e->uuid)
		return "HELLO meant for another engine";
	if (h->rail_index >= MRAIL_MAX_RAILS || h->rail_index >= h->nrails)
		return "HELLO names a rail we do not have";
	struct gate *g = gate_find_uuid(e, h->src_uuid);
	if (g) {
		if (h->nrails != g->nrails)
			return "peer chose a different number of rails";
		struct rail *have = g->rails[h->rail_index];
		/* A failed rail is replaced by the larger uuid's reconnection
		 * (failover.c), never settled as a lazy race. */
		if (have && e->lazy_connect && have->state != RAIL_CLOSED &&
		    have->state != RAIL_DOWN && e->uuid < g->uuid)
			return lost_race; /* ours stays, even when up */
		if (have && (have->state == RAIL_CONNECTING ||
			     have->state == RAIL_WAIT_ACK) &&
		    e->lazy_connect && settle_race(e, g, h->rail_index))
			return lost_race;
		/* settle_race may have dropped ours: look again. */
		have = g->rails[h->rail_index];
		if (have && !failover_may_replace(have))
			return "duplicate rail from a known peer";
	}
	(void)r;
	return NULL;
}

void handshake_on_frame(struct mrail_engine *e, struct rail *r,
			const void *head, size_t len)
{
	ENGINE_ASSERT_LOCKED(e);
	struct mrail_wire_rec rec;
	const char *why = NULL;
	size_t off = mrail_wire_check_pkt_hdr(head, len, &why);

	if (off && mrail_wire_next(head, len, &off, 0, &rec, &why) != 1)
		off = 0;
	if (off && off != len) {
		why = "extra bytes after a handshake record";
		off = 0;
	}
	if (r->state == RAIL_WAIT_HELLO) {
		if (off && rec.type != MRAIL_WIRE_HELLO)
			why = "first frame is not a HELLO", off = 0;
		if (off)
			why = check_hello(e, r, &rec.u.hello);
		if (why == lost_race) {
			mrail_debug("%s", why);
			mrail_list_remove(&r->link);
			rail_close(e, r);
			free(r);
			return;
		}
		if (!off || why) {
			drop_unbound(e, r, why ? why : "malformed HELLO");
			return;
		}
		r->peer_uuid = rec.u.hello.src_uuid;
		r->index = rec.u.hello.rail_index;
		r->hello_nrails = rec.u.hello.nrails;
		r->epoch = rec.u.hello.epoch;
		r->authenticated = 1;
		memcpy(r->hello_nonce, rec.u.hello.nonce, sizeof r->hello_nonce);
		if (gate_find_uuid(e, r->peer_uuid)) {
			rail_up(e, r);
			return;
		}
		/* Known later, when the application adds this peer. */
		return;
	}
	if (r->state == RAIL_WAIT_ACK || r->state == RAIL_CONNECTING) {
		uint8_t mac[MRAIL_AUTH_MAC_BYTES];
		if (off && rec.type != MRAIL_WIRE_HELLO_ACK)
			why = "first frame is not a HELLO_ACK", off = 0;
		if (off) {
			ack_mac(e, r->hello_nonce, rec.u.ack.src_uuid, mac);
			if (rec.u.ack.src_uuid != r->gate->uuid ||
			    !mrail_auth_mac_equal(mac, rec.u.ack.mac))
				why = "peer failed to prove the job key", off = 0;
		}
		if (!off) {
			char msg[128];
			snprintf(msg, sizeof msg, "rail %u handshake: %s",
				 r->index, why ? why : "malformed HELLO_ACK");
			gate_fail(e, r->gate, MRAIL_ERR_AUTH, msg);
			return;
		}
		rail_up(e, r);
		return;
	}
}

void handshake_expire(struct mrail_engine *e)
{
	struct mrail_list *pos, *tmp;
	double now = mrail_now();

	mrail_list_foreach_safe(pos, tmp, &e->handshaking) {
		struct rail *r = mrail_list_entry(pos, struct rail, link);
		if (now > r->deadline)
			drop_unbound(e, r, r->authenticated
				     ? "its peer was never added"
				     : "no valid HELLO in time");
	}
	/* Lazy: only gates that started connecting have a deadline. Eager:
	 * an idle gate waits for the peer's connection too. */
	uint32_t n = e->ngates;
	struct gate **gates = e->gates;
	if (e->lazy_connect)
		gates = gate_active(e, &n);
	for (uint32_t i = 0; i < n; i++) {
		struct gate *g = gates[i];
		int waiting = g->state == GATE_CONNECTING ||
			      (g->state == GATE_IDLE && !e->lazy_connect);
		if (waiting && now > g->deadline) {
			char msg[96];
			snprintf(msg, sizeof msg, "only %u of %u rail(s) came up "
				 "within %.0f s", g->rails_up, g->nrails,
				 e->cfg.connect_timeout);
			gate_fail(e, g, MRAIL_ERR_PEER, msg);
		}
	}
}

/* ---- driver upcalls --------------------------------------------------- */

static void *up_accepted(void *engine_ctx, struct mrail_drv_ep *ep)
{
	struct drv_instance *di = engine_ctx;
	struct mrail_engine *e = di->engine;
	struct local_rail *l = NULL;
	/* Until the HELLO names its rail: any endpoint of this instance. */
	for (unsigned i = 0; i < e->nlocal && !l; i++)
		if (e->local[i].di == di)
			l = &e->local[i];
	if (!l)
		return NULL;
	struct rail *r = rail_new(e, l);
	if (!r)
		return NULL;
	r->ep = ep;
	r->state = RAIL_WAIT_HELLO;
	rail_update_names(r);
	r->deadline = mrail_now() + e->cfg.connect_timeout;
	mrail_list_append(&e->handshaking, &r->link);
	return r;
}

static void up_connected(void *ctx, int status)
{
	struct rail *r = ctx;
	if (status != MRAIL_OK) {
		char msg[96];
		snprintf(msg, sizeof msg, "rail %u: connection failed", r->index);
		if (status == MRAIL_ERR_PEER_CLOSED
			    ? !failover_rail_closed(r->engine, r,
						    "connection refused")
			    : !failover_rail_fail(r->engine, r,
						  "connection failed"))
			gate_fail(r->engine, r->gate, MRAIL_ERR_PEER, msg);
		return;
	}
	if (r->state == RAIL_CONNECTING)
		r->state = RAIL_WAIT_ACK;
	rail_update_names(r);
}

static void up_recv_frame(void *ctx, const void *head, size_t len)
{
	struct rail *r = ctx;
	if (r->state == RAIL_UP)
		recv_on_packet(r->engine, r, head, len);
	/* else if closed: a late frame of a peer we gave up on; ignore it */
	else if (r->state != RAIL_CLOSED)
		handshake_on_frame(r->engine, r, head, len);
}

static void *up_recv_body(void *ctx, const void *head, size_t hlen,
			  uint64_t body_len, struct iovec *dst, int *dst_cnt)
{
	struct rail *r = ctx;
	if (r->state != RAIL_UP) {
		mrail_warn("payload frame before the handshake finished; "
			   "connection dropped");
		return NULL;
	}
	return rdv_on_data(r->engine, r, head, hlen, body_len, dst, dst_cnt);
}

static void up_recv_body_done(void *ctx, void *cookie)
{
	struct rail *r = ctx;
	rdv_on_data_done(r->engine, r, cookie);
}

static void up_send_done(void *ctx, void *send_ctx, int status)
{
	struct rail *r = ctx;
	rail_op_done(r->engine, send_ctx, status);
}

static void up_rma_done(void *ctx, void *op_ctx, int status)
{
	struct rail *r = ctx;
	rail_op_done(r->engine, op_ctx, status);
}

static void up_ep_error(void *ctx, int status, const char *why)
{
	struct rail *r = ctx;
	struct mrail_engine *e = r->engine;
	char msg[256];

	if (!r->gate) {
		drop_unbound(e, r, why);
		return;
	}
	if (r->state == RAIL_CLOSED || r->bye_in) { /* after BYE: expected */
		rail_close(e, r);
		return;
	}
	/* We said BYE; a peer that was closing too may hang up without
	 * answering (it had to cut a transfer that still used our rail). */
	if (r->bye_out) {
		gate_fail(e, r->gate, MRAIL_ERR_PEER_CLOSED, why);
		rail_close(e, r);
		return;
	}
	if (r->state == RAIL_DOWN)
		return;
	/* Our connection not yet acknowledged, to a peer with the smaller
	 * uuid: it may have dropped it for its own (settle_race), whose
	 * HELLO is on its way. The gate's deadline bounds the wait. */
	if (e->lazy_connect &&
	    (r->state == RAIL_CONNECTING || r->state == RAIL_WAIT_ACK) &&
	    e->uuid > r->gate->uuid && r->gate->state == GATE_CONNECTING) {
		struct gate *g = r->gate;
		mrail_debug("%s rail %u: our connection was dropped (%s); "
			    "waiting for the peer's", g->name, r->index, why);
		g->rails[r->index] = NULL;
		rail_close(e, r);
		mrail_model_free(r->model);
		free(r);
		return;
	}
	/* A protocol violation is the peer's fault, not the link's. */
	if (status == MRAIL_ERR_PEER_CLOSED ? failover_rail_closed(e, r, why)
	    : status != MRAIL_ERR_PROTO && failover_rail_fail(e, r, why))
		return;
	snprintf(msg, sizeof msg, "rail %u (%s <-> %s): %s", r->index,
		 r->stats.local, r->stats.remote, why);
	gate_fail(e, r->gate, status == MRAIL_ERR_PROTO ? MRAIL_ERR_PROTO
							: MRAIL_ERR_PEER, msg);
}

const struct mrail_drv_upcalls engine_upcalls = {
	.accepted = up_accepted,
	.connected = up_connected,
	.recv_frame = up_recv_frame,
	.recv_body = up_recv_body,
	.recv_body_done = up_recv_body_done,
	.send_done = up_send_done,
	.ep_error = up_ep_error,
	.rma_done = up_rma_done,
};
