/*
 * greedy: NewMadeleine's Fig. 3 baseline: each rail, when idle, takes the
 * next packet. Eager packets go to the first idle rail in index order; a
 * rendezvous payload is cut into fixed-size chunks (option chunk=BYTES,
 * default 256 KiB; larger when the chunk cap would be exceeded) dealt
 * round-robin over the rails, starting with the first idle one. Packets
 * carry one message each: whichever rail is idle takes the next one.
 */
#include "mrail.h"
#include "strategies/strategy.h"
#include "util/log.h"

#include <stdlib.h>

struct greedy_state {
	uint64_t chunk;
};

static int greedy_init(const char *args, void **state)
{
	struct greedy_state *s = calloc(1, sizeof *s);
	if (!s)
		return MRAIL_ERR_NOMEM;
	s->chunk = 256 * 1024;
	const struct mrail_strategy_opt opts[] = {
		{"chunk", 1, UINT64_MAX >> 1, &s->chunk},
	};
	int rc = mrail_strategy_parse("greedy", args, opts, 1);
	if (rc != MRAIL_OK) {
		free(s);
		return rc;
	}
	*state = s;
	return MRAIL_OK;
}

static void greedy_fini(void *state)
{
	free(state);
}

/* The idle rail with the lowest rail index, or -1. */
static int first_idle(const struct mrail_rail_view *rails, unsigned n)
{
	int best = -1;
	for (unsigned i = 0; i < n; i++)
		if (rails[i].idle &&
		    (best < 0 || rails[i].index < rails[best].index))
			best = (int)i;
	return best;
}

/* One message per packet: spreading, not aggregating, is the baseline. */
static int greedy_eager_rail(void *state, void *peer,
			     const struct mrail_rail_view *rails, unsigned n,
			     const struct mrail_send_queue *q, unsigned *count)
{
	(void)state;
	(void)peer;
	(void)q;
	*count = 1;
	return first_idle(rails, n);
}

/* Whichever rail became idle takes the next message. */
static int greedy_rail_idle(void *state, void *peer,
			    const struct mrail_rail_view *rails, unsigned n,
			    unsigned idle, const struct mrail_send_queue *q,
			    unsigned *count)
{
	(void)state;
	(void)peer;
	(void)rails;
	(void)n;
	(void)idle;
	(void)q;
	*count = 1;
	return 1;
}

static int greedy_rdv_split(void *state, void *peer,
			    const struct mrail_rail_view *rails, unsigned n,
			    uint64_t length, struct mrail_chunk *out,
			    unsigned max)
{
	const struct greedy_state *s = state;
	(void)peer;
	uint64_t chunk = s->chunk;
	if (max == 0)
		max = 1;
	/* ceil(length / chunk) chunks, at most max. */
	if ((length - 1) / chunk + 1 > max)
		chunk = (length - 1) / max + 1;
	uint64_t count = (length - 1) / chunk + 1;
	int start = first_idle(rails, n);
	if (start < 0)
		start = 0;
	uint64_t off = 0;
	for (uint64_t i = 0; i < count; i++) {
		out[i].rail = (unsigned)(((uint64_t)start + i) % n);
		out[i].offset = off;
		out[i].length = length - off < chunk ? length - off : chunk;
		off += out[i].length;
	}
	return (int)count;
}

const struct mrail_strategy_ops mrail_greedy_strategy_ops = {
	.name = "greedy",
	.abi_version = MRAIL_STRATEGY_ABI_VERSION,
	.init = greedy_init,
	.fini = greedy_fini,
	.eager_rail = greedy_eager_rail,
	.rail_idle = greedy_rail_idle,
	.rdv_split = greedy_rdv_split,
	.eager_offload = mrail_strategy_eager_offload, /* equation (1) */
};
