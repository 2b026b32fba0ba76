/*
 * Per-NIC pacing of payload chunks (pace.c, docs/pacing.md). A NIC's
 * connections to different peers would share it packet by packet if the
 * engine handed every chunk to the kernel at once: two messages to two
 * peers would both progress at half speed and end together. Pacing keeps
 * each NIC on one connection's chunks at a time and releases the others
 * in the order they came (the order the receivers' plans assumed),
 * when the driver reports the chunks before them complete.
 */
#ifndef MRAIL_LIBMRAIL_PACE_H
#define MRAIL_LIBMRAIL_PACE_H

#include <stdint.h>
#include <sys/uio.h>

struct mrail_engine;
struct send_op;
struct rail;

/* MRAIL_PACE (config.c): 1 (default) or 0. */
int pace_config(struct mrail_engine *e);
/* Hand a built OP_DATA op (body: cnt entries, copied if held) to its
 * rail's driver now or queue it behind other peers' chunks on its NIC.
 * Either way the op is the rail's: on failure nothing was taken. */
int pace_data(struct mrail_engine *e, struct send_op *op,
	      const struct iovec *body, int cnt);
/* rail_op_done of an OP_DATA op, before it is freed. */
void pace_op_done(struct mrail_engine *e, struct send_op *op);
/* Chunks r holds back (not yet handed to the driver). */
int pace_rail_holds(const struct rail *r);
/* Timer pass: a NIC whose connection stopped moving lets the next go. */
void pace_tick(struct mrail_engine *e, double now);
/* r is disconnected: what it held is settled like what it had posted. */
void pace_rail_closed(struct mrail_engine *e, struct rail *r);

#endif
