/* A plugin built for another strategy ABI: loading it must fail cleanly. */
#include <mrail/strategy.h>

static int bad_init(const char *args, void **state)
{
	(void)args;
	*state = NULL;
	return 0;
}

static void bad_fini(void *state)
{
	(void)state;
}

static int bad_eager_rail(void *state, void *peer,
			  const struct mrail_rail_view *rails, unsigned n,
			  const struct mrail_send_queue *q, unsigned *count)
{
	(void)state;
	(void)peer;
	(void)rails;
	(void)n;
	(void)q;
	*count = 1;
	return 0;
}

static int bad_rdv_split(void *state, void *peer,
			 const struct mrail_rail_view *rails, unsigned n,
			 uint64_t length, struct mrail_chunk *out, unsigned max)
{
	(void)state;
	(void)peer;
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
	.name = "badabi",
	.abi_version = 999,
	.init = bad_init,
	.fini = bad_fini,
	.eager_rail = bad_eager_rail,
	.rdv_split = bad_rdv_split,
};
