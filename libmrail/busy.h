/*
 * Busy-until accounting (busy.c, docs/split.md): when each rail and each
 * NIC is predicted to be free, in each direction, and the rail views
 * strategies decide on.
 */
#ifndef MRAIL_LIBMRAIL_BUSY_H
#define MRAIL_LIBMRAIL_BUSY_H

#include <stdint.h>

struct rail;
struct gate;
struct mrail_rail_view;
struct mrail_rail_stats;

/* A rendezvous chunk this host asked for on a rail (libmrail/busy.c). */
struct rx_expect {
	uint64_t bytes, left;
	double posted;            /* when its RTR left */
	double due;               /* predicted arrival of its last byte */
	int shared;               /* other traffic on the NICs meanwhile */
};

/* Views of a gate's rails for a decision about sending (eager packets) or
 * receiving (a rendezvous payload): busy_until differs. */
enum view_dir { VIEW_SEND, VIEW_RECV };

/* libmrail/busy.c: busy-until accounting. */
void busy_rail_init(struct rail *r);
void busy_rail_close(struct rail *r);
void busy_rx_expect(struct rail *r, uint64_t bytes);
void busy_rx_arrived(struct rail *r, uint64_t bytes);
/* A plan left this rail out: its time scale fades towards 1. */
void busy_scale_fade(struct rail *r);
void busy_tx_post(struct rail *r, uint64_t charge_bytes);
void busy_tx_done(struct rail *r);
void busy_tx_reserve(struct gate *g, uint64_t bytes);
double busy_tx_left(const struct rail *r, double now);
/* busy_tx_left minus this rail's own share: what other peers queued. */
double busy_tx_others(const struct rail *r, double now);
void busy_remote_tx(struct gate *g, const uint32_t *us, unsigned n);
double busy_until(const struct rail *r, enum view_dir dir, double now);
/* The rail's counters, busy periods still open counted up to now. */
void rail_read_stats(const struct rail *r, struct mrail_rail_stats *st);
unsigned gate_rail_views(struct gate *g, struct mrail_rail_view *views,
			 enum view_dir dir);

#endif
