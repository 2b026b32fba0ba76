/*
 * single: every message on one rail: an eager packet (the queued messages
 * that fit) on the idle rail predicted to deliver it first, a rendezvous
 * payload whole on the rail predicted to finish it first (counting what
 * the rail still has to move). The baseline, and the right answer for
 * small messages.
 */
#include "mrail.h"
#include "strategies/strategy.h"
#include "util/log.h"

static int single_init(const char *args, void **state)
{
	*state = NULL;
	return mrail_strategy_parse("single", args, NULL, 0);
}

static void single_fini(void *state)
{
	(void)state;
}

static int single_eager_rail(void *state, void *peer,
			     const struct mrail_rail_view *rails, unsigned n,
			     const struct mrail_send_queue *q, unsigned *count)
{
	(void)state;
	(void)peer;
	*count = mrail_send_queue_fit(q);
	return mrail_strategy_earliest_idle_finish(
		rails, n, mrail_send_queue_bytes(q, *count));
}

static int single_rdv_split(void *state, void *peer,
			    const struct mrail_rail_view *rails, unsigned n,
			    uint64_t length, struct mrail_chunk *out,
			    unsigned max)
{
	(void)state;
	(void)peer;
	(void)max;
	return mrail_strategy_whole(rails, n, length, out);
}

const struct mrail_strategy_ops mrail_single_strategy_ops = {
	.name = "single",
	.abi_version = MRAIL_STRATEGY_ABI_VERSION,
	.init = single_init,
	.fini = single_fini,
	.eager_rail = single_eager_rail,
	.rdv_split = single_rdv_split,
};
