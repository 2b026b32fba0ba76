/*
 * Liveness costs nothing on an idle healthy rail (docs/failover.md,
 * "Finding a dead rail"), with the default MRAIL_RAIL_TIMEOUT (5 s):
 * two ranks on TCP loopback, connected and idle for IDLE seconds, send
 * each other at most the ACKs owed from the barrier (no probe); with a
 * rendezvous send the peer does not match for IDLE seconds (the rail is
 * waited on), a probe per half timeout period, answered (the issue asked
 * for at most one per period on an idle rail: this one is not idle);
 * no rail fails, and the message then arrives intact.
 */
#include "standalone.h"

#include <time.h>

#define IDLE 6.0            /* s: longer than the timeout */
#define TIMEOUT 5.0         /* MRAIL_RAIL_TIMEOUT's default */
#define BIG (1u << 20)      /* rendezvous */

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void idle_for(mrail_engine_t *e, double s)
{
	double end = mono() + s;
	while (mono() < end) {
		mrail_progress(e);
		usleep(1000);
	}
}

static uint64_t packets(mrail_engine_t *e, uint32_t peer, uint64_t *fails)
{
	struct mrail_rail_stats st;
	uint64_t n = 0;
	*fails = 0;
	for (int r = 0; r < mrail_rail_count(e, peer); r++) {
		CHECK_RC(mrail_rail_stats(e, peer, r, &st));
		n += st.tx_packets;
		*fails += st.failures;
	}
	return n;
}

static int job(mrail_engine_t *e, uint32_t rank, uint32_t n)
{
	uint32_t peer = 1 - rank;
	uint64_t fails;
	CHECK_EQ(n, 2);
	job_barrier(e, rank, n, NULL);
	idle_for(e, 0.1); /* the barrier's ACKs leave */
	uint64_t p0 = packets(e, peer, &fails);
	idle_for(e, IDLE);
	uint64_t idle_pk = packets(e, peer, &fails) - p0;
	idle_for(e, 0.5); /* the peer may return from the barrier later */
	printf("rank %u: %llu packet(s) sent in %.0f s idle\n", rank,
	       (unsigned long long)idle_pk, IDLE);
	CHECK_EQ(idle_pk, 0);
	CHECK_EQ(fails, 0);
	job_barrier(e, rank, n, NULL);

	/* Rank 0 sends a rendezvous message rank 1 matches only later. */
	uint8_t *buf = malloc(BIG);
	CHECK(buf);
	mrail_request_t *r;
	mrail_status_t st;
	if (rank == 0) {
		pattern_fill(buf, BIG, 7);
		CHECK_RC(mrail_isend(e, peer, buf, BIG, 7, &r));
	}
	idle_for(e, 0.1); /* the RTS and its ACK */
	p0 = packets(e, peer, &fails);
	idle_for(e, IDLE);
	uint64_t wait_pk = packets(e, peer, &fails) - p0;
	if (rank == 1) {
		idle_for(e, 0.5);
		CHECK_RC(mrail_irecv(e, peer, buf, BIG, 7, MRAIL_TAG_MASK_ALL,
				     &r));
	}
	CHECK_RC(mrail_wait(e, r, &st));
	CHECK_EQ(st.error, MRAIL_OK);
	if (rank == 1)
		CHECK_EQ(pattern_check(buf, BIG, 7), BIG);
	/* Rank 0 probes the rail it waits on (RDV_DONE) every T/2 of
	 * quiet, rank 1 acknowledges each (and may probe too). */
	uint64_t most = (uint64_t)(IDLE / (TIMEOUT / 2)) + 1;
	printf("rank %u: %llu packet(s) sent in %.0f s with a rendezvous "
	       "pending (at most %llu)\n", rank,
	       (unsigned long long)wait_pk, IDLE, (unsigned long long)most);
	CHECK(wait_pk <= most);
	CHECK_EQ(fails, 0);
	free(buf);
	job_barrier(e, rank, n, NULL);
	return 0;
}

int main(void)
{
	int status[2];
	/* The defaults, whatever the caller's environment says. */
	unsetenv("MRAIL_RAIL_TIMEOUT");
	unsetenv("MRAIL_DRIVER_PARAMS");
	job_run(2, job, status);
	for (int i = 0; i < 2; i++)
		if (!WIFEXITED(status[i]) || WEXITSTATUS(status[i]) != 0) {
			fprintf(stderr, "rank %d failed (status %#x)\n", i,
				status[i]);
			return 1;
		}
	printf("test_idle_probes: no probe on an idle rail, few on a "
	       "pending one\n");
	return 0;
}
