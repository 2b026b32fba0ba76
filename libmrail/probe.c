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

int probe_run(struct mrail_engine *e, mrail_peer_t src, uint64_t tag,
	      uint64_t mask, int *flag, mrail_message_t **msg,
	      mrail_status_t *st, int *has_data, uint64_t *data)
{
	ENGINE_ASSERT_LOCKED(e);
	if (src != MRAIL_ANY_PEER && !gate_get(e, src))
		return MRAIL_ERR_NOT_FOUND;
	engine_progress(e);
	struct unexpected *u = probe_find(e, src, tag, mask);
	if (!u)
		return MRAIL_OK;
	*flag = 1;
	if (st) {
		st->source = u->gate->id;
		st->tag = u->tag;
		st->length = u->len;
		st->error = MRAIL_OK;
	}
	if (has_data)
		*has_data = u->has_imm;
	if (data && u->has_imm)
		*data = u->imm;
	if (msg) {
		mrail_list_remove(&u->link);
		mrail_list_append(&e->probed, &u->link);
		*msg = (mrail_message_t *)u;
	}
	return MRAIL_OK;
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

int probe_imrecv(struct mrail_engine *e, const struct iovec *iov, int iovcnt,
		 void *buf, size_t len, mrail_message_t *msg,
		 const struct mrail_req_args *args, struct mrail_request **out)
{
	ENGINE_ASSERT_LOCKED(e);
	struct unexpected *u = (struct unexpected *)msg;
	if (!probed_contains(e, u))
		return MRAIL_ERR_INVALID;
	struct mrail_request *r =
		request_new_x(e, REQ_RECV, iov, iovcnt, buf, len, args);
	if (!r)
		return MRAIL_ERR_NOMEM; /* msg stays valid: try again */
	r->peer = u->gate->id;
	r->tag = u->tag;
	r->mask = MRAIL_TAG_MASK_ALL;
	r->status.source = u->gate->id;
	mrail_list_remove(&u->link);
	recv_take(e, r, u);
	*out = r;
	return MRAIL_OK;
}
