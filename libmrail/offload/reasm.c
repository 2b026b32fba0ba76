/*
 * Receive side of offload: EAGER_PART records of one message (same seq)
 * arrive on several rails in any order; they are put together here and
 * the whole message then enters the per-gate ordering and matching like
 * an EAGER record (recv.c), so matching order is exactly the send order.
 * Parts are checked defensively: same tag and length as the first one,
 * no overlap, at most one part per rail.
 */
#include "libmrail/engine.h"

#include <stdlib.h>
#include <string.h>

static struct partial *find(struct gate *g, uint64_t seq)
{
	struct mrail_list *pos, *tmp;
	mrail_list_foreach_safe(pos, tmp, &g->parts) {
		struct partial *p = mrail_list_entry(pos, struct partial, link);
		if (p->seq == seq)
			return p;
	}
	return NULL;
}

struct partial *reasm_on_part(struct gate *g, const struct mrail_wire_rec *rec,
			      int *rc, const char **why)
{
	const struct mrail_wire_eager_part *h = &rec->u.part;
	*rc = MRAIL_OK;
	if (h->seq < g->next_recv_seq) {
		*why = "eager part of a message already delivered";
		*rc = MRAIL_ERR_PROTO;
		return NULL;
	}
	struct partial *p = find(g, h->seq);
	if (!p) {
		p = malloc(sizeof *p + h->msg_len);
		if (!p) {
			*rc = MRAIL_ERR_NOMEM;
			return NULL;
		}
		p->seq = h->seq;
		p->tag = h->tag;
		p->len = h->msg_len;
		p->got = 0;
		p->nranges = 0;
		mrail_list_append(&g->parts, &p->link);
	} else if (p->tag != h->tag || p->len != h->msg_len) {
		*why = "eager parts of one message disagree on tag or length";
		*rc = MRAIL_ERR_PROTO;
		return NULL;
	}
	uint64_t a = h->offset, b = h->offset + rec->payload_len;
	for (unsigned i = 0; i < p->nranges; i++)
		if (a < p->ranges[i][1] && p->ranges[i][0] < b) {
			*why = "overlapping eager parts";
			*rc = MRAIL_ERR_PROTO;
			return NULL;
		}
	if (p->nranges == MRAIL_MAX_RAILS) {
		*why = "more eager parts than rails";
		*rc = MRAIL_ERR_PROTO;
		return NULL;
	}
	p->ranges[p->nranges][0] = a;
	p->ranges[p->nranges++][1] = b;
	memcpy(p->data + a, rec->payload, rec->payload_len);
	p->got += rec->payload_len;
	if (p->got < p->len)
		return NULL;
	mrail_list_remove(&p->link);
	return p;
}

void reasm_free_gate(struct gate *g)
{
	struct mrail_list *pos, *tmp;
	mrail_list_foreach_safe(pos, tmp, &g->parts) {
		mrail_list_remove(pos);
		free(mrail_list_entry(pos, struct partial, link));
	}
}
