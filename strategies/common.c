#include "strategies/strategy.h"

int mrail_strategy_fastest_idle(const struct mrail_rail_view *rails,
				unsigned n)
{
	int best = -1;
	for (unsigned i = 0; i < n; i++)
		if (rails[i].idle &&
		    (best < 0 || rails[i].bandwidth > rails[best].bandwidth))
			best = (int)i;
	return best;
}

int mrail_strategy_earliest_finish(const struct mrail_rail_view *rails,
				   unsigned n, uint64_t bytes)
{
	int best = -1;
	double best_t = 0;
	for (unsigned i = 0; i < n; i++) {
		double bw = rails[i].bandwidth > 0 ? rails[i].bandwidth : 1e9;
		double t = rails[i].latency +
			   (double)(rails[i].backlog_bytes + bytes) / bw;
		if (best < 0 || t < best_t) {
			best = (int)i;
			best_t = t;
		}
	}
	return best;
}
