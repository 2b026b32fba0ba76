/*
 * split: the equal-completion split of NewMadeleine (seed 004, II-B,
 * III-B): a rendezvous payload is cut so that every chunk is predicted to
 * finish at the same moment, counting the time each rail still needs for
 * what is queued on it, and leaving out rails that would only slow it
 * (strategies/split/plan.c). Eager packets take the idle rail predicted to
 * deliver them first; with offload on, an eager message leaves in parts
 * from worker threads when that is predicted faster (split_eager_offload).
 * Options: min_chunk=BYTES (default: a sixteenth of the payload, 1 to
 * 16 KiB, see split_min_chunk), max_chunks=N (default 64),
 * busy=0 to plan payloads and place eager packets as if every rail were
 * free (for measuring what busy-until accounting brings). With profiles,
 * messages go by rendezvous from the size where its cut over the rails
 * beats the best rail alone (split_eager_max), not from where it pays on
 * one rail; early_rdv=0 keeps the rails' own switch (for measuring).
 */
#include "mrail.h"
#include "sampler/predict.h"
#include "strategies/split/plan.h"
#include "strategies/strategy.h"
#include "util/log.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

struct split_state {
	struct mrail_split_params params; /* min_chunk 0: split_min_chunk */
	int use_busy;
	int early_rdv;
};

/*
 * The default smallest chunk: a sixteenth of the payload, at least 1 KiB,
 * at most 16 KiB. A floor guards against model error on tiny chunks (a
 * chunk's fixed cost is in the model's latency term already), but a
 * fixed 16 KiB one kept the slow rail's share of 32-128 KiB messages
 * (11 % on 1000/600/200 Mbit/s: 3.5-14 KiB) from it: those plans were
 * predicted 0.89-0.90 of the best cut, as measured (docs/fig8.md).
 */
static uint64_t split_min_chunk(uint64_t length)
{
	uint64_t m = length / 16;
	return m < 1024 ? 1024 : m > 16384 ? 16384 : m;
}

static struct mrail_split_params split_params(const struct split_state *s,
					      uint64_t length)
{
	struct mrail_split_params p = s->params;
	if (!p.min_chunk)
		p.min_chunk = split_min_chunk(length);
	return p;
}

static int split_init(const char *args, void **state)
{
	struct split_state *s = calloc(1, sizeof *s);
	if (!s)
		return MRAIL_ERR_NOMEM;
	uint64_t max_chunks = 64, busy = 1, early_rdv = 1;
	const struct mrail_strategy_opt opts[] = {
		{"min_chunk", 1, UINT64_MAX >> 1, &s->params.min_chunk},
		{"max_chunks", 1, MRAIL_MAX_CHUNKS, &max_chunks},
		{"busy", 0, 1, &busy},
		{"early_rdv", 0, 1, &early_rdv},
	};
	int rc = mrail_strategy_parse("split", args, opts, 4);
	if (rc != MRAIL_OK) {
		free(s);
		return rc;
	}
	s->params.max_chunks = (unsigned)max_chunks;
	s->use_busy = busy != 0;
	s->early_rdv = early_rdv != 0;
	*state = s;
	return MRAIL_OK;
}

static void split_fini(void *state)
{
	free(state);
}

/* The queued messages that fit, on the idle rail predicted to deliver
 * them first: aggregated, not spread (the paper's finding for eager). */
static int split_eager_rail(void *state, void *peer,
			    const struct mrail_rail_view *rails, unsigned n,
			    const struct mrail_send_queue *q, unsigned *count)
{
	const struct split_state *s = state;
	struct mrail_rail_view free_views[MRAIL_MAX_RAILS];
	(void)peer;
	*count = mrail_send_queue_fit(q);
	if (!s->use_busy) { /* busy=0: as if every rail were free */
		for (unsigned i = 0; i < n && i < MRAIL_MAX_RAILS; i++) {
			free_views[i] = rails[i];
			free_views[i].busy_until = 0;
		}
		rails = free_views;
	}
	return mrail_strategy_earliest_idle_finish(
		rails, n, mrail_send_queue_bytes(q, *count));
}

static int split_rdv_split(void *state, void *peer,
			   const struct mrail_rail_view *rails, unsigned n,
			   uint64_t length, struct mrail_chunk *out,
			   unsigned max)
{
	struct split_state *s = state;
	struct mrail_split_rail in[MRAIL_MAX_RAILS];
	struct mrail_split_params p = split_params(s, length);
	double t;
	(void)peer;

	for (unsigned i = 0; i < n; i++) {
		in[i].model = rails[i].model;
		in[i].busy_until = s->use_busy ? rails[i].busy_until : 0;
		in[i].scale = rails[i].time_scale;
	}
	if (p.max_chunks > max)
		p.max_chunks = max;
	int cnt = mrail_split_plan(in, n, length, &p, out, &t);
	if (cnt < 1) /* no model: the rail to finish first takes it all */
		cnt = mrail_strategy_whole(rails, n, length, out);
	return cnt;
}

/*
 * Does a rendezvous of `size` bytes, cut over the free rails, finish
 * before the best rail alone carries it eagerly? The rendezvous first
 * costs its request and the receiver's answer (RTS, then RTR): two
 * one-way trips of the fastest rail.
 */
static int rdv_pays(const struct split_state *s,
		    const struct mrail_rail_view *rails, unsigned n,
		    uint64_t size, double handshake)
{
	struct mrail_split_rail in[MRAIL_MAX_RAILS];
	struct mrail_chunk out[MRAIL_MAX_RAILS];
	double t, single = INFINITY;
	for (unsigned i = 0; i < n; i++) {
		in[i] = (struct mrail_split_rail){rails[i].model, 0,
						  rails[i].time_scale};
		single = fmin(single, rails[i].predict(&rails[i], size));
	}
	struct mrail_split_params p = split_params(s, size);
	p.rel_tol = 1e-3; /* asked ~16 times per rail up, per peer */
	return mrail_split_plan(in, n, size, &p, out, &t) >= 2 &&
	       handshake + t < single;
}

/*
 * The eager/rendezvous switch of a gate: the smallest size from which
 * the rendezvous cut pays (docs/split.md, "Where rendezvous starts").
 * Each rail's profile puts its own switch where a rendezvous on that
 * rail alone beats an eager message on it (about 200 KB on the netlab
 * rails); cut over three rails it pays from about 64 KiB, where eager
 * messages, placed whole, leave the slow rail either idle or late.
 * Only with a sampled model (both protocols) on every rail: nominal
 * figures do not know a rendezvous' cost.
 */
static size_t split_eager_max(void *state, void *peer,
			      const struct mrail_rail_view *rails, unsigned n)
{
	const struct split_state *s = state;
	size_t lim = SIZE_MAX;
	double lat = INFINITY;
	(void)peer;
	for (unsigned i = 0; i < n; i++) {
		if (rails[i].eager_max < lim)
			lim = rails[i].eager_max;
		if (!rails[i].model || rails[i].model->threshold_source !=
					       MRAIL_THRESHOLD_DERIVED)
			return lim;
		lat = fmin(lat, rails[i].latency);
	}
	if (!s->early_rdv || n < 2 || n > MRAIL_MAX_RAILS || lim < 2 ||
	    !rdv_pays(s, rails, n, lim, 2 * lat))
		return lim;
	/* lo does not pay, hi does (the plan needs 2 * min_chunk bytes) */
	uint64_t lo = 1, hi = lim;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (rdv_pays(s, rails, n, mid, 2 * lat))
			hi = mid;
		else
			lo = mid;
	}
	return (size_t)hi - 1;
}

/*
 * Offload (docs/offload.md): equation (1) with this strategy's parts, the
 * equal-completion plan over the idle rails (their latency terms count,
 * which a bandwidth ratio misses on small parts), worth it when the
 * handoff plus that plan's finish beats the best idle rail alone. Rails
 * without a sampled model: equation (1) by bandwidth.
 */
static int split_eager_offload(void *state, void *peer,
			       const struct mrail_rail_view *rails, unsigned n,
			       uint64_t length, double t_offload,
			       struct mrail_chunk *out, unsigned max)
{
	const struct split_state *s = state;
	struct mrail_split_rail in[MRAIL_MAX_RAILS];
	unsigned map[MRAIL_MAX_RAILS], m = 0;
	double single = -1, t;
	for (unsigned i = 0; i < n && i < MRAIL_MAX_RAILS; i++) {
		if (!rails[i].idle)
			continue;
		if (!rails[i].model)
			return mrail_strategy_eager_offload(state, peer, rails,
							    n, length,
							    t_offload, out,
							    max);
		double b = s->use_busy ? rails[i].busy_until : 0;
		double f = b + rails[i].predict(&rails[i], length);
		if (single < 0 || f < single)
			single = f;
		in[m] = (struct mrail_split_rail){rails[i].model, b,
						  rails[i].time_scale};
		map[m++] = i;
	}
	/* Parts of at least 64 bytes: below, a part's fixed costs are all
	 * there is to it. */
	struct mrail_split_params p = {.min_chunk = 64, .max_chunks = max,
				       .rel_tol = 1e-3};
	if (m < 2 || max < 2 ||
	    !mrail_split_parts_by(in, m, length, &p, single - t_offload))
		return 0;
	int k = mrail_split_plan(in, m, length, &p, out, &t);
	if (k < 2 || t + t_offload >= single)
		return 0;
	for (int i = 0; i < k; i++)
		out[i].rail = map[out[i].rail];
	return k;
}

const struct mrail_strategy_ops mrail_split_strategy_ops = {
	.name = "split",
	.abi_version = MRAIL_STRATEGY_ABI_VERSION,
	.init = split_init,
	.fini = split_fini,
	.eager_rail = split_eager_rail,
	.rdv_split = split_rdv_split,
	.eager_offload = split_eager_offload,
	.eager_max = split_eager_max,
};
