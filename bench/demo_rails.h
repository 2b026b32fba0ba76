/*
 * demo_rails: snapshots of the engine's per-rail counters to one peer and
 * the table mrail-demo prints from two snapshots.
 */
#ifndef MRAIL_DEMO_RAILS_H
#define MRAIL_DEMO_RAILS_H

#include <mrail.h>

#define DEMO_MAX_RAILS 64

struct demo_rails {
	int n;
	struct mrail_rail_stats s[DEMO_MAX_RAILS];
	struct mrail_rail_info info[DEMO_MAX_RAILS];
};

void demo_rails_snapshot(mrail_engine_t *e, mrail_peer_t peer,
			 struct demo_rails *snap);

/* Per rail and total: driver, endpoints, bytes sent/received between a and
 * b, share of the traffic, and MB/s over seconds. */
void demo_rails_print(const struct demo_rails *a, const struct demo_rails *b,
		      double seconds);

#endif
