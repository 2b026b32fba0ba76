/*
 * Per-NIC pacing of payload chunks (pace.c, docs/pacing.md). A NIC's
 * connections to different peers would share it packet by packet if the
 * engine handed every chunk to the kernel at once: two messages to two
 * peers would both progress at half speed and end together. Pacing keeps
 * each NIC on one connection's chunks at a time and releases the others
 * in the order the sends were first answered, on every NIC alike, when
 * the chunks before them have left.
 */
#ifndef MRAIL_LIBMRAIL_PACE_H
#define MRAIL_LIBMRAIL_PACE_H

#include <stdint.h>
#include <sys/uio.h>

struct mrail_engine;
struct mrail_request;
struct send_op;
struct rail;

/* How many sends to other peers may wait for the rest of their answers
 * at once (pace_on_rtr): more go unordered. */
#define PACE_PENDING_MAX 16
/* One of them: a send answered on some NIC, not yet on all it will be. */
struct pace_pending {
	uint64_t id;     /* its rendezvous handle */
	uint64_t ticket; /* its place in the order */
	double since;    /* when its first answer came */
};

/* MRAIL_PACE (config.c): 1 (default) or 0. */
int pace_config(struct mrail_engine *e);
/* The receiver of send s asked for len more payload bytes (an RTR, before
 * its frames are posted): s takes its place in the order at its first. */
void pace_on_rtr(struct mrail_engine *e, struct mrail_request *s,
		 uint64_t len);
/* Hand a built OP_DATA op (body: cnt entries, copied if held) to its
 * rail's driver now or queue it behind other peers' chunks on its NIC.
 * Either way the op is the rail's: on failure nothing was taken. */
int pace_data(struct mrail_engine *e, struct send_op *op,
	      const struct iovec *body, int cnt);
/* rail_op_done of an OP_DATA op, before it is freed. */
void pace_op_done(struct mrail_engine *e, struct send_op *op);
/* The largest DATA frame to cut a chunk on r into (rail.c): a rail's
 * driver holds at most two of them, so what is sent on r after them
 * waits for little payload. UINT64_MAX when pacing is off. */
uint64_t pace_frame_max(const struct mrail_engine *e, const struct rail *r);
/* Chunks r holds back (not yet handed to the driver). */
int pace_rail_holds(const struct rail *r);
/* Timer pass: a NIC whose connection stopped moving lets the next go. */
void pace_tick(struct mrail_engine *e, double now);
/* r is disconnected: what it held is settled like what it had posted. */
void pace_rail_closed(struct mrail_engine *e, struct rail *r);

#endif
