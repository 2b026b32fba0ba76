/*
 * Memory registration cache (docs/regcache.md).
 *
 * Cached entries never overlap and sit in an array sorted by address:
 * a lookup is a binary search (the entry that starts at or before the
 * request is the only one that can cover it), and an insert or removal a
 * memmove, which for 10 000 entries is a few microseconds, less than any
 * real registration, with none of a tree's per-node allocations. A miss
 * that overlaps cached entries registers their union and retires them, so
 * the non-overlap invariant holds and a buffer used piecewise ends up
 * under one registration.
 */
#include "libmrail/regcache.h"
#include "mrail.h"
#include "util/log.h"
#include "util/size.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
	E_CACHED = 1u << 0,    /* in the index: reusable */
	E_MONITORED = 1u << 1, /* holds a monitor subscription */
};

struct mrail_regcache {
	struct mrail_regcache_ops ops;
	void *ctx;
	struct mrail_regcache_limits lim;
	int monitor;                     /* enum mrail_memmon_mode */
	struct mrail_regcache_entry **idx; /* cached entries by address */
	size_t n, cap;
	struct mrail_list lru;           /* cached entries with refs == 0 */
	struct mrail_regcache_stats st;
	uintptr_t page_mask;
	struct mrail_memmon_sink sink;
	struct mrail_memmon_range pending[MRAIL_MEMMON_SINK_CAP];
};

/* ---- configuration ------------------------------------------------------ */

static int bad(const char *var, const char *val, const char *expect)
{
	mrail_error("invalid %s='%s': expected %s", var, val, expect);
	return MRAIL_ERR_CONFIG;
}

static int env_count(const char *var, uint64_t *out)
{
	const char *s = getenv(var);
	uint64_t v;
	if (!s)
		return MRAIL_OK;
	if (mrail_parse_size(s, &v))
		return bad(var, s, "a non-negative integer (k/m/g suffixes "
			   "allowed)");
	*out = v;
	return MRAIL_OK;
}

int mrail_regcache_limits_env(struct mrail_regcache_limits *lim)
{
	memset(lim, 0, sizeof *lim);
	lim->enabled = 1;
	lim->max_entries = MRAIL_REGCACHE_DEFAULT_MAX_ENTRIES;
	lim->max_bytes = MRAIL_REGCACHE_DEFAULT_MAX_BYTES;
	const char *s = getenv("MRAIL_REGCACHE");
	if (s) {
		/* The same words as the engine's other switches. */
		if (!strcmp(s, "on") || !strcmp(s, "1") || !strcmp(s, "yes") ||
		    !strcmp(s, "true"))
			lim->enabled = 1;
		else if (!strcmp(s, "off") || !strcmp(s, "0") ||
			 !strcmp(s, "no") || !strcmp(s, "false"))
			lim->enabled = 0;
		else
			return bad("MRAIL_REGCACHE", s, "on or off");
	}
	int rc;
	if ((rc = env_count("MRAIL_REGCACHE_MAX_ENTRIES", &lim->max_entries)) ||
	    (rc = env_count("MRAIL_REGCACHE_MAX_BYTES", &lim->max_bytes)))
		return rc;
	return MRAIL_OK;
}

/* ---- life cycle ----------------------------------------------------------- */

int mrail_regcache_create(const struct mrail_regcache_ops *ops, void *ctx,
			  const struct mrail_regcache_limits *lim,
			  struct mrail_regcache **out)
{
	struct mrail_regcache_limits env;
	int rc;
	if (!ops || !ops->reg || !ops->dereg || !out)
		return MRAIL_ERR_INVALID;
	if (!lim) {
		if ((rc = mrail_regcache_limits_env(&env)))
			return rc;
		lim = &env;
	}
	struct mrail_regcache *c = calloc(1, sizeof *c);
	if (!c)
		return MRAIL_ERR_NOMEM;
	c->ops = *ops;
	c->ctx = ctx;
	c->lim = *lim;
	mrail_list_init(&c->lru);
	c->page_mask = (uintptr_t)sysconf(_SC_PAGESIZE) - 1;
	int want = c->lim.enabled && !c->lim.unmonitored;
	c->monitor = mrail_memmon_attach(&c->sink, want);
	c->st.monitor = c->monitor;
	*out = c;
	return MRAIL_OK;
}

static int caching(const struct mrail_regcache *c)
{
	return c->lim.enabled &&
	       (c->monitor != MRAIL_MEMMON_OFF || c->lim.unmonitored);
}

static void release(struct mrail_regcache *c, struct mrail_regcache_entry *e)
{
	c->ops.dereg(c->ctx, e->handle);
	if (e->flags & E_MONITORED)
		mrail_memmon_unsubscribe(e->addr, e->addr + e->len);
	free(e);
}

/* ---- the index ------------------------------------------------------------ */

/* Index of the first cached entry starting after a. */
static size_t upper_bound(const struct mrail_regcache *c, uintptr_t a)
{
	size_t lo = 0, hi = c->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->idx[mid]->addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static size_t find(const struct mrail_regcache *c,
		   const struct mrail_regcache_entry *e)
{
	size_t i = upper_bound(c, e->addr);
	return i - 1; /* cached entries are in the index, by invariant */
}

/* Take a cached entry out of the index (and the LRU); it is freed now if
 * unused, else on its last put. */
static void uncache(struct mrail_regcache *c, size_t i)
{
	struct mrail_regcache_entry *e = c->idx[i];
	memmove(&c->idx[i], &c->idx[i + 1], (c->n - i - 1) * sizeof *c->idx);
	c->n--;
	e->flags &= ~E_CACHED;
	c->st.entries--;
	c->st.bytes -= e->len;
	if (e->refs == 0) {
		mrail_list_remove(&e->lru);
		c->st.unused_entries--;
		c->st.unused_bytes -= e->len;
		release(c, e);
	} else {
		c->st.uncached++;
	}
}

static void invalidate(struct mrail_regcache *c, uintptr_t start,
		       uintptr_t end)
{
	size_t i = upper_bound(c, start);
	if (i > 0 && c->idx[i - 1]->addr + c->idx[i - 1]->len > start)
		i--;
	while (i < c->n && c->idx[i]->addr < end) {
		c->st.invalidations++;
		uncache(c, i);
	}
}

/* Apply what the monitor (or the explicit hook) reported. */
static void drain(struct mrail_regcache *c)
{
	int overflow;
	unsigned n = mrail_memmon_drain(&c->sink, c->pending, &overflow);
	if (overflow)
		invalidate(c, 0, UINTPTR_MAX);
	for (unsigned i = 0; i < n; i++)
		invalidate(c, c->pending[i].start, c->pending[i].end);
}

static void evict(struct mrail_regcache *c)
{
	while (!mrail_list_empty(&c->lru) &&
	       (c->st.unused_entries > c->lim.max_entries ||
		c->st.unused_bytes > c->lim.max_bytes)) {
		struct mrail_regcache_entry *e = mrail_list_first(
			&c->lru, struct mrail_regcache_entry, lru);
		c->st.evictions++;
		uncache(c, find(c, e));
	}
}

void mrail_regcache_destroy(struct mrail_regcache *rc)
{
	if (!rc)
		return;
	drain(rc);
	uint64_t held = rc->st.entries - rc->st.unused_entries;
	while (rc->n) {
		struct mrail_regcache_entry *e = rc->idx[rc->n - 1];
		if (e->refs) {
			/* Held by a caller that will never put it back. */
			mrail_list_init(&e->lru);
			e->refs = 0;
			e->flags &= ~E_CACHED;
			release(rc, e);
			rc->n--;
		} else {
			uncache(rc, rc->n - 1);
		}
	}
	if (held || rc->st.uncached)
		mrail_error("regcache: destroyed with %llu registrations still "
			    "in use (caller bug); cached ones deregistered, "
			    "%llu one-use ones leaked",
			    (unsigned long long)held,
			    (unsigned long long)rc->st.uncached);
	mrail_memmon_detach(&rc->sink, rc->lim.enabled &&
					       !rc->lim.unmonitored);
	free(rc->idx);
	free(rc);
}

/* ---- get and put ---------------------------------------------------------- */

static int new_entry(struct mrail_regcache *c, uintptr_t start, uintptr_t end,
		     struct mrail_regcache_entry **out)
{
	struct mrail_regcache_entry *e = calloc(1, sizeof *e);
	if (!e)
		return MRAIL_ERR_NOMEM;
	e->addr = start;
	e->len = end - start;
	e->refs = 1;
	mrail_list_init(&e->lru);
	int rc = c->ops.reg(c->ctx, (void *)start, e->len, &e->handle);
	if (rc) {
		free(e);
		return rc < 0 ? rc : MRAIL_ERR_IO;
	}
	*out = e;
	return MRAIL_OK;
}

/* One-use registration: deregistered on its last put. */
static int get_uncached(struct mrail_regcache *c, uintptr_t start,
			uintptr_t end, struct mrail_regcache_entry **out)
{
	int rc = new_entry(c, start, end, out);
	if (!rc)
		c->st.uncached++;
	return rc;
}

int mrail_regcache_get(struct mrail_regcache *c, const void *addr,
		       size_t len, struct mrail_regcache_entry **out)
{
	uintptr_t a = (uintptr_t)addr;
	if (!c || !out || !len || a + len < a ||
	    a + len > UINTPTR_MAX - c->page_mask)
		return MRAIL_ERR_INVALID;
	uintptr_t start = a & ~c->page_mask;
	uintptr_t end = (a + len + c->page_mask) & ~c->page_mask;
	if (!caching(c)) {
		c->st.misses++;
		return get_uncached(c, start, end, out);
	}
	drain(c);

	size_t i = upper_bound(c, start);
	if (i > 0 && c->idx[i - 1]->addr + c->idx[i - 1]->len >= end) {
		struct mrail_regcache_entry *e = c->idx[i - 1];
		if (e->refs++ == 0) {
			mrail_list_remove(&e->lru);
			c->st.unused_entries--;
			c->st.unused_bytes -= e->len;
		}
		c->st.hits++;
		*out = e;
		return MRAIL_OK;
	}
	c->st.misses++;

	/* Overlapping entries: idx[first, last) */
	size_t first = i > 0 && c->idx[i - 1]->addr + c->idx[i - 1]->len > start
			       ? i - 1 : i;
	size_t last = first;
	uintptr_t ustart = start, uend = end;
	while (last < c->n && c->idx[last]->addr < end) {
		struct mrail_regcache_entry *o = c->idx[last++];
		if (o->addr < ustart)
			ustart = o->addr;
		if (o->addr + o->len > uend)
			uend = o->addr + o->len;
	}

	/* Watch before registering: a change after this point is reported. */
	int watched = c->lim.unmonitored ||
		      mrail_memmon_subscribe(ustart, uend) == MRAIL_OK;
	if (!watched)
		return get_uncached(c, start, end, out);
	struct mrail_regcache_entry *e;
	int rc = new_entry(c, ustart, uend, &e);
	if (rc) {
		if (!c->lim.unmonitored)
			mrail_memmon_unsubscribe(ustart, uend);
		return rc;
	}
	if (!c->lim.unmonitored)
		e->flags |= E_MONITORED;

	if (c->n + 1 > c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		void *p = realloc(c->idx, cap * sizeof *c->idx);
		if (!p) {
			c->st.uncached++; /* still correct, just not cached */
			*out = e;
			return MRAIL_OK;
		}
		c->idx = p;
		c->cap = cap;
	}
	/* Retire the overlapped entries, then take their place. */
	for (size_t k = first; k < last; k++) {
		c->st.merges++;
		uncache(c, first);
	}
	memmove(&c->idx[first + 1], &c->idx[first],
		(c->n - first) * sizeof *c->idx);
	c->idx[first] = e;
	c->n++;
	e->flags |= E_CACHED;
	c->st.entries++;
	c->st.bytes += e->len;
	*out = e;
	return MRAIL_OK;
}

void mrail_regcache_put(struct mrail_regcache *c,
			struct mrail_regcache_entry *e)
{
	if (!c || !e)
		return;
	if (e->refs == 0) {
		mrail_error("regcache: put of an unused registration [%#lx, "
			    "+%zu) ignored (caller bug)", (unsigned long)e->addr,
			    e->len);
		return;
	}
	if (--e->refs)
		return;
	if (!(e->flags & E_CACHED)) {
		c->st.uncached--;
		release(c, e);
		return;
	}
	mrail_list_append(&c->lru, &e->lru);
	c->st.unused_entries++;
	c->st.unused_bytes += e->len;
	/* Drop now what the monitor reported, rather than keep it pinned. */
	drain(c);
	evict(c);
}

void mrail_regcache_stats(const struct mrail_regcache *c,
			  struct mrail_regcache_stats *st)
{
	*st = c->st;
}

void mrail_regcache_invalidate_range(void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;
	mrail_memmon_record(a, len > UINTPTR_MAX - a ? UINTPTR_MAX : a + len);
}
