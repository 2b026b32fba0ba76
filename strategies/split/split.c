/*
 * split: the equal-completion split of NewMadeleine (seed 004, II-B,
 * III-B): a rendezvous payload is cut so that every chunk is predicted to
 * finish at the same moment, counting the time each rail still needs for
 * what is queued on it, and leaving out rails that would only slow it
 * (strategies/split/plan.c). Eager packets take the idle rail predicted to
 * deliver them first. Options: min_chunk=BYTES (default 16 KiB: with
 * 64 KiB the slow rail's share of 64–128 KiB messages was dropped),
 * max_chunks=N (default 64).
 */
#include "mrail.h"
#include "sampler/predict.h"
#include "strategies/split/plan.h"
#include "strategies/strategy.h"
#include "util/log.h"

#include <stdlib.h>

struct split_state {
	struct mrail_split_params params;
};

static int split_init(const char *args, void **state)
{
	struct split_state *s = calloc(1, sizeof *s);
	if (!s)
		return MRAIL_ERR_NOMEM;
	uint64_t max_chunks = 64;
	s->params.min_chunk = 16384;
	const struct mrail_strategy_opt opts[] = {
		{"min_chunk", 1, UINT64_MAX >> 1, &s->params.min_chunk},
		{"max_chunks", 1, MRAIL_MAX_CHUNKS, &max_chunks},
	};
	int rc = mrail_strategy_parse("split", args, opts, 2);
	if (rc != MRAIL_OK) {
		free(s);
		return rc;
	}
	s->params.max_chunks = (unsigned)max_chunks;
	*state = s;
	return MRAIL_OK;
}

static void split_fini(void *state)
{
	free(state);
}

static double finish(const struct mrail_rail_view *v, uint64_t bytes)
{
	double t = v->model ? mrail_predict(v->model, bytes)
			    : v->latency + (double)bytes / v->bandwidth;
	return v->busy_until + t;
}

static int split_eager_rail(void *state, const struct mrail_rail_view *rails,
			    unsigned n, size_t bytes)
{
	int best = -1;
	(void)state;
	for (unsigned i = 0; i < n; i++)
		if (rails[i].idle &&
		    (best < 0 || finish(&rails[i], bytes) <
				     finish(&rails[best], bytes)))
			best = (int)i;
	return best;
}

static int split_rdv_split(void *state, const struct mrail_rail_view *rails,
			   unsigned n, uint64_t length, struct mrail_chunk *out,
			   unsigned max)
{
	struct split_state *s = state;
	struct mrail_split_rail in[MRAIL_MAX_RAILS];
	struct mrail_split_params p = s->params;
	double t;

	for (unsigned i = 0; i < n; i++) {
		in[i].model = rails[i].model;
		in[i].busy_until = rails[i].busy_until;
	}
	if (p.max_chunks > max)
		p.max_chunks = max;
	int cnt = mrail_split_plan(in, n, length, &p, out, &t);
	if (cnt < 1) { /* no model: the rail to finish first takes it all */
		out[0].rail = 0;
		for (unsigned i = 1; i < n; i++)
			if (finish(&rails[i], length) <
			    finish(&rails[out[0].rail], length))
				out[0].rail = i;
		out[0].offset = 0;
		out[0].length = length;
		cnt = 1;
	}
	return cnt;
}

const struct mrail_strategy_ops mrail_split_strategy_ops = {
	.name = "split",
	.abi_version = MRAIL_STRATEGY_ABI_VERSION,
	.init = split_init,
	.fini = split_fini,
	.eager_rail = split_eager_rail,
	.rdv_split = split_rdv_split,
};
