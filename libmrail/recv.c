/*
 * Arrival and matching: records are put back in each gate's send order
 * (rails may overtake each other), then matched against posted receives
 * in posting order, else kept as unexpected until a receive matches.
 */
#include "libmrail/engine.h"
#include "util/iov.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

int match(const struct mrail_request *r, const struct gate *g, uint64_t tag)
{
	return (r->peer == MRAIL_ANY_PEER || r->peer == g->id) &&
	       ((tag ^ r->tag) & r->mask) == 0;
}

static struct mrail_request *find_posted(struct mrail_engine *e,
					 const struct gate *g, uint64_t tag)
{
	struct mrail_list *pos, *tmp;
	mrail_list_foreach_safe(pos, tmp, &e->posted) {
		struct mrail_request *r =
			mrail_list_entry(pos, struct mrail_request, link);
		if (match(r, g, tag))
			return r;
	}
	return NULL;
}

void recv_deliver_eager(struct mrail_engine *e, struct mrail_request *r,
			struct gate *g, uint64_t tag, const void *data,
			uint64_t len)
{
	uint64_t take = len < r->len ? len : r->len;
	mrail_buf_to_iov(r->iov, r->iovcnt, 0, data, take);
	r->gate = g;
	r->status.source = g->id;
	r->status.tag = tag;
	r->status.length = take;
	r->status.msg_length = len;
	request_complete(e, r, len > r->len ? MRAIL_ERR_TRUNCATE : MRAIL_OK);
}

static void recv_set_data(struct mrail_request *r, int has_data,
			  uint64_t data)
{
	if (has_data) {
		r->flags |= REQF_DATA;
		r->data = data;
	}
}

/*
 * Unexpected records of messages up to UNEXP_SMALL bytes are kept when
 * freed, up to UNEXP_CACHE_MAX of them, and reused: a message that arrives
 * before its receive is the common case of small collectives (58 % of an
 * 8 B allreduce's messages on 4 ranks of one host), and malloc and free
 * were 180 instructions of each (docs/driver-shm.md). Smaller messages
 * get the UNEXP_SMALL bytes too (56 more for an 8 B one).
 */
#define UNEXP_SMALL 64
#define UNEXP_CACHE_MAX 64

static struct unexpected *unexpected_alloc(struct mrail_engine *e,
					   uint64_t payload)
{
	struct unexpected *u;
	if (payload > UNEXP_SMALL) {
		u = malloc(sizeof *u + payload);
		if (u)
			u->small = 0;
		return u;
	}
	if (!mrail_list_empty(&e->unexp_cache)) {
		u = mrail_list_first(&e->unexp_cache, struct unexpected, link);
		mrail_list_remove(&u->link);
		e->unexp_cached--;
	} else if (!(u = malloc(sizeof *u + UNEXP_SMALL))) {
		return NULL;
	}
	u->small = 1;
	return u;
}

static void unexpected_put(struct mrail_engine *e, struct unexpected *u)
{
	if (u->small && e->unexp_cached < UNEXP_CACHE_MAX) {
		mrail_list_append(&e->unexp_cache, &u->link);
		e->unexp_cached++;
		return;
	}
	free(u);
}

void unexpected_cache_fini(struct mrail_engine *e)
{
	struct mrail_list *pos, *tmp;
	mrail_list_foreach_safe(pos, tmp, &e->unexp_cache) {
		mrail_list_remove(pos);
		free(mrail_list_entry(pos, struct unexpected, link));
	}
	e->unexp_cached = 0;
}

/* Receive r (off every list) takes message u (off every list); u is then
 * freed or kept for reuse (unexpected_put). */
void recv_take(struct mrail_engine *e, struct mrail_request *r,
	       struct unexpected *u)
{
	recv_set_data(r, u->has_imm, u->imm);
	switch (u->kind) {
	case UNEXP_SELF:
		self_match(e, r, u);
		return;
	case UNEXP_EAGER:
		recv_deliver_eager(e, r, u->gate, u->tag,
				   unexpected_payload(u), u->len);
		if (u->send_id) /* synchronous send: it is matched now */
			sync_ack_send(e, u->gate, u->send_id);
		/* The room it took may go back to the peer as credit, or
		 * to pulling its buffered messages. */
		credit_release(e, u->gate, u->len);
		pull_more(e, u->gate);
		credit_grant(e, u->gate);
		break;
	case UNEXP_RTS:
		if (pull_take(e, r, u))
			return; /* r completes when the pull does */
		mrail_list_remove(&u->plink);
		rdv_recv_start(e, r, u->gate, u->tag, u->len, u->send_id,
			       u->rma);
		break;
	}
	pull_buf_put(e, u->pulled);
	unexpected_put(e, u);
}

/* Hand an in-order message to its receive, or keep it as unexpected. */
void recv_arrived(struct mrail_engine *e, struct gate *g, struct unexpected *u)
{
	struct mrail_request *r = find_posted(e, g, u->tag);
	if (!r) {
		mrail_list_append(&e->unexpected, &u->link);
		if (u->buffered)
			pull_candidate(e, g, u);
		return;
	}
	mrail_list_remove(&r->link);
	recv_take(e, r, u);
}

void unexpected_free(struct mrail_engine *e, struct unexpected *u)
{
	mrail_list_remove(&u->plink);
	free(u->rma);
	pull_buf_free(u->pulled);
	unexpected_put(e, u);
}

static int is_eager_rec(const struct mrail_wire_rec *rec)
{
	return rec->type == MRAIL_WIRE_EAGER ||
	       rec->type == MRAIL_WIRE_EAGER_SYNC;
}

/* EAGER and EAGER_SYNC share seq and tag; RTS has its own layout. */
static uint64_t rec_seq(const struct mrail_wire_rec *rec)
{
	return rec->type == MRAIL_WIRE_EAGER ? rec->u.eager.seq
	       : rec->type == MRAIL_WIRE_EAGER_SYNC ? rec->u.eager_sync.seq
						    : rec->u.rts.seq;
}

static uint64_t rec_tag(const struct mrail_wire_rec *rec)
{
	return rec->type == MRAIL_WIRE_EAGER ? rec->u.eager.tag
	       : rec->type == MRAIL_WIRE_EAGER_SYNC ? rec->u.eager_sync.tag
						    : rec->u.rts.tag;
}

static struct unexpected *unexpected_new(struct mrail_engine *e,
					 struct gate *g,
					 const struct mrail_wire_rec *rec,
					 struct rdv_rma *rma)
{
	struct unexpected *u;
	if (is_eager_rec(rec)) {
		u = unexpected_alloc(e, rec->payload_len);
		if (!u)
			return NULL;
		credit_hold(e, g, rec->payload_len);
		u->kind = UNEXP_EAGER;
		u->seq = rec_seq(rec);
		u->tag = rec_tag(rec);
		u->len = rec->payload_len;
		u->send_id = rec->type == MRAIL_WIRE_EAGER_SYNC
				     ? rec->u.eager_sync.send_id : 0;
		memcpy(u->data, rec->payload, rec->payload_len);
	} else {
		u = unexpected_alloc(e, 0);
		if (!u)
			return NULL;
		u->kind = UNEXP_RTS;
		u->seq = rec->u.rts.seq;
		u->tag = rec->u.rts.tag;
		u->len = rec->u.rts.msg_len;
		u->send_id = rec->u.rts.send_id;
	}
	u->buffered = !is_eager_rec(rec) &&
		      (rec->u.rts.h.flags & MRAIL_WIRE_RTS_BUFFERED);
	mrail_list_init(&u->plink);
	u->pull = u->waiter = NULL;
	u->pulled = NULL;
	u->gate = g;
	u->rma = rma;
	if (rma && !is_eager_rec(rec))
		rma->sender_attentive =
			!!(rec->u.rts.h.flags & MRAIL_WIRE_RTS_ATTENTIVE);
	u->self_send = NULL;
	u->has_imm = rec->has_data;
	u->imm = rec->data;
	mrail_list_init(&u->link);
	return u;
}

/* Fast path for an eager message that arrives in order. */
static int deliver_eager_now(struct mrail_engine *e, struct gate *g,
			     const struct mrail_wire_rec *rec)
{
	uint64_t tag = rec_tag(rec);
	struct mrail_request *r = find_posted(e, g, tag);
	if (!r)
		return 0;
	mrail_list_remove(&r->link);
	recv_set_data(r, rec->has_data, rec->data);
	recv_deliver_eager(e, r, g, tag, rec->payload, rec->payload_len);
	if (rec->type == MRAIL_WIRE_EAGER_SYNC && rec->u.eager_sync.send_id)
		sync_ack_send(e, g, rec->u.eager_sync.send_id);
	return 1;
}

/* Records that overtook the one just taken may now follow it. */
static void deliver_followers(struct mrail_engine *e, struct gate *g)
{
	while (!mrail_list_empty(&g->ooo)) {
		struct unexpected *u =
			mrail_list_first(&g->ooo, struct unexpected, link);
		if (u->seq != g->next_recv_seq)
			break;
		mrail_list_remove(&u->link);
		g->next_recv_seq++;
		recv_arrived(e, g, u);
	}
}

/* charged: an eager message whose credit was taken already (offloaded
 * parts, at their first part). */
static int arrival(struct mrail_engine *e, struct gate *g,
		   const struct mrail_wire_rec *rec, struct rdv_rma *rma,
		   int charged, const char **why)
{
	uint64_t seq = rec_seq(rec);
	struct unexpected *u;

	if (seq < g->next_recv_seq) {
		*why = "duplicate message sequence number";
		return MRAIL_ERR_PROTO;
	}
	if (is_eager_rec(rec) && !charged &&
	    credit_on_eager(e, g, rec->payload_len, why) != MRAIL_OK)
		return MRAIL_ERR_PROTO;
	if (seq == g->next_recv_seq) {
		g->next_recv_seq++;
		if (!is_eager_rec(rec) || !deliver_eager_now(e, g, rec)) {
			if (!(u = unexpected_new(e, g, rec, rma)))
				return MRAIL_ERR_NOMEM;
			recv_arrived(e, g, u);
		}
		deliver_followers(e, g);
		return MRAIL_OK;
	}
	/* Early: keep it in sequence order (usually it goes last). */
	if (!(u = unexpected_new(e, g, rec, rma)))
		return MRAIL_ERR_NOMEM;
	struct mrail_list *pos = g->ooo.prev;
	while (pos != &g->ooo) {
		struct unexpected *o = mrail_list_entry(pos, struct unexpected, link);
		if (o->seq == seq) {
			if (u->kind == UNEXP_EAGER)
				credit_release(e, g, u->len);
			unexpected_free(e, u);
			*why = "duplicate message sequence number";
			return MRAIL_ERR_PROTO;
		}
		if (o->seq < seq)
			break;
		pos = pos->prev;
	}
	mrail_list_insert_before(pos->next, &u->link);
	return MRAIL_OK;
}

static int ordered_arrival(struct mrail_engine *e, struct gate *g,
			   const struct mrail_wire_rec *rec,
			   struct rdv_rma *rma, const char **why)
{
	return arrival(e, g, rec, rma, 0, why);
}

/*
 * A part of an offloaded eager message (libmrail/offload/reasm.c). Its
 * credit is taken at the first part, which bounds what a peer can make
 * us stage. A first part that arrives in order, with a receive posted
 * for it, matches it now (the message is next in the send order): the
 * parts land in the user's buffer and later messages need not wait.
 */
static int on_part(struct mrail_engine *e, struct gate *g,
		   const struct mrail_wire_rec *rec, const char **why)
{
	const struct mrail_wire_eager_part *h = &rec->u.part;
	struct partial *p = reasm_find(g, h->seq);
	int rc;
	if (!p) {
		if (h->seq < g->next_recv_seq) {
			*why = "eager part of a message already delivered";
			return MRAIL_ERR_PROTO;
		}
		if (credit_on_eager(e, g, h->msg_len, why) != MRAIL_OK)
			return MRAIL_ERR_PROTO;
		struct mrail_request *r = h->seq == g->next_recv_seq
						  ? find_posted(e, g, h->tag)
						  : NULL;
		if (!(p = reasm_new(g, rec, r)))
			return MRAIL_ERR_NOMEM;
		if (r) {
			mrail_list_remove(&r->link);
			r->phase = REQ_RDV_ACTIVE; /* matched, not cancellable */
			r->gate = g;
			r->status.source = g->id;
			r->status.tag = h->tag;
			r->status.length = h->msg_len < r->len ? h->msg_len
							       : r->len;
			r->status.msg_length = h->msg_len;
			g->next_recv_seq++;
			deliver_followers(e, g);
		} else {
			credit_hold(e, g, h->msg_len);
		}
		mrail_trace("%s: message %llu in parts, %s", g->name,
			    (unsigned long long)h->seq,
			    r ? "matched at its first part" : "staged");
	}
	if ((rc = reasm_add(p, rec, why)) != MRAIL_OK || p->got < p->len)
		return rc;
	mrail_list_remove(&p->link);
	if (p->req) {
		request_complete(e, p->req, p->len > p->req->len
						    ? MRAIL_ERR_TRUNCATE
						    : MRAIL_OK);
	} else { /* whole again: on as one EAGER record */
		struct mrail_wire_rec whole = {
			.type = MRAIL_WIRE_EAGER,
			.payload = p->data,
			.payload_len = p->len,
		};
		whole.u.eager.seq = p->seq;
		whole.u.eager.tag = p->tag;
		credit_release(e, g, p->len);
		rc = arrival(e, g, &whole, NULL, 1, why);
	}
	free(p);
	return rc;
}

/*
 * The peer closes its engine: it sent BYE on every rail after everything
 * else. Once all rails said so, nothing more can come from it; the
 * connections stay open until our own engine closes (and says BYE back),
 * so that the peer never sees a connection torn down under its feet.
 */
static void on_bye(struct mrail_engine *e, struct rail *r)
{
	struct gate *g = r->gate;
	int all = 1;
	r->bye_in = 1;
	/* A rail that said BYE may already be closed (its connection ended
	 * after the BYE, seen before the other rails' BYEs); one that is
	 * not up (failed, reconnecting: failover.c) gets no BYE. */
	for (unsigned i = 0; i < g->nrails; i++)
		if (g->rails[i] && !g->rails[i]->bye_in &&
		    g->rails[i]->state == RAIL_UP)
			all = 0;
	if (all) {
		g->bye_received = 1;
		gate_fail(e, g, MRAIL_ERR_PEER_CLOSED, "peer closed its engine");
	}
}

/* Records of a packet are still taken from r (rail and gate open). */
static int rail_takes(const struct rail *r)
{
	return r->state != RAIL_CLOSED && !r->bye_in &&
	       r->gate->state != GATE_FAILED;
}

/*
 * The packet of a small message (CREDIT?, EAGER, ACK?), taken without the
 * general record loop: the same steps, in the same order, that the loop
 * would make for these records, without decoding each into the general
 * form and dispatching on it. Returns 0 (nothing done) for any other
 * packet.
 */
static int lone_eager(struct mrail_engine *e, struct rail *r,
		      const void *head, size_t len, size_t off, int *rc,
		      const char **why)
{
	struct mrail_wire_lone l;

	if (!mrail_wire_lone_eager(head, len, off, MRAIL_EAGER_MAX_LIMIT, &l))
		return 0;
	if (l.has_credit && rail_takes(r) &&
	    (*rc = credit_on_grant(r->gate, l.credit, why)) != MRAIL_OK)
		return 1;
	if (!rail_takes(r))
		return 1;
	r->stats.rx_bytes += l.eager.payload_len;
	r->stats.rx_msgs++;
	if ((*rc = ordered_arrival(e, r->gate, &l.eager, NULL, why)) !=
		    MRAIL_OK ||
	    !l.has_ack || !rail_takes(r))
		return 1;
	*rc = failover_on_ack(e, r, l.ack, why);
	return 1;
}

void recv_on_packet(struct mrail_engine *e, struct rail *r, const void *head,
		    size_t len)
{
	ENGINE_ASSERT_LOCKED(e);
	struct gate *g = r->gate;
	struct mrail_wire_rec rec;
	const char *why = NULL;
	int rc = MRAIL_OK, counted = 0;
	/* An IMM record waits for the message record right after it. */
	int imm_pending = 0;
	uint64_t imm = 0;
	size_t off = mrail_wire_check_pkt_hdr(head, len, &why);

	r->stats.rx_packets++;
	r->stats.rx_wire_bytes += len;
	if (!off || failover_pkt_arrived(r, head, &counted, &why))
		rc = MRAIL_ERR_PROTO;
	else if (counted && lone_eager(e, r, head, len, off, &rc, &why))
		goto processed;
	/* A numbered packet is processed whole even if its rail fails
	 * meanwhile: the peer was told it was (RAIL_DOWN counts it). */
	while (rc == MRAIL_OK && rail_takes(r)) {
		int more = mrail_wire_next(head, len, &off,
					   MRAIL_EAGER_MAX_LIMIT, &rec, &why);
		if (more == 0) {
			if (imm_pending) {
				why = "IMM record at the end of a packet";
				rc = MRAIL_ERR_PROTO;
			}
			break;
		}
		if (more < 0) {
			rc = MRAIL_ERR_PROTO;
			break;
		}
		if (!counted && rec.type != MRAIL_WIRE_ACK) {
			why = "unnumbered packet with more than ACK records";
			rc = MRAIL_ERR_PROTO;
			break;
		}
		if (imm_pending) {
			if (rec.type != MRAIL_WIRE_EAGER &&
			    rec.type != MRAIL_WIRE_EAGER_SYNC &&
			    rec.type != MRAIL_WIRE_RTS) {
				why = "IMM record not followed by its message";
				rc = MRAIL_ERR_PROTO;
				break;
			}
			rec.has_data = 1;
			rec.data = imm;
			imm_pending = 0;
		}
		switch (rec.type) {
		case MRAIL_WIRE_IMM:
			imm_pending = 1;
			imm = rec.u.imm.data;
			break;
		case MRAIL_WIRE_EAGER:
		case MRAIL_WIRE_EAGER_SYNC:
			r->stats.rx_bytes += rec.payload_len;
			r->stats.rx_msgs++;
			rc = ordered_arrival(e, g, &rec, NULL, &why);
			break;
		case MRAIL_WIRE_EAGER_PART:
			r->stats.rx_bytes += rec.payload_len;
			r->stats.rx_msgs++;
			rc = on_part(e, g, &rec, &why);
			break;
		case MRAIL_WIRE_RTS: {
			struct rdv_rma *keys =
				rma_take_keys(r, rec.u.rts.send_id);
			r->stats.rx_msgs++;
			rc = ordered_arrival(e, g, &rec, keys, &why);
			if (rc)
				free(keys);
			break;
		}
		case MRAIL_WIRE_RTR:
			rdv_on_rtr(e, r, &rec.u.rtr);
			break;
		case MRAIL_WIRE_RKEY:
			if (rma_on_rkey(r, &rec, &why))
				rc = MRAIL_ERR_PROTO;
			break;
		case MRAIL_WIRE_GET_FIN:
			rma_on_get_fin(e, r, &rec.u.get_fin);
			break;
		case MRAIL_WIRE_PUT_FIN:
			rma_on_put_fin(e, r, &rec.u.put_fin);
			break;
		case MRAIL_WIRE_BUSY: {
			uint32_t us[MRAIL_WIRE_BUSY_MAX];
			memcpy(us, rec.payload, rec.payload_len);
			busy_remote_tx(g, us, (unsigned)(rec.payload_len / 4));
			break;
		}
		case MRAIL_WIRE_SYNC_ACK:
			sync_on_ack(e, r, rec.u.sync_ack.send_id);
			break;
		case MRAIL_WIRE_ACK:
			rc = failover_on_ack(e, r, rec.u.ack_rec.count, &why);
			break;
		case MRAIL_WIRE_RAIL_DOWN:
			rc = failover_on_rail_down(e, r, &rec.u.rail_down, &why);
			break;
		case MRAIL_WIRE_RDV_DONE:
			rdv_on_done(e, r, &rec.u.rdv_done);
			break;
		case MRAIL_WIRE_CREDIT:
			rc = credit_on_grant(g, rec.u.credit.bytes, &why);
			break;
		case MRAIL_WIRE_BYE:
			rma_rail_keys_clear(r);
			on_bye(e, r);
			return;
		default:
			why = "record type not allowed on an open rail";
			rc = MRAIL_ERR_PROTO;
		}
	}
processed:
	/* Remote keys serve the RTS or RTRs of their own packet only. */
	rma_rail_keys_clear(r);
	/* Eager data it sent may have been delivered: room for credit (and
	 * for pulling its buffered messages). */
	if (rc == MRAIL_OK) {
		pull_more(e, g);
		credit_grant(e, g);
	}
	if (rc != MRAIL_OK) {
		char msg[160];
		snprintf(msg, sizeof msg, "rail %u: %s in a packet of %zu bytes; "
			 "connection dropped", r->index,
			 why ? why : mrail_strerror(rc), len);
		gate_fail(e, g, rc, msg);
		return;
	}
	failover_after_packet(e, r);
}

/* ---- receive side of the API ------------------------------------------ */

int recv_post(struct mrail_engine *e, struct mrail_request *r)
{
	ENGINE_ASSERT_LOCKED(e);
	struct mrail_list *pos, *tmp;

	mrail_list_foreach_safe(pos, tmp, &e->unexpected) {
		struct unexpected *u =
			mrail_list_entry(pos, struct unexpected, link);
		if (!match(r, u->gate, u->tag))
			continue;
		mrail_list_remove(&u->link);
		recv_take(e, r, u);
		return MRAIL_OK;
	}
	if (r->peer != MRAIL_ANY_PEER) {
		struct gate *g = gate_get(e, r->peer);
		if (g->state == GATE_FAILED || g->state == GATE_CLOSED) {
			r->status.source = g->id;
			request_complete(e, r, g->error);
			return MRAIL_OK;
		}
	}
	r->phase = REQ_POSTED;
	mrail_list_append(&e->posted, &r->link);
	return MRAIL_OK;
}

void recv_fail_gate(struct mrail_engine *e, struct gate *g, int error)
{
	struct mrail_list *pos, *tmp;
	mrail_list_foreach_safe(pos, tmp, &e->posted) {
		struct mrail_request *r =
			mrail_list_entry(pos, struct mrail_request, link);
		if (r->peer == g->id) {
			r->status.source = g->id;
			request_complete(e, r, error);
		}
	}
	/* Messages that overtook a lost one can never be delivered; those
	 * matched at their first part fail. */
	reasm_fail_gate(e, g, error);
	mrail_list_foreach_safe(pos, tmp, &g->ooo) {
		struct unexpected *u =
			mrail_list_entry(pos, struct unexpected, link);
		mrail_list_remove(pos);
		if (u->kind == UNEXP_EAGER)
			credit_release(e, g, u->len);
		unexpected_free(e, u);
	}
	credit_gate_fail(e, g);
}

int recv_start(struct mrail_engine *e, mrail_peer_t src,
	       const struct iovec *iov, int iovcnt, void *buf, size_t len,
	       uint64_t tag, uint64_t mask, const struct mrail_req_args *args,
	       struct mrail_request **out)
{
	ENGINE_ASSERT_LOCKED(e);
	if (src != MRAIL_ANY_PEER && !gate_get(e, src))
		return MRAIL_ERR_NOT_FOUND;
	struct mrail_request *r =
		request_new_x(e, REQ_RECV, iov, iovcnt, buf, len, args);
	if (!r)
		return MRAIL_ERR_NOMEM;
	r->peer = src;
	r->tag = tag;
	r->mask = mask;
	r->status.source = src;
	recv_post(e, r);
	*out = r;
	return MRAIL_OK;
}
