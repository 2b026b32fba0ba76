/*
 * Eager flow control: credits granted by the receiver (docs/flow-control.md).
 *
 * Per gate, the receiver keeps what the peer may still send eagerly
 * (cr_granted) and the peer's eager bytes it holds for receives not yet
 * posted (cr_held); the engine keeps their sums. Grants never let
 * granted + held exceed the gate's window (unexpected_peer_max, or an
 * equal share of unexpected_max when peers are many) nor their sums
 * exceed unexpected_max. A sender spends credit per eager message and
 * sends an RTS when it has too little: that never waits, so no correct
 * program can deadlock on credit.
 */
#include "libmrail/engine.h"
#include "util/log.h"

/* A peer never holds more than this much credit: more is a broken peer. */
#define CREDIT_SANE_MAX ((uint64_t)1 << 48)
/* A standalone grant waits for a quarter of the window; one riding in a
 * packet that leaves anyway needs only this much. */
#define CREDIT_PIGGYBACK_MIN 4096u

void credit_spend(struct gate *g, uint64_t len)
{
	g->cr_tx -= len;
}

int credit_on_grant(struct gate *g, uint64_t bytes, const char **why)
{
	if (bytes == 0 || bytes > CREDIT_SANE_MAX - g->cr_tx) {
		*why = "credit grant of zero bytes or beyond any window";
		return MRAIL_ERR_PROTO;
	}
	g->cr_tx += bytes;
	return MRAIL_OK;
}

int credit_on_eager(struct mrail_engine *e, struct gate *g, uint64_t len,
		    const char **why)
{
	if (len > g->cr_granted) {
		*why = "eager message beyond the credit granted";
		return MRAIL_ERR_PROTO;
	}
	g->cr_granted -= len;
	e->cr_granted -= len;
	return MRAIL_OK;
}

void credit_hold(struct mrail_engine *e, struct gate *g, uint64_t len)
{
	g->cr_held += len;
	e->cr_held += len;
}

void credit_release(struct mrail_engine *e, struct gate *g, uint64_t len)
{
	g->cr_held -= len;
	e->cr_held -= len;
}

/* The gate's window: its own cap, or its share of the engine's
 * (computed again only when the number of gates changed). */
static uint64_t window(struct mrail_engine *e)
{
	uint32_t n = e->ngates ? e->ngates : 1;

	if (__builtin_expect(e->cr_window_gates != n, 0)) {
		uint64_t w = e->cfg.unexpected_peer_max;
		uint64_t share = e->cfg.unexpected_max / n;
		e->cr_window = share < w ? share : w;
		e->cr_window_gates = n;
	}
	return e->cr_window;
}

/* Bytes we may grant g now. */
static uint64_t room(struct mrail_engine *e, const struct gate *g)
{
	uint64_t w = window(e), used = g->cr_granted + g->cr_held;
	uint64_t total = e->cr_granted + e->cr_held;
	uint64_t mine = w > used ? w - used : 0;
	uint64_t all = e->cfg.unexpected_max > total
			       ? e->cfg.unexpected_max - total : 0;
	return mine < all ? mine : all;
}

static int may_grant(const struct gate *g)
{
	return !g->self && g->state == GATE_UP;
}

static void granted(struct mrail_engine *e, struct gate *g, uint64_t bytes)
{
	g->cr_granted += bytes;
	e->cr_granted += bytes;
	g->cr_grants++;
}

void credit_grant(struct mrail_engine *e, struct gate *g)
{
	ENGINE_ASSERT_LOCKED(e);
	if (!may_grant(g))
		return;
	uint64_t n = room(e, g), w = window(e);
	if (n == 0 || n < w / 4)
		return;
	struct send_op *op = packet_get(e);
	if (!op) {
		gate_fail(e, g, MRAIL_ERR_NOMEM, "no memory for a CREDIT");
		return;
	}
	op->len += mrail_wire_put_credit(op->buf + op->len, n);
	/* With every rail down it leaves on the first one back: a sender
	 * out of credit would otherwise wait for a grant nothing triggers. */
	failover_post_notice(e, g, op);
	granted(e, g, n);
}

size_t credit_piggyback_at(struct mrail_engine *e, struct gate *g, void *at)
{
	if (!may_grant(g))
		return 0;
	uint64_t n = room(e, g), w = window(e);
	if (n == 0 || n < (w / 4 < CREDIT_PIGGYBACK_MIN ? w / 4
							 : CREDIT_PIGGYBACK_MIN))
		return 0;
	granted(e, g, n);
	return mrail_wire_put_credit(at, n);
}

void credit_piggyback(struct mrail_engine *e, struct gate *g,
		      struct send_op *op, size_t keep)
{
	if (op->len + sizeof(struct mrail_wire_credit) + keep > op->cap)
		return;
	op->len += credit_piggyback_at(e, g, op->buf + op->len);
}

/*
 * Pulls come before new credit: the buffered messages are earlier in the
 * peer's send order than anything credit would bring, so the receiver
 * needs them first. (Keeping a quarter of the window for credit was
 * tried: a flooding sender's longest waits were 2-4 times longer and its
 * rate no higher; docs/flow-control.md.)
 */
uint64_t credit_room_for_pull(struct mrail_engine *e,
			      const struct gate *g)
{
	return room(e, g);
}

void credit_gate_fail(struct mrail_engine *e, struct gate *g)
{
	e->cr_granted -= g->cr_granted;
	g->cr_granted = 0;
}
