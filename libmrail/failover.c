/*
 * Rail failover (docs/failover.md). Counted packets (everything but the
 * handshake, standalone ACKs and DATA frames) are numbered per connection
 * and kept by the sender until the receiver acknowledges them. When a
 * rail fails, each side closes it and tells the other, on a surviving
 * rail, how many packets of it it processed (RAIL_DOWN); the sender then
 * replays the rest on a survivor. Rendezvous payload is re-requested by
 * the receiver (failover_rdv.c). Once both sides have settled the
 * failure, the side that connected originally reconnects with backoff.
 */
#include "libmrail/engine.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/rail_timeout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ACK_EVERY 16        /* packets processed before a standalone ACK */
#define BACKOFF_MIN 0.05    /* s between reconnect attempts, doubling */
#define BACKOFF_MAX 1.0     /* short: a rail must be back within ~1 s */
#define TICK_PERIOD 0.005   /* s between two timer passes */
#define PROBE_AFTER_MAX 1.0 /* s of silence on a rail we wait on: probe */
/* s the accepting side waits, once every connection to a peer was
 * closed by it, for the peer to reconnect before calling it dead. A live
 * connector whose rails all failed retries at once, but its back-off may
 * have grown to BACKOFF_MAX while the links were down (its FINs reach us
 * when they come back): a shorter grace would fail a live peer. */
#define DEAD_PEER_GRACE (BACKOFF_MAX + 0.1)

int failover_init(struct mrail_engine *e)
{
	if (mrail_rail_timeout_env(&e->rail_timeout)) {
		mrail_error("invalid MRAIL_RAIL_TIMEOUT='%s': expected seconds "
			    "(0 < t <= 86400)", getenv("MRAIL_RAIL_TIMEOUT"));
		return MRAIL_ERR_CONFIG;
	}
	return MRAIL_OK;
}

const char *rail_state_name(int state)
{
	switch ((enum rail_state)state) {
	case RAIL_CONNECTING:
	case RAIL_WAIT_HELLO:
	case RAIL_WAIT_ACK:
		return "connecting";
	case RAIL_UP:
		return "up";
	case RAIL_DOWN:
		return "down";
	case RAIL_CLOSED:
		return "closed";
	}
	return "?";
}

/* ---- numbered packets ------------------------------------------------- */

void failover_pkt_post(struct rail *r, struct send_op *op)
{
	op->pseq = 0;
	op->retained = 0;
	op->in_flight = 1;
	op->sent_at = 0;
	if (r->state != RAIL_UP || op->no_count)
		return;
	if (r->rx_pseq != r->ack_sent &&
	    op->len + sizeof(struct mrail_wire_ack) <= op->cap) {
		op->len += mrail_wire_put_ack(op->buf + op->len, r->rx_pseq);
		r->ack_sent = r->rx_pseq;
	}
	op->pseq = ++r->tx_pseq;
	mrail_wire_set_pkt_pseq(op->buf, op->pseq);
	op->retained = 1;
	mrail_list_append(&r->retained, &op->rlink);
}

void failover_pkt_unpost(struct rail *r, struct send_op *op)
{
	op->in_flight = 0;
	if (!op->retained)
		return;
	mrail_list_remove(&op->rlink);
	op->retained = 0;
	r->tx_pseq--;
}

size_t failover_inject_prepare(struct rail *r, void *head, void *ack)
{
	mrail_wire_set_pkt_pseq(head, r->tx_pseq + 1);
	return ack && r->rx_pseq != r->ack_sent
		       ? mrail_wire_put_ack(ack, r->rx_pseq) : 0;
}

void failover_inject_commit(struct rail *r, int acked)
{
	r->unkept_pseq = ++r->tx_pseq;
	if (acked)
		r->ack_sent = r->rx_pseq;
}

int failover_pkt_done(struct send_op *op)
{
	op->in_flight = 0;
	return op->retained;
}

int failover_pkt_arrived(struct rail *r, const void *head, int *counted,
			 const char **why)
{
	uint32_t n = mrail_wire_pkt_pseq(head);
	*counted = n != 0;
	if (!n)
		return 0;
	if (n != r->rx_pseq + 1) {
		*why = "packet number out of sequence";
		return -1;
	}
	r->rx_pseq = n;
	return 0;
}

static void send_standalone_ack(struct mrail_engine *e, struct rail *r)
{
	struct send_op *op = packet_get(e);
	if (!op)
		return;
	op->no_count = 1;
	op->len += mrail_wire_put_ack(op->buf + op->len, r->rx_pseq);
	if (rail_post_packet(e, r, op))
		packet_put(e, op);
	else
		r->ack_sent = r->rx_pseq;
}

void failover_after_packet(struct mrail_engine *e, struct rail *r)
{
	if (r->state == RAIL_UP && r->rx_pseq - r->ack_sent >= ACK_EVERY)
		send_standalone_ack(e, r);
}

/* The peer processed our packets up to `count`: drop them. */
static void release_upto(struct mrail_engine *e, struct rail *r,
			 uint64_t count)
{
	while (!mrail_list_empty(&r->retained)) {
		struct send_op *op =
			mrail_list_first(&r->retained, struct send_op, rlink);
		if (op->pseq > count)
			break;
		mrail_list_remove(&op->rlink);
		op->retained = 0;
		if (!op->in_flight)
			packet_put(e, op);
	}
}

int failover_on_ack(struct mrail_engine *e, struct rail *r, uint64_t count,
		    const char **why)
{
	if (count > r->tx_pseq || count < r->peer_acked) {
		*why = "acknowledgement outside the packets sent";
		return MRAIL_ERR_PROTO;
	}
	r->peer_acked = (uint32_t)count;
	release_upto(e, r, count);
	return MRAIL_OK;
}

void failover_rail_release(struct mrail_engine *e, struct rail *r)
{
	release_upto(e, r, UINT64_MAX);
}

/* ---- failure ---------------------------------------------------------- */

struct rail *failover_survivor(struct gate *g, const struct rail *prefer)
{
	if (prefer && prefer->state == RAIL_UP)
		return (struct rail *)prefer;
	for (unsigned k = 0; k < g->nrails; k++) {
		unsigned i = (g->replay_next + k) % g->nrails;
		if (g->rails[i] && g->rails[i]->state == RAIL_UP) {
			g->replay_next = i + 1;
			return g->rails[i];
		}
	}
	return NULL;
}

void failover_post_notice(struct mrail_engine *e, struct gate *g,
			  struct send_op *op)
{
	if (g->state != GATE_UP && g->state != GATE_CONNECTING) {
		packet_put(e, op);
		return;
	}
	for (unsigned i = 0; i < g->nrails; i++) {
		struct rail *r = g->rails[i];
		if (!r || r->state != RAIL_UP || r->bye_out)
			continue;
		int rc = rail_post_packet(e, r, op);
		if (rc == MRAIL_OK)
			return;
		if (!failover_op_failed(r)) { /* else r fails at the tick */
			packet_put(e, op);
			gate_fail(e, g, rc, "posting a control packet failed");
			return;
		}
	}
	op->rail = NULL;
	mrail_list_append(&g->owed, &op->link);
}

/* A rail is up again: it carries what waited for one. */
static void post_owed(struct mrail_engine *e, struct gate *g)
{
	struct mrail_list owed;
	mrail_list_init(&owed);
	while (!mrail_list_empty(&g->owed)) {
		struct send_op *op =
			mrail_list_first(&g->owed, struct send_op, link);
		mrail_list_remove(&op->link);
		mrail_list_append(&owed, &op->link);
	}
	while (!mrail_list_empty(&owed)) {
		struct send_op *op =
			mrail_list_first(&owed, struct send_op, link);
		mrail_list_remove(&op->link);
		failover_post_notice(e, g, op);
	}
}

void failover_drop_owed(struct mrail_engine *e, struct gate *g)
{
	while (!mrail_list_empty(&g->owed)) {
		struct send_op *op =
			mrail_list_first(&g->owed, struct send_op, link);
		mrail_list_remove(&op->link);
		packet_put(e, op);
	}
}

static int is_connector(const struct mrail_engine *e, const struct gate *g)
{
	return e->uuid > g->uuid; /* gate.c: the larger id connects */
}

/* Both sides closed the rail and replayed: it may come back. */
static void settled(struct mrail_engine *e, struct gate *g, struct rail *d)
{
	if (d->settled || !d->down_told || !d->down_heard)
		return;
	d->settled = 1;
	mrail_debug("%s: rail %u failure settled with the peer", g->name,
		    d->index);
	if (g->rails[d->index] != d) { /* an earlier connection: done */
		d->state = RAIL_CLOSED;
		return;
	}
	if (is_connector(e, g)) {
		d->backoff = BACKOFF_MIN;
		d->retry_at = mrail_now();
	}
}

static void tell_one(struct mrail_engine *e, struct gate *g, struct rail *d)
{
	if (d->state != RAIL_DOWN || d->down_heard)
		return;
	/* Resent when the connection that carried it failed in turn. */
	const struct rail *c = d->down_told ? g->rails[d->down_told - 1] : NULL;
	if (c && c->state == RAIL_UP && c->epoch == d->down_told_epoch)
		return;
	struct rail *s = failover_survivor(g, NULL);
	struct send_op *op;
	if (!s || !(op = packet_get(e)))
		return;
	op->len += mrail_wire_put_rail_down(op->buf + op->len, d->index,
					    d->epoch, d->rx_pseq);
	if (rail_post_packet(e, s, op)) {
		packet_put(e, op);
		failover_op_failed(s); /* resent when s fails */
		return;
	}
	d->down_told = (int)s->index + 1;
	d->down_told_epoch = s->epoch;
	settled(e, g, d);
}

/* RAIL_DOWN for every failed connection the peer has not heard about
 * yet: rails down, and earlier connections of reconnected rails. */
static void tell_down(struct mrail_engine *e, struct gate *g)
{
	struct mrail_list *pos, *tmp;
	for (unsigned i = 0; i < g->nrails; i++)
		if (g->rails[i])
			tell_one(e, g, g->rails[i]);
	mrail_list_foreach_safe(pos, tmp, &g->dead_rails)
		tell_one(e, g, mrail_list_entry(pos, struct rail, link));
}

/* The failed connection a RAIL_DOWN names, if we still track it. */
static struct rail *down_target(struct gate *g, uint32_t index,
				uint32_t epoch)
{
	struct mrail_list *pos;
	if (g->rails[index] && g->rails[index]->epoch == epoch)
		return g->rails[index];
	for (pos = g->dead_rails.next; pos != &g->dead_rails; pos = pos->next) {
		struct rail *d = mrail_list_entry(pos, struct rail, link);
		if (d->index == index && d->epoch == epoch &&
		    d->state == RAIL_DOWN)
			return d;
	}
	return NULL;
}

int failover_op_failed(struct rail *r)
{
	if (!r || !r->gate || r->gate->state != GATE_UP)
		return 0;
	if (r->state == RAIL_DOWN)
		return 1;
	if (r->state != RAIL_UP || r->bye_in || r->bye_out)
		return 0;
	r->fail_pending = 1;
	return 1;
}

int failover_rail_lost(const struct rail *r)
{
	return r && r->gate && r->gate->state == GATE_UP &&
	       (r->state == RAIL_DOWN || r->fail_pending ||
		(r->reconnecting && r->state != RAIL_UP));
}

int failover_rail_fail(struct mrail_engine *e, struct rail *r,
		       const char *why)
{
	struct gate *g = r->gate;
	double now = mrail_now();

	if (r->state == RAIL_DOWN)
		return 1;
	if (!g || g->state != GATE_UP || g->self || r->bye_in || r->bye_out ||
	    r->state == RAIL_CLOSED ||
	    (r->state != RAIL_UP && !r->reconnecting))
		return 0;
	int was_up = r->state == RAIL_UP;
	if (was_up) {
		r->peer_closed = 0; /* failover_rail_closed sets it after */
		r->stats.failures++;
		r->stats.up_seconds += now - r->up_since;
		r->down_since = now;
		r->down_told = r->down_heard = r->settled = 0;
		r->retry_at = r->backoff = 0;
	}
	r->fail_pending = 0;
	rail_disconnect(e, r, RAIL_DOWN);
	if (was_up) {
		mrail_warn("%s: rail %u (%s %s <-> %s) down: %s; %u of %u "
			   "rail(s) up", g->name, r->index, r->stats.driver,
			   r->stats.local, r->stats.remote, why, g->rails_up,
			   g->nrails);
		rdv_replan(e, g);
	} else {
		/* The peer may have seen this connection up and sent on it:
		 * it learns we took nothing (RAIL_DOWN below) and replays.
		 * We sent nothing numbered on it: nothing to wait for. */
		r->down_told = r->down_heard = 0;
		tell_down(e, g);
		r->settled = 1; /* told later if no rail was up (reconnect) */
		r->backoff = r->backoff * 2 > BACKOFF_MAX ? BACKOFF_MAX
			     : r->backoff * 2 < BACKOFF_MIN ? BACKOFF_MIN
							     : r->backoff * 2;
		r->retry_at = now + r->backoff;
		mrail_debug("%s: rail %u reconnect failed: %s; next in %.2f s",
			    g->name, r->index, why, r->backoff);
	}
	tell_down(e, g);
	if (g->rails_up == 0 && g->all_down_since == 0) {
		g->all_down_since = now;
		mrail_warn("%s: every rail is down; its requests fail in %.1f s "
			   "unless one comes back", g->name, e->rail_timeout);
	}
	if (g->rails_up > 0)
		gate_schedule(e, g);
	return 1;
}

/* Every rail of g is down, each ended by the peer's side (and, for the
 * connecting side, reconnection refused): its process is gone. */
static int peer_gone(const struct gate *g)
{
	if (g->rails_up > 0)
		return 0;
	for (unsigned i = 0; i < g->nrails; i++) {
		const struct rail *r = g->rails[i];
		if (r && !r->peer_closed)
			return 0;
	}
	return 1;
}

int failover_rail_closed(struct mrail_engine *e, struct rail *r,
			 const char *why)
{
	struct gate *g = r->gate;
	int refused = r->state != RAIL_UP; /* a reconnection attempt */
	int was_closed = r->peer_closed;
	if (!failover_rail_fail(e, r, why))
		return 0;
	/* A refused reconnection only says something about a rail whose
	 * connection the peer closed; one that timed out keeps its cause. */
	r->peer_closed = refused ? was_closed : 1;
	if (refused && g->state == GATE_UP && peer_gone(g))
		gate_fail(e, g, MRAIL_ERR_PEER, "every connection was closed "
			  "by the peer and reconnection is refused: the peer "
			  "process is gone");
	return 1;
}

/* Copy the records of a packet the peer never processed into a new one,
 * except those tied to the dead connection: RTR (the receiver asks for
 * its ranges again), PUT_FIN (idem), ACK and BYE. RAIL_DOWN is about
 * another connection and goes again: once we heard the peer's own
 * RAIL_DOWN nothing else resends ours, and without it the peer never
 * replays what it kept of that connection (a message lost for good). */
static void replay_packet(struct mrail_engine *e, struct gate *g,
			  struct rail *dead, struct rail *via,
			  const struct send_op *old)
{
	struct mrail_wire_rec rec;
	const char *why = NULL;
	size_t off = mrail_wire_check_pkt_hdr(old->buf, old->len, &why);
	struct send_op *op = packet_get(e);
	if (!op || !off) {
		if (op)
			packet_put(e, op);
		gate_fail(e, g, MRAIL_ERR_NOMEM, "replaying a packet failed");
		return;
	}
	size_t hdr = op->len;
	for (;;) {
		size_t at = off;
		int more = mrail_wire_next(old->buf, old->len, &off,
					   MRAIL_EAGER_MAX_LIMIT, &rec, &why);
		if (more <= 0)
			break;
		switch (rec.type) {
		case MRAIL_WIRE_RTR:
		case MRAIL_WIRE_PUT_FIN:
		case MRAIL_WIRE_ACK:
		case MRAIL_WIRE_BYE:
			continue;
		default:
			memcpy(op->buf + op->len, old->buf + at, off - at);
			op->len += off - at;
		}
	}
	if (op->len == hdr) {
		packet_put(e, op);
		return;
	}
	g->rails[dead->index]->stats.retx_bytes += op->len;
	if (rail_post_packet(e, via, op)) {
		packet_put(e, op);
		failover_op_failed(via);
	}
}

int failover_on_rail_down(struct mrail_engine *e, struct rail *via,
			  const struct mrail_wire_rail_down *m,
			  const char **why)
{
	struct gate *g = via->gate;
	if (m->rail >= g->nrails || !g->rails[m->rail]) {
		*why = "rail-down notice for no rail";
		return MRAIL_ERR_PROTO;
	}
	struct rail *d = down_target(g, m->rail, m->epoch);
	if (d == via) {
		*why = "rail-down notice for the connection it travels on";
		return MRAIL_ERR_PROTO;
	}
	if (!d || d->down_heard)
		return MRAIL_OK; /* about a connection settled, or again */
	if (d->state == RAIL_UP &&
	    !failover_rail_fail(e, d, "the peer found it failed"))
		return MRAIL_OK;
	if (d->state != RAIL_DOWN)
		return MRAIL_OK;
	if (m->received > d->tx_pseq || m->received < d->peer_acked) {
		*why = "rail-down notice counts packets never sent";
		return MRAIL_ERR_PROTO;
	}
	d->down_heard = 1;
	if (m->received < d->unkept_pseq) {
		/* Injected packets are kept nowhere (drivers/driver.h): only
		 * the peer's death loses them, and then nothing can replay
		 * them. Not silently: the messages are gone. */
		char msg[160];
		snprintf(msg, sizeof msg, "rail %u (%s) lost %llu packet(s) "
			 "that are not kept for replay (its peer processed "
			 "%llu of %u)", d->index, d->stats.driver,
			 (unsigned long long)(d->unkept_pseq - m->received),
			 (unsigned long long)m->received, d->tx_pseq);
		gate_fail(e, g, MRAIL_ERR_PEER, msg);
		return MRAIL_OK;
	}
	struct mrail_list *pos, *tmp;
	mrail_list_foreach_safe(pos, tmp, &d->retained) {
		struct send_op *op = mrail_list_entry(pos, struct send_op, rlink);
		if (op->pseq > m->received && g->state == GATE_UP) {
			struct rail *s = failover_survivor(g, via);
			if (s)
				replay_packet(e, g, d, s, op);
		}
	}
	failover_rail_release(e, d);
	settled(e, g, d);
	return MRAIL_OK;
}

/* ---- coming back ------------------------------------------------------ */

int failover_may_replace(const struct rail *old)
{
	/* A failure not settled yet is settled later, the old connection
	 * kept meanwhile (failover_takeover): epochs tell them apart. */
	return old->state == RAIL_DOWN && old->gate &&
	       old->gate->state == GATE_UP;
}

void failover_takeover(struct mrail_engine *e, struct rail *old,
		       struct rail *r)
{
	(void)e;
	/* Counters and history go on; the old object stays until gate_free
	 * since requests may still point at it (rma fin_rail). */
	struct mrail_rail_stats st = old->stats;
	r->stats = st;
	r->down_since = old->down_since;
	r->reconnecting = 1;
	if (old->settled)
		old->state = RAIL_CLOSED;
	mrail_list_append(&old->gate->dead_rails, &old->link);
}

void failover_rail_up(struct mrail_engine *e, struct rail *r)
{
	struct gate *g = r->gate;
	double now = mrail_now();
	r->up_since = now;
	r->tx_last_move = now;
	r->rx_last = now;
	r->rx_seen = 0;
	r->probe_at = 0;
	r->fail_pending = 0;
	if (r->reconnecting) {
		r->stats.reconnects++;
		r->stats.down_seconds += now - r->down_since;
		mrail_info("%s: rail %u (%s %s <-> %s) up again after %.1f s",
			   g->name, r->index, r->stats.driver, r->stats.local,
			   r->stats.remote, now - r->down_since);
	}
	r->reconnecting = 0;
	r->peer_closed = 0;
	r->down_told = r->down_heard = r->settled = 0;
	r->retry_at = r->backoff = 0;
	g->all_down_since = 0;
	if (g->state == GATE_UP && g->rails_up == 1) {
		/* Back from every rail down: settle what failed, ask again
		 * for what was lost, here. */
		tell_down(e, g);
		rdv_replan(e, g);
	}
	if (g->state == GATE_UP || g->state == GATE_CONNECTING)
		post_owed(e, g);
}

/* Keep a connection whose failure is not settled (no rail was up to
 * tell the peer) while the rail reconnects. */
static int keep_unsettled(struct gate *g, struct rail *r)
{
	struct rail *gh = calloc(1, sizeof *gh);
	if (!gh)
		return MRAIL_ERR_NOMEM;
	mrail_list_init(&gh->link);
	mrail_list_init(&gh->posted);
	mrail_list_init(&gh->retained);
	gh->engine = r->engine;
	gh->gate = g;
	gh->index = r->index;
	gh->local = r->local;
	gh->state = RAIL_DOWN;
	gh->epoch = r->epoch;
	gh->rx_pseq = r->rx_pseq;
	gh->tx_pseq = r->tx_pseq;
	gh->unkept_pseq = r->unkept_pseq;
	gh->peer_acked = r->peer_acked;
	gh->down_told = r->down_told;
	gh->down_told_epoch = r->down_told_epoch;
	gh->down_heard = r->down_heard;
	gh->stats = r->stats;
	while (!mrail_list_empty(&r->retained)) {
		struct send_op *op =
			mrail_list_first(&r->retained, struct send_op, rlink);
		mrail_list_remove(&op->rlink);
		mrail_list_append(&gh->retained, &op->rlink);
	}
	mrail_list_append(&g->dead_rails, &gh->link);
	return MRAIL_OK;
}

static void reconnect(struct mrail_engine *e, struct gate *g, struct rail *r)
{
	struct rail_plan *p = &g->plan[r->index];
	struct local_rail *l = &e->local[p->local_ep];
	double t = e->rail_timeout < e->cfg.connect_timeout
			   ? e->rail_timeout : e->cfg.connect_timeout;

	if ((!r->settled || !r->down_told) && keep_unsettled(g, r) != MRAIL_OK)
		return;
	r->tx_pseq = r->rx_pseq = r->ack_sent = r->peer_acked = 0;
	r->unkept_pseq = 0;
	r->bye_in = r->bye_out = 0;
	r->epoch = (r->epoch + 1) & 0xffff; /* in the HELLO */
	r->down_told = r->down_heard = r->settled = 0;
	r->rx_nkeys = 0;
	r->state = RAIL_CONNECTING;
	r->reconnecting = 1;
	r->deadline = mrail_now() + t;
	r->local = l;
	int rc = l->ops->connect(l->drv, l->local, p->remote_blob,
				 p->remote_len, r, &r->ep);
	if (rc == MRAIL_OK) {
		rail_update_names(r);
		rc = handshake_send_hello(e, r);
	}
	if (rc != MRAIL_OK)
		failover_rail_fail(e, r, mrail_strerror(rc));
}

/* Changes whenever a frame or a payload body starts or ends on r: the
 * driver's upcalls already count them, so the hot path pays nothing. */
static uint64_t rx_activity(const struct rail *r)
{
	return r->stats.rx_packets + 2 * r->stats.rx_chunks + (r->rx_len == 0);
}

/* How long r may stay quiet before we probe it, 0: we do not wait on
 * it. Quick where we asked for chunks or a body is cut mid-way: the
 * failure is found within T + that. Slower where only a rendezvous of
 * its gate is in flight (a sender whose payload sits in a dead link's
 * socket buffer waits for an RDV_DONE with nothing of its own
 * unacknowledged; or a message the peer has not matched yet): the
 * receiver's probes find a single dead link; these are for every link
 * of a host down, and cost an idle-but-pending rail two probes per T. */
static double probe_after(const struct rail *r, double t)
{
	if (r->rx_count > 0 || r->rx_len > 0)
		return t / 4 < PROBE_AFTER_MAX ? t / 4 : PROBE_AFTER_MAX;
	if (!mrail_list_empty(&r->gate->rdv))
		return t / 2;
	return 0;
}

/* A counted packet that elicits the peer's ACK (the ACK record in it
 * makes it non-empty; replays drop it, so it is never sent twice). */
static void send_probe(struct mrail_engine *e, struct rail *r, double now)
{
	struct send_op *op = packet_get(e);
	if (!op)
		return;
	op->len += mrail_wire_put_ack(op->buf + op->len, r->rx_pseq);
	r->ack_sent = r->rx_pseq;
	if (rail_post_packet(e, r, op)) {
		packet_put(e, op);
		failover_op_failed(r);
		return;
	}
	r->probe_at = now;
	mrail_debug("%s: rail %u quiet for %.1f s while we wait on it: probed",
		    r->gate->name, r->index, now - r->rx_last);
}

/* The transport heard the peer's side within t (ep_link_quiet_ms):
 * the link is alive and the peer's host answers, only its process does
 * not progress (a long compute phase), so our acks do not come. A
 * driver that cannot tell leaves the ack rule alone. */
static int link_heard_within(const struct rail *r, double t)
{
	const struct mrail_drv_ops *ops = r->local->ops;
	if (!ops->ep_link_quiet_ms || !r->ep)
		return 0;
	int ms = ops->ep_link_quiet_ms(r->ep);
	return ms >= 0 && ms < t * 1000;
}

/*
 * Liveness from our own acknowledgements (docs/failover.md, "Finding a
 * dead rail"): a counted packet that left (its send completed) and is
 * still unacknowledged after the timeout, on a rail that brought nothing
 * in that long, means the peer is not reachable on it, whichever side's
 * buffers hold the frames. A rail we wait on that goes quiet is probed
 * so that the rule has a packet to time. Returns 1 if r failed.
 */
static int liveness(struct mrail_engine *e, struct rail *r, double now)
{
	uint64_t act = rx_activity(r);
	if (act != r->rx_seen) {
		r->rx_seen = act;
		r->rx_last = now;
		r->probe_at = 0;
	}
	struct send_op *old = NULL;
	if (!mrail_list_empty(&r->retained)) {
		old = mrail_list_first(&r->retained, struct send_op, rlink);
		if (old->in_flight)
			old = NULL; /* still queued: the send watchdog's */
		else if (old->sent_at == 0)
			old->sent_at = now;
	}
	double t = e->rail_timeout;
	if (old && now - old->sent_at > t && now - r->rx_last > t &&
	    !link_heard_within(r, t)) {
		char why[128];
		snprintf(why, sizeof why, "a packet unacknowledged for %.1f s, "
			 "nothing received for %.1f s", now - old->sent_at,
			 now - r->rx_last);
		failover_rail_fail(e, r, why);
		return 1;
	}
	double quiet = probe_after(r, t);
	if (!old && r->probe_at == 0 && quiet > 0 && now - r->rx_last > quiet)
		send_probe(e, r, now);
	return 0;
}

static void tick_gate(struct mrail_engine *e, struct gate *g, double now)
{
	for (unsigned i = 0; i < g->nrails && g->state == GATE_UP; i++) {
		struct rail *r = g->rails[i];
		if (!r)
			continue;
		switch (r->state) {
		case RAIL_UP:
			if (r->fail_pending) {
				failover_rail_fail(e, r, "a send or RDMA "
						   "operation failed");
			} else if (!mrail_list_empty(&r->posted) &&
				   now - r->tx_last_move > e->rail_timeout &&
				   !link_heard_within(r, e->rail_timeout)) {
				/* A peer that does not read (computing) fills
				 * the buffers of a live link: not a failure. */
				char why[96];
				snprintf(why, sizeof why, "nothing sent for "
					 "%.1f s with data pending",
					 now - r->tx_last_move);
				failover_rail_fail(e, r, why);
			} else if (liveness(e, r, now)) {
				break;
			} else if (r->rx_pseq != r->ack_sent) {
				send_standalone_ack(e, r);
			}
			break;
		case RAIL_CONNECTING:
		case RAIL_WAIT_HELLO:
		case RAIL_WAIT_ACK:
			if (r->reconnecting && now > r->deadline)
				failover_rail_fail(e, r, "handshake timed out");
			break;
		case RAIL_DOWN:
			/* Settled; or every rail down: nothing to settle on,
			 * the new connection will carry it. */
			if (is_connector(e, g) &&
			    ((r->settled && r->retry_at > 0) ||
			     (!r->settled && g->rails_up == 0)) &&
			    now >= r->retry_at)
				reconnect(e, g, r);
			break;
		case RAIL_CLOSED:
			break;
		}
	}
	if (g->state == GATE_UP && !is_connector(e, g) && peer_gone(g) &&
	    g->all_down_since > 0 && now - g->all_down_since > DEAD_PEER_GRACE)
		gate_fail(e, g, MRAIL_ERR_PEER, "every connection was closed "
			  "by the peer and it did not reconnect: the peer "
			  "process is gone");
	if (g->state == GATE_UP && g->rails_up == 0 && g->all_down_since > 0 &&
	    now - g->all_down_since > e->rail_timeout) {
		char msg[96];
		snprintf(msg, sizeof msg, "all %u rail(s) down for %.1f s",
			 g->nrails, now - g->all_down_since);
		gate_fail(e, g, MRAIL_ERR_PEER, msg);
	}
}

void failover_tick(struct mrail_engine *e)
{
	double now = engine_now(e);
	if (now < e->failover_next_tick)
		return;
	e->failover_next_tick = now + TICK_PERIOD;
	uint32_t n;
	struct gate **gates = gate_active(e, &n);
	for (uint32_t i = 0; i < n; i++) {
		struct gate *g = gates[i];
		if (g->state == GATE_UP && !g->self)
			tick_gate(e, g, now);
	}
}
