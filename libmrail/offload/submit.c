/*
 * Send side: an eager message at the head of its gate's queue leaves in
 * parts (EAGER_PART records, docs/wire.md), one per idle rail and idle
 * worker, when the strategy's eager_offload says so (equation (1),
 * strategies/eager_offload.c) and the measured guard does not veto it
 * (guard.c). Under the engine lock this only takes packets and writes the
 * record headers; the copies and driver posts are the workers'
 * (worker.c). The send completes when the last part is posted.
 */
#include "libmrail/engine.h"
#include "util/clock.h"
#include "util/log.h"

/* An idle worker for a part on `rail`: near its NIC if one is. */
static int pick_worker(struct offload *o, const struct rail *rail,
		       uint64_t *idle)
{
	long li = rail->local - rail->engine->local;
	uint64_t near = li >= 0 && li < MRAIL_MAX_RAILS ? o->near[li] : 0;
	uint64_t pool = (*idle & near) ? (*idle & near) : *idle;
	if (!pool)
		return -1;
	int w = __builtin_ctzll(pool);
	*idle &= ~((uint64_t)1 << w);
	return w;
}

/* Is the strategy's plan one the engine can carry out (the op's rules,
 * include/mrail/strategy.h)? */
static const char *plan_fault(const struct mrail_rail_view *v, unsigned n,
			      uint64_t len, const struct mrail_chunk *ch,
			      int k, unsigned max)
{
	uint64_t off = 0, used = 0;
	if (k < 2 || (unsigned)k > max)
		return "a part count out of [2, max]";
	for (int i = 0; i < k; i++) {
		if (ch[i].rail >= n || !v[ch[i].rail].idle)
			return "a part on a rail that is not an idle view";
		if (used & ((uint64_t)1 << (ch[i].rail & 63)))
			return "two parts on one rail";
		used |= (uint64_t)1 << (ch[i].rail & 63);
		if (ch[i].offset != off || ch[i].length == 0 ||
		    ch[i].length > len - off)
			return "parts not contiguous, empty or past the end";
		off += ch[i].length;
	}
	return off == len ? NULL : "parts not covering the message";
}

static double finish(const struct mrail_rail_view *v, uint64_t bytes)
{
	return v->busy_until + v->predict(v, bytes);
}

int offload_try(struct mrail_engine *e, struct gate *g,
		struct mrail_request *r)
{
	ENGINE_ASSERT_LOCKED(e);
	struct offload *o = e->offload;
	const struct mrail_strategy_ops *s = e->strategy;
	struct mrail_rail_view views[MRAIL_MAX_RAILS];
	struct mrail_chunk ch[MRAIL_MAX_RAILS];
	struct send_op *ops[MRAIL_MAX_RAILS];
	if (!o || o->failed || r->len < 2 || (!s->eager_offload && !o->force))
		return 0;
	/* Workers that only ever see vetoed sizes cost every call their
	 * presence (offload_run): park them. */
	if (o->running && ++o->unused >= OFFLOAD_PARK_AFTER &&
	    offload_idle_workers(o) == ((uint64_t)1 << o->nworkers) - 1) {
		offload_park(o);
		return 0;
	}
	uint64_t idle = o->running ? offload_idle_workers(o)
				   : ((uint64_t)1 << o->nworkers) - 1;
	unsigned nidle = (unsigned)__builtin_popcountll(idle);
	if (nidle < 2)
		return 0;
	unsigned n = gate_rail_views(g, views, VIEW_SEND), idle_rails = 0;
	for (unsigned i = 0; i < n; i++)
		idle_rails += views[i].idle != 0;
	unsigned max = nidle < idle_rails ? nidle : idle_rails;
	if (max < 2)
		return 0;
	/* The dearest handoff among the idle workers (spinning or asleep). */
	double t_o = 0;
	for (unsigned i = 0; i < o->nworkers; i++)
		if ((idle & ((uint64_t)1 << i)) && offload_t_o(o, i) > t_o)
			t_o = offload_t_o(o, i);
	double single = 0, slowest = 0;
	for (unsigned i = 0; i < n; i++)
		if (views[i].idle && (single == 0 ||
				      finish(&views[i], r->len) < single))
			single = finish(&views[i], r->len);
	/* The strategy decides (MRAIL_OFFLOAD_FORCE: tests split anyway),
	 * told what the guard measured handing off costs once it knows. */
	int probe = 0;
	double t_told = o->force ? t_o
				 : guard_handoff(&o->guard, r->len, t_o, single,
						 &probe);
	int k = o->force ? mrail_strategy_offload_plan(views, n, r->len, t_o,
						       1, ch, max, NULL)
			 : s->eager_offload(e->strategy_state,
					    g->strategy_peer, views, n,
					    r->len, t_told, ch, max);
	if (k == 0) {
		if (t_told > t_o)
			guard_note_declined(&o->guard);
		else
			o->declined++;
		return 0;
	}
	const char *fault = plan_fault(views, n, r->len, ch, k, max);
	if (fault) {
		if (o->bad_plans++ == 0)
			mrail_warn("strategy '%s': eager_offload answered %d "
				   "with %s; such messages are sent whole",
				   s->name, k, fault);
		return 0;
	}
	/* What the engine predicts of that plan, for the guard. */
	for (int i = 0; i < k; i++)
		if (finish(&views[ch[i].rail], ch[i].length) > slowest)
			slowest = finish(&views[ch[i].rail], ch[i].length);
	double wire_gain = single - slowest; /* before the handoff */
	int allowed = o->force ? 1
		      : probe  ? 2
			       : guard_allows(&o->guard, r->len, wire_gain,
					      single);
	if (!allowed)
		return 0;
	if (!o->running) {
		/* First use: start and calibrate, then decide again with the
		 * measured T_O. */
		if (offload_run(o))
			return 0;
		return offload_try(e, g, r);
	}
	double t_start = mrail_now();
	for (int i = 0; i < k; i++)
		if (!(ops[i] = packet_get(e))) {
			while (i-- > 0)
				packet_put(e, ops[i]);
			return 0;
		}
	mrail_list_remove(&r->link);
	/* Like a rendezvous whose chunks are moving: on no list, referenced
	 * by k jobs (outstanding), completed by the last (worker.c). */
	r->phase = REQ_RDV_ACTIVE;
	r->outstanding += k;
	for (int i = 0; i < k; i++) {
		struct rail *rail = g->rails[views[ch[i].rail].index];
		struct send_op *op = ops[i];
		uint8_t *at = op->buf + op->len;
		op->len += mrail_wire_put_eager_part(at, r->seq, r->tag, r->len,
						     ch[i].offset, ch[i].length);
		op->bytes = ch[i].length;
		rail->stats.tx_msgs++;
		struct offload_job j = {
			.req = r,
			.rail = rail,
			.op = op,
			.payload = at + sizeof(struct mrail_wire_eager_part),
			.offset = ch[i].offset,
			.len = ch[i].length,
			.t_push = t_start,
		};
		offload_push(o, (unsigned)pick_worker(o, rail, &idle), &j);
	}
	o->msgs++;
	o->parts += (uint64_t)k;
	if (allowed == 1)
		o->unused = 0;
	mrail_trace("offload: seq %llu, %llu bytes in %d parts (predicted "
		    "gain %.2f us)", (unsigned long long)r->seq,
		    (unsigned long long)r->len, k, (wire_gain - t_o) * 1e6);
	return 1;
}
