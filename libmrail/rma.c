/*
 * One-sided rendezvous, per rail, on drivers with RDMA (docs/wire.md,
 * "One-sided rendezvous"):
 *   get  the sender registers its (contiguous) buffer and puts an RKEY
 *        record before its RTS; the receiver reads its chunks on rails
 *        that can, straight into its buffer, and tells the sender with
 *        GET_FIN when it has all it takes.
 *   put  the receiver registers its (contiguous) buffer and puts an RKEY
 *        record before RTRs flagged MRAIL_WIRE_RTR_PUT; the sender writes
 *        the chunk and follows with PUT_FIN on the same rail.
 * Rails without RDMA, and buffers that are not contiguous on the side
 * whose memory is reached remotely, use the two-sided RTR/DATA of rdv.c;
 * one message may mix all three over its rails.
 */
#include "libmrail/engine.h"
#include "libmrail/regcache.h"
#include "util/iov.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

int rma_parse_protocol(const char *s)
{
	static const char *const names[] = {"auto", "get", "put", "send"};
	for (int i = 0; i < 4; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

/* Which one-sided directions MRAIL_RDV allows (send: neither). */
static int protocol_reads(enum rdv_protocol p)
{
	switch (p) {
	case RDV_AUTO:
	case RDV_GET:
		return 1;
	case RDV_PUT:
	case RDV_SEND:
		return 0;
	}
	return 0;
}

static int protocol_writes(enum rdv_protocol p)
{
	switch (p) {
	case RDV_AUTO:
	case RDV_PUT:
		return 1;
	case RDV_GET:
	case RDV_SEND:
		return 0;
	}
	return 0;
}

static int has_cap(const struct rail *r, unsigned cap)
{
	return r->local->di->ops->rma && (r->local->caps.flags & cap);
}

static int usable(const struct rail *r)
{
	return r && r->state == RAIL_UP && r->ep;
}

/* The gate's rails that can read by RDMA, grouped by driver instance. */
static unsigned get_instances(const struct mrail_engine *e,
			      const struct gate *g, uint64_t *masks)
{
	unsigned n = 0;
	for (unsigned d = 0; d < e->ndrv; d++)
		masks[d] = 0;
	for (unsigned i = 0; i < g->nrails && i < 64; i++) {
		const struct rail *r = g->rails[i];
		if (usable(r) && has_cap(r, MRAIL_DRV_CAP_RDMA_READ)) {
			n += masks[r->local->di->index] == 0;
			masks[r->local->di->index] |= (uint64_t)1 << i;
		}
	}
	return n;
}

size_t rma_rts_room(const struct mrail_engine *e, const struct gate *g)
{
	uint64_t masks[MRAIL_MAX_DRIVERS];
	if (!protocol_reads(e->rdv_protocol))
		return 0;
	return get_instances(e, g, masks) *
	       mrail_wire_rkey_size(MRAIL_WIRE_RKEY_MAX);
}

static struct rdv_rma *rma_of(struct mrail_request *r)
{
	if (!r->rma)
		r->rma = calloc(1, sizeof *r->rma);
	return r->rma;
}

/* Register r's buffer with di (once per request) and write an RKEY. */
static int put_key(struct drv_instance *di, struct mrail_request *r,
		   uint64_t id, uint64_t rails, uint8_t *at, size_t *len)
{
	uint8_t key[MRAIL_DRV_RKEY_MAX];
	size_t klen = sizeof key;
	struct rdv_rma *m = rma_of(r);
	int rc;

	if (!m)
		return MRAIL_ERR_NOMEM;
	if (!m->regs[di->index] &&
	    (rc = mem_reg_get(di, r->iov[0].iov_base, r->iov[0].iov_len,
			      &m->regs[di->index])))
		return rc;
	rc = di->ops->rma->mr_pack((struct mrail_drv_mr *)m->regs[di->index]->handle, key, &klen);
	if (rc || klen == 0 || klen > MRAIL_WIRE_RKEY_MAX) {
		mrail_error("%s: packing a remote key failed (%zu bytes)",
			    di->ops->name, klen);
		return rc ? rc : MRAIL_ERR_INVALID;
	}
	*len = mrail_wire_put_rkey(at, id, rails,
				   (uint64_t)(uintptr_t)r->iov[0].iov_base, key,
				   klen);
	return MRAIL_OK;
}

int rma_put_send_keys(struct mrail_engine *e, struct gate *g,
		      struct mrail_request *r, struct send_op *op)
{
	uint64_t masks[MRAIL_MAX_DRIVERS];
	if (!protocol_reads(e->rdv_protocol) || r->iovcnt != 1 || r->len == 0 || !get_instances(e, g, masks))
		return MRAIL_OK;
	for (unsigned d = 0; d < e->ndrv; d++) {
		size_t len;
		if (!masks[d])
			continue;
		int rc = put_key(&e->drivers[d], r, r->id, masks[d],
				 op->buf + op->len, &len);
		if (rc) {
			/* The receiver then moves it two-sided. */
			mrail_debug("%s: no RDMA read for this message: %s",
				    g->name, mrail_strerror(rc));
			continue;
		}
		op->len += len;
	}
	return MRAIL_OK;
}

int rma_on_rkey(struct rail *rail, const struct mrail_wire_rec *rec,
		const char **why)
{
	if (rail->rx_nkeys == MRAIL_MAX_DRIVERS) {
		*why = "more remote keys in one packet than driver instances";
		return -1;
	}
	struct rma_key *k = &rail->rx_keys[rail->rx_nkeys++];
	k->id = rec->u.rkey.id;
	k->rails = rec->u.rkey.rails;
	k->addr = rec->u.rkey.addr;
	k->len = (uint16_t)rec->payload_len;
	memcpy(k->key, rec->payload, rec->payload_len);
	return 0;
}

void rma_rail_keys_clear(struct rail *rail)
{
	rail->rx_nkeys = 0;
}

struct rdv_rma *rma_take_keys(struct rail *rail, uint64_t send_id)
{
	struct rdv_rma *m = NULL;
	unsigned kept = 0;
	for (unsigned i = 0; i < rail->rx_nkeys; i++) {
		if (rail->rx_keys[i].id != send_id) {
			rail->rx_keys[kept++] = rail->rx_keys[i];
			continue;
		}
		if (!m && !(m = calloc(1, sizeof *m)))
			break; /* out of memory: two-sided then */
		m->keys[m->nkeys++] = rail->rx_keys[i];
	}
	rail->rx_nkeys = kept;
	return m;
}

static const struct rma_key *key_for(const struct mrail_request *r,
				     unsigned rail_index)
{
	if (!r->rma || rail_index >= 64)
		return NULL;
	for (unsigned i = 0; i < r->rma->nkeys; i++)
		if (r->rma->keys[i].rails & ((uint64_t)1 << rail_index))
			return &r->rma->keys[i];
	return NULL;
}

int rma_chunk_can_get(const struct mrail_request *r, const struct gate *g,
		      unsigned rail_index)
{
	const struct rail *rail = g->rails[rail_index];
	return usable(rail) && has_cap(rail, MRAIL_DRV_CAP_RDMA_READ) &&
	       protocol_reads(rail->engine->rdv_protocol) &&
	       key_for(r, rail_index);
}

int rma_chunk_can_put(struct mrail_engine *e, const struct mrail_request *r,
		      const struct gate *g, unsigned rail_index)
{
	const struct rail *rail = g->rails[rail_index];
	return usable(rail) && has_cap(rail, MRAIL_DRV_CAP_RDMA_WRITE) &&
	       protocol_writes(e->rdv_protocol) &&
	       r->iovcnt == 1 && r->expected > 0;
}

int rma_put_recv_key(struct mrail_engine *e, struct rail *rail,
		     struct mrail_request *r, struct send_op *op)
{
	size_t len;
	(void)e;
	int rc = put_key(rail->local->di, r, r->id, (uint64_t)1 << rail->index,
			 op->buf + op->len, &len);
	if (rc == MRAIL_OK)
		op->len += len;
	return rc;
}

static struct send_op *rma_op_new(enum send_op_kind kind, struct rail *rail,
				  struct mrail_request *req, uint64_t bytes)
{
	struct send_op *op = calloc(1, sizeof *op);
	if (!op)
		return NULL;
	mrail_list_init(&op->link);
	op->kind = kind;
	op->rail = rail;
	op->req = req;
	op->bytes = bytes;
	return op;
}

/*
 * One get or put per piece of the local buffer slice [offset, offset+len)
 * (an iovec entry, cut at the driver's largest operation), each on the
 * local registration of its piece.
 */
static int post_ops(struct rail *rail, struct mrail_request *req,
		    enum send_op_kind kind,
		    uint64_t offset, uint64_t len, const struct rma_key *key,
		    struct rma_chunk *chunk)
{
	struct drv_instance *di = rail->local->di;
	uint64_t max = rail->local->caps.max_rma ? rail->local->caps.max_rma
						 : ((uint64_t)1 << 30);
	uint64_t done = 0;

	while (done < len) {
		uint64_t at = offset + done, pos = 0;
		int i = 0;
		while (i < req->iovcnt && at >= pos + req->iov[i].iov_len)
			pos += req->iov[i++].iov_len;
		if (i == req->iovcnt)
			return MRAIL_ERR_INVALID;
		struct iovec piece = {(char *)req->iov[i].iov_base + (at - pos),
				      0};
		uint64_t n = len - done;
		if (n > pos + req->iov[i].iov_len - at)
			n = pos + req->iov[i].iov_len - at;
		if (n > max)
			n = max;
		struct send_op *op = rma_op_new(kind, rail, req, n);
		if (!op)
			return MRAIL_ERR_NOMEM;
		int rc = mem_reg_get(di, piece.iov_base, n, &op->reg);
		if (rc) {
			free(op);
			return rc;
		}
		op->chunk = chunk;
		op->offset = offset + done;
		mrail_list_append(&rail->posted, &op->link);
		req->outstanding++;
		if (chunk)
			chunk->ops_left++;
		if (kind == OP_PUT)
			busy_tx_post(rail, 0); /* charged when the RTS left */
		uint64_t raddr = key->addr + offset + done;
		rc = kind == OP_GET
			     ? di->ops->rma->get(rail->ep, piece.iov_base, n,
						 (struct mrail_drv_mr *)op->reg->handle, raddr, key->key,
						 key->len, op)
			     : di->ops->rma->put(rail->ep, piece.iov_base, n,
						 (struct mrail_drv_mr *)op->reg->handle, raddr, key->key,
						 key->len, op);
		if (rc) {
			mrail_list_remove(&op->link);
			req->outstanding--;
			if (chunk)
				chunk->ops_left--;
			if (kind == OP_PUT)
				busy_tx_done(rail);
			mem_reg_put(di, op->reg);
			free(op);
			return rc;
		}
		done += n;
	}
	return MRAIL_OK;
}

int rma_start_get(struct mrail_engine *e, struct rail *rail,
		  struct mrail_request *r, uint64_t offset, uint64_t len)
{
	const struct rma_key *key = key_for(r, rail->index);
	(void)e;
	if (!key)
		return MRAIL_ERR_INVALID;
	r->rma->fin_rail = rail;
	busy_rx_expect(rail, len);
	rail->stats.rx_chunks++;
	rail->stats.rma_reads++;
	return post_ops(rail, r, OP_GET, offset, len, key, NULL);
}

void rma_on_rtr_put(struct mrail_engine *e, struct rail *rail,
		    struct mrail_request *s, const struct mrail_wire_rtr *rtr)
{
	const struct rma_key *key = NULL;
	for (unsigned i = 0; i < rail->rx_nkeys && !key; i++)
		if (rail->rx_keys[i].id == rtr->recv_id)
			key = &rail->rx_keys[i];
	if (!key || !has_cap(rail, MRAIL_DRV_CAP_RDMA_WRITE)) {
		gate_fail(e, rail->gate, MRAIL_ERR_PROTO,
			  key ? "RDMA write asked on a rail without it"
			      : "RDMA write asked without a remote key");
		return;
	}
	struct rma_chunk *c = calloc(1, sizeof *c);
	if (!c) {
		gate_fail(e, rail->gate, MRAIL_ERR_NOMEM, "out of memory");
		return;
	}
	*c = (struct rma_chunk){rtr->recv_id, rtr->offset, rtr->len, 0, 0};
	hooks_msg_tx(e, rail, s->tag);
	/* The key's address is the receiver's byte 0; ours is offset 0. */
	int rc = post_ops(rail, s, OP_PUT, rtr->offset, rtr->len, key, c);
	if (c->ops_left == 0)
		free(c);
	else if (rc)
		c->status = rc; /* posted ops finish, then the gate fails */
	if (rc)
		gate_fail(e, rail->gate, rc, "posting an RDMA write failed");
	else {
		rail->stats.tx_chunks++;
		rail->stats.rma_writes++;
	}
}

static void send_fin_packet(struct mrail_engine *e, struct gate *g,
			    struct rail *rail, int type, uint64_t id,
			    uint64_t a, uint64_t b)
{
	struct send_op *op = packet_get(e);
	if (!op) {
		gate_fail(e, g, MRAIL_ERR_NOMEM, "no memory for an RDMA "
			  "completion notice");
		return;
	}
	op->len += type == MRAIL_WIRE_GET_FIN
			   ? mrail_wire_put_get_fin(op->buf + op->len, id, a, b)
		   : type == MRAIL_WIRE_RDV_DONE
			   ? mrail_wire_put_rdv_done(op->buf + op->len, id, a)
			   : mrail_wire_put_put_fin(op->buf + op->len, id, a,
						    b);
	if (!rail) { /* not tied to a connection: any rail, or the next */
		failover_post_notice(e, g, op);
		return;
	}
	int rc = rail_post_packet(e, rail, op);
	if (rc) {
		packet_put(e, op);
		gate_fail(e, g, rc, "posting an RDMA completion notice "
			  "failed");
	}
}

/*
 * A receive whose bytes have all arrived (two-sided, written or read):
 * the sender learns what we read by RDMA, since nothing else tells it.
 */
void rma_recv_finish(struct mrail_engine *e, struct mrail_request *r)
{
	/* The sender completes on this notice (v5), whatever moved the
	 * bytes: GET_FIN when some were read by RDMA, else RDV_DONE. */
	/* A lazily connected gate carries traffic on its first rails while
	 * the others still connect (GATE_CONNECTING): the notice is owed
	 * then too, or the sender waits for it forever. */
	if (r->gate->state == GATE_UP || r->gate->state == GATE_CONNECTING) {
		/* Every rail down: it waits for the first one back
		 * (failover_post_notice); dropped, the sender would wait
		 * for good once the gate recovers. */
		struct rail *fr = r->rma ? r->rma->fin_rail : NULL;
		if (!usable(fr))
			fr = NULL;
		if (r->rma && r->rma->read_bytes > 0)
			send_fin_packet(e, r->gate, fr, MRAIL_WIRE_GET_FIN,
					r->remote_id, r->expected,
					r->rma->read_bytes);
		else
			send_fin_packet(e, r->gate, fr, MRAIL_WIRE_RDV_DONE,
					r->remote_id, r->expected, 0);
	}
	request_complete(e, r, r->error);
}

/* After a receive's operation settled: complete it if it was the last. */
void rma_recv_settled(struct mrail_engine *e, struct mrail_request *r)
{
	if (r->outstanding > 0 || r->phase == REQ_DONE)
		return;
	if (r->failing)
		request_complete(e, r, r->error);
	else if (r->done_bytes == r->expected)
		rma_recv_finish(e, r);
}

static void get_done(struct mrail_engine *e, struct send_op *op, int status)
{
	struct mrail_request *r = op->req;
	struct rail *rail = op->rail;
	if (status == MRAIL_OK) {
		rdv_range_got_get(r, rail->index, op->offset, op->bytes);
		r->done_bytes += op->bytes;
		r->rma->read_bytes += op->bytes;
		busy_rx_arrived(rail, op->bytes);
		rail->stats.rx_bytes += op->bytes;
		rail->stats.rx_wire_bytes += op->bytes;
	}
	rma_recv_settled(e, r);
}

static void put_done(struct mrail_engine *e, struct send_op *op, int status)
{
	struct mrail_request *s = op->req;
	struct rma_chunk *c = op->chunk;
	if (status != MRAIL_OK && c->status == MRAIL_OK)
		c->status = status;
	if (--c->ops_left > 0)
		return;
	if (c->status == MRAIL_OK) {
		op->rail->stats.tx_bytes += c->len;
		op->rail->stats.tx_wire_bytes += c->len;
		if ((op->rail->gate->state == GATE_UP ||
		     op->rail->gate->state == GATE_CONNECTING) &&
		    op->rail->state == RAIL_UP)
			send_fin_packet(e, op->rail->gate, op->rail,
					MRAIL_WIRE_PUT_FIN,
					c->recv_id, c->offset, c->len);
		s->done_bytes += c->len;
	}
	free(c);
	if (s->outstanding == 0 && s->phase != REQ_DONE &&
	    (s->failing || s->rdone))
		request_complete(e, s, s->error);
}

void rma_op_done(struct mrail_engine *e, struct send_op *op, int status)
{
	struct mrail_request *r = op->req;
	struct gate *g = op->rail->gate;

	mem_reg_put(op->rail->local->di, op->reg);
	r->outstanding--;
	/* On a failing rail the receiver asks for the range again
	 * (failover_rdv.c); the request lives on. */
	if (status != MRAIL_OK && failover_rail_lost(op->rail)) {
		if (op->kind == OP_GET)
			get_done(e, op, status);
		else
			put_done(e, op, MRAIL_ERR_AGAIN);
		free(op);
		return;
	}
	if (status != MRAIL_OK) {
		/* The request fails once its other operations settle; a
		 * failed RDMA operation fails the whole gate (its rails close,
		 * settling them). */
		request_fail(e, r, status);
		if (g && g->state == GATE_UP) {
			char msg[96];
			snprintf(msg, sizeof msg, "rail %u: RDMA %s failed",
				 op->rail->index,
				 op->kind == OP_GET ? "read" : "write");
			gate_fail(e, g, status, msg);
		}
	}
	if (op->kind == OP_GET)
		get_done(e, op, status);
	else
		put_done(e, op, status);
	free(op);
}

static struct mrail_request *fin_request(struct mrail_engine *e,
					 struct rail *rail, uint64_t id,
					 enum req_kind kind)
{
	struct mrail_request *r = handle_lookup(e, id);
	if (!r || r->kind != kind || r->gate != rail->gate)
		return NULL;
	return r;
}

void rma_on_get_fin(struct mrail_engine *e, struct rail *rail,
		    const struct mrail_wire_get_fin *f)
{
	struct mrail_request *s = fin_request(e, rail, f->send_id, REQ_SEND);
	if (!s || (s->phase != REQ_RDV_WAIT_RTR && s->phase != REQ_RDV_ACTIVE) ||
	    !s->rma || f->total > s->len || f->bytes > f->total ||
	    (s->phase == REQ_RDV_ACTIVE && f->total != s->expected) ||
	    s->rma->fin_bytes != 0) {
		gate_fail(e, rail->gate, MRAIL_ERR_PROTO,
			  "RDMA read notice for an unknown send or out of its "
			  "bounds; connection dropped");
		return;
	}
	if (s->phase == REQ_RDV_WAIT_RTR) {
		s->phase = REQ_RDV_ACTIVE;
		s->expected = f->total;
		s->status.length = f->total;
	}
	s->rma->fin_bytes = f->bytes;
	s->done_bytes += f->bytes;
	/* The receiver's reads moved them through our NIC: counted as sent
	 * (on the rail of the notice; the reads may have used several). */
	rail->stats.tx_bytes += f->bytes;
	rail->stats.tx_wire_bytes += f->bytes;
	/* Sent once the receiver has every byte: the send is done. */
	s->rdone = 1;
	if (s->outstanding == 0)
		request_complete(e, s, s->error);
}

void rma_on_put_fin(struct mrail_engine *e, struct rail *rail,
		    const struct mrail_wire_put_fin *f)
{
	struct mrail_request *r = fin_request(e, rail, f->recv_id, REQ_RECV);
	if (!r || r->phase != REQ_RDV_ACTIVE || f->len == 0 ||
	    f->offset > r->expected || f->len > r->expected - f->offset ||
	    f->len > r->expected - r->done_bytes) {
		gate_fail(e, rail->gate, MRAIL_ERR_PROTO,
			  "RDMA write notice for an unknown receive or out of "
			  "its bounds; connection dropped");
		return;
	}
	struct rdv_range *rg = rdv_range_for_put(r, f->offset, f->len);
	if (!rg) {
		gate_fail(e, rail->gate, MRAIL_ERR_PROTO,
			  "RDMA write notice for a range not asked for; "
			  "connection dropped");
		return;
	}
	rg->got = rg->len;
	r->done_bytes += f->len;
	busy_rx_arrived(rail, f->len);
	rail->stats.rx_chunks++;
	rail->stats.rx_bytes += f->len;
	rail->stats.rx_wire_bytes += f->len;
	rma_recv_settled(e, r);
}

void rma_request_release(struct mrail_engine *e, struct mrail_request *r)
{
	if (!r->rma)
		return;
	for (unsigned d = 0; d < e->ndrv; d++)
		mem_reg_put(&e->drivers[d], r->rma->regs[d]);
	free(r->rma);
	r->rma = NULL;
}
