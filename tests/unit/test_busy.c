/*
 * Busy-until accounting (libmrail/busy.c) on hand-made rails: requested
 * chunks make a NIC busy for their predicted time, completions correct the
 * schedule and the time scale, the sender's reported busy time counts on
 * the receiving side, and close forgets what will not come.
 */
#include "../check.h"
#include "libmrail/engine.h"
#include "util/clock.h"

#include <math.h>
#include <string.h>

#define MB 1000000.0

static void make_rail(struct rail *r, struct local_rail *l, double bw)
{
	memset(r, 0, sizeof *r);
	r->local = l;
	r->bandwidth = bw;
	r->latency = 10e-6;
	busy_rail_init(r);
}

static int near(double a, double b, double tol)
{
	return fabs(a - b) <= tol;
}

/* Spin until `t` (CLOCK_MONOTONIC seconds): busy.c reads the real clock. */
static void spin_until(double t)
{
	while (mrail_now() < t)
		;
}

/*
 * Windows of messages split over a fast and a slow rail, both streaming at
 * half the speed their models say (a ping-pong profile of a shaped link):
 * each window requests 2 chunks of 400 KB on the fast rail and 4 of 20 KB on
 * the slow one at once. The slow rail's chunks are predicted under 16
 * latencies (717 us, latency 50 us), so only its chunks that ran back to back
 * with the one before can teach it; they must, or the fast rail's learning,
 * normalised over the gate, drives the slow rail's scale to its bound (0.5)
 * and doubles its share of the next plan (docs/fig8.md, 2026-12-07).
 */
static void queued_small_chunks_learn(void)
{
	struct local_rail lf, ls;
	struct rail f, sl;
	struct gate g;
	memset(&lf, 0, sizeof lf);
	memset(&ls, 0, sizeof ls);
	memset(&g, 0, sizeof g);
	make_rail(&f, &lf, 300 * MB);
	make_rail(&sl, &ls, 30 * MB);
	f.latency = sl.latency = 50e-6;
	f.state = sl.state = RAIL_UP;
	g.nrails = 2;
	g.rails[0] = &f;
	g.rails[1] = &sl;
	f.gate = sl.gate = &g;
	for (int w = 0; w < 6; w++) {
		double t0 = mrail_now();
		for (int k = 0; k < 2; k++)
			busy_rx_expect(&f, 400000);
		for (int k = 0; k < 4; k++)
			busy_rx_expect(&sl, 20000);
		/* Arrivals at twice the predicted occupancy, in time order:
		 * slow every 1.33 ms, fast every 2.67 ms. */
		for (int k = 1; k <= 4; k++) {
			spin_until(t0 + 20e-6 + k * 1.3334e-3);
			busy_rx_arrived(&sl, 20000);
			if (k % 2 == 0)
				busy_rx_arrived(&f, 400000);
		}
	}
	/* Both rails are off by the same factor: relative to each other
	 * their models are right, and so the scales stay near each other. */
	CHECK(sl.time_scale > 0.75);
	CHECK(sl.time_scale / f.time_scale > 0.75 &&
	      sl.time_scale / f.time_scale < 1.33);
	busy_rail_close(&f);
	busy_rail_close(&sl);
}

int main(void)
{
	struct local_rail l;
	struct rail r, r2;
	memset(&l, 0, sizeof l);
	make_rail(&r, &l, 100 * MB); /* 100 MB/s: 1 MB takes 10 ms */
	make_rail(&r2, &l, 100 * MB);
	CHECK(r.time_scale == 1.0);

	/* Receiving: two chunks of 1 MB on one NIC (two gates) queue up. */
	double now = mrail_now();
	CHECK(busy_until(&r, VIEW_RECV, now) == 0);
	busy_rx_expect(&r, 1000000);
	busy_rx_expect(&r2, 1000000);
	now = mrail_now();
	CHECK(near(busy_until(&r, VIEW_RECV, now), 0.020, 0.002));
	CHECK(near(busy_until(&r2, VIEW_RECV, now), 0.020, 0.002));
	CHECK(busy_until(&r, VIEW_SEND, now) == 0); /* other direction */

	/* The first arrives at once, far earlier than predicted: the
	 * remaining schedule moves earlier by the error; the NIC was shared
	 * with another peer's chunk, so the time scale learns nothing. */
	busy_rx_arrived(&r, 600000);
	busy_rx_arrived(&r, 400000);
	CHECK(r.time_scale == 1.0);
	now = mrail_now();
	CHECK(busy_until(&r2, VIEW_RECV, now) < 0.012);
	CHECK(r.rx_count == 0 && r2.rx_count == 1 && l.rx_pending == 1);
	struct mrail_rail_stats st;
	double before;
	rail_read_stats(&r, &st);
	CHECK(st.rx_busy_seconds > 0 && st.rx_busy_seconds < 0.5);
	CHECK(st.time_scale == r.time_scale);

	/* Alone on its NIC, a chunk far faster than predicted lowers the
	 * scale by the learning weight (1/8), within its bounds; a plan that
	 * leaves the rail out fades the scale back towards 1. */
	struct local_rail l2;
	struct rail solo;
	memset(&l2, 0, sizeof l2);
	make_rail(&solo, &l2, 100 * MB);
	busy_rx_expect(&solo, 1000000);
	busy_rx_arrived(&solo, 1000000);
	CHECK(solo.time_scale < 1.0 && solo.time_scale >= 0.875 - 1e-9);
	for (int i = 0; i < 40; i++) {
		busy_rx_expect(&solo, 1000000);
		busy_rx_arrived(&solo, 1000000);
	}
	CHECK(solo.time_scale == 0.5); /* the lower bound */
	busy_scale_fade(&solo);
	CHECK(near(solo.time_scale, 0.625, 1e-9));
	/* The sender busy with other peers: no learning either. */
	before = solo.time_scale;
	solo.remote_tx_free_at = mrail_now() + 1.0;
	busy_rx_expect(&solo, 1000000);
	busy_rx_arrived(&solo, 1000000);
	CHECK(solo.time_scale == before);
	busy_rail_close(&solo);

	/* Small chunks (under 16 latencies: 16 KB here) say nothing about
	 * speed: no learning. */
	before = r.time_scale;
	busy_rx_expect(&r, 4096);
	busy_rx_arrived(&r, 4096);
	CHECK(r.time_scale == before);

	/* Many chunks: the ring grows and stays in order. */
	for (int i = 0; i < 100; i++)
		busy_rx_expect(&r, 1000 + (uint64_t)i);
	for (int i = 0; i < 100; i++) {
		CHECK(r.rx_q[r.rx_head].bytes == 1000 + (uint64_t)i);
		busy_rx_arrived(&r, 1000 + (uint64_t)i);
	}
	CHECK(r.rx_count == 0);
	/* More bytes than expected (a confused peer) cannot underflow. */
	busy_rx_arrived(&r, 12345);
	CHECK(r.rx_count == 0);

	/* The last pending chunk gone with its rail: the NIC is free. */
	busy_rail_close(&r2);
	CHECK(l.rx_pending == 0 && r2.rx_q == NULL);
	busy_rx_expect(&r, 1000);
	busy_rx_arrived(&r, 1000);
	now = mrail_now();
	CHECK(busy_until(&r, VIEW_RECV, now) == 0);

	/* Sending: eager bytes charge the NIC, DATA frames do not (their
	 * request reserved them), completions end the busy period. */
	make_rail(&r2, &l, 100 * MB);
	busy_tx_post(&r2, 1000000);
	busy_tx_post(&r2, 0);
	now = mrail_now();
	CHECK(near(busy_until(&r2, VIEW_SEND, now), 0.010, 0.002));
	busy_tx_done(&r2);
	busy_tx_done(&r2);
	busy_tx_done(&r2); /* one too many: ignored */
	CHECK(r2.tx_ops == 0);
	rail_read_stats(&r2, &st);
	CHECK(st.tx_busy_seconds >= 0 && st.tx_busy_seconds < 0.5);

	/* A request reserves its payload over the gate's rails by
	 * bandwidth; the receiver counts what the sender reports. */
	struct local_rail la, lb;
	struct rail a, b;
	memset(&la, 0, sizeof la);
	memset(&lb, 0, sizeof lb);
	make_rail(&a, &la, 300 * MB);
	make_rail(&b, &lb, 100 * MB);
	a.state = b.state = RAIL_UP;
	struct gate g;
	memset(&g, 0, sizeof g);
	g.nrails = 2;
	g.rails[0] = &a;
	g.rails[1] = &b;
	busy_tx_reserve(&g, 4000000); /* 3 MB + 1 MB: 10 ms each */
	now = mrail_now();
	CHECK(near(busy_tx_left(&a, now), 0.010, 0.002));
	CHECK(near(busy_tx_left(&b, now), 0.010, 0.002));
	/* The sender reports to a peer only what other peers queued. */
	CHECK(busy_tx_others(&a, now) < 1e-4);
	struct rail a2;
	make_rail(&a2, &la, 300 * MB); /* another peer, same NIC */
	CHECK(near(busy_tx_others(&a2, now), 0.010, 0.002));
	busy_rail_close(&a2);
	const uint32_t us[3] = {50000, 0, 99};
	busy_remote_tx(&g, us, 3); /* one entry too many: ignored */
	now = mrail_now();
	CHECK(near(busy_until(&a, VIEW_RECV, now), 0.050, 0.002));
	CHECK(busy_until(&b, VIEW_RECV, now) == 0);
	/* Scales of a gate stay relative: a rail measured fast drops below
	 * the other, and their bandwidth-weighted mean stays 1. */
	a.gate = b.gate = &g;
	a.remote_tx_free_at = b.remote_tx_free_at = 0;
	busy_rx_expect(&a, 3000000);
	busy_rx_arrived(&a, 3000000);
	CHECK(a.time_scale < b.time_scale);
	CHECK(b.time_scale > 1.0);
	CHECK(near((300 * a.time_scale + 100 * b.time_scale) / 400, 1.0, 1e-9));
	busy_rail_close(&r);
	busy_rail_close(&r2);
	busy_rail_close(&a);
	busy_rail_close(&b);
	queued_small_chunks_learn();
	puts("test_busy: ok");
	return 0;
}
