/*
 * The offload decision, the paper's equation (1) (seed 004, IV-B):
 *   T(size) = T_O + max_i T_D(size * ratio_i, N_i)
 * against T_D(size, best rail) from the calling core. Chunks follow the
 * rails' bandwidths (the equal-completion ratio of docs/split.md for
 * payloads whose latency terms are alike), over the fastest idle rails.
 */
#include "libmrail/offload/offload.h"

static double predict(const struct mrail_rail_view *v, uint64_t bytes)
{
	return v->busy_until + v->predict(v, bytes);
}

/* Splits len over the k rails of order[] by bandwidth; returns the
 * predicted time of the slowest chunk, or -1 if a chunk would be empty. */
static double split(const struct mrail_rail_view *v, const unsigned *order,
		    unsigned k, uint64_t len, struct offload_chunk *out)
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
		out[i] = (struct offload_chunk){order[i], off, n};
		off += n;
		double t = predict(r, n);
		if (t > worst)
			worst = t;
	}
	return worst;
}

unsigned offload_plan(const struct mrail_rail_view *v, unsigned n,
		      uint64_t len, double t_o, unsigned max_chunks,
		      int force, struct offload_chunk *out, double *gain,
		      double *single_out)
{
	unsigned order[MRAIL_MAX_RAILS], m = 0;
	*gain = -1;
	*single_out = 0;
	/* Idle rails, fastest for the whole message first. */
	for (unsigned i = 0; i < n && i < MRAIL_MAX_RAILS; i++) {
		if (!v[i].idle)
			continue;
		unsigned j = m++;
		double t = predict(&v[i], len);
		while (j > 0 && predict(&v[order[j - 1]], len) > t) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	if (m < 2 || max_chunks < 2)
		return 0;
	double single = predict(&v[order[0]], len);
	*single_out = single;
	unsigned best = 0;
	double best_t = 0;
	struct offload_chunk tmp[MRAIL_MAX_RAILS];
	for (unsigned k = 2; k <= m && k <= max_chunks; k++) {
		double t = split(v, order, k, len, tmp);
		if (t < 0)
			break;
		t += t_o;
		if (!best || t < best_t || force) {
			best = k;
			best_t = t;
		}
	}
	if (!best)
		return 0;
	*gain = single - best_t;
	if (!force && best_t >= single)
		return 0;
	split(v, order, best, len, out);
	return best;
}
