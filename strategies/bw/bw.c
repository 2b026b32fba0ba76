/*
 * bw: a rendezvous payload in one chunk per rail, each proportional to the
 * rail's asymptotic bandwidth (view.bandwidth): what UCX and Open MPI do.
 * Option min_chunk=BYTES (default 64 KiB): the slowest rails are left out
 * while their share would be below it (at least one rail is always used).
 * Eager packets go to the fastest idle rail.
 */
#include "mrail.h"
#include "strategies/strategy.h"
#include "util/log.h"

#include <stdlib.h>

struct bw_state {
	uint64_t min_chunk;
};

static int bw_init(const char *args, void **state)
{
	struct bw_state *s = calloc(1, sizeof *s);
	if (!s)
		return MRAIL_ERR_NOMEM;
	s->min_chunk = 65536;
	const struct mrail_strategy_opt opts[] = {
		{"min_chunk", 1, UINT64_MAX >> 1, &s->min_chunk},
	};
	int rc = mrail_strategy_parse("bw", args, opts, 1);
	if (rc != MRAIL_OK) {
		free(s);
		return rc;
	}
	*state = s;
	return MRAIL_OK;
}

static void bw_fini(void *state)
{
	free(state);
}

static int bw_eager_rail(void *state, void *peer,
			  const struct mrail_rail_view *rails, unsigned n,
			  const struct mrail_send_queue *q, unsigned *count)
{
	(void)state;
	(void)peer;
	*count = mrail_send_queue_fit(q);
	return mrail_strategy_fastest_idle(rails, n);
}

/* Bandwidth used for sharing: unknown or nonsense figures count as the
 * slowest possible positive one, so such a rail is dropped first. */
static double rate(const struct mrail_rail_view *v)
{
	return v->bandwidth > 0 ? v->bandwidth : 1.0;
}

static int bw_rdv_split(void *state, void *peer,
			 const struct mrail_rail_view *rails,
			unsigned n, uint64_t length, struct mrail_chunk *out,
			unsigned max)
{
	const struct bw_state *s = state;
	(void)peer;
	unsigned order[MRAIL_MAX_RAILS], k = 0;

	if (n > MRAIL_MAX_RAILS)
		n = MRAIL_MAX_RAILS;
	/* Rails by bandwidth, fastest first (ties: lowest view index). */
	for (unsigned i = 0; i < n; i++) {
		unsigned j = k++;
		while (j > 0 && rate(&rails[order[j - 1]]) < rate(&rails[i])) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	if (k > max)
		k = max;
	double sum = 0;
	for (unsigned i = 0; i < k; i++)
		sum += rate(&rails[order[i]]);
	/* Drop the slowest while its share is below min_chunk. */
	while (k > 1 && (double)length * (rate(&rails[order[k - 1]]) / sum) <
				(double)s->min_chunk) {
		k--;
		sum -= rate(&rails[order[k]]);
	}
	if (k == 0)
		k = 1;
	/* Chosen rails in view order, so chunks are in offset order. */
	int chosen[MRAIL_MAX_RAILS] = {0};
	for (unsigned i = 0; i < k; i++)
		chosen[order[i]] = 1;
	uint64_t lens[MRAIL_MAX_RAILS] = {0}, given = 0;
	for (unsigned i = 1; i < k; i++) {
		double share = (double)length * (rate(&rails[order[i]]) / sum);
		uint64_t l = share < 1 ? 1 : (uint64_t)share;
		lens[order[i]] = l;
		given += l;
	}
	lens[order[0]] = length - given; /* the fastest takes the rounding */
	int c = 0;
	uint64_t off = 0;
	for (unsigned i = 0; i < n; i++) {
		if (!chosen[i])
			continue;
		out[c].rail = i;
		out[c].offset = off;
		out[c].length = lens[i];
		off += lens[i];
		c++;
	}
	return c;
}

const struct mrail_strategy_ops mrail_bw_strategy_ops = {
	.name = "bw",
	.abi_version = MRAIL_STRATEGY_ABI_VERSION,
	.init = bw_init,
	.fini = bw_fini,
	.eager_rail = bw_eager_rail,
	.rdv_split = bw_rdv_split,
	.eager_offload = mrail_strategy_eager_offload, /* equation (1) */
};
