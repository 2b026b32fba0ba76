/*
 * Busy-until accounting: when each rail is predicted to be free, in each
 * direction, for the strategies' views (docs/split.md, "Busy-until").
 *
 * Receiving: the receiver plans rendezvous payloads, so it knows every
 * chunk it asked for. Each NIC (local rail) keeps the predicted moment
 * its requested chunks will all have arrived; each rail of a gate keeps
 * the chunks it requested, in order (the sender answers RTRs in order on
 * the rail they came on, and TCP keeps that order). When a chunk
 * completes, the NIC's schedule is shifted by the difference between its
 * predicted and real completion, and the ratio real/predicted duration
 * updates the rail's time scale, which multiplies every later prediction.
 *
 * Sending: each NIC keeps the predicted moment what this host queued on
 * it will have left: eager packets when posted, and for a rendezvous
 * request, as soon as its RTS leaves, the payload spread over the gate's
 * rails in proportion to their bandwidth, the same time on each (the
 * receiver plans the real split later; reserving now lets a request posted
 * next, to any peer, see the load). Each rail also keeps its own share of that queue. With every
 * rendezvous request the sender reports, per rail, the part of its NIC's
 * queue that *other* peers put there (a BUSY record, docs/wire.md): the
 * receiver already counts, and corrects from completions, what it asked
 * of this sender, and only the sender knows about its other peers. A TCP
 * send completes when the kernel has the bytes, not when they are on the
 * wire, so the sending side is predicted only: reporting this gate's own
 * share too would hand the receiver an uncorrected guess (measured: it cut
 * 3-rail streaming at 512 KiB from 212 to 168 MB/s).
 */
#include "libmrail/engine.h"
#include "sampler/predict.h"
#include "util/clock.h"

#include <stdlib.h>
#include <string.h>

/* Chunks predicted to take less than this many latencies say more about
 * latency (and the RTR's trip) than about the rail's speed. */
#define BUSY_LEARN_LATENCIES 16
/* The same for a chunk that ran back to back with the one before it
 * (learn()): its transfer alone is measured. */
#define BUSY_LEARN_QUEUED_LATENCIES 12
/* Weight of the newest measurement in the time scale, and its bounds: a
 * correction of the model, not a replacement (with a weight of 1/4 and
 * bounds 0.25..4, two peers sharing a sender's NICs drove scales to 4 and
 * plans to one rail each). */
#define BUSY_LEARN_WEIGHT 0.125
#define BUSY_SCALE_MIN 0.5
#define BUSY_SCALE_MAX 2.0
/* A rail left out of a plan keeps no stale correction: its scale moves
 * this far back towards 1 (what kept it out may have been the scale). */
#define BUSY_SCALE_FADE 0.25

static double predict_raw(const struct rail *r, uint64_t bytes)
{
	if (r->model)
		return mrail_predict(r->model, bytes);
	return r->latency + (double)bytes / r->bandwidth;
}

/* How long `bytes` occupy the rail: the transfer, not the latency (which
 * overlaps with what follows). */
static double occupancy(const struct rail *r, uint64_t bytes)
{
	double t = predict_raw(r, bytes) - r->latency;
	return r->time_scale * (t > 0 ? t : 0);
}

static double later(double a, double b)
{
	return a > b ? a : b;
}

void busy_rail_init(struct rail *r)
{
	r->time_scale = 1.0;
}

/* ---- receiving ---------------------------------------------------------- */

static int rx_grow(struct rail *r)
{
	unsigned cap = r->rx_cap ? 2 * r->rx_cap : 16;
	struct rx_expect *q = malloc(sizeof *q * cap);
	if (!q)
		return -1;
	for (unsigned i = 0; i < r->rx_count; i++)
		q[i] = r->rx_q[(r->rx_head + i) % r->rx_cap];
	free(r->rx_q);
	r->rx_q = q;
	r->rx_cap = cap;
	r->rx_head = 0;
	return 0;
}

void busy_rx_expect(struct rail *r, uint64_t bytes)
{
	struct local_rail *l = r->local;
	double now = rail_now(r);

	if (r->rx_count == r->rx_cap && rx_grow(r))
		return; /* out of memory: the rail just looks less busy */
	double start = later(now, l->rx_free_at);
	l->rx_free_at = start + occupancy(r, bytes);
	struct rx_expect *x = &r->rx_q[(r->rx_head + r->rx_count) % r->rx_cap];
	x->bytes = bytes;
	x->left = bytes;
	x->posted = now;
	x->due = l->rx_free_at;
	/* Other peers' chunks on this NIC, or the sender's NIC busy with
	 * other peers: this chunk's duration will not be the rail's alone. */
	x->shared = l->rx_pending > r->rx_count || r->remote_tx_free_at > now;
	if (r->rx_count++ == 0)
		r->rx_busy_since = now;
	l->rx_pending++;
}

static double bounded(double s)
{
	return s < BUSY_SCALE_MIN ? BUSY_SCALE_MIN
	       : s > BUSY_SCALE_MAX ? BUSY_SCALE_MAX : s;
}

/*
 * Keep a gate's scales relative: their bandwidth-weighted mean is 1. What
 * slows every rail alike (another peer's traffic the receiver cannot see,
 * the sender's CPU) cancels out and leaves the split as it was; what the
 * scales are for, one rail's model being off against the others', stays.
 */
static void normalize(struct gate *g)
{
	double sum = 0, wsum = 0;
	for (unsigned i = 0; i < g->nrails; i++) {
		struct rail *x = g->rails[i];
		if (x && x->state == RAIL_UP && x->bandwidth > 0) {
			sum += x->bandwidth * x->time_scale;
			wsum += x->bandwidth;
		}
	}
	if (!(sum > 0 && wsum > 0))
		return;
	double mean = sum / wsum;
	for (unsigned i = 0; i < g->nrails; i++)
		if (g->rails[i] && g->rails[i]->state == RAIL_UP)
			g->rails[i]->time_scale =
				bounded(g->rails[i]->time_scale / mean);
}

/*
 * A chunk requested while the one before it was still arriving (its RTR
 * and first byte had time to be there before the rail came free) ran
 * back to back with it: from that chunk's completion to its own is the
 * transfer alone, compared with the occupancy, and 12 latencies of it are
 * enough to measure (at 8, the 3.5 KiB chunks of 32 KiB messages on that
 * rail learned their arrival jitter: 183-192 MB/s instead of 209).
 * Otherwise (the first chunk of a busy period) the duration includes the
 * RTR's trip, and only chunks of many latencies say something about
 * speed. Without the first rule a slow rail's chunks in a window of
 * 64 KiB messages (6.4 KiB of 64 KiB on 200 Mbit/s, just under 16
 * latencies) never taught their rail, while the normalisation below moved
 * its scale by the other rails' common error each time they learned: to
 * the 0.5 bound within one window, a doubled share in the next, and
 * 3-rail streaming at 64 KiB at 151-159 MB/s instead of 214 (every other
 * window held back by that rail; docs/fig8.md, 2026-12-07).
 */
static void learn(struct rail *r, const struct rx_expect *x, double now)
{
	/* Chunks that shared a NIC with other peers' traffic measure the
	 * sharing, which busy-until counts already: not the rail's speed. */
	if (x->shared || r->local->rx_pending > r->rx_count)
		return;
	double pred = predict_raw(r, x->bytes);
	double start = later(x->posted, r->rx_last_done);
	double least = BUSY_LEARN_LATENCIES * r->latency;
	if (r->rx_last_done > 0 &&
	    x->posted + 2 * r->latency <= r->rx_last_done) {
		pred -= r->latency;
		least = BUSY_LEARN_QUEUED_LATENCIES * r->latency;
	}
	if (!(pred >= least) || !(pred > 0))
		return;
	double ratio = (now - start) / pred;
	if (!(ratio > 0))
		return;
	r->time_scale = bounded((1 - BUSY_LEARN_WEIGHT) * r->time_scale +
				BUSY_LEARN_WEIGHT * ratio);
	if (r->gate)
		normalize(r->gate);
}

void busy_rx_arrived(struct rail *r, uint64_t bytes)
{
	struct local_rail *l = r->local;
	double now = rail_now(r);

	while (bytes > 0 && r->rx_count > 0) {
		struct rx_expect *x = &r->rx_q[r->rx_head];
		uint64_t take = bytes < x->left ? bytes : x->left;
		x->left -= take;
		bytes -= take;
		if (x->left > 0)
			break;
		learn(r, x, now);
		/* Rails made alone (tests/unit/test_busy.c) have no engine. */
		if (r->engine)
			trace_arrive(r->engine, r, x->bytes, x->due);
		/* What is still expected shifts by this chunk's error. */
		l->rx_free_at = later(now, l->rx_free_at + (now - x->due));
		r->rx_last_done = now;
		r->rx_head = (r->rx_head + 1) % r->rx_cap;
		l->rx_pending--;
		if (--r->rx_count == 0)
			r->stats.rx_busy_seconds += now - r->rx_busy_since;
	}
	if (l->rx_pending == 0)
		l->rx_free_at = now;
}

void busy_scale_fade(struct rail *r)
{
	r->time_scale = 1.0 + (1.0 - BUSY_SCALE_FADE) * (r->time_scale - 1.0);
}

/* The rail is gone: what it expected will not come. */
void busy_rail_close(struct rail *r)
{
	struct local_rail *l = r->local;
	double now = mrail_now();

	if (r->rx_count > 0)
		r->stats.rx_busy_seconds += now - r->rx_busy_since;
	l->rx_pending -= r->rx_count < l->rx_pending ? r->rx_count
						      : l->rx_pending;
	r->rx_count = 0;
	free(r->rx_q);
	r->rx_q = NULL;
	r->rx_cap = 0;
	r->rx_head = 0;
	if (r->tx_ops > 0)
		r->stats.tx_busy_seconds += now - r->tx_busy_since;
	r->tx_ops = 0;
}

/* ---- sending ------------------------------------------------------------ */

/* The NIC's queue, and the share of it this rail (this peer) put there. */
static void tx_charge(struct rail *r, double now, double seconds)
{
	struct local_rail *l = r->local;
	l->tx_free_at = later(now, l->tx_free_at) + seconds;
	r->tx_own_free_at = later(now, r->tx_own_free_at) + seconds;
}

void busy_tx_post(struct rail *r, uint64_t charge_bytes)
{
	double now = rail_now(r);
	if (r->tx_ops++ == 0)
		r->tx_busy_since = now;
	if (charge_bytes > 0)
		tx_charge(r, now, occupancy(r, charge_bytes));
}

void busy_tx_done(struct rail *r)
{
	if (r->tx_ops > 0 && --r->tx_ops == 0)
		r->stats.tx_busy_seconds += rail_now(r) - r->tx_busy_since;
}

void busy_tx_reserve(struct gate *g, uint64_t bytes)
{
	double sum = 0, now = mrail_now();
	for (unsigned i = 0; i < g->nrails; i++)
		if (g->rails[i] && g->rails[i]->state == RAIL_UP)
			sum += g->rails[i]->bandwidth;
	if (!(sum > 0))
		return;
	for (unsigned i = 0; i < g->nrails; i++) {
		struct rail *r = g->rails[i];
		if (!r || r->state != RAIL_UP)
			continue;
		/* The same time on every rail: bytes / (sum of bandwidths).
		 * A per-size prediction of each share would make the slow
		 * rails look free early wherever their profile is
		 * optimistic for medium sizes, for a split that is only a
		 * guess anyway. */
		tx_charge(r, now, (double)bytes / sum);
	}
}

double busy_tx_left(const struct rail *r, double now)
{
	return later(0, r->local->tx_free_at - now);
}

double busy_tx_others(const struct rail *r, double now)
{
	return later(0, busy_tx_left(r, now) - later(0, r->tx_own_free_at - now));
}

void busy_remote_tx(struct gate *g, const uint32_t *us, unsigned n)
{
	double now = mrail_now();
	for (unsigned i = 0; i < n && i < g->nrails; i++)
		if (g->rails[i])
			g->rails[i]->remote_tx_free_at = now + us[i] * 1e-6;
}

/* ---- views -------------------------------------------------------------- */

double busy_until(const struct rail *r, enum view_dir dir, double now)
{
	if (dir == VIEW_SEND)
		return busy_tx_left(r, now);
	return later(0, later(r->local->rx_free_at, r->remote_tx_free_at) - now);
}

void rail_read_stats(const struct rail *r, struct mrail_rail_stats *st)
{
	double now = mrail_now();
	*st = r->stats;
	if (r->rx_count > 0)
		st->rx_busy_seconds += now - r->rx_busy_since;
	if (r->tx_ops > 0)
		st->tx_busy_seconds += now - r->tx_busy_since;
	st->time_scale = r->time_scale;
	if (r->state == RAIL_UP)
		st->up_seconds += now - r->up_since;
	else if (r->state == RAIL_DOWN || r->reconnecting)
		st->down_seconds += now - r->down_since;
}
