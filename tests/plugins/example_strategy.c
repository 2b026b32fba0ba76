/*
 * Example external strategy (docs/extending.md, "A strategy as a plugin"):
 * every rendezvous payload in one chunk on the last rail of the gate, eager
 * packets on the last rail when it is idle. Built as example.so:
 *
 *   cc -shared -fPIC -fvisibility=hidden -I<libmrail source tree> \
 *      -I<libmrail source tree>/include -o example.so example_strategy.c
 */
#include "mrail.h"               /* MRAIL_OK, MRAIL_ERR_CONFIG */
#include "strategies/strategy.h"

#include <stddef.h>

static int example_init(const char *args, void **state)
{
	static int dummy;
	if (args && *args)
		return MRAIL_ERR_CONFIG; /* takes no options */
	*state = &dummy;
	return MRAIL_OK;
}

static void example_fini(void *state)
{
	(void)state;
}

static int example_eager_rail(void *state, const struct mrail_rail_view *rails,
			      unsigned n, size_t bytes)
{
	(void)state;
	(void)bytes;
	return rails[n - 1].idle ? (int)(n - 1) : -1;
}

static int example_rdv_split(void *state, const struct mrail_rail_view *rails,
			     unsigned n, uint64_t length,
			     struct mrail_chunk *out, unsigned max)
{
	(void)state;
	(void)rails;
	(void)max;
	out[0].rail = n - 1;
	out[0].offset = 0;
	out[0].length = length;
	return 1;
}

__attribute__((visibility("default")))
const struct mrail_strategy_ops mrail_strategy_plugin = {
	.name = "example",
	.abi_version = MRAIL_STRATEGY_ABI_VERSION,
	.init = example_init,
	.fini = example_fini,
	.eager_rail = example_eager_rail,
	.rdv_split = example_rdv_split,
};
