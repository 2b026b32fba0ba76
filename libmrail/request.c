/* Requests: allocation, completion, rendezvous handles, test/wait. */
#include "libmrail/engine.h"
#include "util/clock.h"
#include "util/log.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

struct mrail_request *request_new(struct mrail_engine *e, int kind,
				  const struct iovec *iov, int iovcnt,
				  const void *buf, size_t len)
{
	struct mrail_request *r = calloc(1, sizeof *r);
	(void)e;
	if (!r)
		return NULL;
	mrail_list_init(&r->link);
	mrail_list_init(&r->gate_link);
	r->kind = kind;
	if (iov) {
		r->iov = malloc(sizeof *iov * (size_t)(iovcnt ? iovcnt : 1));
		if (!r->iov) {
			free(r);
			return NULL;
		}
		memcpy(r->iov, iov, sizeof *iov * (size_t)iovcnt);
		r->iovcnt = iovcnt;
		r->len = mrail_iov_length(iov, iovcnt);
	} else {
		r->iov1.iov_base = (void *)buf;
		r->iov1.iov_len = len;
		r->iov = &r->iov1;
		r->iovcnt = 1;
		r->len = len;
	}
	return r;
}

void request_complete(struct mrail_engine *e, struct mrail_request *r,
		      int error)
{
	ENGINE_ASSERT_LOCKED(e);
	if (r->phase == REQ_DONE)
		return;
	mrail_list_remove(&r->link);
	mrail_list_remove(&r->gate_link);
	handle_release(e, r);
	if (r->error == MRAIL_OK)
		r->error = error;
	r->status.error = r->error;
	r->phase = REQ_DONE;
}

void request_free(struct mrail_engine *e, struct mrail_request *r)
{
	(void)e;
	if (r->iov != &r->iov1)
		free(r->iov);
	free(r);
}

/*
 * Rendezvous ids travel on the wire and come back in RTR and DATA records:
 * slot index in the low 32 bits, a generation in the high 32 bits, so a
 * stale or forged id is detected instead of followed.
 */
uint64_t handle_assign(struct mrail_engine *e, struct mrail_request *r)
{
	ENGINE_ASSERT_LOCKED(e);
	uint32_t i;
	for (i = e->handles_free_hint; i < e->handles_cap; i++)
		if (!e->handles[i].req)
			break;
	if (i == e->handles_cap) {
		for (i = 0; i < e->handles_cap; i++)
			if (!e->handles[i].req)
				break;
	}
	if (i == e->handles_cap) {
		uint32_t cap = e->handles_cap ? 2 * e->handles_cap : 64;
		struct handle_slot *h =
			realloc(e->handles, sizeof *h * (size_t)cap);
		if (!h)
			return 0;
		memset(h + e->handles_cap, 0,
		       sizeof *h * (size_t)(cap - e->handles_cap));
		e->handles = h;
		i = e->handles_cap;
		e->handles_cap = cap;
	}
	struct handle_slot *s = &e->handles[i];
	s->req = r;
	s->gen++;
	if (s->gen == 0)
		s->gen = 1;
	e->handles_free_hint = i + 1;
	r->id = (uint64_t)s->gen << 32 | i;
	return r->id;
}

struct mrail_request *handle_lookup(struct mrail_engine *e, uint64_t id)
{
	uint32_t i = (uint32_t)id, gen = (uint32_t)(id >> 32);
	if (i >= e->handles_cap || e->handles[i].gen != gen)
		return NULL;
	return e->handles[i].req;
}

void handle_release(struct mrail_engine *e, struct mrail_request *r)
{
	if (!r->id)
		return;
	uint32_t i = (uint32_t)r->id;
	if (i < e->handles_cap && e->handles[i].req == r) {
		e->handles[i].req = NULL;
		if (i < e->handles_free_hint)
			e->handles_free_hint = i;
	}
	r->id = 0;
}

/* ---- completion API --------------------------------------------------- */

static void finish(struct mrail_engine *e, struct mrail_request *r,
		   mrail_status_t *st)
{
	if (st)
		*st = r->status;
	request_free(e, r);
}

/*
 * Busy-poll while progress keeps coming, then yield, then sleep in the
 * drivers' wait fd: low latency when a core is ours, fair when processes
 * outnumber cores.
 */
struct backoff {
	unsigned idle;
	double idle_since;
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
	engine_idle_wait(e, 1);
}

MRAIL_API int mrail_test(mrail_engine_t *e, mrail_request_t *r,
			 mrail_status_t *st)
{
	if (!e || !r)
		return MRAIL_ERR_INVALID;
	engine_lock(e);
	if (r->phase != REQ_DONE)
		engine_progress(e);
	int done = r->phase == REQ_DONE;
	engine_unlock(e);
	if (!done)
		return MRAIL_ERR_AGAIN;
	finish(e, r, st);
	return MRAIL_OK;
}

MRAIL_API int mrail_wait(mrail_engine_t *e, mrail_request_t *r,
			 mrail_status_t *st)
{
	struct backoff b = {0, 0};
	if (!e || !r)
		return MRAIL_ERR_INVALID;
	for (;;) {
		engine_lock(e);
		int events = 0;
		if (r->phase != REQ_DONE)
			events = engine_progress(e);
		int done = r->phase == REQ_DONE;
		engine_unlock(e);
		if (done)
			break;
		backoff_step(e, &b, events);
	}
	finish(e, r, st);
	return MRAIL_OK;
}

MRAIL_API int mrail_wait_all(mrail_engine_t *e, size_t n, mrail_request_t **reqs,
			     mrail_status_t *sts)
{
	struct backoff b = {0, 0};
	int first_error = MRAIL_OK;
	size_t left = 0;

	if (!e || (n && !reqs))
		return MRAIL_ERR_INVALID;
	for (size_t i = 0; i < n; i++)
		left += reqs[i] != NULL;
	while (left > 0) {
		engine_lock(e);
		int events = engine_progress(e);
		/* Under the lock: a progress thread may be completing them. */
		for (size_t i = 0; i < n; i++) {
			struct mrail_request *r = reqs[i];
			if (!r || r->phase != REQ_DONE)
				continue;
			if (r->status.error && first_error == MRAIL_OK)
				first_error = r->status.error;
			finish(e, r, sts ? &sts[i] : NULL);
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
	struct backoff b = {0, 0};
	size_t live = 0;

	if (!e || !index || (n && !reqs))
		return MRAIL_ERR_INVALID;
	for (size_t i = 0; i < n; i++)
		live += reqs[i] != NULL;
	if (!live)
		return MRAIL_ERR_INVALID;
	for (;;) {
		engine_lock(e);
		int events = engine_progress(e);
		/* Under the lock: a progress thread may be completing them. */
		for (size_t i = 0; i < n; i++) {
			struct mrail_request *r = reqs[i];
			if (r && r->phase == REQ_DONE) {
				finish(e, r, st);
				reqs[i] = NULL;
				*index = i;
				engine_unlock(e);
				return MRAIL_OK;
			}
		}
		engine_unlock(e);
		backoff_step(e, &b, events);
	}
}

MRAIL_API int mrail_cancel(mrail_engine_t *e, mrail_request_t *r)
{
	int rc = MRAIL_OK;
	if (!e || !r)
		return MRAIL_ERR_INVALID;
	engine_lock(e);
	if (r->kind != REQ_RECV)
		rc = MRAIL_ERR_INVALID;
	else if (r->phase != REQ_POSTED)
		rc = MRAIL_ERR_BUSY;
	else
		request_complete(e, r, MRAIL_ERR_CANCELED);
	engine_unlock(e);
	return rc;
}
