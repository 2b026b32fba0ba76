/*
 * Collect and schedule: isend puts a message on its gate's send queue; the
 * strategy chooses an idle rail; queued messages are packed in order into
 * one packet for it (small messages aggregate whenever rails are busy).
 */
#include "libmrail/engine.h"
#include "strategies/strategy.h"
#include "util/clock.h"
#include "util/iov.h"
#include "util/log.h"

#include <stdlib.h>

/*
 * Eager when small enough and within the credit the receiver granted
 * (credits.c), once `spent` of it is taken by messages packed before this
 * one; else an RTS, whose payload waits in our buffer. A synchronous
 * eager record is 8 bytes longer: it still fits a packet (sized for
 * eager_max) when it is 8 bytes shorter.
 */
static int is_eager_after(const struct gate *g, const struct mrail_request *r,
			  uint64_t spent)
{
	if (!credit_allows(g->cr_tx, spent, r->len))
		return 0;
	if (r->flags & REQF_SYNC)
		return g->eager_max >= 8 && r->len <= g->eager_max - 8;
	return r->len <= g->eager_max;
}

static int is_eager(const struct gate *g, const struct mrail_request *r)
{
	return is_eager_after(g, r, 0);
}

static unsigned busy_entries(const struct gate *g)
{
	return g->nrails < MRAIL_WIRE_BUSY_MAX ? g->nrails : MRAIL_WIRE_BUSY_MAX;
}

/*
 * Tell the receiver, before the first request of the packet, how long each
 * of this host's NICs under the gate's rails is still busy sending for
 * other peers (it plans the payload, and counts what it asked of us
 * itself).
 */
static void put_busy(struct gate *g, struct send_op *op)
{
	uint32_t us[MRAIL_WIRE_BUSY_MAX] = {0};
	unsigned n = busy_entries(g);
	double now = mrail_now();
	for (unsigned i = 0; i < n; i++) {
		if (!g->rails[i])
			continue;
		double t = busy_tx_others(g->rails[i], now) * 1e6;
		us[i] = t >= 4e9 ? UINT32_MAX : (uint32_t)t;
	}
	op->len += mrail_wire_put_busy(op->buf + op->len, us, n);
	op->has_busy = 1;
}

/* A rendezvous request travels with a BUSY record (room kept for one per
 * request; one per packet is written). */
static size_t record_size_after(const struct mrail_engine *e,
				const struct gate *g,
				const struct mrail_request *r, uint64_t spent)
{
	int eager = is_eager_after(g, r, spent);
	size_t imm = (r->flags & REQF_DATA) ? sizeof(struct mrail_wire_imm)
					    : 0;
	if (eager && (r->flags & REQF_SYNC))
		return imm + mrail_wire_eager_sync_size(r->len);
	return imm + (eager ? mrail_wire_eager_size(r->len)
			    : sizeof(struct mrail_wire_rts) +
				      mrail_wire_busy_size(busy_entries(g)) +
				      (r->iovcnt == 1 ? rma_rts_room(e, g)
						      : 0));
}

/* Remote data goes right before its message record. */
static void put_imm(struct send_op *op, const struct mrail_request *r)
{
	if (r->flags & REQF_DATA)
		op->len += mrail_wire_put_imm(op->buf + op->len, r->data);
}

static size_t record_size(const struct mrail_engine *e, const struct gate *g,
			  const struct mrail_request *r)
{
	return record_size_after(e, g, r, 0);
}

/* Synchronous eager: the data leaves now, the send completes when the
 * receiver's SYNC_ACK says a receive matched it (sync.c). */
static int pack_sync(struct mrail_engine *e, struct gate *g, struct rail *rail,
		     struct send_op *op, struct mrail_request *r)
{
	if (!handle_assign(e, r))
		return MRAIL_ERR_NOMEM;
	put_imm(op, r);
	uint8_t *at = op->buf + op->len;
	credit_spend(g, r->len);
	mrail_wire_put_eager_sync(at, r->seq, r->tag, r->id, r->len);
	mrail_iov_to_buf(at + sizeof(struct mrail_wire_eager_sync), r->iov,
			 r->iovcnt, 0, r->len);
	op->len += mrail_wire_eager_sync_size(r->len);
	rail->stats.tx_bytes += r->len;
	r->phase = REQ_SYNC_WAIT;
	mrail_list_append(&g->rdv, &r->gate_link);
	return MRAIL_OK;
}

static int pack_one(struct mrail_engine *e, struct gate *g, struct rail *rail,
		    struct send_op *op, struct mrail_request *r)
{
	uint8_t *at;

	mrail_list_remove(&r->link);
	rail->stats.tx_msgs++;
	if (is_eager(g, r) && (r->flags & REQF_SYNC))
		return pack_sync(e, g, rail, op, r);
	if (is_eager(g, r)) {
		put_imm(op, r);
		at = op->buf + op->len;
		credit_spend(g, r->len);
		mrail_wire_put_eager(at, r->seq, r->tag, r->len);
		mrail_iov_to_buf(at + sizeof(struct mrail_wire_eager), r->iov,
				 r->iovcnt, 0, r->len);
		op->len += mrail_wire_eager_size(r->len);
		rail->stats.tx_bytes += r->len;
		/* The data is in the packet: the buffer is the user's again. */
		r->status.length = r->len;
		request_complete(e, r, MRAIL_OK);
		return MRAIL_OK;
	}
	if (!handle_assign(e, r))
		return MRAIL_ERR_NOMEM;
	if (!op->has_busy)
		put_busy(g, op);
	/* Keys for RDMA read before the RTS they serve. */
	int rc = rma_put_send_keys(e, g, r, op);
	if (rc)
		return rc;
	put_imm(op, r);
	at = op->buf + op->len;
	/* A copy's sender is done: the receiver may pull it early. A
	 * sender that keeps progressing may be asked to copy a part. */
	unsigned flags = 0;
	if (r->flags & REQF_DETACHED)
		flags = MRAIL_WIRE_RTS_BUFFERED;
	else if ((r->flags & REQF_WAITING) || e->progress_thread_running)
		flags = MRAIL_WIRE_RTS_ATTENTIVE;
	op->len += mrail_wire_put_rts_flags(at, r->seq, r->tag, r->len, r->id,
					    flags);
	busy_tx_reserve(g, r->len);
	r->phase = REQ_RDV_WAIT_RTR;
	mrail_list_append(&g->rdv, &r->gate_link);
	return MRAIL_OK;
}

static void set_scheduled(struct mrail_engine *e, struct gate *g, int on)
{
	if (on && !g->scheduled)
		mrail_list_append(&e->sched_gates, &g->sched_link);
	else if (!on && g->scheduled)
		mrail_list_remove(&g->sched_link);
	g->scheduled = on;
}

/*
 * Aggregated packets on a gate with several rails: at most this much, so
 * that the strategy can spread a burst of small messages over the rails by
 * predicted finish. One 64 KiB packet on the slow rail of a 1000 + 400
 * Mbit/s pair takes 1.3 ms, longer than a 128 KiB window over both rails:
 * windows of 2-16 KiB messages held for one flush (burst.c) went at
 * 0.89-0.98 of their rate without holding on the netlab.
 */
#define SPREAD_PACKET_ROOM 16384

/* The head of the send queue as strategies see it. */
static void queue_view(const struct mrail_engine *e, const struct gate *g,
		       unsigned nrails, size_t *bytes,
		       struct mrail_send_queue *q)
{
	const struct mrail_list *pos = g->sendq.next;
	uint64_t spent = 0; /* credit taken by the messages before */
	q->known = 0;
	for (; pos != &g->sendq && q->known < MRAIL_QUEUE_VIEW; pos = pos->next) {
		const struct mrail_request *r =
			mrail_list_entry(pos, struct mrail_request, link);
		bytes[q->known++] = record_size_after(e, g, r, spent);
		if (is_eager_after(g, r, spent))
			spent += r->len;
	}
	q->more = pos != &g->sendq;
	q->record_bytes = bytes;
	q->packet_room = e->packet_cap - sizeof(struct mrail_wire_pkt_hdr);
	if (nrails > 1 && q->packet_room > SPREAD_PACKET_ROOM)
		q->packet_room = SPREAD_PACKET_ROOM;
}

/* The caller was told its send completed: a failure now can only be
 * reported here (the message is lost). */
static void detached_done(mrail_request_t *r, const mrail_status_t *st,
			  void *ctx)
{
	(void)r;
	(void)ctx;
	if (st->error != MRAIL_OK)
		mrail_error("a send of %zu bytes to peer %u, already complete "
			    "for its caller, failed afterwards (%s): the "
			    "message is lost", (size_t)st->length,
			    (unsigned)st->source, mrail_strerror(st->error));
}

/*
 * A standard send of eager size that finds too little credit goes as an
 * RTS, and an RTS completes only once the receiver matched it: a program
 * whose ranks all send before they receive (legal, and what every MPI
 * lets small messages do) would wait for ever. So the payload is copied
 * into a request of the engine's own, which takes the queued one's place,
 * and the caller's send completes now, as it would have eagerly. The
 * copies are capped per peer by unexpected_peer_max and in all by
 * unexpected_max, request overhead included (each copy is one RTS the
 * receiver keeps until it matches it, so the count must be bounded, not
 * only the bytes); beyond that the send leaves as a plain RTS and is
 * copied once room comes back (send_detach_waiting), or waits for its
 * match (docs/flow-control.md).
 */
static int detach_room(const struct mrail_engine *e, const struct gate *g,
		       const struct mrail_request *r)
{
	uint64_t charge = REQ_DETACHED_CHARGE(r);
	return g->detached_bytes + charge <= e->cfg.unexpected_peer_max &&
	       e->detached_bytes + charge <= e->cfg.unexpected_max;
}

/* A copy of r's payload in a request of the engine's own, counted
 * against the caps; the caller puts it in r's place and completes r. */
static struct mrail_request *detached_copy(struct mrail_engine *e,
					   struct gate *g,
					   const struct mrail_request *r)
{
	struct mrail_request *c = malloc(sizeof *c + r->len);
	if (!c)
		return NULL;
	*c = *r;
	mrail_list_init(&c->link);
	mrail_list_init(&c->gate_link);
	mrail_list_append(&e->requests, &c->all_link);
	c->flags = (r->flags & ~(unsigned)(REQF_STORAGE | REQF_KEEP)) |
		   REQF_DETACHED;
	c->cb = detached_done;
	c->cb_ctx = NULL;
	c->cb_pending = 0;
	c->iov1.iov_base = c + 1;
	c->iov1.iov_len = r->len;
	mrail_iov_to_buf(c + 1, r->iov, r->iovcnt, 0, r->len);
	c->iov = &c->iov1;
	c->iovcnt = 1;
	c->ranges = NULL;
	c->nranges = c->ranges_cap = 0;
	c->rma = NULL;
	e->detached_bytes += REQ_DETACHED_CHARGE(c);
	g->detached_bytes += REQ_DETACHED_CHARGE(c);
	return c;
}

/* c takes the list position n of r holds (r's node left empty). */
static void list_take_place(struct mrail_list *c, struct mrail_list *n)
{
	c->prev = n->prev;
	c->next = n->next;
	c->prev->next = c;
	c->next->prev = c;
	mrail_list_init(n);
}

static struct mrail_request *detach_if_rts(struct mrail_engine *e,
					   struct gate *g,
					   struct mrail_request *r)
{
	if ((r->flags & (REQF_SYNC | REQF_DETACHED)) || is_eager(g, r) ||
	    r->len > g->eager_max)
		return r;
	if (!detach_room(e, g, r)) {
		if (e->detached_bytes + REQ_DETACHED_CHARGE(r) >
		    e->cfg.unexpected_max)
			e->detach_starved = 1; /* see send_detach_waiting */
		return r;
	}
	struct mrail_request *c = detached_copy(e, g, r);
	if (!c)
		return r; /* it waits for the match instead */
	list_take_place(&c->link, &r->link); /* in the send queue */
	r->status.length = r->len;
	request_complete(e, r, MRAIL_OK);
	return c;
}

/*
 * Room for copies came back (the receiver took some): standard sends
 * that found the caps full and left as a plain RTS are copied now and
 * complete, as they would have at post time. Left to their match, their
 * callers would wait until the receiver has drained everything sent
 * before them, which after a failover (a rail timeout's worth of earlier
 * messages held by both ends) takes seconds for small messages under
 * load. Not a send the receiver answered already, nor one whose RTS gave
 * the receiver an RDMA key to the caller's buffer (it may read it at any
 * moment), nor a synchronous one (it completes on its match).
 */
void send_detach_waiting(struct mrail_engine *e, struct gate *g)
{
	struct mrail_list *pos, *tmp;

	g->detach_retry = 0;
	if (g->state != GATE_UP)
		return;
	mrail_list_foreach_safe(pos, tmp, &g->rdv) {
		struct mrail_request *r =
			mrail_list_entry(pos, struct mrail_request, gate_link);
		if (r->kind != REQ_SEND || r->phase != REQ_RDV_WAIT_RTR ||
		    r->rma || r->outstanding ||
		    (r->flags & (REQF_SYNC | REQF_DETACHED)) ||
		    r->len > g->eager_max || r->link.next != &r->link)
			continue;
		if (!detach_room(e, g, r)) {
			/* The engine's cap, not this peer's: the room other
			 * peers' copies free goes to us too. */
			if (e->detached_bytes + REQ_DETACHED_CHARGE(r) >
			    e->cfg.unexpected_max)
				e->detach_starved = 1;
			break;
		}
		struct mrail_request *c = detached_copy(e, g, r);
		if (!c)
			break;
		list_take_place(&c->gate_link, &r->gate_link);
		handle_rebind(e, r, c);
		r->status.length = r->len;
		request_complete(e, r, MRAIL_OK);
	}
}

/* One packet of at most `count` queued messages on `rail`. */
static int send_packet(struct mrail_engine *e, struct gate *g,
		       struct rail *rail, unsigned count)
{
	struct send_op *op = packet_get(e);
	if (!op)
		return MRAIL_ERR_NOMEM;
	int rc = MRAIL_OK;
	/* Credit for the peer's eager messages rides along when there is
	 * room beside our first message. */
	credit_piggyback(e, g, op, record_size(e, g,
		mrail_list_first(&g->sendq, struct mrail_request, link)));
	for (unsigned k = 0; rc == MRAIL_OK && k < count &&
			     !mrail_list_empty(&g->sendq); k++) {
		struct mrail_request *r = detach_if_rts(e, g,
			mrail_list_first(&g->sendq, struct mrail_request, link));
		if (op->len + record_size(e, g, r) > op->cap)
			break;
		if (k == 0)
			hooks_msg_tx(e, rail, r->tag);
		rc = pack_one(e, g, rail, op, r);
	}
	/* Something always fits: eager_max fits a packet. */
	if (rc == MRAIL_OK)
		rc = rail_post_packet(e, rail, op);
	if (rc != MRAIL_OK) {
		packet_put(e, op);
		gate_fail(e, g, rc, "posting a packet failed");
	}
	return rc;
}

/*
 * A lone message on a gate with one rail, under a strategy that would
 * send it there alone (mrail_strategy_lone_direct): the rail, skipping the
 * views and the strategy call (a fifth of an 8 B send's instructions on
 * shm). NULL when the general path decides. Offload needs the views.
 */
static struct rail *lone_rail(const struct mrail_engine *e,
			      const struct gate *g, int rail_idle)
{
	if (g->nrails != 1 || e->offload || g->sendq.next->next != &g->sendq ||
	    (rail_idle && e->strategy->rail_idle) ||
	    !mrail_strategy_lone_direct(e->strategy))
		return NULL;
	struct rail *r = g->rails[0];
	return r && r->state == RAIL_UP ? r : NULL;
}

/*
 * Hand the gate's queued messages to the strategy: at post time through
 * eager_rail; after progress (a rail may have become idle) through
 * rail_idle, offered each idle rail in turn, when the strategy has it.
 */
static void gate_schedule_mode(struct mrail_engine *e, struct gate *g,
			       int rail_idle)
{
	struct mrail_rail_view views[MRAIL_MAX_RAILS];
	size_t bytes[MRAIL_QUEUE_VIEW];
	struct mrail_send_queue q;
	const struct mrail_strategy_ops *s = e->strategy;

	while (g->state == GATE_UP && !mrail_list_empty(&g->sendq)) {
		struct rail *lone = lone_rail(e, g, rail_idle);
		if (lone) {
			if (!rail_takes_packets(lone, lone->local->ops->ep_backlog(
							      lone->ep)))
				break; /* as below: only an idle rail */
			struct mrail_request *m = mrail_list_first(
				&g->sendq, struct mrail_request, link);
			if (!rail_idle &&
			    burst_hold(e, g, lone, record_size(e, g, m),
				       e->packet_cap -
					       sizeof(struct mrail_wire_pkt_hdr),
				       1))
				break;
			if (send_packet(e, g, lone, 1) != MRAIL_OK)
				break;
			if (!rail_idle)
				burst_sent(e, g, lone);
			continue;
		}
		unsigned n = gate_rail_views(g, views, VIEW_SEND), idle = 0;
		for (unsigned i = 0; i < n; i++)
			idle += views[i].idle != 0;
		/* Only an idle rail takes a packet: a gate whose rails are
		 * all stuck (a stopped peer) costs the others no more. */
		if (idle == 0)
			break;
		struct mrail_request *head =
			mrail_list_first(&g->sendq, struct mrail_request, link);
		uint64_t head_len = head->len;
		if (e->offload && is_eager(g, head) &&
		    !(head->flags & (REQF_SYNC | REQF_DATA)) &&
		    offload_try(e, g, head)) {
			credit_spend(g, head_len);
			continue;
		}
		queue_view(e, g, n, bytes, &q);
		unsigned count = 0;
		int pick = -1;
		if (rail_idle && s->rail_idle) {
			for (unsigned i = 0; i < n && pick < 0; i++) {
				count = 0;
				if (views[i].idle &&
				    s->rail_idle(e->strategy_state,
						 g->strategy_peer, views, n, i,
						 &q, &count) == 1)
					pick = (int)i;
			}
		} else {
			pick = s->eager_rail(e->strategy_state, g->strategy_peer,
					     views, n, &q, &count);
		}
		if (pick < 0 || (unsigned)pick >= n || !views[pick].idle)
			break;
		struct rail *rail = g->rails[views[pick].index];
		unsigned fit = count ? count : 1;
		if (!rail_idle &&
		    burst_hold(e, g, rail, mrail_send_queue_bytes(&q, fit),
			       q.packet_room, fit == q.known && !q.more))
			break;
		/* What sending one eager message whole costs, for the offload
		 * guard (libmrail/offload/guard.c). */
		int timed = e->offload && count <= 1 && is_eager(g, head) &&
			    guard_wants_whole(&e->offload->guard, head->len);
		uint64_t len = head->len;
		double t0 = timed ? mrail_now() : 0;
		if (send_packet(e, g, rail, fit) != MRAIL_OK)
			break;
		if (!rail_idle)
			burst_sent(e, g, rail);
		if (timed)
			guard_note_whole(&e->offload->guard, len,
					 mrail_now() - t0);
	}
	set_scheduled(e, g, g->state == GATE_UP && !mrail_list_empty(&g->sendq));
}

void gate_schedule(struct mrail_engine *e, struct gate *g)
{
	ENGINE_ASSERT_LOCKED(e);
	gate_schedule_mode(e, g, 0);
}

void schedule_pending(struct mrail_engine *e)
{
	ENGINE_ASSERT_LOCKED(e);
	struct mrail_list *pos, *tmp;
	mrail_list_foreach_safe(pos, tmp, &e->sched_gates)
		gate_schedule_mode(e, mrail_list_entry(pos, struct gate,
						       sched_link), 1);
}

int send_post(struct mrail_engine *e, struct gate *g, struct mrail_request *r)
{
	ENGINE_ASSERT_LOCKED(e);
	r->seq = g->next_send_seq++;
	r->phase = REQ_QUEUED;
	mrail_list_append(&g->sendq, &r->link);
	gate_first_use(e, g); /* lazy connection: connects an idle gate */
	gate_schedule(e, g);
	return MRAIL_OK;
}

/*
 * send_direct through a driver that injects: the packet as pieces (its
 * records, the caller's payload, the padding) for rail_post_pieces, which
 * writes them into the ring without staging them in a packet.
 */
static int send_pieces(struct mrail_engine *e, struct gate *g,
		       struct rail *rail, const struct iovec *iov, int iovcnt,
		       size_t len, uint64_t tag,
		       const struct mrail_req_args *args)
{
	static const uint8_t zeros[8];
	uint8_t head[sizeof(struct mrail_wire_pkt_hdr) +
		     sizeof(struct mrail_wire_credit) +
		     sizeof(struct mrail_wire_imm) +
		     sizeof(struct mrail_wire_eager)];
	struct iovec v[RAIL_PIECES_MAX + 1];
	size_t hl = mrail_wire_put_pkt_hdr(head);
	size_t imm = (args->flags & MRAIL_REQ_DATA)
			     ? sizeof(struct mrail_wire_imm) : 0;
	/* What the packet would be if the driver declines: it must fit. */
	if (hl + sizeof(struct mrail_wire_credit) + imm +
		    mrail_wire_eager_size(len) <= e->packet_cap)
		hl += credit_piggyback_at(e, g, head + hl);
	hooks_msg_tx(e, rail, tag);
	rail->stats.tx_msgs++;
	if (imm)
		hl += mrail_wire_put_imm(head + hl, args->data);
	credit_spend(g, len);
	hl += mrail_wire_put_eager_head(head + hl, g->next_send_seq++, tag, len);
	int n = 0;
	v[n++] = (struct iovec){head, hl};
	for (int i = 0; i < iovcnt; i++)
		if (iov[i].iov_len)
			v[n++] = iov[i];
	if (mrail_wire_pad8(len) > len)
		v[n++] = (struct iovec){(void *)zeros, mrail_wire_pad8(len) - len};
	rail->stats.tx_bytes += len;
	int rc = rail_post_pieces(e, rail, v, n);
	if (rc != MRAIL_OK) {
		gate_fail(e, g, rc, "posting a packet failed");
		return rc;
	}
	burst_sent(e, g, rail);
	return MRAIL_OK;
}

/*
 * Where a lone eager message of `need` record bytes leaves at once, as
 * gate_schedule_mode would send it at post time; NULL when it would wait
 * (no idle rail, or held for a burst). One rail under a strategy that
 * sends a lone message there (lone_rail): no views and no strategy call.
 * Several rails: the strategy's eager_rail decides, offered this message
 * alone, exactly as it would be offered the queue holding only it.
 */
static struct rail *direct_rail(struct mrail_engine *e, struct gate *g,
				size_t need)
{
	size_t room = e->packet_cap - sizeof(struct mrail_wire_pkt_hdr);
	struct rail *rail;
	if (g->nrails == 1) {
		rail = g->rails[0];
		if (!mrail_strategy_lone_direct(e->strategy) || !rail ||
		    rail->state != RAIL_UP ||
		    rail->local->ops->ep_backlog(rail->ep) != 0)
			return NULL;
	} else {
		struct mrail_rail_view views[MRAIL_MAX_RAILS];
		size_t bytes[1] = {need};
		unsigned n = gate_rail_views(g, views, VIEW_SEND), count = 0;
		unsigned idle = 0;
		for (unsigned i = 0; i < n; i++)
			idle += views[i].idle != 0;
		if (idle == 0) /* the strategy is asked only with one */
			return NULL;
		if (n > 1 && room > SPREAD_PACKET_ROOM)
			room = SPREAD_PACKET_ROOM;
		struct mrail_send_queue q = {1, 0, bytes, room};
		int pick = e->strategy->eager_rail(e->strategy_state,
						   g->strategy_peer, views, n,
						   &q, &count);
		if (pick < 0 || (unsigned)pick >= n || !views[pick].idle)
			return NULL;
		rail = g->rails[views[pick].index];
	}
	/* Held: queued there by the general path, as it would be. */
	return burst_hold(e, g, rail, need, room, 1) ? NULL : rail;
}

/*
 * An eager send with MRAIL_REQ_IMMEDIATE that nothing stands before: the
 * gate is up, nothing is queued, and an idle rail would take the message
 * now (direct_rail). Its caller wants no handle when it completes inside
 * the post, so no request is made: the payload goes from the caller's
 * buffer into a packet, as btl vader's sendi does (or, through a driver
 * that injects, straight into its ring). The request's allocation,
 * queueing and release were 40 % of an 8 B send's instructions over shm
 * (docs/driver-shm.md). Returns 1 when it took the send (*rc its
 * result), 0 for the general path.
 */
int send_direct(struct mrail_engine *e, mrail_peer_t dest,
		const struct iovec *iov, int iovcnt, const void *buf,
		size_t len, uint64_t tag, const struct mrail_req_args *args,
		int *rc)
{
	ENGINE_ASSERT_LOCKED(e);
	struct gate *g = gate_get(e, dest);
	if (!g || g->state != GATE_UP || g->self || e->offload ||
	    !mrail_list_empty(&g->sendq) || (args->flags & MRAIL_REQ_SYNC))
		return 0;
	struct iovec one;
	if (!iov) {
		one.iov_base = (void *)buf;
		one.iov_len = len;
		iov = &one;
		iovcnt = 1;
	} else {
		len = mrail_iov_length(iov, iovcnt);
	}
	if (len > g->eager_max || !credit_allows(g->cr_tx, 0, len))
		return 0;
	size_t imm = (args->flags & MRAIL_REQ_DATA)
			     ? sizeof(struct mrail_wire_imm) : 0;
	size_t need = imm + mrail_wire_eager_size(len);
	struct rail *rail = direct_rail(e, g, need);
	if (!rail)
		return 0;
	if (rail->local->ops->inject && iovcnt <= RAIL_PIECES_MAX - 3) {
		*rc = send_pieces(e, g, rail, iov, iovcnt, len, tag, args);
		return 1;
	}
	struct send_op *op = packet_get(e);
	if (!op)
		return 0;
	credit_piggyback(e, g, op, need);
	if (op->len + need > op->cap) {
		packet_put(e, op);
		return 0;
	}
	hooks_msg_tx(e, rail, tag);
	rail->stats.tx_msgs++;
	if (imm)
		op->len += mrail_wire_put_imm(op->buf + op->len, args->data);
	uint8_t *at = op->buf + op->len;
	credit_spend(g, len);
	mrail_wire_put_eager(at, g->next_send_seq++, tag, len);
	mrail_iov_to_buf(at + sizeof(struct mrail_wire_eager), iov, iovcnt, 0,
			 len);
	op->len += mrail_wire_eager_size(len);
	rail->stats.tx_bytes += len;
	*rc = rail_post_packet(e, rail, op);
	if (*rc != MRAIL_OK) {
		packet_put(e, op);
		gate_fail(e, g, *rc, "posting a packet failed");
		return 1;
	}
	burst_sent(e, g, rail);
	return 1;
}

int send_start(struct mrail_engine *e, mrail_peer_t dest,
	       const struct iovec *iov, int iovcnt, const void *buf, size_t len,
	       uint64_t tag, const struct mrail_req_args *args,
	       struct mrail_request **out)
{
	ENGINE_ASSERT_LOCKED(e);
	struct gate *g = gate_get(e, dest);
	if (!g)
		return MRAIL_ERR_NOT_FOUND;
	if (g->state == GATE_FAILED || g->state == GATE_CLOSED)
		return g->error;
	struct mrail_request *r =
		request_new_x(e, REQ_SEND, iov, iovcnt, buf, len, args);
	if (!r)
		return MRAIL_ERR_NOMEM;
	r->gate = g;
	r->peer = dest;
	r->tag = tag;
	r->status.source = dest;
	r->status.tag = tag;
	int rc = g->self ? self_send(e, g, r) : send_post(e, g, r);
	if (rc != MRAIL_OK) {
		request_free(e, r);
		r = NULL;
	}
	*out = r;
	return rc;
}
