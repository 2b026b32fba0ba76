/*
 * Probes (MPI_Iprobe, MPI_Improbe/MPI_Imrecv). A matched probe moves the
 * unexpected message to e->probed: no receive or probe can match it any
 * more, and one mrail_imrecv*() receives it exactly as a posted receive
 * would have (eager copy, rendezvous, or a send to self).
 */
#include "libmrail/engine.h"

#include <string.h>

static struct unexpected *probe_find(struct mrail_engine *e, mrail_peer_t src,
				     uint64_t tag, uint64_t mask)
{
	/* The same rule as a posted receive (recv.c match()). */
	struct mrail_request probe;
	struct mrail_list *pos;
	probe.peer = src;
	probe.tag = tag;
	probe.mask = mask;
	for (pos = e->unexpected.next; pos != &e->unexpected; pos = pos->next) {
		struct unexpected *u =
			mrail_list_entry(pos, struct unexpected, link);
		if (match(&probe, u->gate, u->tag))
			return u;
	}
	return NULL;
}

static int probe_common(struct mrail_engine *e, mrail_peer_t src, uint64_t tag,
			uint64_t mask, int *flag, mrail_message_t **msg,
			mrail_status_t *st)
{
	if (!e || !flag)
		return MRAIL_ERR_INVALID;
	*flag = 0;
	if (msg)
		*msg = NULL;
	engine_lock(e);
	if (src != MRAIL_ANY_PEER && !gate_get(e, src)) {
		engine_unlock(e);
		return MRAIL_ERR_NOT_FOUND;
	}
	engine_progress(e);
	struct unexpected *u = probe_find(e, src, tag, mask);
	if (u) {
		*flag = 1;
		if (st) {
			st->source = u->gate->id;
			st->tag = u->tag;
			st->length = u->len;
			st->error = MRAIL_OK;
		}
		if (msg) {
			mrail_list_remove(&u->link);
			mrail_list_append(&e->probed, &u->link);
			*msg = (mrail_message_t *)u;
		}
	}
	engine_unlock(e);
	return MRAIL_OK;
}

MRAIL_API int mrail_iprobe(mrail_engine_t *e, mrail_peer_t src, uint64_t tag,
			   uint64_t mask, int *flag, mrail_status_t *st)
{
	return probe_common(e, src, tag, mask, flag, NULL, st);
}

MRAIL_API int mrail_improbe(mrail_engine_t *e, mrail_peer_t src, uint64_t tag,
			    uint64_t mask, int *flag, mrail_message_t **msg,
			    mrail_status_t *st)
{
	if (!msg)
		return MRAIL_ERR_INVALID;
	return probe_common(e, src, tag, mask, flag, msg, st);
}

/* A handle is only trusted if improbe handed it out and nobody took it. */
static int probed_contains(struct mrail_engine *e, const struct unexpected *u)
{
	const struct mrail_list *pos;
	for (pos = e->probed.next; pos != &e->probed; pos = pos->next)
		if (pos == &u->link)
			return 1;
	return 0;
}

static int imrecv_common(struct mrail_engine *e, const struct iovec *iov,
			 int iovcnt, void *buf, size_t len,
			 mrail_message_t *msg, const struct mrail_req_args *args,
			 mrail_request_t **out)
{
	struct unexpected *u = (struct unexpected *)msg;
	if (!e || !out || !msg || !buffer_args_valid(iov, iovcnt, buf, len))
		return MRAIL_ERR_INVALID;
	*out = NULL;
	engine_lock(e);
	if (!probed_contains(e, u)) {
		engine_unlock(e);
		return MRAIL_ERR_INVALID;
	}
	struct mrail_request *r =
		request_new_x(e, REQ_RECV, iov, iovcnt, buf, len, args);
	if (!r) {
		engine_unlock(e);
		return MRAIL_ERR_NOMEM; /* msg stays valid: try again */
	}
	r->peer = u->gate->id;
	r->tag = u->tag;
	r->mask = MRAIL_TAG_MASK_ALL;
	r->status.source = u->gate->id;
	mrail_list_remove(&u->link);
	recv_take(e, r, u);
	engine_unlock(e);
	*out = r;
	return MRAIL_OK;
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
