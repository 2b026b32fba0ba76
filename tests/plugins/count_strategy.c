/*
 * A test plugin that counts its eager_rail calls (exported, read by
 * test_plugin_asked.c): plugins are asked for every packet, also on a
 * gate with a single rail, where the engine skips `split` and `single`
 * for a lone message (mrail_strategy_lone_direct). Sends on the first
 * idle rail, rendezvous payloads whole on rail 0.
 */
#include <mrail.h>
#include <mrail/strategy.h>

#include <stddef.h>

__attribute__((visibility("default"))) unsigned long count_eager_calls;

static int count_init(const char *args, void **state)
{
	static int dummy;
	(void)args;
	*state = &dummy;
	return MRAIL_OK;
}

static void count_fini(void *state)
{
	(void)state;
}

static int count_eager_rail(void *state, void *peer_state,
			    const struct mrail_rail_view *rails, unsigned n,
			    const struct mrail_send_queue *q, unsigned *count)
{
	(void)state;
	(void)peer_state;
	__atomic_add_fetch(&count_eager_calls, 1, __ATOMIC_RELAXED);
	*count = mrail_send_queue_fit(q);
	for (unsigned i = 0; i < n; i++)
		if (rails[i].idle)
			return (int)i;
	return -1;
}

static int count_rdv_split(void *state, void *peer_state,
			   const struct mrail_rail_view *rails, unsigned n,
			   uint64_t length, struct mrail_chunk *out,
			   unsigned max)
{
	(void)state;
	(void)peer_state;
	(void)rails;
	(void)n;
	(void)max;
	out[0].rail = 0;
	out[0].offset = 0;
	out[0].length = length;
	return 1;
}

__attribute__((visibility("default")))
const struct mrail_strategy_ops mrail_strategy_plugin = {
	.name = "count",
	.abi_version = MRAIL_STRATEGY_ABI_VERSION,
	.init = count_init,
	.fini = count_fini,
	.eager_rail = count_eager_rail,
	.rdv_split = count_rdv_split,
};
