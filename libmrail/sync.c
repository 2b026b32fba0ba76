/*
 * Synchronous sends (MPI_Ssend). A rendezvous send already completes only
 * after the receiver matched it (its first RTR proves the match); a small
 * one travels as EAGER_SYNC and completes when the receiver, having
 * matched it, answers SYNC_ACK with the sender's id (docs/wire.md).
 */
#include "libmrail/engine.h"
#include "util/log.h"

/* One small packet on the first rail that is up (or the first back):
 * the ack is not ordered with anything, it names its request. */
void sync_ack_send(struct mrail_engine *e, struct gate *g, uint64_t send_id)
{
	if (g->state != GATE_UP)
		return; /* the sender's request fails with the gate */
	struct send_op *op = packet_get(e);
	if (!op) {
		gate_fail(e, g, MRAIL_ERR_NOMEM, "no memory for a SYNC_ACK");
		return;
	}
	op->len += mrail_wire_put_sync_ack(op->buf + op->len, send_id);
	failover_post_notice(e, g, op);
}

void sync_on_ack(struct mrail_engine *e, struct rail *rail, uint64_t send_id)
{
	struct mrail_request *s = handle_lookup(e, send_id);
	if (!s || s->kind != REQ_SEND || s->phase != REQ_SYNC_WAIT ||
	    s->gate != rail->gate) {
		gate_fail(e, rail->gate, MRAIL_ERR_PROTO,
			  "SYNC_ACK for an unknown or not synchronous send; "
			  "connection dropped");
		return;
	}
	s->status.length = s->len;
	request_complete(e, s, MRAIL_OK);
}
