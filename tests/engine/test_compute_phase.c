/*
 * A peer in a long compute phase keeps its rails (docs/failover.md,
 * "Finding a dead rail"): rank 1 sleeps three rail timeouts without
 * calling the engine while rank 0 sends it eager messages (16 KiB) and one
 * rendezvous message, so none of them is acknowledged by the engine.
 * The link itself stays alive (the peer's kernel answers), so no rail
 * may fail; afterwards every byte arrives. Default settings: the rail
 * timeout and the driver are the defaults, only the transport and the
 * number of rails change between the cases.
 */
#include "harness.h"

#include <string.h>
#include <unistd.h>

/* The default MRAIL_RAIL_TIMEOUT (docs/failover.md), in seconds. */
#define RAIL_TIMEOUT 5.0

enum { EAGER = 1024, EAGER_LEN = 16384, RDV_LEN = 4 << 20, TAG_RDV = 999 };

/* No rail went down, on either side. */
static void check_rails(mrail_engine_t *e, mrail_peer_t peer)
{
	int n = mrail_rail_count(e, peer);
	CHECK(n >= 1);
	for (int i = 0; i < n; i++) {
		struct mrail_rail_stats s;
		CHECK_RC(mrail_rail_stats(e, peer, i, &s));
		printf("rank %u rail %d (%s): up %d, failures %llu\n",
		       mrail_rank(e), i, s.driver, s.up,
		       (unsigned long long)s.failures);
		CHECK(s.up && s.failures == 0);
	}
}

static void sender(mrail_engine_t *e, int n_eager)
{
	static char small[EAGER][EAGER_LEN];
	char *big = malloc(RDV_LEN);
	mrail_request_t *rq[EAGER + 1];
	CHECK(big);
	for (int i = 0; i < n_eager; i++) {
		pattern_fill(small[i], EAGER_LEN, (uint64_t)i);
		CHECK_RC(mrail_isend(e, 1, small[i], EAGER_LEN, (uint64_t)i,
				     &rq[i]));
	}
	pattern_fill(big, RDV_LEN, TAG_RDV);
	CHECK_RC(mrail_isend(e, 1, big, RDV_LEN, TAG_RDV, &rq[n_eager]));
	CHECK_RC(mrail_wait_all(e, (size_t)n_eager + 1, rq, NULL));
	free(big);
}

static void receiver(mrail_engine_t *e, int n_eager, double pause)
{
	static char small[EAGER_LEN];
	char *big = malloc(RDV_LEN);
	mrail_request_t *r;
	mrail_status_t st;
	CHECK(big);
	/* Plain sleep: no progress, no acknowledgements, no probes. */
	usleep((useconds_t)(pause * 1e6));
	for (int i = 0; i < n_eager; i++) {
		CHECK_RC(mrail_irecv(e, 0, small, EAGER_LEN, (uint64_t)i,
				     MRAIL_TAG_MASK_ALL, &r));
		CHECK_RC(mrail_wait(e, r, &st));
		CHECK(st.length == EAGER_LEN &&
		      pattern_check(small, EAGER_LEN, (uint64_t)i) == EAGER_LEN);
	}
	CHECK_RC(mrail_irecv(e, 0, big, RDV_LEN, TAG_RDV, MRAIL_TAG_MASK_ALL,
			     &r));
	CHECK_RC(mrail_wait(e, r, &st));
	CHECK(st.length == RDV_LEN &&
	      pattern_check(big, RDV_LEN, TAG_RDV) == RDV_LEN);
	free(big);
}

/* argv[1]: eager messages sent during the pause (default 16, at most
 * 1024, of 16 KiB each). */
int main(int argc, char **argv)
{
	int n_eager = argc > 1 ? atoi(argv[1]) : 16;
	CHECK(n_eager >= 0 && n_eager <= EAGER);
	mrail_engine_t *e = test_engine();
	CHECK(mrail_size(e) == 2);
	test_barrier(e); /* every rail connected before the pause */
	double t = RAIL_TIMEOUT;
	if (mrail_rank(e) == 0)
		sender(e, n_eager);
	else
		receiver(e, n_eager, 3 * t);
	test_barrier(e);
	check_rails(e, 1 - mrail_rank(e));
	test_barrier(e);
	if (mrail_rank(e) == 1)
		printf("compute phase: OK (paused %.0f s)\n", 3 * t);
	mrail_engine_destroy(e);
	return 0;
}
