/*
 * Rendezvous across a rail failure (docs/failover.md). The receiver
 * records each byte range it asked for (rail, kind, bytes arrived); DATA
 * frames of one range arrive in order on its rail, so "arrived" is a
 * prefix. When a rail fails, the ranges on it that did not all arrive
 * are asked again, two-sided, on the rails still up. The sender
 * completes only on the receiver's RDV_DONE (or GET_FIN), so it never
 * reports a message the receiver did not get.
 */
#include "libmrail/engine.h"
#include "util/log.h"

#include <stdlib.h>

int rdv_range_add(struct mrail_request *r, const struct rail *rail,
		  enum rdv_range_kind kind, uint64_t off, uint64_t len)
{
	if (r->nranges == r->ranges_cap) {
		unsigned cap = r->ranges_cap ? 2 * r->ranges_cap : 4;
		struct rdv_range *n = realloc(r->ranges, sizeof *n * cap);
		if (!n)
			return MRAIL_ERR_NOMEM;
		r->ranges = n;
		r->ranges_cap = cap;
	}
	r->ranges[r->nranges++] =
		(struct rdv_range){off, len, 0, rail->index, rail->epoch, kind};
	return MRAIL_OK;
}

struct rdv_range *rdv_range_for_data(struct mrail_request *r, uint64_t off,
				     uint64_t len)
{
	for (unsigned i = 0; i < r->nranges; i++) {
		struct rdv_range *g = &r->ranges[i];
		if (g->kind == RANGE_TWO_SIDED && g->off + g->got == off &&
		    len <= g->len - g->got)
			return g;
	}
	return NULL;
}

struct rdv_range *rdv_range_for_put(struct mrail_request *r, uint64_t off,
				    uint64_t len)
{
	for (unsigned i = 0; i < r->nranges; i++) {
		struct rdv_range *g = &r->ranges[i];
		if (g->kind == RANGE_PUT && g->off == off && g->len == len &&
		    g->got == 0)
			return g;
	}
	return NULL;
}

void rdv_range_got_get(struct mrail_request *r, unsigned rail, uint64_t off,
		       uint64_t len)
{
	for (unsigned i = 0; i < r->nranges; i++) {
		struct rdv_range *g = &r->ranges[i];
		if (g->kind == RANGE_GET && g->rail == rail && off >= g->off &&
		    off - g->off < g->len) {
			g->got += len;
			return;
		}
	}
}

/* One RTR in the packet being filled for rail s (posted when full). */
static int add_rtr(struct mrail_engine *e, struct rail *s,
		   struct send_op **op, const struct mrail_request *r,
		   uint64_t off, uint64_t len)
{
	if (*op && (*op)->len + sizeof(struct mrail_wire_rtr) > (*op)->cap) {
		int rc = rail_post_packet(e, s, *op);
		if (rc) {
			packet_put(e, *op);
			*op = NULL;
			return rc;
		}
		*op = NULL;
	}
	if (!*op && !(*op = packet_get(e)))
		return MRAIL_ERR_NOMEM;
	(*op)->len += mrail_wire_put_rtr(
		(*op)->buf + (*op)->len, r->remote_id, r->id, off, len,
		r->expected);
	busy_rx_expect(s, len);
	return MRAIL_OK;
}

static int range_lost(const struct gate *g, const struct rdv_range *rg)
{
	const struct rail *r = g->rails[rg->rail];
	return rg->got < rg->len &&
	       (!r || r->state != RAIL_UP || r->epoch != rg->epoch);
}

void rdv_replan(struct mrail_engine *e, struct gate *g)
{
	struct send_op *ops[MRAIL_MAX_RAILS] = {0};
	struct mrail_list *pos;
	int rc = MRAIL_OK, all_down = 0;

	for (pos = g->rdv.next; pos != &g->rdv && rc == MRAIL_OK && !all_down;
	     pos = pos->next) {
		struct mrail_request *r =
			mrail_list_entry(pos, struct mrail_request, gate_link);
		if (r->kind != REQ_RECV || r->phase != REQ_RDV_ACTIVE ||
		    r->failing)
			continue;
		for (unsigned i = 0; i < r->nranges && rc == MRAIL_OK; i++) {
			struct rdv_range *rg = &r->ranges[i];
			if (!range_lost(g, rg))
				continue;
			struct rail *dead = g->rails[rg->rail];
			struct rail *s = failover_survivor(g, NULL);
			if (!s) { /* every rail down: the gate times out */
				all_down = 1;
				break;
			}
			uint64_t off = rg->off, len = rg->len;
			if (rg->kind == RANGE_TWO_SIDED) {
				off += rg->got;
				len -= rg->got;
			} else if (rg->kind == RANGE_GET) {
				/* Pieces may have landed in any order: the
				 * whole range again. */
				r->done_bytes -= rg->got;
				if (r->rma)
					r->rma->read_bytes -= rg->got;
			}
			*rg = (struct rdv_range){off, len, 0, s->index, s->epoch,
						 RANGE_TWO_SIDED};
			if (dead)
				dead->stats.retx_bytes += len;
			rc = add_rtr(e, s, &ops[s->index], r, off, len);
		}
	}
	for (unsigned i = 0; i < g->nrails; i++) {
		int prc = MRAIL_ERR_INVALID;
		if (!ops[i])
			continue;
		if (rc == MRAIL_OK && !all_down)
			rc = prc = rail_post_packet(e, g->rails[i], ops[i]);
		/* Not posted (or the post failed): the packet is still ours. */
		if (prc != MRAIL_OK)
			packet_put(e, ops[i]);
	}
	if (rc != MRAIL_OK)
		gate_fail(e, g, rc, "asking again for a failed rail's payload "
			  "failed");
}

void rdv_on_done(struct mrail_engine *e, struct rail *rail,
		 const struct mrail_wire_rdv_done *d)
{
	struct mrail_request *s = handle_lookup(e, d->send_id);
	if (!s || s->kind != REQ_SEND || s->gate != rail->gate ||
	    (s->phase != REQ_RDV_WAIT_RTR && s->phase != REQ_RDV_ACTIVE) ||
	    s->rdone || d->total > s->len ||
	    (s->phase == REQ_RDV_ACTIVE && d->total != s->expected)) {
		gate_fail(e, rail->gate, MRAIL_ERR_PROTO,
			  "rendezvous completion for an unknown send or out "
			  "of its bounds; connection dropped");
		return;
	}
	s->phase = REQ_RDV_ACTIVE;
	s->expected = d->total;
	s->status.length = d->total;
	s->rdone = 1;
	if (s->outstanding == 0)
		request_complete(e, s, s->error);
}
