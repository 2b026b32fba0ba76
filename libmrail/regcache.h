/*
 * Memory registration cache shared by RDMA drivers (docs/regcache.md).
 *
 * Keeps driver registrations of user memory after their last use so that
 * sending from the same buffer again costs a lookup instead of a
 * registration (tens of microseconds to milliseconds on real NICs). A
 * registration is reused only while the memory monitor (memmon.h) vouches
 * that the pages behind it were not unmapped, discarded or moved; memory
 * it cannot watch is registered for one use only.
 *
 * Threading: get, put, stats and destroy of one cache are serialized by
 * the caller (the engine lock); the monitor thread only talks to the cache
 * through its sink.
 */
#ifndef MRAIL_LIBMRAIL_REGCACHE_H
#define MRAIL_LIBMRAIL_REGCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "libmrail/memmon.h"
#include "util/list.h"

struct mrail_regcache;

/* The driver's registration calls. reg returns MRAIL_OK or an
 * MRAIL_ERR_* code, which get passes back. */
struct mrail_regcache_ops {
	int (*reg)(void *ctx, void *addr, size_t len, void **handle);
	void (*dereg)(void *ctx, void *handle);
};

#define MRAIL_REGCACHE_DEFAULT_MAX_ENTRIES 1024
#define MRAIL_REGCACHE_DEFAULT_MAX_BYTES ((uint64_t)256 << 20)

struct mrail_regcache_limits {
	int enabled;          /* 0: never cache (MRAIL_REGCACHE=off) */
	uint64_t max_entries; /* unused registrations kept at most */
	uint64_t max_bytes;   /* bytes of unused registrations kept at most */
	/* Tests only: cache without the monitor; only
	 * mrail_regcache_invalidate_range() invalidates. Unsafe. */
	int unmonitored;
};

/* A registration; fields are read-only for users. */
struct mrail_regcache_entry {
	uintptr_t addr;    /* page-aligned start of the registration */
	size_t len;        /* page multiple, covers what get asked for */
	void *handle;      /* what ops->reg returned */
	/* private */
	unsigned refs;
	unsigned flags;
	struct mrail_list lru; /* unused cached entries, oldest first */
};

struct mrail_regcache_stats {
	uint64_t hits, misses;
	uint64_t evictions;     /* unused entries dropped for the limits */
	uint64_t invalidations; /* entries dropped because memory changed */
	uint64_t merges;        /* entries absorbed by a larger one */
	uint64_t entries, bytes;            /* cached (reusable) registrations */
	uint64_t unused_entries, unused_bytes; /* of those, refcount 0 */
	uint64_t uncached;      /* live one-use registrations */
	int monitor;            /* enum mrail_memmon_mode in use */
};

/* Defaults, then MRAIL_REGCACHE, MRAIL_REGCACHE_MAX_ENTRIES and
 * MRAIL_REGCACHE_MAX_BYTES. MRAIL_ERR_CONFIG (logged, naming the
 * variable) on a bad value. */
int mrail_regcache_limits_env(struct mrail_regcache_limits *lim);

/* lim NULL: mrail_regcache_limits_env(). */
int mrail_regcache_create(const struct mrail_regcache_ops *ops, void *ctx,
			  const struct mrail_regcache_limits *lim,
			  struct mrail_regcache **out);
/* Deregisters everything. Entries still held are a caller bug: logged as
 * an error and deregistered anyway (the driver is about to close). */
void mrail_regcache_destroy(struct mrail_regcache *rc);

/*
 * A registration covering [addr, addr+len) with a reference taken;
 * registers on a miss (page-aligned). MRAIL_ERR_INVALID for len 0 or a
 * range that wraps; ops->reg's error otherwise.
 */
int mrail_regcache_get(struct mrail_regcache *rc, const void *addr,
		       size_t len, struct mrail_regcache_entry **out);
void mrail_regcache_put(struct mrail_regcache *rc,
			struct mrail_regcache_entry *e);
void mrail_regcache_stats(const struct mrail_regcache *rc,
			  struct mrail_regcache_stats *st);

/* The memory in [addr, addr+len) changed: no cache may reuse a
 * registration of it (what the monitor reports; callable by anyone). */
void mrail_regcache_invalidate_range(void *addr, size_t len);

#endif
