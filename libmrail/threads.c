/*
 * The engine lock and the thread level (docs/threads.md).
 *
 * One mutex per engine serializes every call at every level: an
 * uncontended lock costs nothing measurable next to a message (mrail-bench
 * 8 B latency, docs/threads.md), so SINGLE and SERIALIZED keep it and the
 * level is a promise the application makes, checked in debug builds:
 * SINGLE: every lock is taken by the creating thread (or the engine's own
 * progress thread, which SINGLE refuses anyway); SERIALIZED: an
 * application thread never finds the lock held by another application
 * thread (two threads inside the engine at once). Debug builds also record
 * the owner, for ENGINE_ASSERT_LOCKED and to catch a thread re-entering
 * the engine (a callback calling the API), which would deadlock.
 */
#include "libmrail/engine.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>

/* A thread's identity: the address of its copy of a TLS variable (unique
 * among live threads, cheaper than pthread_self() comparisons, and an
 * integer that atomics can carry). */
static __thread char thread_marker;

static uintptr_t self_id(void)
{
	return (uintptr_t)&thread_marker;
}

/* Set in the engine's own worker threads (offload). */
static __thread int engine_thread;

void threads_engine_thread(struct mrail_engine *e, unsigned slot)
{
	engine_thread = 1;
	if (slot < ENGINE_THREADS_MAX)
		__atomic_store_n(&e->engine_threads[slot], self_id(),
				 __ATOMIC_RELAXED);
}

static const char *level_name(enum mrail_thread_level level)
{
	switch (level) {
	case MRAIL_THREAD_SINGLE: return "single";
	case MRAIL_THREAD_SERIALIZED: return "serialized";
	case MRAIL_THREAD_MULTIPLE: return "multiple";
	}
	return "?";
}

int threads_init(struct mrail_engine *e)
{
	int level = e->cfg.thread_level;
	if (level < MRAIL_THREAD_SINGLE || level > MRAIL_THREAD_MULTIPLE) {
		mrail_error("invalid thread_level=%d (MRAIL_THREAD_LEVEL): "
			    "expected MRAIL_THREAD_SINGLE, _SERIALIZED or "
			    "_MULTIPLE", level);
		return MRAIL_ERR_CONFIG;
	}
	if (level == MRAIL_THREAD_SINGLE && e->cfg.progress_thread) {
		mrail_error("MRAIL_PROGRESS_THREAD=1 needs thread level "
			    "serialized or multiple: at MRAIL_THREAD_LEVEL=single "
			    "no other thread may enter the engine");
		return MRAIL_ERR_CONFIG;
	}
	e->thread_level = level;
	e->creator = self_id();
	mrail_debug("thread level %s", level_name(level));
	return MRAIL_OK;
}

void threads_progress_thread(struct mrail_engine *e)
{
	__atomic_store_n(&e->progress_owner, self_id(), __ATOMIC_RELAXED);
}

#ifdef MRAIL_DEBUG_LOCKS
static void misuse(const char *rule, const char *what)
{
	/* The log may itself be what is broken: write directly. */
	fprintf(stderr, "libmrail: thread misuse: %s: %s (docs/threads.md)\n",
		rule, what);
	abort();
}

static int is_engine_thread(const struct mrail_engine *e, uintptr_t id)
{
	for (unsigned i = 0; i < ENGINE_THREADS_MAX; i++)
		if (__atomic_load_n(&e->engine_threads[i], __ATOMIC_RELAXED) ==
		    id)
			return 1;
	return 0;
}

/* Checks before taking the lock; returns 1 if it took it already. */
static int check_entry(struct mrail_engine *e)
{
	uintptr_t me = self_id();
	uintptr_t owner = __atomic_load_n(&e->lock_owner, __ATOMIC_RELAXED);
	if (owner == me)
		misuse("a thread may not re-enter the engine",
		       "this thread already holds the engine lock (an "
		       "engine call from inside a callback or an upcall?)");
	/* The creator is set once the level is known, inside creation. */
	if (!e->creator || engine_thread ||
	    me == __atomic_load_n(&e->progress_owner, __ATOMIC_RELAXED))
		return 0;
	if (e->thread_level == MRAIL_THREAD_SINGLE && me != e->creator)
		misuse("MRAIL_THREAD_SINGLE: only the thread that created the "
		       "engine may call it", "called from another thread");
	if (e->thread_level != MRAIL_THREAD_SERIALIZED)
		return 0;
	if (pthread_mutex_trylock(&e->lock) == 0)
		return 1;
	/* The owner field is cleared before unlock and set after lock, so
	 * it is 0 or the real holder: no false alarms. */
	owner = __atomic_load_n(&e->lock_owner, __ATOMIC_RELAXED);
	if (owner && owner != me &&
	    owner != __atomic_load_n(&e->progress_owner, __ATOMIC_RELAXED) &&
	    !is_engine_thread(e, owner))
		misuse("MRAIL_THREAD_SERIALIZED: two threads may not be "
		       "inside the engine at once", "this thread called while "
		       "another application thread was inside a call");
	return 0;
}

void engine_assert_locked(const struct mrail_engine *e, const char *file,
			  int line)
{
	if (__atomic_load_n(&e->lock_owner, __ATOMIC_RELAXED) == self_id())
		return;
	fprintf(stderr, "libmrail: %s:%d: engine lock not held by this "
		"thread (docs/threads.md)\n", file, line);
	abort();
}
#endif

/*
 * At SINGLE and SERIALIZED, with neither a progress thread nor offload
 * workers, no two threads are ever inside the engine at once: the
 * application promised it, and the engine has no thread of its own. What
 * orders one thread's calls before another's is the application's own
 * synchronization (Open MPI's, under the MTL), so the mutex adds nothing
 * there, and it was a fifth of every idle progress pass over shm (perf,
 * docs/mpi-ompi.md "budget"). Release builds then skip it; debug builds
 * keep it, for the owner checks above (they catch a broken promise).
 * Decided once, after creation, when no other thread has the engine yet,
 * and never changed: an unlock always matches its lock.
 */
void threads_engine_ready(struct mrail_engine *e)
{
#ifdef MRAIL_DEBUG_LOCKS
	e->lock_elided = 0;
#else
	e->lock_elided = e->thread_level != MRAIL_THREAD_MULTIPLE &&
			 !e->progress_thread_running && !e->offload;
#endif
}

void engine_lock(struct mrail_engine *e)
{
#ifdef MRAIL_DEBUG_LOCKS
	if (!check_entry(e))
		pthread_mutex_lock(&e->lock);
	__atomic_store_n(&e->lock_owner, self_id(), __ATOMIC_RELAXED);
#else
	if (!e->lock_elided)
		pthread_mutex_lock(&e->lock);
#endif
}

void engine_unlock(struct mrail_engine *e)
{
#ifdef MRAIL_DEBUG_LOCKS
	__atomic_store_n(&e->lock_owner, 0, __ATOMIC_RELAXED);
#else
	if (e->lock_elided)
		return;
#endif
	pthread_mutex_unlock(&e->lock);
}
