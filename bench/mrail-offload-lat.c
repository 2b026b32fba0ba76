/*
 * One-way latency (half round trip, median of --iters) per eager size,
 * for whatever the environment configures (rails, strategy, offload):
 * bench/offload.sh runs it as single-rail, split without and with
 * offload. Waits test then yield, never sleep long and never spin alone:
 * on a small machine both ranks share one core and leave the other idle
 * for the workers (docs/offload.md).
 * Usage: mrail-run -n 2 mrail-offload-lat [min [max [iters]]]
 */
#include <mrail.h>

#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void wait_yield(mrail_engine_t *e, mrail_request_t *r)
{
	mrail_status_t st;
	int rc;
	while ((rc = mrail_test(e, r, &st)) == MRAIL_ERR_AGAIN)
		sched_yield();
	if (rc != MRAIL_OK) {
		fprintf(stderr, "test failed: %s\n", mrail_strerror(rc));
		exit(1);
	}
	if (st.error != MRAIL_OK) {
		fprintf(stderr, "request failed: %s\n", mrail_strerror(st.error));
		exit(1);
	}
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	size_t min = argc > 1 ? strtoul(argv[1], NULL, 0) : 64;
	size_t max = argc > 2 ? strtoul(argv[2], NULL, 0) : 32768;
	int iters = argc > 3 ? atoi(argv[3]) : 2000;
	mrail_engine_t *e;
	if (mrail_engine_create(NULL, &e) != MRAIL_OK || mrail_size(e) != 2)
		return 1;
	int me = (int)mrail_rank(e), peer = 1 - me;
	char *buf = calloc(1, max), *in = calloc(1, max);
	double *t = calloc((size_t)iters, sizeof *t);
	if (me == 0)
		printf("%10s %12s %12s\n", "size", "median_us", "min_us");
	for (size_t size = min; size <= max; size *= 2) {
		for (int i = -iters / 10; i < iters; i++) {
			mrail_request_t *s, *r;
			double t0 = now();
			if (me == 0) {
				mrail_isend(e, peer, buf, size, 1, &s);
				mrail_irecv(e, peer, in, size, 1,
					    MRAIL_TAG_MASK_ALL, &r);
				wait_yield(e, r);
				wait_yield(e, s);
			} else {
				mrail_irecv(e, peer, in, size, 1,
					    MRAIL_TAG_MASK_ALL, &r);
				wait_yield(e, r);
				mrail_isend(e, peer, buf, size, 1, &s);
				wait_yield(e, s);
			}
			if (i >= 0)
				t[i] = (now() - t0) / 2;
		}
		qsort(t, (size_t)iters, sizeof *t, cmp);
		if (me == 0)
			printf("%10zu %12.2f %12.2f\n", size,
			       t[iters / 2] * 1e6, t[0] * 1e6);
		fflush(stdout);
	}
	struct mrail_offload_info oi;
	mrail_offload_info(e, &oi);
	if (me == 0)
		printf("# offload: %u workers, T_O %.2f us spinning, %.2f us "
		       "asleep; %llu messages in %llu parts, %llu declined, "
		       "%llu vetoed by the measured guard, parked %llu time(s); "
		       "lock wait %.2f us/take\n", oi.workers,
		       oi.t_o_spinning * 1e6, oi.t_o_asleep * 1e6,
		       (unsigned long long)oi.messages,
		       (unsigned long long)oi.parts,
		       (unsigned long long)oi.declined,
		       (unsigned long long)oi.vetoed,
		       (unsigned long long)oi.parks,
		       oi.lock_takes ? oi.lock_wait / oi.lock_takes * 1e6 : 0);
	/* Where the messages went: a strategy that puts eager messages on a
	 * slow rail shows here. */
	if (me == 0) {
		printf("# rank 0 sent, per rail:");
		for (int i = 0; i < mrail_rail_count(e, peer); i++) {
			struct mrail_rail_stats st;
			if (mrail_rail_stats(e, peer, i, &st) == MRAIL_OK)
				printf(" r%d %llu msgs", i,
				       (unsigned long long)st.tx_msgs);
		}
		printf("\n");
	}
	mrail_engine_destroy(e);
	return 0;
}
