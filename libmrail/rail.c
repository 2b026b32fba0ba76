/* Rails: one driver endpoint to one peer; what is posted on it. */
#include "libmrail/engine.h"
#include "sampler/predict.h"
#include "util/clock.h"
#include "util/iov.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

/*
 * The eager/rendezvous switch before any profile: the configured one; when
 * it is automatic, raised to the driver's eager_max_hint where that is
 * higher (shm copies 64 KiB through its rings faster than a rendezvous
 * takes around its single copy: docs/driver-shm.md). A hint never lowers
 * it: lowering is for a profile, which measured (model.c). Bounded by
 * what one packet carries (engine.c sizes packets for the largest hint).
 */
static size_t rail_default_eager_max(const struct mrail_engine *e,
				     const struct local_rail *l)
{
	size_t m = e->cfg.eager_max;
	if (e->eager_auto && l->caps.eager_max_hint > m)
		m = l->caps.eager_max_hint;
	if (m > l->caps.max_head / 2)
		m = l->caps.max_head / 2;
	size_t fit = e->packet_cap - sizeof(struct mrail_wire_pkt_hdr) -
		     sizeof(struct mrail_wire_imm) - mrail_wire_eager_size(0);
	return m < fit ? m : fit;
}

struct rail *rail_new(struct mrail_engine *e, struct local_rail *l)
{
	struct rail *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	mrail_list_init(&r->link);
	mrail_list_init(&r->posted);
	mrail_list_init(&r->retained);
	r->engine = e;
	r->local = l;
	r->eager_max = rail_default_eager_max(e, l);
	/* Until the sampler provides a profile: the driver's nominal speed,
	 * else a conservative 1 GB/s, 10 us. */
	r->bandwidth = l->caps.nominal_bandwidth > 0 ? l->caps.nominal_bandwidth
						     : 1e9;
	r->latency = l->caps.nominal_latency > 0 ? l->caps.nominal_latency
						 : 10e-6;
	snprintf(r->stats.driver, sizeof r->stats.driver, "%s", l->ops->name);
	busy_rail_init(r);
	return r;
}

void rail_op_done(struct mrail_engine *e, struct send_op *op, int status)
{
	mrail_list_remove(&op->link);
	if (op->rail && op->kind != OP_GET)
		busy_tx_done(op->rail);
	if (op->rail) {
		op->rail->tx_last_move = engine_now(e);
		/* A failed completion fails the rail (at the next tick, not
		 * inside the driver), not the request: failover. */
		if (status != MRAIL_OK)
			failover_op_failed(op->rail);
	}
	switch (op->kind) {
	case OP_PACKET:
		if (!failover_pkt_done(op))
			packet_put(e, op);
		break;
	case OP_DATA:
		if (op->handed)
			trace_op(e, TRACE_SENT, op);
		pace_op_done(e, op);
		rdv_data_sent(e, op, status);
		free(op);
		break;
	case OP_GET:
	case OP_PUT:
		rma_op_done(e, op, status); /* frees op */
		break;
	}
}

void rail_close(struct mrail_engine *e, struct rail *r)
{
	if (r->state == RAIL_UP)
		r->stats.up_seconds += mrail_now() - r->up_since;
	rail_disconnect(e, r, RAIL_CLOSED);
	failover_rail_release(e, r);
}

void rail_disconnect(struct mrail_engine *e, struct rail *r,
		     enum rail_state to)
{
	struct mrail_list *pos, *tmp;

	hooks_rail_down(e, r);
	if (r->ep) {
		r->local->ops->ep_close(r->ep);
		r->ep = NULL;
	}
	if (r->state == RAIL_UP && r->gate && r->gate->rails_up > 0)
		r->gate->rails_up--;
	r->state = to;
	r->stats.up = 0;
	/* The driver drops what was pending without upcalls: settle here. */
	mrail_list_foreach_safe(pos, tmp, &r->posted)
		rail_op_done(e, mrail_list_entry(pos, struct send_op, link),
			   MRAIL_ERR_PEER);
	pace_rail_closed(e, r);
	rdv_rail_closed(e, r);
	busy_rail_close(r);
}

/*
 * Recycled packets: a window of small messages keeps dozens of packets
 * until the peer acknowledges them (failover.c), so a bound of 32 made
 * every window of 64 sends free and allocate 64 KiB buffers again, malloc
 * trim the heap, and the sender fault on fresh pages (0.47 page faults
 * and 0.17 brk per 8-byte message, docs/mpi-ompi.md "budget"). Up to
 * FREE_OPS_BURST are kept; packet_trim (every timer pass, about 5 ms)
 * frees half of those above FREE_OPS_MAX, so what a burst leaves (every
 * rail of 63 peers sending its HELLO at once) is not pinned for the
 * engine's life (docs/scale.md).
 */
#define FREE_OPS_MAX 32
#define FREE_OPS_BURST 128

struct send_op *packet_get(struct mrail_engine *e)
{
	struct send_op *op;
	if (!mrail_list_empty(&e->free_ops)) {
		op = mrail_list_first(&e->free_ops, struct send_op, link);
		mrail_list_remove(&op->link);
		e->nfree_ops--;
	} else {
		op = calloc(1, sizeof *op);
		if (!op)
			return NULL;
		op->buf = malloc(e->packet_cap);
		if (!op->buf) {
			free(op);
			return NULL;
		}
		op->cap = e->packet_cap;
		mrail_list_init(&op->link);
		mrail_list_init(&op->rlink);
	}
	op->kind = OP_PACKET;
	op->pseq = 0;
	op->retained = op->in_flight = op->no_count = 0;
	op->len = mrail_wire_put_pkt_hdr(op->buf);
	op->rail = NULL;
	op->req = NULL;
	op->bytes = 0;
	op->has_busy = 0;
	return op;
}

void packet_put(struct mrail_engine *e, struct send_op *op)
{
	if (e->nfree_ops >= FREE_OPS_BURST) {
		free(op->buf);
		free(op);
		return;
	}
	/* Most recently used first: its pages are the warm ones. */
	mrail_list_insert_before(e->free_ops.next, &op->link);
	e->nfree_ops++;
}

void packet_trim(struct mrail_engine *e)
{
	unsigned drop = e->nfree_ops > FREE_OPS_MAX
				? (e->nfree_ops - FREE_OPS_MAX + 1) / 2 : 0;
	for (; drop > 0; drop--) {
		struct send_op *op =
			mrail_list_entry(e->free_ops.prev, struct send_op, link);
		mrail_list_remove(&op->link);
		e->nfree_ops--;
		free(op->buf);
		free(op);
	}
}

int rail_post_packet(struct mrail_engine *e, struct rail *r,
		     struct send_op *op)
{
	ENGINE_ASSERT_LOCKED(e);
	op->rail = r;
	int first = mrail_list_empty(&r->posted);
	failover_pkt_post(r, op);
	mrail_list_append(&r->posted, &op->link);
	int rc = r->local->ops->send(r->ep, op->buf, op->len, NULL, 0, op);
	if (rc) {
		mrail_list_remove(&op->link);
		failover_pkt_unpost(r, op);
		return rc;
	}
	/* After the send, off a small message's way to the wire (its
	 * send_done comes from progress only, drivers/driver.h): the clock
	 * reading for the send watchdog, 36 ns on a KVM guest, stood before
	 * the ring write of every message a ping-pong sends. */
	if (first)
		r->tx_last_move = engine_now(e);
	busy_tx_post(r, op->len);
	r->stats.tx_packets++;
	r->stats.tx_wire_bytes += op->len;
	return MRAIL_OK;
}

/*
 * Small messages through a driver that injects (drivers/driver.h: shm):
 * from the caller's memory into the ring at once, with no staging copy,
 * no send record and nothing kept: one copy fewer of every eager payload
 * (64 KiB ping-pong over shm 7.03 -> 6.01 us, docs/driver-shm.md). A
 * driver that cannot take it now (queue or ring full, still connecting),
 * or none that injects: one copy into a packet, posted as any.
 */
int rail_post_pieces(struct mrail_engine *e, struct rail *r, struct iovec *v,
		     int cnt)
{
	ENGINE_ASSERT_LOCKED(e);
	int (*inject)(struct mrail_drv_ep *, const struct iovec *, int) =
		r->local->ops->inject;
	size_t len = mrail_iov_length(v, cnt);
	if (inject && r->state == RAIL_UP && cnt < RAIL_PIECES_MAX) {
		uint8_t ack[sizeof(struct mrail_wire_ack)];
		/* An ACK rides along when a packet would have room for it
		 * (failover_pkt_post's rule), so no frame outgrows max_head. */
		size_t acked = failover_inject_prepare(
			r, v[0].iov_base,
			len + sizeof ack <= e->packet_cap ? ack : NULL);
		v[cnt] = (struct iovec){ack, acked};
		int rc = inject(r->ep, v, cnt + (acked > 0));
		if (rc < 0)
			return rc;
		if (rc > 0) {
			len += acked;
			failover_inject_commit(r, acked > 0);
			/* Copied already, by this call: the rail is as free
			 * as before it (the driver injects only with nothing
			 * queued), so there is no busy time to charge and no
			 * clock to read (36 ns on a KVM guest; 8 B latency
			 * with both ranks on one core 0.985 of charging it,
			 * docs/driver-shm.md). */
			r->stats.tx_packets++;
			r->stats.tx_wire_bytes += len;
			return MRAIL_OK;
		}
	}
	struct send_op *op = packet_get(e);
	if (!op)
		return MRAIL_ERR_NOMEM;
	if (len > op->cap) {
		packet_put(e, op);
		return MRAIL_ERR_INVALID;
	}
	mrail_iov_to_buf(op->buf, v, cnt, 0, len);
	op->len = len;
	int rc = rail_post_packet(e, r, op);
	if (rc)
		packet_put(e, op);
	return rc;
}

/* One DATA frame: bytes [offset, offset+len) of req on rail r, to the
 * driver now or when its NIC is free for it (pace.c). */
static int post_data_frame(struct mrail_engine *e, struct rail *r,
			   struct mrail_request *req, uint64_t recv_id,
			   uint64_t offset, uint64_t len,
			   const struct iovec *body, int cnt)
{
	size_t hdr = sizeof(struct mrail_wire_pkt_hdr) +
		     sizeof(struct mrail_wire_data);
	/* Room for a copy of the body's iovec, should the frame wait. */
	size_t iov_at = (sizeof *(struct send_op *)0 + hdr + 15) & ~(size_t)15;
	struct send_op *op = calloc(1, iov_at + sizeof *body * (size_t)cnt);
	if (!op)
		return MRAIL_ERR_NOMEM;
	op->kind = OP_DATA;
	op->rail = r;
	op->req = req;
	op->bytes = len;
	op->offset = offset;
	op->recv_id = recv_id;
	op->buf = (uint8_t *)(op + 1);
	op->held_iov = (struct iovec *)((char *)op + iov_at);
	op->len = mrail_wire_put_pkt_hdr(op->buf);
	op->len += mrail_wire_put_data(op->buf + op->len, recv_id, offset, len);
	mrail_list_init(&op->link);
	req->outstanding++;
	busy_tx_post(r, 0); /* charged when its RTS left (busy_tx_reserve) */
	int rc = pace_data(e, op, body, cnt);
	if (rc) {
		req->outstanding--;
		busy_tx_done(r);
		free(op);
		return rc;
	}
	return MRAIL_OK;
}

int rail_post_data(struct mrail_engine *e, struct rail *r,
		   struct mrail_request *req, uint64_t recv_id,
		   uint64_t offset, uint64_t len)
{
	ENGINE_ASSERT_LOCKED(e);
	struct iovec stack[16], *slice = stack;
	int max = req->iovcnt < 16 ? 16 : req->iovcnt, rc = MRAIL_OK;
	int per_frame = r->local->caps.max_body_iov;

	uint64_t step = pace_frame_max(e, r);
	if (step > r->local->caps.max_body)
		step = r->local->caps.max_body;
	if (len > step) {
		/* Larger than one frame may carry, or than pacing lets
		 * the driver hold at once: several frames. */
		for (uint64_t o = 0; o < len && rc == MRAIL_OK; o += step)
			rc = rail_post_data(e, r, req, recv_id, offset + o,
					    len - o < step ? len - o : step);
		return rc;
	}
	if (max > 16) {
		slice = malloc(sizeof *slice * (size_t)max);
		if (!slice)
			return MRAIL_ERR_NOMEM;
	}
	int n = mrail_iov_slice(req->iov, req->iovcnt, offset, len, slice, max);
	if (n < 0) {
		rc = MRAIL_ERR_INVALID;
	} else if (n <= per_frame) {
		rc = post_data_frame(e, r, req, recv_id, offset, len, slice, n);
	} else {
		/* The driver takes fewer entries per frame: one frame per
		 * group of entries. */
		uint64_t o = offset;
		for (int i = 0; i < n && rc == MRAIL_OK; i += per_frame) {
			int cnt = n - i < per_frame ? n - i : per_frame;
			uint64_t l = mrail_iov_length(slice + i, cnt);
			rc = post_data_frame(e, r, req, recv_id, o, l, slice + i,
					     cnt);
			o += l;
		}
	}
	if (slice != stack)
		free(slice);
	return rc;
}

int rail_is_idle(const struct rail *r)
{
	return r->state == RAIL_UP &&
	       rail_takes_packets(r, r->local->ops->ep_backlog(r->ep));
}

/* The prediction strategies see: the model (or the nominal figures),
 * scaled by what completions on this rail measured. */
static double view_predict(const struct mrail_rail_view *v, uint64_t bytes)
{
	double t = v->model ? mrail_predict(v->model, bytes)
			    : v->latency + (double)bytes / v->bandwidth;
	return v->time_scale * t;
}

unsigned gate_rail_views(struct gate *g, struct mrail_rail_view *views,
			 enum view_dir dir)
{
	unsigned n = 0;
	double now = 0;
	for (unsigned i = 0; i < g->nrails; i++) {
		struct rail *r = g->rails[i];
		if (!r || r->state != RAIL_UP)
			continue;
		if (n == 0)
			now = rail_now(r);
		struct mrail_rail_view *v = &views[n++];
		v->index = i;
		v->backlog_bytes = r->local->ops->ep_backlog(r->ep);
		v->idle = rail_takes_packets(r, v->backlog_bytes);
		v->bandwidth = r->bandwidth;
		v->latency = r->latency;
		v->eager_max = r->eager_max;
		v->model = r->model;
		v->time_scale = r->time_scale;
		v->predict = view_predict;
		v->busy_until = busy_until(r, dir, now);
	}
	return n;
}
