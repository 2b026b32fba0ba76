/*
 * The measured guard on equation (1) (libmrail/offload/guard.c): it lets
 * the model decide until both ways of sending a size class have samples,
 * then vetoes the class when parts were not 3 % faster than whole,
 * probing it again every 256 messages unless the workers were parked.
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

	/* Nothing known: the model decides. */
	CHECK(guard_allows(&g, 4096) == 1);
	/* Parts sampled, whole not yet: whole must be sampled first. */
	for (int i = 0; i < 8; i++)
		guard_note_parts(&g, 4096, 10e-6);
	CHECK(guard_allows(&g, 4096) == 0);
	CHECK(guard_wants_whole(&g, 4096));

	/* Parts slower than whole in the 4 KiB class: vetoed, but the 8 KiB
	 * class is judged on its own. */
	samples(&g, 4096, 2e-6, 10e-6, 8);
	CHECK(guard_allows(&g, 4096) == 0);
	CHECK(guard_allows(&g, 5000) == 0); /* same power-of-two class */
	CHECK(guard_allows(&g, 8192) == 1);

	/* Parts clearly faster (receiver copy included): allowed. */
	samples(&g, 65536, 100e-6, 20e-6, 8);
	CHECK(guard_allows(&g, 65536) == 1);
	/* Within the 3 % margin: not worth it. */
	struct offload_guard h;
	guard_init(&h);
	h.copy_bw = 1e30; /* no receiver copy, to test the margin alone */
	samples(&h, 1024, 10e-6, 9.9e-6, 8);
	CHECK(guard_allows(&h, 1024) == 0);

	/* A vetoed class is probed once every 256 of its messages. */
	unsigned probes = 0;
	for (int i = 0; i < 1024; i++)
		probes += guard_allows(&g, 4096) == 2;
	CHECK_EQ(probes, 4);
	/* Parked workers: verdicts stand, no probes. */
	g.parked = 1;
	probes = 0;
	for (int i = 0; i < 1024; i++)
		probes += guard_allows(&g, 4096) != 0;
	CHECK_EQ(probes, 0);

	/* A class the model keeps choosing gets whole samples one in 16
	 * once known. */
	unsigned timed = 0;
	for (int i = 0; i < 160; i++)
		timed += (unsigned)guard_wants_whole(&g, 4096);
	CHECK_EQ(timed, 10);
	printf("offload guard: ok (memcpy %.1f GB/s)\n", g.copy_bw / 1e9);
	return 0;
}
