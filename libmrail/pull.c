/*
 * Pulling buffered payloads ahead of their match (docs/flow-control.md,
 * "Pulled copies").
 *
 * A small standard send that finds no credit goes as an RTS and its
 * payload waits in a copy the sender's engine holds (send.c,
 * detach_if_rts), its RTS flagged MRAIL_WIRE_RTS_BUFFERED. Left to the
 * match, each such message costs the receiver a round trip when its
 * receive comes, one receive at a time: a backlog of copies (a slow
 * receiver, a failover that held everything for MRAIL_RAIL_TIMEOUT)
 * drains at one round trip per message. So the receiver pulls their
 * payloads as soon as its eager window has room, all at once, into
 * buffers of its own charged to that window like unexpected eager data;
 * a receive then finds an eager message. Synchronous sends are never
 * flagged (their RTR would tell the sender it was matched).
 */
#include "libmrail/engine.h"
#include "util/log.h"

#include <stddef.h>
#include <stdlib.h>

/* Pulls under way, per peer and in all: enough to pipeline the round
 * trips, few enough that their control packets (an RTR or GET_FIN each,
 * a whole packet buffer kept until the peer acknowledges it) stay small
 * beside the eager window: 64 per peer grew a flooded receiver by 5-8
 * MiB more than 32 did, 16 drained a failover's backlog visibly slower
 * (docs/flow-control.md). A peer that finds the engine's share taken has
 * its copies pulled later or received as before. */
#define PULLS_MAX 32
#define PULLS_ENGINE_MAX 64

/*
 * Pulled payloads land in buffers the engine recycles (a few, kept
 * under the lock): a receiver with a progress thread would otherwise
 * allocate each in that thread and free it in the application's, which
 * some allocators (ThreadSanitizer's, per-thread caches) turn into
 * growth: +15-24 MiB in flood-2senders-engine-cap before this.
 */
struct pull_buf {
	struct pull_buf *next;
	size_t cap;
	max_align_t data[];
};

#define PULL_BUFS_KEPT (2 * PULLS_MAX)

static struct pull_buf *buf_of(uint8_t *data)
{
	return (struct pull_buf *)(data - offsetof(struct pull_buf, data));
}

static uint8_t *pull_buf_get(struct mrail_engine *e, size_t len)
{
	for (struct pull_buf **pp = (struct pull_buf **)&e->pull_bufs; *pp;
	     pp = &(*pp)->next) {
		struct pull_buf *b = *pp;
		if (b->cap >= len) {
			*pp = b->next;
			e->pull_bufs_kept--;
			return (uint8_t *)b->data;
		}
	}
	struct pull_buf *b = malloc(sizeof *b + len);
	if (!b)
		return NULL;
	b->cap = len;
	return (uint8_t *)b->data;
}

void pull_buf_put(struct mrail_engine *e, uint8_t *data)
{
	if (!data)
		return;
	struct pull_buf *b = buf_of(data);
	if (e->pull_bufs_kept >= PULL_BUFS_KEPT) {
		free(b);
		return;
	}
	b->next = e->pull_bufs;
	e->pull_bufs = b;
	e->pull_bufs_kept++;
}

void pull_buf_free(uint8_t *data)
{
	if (data)
		free(buf_of(data));
}

void pull_bufs_fini(struct mrail_engine *e)
{
	struct pull_buf *b = e->pull_bufs, *next;
	for (; b; b = next) {
		next = b->next;
		free(b);
	}
	e->pull_bufs = NULL;
	e->pull_bufs_kept = 0;
}

void pull_candidate(struct mrail_engine *e, struct gate *g,
		    struct unexpected *u)
{
	mrail_list_append(&g->pull_wait, &u->plink);
	pull_more(e, g);
}

/* Start pulling u (listed as unexpected or probed, not taken). */
static int pull_start(struct mrail_engine *e, struct gate *g,
		      struct unexpected *u)
{
	uint8_t *buf = pull_buf_get(e, u->len);
	if (!buf)
		return -1;
	struct mrail_request *p = request_new(e, REQ_RECV, NULL, 0, buf,
					      u->len);
	if (!p) {
		pull_buf_put(e, buf);
		return -1;
	}
	mrail_list_remove(&u->plink);
	g->pulls++;
	e->pulls++;
	p->flags |= REQF_PULL;
	p->cb_ctx = u;
	p->peer = g->id;
	p->tag = u->tag;
	p->mask = MRAIL_TAG_MASK_ALL;
	u->pull = p;
	u->pulled = buf;
	credit_hold(e, g, u->len);
	struct rdv_rma *keys = u->rma;
	u->rma = NULL; /* the pull owns the sender's keys now */
	rdv_recv_start(e, p, g, u->tag, u->len, u->send_id, keys);
	return 0;
}

void pull_more(struct mrail_engine *e, struct gate *g)
{
	while (!mrail_list_empty(&g->pull_wait) && g->state == GATE_UP &&
	       g->rails_up > 0 && g->pulls < PULLS_MAX &&
	       e->pulls < PULLS_ENGINE_MAX) {
		struct unexpected *u = mrail_list_first(&g->pull_wait,
							struct unexpected,
							plink);
		if (credit_room_for_pull(e, g) < u->len || pull_start(e, g, u))
			break;
	}
}

int pull_take(struct mrail_engine *e, struct mrail_request *r,
	      struct unexpected *u)
{
	if (!u->pull)
		return 0;
	u->waiter = r;
	r->phase = REQ_RDV_ACTIVE; /* matched, not cancellable */
	r->gate = u->gate;
	r->status.source = u->gate->id;
	r->status.tag = u->tag;
	mrail_list_append(&e->pulls_taken, &u->link);
	return 1;
}

/* p finished: u's payload is here (an eager message now), or lost with
 * its gate (an RTS again, whose receive fails with the gate's error). */
static void pull_finish(struct mrail_engine *e, struct mrail_request *p)
{
	struct unexpected *u = p->cb_ctx;
	struct gate *g = u->gate;
	int error = p->status.error;
	u->pull = NULL;
	g->pulls--;
	e->pulls--;
	if (error == MRAIL_OK) {
		u->kind = UNEXP_EAGER;
		u->send_id = 0; /* the sender is done: no SYNC_ACK owed */
	} else {
		credit_release(e, g, u->len);
		pull_buf_put(e, u->pulled);
		u->pulled = NULL;
		mrail_debug("%s: pulling a buffered message of %llu bytes "
			    "failed: %s", g->name, (unsigned long long)u->len,
			    mrail_strerror(error));
	}
	struct mrail_request *r = u->waiter;
	if (!r)
		return;
	u->waiter = NULL;
	mrail_list_remove(&u->link); /* off e->pulls_taken */
	if (error == MRAIL_OK) {
		recv_take(e, r, u);
		return;
	}
	r->status.length = 0;
	request_complete(e, r, error);
	unexpected_free(e, u);
}

void pulls_finish(struct mrail_engine *e)
{
	ENGINE_ASSERT_LOCKED(e);
	while (!mrail_list_empty(&e->pulls_done)) {
		struct mrail_request *p = mrail_list_first(
			&e->pulls_done, struct mrail_request, link);
		mrail_list_remove(&p->link);
		struct gate *g = ((struct unexpected *)p->cb_ctx)->gate;
		pull_finish(e, p);
		request_free(e, p);
		pull_more(e, g);
	}
}
