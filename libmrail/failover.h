/*
 * Rail failover (failover.c, failover_rdv.c; docs/failover.md): a rail
 * that fails is marked down for its gate, what it carried is moved to the
 * other rails, and it is reconnected in the background. Only a gate
 * whose every rail stays down for MRAIL_RAIL_TIMEOUT fails.
 */
#ifndef MRAIL_LIBMRAIL_FAILOVER_H
#define MRAIL_LIBMRAIL_FAILOVER_H

#include <stddef.h>
#include <stdint.h>

#include "libmrail/wire.h"

struct mrail_engine;
struct mrail_request;
struct gate;
struct rail;
struct send_op;

/* Reads MRAIL_RAIL_TIMEOUT into e->rail_timeout. */
int failover_init(struct mrail_engine *e);
const char *rail_state_name(int state);

/* ---- packets (failover.c) ---- */
/* op is about to leave on r: numbered and kept if r is up (ACK
 * piggybacked when one is owed); undone by failover_pkt_unpost. */
void failover_pkt_post(struct rail *r, struct send_op *op);
void failover_pkt_unpost(struct rail *r, struct send_op *op);
/* An injected packet (rail_post_pieces): numbered in head like any,
 * the ACK owed written at ack unless it is NULL (returns its size, 0 if
 * none written), kept nowhere; failover_inject_commit once the driver
 * took it. */
size_t failover_inject_prepare(struct rail *r, void *head, void *ack);
void failover_inject_commit(struct rail *r, int acked);
/* op's send completed: 1 if it stays kept until acknowledged. */
int failover_pkt_done(struct send_op *op);
/* A packet arrived on r: checks its number (*counted: it has one). */
int failover_pkt_arrived(struct rail *r, const void *head, int *counted,
			 const char **why);
/* After a packet of r was processed: a standalone ACK if many are owed. */
void failover_after_packet(struct mrail_engine *e, struct rail *r);
int failover_on_ack(struct mrail_engine *e, struct rail *r, uint64_t count,
		    const char **why);
int failover_on_rail_down(struct mrail_engine *e, struct rail *via,
			  const struct mrail_wire_rail_down *d,
			  const char **why);
/* Kept packets back to the free list (the rail closes for good). */
void failover_rail_release(struct mrail_engine *e, struct rail *r);

/* ---- rail state ---- */
/* r failed: down and re-planned if its gate lives on (returns 1), else
 * 0 and the caller fails the gate as before. */
int failover_rail_fail(struct mrail_engine *e, struct rail *r,
		       const char *why);
/* r's connection was closed by the peer's end (status
 * MRAIL_ERR_PEER_CLOSED from the driver: EOF, reset, or a reconnection
 * refused). Fails r like failover_rail_fail; a gate whose every rail
 * ended so fails at once: its peer process is gone (docs/failover.md,
 * "Dead peer or dead link"). */
int failover_rail_closed(struct mrail_engine *e, struct rail *r,
			 const char *why);
/* A send or RDMA completion on r failed: r fails at the next tick (not
 * inside the driver's completion). Returns 1 if the error is absorbed. */
int failover_op_failed(struct rail *r);
/* Is r's operation status to be ignored (r is failing over)? */
int failover_rail_lost(const struct rail *r);
void failover_rail_up(struct mrail_engine *e, struct rail *r);
/* May a HELLO for rail `old`'s slot replace it (its failure settled)? */
int failover_may_replace(const struct rail *old);
/* The accepted connection `r` replaces `old` (kept until gate_free). */
void failover_takeover(struct mrail_engine *e, struct rail *old,
		       struct rail *r);
/* A rail of g that is up (prefer if it is), rotating; NULL if none. */
struct rail *failover_survivor(struct gate *g, const struct rail *prefer);
/* Post a packet of records that name their request and need no order
 * (SYNC_ACK, RDV_DONE, GET_FIN, CREDIT) on a rail of g that is up; while
 * none is, it waits on the gate for the first rail back, since dropping
 * it would leave the peer's request waiting for good once the gate
 * recovers. Takes op in every case (freed if g failed). */
void failover_post_notice(struct mrail_engine *e, struct gate *g,
			  struct send_op *op);
/* The gate failed or goes away: its owed notices are freed. */
void failover_drop_owed(struct mrail_engine *e, struct gate *g);
/* Timers: watchdog, reconnects, standalone ACKs, all-down deadline. */
void failover_tick(struct mrail_engine *e);

/* ---- rendezvous (failover_rdv.c) ---- */
enum rdv_range_kind { RANGE_TWO_SIDED, RANGE_GET, RANGE_PUT };

/* A byte range a receive asked for on one rail. */
struct rdv_range {
	uint64_t off, len, got;
	unsigned rail;
	uint32_t epoch;           /* of the rail's connection asked on */
	enum rdv_range_kind kind;
};

int rdv_range_add(struct mrail_request *r, const struct rail *rail,
		  enum rdv_range_kind kind, uint64_t off, uint64_t len);
/* A DATA frame of [off, off+len) starts: the range it continues, or NULL. */
struct rdv_range *rdv_range_for_data(struct mrail_request *r, uint64_t off,
				     uint64_t len);
struct rdv_range *rdv_range_for_put(struct mrail_request *r, uint64_t off,
				    uint64_t len);
void rdv_range_got_get(struct mrail_request *r, unsigned rail, uint64_t off,
		       uint64_t len);
/* Ranges of receives asked on a connection that is gone (its rail down,
 * or reconnected since) and that did not all arrive are asked again on
 * the gate's rails that are up. */
void rdv_replan(struct mrail_engine *e, struct gate *g);
void rdv_on_done(struct mrail_engine *e, struct rail *rail,
		 const struct mrail_wire_rdv_done *d);

#endif
