/*
 * Receive side of offload: the EAGER_PART records of one message (same
 * seq) arrive on several rails in any order. A message whose first part
 * arrives in order with a receive posted for it is matched then, and
 * every part lands in that receive's buffer (recv.c, on_part): one copy,
 * as for a whole eager message. Otherwise its parts are staged here and
 * the whole message enters the per-gate ordering and matching like an
 * EAGER record. Either way matching order is exactly the send order.
 * Parts are checked defensively: same tag and length as the first one,
 * no overlap, at most one part per rail.
 */
#include "libmrail/engine.h"
#include "util/iov.h"

#include <stdlib.h>
#include <string.h>

struct partial *reasm_find(struct gate *g, uint64_t seq)
{
	struct mrail_list *pos;
	for (pos = g->parts.next; pos != &g->parts; pos = pos->next) {
		struct partial *p = mrail_list_entry(pos, struct partial, link);
		if (p->seq == seq)
			return p;
	}
	return NULL;
}

struct partial *reasm_new(struct gate *g, const struct mrail_wire_rec *rec,
			  struct mrail_request *req)
{
	const struct mrail_wire_eager_part *h = &rec->u.part;
	struct partial *p = malloc(sizeof *p + (req ? 0 : h->msg_len));
	if (!p)
		return NULL;
	p->seq = h->seq;
	p->tag = h->tag;
	p->len = h->msg_len;
	p->got = 0;
	p->req = req;
	p->nranges = 0;
	mrail_list_append(&g->parts, &p->link);
	return p;
}

int reasm_add(struct partial *p, const struct mrail_wire_rec *rec,
	      const char **why)
{
	const struct mrail_wire_eager_part *h = &rec->u.part;
	if (p->tag != h->tag || p->len != h->msg_len) {
		*why = "eager parts of one message disagree on tag or length";
		return MRAIL_ERR_PROTO;
	}
	uint64_t a = h->offset, b = h->offset + rec->payload_len;
	for (unsigned i = 0; i < p->nranges; i++)
		if (a < p->ranges[i][1] && p->ranges[i][0] < b) {
			*why = "overlapping eager parts";
			return MRAIL_ERR_PROTO;
		}
	if (p->nranges == MRAIL_MAX_RAILS) {
		*why = "more eager parts than rails";
		return MRAIL_ERR_PROTO;
	}
	p->ranges[p->nranges][0] = a;
	p->ranges[p->nranges++][1] = b;
	if (!p->req) {
		memcpy(p->data + a, rec->payload, rec->payload_len);
	} else if (a < p->req->len) { /* what fits: the rest is truncated */
		uint64_t n = b <= p->req->len ? b - a : p->req->len - a;
		mrail_buf_to_iov(p->req->iov, p->req->iovcnt, a, rec->payload,
				 n);
	}
	p->got += rec->payload_len;
	return MRAIL_OK;
}

void reasm_fail_gate(struct mrail_engine *e, struct gate *g, int error)
{
	while (!mrail_list_empty(&g->parts)) {
		struct partial *p =
			mrail_list_first(&g->parts, struct partial, link);
		mrail_list_remove(&p->link);
		if (p->req)
			request_complete(e, p->req, error);
		else
			credit_release(e, g, p->len);
		free(p);
	}
}

void reasm_free_gate(struct gate *g)
{
	struct mrail_list *pos, *tmp;
	mrail_list_foreach_safe(pos, tmp, &g->parts) {
		mrail_list_remove(pos);
		free(mrail_list_entry(pos, struct partial, link));
	}
}
