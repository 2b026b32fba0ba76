/*
 * The offload decision, the paper's equation (1) (seed 004, IV-B):
 *   T(size) = T_O + max_i T_D(size * ratio_i, N_i)
 * against T_D(size, best rail) from the calling core. Parts follow the
 * rails' bandwidths (the equal-completion ratio of docs/split.md for
 * payloads whose latency terms are alike), over the fastest idle rails.
 * Strategies plug it in as their eager_offload op (or do better: split
 * uses its equal-completion planner).
 */
#include "mrail.h"
#include "strategies/strategy.h"

static double finish(const struct mrail_rail_view *v, uint64_t bytes)
{
	return v->busy_until + v->predict(v, bytes);
}

/* Splits len over the k rails of order[] by bandwidth; returns the
 * predicted finish of the slowest part, or -1 if a part would be empty. */
static double by_bandwidth(const struct mrail_rail_view *v,
			   const unsigned *order, unsigned k, uint64_t len,
			   struct mrail_chunk *out)
{
	double bw = 0;
	for (unsigned i = 0; i < k; i++)
		bw += v[order[i]].bandwidth > 0 ? v[order[i]].bandwidth : 1;
	uint64_t off = 0;
	double worst = 0;
	for (unsigned i = 0; i < k; i++) {
		const struct mrail_rail_view *r = &v[order[i]];
		double share = (r->bandwidth > 0 ? r->bandwidth : 1) / bw;
		uint64_t n = i + 1 == k ? len - off : (uint64_t)(len * share);
		if (n == 0 || n > len - off)
			return -1;
		out[i] = (struct mrail_chunk){order[i], off, n};
		off += n;
		double t = finish(r, n);
		if (t > worst)
			worst = t;
	}
	return worst;
}

int mrail_strategy_offload_plan(const struct mrail_rail_view *v, unsigned n,
				uint64_t len, double t_o, int force,
				struct mrail_chunk *out, unsigned max,
				double *gain)
{
	unsigned order[MRAIL_MAX_RAILS], m = 0;
	if (gain)
		*gain = -1;
	/* Idle rails, fastest for the whole message first. */
	for (unsigned i = 0; i < n && i < MRAIL_MAX_RAILS; i++) {
		if (!v[i].idle)
			continue;
		unsigned j = m++;
		double t = finish(&v[i], len);
		while (j > 0 && finish(&v[order[j - 1]], len) > t) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	if (m < 2 || max < 2 || len < 2)
		return 0;
	double single = finish(&v[order[0]], len);
	unsigned best = 0;
	double best_t = 0;
	struct mrail_chunk tmp[MRAIL_MAX_RAILS];
	for (unsigned k = 2; k <= m && k <= max; k++) {
		double t = by_bandwidth(v, order, k, len, tmp);
		if (t < 0)
			break;
		t += t_o;
		if (!best || t < best_t || force) { /* force: most parts */
			best = k;
			best_t = t;
		}
	}
	if (!best)
		return 0;
	if (gain)
		*gain = single - best_t;
	if (!force && best_t >= single)
		return 0;
	by_bandwidth(v, order, best, len, out);
	return (int)best;
}

int mrail_strategy_eager_offload(void *state, void *peer_state,
				 const struct mrail_rail_view *rails,
				 unsigned n, uint64_t length, double t_offload,
				 struct mrail_chunk *out, unsigned max)
{
	(void)state;
	(void)peer_state;
	return mrail_strategy_offload_plan(rails, n, length, t_offload, 0, out,
					   max, NULL);
}
