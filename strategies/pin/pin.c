/*
 * pin: all traffic of a gate on one rail (option rail=N, default 0), for
 * profiling one rail at a time (mrail-sample) and for comparing rails. A
 * gate with fewer rails uses its last one.
 */
#include "mrail.h"
#include "strategies/strategy.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

struct pin_state {
	unsigned rail;
};

static int pin_init(const char *args, void **state)
{
	struct pin_state *s = calloc(1, sizeof *s);
	uint64_t rail = 0;
	if (!s)
		return MRAIL_ERR_NOMEM;
	const struct mrail_strategy_opt opts[] = {
		{"rail", 0, MRAIL_MAX_RAILS - 1, &rail},
	};
	int rc = mrail_strategy_parse("pin", args, opts, 1);
	if (rc != MRAIL_OK) {
		free(s);
		return rc;
	}
	s->rail = (unsigned)rail;
	*state = s;
	return MRAIL_OK;
}

static void pin_fini(void *state)
{
	free(state);
}

/* The view index of the pinned rail (views list the rails that are up). */
static int pinned(const struct pin_state *s, const struct mrail_rail_view *v,
		  unsigned n)
{
	int best = -1;
	for (unsigned i = 0; i < n; i++)
		if (v[i].index <= s->rail &&
		    (best < 0 || v[i].index > v[best].index))
			best = (int)i;
	return best < 0 ? 0 : best;
}

static int pin_eager_rail(void *state, void *peer,
			  const struct mrail_rail_view *rails, unsigned n,
			  const struct mrail_send_queue *q, unsigned *count)
{
	(void)peer;
	*count = mrail_send_queue_fit(q);
	int r = pinned(state, rails, n);
	return rails[r].idle ? r : -1;
}

static int pin_rdv_split(void *state, void *peer,
			 const struct mrail_rail_view *rails, unsigned n,
			 uint64_t length, struct mrail_chunk *out, unsigned max)
{
	(void)peer;
	(void)max;
	out[0].rail = (unsigned)pinned(state, rails, n);
	out[0].offset = 0;
	out[0].length = length;
	return 1;
}

const struct mrail_strategy_ops mrail_pin_strategy_ops = {
	.name = "pin",
	.abi_version = MRAIL_STRATEGY_ABI_VERSION,
	.init = pin_init,
	.fini = pin_fini,
	.eager_rail = pin_eager_rail,
	.rdv_split = pin_rdv_split,
};
