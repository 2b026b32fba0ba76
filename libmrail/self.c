/*
 * Messages a process sends to itself: no rail, same matching and ordering.
 * Small ones are copied at once (the send completes); large ones wait,
 * uncopied, until a receive matches and then move in one copy.
 */
#include "libmrail/engine.h"
#include "util/iov.h"

#include <stdlib.h>

int self_send(struct mrail_engine *e, struct gate *g, struct mrail_request *r)
{
	/* A synchronous send waits for its receive like a large one. */
	int eager = r->len <= e->cfg.eager_max && !(r->flags & REQF_SYNC);
	struct unexpected *u = malloc(sizeof *u + (eager ? r->len : 0));
	if (!u)
		return MRAIL_ERR_NOMEM;
	mrail_list_init(&u->link);
	u->small = 0;
	u->gate = g;
	u->seq = g->next_send_seq++;
	u->tag = r->tag;
	u->len = r->len;
	u->send_id = 0;
	u->self_send = NULL;
	u->rma = NULL;
	u->buffered = 0;
	mrail_list_init(&u->plink);
	u->pull = u->waiter = NULL;
	u->pulled = NULL;
	u->has_imm = !!(r->flags & REQF_DATA);
	u->imm = r->data;
	r->status.length = r->len;
	if (eager) {
		u->kind = UNEXP_EAGER;
		mrail_iov_to_buf(u->data, r->iov, r->iovcnt, 0, r->len);
		request_complete(e, r, MRAIL_OK);
	} else {
		u->kind = UNEXP_SELF;
		u->self_send = r;
		r->phase = REQ_SELF_WAIT;
	}
	recv_arrived(e, g, u);
	return MRAIL_OK;
}

void self_match(struct mrail_engine *e, struct mrail_request *recv,
		struct unexpected *u)
{
	struct mrail_request *s = u->self_send;
	size_t take = s->len < recv->len ? s->len : recv->len, off = 0;

	for (int i = 0; i < s->iovcnt && off < take; i++) {
		size_t n = s->iov[i].iov_len;
		if (n > take - off)
			n = take - off;
		mrail_buf_to_iov(recv->iov, recv->iovcnt, off,
				 s->iov[i].iov_base, n);
		off += n;
	}
	recv->gate = u->gate;
	recv->status.source = u->gate->id;
	recv->status.tag = s->tag;
	recv->status.length = take;
	recv->status.msg_length = s->len;
	request_complete(e, recv, s->len > recv->len ? MRAIL_ERR_TRUNCATE
						     : MRAIL_OK);
	request_complete(e, s, MRAIL_OK);
	free(u);
}
