/*
 * Measured feedback on equation (1): the model predicts from the rails'
 * sampled transfer times, which do not see the handoff's wake-ups, the
 * engine lock the parts' posts share, or the receiver's staging copy, so
 * alone it offloaded sizes that came out slower (docs/offload.md). Here
 * each size class (power of two) keeps what sending whole and sending in
 * parts really cost this process -- from taking the message off the queue
 * to its last byte handed to a driver -- plus the receiver's extra copy
 * at the memcpy bandwidth measured at start. Their difference replaces
 * the model's handoff cost: a class where the rails' predicted gain from
 * working at once does not outweigh it by the margin is vetoed (so a
 * slow NIC's wire time can still justify parts that cost this core
 * more), and probed again now and then in
 * case the load changed -- unless the workers were parked for having
 * nothing to do (worker.c), when the verdicts stand. Once a class is
 * judged the strategy is told that measured cost in place of T_O
 * (guard_handoff), so it declines what would be vetoed before planning:
 * a plan costs microseconds, and a vetoed class asked for one on every
 * message. Engine lock held for all but guard_init.
 */
#include "libmrail/offload/offload.h"
#include "util/clock.h"

#include <stdlib.h>
#include <string.h>

#define GUARD_MIN_SAMPLES 8   /* per path and class before judging */
#define GUARD_MARGIN 0.97     /* parts must gain 3 % of the whole time */
#define GUARD_PROBE_EVERY 256 /* vetoed messages of a class per probe */
#define GUARD_EWMA 0.125

static unsigned size_class(uint64_t len)
{
	unsigned c = len ? 63u - (unsigned)__builtin_clzll(len) : 0;
	return c < OFFLOAD_GUARD_CLASSES ? c : OFFLOAD_GUARD_CLASSES - 1;
}

void guard_init(struct offload_guard *g)
{
	enum { N = 64 * 1024, ROUNDS = 16 };
	memset(g, 0, sizeof *g);
	g->copy_bw = 4e9; /* a floor if the measurement fails */
	char *a = malloc(N), *b = malloc(N);
	if (!a || !b)
		goto out;
	memset(a, 1, N);
	memset(b, 2, N);
	double best = 0;
	for (int i = 0; i < ROUNDS; i++) {
		double t0 = mrail_now();
		memcpy(b, a, N);
		__asm__ volatile("" : : "r"(b) : "memory");
		double t = mrail_now() - t0;
		if (t > 0 && (best == 0 || t < best))
			best = t;
	}
	if (best > 0)
		g->copy_bw = N / best;
out:
	free(a);
	free(b);
}

static void note(double *avg, uint32_t *n, double s)
{
	*avg = *n ? *avg + GUARD_EWMA * (s - *avg) : s;
	if (*n < UINT32_MAX)
		(*n)++;
}

int guard_wants_whole(struct offload_guard *g, uint64_t len)
{
	unsigned c = size_class(len);
	/* Every message until the class is known, then one in 16: the
	 * clock costs ~50 ns a read on a VM. */
	return g->nwhole[c] < GUARD_MIN_SAMPLES || (++g->tick & 15) == 0;
}

void guard_note_whole(struct offload_guard *g, uint64_t len, double s)
{
	unsigned c = size_class(len);
	note(&g->whole[c], &g->nwhole[c], s);
}

void guard_note_parts(struct offload_guard *g, uint64_t len, double s)
{
	unsigned c = size_class(len);
	note(&g->parts[c], &g->nparts[c], s + (double)len / g->copy_bw);
}

static int judged(const struct offload_guard *g, unsigned c)
{
	return g->nparts[c] >= GUARD_MIN_SAMPLES &&
	       g->nwhole[c] >= GUARD_MIN_SAMPLES;
}

double guard_handoff(struct offload_guard *g, uint64_t len, double t_o,
		     double t_single, int *probe)
{
	unsigned c = size_class(len);
	*probe = 0;
	if (!judged(g, c))
		return t_o;
	double cost = g->parts[c] - g->whole[c] + (1 - GUARD_MARGIN) * t_single;
	if (cost <= t_o)
		return t_o;
	if (!g->parked && ++g->since_probe[c] >= GUARD_PROBE_EVERY) {
		g->since_probe[c] = 0;
		g->probes++;
		*probe = 1;
		return t_o;
	}
	return cost;
}

void guard_note_declined(struct offload_guard *g)
{
	g->vetoed++;
}

int guard_allows(struct offload_guard *g, uint64_t len, double wire_gain,
		 double t_single)
{
	unsigned c = size_class(len);
	if (g->nparts[c] < GUARD_MIN_SAMPLES)
		return 1; /* the model decides while parts are sampled */
	if (g->nwhole[c] < GUARD_MIN_SAMPLES)
		return 0; /* then whole is sampled, if the model never was */
	/* The model's gain from the rails working at once, less what parts
	 * really cost this side beyond sending whole (handoff, the lock,
	 * the receiver's copy), must still be worth the margin. */
	double penalty = g->parts[c] - g->whole[c];
	if (wire_gain - penalty >= (1 - GUARD_MARGIN) * t_single)
		return 1;
	if (!g->parked && ++g->since_probe[c] >= GUARD_PROBE_EVERY) {
		g->since_probe[c] = 0;
		g->probes++;
		return 2;
	}
	g->vetoed++;
	return 0;
}
