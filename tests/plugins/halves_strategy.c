/*
 * A plugin that decides offload (eager_offload, strategy ABI 3): every
 * eager message of 2 bytes or more in two halves on the first two idle
 * rails. With the option bad=1 it answers a plan the engine must refuse
 * (both halves on one rail): the messages then go whole, intact. Eager
 * packets go on the first idle rail, rendezvous payloads whole on rail 0.
 * It counts its eager_rail calls (halves_eager_calls, read by
 * test_plugin_asked.c: plugins are asked also on a one-rail gate).
 */
#include <mrail.h>
#include <mrail/strategy.h>

#include <string.h>

static int bad_state = 1, good_state = 0;

__attribute__((visibility("default"))) unsigned long halves_eager_calls;

static int halves_init(const char *args, void **state)
{
	if (!strcmp(args, "bad=1"))
		*state = &bad_state;
	else if (!*args)
		*state = &good_state;
	else
		return MRAIL_ERR_CONFIG;
	return MRAIL_OK;
}

static void halves_fini(void *state)
{
	(void)state;
}

static int halves_eager_rail(void *state, void *peer_state,
			     const struct mrail_rail_view *rails, unsigned n,
			     const struct mrail_send_queue *q, unsigned *count)
{
	(void)state;
	(void)peer_state;
	__atomic_add_fetch(&halves_eager_calls, 1, __ATOMIC_RELAXED);
	*count = mrail_send_queue_fit(q);
	for (unsigned i = 0; i < n; i++)
		if (rails[i].idle)
			return (int)i;
	return -1;
}

static int halves_rdv_split(void *state, void *peer_state,
			    const struct mrail_rail_view *rails, unsigned n,
			    uint64_t length, struct mrail_chunk *out,
			    unsigned max)
{
	(void)state;
	(void)peer_state;
	(void)rails;
	(void)n;
	(void)max;
	out[0] = (struct mrail_chunk){0, 0, length};
	return 1;
}

static int halves_eager_offload(void *state, void *peer_state,
				const struct mrail_rail_view *rails,
				unsigned n, uint64_t length, double t_offload,
				struct mrail_chunk *out, unsigned max)
{
	int bad = *(const int *)state;
	unsigned first = n, second = n;
	(void)peer_state;
	(void)t_offload;
	(void)max;
	for (unsigned i = 0; i < n; i++)
		if (rails[i].idle) {
			if (first == n)
				first = i;
			else if (second == n)
				second = i;
		}
	if (second == n || length < 2)
		return 0;
	out[0] = (struct mrail_chunk){first, 0, length / 2};
	out[1] = (struct mrail_chunk){bad ? first : second, length / 2,
				      length - length / 2};
	return 2;
}

__attribute__((visibility("default")))
const struct mrail_strategy_ops mrail_strategy_plugin = {
	.name = "halves",
	.abi_version = MRAIL_STRATEGY_ABI_VERSION,
	.init = halves_init,
	.fini = halves_fini,
	.eager_rail = halves_eager_rail,
	.rdv_split = halves_rdv_split,
	.eager_offload = halves_eager_offload,
};
