/*
 * The engine lock and the thread level (threads.c, docs/threads.md).
 *
 * Only api*.c take the lock, apart from the progress thread loop
 * (progress.c) and callback running (request.c), which drop it between
 * rounds or around each callback. Every internal function that needs it
 * asserts it first.
 */
#ifndef MRAIL_LIBMRAIL_THREADS_H
#define MRAIL_LIBMRAIL_THREADS_H

#include <stdint.h>

struct mrail_engine;

/* threads.c (docs/threads.md) */
void engine_lock(struct mrail_engine *e);
void engine_unlock(struct mrail_engine *e);
/* Once created (the lock released, no engine thread to come): decides
 * whether the lock may be elided (threads.c). */
void threads_engine_ready(struct mrail_engine *e);
/*
 * Debug builds (MRAIL_DEBUG_LOCKS, set by meson for buildtypes debug and
 * debugoptimized) abort with file:line when the calling thread does not
 * hold e's lock: put it first in every internal entry point that needs it.
 */
#ifdef MRAIL_DEBUG_LOCKS
#define ENGINE_ASSERT_LOCKED(e) engine_assert_locked((e), __FILE__, __LINE__)
void engine_assert_locked(const struct mrail_engine *e, const char *file,
			  int line);
#else
#define ENGINE_ASSERT_LOCKED(e) ((void)(e))
#endif
/* Validate and record cfg.thread_level (during engine_init). */
int threads_init(struct mrail_engine *e);
/* Called first by the progress thread: it is not an application thread. */
void threads_progress_thread(struct mrail_engine *e);
/* Called first by an offload worker (libmrail/offload/worker.c): an
 * engine thread, exempt from the thread-level checks like the progress
 * thread (the engine refuses offload at single). */
void threads_engine_thread(struct mrail_engine *e, unsigned slot);
#define ENGINE_THREADS_MAX 16

#endif
