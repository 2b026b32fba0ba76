/*
 * Per-NIC pacing of payload chunks (docs/pacing.md).
 *
 * A rendezvous sender answers each receiver's RTRs with DATA frames on the
 * rails the receiver chose. Handed to the kernel at once, the frames of
 * two peers' messages sit in two sockets of one NIC, and the NIC (its
 * qdisc) alternates between them packet by packet: both messages move at
 * half the NIC's rate and end together, while the receivers' plans (and
 * the busy-until record the sender reported) assumed the first message
 * would have the NIC first. Here each NIC serves one connection's frames
 * at a time: a frame for another connection waits, in arrival order,
 * until the driver has completed every frame handed to it before; frames
 * of the connection being served go straight through unless others wait
 * (arrival order, so nobody waits forever). One peer at a time, as in a
 * single stream, never waits: nothing changes for it.
 *
 * A TCP send completes when the kernel has the bytes, not when they left:
 * a socket takes megabytes at once, and what it holds still shares the
 * NIC with the next connection's frames. So the next connection also
 * waits until the kernel has sent every byte of the current one
 * (SIOCOUTQNSD on the rail's socket, read at each progress pass while
 * something waits): sent bytes not yet acknowledged are in the NIC's
 * queue ahead of anything that follows, in order, while bytes still
 * unsent would be interleaved with the next connection's packets as both
 * sockets' windows open (with 64 KiB allowed unsent, the first of two
 * 1 MiB messages ended up to 1.4x later than planned: docs/pacing.md). The
 * queued bytes cover the NIC until the next connection's first packets
 * join them.
 *
 * Order. Frames wait in the order their sends were first answered (the
 * first RTR to arrive for each, on any NIC), not in the order they reach
 * each NIC: two receivers answer at about the same moment, one rail of
 * each may come in before the other's, and with each NIC serving a
 * different message first both would end late together. So a frame also
 * waits while a send to another peer that was answered before it, on
 * another NIC, has not yet been asked for all of its bytes and may still
 * be asked on this NIC (for at most PACE_ORDER_WAIT: a receiver taken off
 * its CPU between two answers must not idle the NIC for long). Sends with
 * one-sided chunks (RDMA reads by the receiver, no RTR for them) take no
 * part: the engine cannot tell their last answer.
 *
 * Payload never holds a connection's other traffic for long. A DATA frame
 * handed to a driver is ahead of everything sent on that connection after
 * it: a chunk of megabytes handed whole held the RTS, RTR and eager
 * messages that followed for as long as the chunk took (25 ms for 3 MiB
 * at 1 Gbit/s), and in a bidirectional stream each side's answers waited
 * behind its own payload, so the two directions took turns (half the
 * bandwidth in about one run of three: docs/pacing.md, "Answers behind
 * payload"). So chunks are cut into frames of at most half of what the
 * rail moves in PACE_AHEAD, and a rail's driver holds at most that much
 * payload; the next frame goes when one completes. (The kernel's part
 * is the driver's: tcp bounds a socket's unsent bytes, TCP_NOTSENT_LOWAT.)
 *
 * A connection whose frames stop moving (a receiver that does not read)
 * must not hold the NIC for everyone: after PACE_STALL seconds in which
 * neither the driver took any of its bytes nor the kernel sent any, the
 * next waiting frame goes anyway. Both count: a full socket buffer of
 * megabytes takes new bytes from the driver only every few tens of
 * milliseconds (when a third of it has drained), while the kernel sends
 * all the time.
 */
#include "libmrail/engine.h"
#include "util/clock.h"
#include "util/log.h"

#include <linux/sockios.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#define PACE_STALL 0.005
/* A receiver's answers on its rails leave together and normally arrive
 * a fraction of a millisecond apart (0.1-0.4 ms in netlab traces, three
 * ranks on two cores); one descheduled in between can take longer. */
#define PACE_ORDER_WAIT 0.001
/* A rail's driver holds at most the payload the rail moves in this long
 * (within the bounds below): enough that the rail never runs dry between
 * two progress passes of a caller that polls, little enough that a
 * packet posted behind it is not held for long. */
#define PACE_AHEAD 0.002
#define PACE_AHEAD_MIN ((uint64_t)256 << 10)
#define PACE_AHEAD_MAX ((uint64_t)16 << 20)

int pace_config(struct mrail_engine *e)
{
	e->pace = 1;
	return config_env_switch("MRAIL_PACE", "1 (pace each NIC, the default) "
				 "or 0 (hand chunks to the drivers at once)",
				 &e->pace);
}

static uint64_t ahead_of(const struct rail *r)
{
	double b = r->bandwidth * PACE_AHEAD;

	if (!(b > (double)PACE_AHEAD_MIN)) /* also a rail with no model */
		return PACE_AHEAD_MIN;
	return b < (double)PACE_AHEAD_MAX ? (uint64_t)b : PACE_AHEAD_MAX;
}

uint64_t pace_frame_max(const struct mrail_engine *e, const struct rail *r)
{
	return e->pace ? ahead_of(r) / 2 : UINT64_MAX;
}

/* Would op take r's driver beyond its share of payload? (Never the first
 * frame: a frame larger than the share still goes, alone.) */
static int over_ahead(const struct rail *r, const struct send_op *op)
{
	return r->pace_inflight > 0 &&
	       r->pace_inflight + op->bytes > ahead_of(r);
}

static struct mrail_list *queue_of(struct local_rail *l)
{
	/* Local rails are filled in by several paths (listed rails,
	 * interfaces); the queue starts on first use. */
	if (!l->pace_q.next)
		mrail_list_init(&l->pace_q);
	return &l->pace_q;
}

/* Bytes the kernel holds for r's socket and has not sent (0 if the
 * driver has no socket or the kernel cannot say). */
static uint64_t kernel_unsent(const struct rail *r)
{
	struct mrail_drv_ep_info info;
	int n = 0;

	if (!r->ep || r->state != RAIL_UP || !r->local->ops->ep_query)
		return 0;
	info.fd = -1;
	r->local->ops->ep_query(r->ep, &info);
	if (info.fd < 0 || (info.local.ss_family != AF_INET &&
			    info.local.ss_family != AF_INET6))
		return 0;
	if (ioctl(info.fd, SIOCOUTQNSD, &n) < 0 || n < 0)
		return 0;
	return (uint64_t)n;
}

/* Has the connection l serves moved since the last look (the driver
 * took bytes, or the kernel sent some)? Records what it saw. */
static int owner_moved(struct local_rail *l, uint64_t *unsent)
{
	struct rail *owner = l->pace_rail;
	int up = owner && owner->ep && owner->state == RAIL_UP;
	uint64_t backlog = up ? owner->local->ops->ep_backlog(owner->ep) : 0;
	int moved = 0;

	*unsent = up ? kernel_unsent(owner) : 0;
	if (backlog != l->pace_driver_backlog) {
		l->pace_driver_backlog = backlog;
		moved = 1;
	}
	if (*unsent != l->pace_backlog) {
		l->pace_backlog = *unsent;
		moved = 1;
	}
	return moved;
}

/* May a frame of r go to l's driver now, the queue aside? */
static int free_for(struct local_rail *l, const struct rail *r)
{
	uint64_t unsent;

	if (!l->pace_rail || l->pace_rail == r)
		return 1;
	if (owner_moved(l, &unsent))
		l->pace_moved_at = mrail_now();
	return l->pace_ops == 0 && unsent == 0;
}

void pace_on_rtr(struct mrail_engine *e, struct mrail_request *s,
		 uint64_t len)
{
	if (!e->pace)
		return;
	s->pace_asked = len < s->expected - s->pace_asked
				? s->pace_asked + len
				: s->expected;
	if (s->pace_ticket)
		return;
	s->pace_ticket = ++e->pace_ticket;
	if (s->pace_asked < s->expected && !s->rma &&
	    e->pace_npending < PACE_PENDING_MAX)
		e->pace_pending[e->pace_npending++] = (struct pace_pending){
			.id = s->id, .ticket = s->pace_ticket,
			.since = mrail_now()};
}

static int gate_uses(const struct gate *g, const struct local_rail *l)
{
	for (unsigned i = 0; i < g->nrails; i++)
		if (g->rails[i]->local == l && g->rails[i]->state == RAIL_UP)
			return 1;
	return 0;
}

/* Must op wait for a send to another peer answered before it that may
 * still be asked for bytes on l? Forgets the sends fully answered. */
static int order_waits(struct mrail_engine *e, const struct local_rail *l,
		       const struct send_op *op)
{
	double now = mrail_now();

	for (unsigned i = 0; i < e->pace_npending;) {
		const struct pace_pending *p = &e->pace_pending[i];
		const struct mrail_request *s = handle_lookup(e, p->id);
		if (!s || s->kind != REQ_SEND || s->phase != REQ_RDV_ACTIVE ||
		    s->pace_asked >= s->expected ||
		    now - p->since > PACE_ORDER_WAIT) {
			e->pace_pending[i] = e->pace_pending[--e->pace_npending];
			continue;
		}
		if (p->ticket < op->req->pace_ticket &&
		    s->gate != op->rail->gate && gate_uses(s->gate, l))
			return 1;
		i++;
	}
	return 0;
}

static int may_go(struct mrail_engine *e, struct local_rail *l,
		  const struct send_op *op)
{
	if (!e->pace)
		return 1;
	if (!mrail_list_empty(queue_of(l)) || over_ahead(op->rail, op))
		return 0;
	if (e->pace_npending && order_waits(e, l, op))
		return 0;
	return free_for(l, op->rail);
}

/* Queue op on l in the order of its send's ticket, but never ahead of a
 * frame of its own rail (a rail's frames leave in the order their RTRs
 * came: the receiver matches arrivals to requests by that order). */
static void enqueue(struct mrail_list *q, struct send_op *op)
{
	struct mrail_list *pos = q;

	while (pos->prev != q) {
		const struct send_op *before =
			mrail_list_entry(pos->prev, struct send_op, link);
		if (before->rail == op->rail ||
		    before->req->pace_ticket <= op->req->pace_ticket)
			break;
		pos = pos->prev;
	}
	mrail_list_insert_before(pos, &op->link);
}

/* Hand op to the driver; on failure nothing of it is posted. */
static int hand(struct mrail_engine *e, struct send_op *op,
		const struct iovec *body, int cnt)
{
	struct rail *r = op->rail;
	struct local_rail *l = r->local;

	if (mrail_list_empty(&r->posted))
		r->tx_last_move = mrail_now();
	mrail_list_append(&r->posted, &op->link);
	op->handed = 1;
	if (e->pace) /* off: chunks go whole, and packets wait for idle */
		r->pace_inflight += op->bytes;
	if (l->pace_ops++ == 0 || l->pace_rail != r) {
		l->pace_rail = r;
		l->pace_moved_at = mrail_now();
	}
	trace_op(e, TRACE_POST, op);
	/* Per frame, when it goes: a tagger must see this message's tag
	 * before its bytes enter the socket, not when the RTR came. */
	hooks_msg_tx(e, r, op->req->tag);
	int rc = r->local->ops->send(r->ep, op->buf, op->len, body, cnt, op);
	if (rc) {
		mrail_list_remove(&op->link);
		op->handed = 0;
		if (e->pace)
			r->pace_inflight -= op->bytes;
		l->pace_ops--;
		return rc;
	}
	r->stats.tx_chunks++;
	r->stats.tx_bytes += op->bytes;
	r->stats.tx_wire_bytes += op->len + op->bytes;
	return MRAIL_OK;
}

int pace_data(struct mrail_engine *e, struct send_op *op,
	      const struct iovec *body, int cnt)
{
	struct rail *r = op->rail;
	struct local_rail *l = r->local;

	if (may_go(e, l, op))
		return hand(e, op, body, cnt);
	/* The caller's iovec is gone by the time the frame goes. */
	memcpy(op->held_iov, body, sizeof *body * (size_t)cnt);
	op->held_cnt = cnt;
	op->held = 1;
	enqueue(queue_of(l), op);
	r->pace_held++;
	e->pace_held++;
	trace_op(e, TRACE_QUEUE, op);
	return MRAIL_OK;
}

/* Take op off l's queue and hand it to its driver (settled as failed,
 * failing the rail, if it cannot go). */
static void release_one(struct mrail_engine *e, struct send_op *op)
{
	struct rail *r = op->rail;

	mrail_list_remove(&op->link);
	op->held = 0;
	r->pace_held--;
	e->pace_held--;
	int rc = r->state == RAIL_UP && r->ep
			 ? hand(e, op, op->held_iov, op->held_cnt)
			 : MRAIL_ERR_PEER;
	if (rc != MRAIL_OK)
		rail_op_done(e, op, rc); /* fails the rail */
}

/* The first frame waiting on l of another connection than the one l
 * serves: what goes when that one stopped moving (its own frames would
 * not help anyone). */
static struct send_op *first_of_others(struct local_rail *l)
{
	struct mrail_list *pos, *q = queue_of(l);

	for (pos = q->next; pos != q; pos = pos->next) {
		struct send_op *op = mrail_list_entry(pos, struct send_op, link);
		if (op->rail != l->pace_rail)
			return op;
	}
	return NULL;
}

/* Frames waiting on l that may go now, in order; with force, first the
 * first one of another connection whatever the rules say. */
static void release(struct mrail_engine *e, struct local_rail *l, int force)
{
	struct mrail_list *q = queue_of(l);

	if (l->pace_releasing)
		return;
	l->pace_releasing = 1;
	struct send_op *forced = force ? first_of_others(l) : NULL;
	if (forced)
		release_one(e, forced);
	while (!mrail_list_empty(q)) {
		struct send_op *op = mrail_list_first(q, struct send_op, link);
		struct rail *r = op->rail;
		if (over_ahead(r, op) || !free_for(l, r) ||
		    (e->pace_npending && order_waits(e, l, op)))
			break;
		release_one(e, op);
	}
	l->pace_releasing = 0;
}

void pace_op_done(struct mrail_engine *e, struct send_op *op)
{
	struct local_rail *l = op->rail->local;

	if (op->held) { /* settled before it went (rail closed) */
		op->held = 0;
		op->rail->pace_held--;
		e->pace_held--;
		return;
	}
	if (!op->handed)
		return;
	op->handed = 0;
	if (e->pace)
		op->rail->pace_inflight -= op->bytes;
	if (l->pace_ops > 0)
		l->pace_ops--;
	l->pace_moved_at = mrail_now();
	release(e, l, 0);
}

int pace_rail_holds(const struct rail *r)
{
	return r->pace_held > 0;
}

void pace_rail_closed(struct mrail_engine *e, struct rail *r)
{
	struct local_rail *l = r->local;
	struct mrail_list *pos, *tmp, *q = queue_of(l);

	if (l->pace_rail == r)
		l->pace_rail = NULL;
	if (r->pace_held == 0)
		return;
	l->pace_releasing = 1;
	mrail_list_foreach_safe(pos, tmp, q) {
		struct send_op *op = mrail_list_entry(pos, struct send_op, link);
		if (op->rail == r)
			rail_op_done(e, op, MRAIL_ERR_PEER);
	}
	l->pace_releasing = 0;
	release(e, l, 0);
}

void pace_tick(struct mrail_engine *e, double now)
{
	for (unsigned i = 0; i < e->nlocal && e->pace_held > 0; i++) {
		struct local_rail *l = &e->local[i];
		if (!l->pace_q.next || mrail_list_empty(&l->pace_q))
			continue;
		/* The kernel may have sent the rest since the last look;
		 * that look also notes whether the connection moved. */
		release(e, l, 0);
		if (mrail_list_empty(&l->pace_q))
			continue;
		if (now - l->pace_moved_at <= PACE_STALL)
			continue;
		/* No completion for PACE_STALL. Its frames may still be moving
		 * (a frame on a slow rail takes longer than that, and when the
		 * queue's head is its own frame waiting for its share nothing
		 * above looked): ask the driver and the kernel, once per
		 * PACE_STALL, not at every pass. Only its own frames waiting
		 * (a slow receiver): nothing to let by. */
		uint64_t unsent;
		int moved = owner_moved(l, &unsent);
		double idle_for = now - l->pace_moved_at;
		l->pace_moved_at = now;
		if (moved || !first_of_others(l))
			continue;
		mrail_debug("pace: %s: a connection took nothing for %.0f ms; "
			    "the next peer's chunk goes anyway", l->name,
			    idle_for * 1e3);
		release(e, l, 1);
	}
}
