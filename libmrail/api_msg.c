/*
 * Public message calls: sends, receives, probes and matched receives. Like
 * every api*.c file, these are the only functions that take the engine
 * lock (docs/threads.md); arguments are checked before it, and what runs
 * under it asserts it.
 */
#include "libmrail/engine.h"

/* The buffer arguments are checked by the callers of isend_common and
 * irecv_common (request_args_check for the _x calls), once. */
static int isend_common(struct mrail_engine *e, mrail_peer_t dest,
			const struct iovec *iov, int iovcnt, const void *buf,
			size_t len, uint64_t tag,
			const struct mrail_req_args *args,
			struct mrail_request **out)
{
	if (!e || !out)
		return MRAIL_ERR_INVALID;
	*out = NULL;
	engine_lock(e);
	engine_clock_tick(e);
	int rc;
	if (!args || !(args->flags & MRAIL_REQ_IMMEDIATE) ||
	    !send_direct(e, dest, iov, iovcnt, buf, len, tag, args, &rc))
		rc = send_start(e, dest, iov, iovcnt, buf, len, tag, args,
				out);
	/* Sends completed locally while their receiver is behind
	 * (send.c, detach_if_rts) free a sender from waiting, and so from
	 * progressing: it would read neither the receiver's
	 * acknowledgements nor its rendezvous completions, and the receiver
	 * keeps every numbered packet it sent until acknowledged (test_flood:
	 * 18-149 MiB of them). One progress pass per send while such copies
	 * exist keeps both sides' kept packets bounded. */
	if (e->detached_bytes)
		engine_progress(e);
	if (rc == MRAIL_OK && *out && ((*out)->flags & REQF_IMMEDIATE) &&
	    request_release_immediate(e, *out))
		*out = NULL;
	engine_unlock(e);
	return rc;
}

MRAIL_API int mrail_isend(mrail_engine_t *e, mrail_peer_t dest, const void *buf,
			  size_t len, uint64_t tag, mrail_request_t **req)
{
	if (!buffer_args_valid(NULL, 0, buf, len))
		return MRAIL_ERR_INVALID;
	return isend_common(e, dest, NULL, 0, buf, len, tag, NULL, req);
}

MRAIL_API int mrail_isendv(mrail_engine_t *e, mrail_peer_t dest,
			   const struct iovec *iov, int iovcnt, uint64_t tag,
			   mrail_request_t **req)
{
	if (!iov && iovcnt == 0)
		return isend_common(e, dest, NULL, 0, NULL, 0, tag, NULL, req);
	if (!buffer_args_valid(iov, iovcnt, NULL, 0))
		return MRAIL_ERR_INVALID;
	return isend_common(e, dest, iov, iovcnt, NULL, 0, tag, NULL, req);
}

MRAIL_API int mrail_isend_x(mrail_engine_t *e, mrail_peer_t dest,
			    const void *buf, size_t len, uint64_t tag,
			    const struct mrail_req_args *args,
			    mrail_request_t **req)
{
	const struct iovec *iov;
	int iovcnt;
	if (request_args_check(args, 1, &iov, &iovcnt, buf, len))
		return MRAIL_ERR_INVALID;
	return isend_common(e, dest, iov, iovcnt, buf, len, tag, args, req);
}

MRAIL_API int mrail_issend(mrail_engine_t *e, mrail_peer_t dest,
			   const void *buf, size_t len, uint64_t tag,
			   mrail_request_t **req)
{
	struct mrail_req_args a = MRAIL_REQ_ARGS_INIT;
	a.flags = MRAIL_REQ_SYNC;
	return mrail_isend_x(e, dest, buf, len, tag, &a, req);
}

/*
 * After a receive was posted (lock held; released here). With
 * MRAIL_REQ_IMMEDIATE, one that completed in its post (a message already
 * here matched it) has its callback run now, before the call returns, and
 * the caller gets no handle: Open MPI's wait then finds the MPI request
 * complete without a progress pass, as ob1 completes a receive that
 * matches an unexpected fragment. In a small collective most receives do
 * (an 8 B allreduce on 4 ranks of a host: 58 %, docs/driver-shm.md).
 * *out is cleared first: the callback may free the memory it points into.
 */
static int recv_posted(struct mrail_engine *e, int rc,
		       const struct mrail_req_args *args,
		       struct mrail_request **out)
{
	struct mrail_request *r = *out;
	if (rc != MRAIL_OK || !r || !args ||
	    !(args->flags & MRAIL_REQ_IMMEDIATE) || !request_due_now(r)) {
		engine_unlock(e);
		return rc;
	}
	if (!(r->flags & REQF_KEEP))
		*out = NULL;
	request_run_callback_now(e, r); /* releases the lock */
	return rc;
}

static int irecv_common(struct mrail_engine *e, mrail_peer_t src,
			const struct iovec *iov, int iovcnt, void *buf,
			size_t len, uint64_t tag, uint64_t mask,
			const struct mrail_req_args *args,
			struct mrail_request **out)
{
	if (!e || !out)
		return MRAIL_ERR_INVALID;
	*out = NULL;
	engine_lock(e);
	engine_clock_tick(e);
	int rc = recv_start(e, src, iov, iovcnt, buf, len, tag, mask, args,
			    out);
	return recv_posted(e, rc, args, out);
}

MRAIL_API int mrail_irecv(mrail_engine_t *e, mrail_peer_t src, void *buf,
			  size_t len, uint64_t tag, uint64_t mask,
			  mrail_request_t **req)
{
	if (!buffer_args_valid(NULL, 0, buf, len))
		return MRAIL_ERR_INVALID;
	return irecv_common(e, src, NULL, 0, buf, len, tag, mask, NULL, req);
}

MRAIL_API int mrail_irecvv(mrail_engine_t *e, mrail_peer_t src,
			   const struct iovec *iov, int iovcnt, uint64_t tag,
			   uint64_t mask, mrail_request_t **req)
{
	if (!iov && iovcnt == 0)
		return irecv_common(e, src, NULL, 0, NULL, 0, tag, mask, NULL,
				    req);
	if (!buffer_args_valid(iov, iovcnt, NULL, 0))
		return MRAIL_ERR_INVALID;
	return irecv_common(e, src, iov, iovcnt, NULL, 0, tag, mask, NULL, req);
}

MRAIL_API int mrail_irecv_x(mrail_engine_t *e, mrail_peer_t src, void *buf,
			    size_t len, uint64_t tag, uint64_t mask,
			    const struct mrail_req_args *args,
			    mrail_request_t **req)
{
	const struct iovec *iov;
	int iovcnt;
	if (request_args_check(args, 0, &iov, &iovcnt, buf, len))
		return MRAIL_ERR_INVALID;
	return irecv_common(e, src, iov, iovcnt, buf, len, tag, mask, args,
			    req);
}

static int probe_common(struct mrail_engine *e, mrail_peer_t src, uint64_t tag,
			uint64_t mask, int *flag, mrail_message_t **msg,
			mrail_status_t *st, int *has_data, uint64_t *data)
{
	if (!e || !flag)
		return MRAIL_ERR_INVALID;
	*flag = 0;
	if (msg)
		*msg = NULL;
	engine_lock(e);
	int rc = probe_run(e, src, tag, mask, flag, msg, st, has_data, data);
	engine_unlock(e);
	return rc;
}

MRAIL_API int mrail_iprobe(mrail_engine_t *e, mrail_peer_t src, uint64_t tag,
			   uint64_t mask, int *flag, mrail_status_t *st)
{
	return probe_common(e, src, tag, mask, flag, NULL, st, NULL, NULL);
}

MRAIL_API int mrail_iprobe_data(mrail_engine_t *e, mrail_peer_t src,
				uint64_t tag, uint64_t mask, int *flag,
				mrail_status_t *st, int *has_data,
				uint64_t *data)
{
	return probe_common(e, src, tag, mask, flag, NULL, st, has_data,
			    data);
}

MRAIL_API int mrail_improbe(mrail_engine_t *e, mrail_peer_t src, uint64_t tag,
			    uint64_t mask, int *flag, mrail_message_t **msg,
			    mrail_status_t *st)
{
	if (!msg)
		return MRAIL_ERR_INVALID;
	return probe_common(e, src, tag, mask, flag, msg, st, NULL, NULL);
}

static int imrecv_common(struct mrail_engine *e, const struct iovec *iov,
			 int iovcnt, void *buf, size_t len,
			 mrail_message_t *msg, const struct mrail_req_args *args,
			 mrail_request_t **out)
{
	if (!e || !out || !msg || !buffer_args_valid(iov, iovcnt, buf, len))
		return MRAIL_ERR_INVALID;
	*out = NULL;
	engine_lock(e);
	engine_clock_tick(e);
	int rc = probe_imrecv(e, iov, iovcnt, buf, len, msg, args, out);
	return recv_posted(e, rc, args, out);
}

MRAIL_API int mrail_imrecv(mrail_engine_t *e, void *buf, size_t len,
			   mrail_message_t *msg, mrail_request_t **req)
{
	return imrecv_common(e, NULL, 0, buf, len, msg, NULL, req);
}

MRAIL_API int mrail_imrecvv(mrail_engine_t *e, const struct iovec *iov,
			    int iovcnt, mrail_message_t *msg,
			    mrail_request_t **req)
{
	if (!iov && iovcnt == 0)
		return imrecv_common(e, NULL, 0, NULL, 0, msg, NULL, req);
	return imrecv_common(e, iov, iovcnt, NULL, 0, msg, NULL, req);
}

MRAIL_API int mrail_imrecv_x(mrail_engine_t *e, void *buf, size_t len,
			     mrail_message_t *msg,
			     const struct mrail_req_args *args,
			     mrail_request_t **req)
{
	const struct iovec *iov;
	int iovcnt;
	if (request_args_check(args, 0, &iov, &iovcnt, buf, len))
		return MRAIL_ERR_INVALID;
	return imrecv_common(e, iov, iovcnt, buf, len, msg, args, req);
}

/* Read without the engine lock: a matched message and a completed request
 * are no longer touched by the engine (improbe took the message off every
 * list; a request's data is final before its completion is seen). */
MRAIL_API int mrail_message_data(const mrail_message_t *msg, uint64_t *data)
{
	const struct unexpected *u = (const struct unexpected *)msg;
	if (!u || !u->has_imm)
		return 0;
	if (data)
		*data = u->imm;
	return 1;
}

MRAIL_API int mrail_request_data(const mrail_request_t *req, uint64_t *data)
{
	const struct mrail_request *r = req;
	if (!r || r->kind != REQ_RECV || !(r->flags & REQF_DATA))
		return 0;
	if (data)
		*data = r->data;
	return 1;
}
