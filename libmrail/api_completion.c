/*
 * Public completion calls: test, wait, cancel, callbacks, progress. Like
 * every api*.c file, these are the only functions that take the engine
 * lock (docs/threads.md); what they call under it asserts it.
 */
#include "libmrail/engine.h"
#include "util/clock.h"

#include <sched.h>

/*
 * Busy-poll while progress keeps coming, then yield, then sleep in the
 * drivers' wait fd: low latency when a core is ours, fair when processes
 * outnumber cores.
 */
struct backoff {
	unsigned idle;
	double idle_since;
	int wait_ms;
};

static void backoff_step(struct mrail_engine *e, struct backoff *b, int events)
{
	if (events > 0) {
		b->idle = 0;
		return;
	}
	if (++b->idle < 64)
		return;
	if (b->idle == 64)
		b->idle_since = mrail_now();
	if (mrail_now() - b->idle_since < 200e-6) {
		sched_yield();
		return;
	}
	/* Oversubscribed (many ranks per core): sleep longer and longer, up
	 * to e->idle_wait_max_ms; a socket event still wakes us at once.
	 * 1024 waiting ranks waking every 1 ms kept 2 cores busy. */
	if (b->wait_ms < 1 || mrail_now() - b->idle_since < 20e-3)
		b->wait_ms = 1;
	else if (b->wait_ms < e->idle_wait_max_ms)
		b->wait_ms *= 2;
	if (b->wait_ms > e->idle_wait_max_ms)
		b->wait_ms = e->idle_wait_max_ms > 0 ? e->idle_wait_max_ms : 1;
	engine_idle_sleep(e, b->wait_ms);
}

/* One round of progress for test/wait: driver events, then callbacks. */
static int progress_round(struct mrail_engine *e)
{
	engine_lock(e);
	int events = engine_progress(e);
	int due = !mrail_list_empty(&e->cbq);
	engine_unlock(e);
	if (due)
		events += request_run_callbacks(e);
	return events;
}

MRAIL_API int mrail_progress(mrail_engine_t *e)
{
	if (!e)
		return MRAIL_ERR_INVALID;
	engine_lock(e);
	int n = engine_progress(e);
	int due = !mrail_list_empty(&e->cbq);
	engine_unlock(e);
	/* Lock released: they may post. Not looked at when none is due: two
	 * more lock round trips per idle call, which Open MPI's progress
	 * loop makes millions of times while it waits. */
	return due ? n + request_run_callbacks(e) : n;
}

MRAIL_API int mrail_test(mrail_engine_t *e, mrail_request_t *r,
			 mrail_status_t *st)
{
	if (!e || !r)
		return MRAIL_ERR_INVALID;
	/* One lock round trip, not three: a polling loop calls this
	 * millions of times. A KEEP request whose callback became due in
	 * this pass is reported by the next call, after its callback. */
	engine_lock(e);
	int done = request_collectable(r), due = 0;
	if (!done) {
		engine_progress(e);
		done = request_collectable(r);
		due = !mrail_list_empty(&e->cbq);
	}
	if (done)
		request_finish(e, r, st);
	engine_unlock(e);
	if (due)
		request_run_callbacks(e);
	return done ? MRAIL_OK : MRAIL_ERR_AGAIN;
}

MRAIL_API int mrail_wait(mrail_engine_t *e, mrail_request_t *r,
			 mrail_status_t *st)
{
	struct backoff b = {0, 0, 0};
	if (!e || !r)
		return MRAIL_ERR_INVALID;
	for (;;) {
		engine_lock(e);
		if (request_collectable(r)) {
			request_finish(e, r, st);
			engine_unlock(e);
			return MRAIL_OK;
		}
		engine_unlock(e);
		backoff_step(e, &b, progress_round(e));
	}
}

MRAIL_API int mrail_wait_all(mrail_engine_t *e, size_t n, mrail_request_t **reqs,
			     mrail_status_t *sts)
{
	struct backoff b = {0, 0, 0};
	int first_error = MRAIL_OK;
	size_t left = 0;

	if (!e || (n && !reqs))
		return MRAIL_ERR_INVALID;
	for (size_t i = 0; i < n; i++)
		left += reqs[i] != NULL;
	while (left > 0) {
		int events = progress_round(e);
		engine_lock(e);
		/* Under the lock: a progress thread may be completing them. */
		for (size_t i = 0; i < n; i++) {
			struct mrail_request *r = reqs[i];
			if (!r || !request_collectable(r))
				continue;
			if (r->status.error && first_error == MRAIL_OK)
				first_error = r->status.error;
			request_finish(e, r, sts ? &sts[i] : NULL);
			reqs[i] = NULL;
			left--;
		}
		engine_unlock(e);
		if (left)
			backoff_step(e, &b, events);
	}
	return first_error;
}

MRAIL_API int mrail_wait_any(mrail_engine_t *e, size_t n, mrail_request_t **reqs,
			     size_t *index, mrail_status_t *st)
{
	struct backoff b = {0, 0, 0};
	size_t live = 0;

	if (!e || !index || (n && !reqs))
		return MRAIL_ERR_INVALID;
	for (size_t i = 0; i < n; i++)
		live += reqs[i] != NULL;
	if (!live)
		return MRAIL_ERR_INVALID;
	for (;;) {
		int events = progress_round(e);
		engine_lock(e);
		/* Under the lock: a progress thread may be completing them. */
		for (size_t i = 0; i < n; i++) {
			struct mrail_request *r = reqs[i];
			if (r && request_collectable(r)) {
				request_finish(e, r, st);
				engine_unlock(e);
				reqs[i] = NULL;
				*index = i;
				return MRAIL_OK;
			}
		}
		engine_unlock(e);
		backoff_step(e, &b, events);
	}
}

MRAIL_API int mrail_cancel(mrail_engine_t *e, mrail_request_t *r)
{
	if (!e || !r)
		return MRAIL_ERR_INVALID;
	engine_lock(e);
	int rc = request_cancel(e, r);
	engine_unlock(e);
	return rc;
}

MRAIL_API size_t mrail_request_size(void)
{
	return sizeof(struct mrail_request);
}

MRAIL_API int mrail_request_set_callback(mrail_request_t *r,
					 mrail_request_cb_t cb, void *ctx)
{
	if (!r || !cb)
		return MRAIL_ERR_INVALID;
	struct mrail_engine *e = r->engine;
	engine_lock(e);
	int rc = request_set_callback(e, r, cb, ctx);
	engine_unlock(e);
	return rc;
}

MRAIL_API int mrail_wait_fd(mrail_engine_t *e, int *fd)
{
	if (!e || !fd)
		return MRAIL_ERR_INVALID;
	engine_lock(e);
	int rc = wait_fd_get(e, fd);
	engine_unlock(e);
	return rc;
}

/* Quiet passes before arming: as many as mrail_wait makes before it
 * sleeps, since the ofi driver arms its wait objects itself after 16
 * idle rounds (OFI_ARM_AFTER); shm arms in its trywait. */
#define WAIT_QUIET_PASSES 64

MRAIL_API int mrail_wait_prepare(mrail_engine_t *e)
{
	if (!e)
		return MRAIL_ERR_INVALID;
	engine_lock(e);
	if (e->wait_epfd < 0) {
		engine_unlock(e);
		return MRAIL_ERR_INVALID; /* mrail_wait_fd first */
	}
	int events = 0;
	for (int i = 0; i < WAIT_QUIET_PASSES && events == 0; i++)
		events = engine_progress(e);
	int due = !mrail_list_empty(&e->cbq);
	int rc = events > 0 || due ? MRAIL_ERR_AGAIN : wait_arm(e);
	engine_unlock(e);
	if (due)
		request_run_callbacks(e);
	return rc;
}
