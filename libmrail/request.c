/* Requests: allocation, completion, release, rendezvous handles, callbacks. */
#include "libmrail/engine.h"
#include "util/log.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static void request_init(struct mrail_engine *e, struct mrail_request *r,
			 enum req_kind kind)
{
	memset(r, 0, sizeof *r);
	mrail_list_init(&r->link);
	mrail_list_init(&r->gate_link);
	r->engine = e;
	r->kind = kind;
	mrail_list_append(&e->requests, &r->all_link);
}

/* Buffers: contiguous ones use the request's own iovec (no allocation). */
static int request_set_buffer(struct mrail_request *r, const struct iovec *iov,
			      int iovcnt, const void *buf, size_t len)
{
	if (iov && iovcnt == 1) {
		buf = iov[0].iov_base;
		len = iov[0].iov_len;
		iov = NULL;
	}
	if (iov) {
		r->iov = malloc(sizeof *iov * (size_t)(iovcnt ? iovcnt : 1));
		if (!r->iov)
			return MRAIL_ERR_NOMEM;
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
	return MRAIL_OK;
}

struct mrail_request *request_new_x(struct mrail_engine *e,
				    enum req_kind kind,
				    const struct iovec *iov, int iovcnt,
				    const void *buf, size_t len,
				    const struct mrail_req_args *args)
{
	struct mrail_request *r = args && args->storage ? args->storage
						       : malloc(sizeof *r);
	if (!r)
		return NULL;
	request_init(e, r, kind);
	if (args) {
		r->flags = args->flags;
		if (args->flags & MRAIL_REQ_DATA)
			r->data = args->data;
		r->cb = args->cb;
		r->cb_ctx = args->cb_ctx;
		if (args->storage)
			r->flags |= REQF_STORAGE;
	}
	if (request_set_buffer(r, iov, iovcnt, buf, len)) {
		mrail_list_remove(&r->all_link);
		if (!(r->flags & REQF_STORAGE))
			free(r);
		return NULL;
	}
	return r;
}

struct mrail_request *request_new(struct mrail_engine *e,
				  enum req_kind kind,
				  const struct iovec *iov, int iovcnt,
				  const void *buf, size_t len)
{
	return request_new_x(e, kind, iov, iovcnt, buf, len, NULL);
}

int request_args_check(const struct mrail_req_args *a, int is_send,
		       const struct iovec **iov, int *iovcnt, const void *buf,
		       size_t len)
{
	*iov = NULL;
	*iovcnt = 0;
	if (!a)
		return buffer_args_valid(NULL, 0, buf, len) ? MRAIL_OK
							    : MRAIL_ERR_INVALID;
	/* Version 1 ends before `data`: MRAIL_REQ_DATA needs 2. */
	unsigned known = MRAIL_REQ_SYNC | MRAIL_REQ_KEEP | MRAIL_REQ_WAITING |
			 MRAIL_REQ_IMMEDIATE |
			 (a->version >= 2 ? MRAIL_REQ_DATA : 0);
	if (a->version < 1 || a->version > MRAIL_REQ_ARGS_VERSION ||
	    (a->flags & ~known) ||
	    (!is_send && (a->flags & (MRAIL_REQ_SYNC | MRAIL_REQ_DATA |
				      MRAIL_REQ_WAITING))) ||
	    ((uintptr_t)a->storage % _Alignof(max_align_t)))
		return MRAIL_ERR_INVALID;
	if (a->iov || a->iovcnt) {
		if (buf || len || !a->iov)
			return MRAIL_ERR_INVALID;
		*iov = a->iov;
		*iovcnt = a->iovcnt;
	}
	return buffer_args_valid(*iov, *iovcnt, buf, len) ? MRAIL_OK
							  : MRAIL_ERR_INVALID;
}

/* A failed request reports what moved: rendezvous bytes that arrived
 * (receive) or that the driver sent (send); 0 for anything else. */
static void honest_length(struct mrail_request *r, int error)
{
	/* A send's chunks lost with a failed rail were counted and asked
	 * again: never report more than the message. */
	if (error != MRAIL_OK && error != MRAIL_ERR_TRUNCATE)
		r->status.length = r->done_bytes < r->len ? r->done_bytes
							  : r->len;
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
	honest_length(r, r->error);
	r->status.error = r->error;
	r->phase = REQ_DONE;
	if (r->flags & REQF_DETACHED) {
		e->detached_bytes -= REQ_DETACHED_CHARGE(r);
		r->gate->detached_bytes -= REQ_DETACHED_CHARGE(r);
		/* Sends that found no room may be copied now (progress). */
		if (!mrail_list_empty(&r->gate->rdv) || e->detach_starved) {
			r->gate->detach_retry = 1;
			e->detach_retry = 1;
		}
	}
	if (r->cb) {
		r->cb_pending = 1;
		mrail_list_append(&e->cbq, &r->link);
	} else if (r->flags & REQF_PULL) {
		/* Its caller may still look at it: finished in progress. */
		mrail_list_append(&e->pulls_done, &r->link);
	}
}

void request_fail(struct mrail_engine *e, struct mrail_request *r, int error)
{
	if (r->phase == REQ_DONE)
		return;
	if (r->outstanding == 0) {
		/* A truncated receive fails for the new reason. */
		if (r->error == MRAIL_ERR_TRUNCATE)
			r->error = MRAIL_OK;
		request_complete(e, r, error);
		return;
	}
	r->failing = 1;
	if (r->error == MRAIL_OK || r->error == MRAIL_ERR_TRUNCATE)
		r->error = error;
}

/* What a released request still owns, taken out of it so that it can be
 * freed without touching the request again (caller storage, reused once
 * its callback returned). */
struct request_memory {
	struct rdv_range *ranges;
	struct iovec *iov;
	struct mrail_request *own; /* the request itself, when we allocated it */
};

static struct request_memory request_memory_take(struct mrail_request *r)
{
	struct request_memory m = {
		r->ranges, r->iov != &r->iov1 ? r->iov : NULL,
		r->flags & REQF_STORAGE ? NULL : r};
	r->ranges = NULL;
	r->iov = &r->iov1;
	return m;
}

/* Mostly nothing (caller storage, one buffer): three calls of free(NULL)
 * were a tenth of running a callback. */
static void request_memory_put(struct request_memory m)
{
	if (m.ranges)
		free(m.ranges);
	if (m.iov)
		free(m.iov);
	if (m.own)
		free(m.own);
}

static void request_memory_free(struct mrail_request *r)
{
	request_memory_put(request_memory_take(r));
}

void request_free(struct mrail_engine *e, struct mrail_request *r)
{
	rma_request_release(e, r);
	mrail_list_remove(&r->all_link);
	request_memory_free(r);
}

void requests_init(struct mrail_engine *e)
{
	mrail_list_init(&e->probed);
	mrail_list_init(&e->requests);
	mrail_list_init(&e->cbq);
	mrail_list_init(&e->pulls_done);
	mrail_list_init(&e->pulls_taken);
	mrail_list_init(&e->unexp_cache);
}

static void free_unexpected_list(struct mrail_engine *e, struct mrail_list *l)
{
	struct mrail_list *pos, *tmp;
	mrail_list_foreach_safe(pos, tmp, l) {
		mrail_list_remove(pos);
		unexpected_free(e, mrail_list_entry(pos, struct unexpected,
						    link));
	}
}

/*
 * Engine destroy, after every rail is closed (no driver references any
 * buffer): requests never collected (posted, in flight, complete but not
 * tested, callbacks never run) and messages never received go.
 */
void requests_fini(struct mrail_engine *e)
{
	struct mrail_list *pos, *tmp;
	free_unexpected_list(e, &e->unexpected);
	free_unexpected_list(e, &e->probed);
	free_unexpected_list(e, &e->pulls_taken);
	pull_bufs_fini(e);
	mrail_list_foreach_safe(pos, tmp, &e->requests) {
		struct mrail_request *r =
			mrail_list_entry(pos, struct mrail_request, all_link);
		mrail_list_remove(&r->link);
		mrail_list_remove(&r->gate_link);
		request_free(e, r);
	}
	unexpected_cache_fini(e); /* last: the frees above fill it */
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

void handle_rebind(struct mrail_engine *e, struct mrail_request *from,
		   struct mrail_request *to)
{
	uint32_t i = (uint32_t)from->id;
	if (from->id && i < e->handles_cap && e->handles[i].req == from)
		e->handles[i].req = to;
	to->id = from->id;
	from->id = 0;
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

/* ---- completion --------------------------------------------------------- */

int request_collectable(const struct mrail_request *r)
{
	ENGINE_ASSERT_LOCKED(r->engine);
	return r->phase == REQ_DONE && !r->cb_pending;
}

/*
 * A send with REQF_IMMEDIATE that completed inside its isend: released
 * there, its callback (queued by request_complete) never called. Its
 * caller gets no handle, so nothing else can reach it.
 */
int request_release_immediate(struct mrail_engine *e, struct mrail_request *r)
{
	ENGINE_ASSERT_LOCKED(e);
	if (!(r->flags & REQF_IMMEDIATE) || r->phase != REQ_DONE ||
	    r->status.error != MRAIL_OK)
		return 0;
	if (r->cb_pending) {
		mrail_list_remove(&r->link);
		r->cb_pending = 0;
	}
	request_free(e, r);
	return 1;
}

void request_finish(struct mrail_engine *e, struct mrail_request *r,
		    mrail_status_t *st)
{
	ENGINE_ASSERT_LOCKED(e);
	if (st)
		*st = r->status;
	request_free(e, r);
}

/*
 * Under the lock, a receive is either still on the posted queue (nothing
 * matched it: cancel) or not (matched, possibly complete: BUSY). Matching
 * takes the same lock, so there is no third case.
 */
int request_cancel(struct mrail_engine *e, struct mrail_request *r)
{
	ENGINE_ASSERT_LOCKED(e);
	if (r->kind != REQ_RECV)
		return MRAIL_ERR_INVALID;
	if (r->phase != REQ_POSTED)
		return MRAIL_ERR_BUSY;
	request_complete(e, r, MRAIL_ERR_CANCELED);
	return MRAIL_OK;
}

int request_set_callback(struct mrail_engine *e, struct mrail_request *r,
			 mrail_request_cb_t cb, void *ctx)
{
	ENGINE_ASSERT_LOCKED(e);
	if (r->cb)
		return MRAIL_ERR_INVALID;
	r->cb = cb;
	r->cb_ctx = ctx;
	/* Completed already (an eager send inside isend): due now. */
	if (r->phase == REQ_DONE) {
		r->cb_pending = 1;
		mrail_list_append(&e->cbq, &r->link);
	}
	return MRAIL_OK;
}

/* r's callback, r taken off its list already; lock held on entry and on
 * return (released around the call). */
static void run_one_callback(struct mrail_engine *e, struct mrail_request *r)
{
	mrail_status_t st = r->status;
	mrail_request_cb_t cb = r->cb;
	void *ctx = r->cb_ctx;
	int keep = r->flags & REQF_KEEP;
	struct request_memory mem = {NULL, NULL, NULL};
	if (!keep) {
		mrail_list_remove(&r->all_link);
		/* Its registrations go back to the cache now, under the lock
		 * (request_free does it for the others). */
		rma_request_release(e, r);
		/* Taken before the call: caller storage may hold the caller's
		 * next request by the time it returns (a thread of an
		 * MPI_THREAD_MULTIPLE job posting into the request Open MPI
		 * just freed). */
		mem = request_memory_take(r);
	}
	engine_unlock(e);
	cb(r, &st, ctx);
	if (!keep)
		request_memory_put(mem);
	engine_lock(e);
	if (keep)
		r->cb_pending = 0;
}

/*
 * Callbacks run with the lock released, so they may call into the engine.
 * This is the one place outside api*.c (and the progress thread loop) that
 * takes the engine lock: it must drop it around each callback, so it
 * cannot be a plain locked internal function called by the API.
 * A request the engine releases after its callback leaves e->requests
 * before the call: once the callback returns, the engine never touches
 * caller storage again (the caller may already be reusing it).
 */
int request_run_callbacks(struct mrail_engine *e)
{
	struct mrail_list due;
	int ran = 0;

	/* Only those due now: callbacks that post requests completing at
	 * once (sends to self) must not keep this call from returning.
	 * The lock is held from one callback's return to the next one's
	 * call: one release and one take per callback. */
	engine_lock(e);
	if (mrail_list_empty(&e->cbq)) {
		engine_unlock(e);
		return 0;
	}
	due.next = e->cbq.next;
	due.prev = e->cbq.prev;
	due.next->prev = &due;
	due.prev->next = &due;
	mrail_list_init(&e->cbq);
	while (!mrail_list_empty(&due)) {
		struct mrail_request *r =
			mrail_list_first(&due, struct mrail_request, link);
		mrail_list_remove(&r->link);
		run_one_callback(e, r);
		ran++;
	}
	engine_unlock(e);
	return ran;
}

int request_due_now(struct mrail_request *r)
{
	return r->phase == REQ_DONE && r->cb_pending;
}

void request_run_callback_now(struct mrail_engine *e, struct mrail_request *r)
{
	/* Off e->cbq before the lock is first released: another thread's
	 * progress would otherwise take it and run it too. */
	mrail_list_remove(&r->link);
	run_one_callback(e, r);
	engine_unlock(e);
}
