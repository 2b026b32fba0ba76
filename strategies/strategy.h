/*
 * Strategy interface, libmrail's side. The plugin-facing part (ABI
 * version, views, chunks, the send-queue view and its helpers, the ops
 * table, the plugin symbol and the ABI rules) is the installed header
 * include/mrail/strategy.h; this file adds what stays inside libmrail:
 * the plugin loader, the registry of built-in strategies, option parsing
 * and the helpers shared by built-in strategies (strategies/common.c).
 *
 * Adding a strategy: one folder strategies/<name>/ exporting one
 * `const struct mrail_strategy_ops mrail_<name>_strategy_ops`, plus one line
 * in strategies/registry.c; or a plugin outside the tree. See
 * docs/extending.md.
 */
#ifndef MRAIL_STRATEGY_H
#define MRAIL_STRATEGY_H

#include <mrail/strategy.h>

#include <stddef.h>
#include <stdint.h>

/* strategies/loader.c: find, load and check plugin `name` in `search_path`
 * (NULL or "" if unset). MRAIL_OK with *ops and *handle set, or
 * MRAIL_ERR_CONFIG after logging why. */
int mrail_strategy_load(const char *name, const char *search_path,
			const struct mrail_strategy_ops **ops, void **handle);
void mrail_strategy_unload(void *handle);

/* strategies/registry.c */
const struct mrail_strategy_ops *mrail_strategy_find(const char *name);
const char *mrail_strategy_names(void);
/* Whether a lone message on a gate's only idle rail may skip the strategy. */
int mrail_strategy_lone_direct(const struct mrail_strategy_ops *s);

/* Helpers shared by strategies (strategies/common.c). */

/* One "key=value" option of a strategy; values are sizes (k/m/g). */
struct mrail_strategy_opt {
	const char *key;
	uint64_t min, max;
	uint64_t *value;
};
/*
 * Parse "key=value,..." into opts[0..n). An unknown key, a missing '=' or
 * a value out of range logs a line naming the strategy, the option and
 * the known keys, and returns MRAIL_ERR_CONFIG; MRAIL_OK otherwise.
 */
int mrail_strategy_parse(const char *strategy, const char *args,
			 const struct mrail_strategy_opt *opts, unsigned n);

/* Idle rail with the highest bandwidth (ties: lowest index), or -1. */
int mrail_strategy_fastest_idle(const struct mrail_rail_view *rails,
				unsigned n);
/* Rail predicted to finish `bytes` first (busy_until + predict()); ties:
 * the first in view order. */
int mrail_strategy_earliest_finish(const struct mrail_rail_view *rails,
				   unsigned n, uint64_t bytes);
/* The same among idle rails only, or -1. */
int mrail_strategy_earliest_idle_finish(const struct mrail_rail_view *rails,
					unsigned n, uint64_t bytes);
/* A plan of one chunk: the whole payload on the rail predicted to finish
 * it first. Returns 1. */
int mrail_strategy_whole(const struct mrail_rail_view *rails, unsigned n,
			 uint64_t length, struct mrail_chunk *out);

/*
 * The offload decision, the NewMadeleine paper's equation (1) (seed 004,
 * IV-B), for eager_offload ops (strategies/eager_offload.c):
 *   T = t_offload + max_i (busy_until_i + predict_i(part_i))
 * against the best idle rail's busy_until + predict(length) from the
 * calling core. Parts follow the idle rails' bandwidths over the k
 * fastest idle rails (the k, 2 <= k <= max, that minimizes T). Returns k
 * when T is the smaller, else 0; force: the most parts, whenever two
 * idle rails exist (tests).
 * *gain (may be NULL): predicted seconds saved (negative: lost).
 */
int mrail_strategy_offload_plan(const struct mrail_rail_view *rails,
				unsigned n, uint64_t length, double t_offload,
				int force, struct mrail_chunk *out,
				unsigned max, double *gain);
/* The same as an eager_offload op, for strategies with no better idea. */
int mrail_strategy_eager_offload(void *state, void *peer_state,
				 const struct mrail_rail_view *rails,
				 unsigned n, uint64_t length, double t_offload,
				 struct mrail_chunk *out, unsigned max);

#endif
