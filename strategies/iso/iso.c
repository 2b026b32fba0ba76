/*
 * iso: a rendezvous payload in equal chunks over all rails of the gate
 * (the equal split NewMadeleine's paper measures against). Options:
 *   chunks=N     chunks per rail (default 1), to exercise reassembly with
 *                many chunks per message;
 *   min_chunk=B  no chunk smaller than B bytes (default 64 KiB): below
 *                that, splitting costs more than a rail's handshake
 *                saves, so mid-size payloads use fewer rails.
 * Eager packets go to the fastest idle rail.
 */
#include "mrail.h"
#include "strategies/strategy.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

struct iso_state {
	unsigned chunks_per_rail;
	uint64_t min_chunk;
};

static int iso_init(const char *args, void **state)
{
	struct iso_state *s = calloc(1, sizeof *s);
	if (!s)
		return MRAIL_ERR_NOMEM;
	uint64_t chunks = 1;
	s->min_chunk = 65536;
	const struct mrail_strategy_opt opts[] = {
		{"chunks", 1, 64, &chunks},
		{"min_chunk", 1, UINT64_MAX >> 1, &s->min_chunk},
	};
	int rc = mrail_strategy_parse("iso", args, opts, 2);
	if (rc != MRAIL_OK) {
		free(s);
		return rc;
	}
	s->chunks_per_rail = (unsigned)chunks;
	*state = s;
	return MRAIL_OK;
}

static void iso_fini(void *state)
{
	free(state);
}

static int iso_eager_rail(void *state, void *peer,
			  const struct mrail_rail_view *rails, unsigned n,
			  const struct mrail_send_queue *q, unsigned *count)
{
	(void)state;
	(void)peer;
	*count = mrail_send_queue_fit(q);
	return mrail_strategy_fastest_idle(rails, n);
}

static int iso_rdv_split(void *state, void *peer,
			 const struct mrail_rail_view *rails,
			 unsigned n, uint64_t length, struct mrail_chunk *out,
			 unsigned max)
{
	struct iso_state *s = state;
	(void)peer;
	uint64_t count = (uint64_t)n * s->chunks_per_rail;
	(void)rails;

	if (count > max)
		count = max;
	if (count > length / s->min_chunk)
		count = length / s->min_chunk;
	if (count == 0)
		count = 1;
	uint64_t base = length / count, extra = length % count, off = 0;
	for (uint64_t i = 0; i < count; i++) {
		uint64_t len = base + (i < extra ? 1 : 0);
		out[i].rail = (unsigned)(i % n);
		out[i].offset = off;
		out[i].length = len;
		off += len;
	}
	return (int)count;
}

const struct mrail_strategy_ops mrail_iso_strategy_ops = {
	.name = "iso",
	.abi_version = MRAIL_STRATEGY_ABI_VERSION,
	.init = iso_init,
	.fini = iso_fini,
	.eager_rail = iso_eager_rail,
	.rdv_split = iso_rdv_split,
	.eager_offload = mrail_strategy_eager_offload, /* equation (1) */
};
