/*
 * single: every message on one rail — eager packets on the fastest idle
 * rail, a rendezvous payload whole on the rail predicted to finish it
 * first. The baseline, and the right answer for small messages.
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

static int single_eager_rail(void *state, const struct mrail_rail_view *rails,
			     unsigned n, size_t bytes)
{
	(void)state;
	(void)bytes;
	return mrail_strategy_fastest_idle(rails, n);
}

static int single_rdv_split(void *state, const struct mrail_rail_view *rails,
			    unsigned n, uint64_t length,
			    struct mrail_chunk *out, unsigned max)
{
	(void)state;
	(void)max;
	int r = mrail_strategy_earliest_finish(rails, n, length);
	out[0].rail = (unsigned)(r < 0 ? 0 : r);
	out[0].offset = 0;
	out[0].length = length;
	return 1;
}

const struct mrail_strategy_ops mrail_single_strategy_ops = {
	.name = "single",
	.abi_version = MRAIL_STRATEGY_ABI_VERSION,
	.init = single_init,
	.fini = single_fini,
	.eager_rail = single_eager_rail,
	.rdv_split = single_rdv_split,
};
