/*
 * Strategy interface: the scheduling decisions of the engine, taken by a
 * plugin. The engine calls a strategy at its decision points; the strategy
 * sees each rail of a gate through a read-only view (never driver
 * internals) and answers with a rail choice or a chunk plan.
 *
 * Decision points (NewMadeleine's, seed 004):
 *  - eager_rail: before an eager packet leaves for a gate (also when a rail
 *    of that gate becomes idle with messages queued): which idle rail takes
 *    it.
 *  - rdv_split: a rendezvous request has just been matched by the receiver:
 *    which rails carry which byte ranges of the payload.
 *
 * Adding a strategy: one folder strategies/<name>/ exporting one
 * `const struct mrail_strategy_ops mrail_<name>_strategy_ops`, plus one line
 * in strategies/registry.c; or a plugin outside the tree (below).
 */
#ifndef MRAIL_STRATEGY_H
#define MRAIL_STRATEGY_H

#include <stddef.h>
#include <stdint.h>

#define MRAIL_STRATEGY_ABI_VERSION 1
#define MRAIL_MAX_RAILS 64
#define MRAIL_MAX_CHUNKS 256

struct mrail_rail_model;

/* What a strategy may know about one rail of a gate. */
struct mrail_rail_view {
	unsigned index;         /* rail index within the gate */
	int idle;               /* nothing waiting to leave on this rail */
	uint64_t backlog_bytes; /* bytes posted, not yet on the network */
	double bandwidth;       /* bytes/s estimate (nominal until sampled) */
	double latency;         /* seconds estimate */
	size_t eager_max;       /* eager/rendezvous switch on this rail */
	/* Predicted one-way time of any size (sampler/predict.h): from the
	 * rail's profile, in-band samples or nominal figures. */
	const struct mrail_rail_model *model;
	double busy_until;      /* seconds until what is queued has left */
};

struct mrail_chunk {
	unsigned rail;
	uint64_t offset;
	uint64_t length;
};

struct mrail_strategy_ops {
	const char *name;
	unsigned abi_version; /* MRAIL_STRATEGY_ABI_VERSION */

	/* args: the part after "name:" in MRAIL_STRATEGY ("" if none).
	 * Unknown keys or bad values: return MRAIL_ERR_CONFIG and log. */
	int (*init)(const char *args, void **state);
	void (*fini)(void *state);

	/* Rail for an eager packet of `bytes` bytes, among the idle rails of
	 * rails[0..n); -1 to keep it queued until a rail is idle. */
	int (*eager_rail)(void *state, const struct mrail_rail_view *rails,
			  unsigned n, size_t bytes);

	/* Split a rendezvous payload of `length` bytes (> 0) into at most
	 * `max` chunks covering [0, length) exactly, in offset order.
	 * Returns the chunk count (>= 1). */
	int (*rdv_split)(void *state, const struct mrail_rail_view *rails,
			 unsigned n, uint64_t length, struct mrail_chunk *out,
			 unsigned max);
};

/*
 * External strategies (plugins). When MRAIL_STRATEGY names no built-in,
 * strategies/loader.c looks in each directory of MRAIL_STRATEGY_PATH
 * (colon-separated, in order) for `<name>.so`, then
 * `libmrail-strategy-<name>.so`, dlopens the first file found
 * (RTLD_NOW | RTLD_LOCAL) and reads the symbol MRAIL_STRATEGY_PLUGIN_SYMBOL:
 *
 *   __attribute__((visibility("default")))
 *   const struct mrail_strategy_ops mrail_strategy_plugin = {...};
 *
 * ABI rules: abi_version must equal this header's
 * MRAIL_STRATEGY_ABI_VERSION (checked before anything else is read; `name`
 * and `abi_version` stay the first two fields in every version), `name`
 * must equal the requested name and every op must be non-NULL; otherwise
 * engine creation fails with MRAIL_ERR_CONFIG. Any change to the ops table,
 * the views or the chunk struct bumps MRAIL_STRATEGY_ABI_VERSION. Plugins
 * call nothing in libmrail; the engine keeps the object loaded until the
 * engine is destroyed (after fini).
 */
#define MRAIL_STRATEGY_PLUGIN_SYMBOL "mrail_strategy_plugin"

/* strategies/loader.c: find, load and check plugin `name` in `search_path`
 * (NULL or "" if unset). MRAIL_OK with *ops and *handle set, or
 * MRAIL_ERR_CONFIG after logging why. */
int mrail_strategy_load(const char *name, const char *search_path,
			const struct mrail_strategy_ops **ops, void **handle);
void mrail_strategy_unload(void *handle);

/* strategies/registry.c */
const struct mrail_strategy_ops *mrail_strategy_find(const char *name);
const char *mrail_strategy_names(void);

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
/* Rail predicted to finish `bytes` first, counting its backlog. */
int mrail_strategy_earliest_finish(const struct mrail_rail_view *rails,
				   unsigned n, uint64_t bytes);

#endif
