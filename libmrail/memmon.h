/*
 * The memory-event monitor behind the registration cache (docs/regcache.md).
 *
 * One per process: a userfaultfd that receives unmap, remove (madvise
 * DONTNEED/FREE/REMOVE) and remap events for the ranges registration caches
 * subscribe, and a thread that reads them and records each affected range
 * in every attached sink. munmap/madvise/mremap of a subscribed range do
 * not return before the monitor has read the event, and the monitor reads
 * and records with the sink lock held, so a drain that starts after such a
 * call returned sees its range.
 *
 * Lock order: caller's lock (the engine lock) -> subscription lock -> sink
 * lock. The monitor thread takes only the sink lock, which nobody holds
 * while calling anything that may unmap memory (malloc, free, drivers).
 *
 * Not inherited by fork: in a child nothing new is watched (so nothing
 * new is cached).
 */
#ifndef MRAIL_LIBMRAIL_MEMMON_H
#define MRAIL_LIBMRAIL_MEMMON_H

#include <stddef.h>
#include <stdint.h>

struct mrail_memmon_range {
	uintptr_t start, end; /* [start, end) */
};

/* Invalidated ranges waiting for their cache; owned by the cache, filled
 * by the monitor. On overflow everything the cache holds is invalid. */
#define MRAIL_MEMMON_SINK_CAP 128
struct mrail_memmon_sink {
	struct mrail_memmon_sink *next; /* private to memmon.c */
	unsigned count;
	int overflow;
	struct mrail_memmon_range r[MRAIL_MEMMON_SINK_CAP];
};

enum mrail_memmon_mode {
	MRAIL_MEMMON_OFF = 0,     /* no userfaultfd: nothing can be monitored */
	MRAIL_MEMMON_WP = 1,      /* registered write-protect mode: events only */
	MRAIL_MEMMON_MISSING = 2, /* missing mode: the monitor zero-fills faults */
};

/*
 * Attach a sink. With want_monitor, also start the monitor (first user
 * creates the userfaultfd and the thread); returns the mode obtained
 * (MRAIL_MEMMON_OFF if userfaultfd is unavailable, with the reason logged
 * at info level). Without want_monitor the sink only receives ranges from
 * mrail_memmon_record() (tests). Never fails.
 */
int mrail_memmon_attach(struct mrail_memmon_sink *s, int want_monitor);
/* Detach; the last monitor user stops the thread and closes the fd. */
void mrail_memmon_detach(struct mrail_memmon_sink *s, int want_monitor);

/*
 * Start watching the page-aligned [start, end). MRAIL_OK if every page of
 * it is anonymous private memory now registered with the monitor;
 * MRAIL_ERR_NOT_FOUND if it cannot be watched (file or shared mapping,
 * hole, another userfaultfd owns it, monitor off). Subscriptions nest: a
 * range stays registered while any subscription covers it.
 */
int mrail_memmon_subscribe(uintptr_t start, uintptr_t end);
void mrail_memmon_unsubscribe(uintptr_t start, uintptr_t end);

/* Record [start, end) as invalid in every attached sink. */
void mrail_memmon_record(uintptr_t start, uintptr_t end);

/* Move the sink's pending ranges to out (at most MRAIL_MEMMON_SINK_CAP);
 * returns how many, *overflow set if some were lost. */
unsigned mrail_memmon_drain(struct mrail_memmon_sink *s,
			    struct mrail_memmon_range *out, int *overflow);

/* Tests only, for the next monitor start: force the registration mode
 * (MRAIL_MEMMON_WP, MRAIL_MEMMON_MISSING, or 0 for automatic), and with
 * maps_text, read /proc/self/maps as text even where PROCMAP_QUERY works. */
void mrail_memmon_force_mode(int mode, int maps_text);

/* Events the monitor has read (unmap, remove, remap) and faults it
 * resolved, since the process started. */
void mrail_memmon_counters(uint64_t *events, uint64_t *faults);

#endif
