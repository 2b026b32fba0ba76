/*
 * Eager flow control (credits.c, docs/flow-control.md). A receiver grants
 * each peer bytes of eager payload with CREDIT records; a sender sends a
 * message eagerly only within the credit it holds, else as an RTS (its
 * payload waits in the sender's buffer). So the eager data a receiver
 * buffers for receives not yet posted stays within its caps.
 */
#ifndef MRAIL_LIBMRAIL_CREDITS_H
#define MRAIL_LIBMRAIL_CREDITS_H

#include <stdint.h>

struct mrail_engine;
struct gate;
struct send_op;

#define MRAIL_UNEXPECTED_MAX_DEFAULT ((size_t)64 << 20)
#define MRAIL_UNEXPECTED_PEER_MAX_DEFAULT ((size_t)4 << 20)
#define MRAIL_UNEXPECTED_LIMIT ((uint64_t)1 << 40)

/* Sender side. Can `len` more bytes go eagerly once `spent` of the
 * credit is taken by messages packed before it? */
static inline int credit_allows(uint64_t credit, uint64_t spent, uint64_t len)
{
	return credit >= spent && credit - spent >= len;
}
void credit_spend(struct gate *g, uint64_t len);
/* A CREDIT record from the peer; MRAIL_ERR_PROTO with *why if absurd. */
int credit_on_grant(struct gate *g, uint64_t bytes, const char **why);

/* Receiver side. An eager message of len bytes arrived: it must be
 * within what we granted (MRAIL_ERR_PROTO with *why otherwise). */
int credit_on_eager(struct mrail_engine *e, struct gate *g, uint64_t len,
		    const char **why);
/* Eager bytes kept as unexpected (or early), and given up again. */
void credit_hold(struct mrail_engine *e, struct gate *g, uint64_t len);
void credit_release(struct mrail_engine *e, struct gate *g, uint64_t len);
/* Grant what room there is in a packet of its own, once it is worth one
 * (at gate up, after arrivals, after unexpected data is consumed). */
void credit_grant(struct mrail_engine *e, struct gate *g);
/* Ride along in a packet being built for g, when it fits (`room`: bytes
 * the packet must keep free for its first message). */
void credit_piggyback(struct mrail_engine *e, struct gate *g,
		      struct send_op *op, size_t room);
/* The same into a packet built elsewhere: writes a CREDIT record at `at`
 * when one is due; returns its size or 0. */
size_t credit_piggyback_at(struct mrail_engine *e, struct gate *g, void *at);
/* Room for pulling buffered payloads ahead of their match (pull.c). */
uint64_t credit_room_for_pull(struct mrail_engine *e,
			      const struct gate *g);
/* The gate failed: what it was granted returns to the engine. */
void credit_gate_fail(struct mrail_engine *e, struct gate *g);

#endif
