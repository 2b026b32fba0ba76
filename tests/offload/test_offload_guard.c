/*
 * The measured guard on equation (1) (libmrail/offload/guard.c): it lets
 * the model decide until both ways of sending a size class have samples;
 * then a class is vetoed unless the model's gain from the rails working
 * at once, less what parts measured beyond whole on this side, is still
 * 3 % of the whole time; a vetoed class is probed every 256 messages
 * unless the workers were parked; the strategy is told the measured cost
 * in place of T_O once a class is judged (guard_handoff).
 */
#include "libmrail/offload/offload.h"
#include "../check.h"

#include <stdio.h>

static void samples(struct offload_guard *g, uint64_t len, double whole,
		    double parts, int n)
{
	for (int i = 0; i < n; i++) {
		guard_note_whole(g, len, whole);
		guard_note_parts(g, len, parts);
	}
}

int main(void)
{
	struct offload_guard g;
	guard_init(&g);
	CHECK(g.copy_bw > 1e8);
	g.copy_bw = 1e30; /* no receiver copy: the figures below are exact */

	/* Nothing known: the model decides. */
	CHECK(guard_allows(&g, 4096, 1e-6, 10e-6) == 1);
	/* Parts sampled, whole not yet: whole must be sampled first. */
	for (int i = 0; i < 8; i++)
		guard_note_parts(&g, 4096, 10e-6);
	CHECK(guard_allows(&g, 4096, 1e-6, 10e-6) == 0);
	CHECK(guard_wants_whole(&g, 4096));

	/* Loopback-like: parts cost 8 us more on this side, the rails would
	 * gain 1 us: vetoed. The same class on slow NICs, where the rails at
	 * once gain 75 us of 260: allowed. */
	samples(&g, 4096, 2e-6, 10e-6, 8);
	CHECK(guard_allows(&g, 4096, 1e-6, 10e-6) == 0);
	CHECK(guard_allows(&g, 5000, 1e-6, 10e-6) == 0); /* same class */
	CHECK(guard_allows(&g, 4096, 75e-6, 260e-6) == 1);
	/* Another class is judged on its own. */
	CHECK(guard_allows(&g, 8192, 1e-6, 10e-6) == 1);
	/* Gain left after the penalty below 3 % of the whole time: no. */
	samples(&g, 65536, 20e-6, 21e-6, 8);
	CHECK(guard_allows(&g, 65536, 3.9e-6, 100e-6) == 0);
	CHECK(guard_allows(&g, 65536, 4.1e-6, 100e-6) == 1);

	/* The receiver's staging copy counts against parts. */
	struct offload_guard h;
	guard_init(&h);
	h.copy_bw = 1e9; /* 1 GB/s: 64 KiB = 65.5 us */
	samples(&h, 65536, 20e-6, 20e-6, 8);
	CHECK(guard_allows(&h, 65536, 50e-6, 100e-6) == 0);
	CHECK(guard_allows(&h, 65536, 80e-6, 100e-6) == 1);

	/* A vetoed class is probed once every 256 of its messages. */
	unsigned probes = 0;
	for (int i = 0; i < 1024; i++)
		probes += guard_allows(&g, 4096, 1e-6, 10e-6) == 2;
	CHECK_EQ(probes, 4);
	/* Parked workers: verdicts stand, no probes. */
	g.parked = 1;
	probes = 0;
	for (int i = 0; i < 1024; i++)
		probes += guard_allows(&g, 4096, 1e-6, 10e-6) != 0;
	CHECK_EQ(probes, 0);

	/* What the strategy is told handing off costs: T_O until a class
	 * is judged, then the measured extra cost of parts plus the margin
	 * (so it declines by itself), T_O again for one message in 256 (a
	 * probe), never a probe with the workers parked. */
	struct offload_guard k;
	int probe;
	guard_init(&k);
	k.copy_bw = 1e30;
	CHECK(guard_handoff(&k, 4096, 3e-6, 10e-6, &probe) == 3e-6 && !probe);
	samples(&k, 4096, 2e-6, 10e-6, 8); /* parts cost 8 us more */
	double told = guard_handoff(&k, 4096, 3e-6, 10e-6, &probe);
	CHECK(told > 8.29e-6 && told < 8.31e-6 && !probe);
	samples(&k, 16384, 10e-6, 11e-6, 8); /* 1 us more: below T_O */
	CHECK(guard_handoff(&k, 16384, 3e-6, 10e-6, &probe) == 3e-6);
	probes = 0;
	for (int i = 0; i < 1023; i++) {
		told = guard_handoff(&k, 4096, 3e-6, 10e-6, &probe);
		CHECK(probe ? told == 3e-6 : told > 8e-6);
		probes += (unsigned)probe;
	}
	CHECK_EQ(probes, 4);
	k.parked = 1;
	for (int i = 0; i < 1024; i++) {
		guard_handoff(&k, 4096, 3e-6, 10e-6, &probe);
		CHECK(!probe);
	}

	/* Once a class is known, one whole message in 16 is timed. */
	unsigned timed = 0;
	for (int i = 0; i < 160; i++)
		timed += (unsigned)guard_wants_whole(&g, 4096);
	CHECK_EQ(timed, 10);
	printf("offload guard: ok\n");
	return 0;
}
