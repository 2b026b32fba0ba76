/*
 * Send side: an eager message at the head of its gate's queue leaves in
 * parts (EAGER_PART records, docs/wire.md), one per idle rail and idle
 * worker, when equation (1) predicts a gain (plan.c). Under the engine
 * lock this only takes packets and writes the record headers; the copies
 * and driver posts are the workers' (worker.c). The send completes when
 * the last part is posted.
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

int offload_try(struct mrail_engine *e, struct gate *g,
		struct mrail_request *r)
{
	ENGINE_ASSERT_LOCKED(e);
	struct offload *o = e->offload;
	struct mrail_rail_view views[MRAIL_MAX_RAILS];
	struct offload_chunk ch[MRAIL_MAX_RAILS];
	struct send_op *ops[MRAIL_MAX_RAILS];
	if (!o || o->failed || r->len < 2)
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
	/* The dearest handoff among the idle workers (spinning or asleep). */
	double t_o = 0;
	for (unsigned i = 0; i < o->nworkers; i++)
		if ((idle & ((uint64_t)1 << i)) && offload_t_o(o, i) > t_o)
			t_o = offload_t_o(o, i);
	unsigned n = gate_rail_views(g, views, VIEW_SEND);
	double gain, single;
	unsigned k = offload_plan(views, n, r->len, t_o, nidle, o->force, ch,
				  &gain, &single);
	if (k < 2) {
		o->declined++;
		return 0;
	}
	int allowed = o->force ? 1
			       : guard_allows(&o->guard, r->len, gain + t_o,
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
	for (unsigned i = 0; i < k; i++)
		if (!(ops[i] = packet_get(e))) {
			while (i-- > 0)
				packet_put(e, ops[i]);
			return 0;
		}
	mrail_list_remove(&r->link);
	/* Like a rendezvous whose chunks are moving: on no list, referenced
	 * by k jobs (outstanding), completed by the last (worker.c). */
	r->phase = REQ_RDV_ACTIVE;
	r->outstanding += (int)k;
	for (unsigned i = 0; i < k; i++) {
		struct rail *rail = g->rails[views[ch[i].view].index];
		struct send_op *op = ops[i];
		uint8_t *at = op->buf + op->len;
		op->len += mrail_wire_put_eager_part(at, r->seq, r->tag, r->len,
						     ch[i].offset, ch[i].len);
		op->bytes = ch[i].len;
		rail->stats.tx_msgs++;
		struct offload_job j = {
			.req = r,
			.rail = rail,
			.op = op,
			.payload = at + sizeof(struct mrail_wire_eager_part),
			.offset = ch[i].offset,
			.len = ch[i].len,
			.t_push = t_start,
		};
		offload_push(o, (unsigned)pick_worker(o, rail, &idle), &j);
	}
	o->msgs++;
	o->parts += k;
	if (allowed == 1)
		o->unused = 0;
	mrail_trace("offload: seq %llu, %llu bytes in %u parts (predicted "
		    "gain %.2f us)", (unsigned long long)r->seq,
		    (unsigned long long)r->len, k, gain * 1e6);
	return 1;
}
