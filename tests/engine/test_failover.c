/*
 * Rail failover (docs/failover.md), 2 ranks under mrail-run on the fake
 * driver, whose knobs kill connections (drop_after, fail_rail, faults).
 *
 *   test_failover survive  Both directions at once: eager messages and
 *                          rendezvous messages split over every rail,
 *                          each with its own content; a rail dies under
 *                          them (meson sets the knobs). Every message
 *                          arrives intact and in order, the dead rail's
 *                          counters show the failure, it comes back
 *                          (reconnect) and carries payload again.
 *   test_failover alldown  Every rail dies and cannot come back: the
 *                          peer's requests fail (MRAIL_ERR_PEER) within
 *                          MRAIL_RAIL_TIMEOUT plus a margin; no hang, the
 *                          process lives and the engine is destroyed.
 */
#include "harness.h"

#include <time.h>
#include <unistd.h>

static double mrail_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define ROUNDS 6
#define SMALL 24                 /* eager messages per round and way */
#define BIG 3                    /* rendezvous messages per round and way */
#define BIG_LEN (3u << 20)

static uint64_t msg_id(uint32_t from, int round, int k)
{
	return ((uint64_t)from << 32) | ((uint64_t)round << 16) | (uint64_t)k;
}

static size_t small_len(int k)
{
	return 1 + (size_t)k * 331; /* 1 .. ~8 KiB: eager */
}

/* One round: SMALL eager + BIG rendezvous messages each way; one tag for
 * all, so matching order = send order, and each payload names its rank
 * in the sequence. */
static void exchange_round(mrail_engine_t *e, uint32_t me, int round,
			   uint8_t **sbuf, uint8_t **rbuf)
{
	uint32_t peer = 1 - me;
	mrail_request_t *rq[2 * (SMALL + BIG)];
	mrail_status_t st[2 * (SMALL + BIG)];
	int n = 0;

	for (int k = 0; k < SMALL + BIG; k++) {
		size_t len = k < SMALL ? small_len(k) : BIG_LEN;
		CHECK_RC(mrail_irecv(e, peer, rbuf[k], len, 7,
				     MRAIL_TAG_MASK_ALL, &rq[n++]));
	}
	for (int k = 0; k < SMALL + BIG; k++) {
		size_t len = k < SMALL ? small_len(k) : BIG_LEN;
		pattern_fill(sbuf[k], len, msg_id(me, round, k));
		CHECK_RC(mrail_isend(e, peer, sbuf[k], len, 7, &rq[n++]));
	}
	CHECK_RC(mrail_wait_all(e, (size_t)n, rq, st));
	for (int k = 0; k < SMALL + BIG; k++) {
		size_t len = k < SMALL ? small_len(k) : BIG_LEN;
		CHECK_EQ(st[k].error, MRAIL_OK);
		CHECK_EQ(st[k].length, len);
		size_t bad = pattern_check(rbuf[k], len, msg_id(peer, round, k));
		if (bad != len) {
			fprintf(stderr, "rank %u round %d message %d: byte %zu "
				"of %zu wrong\n", me, round, k, bad, len);
			exit(1);
		}
		CHECK_EQ(st[SMALL + BIG + k].error, MRAIL_OK);
	}
}

static void totals(mrail_engine_t *e, uint32_t peer, int rail,
		   struct mrail_rail_stats *st)
{
	CHECK_RC(mrail_rail_stats(e, peer, rail, st));
}

static int survive(mrail_engine_t *e, uint32_t me)
{
	uint32_t peer = 1 - me;
	int nrails = mrail_rail_count(e, peer);
	uint8_t *sbuf[SMALL + BIG], *rbuf[SMALL + BIG];
	struct mrail_rail_stats st;
	struct mrail_rail_info info;

	CHECK(nrails >= 2);
	for (int k = 0; k < SMALL + BIG; k++) {
		size_t len = k < SMALL ? small_len(k) : BIG_LEN;
		CHECK(sbuf[k] = malloc(len));
		CHECK(rbuf[k] = malloc(len));
	}
	for (int round = 0; round < ROUNDS; round++)
		exchange_round(e, me, round, sbuf, rbuf);

	uint64_t failures = 0, retx = 0;
	for (int i = 0; i < nrails; i++) {
		totals(e, peer, i, &st);
		failures += st.failures;
		retx += st.retx_bytes;
		printf("rank %u rail %d: failures %llu reconnects %llu retx "
		       "%llu B up %.2f s down %.2f s\n", me, i,
		       (unsigned long long)st.failures,
		       (unsigned long long)st.reconnects,
		       (unsigned long long)st.retx_bytes, st.up_seconds,
		       st.down_seconds);
	}
	CHECK(failures >= 1);

	/* The failed rail comes back: wait (bounded) for every rail up. */
	double until = mrail_now() + 20;
	int all_up = 0;
	while (!all_up && mrail_now() < until) {
		all_up = 1;
		for (int i = 0; i < nrails; i++) {
			CHECK_RC(mrail_rail_info(e, peer, i, &info));
			all_up &= info.up && !strcmp(info.state, "up");
		}
		mrail_progress(e);
	}
	CHECK(all_up);
	/* And carries payload again: every rail moves chunks of a round. */
	uint64_t before[16];
	for (int i = 0; i < nrails && i < 16; i++) {
		totals(e, peer, i, &st);
		before[i] = st.rx_bytes + st.tx_bytes;
	}
	exchange_round(e, me, ROUNDS, sbuf, rbuf);
	for (int i = 0; i < nrails && i < 16; i++) {
		totals(e, peer, i, &st);
		if (st.rx_bytes + st.tx_bytes == before[i]) {
			fprintf(stderr, "rank %u: rail %d carried nothing after "
				"coming back\n", me, i);
			exit(1);
		}
	}
	test_barrier(e);
	for (int k = 0; k < SMALL + BIG; k++) {
		free(sbuf[k]);
		free(rbuf[k]);
	}
	printf("rank %u: survive ok (%llu failure(s), %llu bytes moved "
	       "again)\n", me, (unsigned long long)failures,
	       (unsigned long long)retx);
	return 0;
}

static int alldown(mrail_engine_t *e, uint32_t me)
{
	uint32_t peer = 1 - me;
	enum { N = 8 };
	static uint8_t sb[N][1 << 16], rb[N][1 << 16];
	mrail_request_t *rq[2 * N];
	int left = 2 * N, failed = 0;
	double timeout = 1.0;
	const char *t = getenv("MRAIL_RAIL_TIMEOUT");
	if (t)
		timeout = atof(t);

	for (int k = 0; k < N; k++) {
		CHECK_RC(mrail_irecv(e, peer, rb[k], sizeof rb[k], 3,
				     MRAIL_TAG_MASK_ALL, &rq[k]));
		pattern_fill(sb[k], sizeof sb[k], msg_id(me, 0, k));
		int rc = mrail_isend(e, peer, sb[k], sizeof sb[k], 3, &rq[N + k]);
		if (rc != MRAIL_OK) {
			CHECK_EQ(rc, MRAIL_ERR_PEER);
			rq[N + k] = NULL;
			left--;
			failed++;
		}
	}
	/* The rails die at the first frames: everything must end in error
	 * (or, for what got through first, OK) within the timeout plus
	 * generous slack for this loaded machine; never hang. */
	double start = mrail_now(), limit = start + timeout + 30;
	while (left > 0 && mrail_now() < limit) {
		for (int k = 0; k < 2 * N; k++) {
			mrail_status_t st;
			if (!rq[k] || mrail_test(e, rq[k], &st) != MRAIL_OK)
				continue;
			rq[k] = NULL;
			left--;
			if (st.error != MRAIL_OK) {
				CHECK_EQ(st.error, MRAIL_ERR_PEER);
				failed++;
			}
		}
		usleep(1000);
	}
	CHECK_EQ(left, 0);
	CHECK(failed > 0);
	printf("rank %u: alldown ok: %d request(s) failed after %.2f s "
	       "(MRAIL_RAIL_TIMEOUT %.1f s)\n", me, failed,
	       mrail_now() - start, timeout);
	/* The peer is gone for us; new requests fail at once. */
	mrail_request_t *r;
	CHECK_EQ(mrail_isend(e, peer, sb[0], 1, 4, &r), MRAIL_ERR_PEER);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc != 2 || (strcmp(argv[1], "survive") && strcmp(argv[1], "alldown"))) {
		fprintf(stderr, "usage: %s survive|alldown\n", argv[0]);
		return 2;
	}
	mrail_engine_t *e = test_engine();
	CHECK_EQ(mrail_size(e), 2);
	uint32_t me = mrail_rank(e);
	int rc = !strcmp(argv[1], "survive") ? survive(e, me) : alldown(e, me);
	CHECK_RC(mrail_engine_destroy(e));
	return rc;
}
