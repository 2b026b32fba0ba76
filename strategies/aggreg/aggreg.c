/*
 * aggreg: NewMadeleine's aggregation strategy (seed 004, sections II and
 * III, Fig. 3 and 4b): eager packets are aggregated, not spread. Every
 * eager packet goes to the one rail predicted fastest for it; while that
 * rail is busy the messages stay queued (eager_rail answers -1), and when
 * it becomes idle (rail_idle) it takes every queued message that fits in
 * one packet. Slower rails stay idle for eager traffic even when they are
 * free: on the paper's hosts, feeding several NICs from one core costs
 * more than it gains. A rendezvous payload goes whole on the rail
 * predicted to finish it first (counting what that rail still has to
 * receive). No options.
 *
 * "Fastest for the packet" is the rail with the smallest predict(bytes of
 * the messages that fit): the time the packet takes on a free rail
 * (time_scale x model), ties to the first rail in view order. busy_until
 * is deliberately not added for eager packets: a busy rail always loses
 * to an equally fast idle one by busy_until, so counting it would spread
 * the packets over equal rails (what greedy does) instead of letting them
 * aggregate behind the fastest one.
 */
#include "mrail.h"
#include "strategies/strategy.h"

static int aggreg_init(const char *args, void **state)
{
	*state = NULL;
	return mrail_strategy_parse("aggreg", args, NULL, 0);
}

static void aggreg_fini(void *state)
{
	(void)state;
}

/* The rail predicted fastest for `bytes` (ties: the first), or -1. */
static int fastest(const struct mrail_rail_view *rails, unsigned n,
		   uint64_t bytes)
{
	int best = -1;
	double best_t = 0;
	for (unsigned i = 0; i < n; i++) {
		double t = rails[i].predict(&rails[i], bytes);
		if (best < 0 || t < best_t) {
			best = (int)i;
			best_t = t;
		}
	}
	return best;
}

/* The fastest rail for the messages that fit, packing all of them. */
static int pick(const struct mrail_rail_view *rails, unsigned n,
		const struct mrail_send_queue *q, unsigned *count)
{
	*count = mrail_send_queue_fit(q);
	return fastest(rails, n, mrail_send_queue_bytes(q, *count));
}

static int aggreg_eager_rail(void *state, void *peer,
			     const struct mrail_rail_view *rails, unsigned n,
			     const struct mrail_send_queue *q, unsigned *count)
{
	(void)state;
	(void)peer;
	int r = pick(rails, n, q, count);
	return r >= 0 && rails[r].idle ? r : -1; /* busy: let them queue */
}

static int aggreg_rail_idle(void *state, void *peer,
			    const struct mrail_rail_view *rails, unsigned n,
			    unsigned idle, const struct mrail_send_queue *q,
			    unsigned *count)
{
	(void)state;
	(void)peer;
	return pick(rails, n, q, count) == (int)idle;
}

static int aggreg_rdv_split(void *state, void *peer,
			    const struct mrail_rail_view *rails, unsigned n,
			    uint64_t length, struct mrail_chunk *out,
			    unsigned max)
{
	(void)state;
	(void)peer;
	(void)max;
	return mrail_strategy_whole(rails, n, length, out);
}

const struct mrail_strategy_ops mrail_aggreg_strategy_ops = {
	.name = "aggreg",
	.abi_version = MRAIL_STRATEGY_ABI_VERSION,
	.init = aggreg_init,
	.fini = aggreg_fini,
	.eager_rail = aggreg_eager_rail,
	.rail_idle = aggreg_rail_idle,
	.rdv_split = aggreg_rdv_split,
};
