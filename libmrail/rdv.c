/*
 * Rendezvous: the receiver matches an RTS, asks the strategy how to split
 * the payload over the gate's rails, and sends one RTR per chunk on the
 * chunk's rail; the sender answers each RTR with a DATA frame whose body
 * the receiving driver puts straight into the user's buffer at its offset.
 */
#include "libmrail/engine.h"
#include "util/iov.h"
#include "util/log.h"

#include <string.h>

/* Sharing the copy (share_part): from this chunk size, and the sender's
 * part is this much short of half (it starts a hop later). Measured on
 * a 2-core EPYC guest (docs/driver-shm.md): 8 and 16 KiB, or none, gave
 * the same times at 128-256 KiB. */
enum { RDV_SHARE_MIN = 96 << 10, RDV_SHARE_HOP = 8 << 10 };

static int plan_is_valid(const struct mrail_chunk *c, int cnt, unsigned nrails,
			 uint64_t total)
{
	uint64_t off = 0;
	if (cnt < 1 || cnt > MRAIL_MAX_CHUNKS)
		return 0;
	for (int i = 0; i < cnt; i++) {
		if (c[i].rail >= nrails || c[i].offset != off ||
		    c[i].length == 0 || c[i].length > total - off)
			return 0;
		off += c[i].length;
	}
	return off == total;
}

/*
 * Sharing the copy (docs/driver-shm.md): on a rail whose get and put are
 * copies by the caller's CPU, the receiver asks the sender to write the
 * head of a large chunk while it reads the tail itself, so both cores
 * copy at once. The sender starts a hop later (the RTR crosses, then its
 * PUT_FIN): it takes a little less than half. 0: read it all, as when
 * the sender may not call in soon (its RTS not ATTENTIVE): our receive
 * never waits on a sender busy elsewhere.
 */
static uint64_t share_part(struct mrail_engine *e, const struct mrail_request *r,
			   const struct gate *g, unsigned rail_index,
			   uint64_t offset, uint64_t len)
{
	const struct rail *rail = g->rails[rail_index];
	/* More processes on this host than cores: the sender's core is
	 * not idle while it waits, it runs another rank. */
	if (e->host_cores > 0 && (long)e->host_peers + 1 > e->host_cores)
		return 0;
	if (len < RDV_SHARE_MIN || !r->rma || !r->rma->sender_attentive ||
	    !(rail->local->caps.flags & MRAIL_DRV_CAP_RMA_CPU) ||
	    !rma_chunk_can_put(e, r, g, rail_index))
		return 0;
	/* Cut at a page of our buffer: each copy then writes its own pages
	 * (a page both ends wrote would be pinned and dirtied twice). */
	uintptr_t from = (uintptr_t)r->iov[0].iov_base + offset;
	uintptr_t at = (from + len / 2 - RDV_SHARE_HOP) & ~(uintptr_t)4095;
	return at > from ? at - from : 0;
}

/* One chunk shared, the sender writing its first `put` bytes: the RTR
 * for the sender's part first, so it starts while we read ours. */
static int post_shared(struct mrail_engine *e, struct rail *rail,
		       struct mrail_request *r, uint64_t offset, uint64_t len,
		       uint64_t put)
{
	struct send_op *op = packet_get(e);
	int rc;

	if (!op)
		return MRAIL_ERR_NOMEM;
	if ((rc = rma_put_recv_key(e, rail, r, op)) ||
	    (rc = rdv_range_add(r, rail, RANGE_PUT, offset, put))) {
		packet_put(e, op);
		return rc;
	}
	op->len += mrail_wire_put_rtr_flags(op->buf + op->len, r->remote_id,
					    r->id, offset, put, r->expected,
					    MRAIL_WIRE_RTR_PUT);
	busy_rx_expect(rail, put);
	if ((rc = rail_post_packet(e, rail, op))) {
		packet_put(e, op);
		return rc;
	}
	rc = rdv_range_add(r, rail, RANGE_GET, offset + put, len - put);
	return rc ? rc : rma_start_get(e, rail, r, offset + put, len - put);
}

/*
 * Per rail that has chunks: RDMA reads where the sender gave a key for it
 * (rma.c), else one packet of RTR records, flagged for RDMA write (after
 * an RKEY record for our buffer) where the rail can.
 */
static int post_rtrs(struct mrail_engine *e, struct gate *g,
		     const struct mrail_rail_view *views, unsigned n,
		     const struct mrail_chunk *chunks, int cnt,
		     struct mrail_request *r)
{
	for (unsigned v = 0; v < n; v++) {
		struct rail *rail = g->rails[views[v].index];
		struct send_op *op = NULL;
		int get = r->expected > 0 &&
			  rma_chunk_can_get(r, g, views[v].index);
		int put = !get && rma_chunk_can_put(e, r, g, views[v].index);
		int keyed = 0;
		size_t room = sizeof(struct mrail_wire_rtr) +
			      (put ? mrail_wire_rkey_size(MRAIL_WIRE_RKEY_MAX)
				   : 0);
		for (int i = 0; i < cnt; i++) {
			if (chunks[i].rail != v)
				continue;
			uint64_t shared = get ? share_part(e, r, g,
							   views[v].index,
							   chunks[i].offset,
							   chunks[i].length)
					      : 0;
			if (shared) {
				int rc = post_shared(e, rail, r,
						     chunks[i].offset,
						     chunks[i].length, shared);
				if (rc)
					return rc;
				continue;
			}
			if (get) {
				int rc = rdv_range_add(r, rail, RANGE_GET,
						       chunks[i].offset,
						       chunks[i].length);
				if (!rc)
					rc = rma_start_get(e, rail, r,
							   chunks[i].offset,
							   chunks[i].length);
				if (rc)
					return rc;
				continue;
			}
			if (op && op->len + room > op->cap) {
				int rc = rail_post_packet(e, rail, op);
				if (rc) {
					packet_put(e, op);
					return rc;
				}
				op = NULL;
			}
			if (!op) {
				if (!(op = packet_get(e)))
					return MRAIL_ERR_NOMEM;
				keyed = 0;
			}
			/* The key first, once per packet: the sender reads
			 * records in order. */
			if (put && !keyed) {
				if (rma_put_recv_key(e, rail, r, op) == MRAIL_OK)
					keyed = 1;
				else
					put = 0; /* cannot register: two-sided */
			}
			if (chunks[i].length > 0) {
				int rc = rdv_range_add(
					r, rail,
					put ? RANGE_PUT : RANGE_TWO_SIDED,
					chunks[i].offset, chunks[i].length);
				if (rc) {
					packet_put(e, op);
					return rc;
				}
			}
			op->len += mrail_wire_put_rtr_flags(
				op->buf + op->len, r->remote_id, r->id,
				chunks[i].offset, chunks[i].length, r->expected,
				put ? MRAIL_WIRE_RTR_PUT : 0);
			if (chunks[i].length > 0)
				busy_rx_expect(rail, chunks[i].length);
		}
		if (op) {
			int rc = rail_post_packet(e, g->rails[views[v].index], op);
			if (rc) {
				packet_put(e, op);
				return rc;
			}
		}
	}
	return MRAIL_OK;
}

/* The plan and what it was made from, for MRAIL_LOG_LEVEL=debug. */
static void log_plan(const struct gate *g, const struct mrail_rail_view *v,
		     unsigned n, const struct mrail_chunk *c, int cnt,
		     uint64_t len)
{
	char buf[512];
	size_t off = 0;
	for (unsigned i = 0; i < n && off < sizeof buf; i++) {
		uint64_t bytes = 0;
		for (int k = 0; k < cnt; k++)
			if (c[k].rail == i)
				bytes += c[k].length;
		off += (size_t)snprintf(buf + off, sizeof buf - off,
					" r%u:%llu busy %.0fus scale %.2f",
					v[i].index, (unsigned long long)bytes,
					1e6 * v[i].busy_until, v[i].time_scale);
	}
	mrail_debug("%s: plan for %llu bytes:%s", g->name,
		    (unsigned long long)len, buf);
}

void rdv_recv_start(struct mrail_engine *e, struct mrail_request *r,
		    struct gate *g, uint64_t tag, uint64_t msg_len,
		    uint64_t send_id, struct rdv_rma *rma)
{
	ENGINE_ASSERT_LOCKED(e);
	struct mrail_rail_view views[MRAIL_MAX_RAILS];
	struct mrail_chunk chunks[MRAIL_MAX_CHUNKS];
	uint64_t take = msg_len < r->len ? msg_len : r->len;
	int cnt, rc;

	r->gate = g;
	r->rma = rma;
	r->status.source = g->id;
	r->status.tag = tag;
	r->status.length = take;
	r->status.msg_length = msg_len;
	r->remote_id = send_id;
	r->expected = take;
	r->done_bytes = 0;
	if (msg_len > r->len)
		r->error = MRAIL_ERR_TRUNCATE;
	unsigned n = gate_rail_views(g, views, VIEW_RECV);
	if (n == 0) {
		request_complete(e, r, g->error ? g->error : MRAIL_ERR_PEER);
		return;
	}
	if (!handle_assign(e, r)) {
		request_complete(e, r, MRAIL_ERR_NOMEM);
		return;
	}
	r->phase = REQ_RDV_ACTIVE;
	mrail_list_append(&g->rdv, &r->gate_link);
	if (take == 0) {
		/* Nothing to move: one RTR with total 0 releases the sender. */
		chunks[0] = (struct mrail_chunk){0, 0, 0};
		cnt = 1;
	} else {
		cnt = e->strategy->rdv_split(e->strategy_state,
					     g->strategy_peer, views, n, take,
					     chunks, MRAIL_MAX_CHUNKS);
		if (!plan_is_valid(chunks, cnt, n, take)) {
			mrail_warn("strategy '%s' returned an invalid chunk plan "
				   "for %llu bytes; sending it whole on one rail",
				   e->strategy->name, (unsigned long long)take);
			chunks[0] = (struct mrail_chunk){0, 0, take};
			cnt = 1;
		}
	}
	if (MRAIL_LOG_DEBUG <= mrail_log_level)
		log_plan(g, views, n, chunks, cnt, take);
	trace_plan(e, g, r->id, take, views, n, chunks, cnt);
	for (unsigned v = 0; v < n && take > 0; v++) {
		int used = 0;
		for (int k = 0; k < cnt && !used; k++)
			used = chunks[k].rail == v;
		if (!used)
			busy_scale_fade(g->rails[views[v].index]);
	}
	rc = post_rtrs(e, g, views, n, chunks, cnt, r);
	if (take == 0)
		request_complete(e, r, r->error);
	if (rc != MRAIL_OK)
		gate_fail(e, g, rc, "posting rendezvous replies failed");
}

static int rtr_fits(const struct mrail_request *s, const struct rail *rail,
		    const struct mrail_wire_rtr *rtr)
{
	if (!s || s->kind != REQ_SEND || s->gate != rail->gate)
		return 0;
	if (s->phase != REQ_RDV_WAIT_RTR && s->phase != REQ_RDV_ACTIVE)
		return 0;
	if (rtr->total > s->len || rtr->offset > rtr->total ||
	    rtr->len > rtr->total - rtr->offset)
		return 0;
	return s->phase == REQ_RDV_WAIT_RTR || rtr->total == s->expected;
}

void rdv_on_rtr(struct mrail_engine *e, struct rail *rail,
		const struct mrail_wire_rtr *rtr)
{
	ENGINE_ASSERT_LOCKED(e);
	struct mrail_request *s = handle_lookup(e, rtr->send_id);

	/* Our engine is closing and said BYE here: nothing may follow it;
	 * the request goes with the engine. */
	if (rail->bye_out)
		return;
	/* Read from a rail that failed meanwhile: the receiver asks for
	 * that range again on another rail (failover_rdv.c). */
	if (rail->state != RAIL_UP)
		return;
	if (!rtr_fits(s, rail, rtr)) {
		gate_fail(e, rail->gate, MRAIL_ERR_PROTO,
			  "rendezvous reply for an unknown send or out of "
			  "its bounds; connection dropped");
		return;
	}
	if (s->phase == REQ_RDV_WAIT_RTR) {
		s->phase = REQ_RDV_ACTIVE;
		s->expected = rtr->total;
		s->status.length = rtr->total;
		if (rtr->total == 0) {
			request_complete(e, s, MRAIL_OK);
			return;
		}
	}
	if (rtr->len == 0)
		return;
	pace_on_rtr(e, s, rtr->len);
	if (rtr->h.flags & MRAIL_WIRE_RTR_PUT) {
		rma_on_rtr_put(e, rail, s, rtr);
		return;
	}
	int rc = rail_post_data(e, rail, s, rtr->recv_id, rtr->offset, rtr->len);
	if (rc != MRAIL_OK)
		gate_fail(e, rail->gate, rc, "posting a payload chunk failed");
}

void rdv_data_sent(struct mrail_engine *e, struct send_op *op, int status)
{
	struct mrail_request *s = op->req;
	s->outstanding--;
	/* Lost with a failing rail: the receiver asks for it again. */
	if (status != MRAIL_OK && failover_rail_lost(op->rail))
		status = MRAIL_ERR_AGAIN;
	if (status != MRAIL_OK && status != MRAIL_ERR_AGAIN &&
	    s->error == MRAIL_OK)
		s->error = status;
	else if (status == MRAIL_OK)
		s->done_bytes += op->bytes;
	/* Complete once the receiver said it has every byte (RDV_DONE):
	 * a chunk handed to a connection that then died is not delivered. */
	if (s->outstanding == 0 && (s->error != MRAIL_OK || s->failing ||
				    s->rdone))
		request_complete(e, s, s->error);
}

void *rdv_on_data(struct mrail_engine *e, struct rail *rail, const void *head,
		  size_t hlen, uint64_t body_len, struct iovec *dst,
		  int *dst_cnt)
{
	struct mrail_wire_rec rec;
	const char *why = "not a payload chunk";
	size_t off = mrail_wire_check_pkt_hdr(head, hlen, &why);
	struct mrail_request *r = NULL;

	if (off && mrail_wire_next(head, hlen, &off, 0, &rec, &why) == 1 &&
	    rec.type == MRAIL_WIRE_DATA && off == hlen) {
		const struct mrail_wire_data *d = &rec.u.data;
		r = handle_lookup(e, d->recv_id);
		why = "payload chunk for an unknown receive or out of bounds";
		if (r && (r->kind != REQ_RECV || r->phase != REQ_RDV_ACTIVE ||
			  r->gate != rail->gate || d->len != body_len ||
			  d->len == 0 || d->offset > r->expected ||
			  d->len > r->expected - d->offset ||
			  !rdv_range_for_data(r, d->offset, d->len)))
			r = NULL;
		if (r) {
			int n = mrail_iov_slice(r->iov, r->iovcnt, d->offset,
						d->len, dst, *dst_cnt);
			if (n < 0) {
				why = "receive iovec has more entries than "
				      "the driver accepts";
				r = NULL;
			} else {
				*dst_cnt = n;
			}
		}
	}
	if (!r) {
		mrail_error("%s rail %u: %s; connection dropped",
			    rail->gate->name, rail->index, why);
		return NULL;
	}
	r->outstanding++;
	rail->rx_req = r;
	rail->rx_len = body_len;
	rail->rx_off = rec.u.data.offset;
	rail->stats.rx_chunks++;
	rail->stats.rx_bytes += body_len;
	rail->stats.rx_wire_bytes += hlen + body_len;
	return r;
}

void rdv_on_data_done(struct mrail_engine *e, struct rail *rail, void *cookie)
{
	struct mrail_request *r = cookie;
	struct rdv_range *rg = rdv_range_for_data(r, rail->rx_off, rail->rx_len);
	r->outstanding--;
	if (rg)
		rg->got += rail->rx_len;
	r->done_bytes += rail->rx_len;
	busy_rx_arrived(rail, rail->rx_len);
	rail->rx_len = 0;
	rail->rx_req = NULL;
	rma_recv_settled(e, r); /* completes it if it was the last */
}

/* The driver never calls recv_body_done for a body cut by ep_close. */
void rdv_rail_closed(struct mrail_engine *e, struct rail *rail)
{
	struct mrail_request *r = rail->rx_req;
	if (!r)
		return;
	rail->rx_req = NULL;
	rail->rx_len = 0;
	r->outstanding--;
	if (r->outstanding == 0 && r->failing)
		request_complete(e, r, r->error);
}

int rdv_rail_busy(const struct rail *rail)
{
	const struct mrail_list *pos;
	if (rail->rx_req || pace_rail_holds(rail))
		return 1;
	for (pos = rail->posted.next; pos != &rail->posted; pos = pos->next)
		if (mrail_list_entry(pos, struct send_op, link)->kind != OP_PACKET)
			return 1;
	return 0;
}
