/*
 * Planning core of the `split` strategy: cut a rendezvous payload over the
 * rails of a gate so that every chunk is predicted to finish at the same
 * moment, counting the time each busy rail still needs before it is free,
 * and leaving out the rails that would only make the message later
 * (NewMadeleine: Brunet, Trahay, Denis, IEEE Cluster 2008, seed 004,
 * sections II-A, II-B, III-B, IV-A). A pure function of the per-rail models: no engine state, no
 * allocation, deterministic. See docs/split.md.
 */
#ifndef MRAIL_STRATEGIES_SPLIT_PLAN_H
#define MRAIL_STRATEGIES_SPLIT_PLAN_H

#include "sampler/predict.h"
#include "strategies/strategy.h"

#include <stdint.h>

struct mrail_split_rail {
	const struct mrail_rail_model *model; /* mrail_predict(): seconds */
	double busy_until; /* seconds from now until the rail is free, >= 0 */
	/* Multiplies the model's predictions (measured / predicted duration
	 * of recent chunks); 0 counts as 1. */
	double scale;
};

struct mrail_split_params {
	/* No chunk shorter than this, unless the whole message is (then it
	 * goes whole on one rail). 0 and 1 mean no minimum. */
	uint64_t min_chunk;
	/* At most this many chunks (one per rail at most); 0: no cap. */
	unsigned max_chunks;
	/* Relative precision of the finish time searched for; 0: 1e-9.
	 * Eager parts take 1e-3: microseconds of search would cost more
	 * than the nanoseconds it refines. */
	double rel_tol;
};

/*
 * Plans the chunks of a `length`-byte payload (> 0) over rails[0..n)
 * (1 <= n <= MRAIL_MAX_RAILS). Fills out[] (room for min(n, max_chunks)
 * entries) in offset order: offsets contiguous from 0, lengths summing to
 * `length`, at most one chunk per rail, rails in increasing index order.
 * Returns the chunk count (>= 1), or MRAIL_ERR_INVALID (NULL pointer,
 * n out of range, length 0, a NULL model, busy_until negative or not
 * finite); out is then untouched.
 *
 * The plan minimizes the predicted completion time
 *     max over chunks of busy_until[rail] + scale * mrail_predict(model, len)
 * among all plans that respect min_chunk and max_chunks (to the bisection
 * precision, relative 1e-9 or rel_tol). A rail is left out exactly when it
 * could not carry even min_chunk bytes by that time (so including it
 * would raise the finish), or when max_chunks leaves room only for rails
 * that can carry more. Chosen rails finish together (a rail finishes early only
 * when min_chunk forces it to carry more than its equal-time share, or
 * at a discontinuity of its model). Never worse than the best single
 * rail: on a tie, the single rail is returned.
 *
 * finish (may be NULL) receives the predicted completion time, seconds.
 */
int mrail_split_plan(const struct mrail_split_rail *rails, unsigned n,
		     uint64_t length, const struct mrail_split_params *p,
		     struct mrail_chunk *out, double *finish);

/*
 * A quick test before a plan (one feasibility check, no search): could
 * chunks on at least two rails all finish by t (seconds from now), under
 * the same rules as mrail_split_plan? 1 if so, 0 if not or on invalid
 * input. split's eager_offload asks it with t = best single rail - the
 * handoff cost, and plans only when it holds: the plan's search costs
 * 3-8 us per eager message, this about a tenth.
 */
int mrail_split_parts_by(const struct mrail_split_rail *rails, unsigned n,
			 uint64_t length, const struct mrail_split_params *p,
			 double t);

#endif
