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
 *   test_failover stream   Big two-way stream for netlab (see stream()).
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

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Cheap content for big streams: word i of message m. */
static void words_fill(uint64_t *w, size_t n, uint64_t m)
{
	for (size_t i = 0; i < n; i++)
		w[i] = (m << 40) ^ (i * 0x9E3779B97F4A7C15ULL);
}

static size_t words_check(const uint64_t *w, size_t n, uint64_t m)
{
	for (size_t i = 0; i < n; i++)
		if (w[i] != ((m << 40) ^ (i * 0x9E3779B97F4A7C15ULL)))
			return i;
	return n;
}

/*
 * netlab (tests/multirail/netlab_failover.sh): TEST_STREAM_MIB MiB each
 * way in 16 MiB messages, 4 in flight per way, every one checked; the
 * script takes rail TEST_FAIL_RAIL down (or kills its connection) in the
 * middle. Then every rail must be up again and the failed one must carry
 * payload; the time it came back is printed for the script.
 */
static int stream(mrail_engine_t *e, uint32_t me)
{
	uint32_t peer = 1 - me;
	const size_t len = 16u << 20, nw = len / 8;
	const char *mib = getenv("TEST_STREAM_MIB");
	const char *fr = getenv("TEST_FAIL_RAIL");
	int total = (mib ? atoi(mib) : 1024) / 16, fail_rail = fr ? atoi(fr) : 1;
	int nrails = mrail_rail_count(e, peer);
	enum { DEPTH = 4 };
	uint64_t *sb[DEPTH], *rb[DEPTH];
	mrail_request_t *sr[DEPTH] = {0}, *rr[DEPTH] = {0};
	struct mrail_rail_stats st;
	struct mrail_rail_info info;

	CHECK(nrails > fail_rail);
	for (int i = 0; i < DEPTH; i++) {
		CHECK(sb[i] = malloc(len));
		CHECK(rb[i] = malloc(len));
	}
	test_barrier(e);
	printf("rank %u: streaming %d x 16 MiB each way on %d rails\n", me,
	       total, nrails);
	double t0 = mrail_now(), back_at = 0;
	int seen_down = 0;
	for (int m = 0; m < total + DEPTH; m++) {
		int k = m % DEPTH;
		/* When the rail comes back (to one message's time). */
		CHECK_RC(mrail_rail_info(e, peer, fail_rail, &info));
		CHECK_RC(mrail_rail_stats(e, peer, fail_rail, &st));
		seen_down |= !info.up;
		if (info.up && (seen_down || st.reconnects > 0) && back_at == 0)
			back_at = wall_now();
		if (m >= DEPTH) { /* message m - DEPTH done: check it */
			mrail_status_t s1, s2;
			CHECK_RC(mrail_wait(e, rr[k], &s1));
			CHECK_RC(mrail_wait(e, sr[k], &s2));
			CHECK_EQ(s1.error, MRAIL_OK);
			CHECK_EQ(s2.error, MRAIL_OK);
			CHECK_EQ(s1.length, len);
			size_t bad = words_check(rb[k], nw, (uint64_t)(m - DEPTH) * 2 + peer);
			if (bad != nw) {
				fprintf(stderr, "rank %u: message %d word %zu wrong\n",
					me, m - DEPTH, bad);
				exit(1);
			}
		}
		if (m >= total)
			continue;
		CHECK_RC(mrail_irecv(e, peer, rb[k], len, 11, MRAIL_TAG_MASK_ALL,
				     &rr[k]));
		words_fill(sb[k], nw, (uint64_t)m * 2 + me);
		CHECK_RC(mrail_isend(e, peer, sb[k], len, 11, &sr[k]));
	}
	double t1 = mrail_now();
	CHECK_RC(mrail_rail_stats(e, peer, fail_rail, &st));
	printf("rank %u: %d MiB each way in %.2f s, checksums ok; rail %d: "
	       "failures %llu reconnects %llu retx %llu B down %.2f s\n", me,
	       total * 16, t1 - t0, fail_rail,
	       (unsigned long long)st.failures,
	       (unsigned long long)st.reconnects,
	       (unsigned long long)st.retx_bytes, st.down_seconds);
	if (getenv("TEST_EXPECT_FAILOVER"))
		CHECK(st.failures >= 1);
	/* Back up (the script brings the link up meanwhile), then used. */
	double until = mrail_now() + 30;
	int up = 0;
	while (!up && mrail_now() < until) {
		CHECK_RC(mrail_rail_info(e, peer, fail_rail, &info));
		up = info.up;
		if (!up)
			mrail_progress(e);
	}
	CHECK(up);
	if (back_at == 0)
		back_at = wall_now();
	printf("rank %u: rail %d up at %.3f\n", me, fail_rail, back_at);
	test_barrier(e);
	CHECK_RC(mrail_rail_stats(e, peer, fail_rail, &st));
	uint64_t before = st.tx_bytes + st.rx_bytes;
	for (int m = 0; m < DEPTH; m++) {
		CHECK_RC(mrail_irecv(e, peer, rb[m], len, 12, MRAIL_TAG_MASK_ALL,
				     &rr[m]));
		CHECK_RC(mrail_isend(e, peer, sb[m], len, 12, &sr[m]));
	}
	for (int m = 0; m < DEPTH; m++) {
		CHECK_RC(mrail_wait(e, rr[m], NULL));
		CHECK_RC(mrail_wait(e, sr[m], NULL));
	}
	CHECK_RC(mrail_rail_stats(e, peer, fail_rail, &st));
	CHECK(st.tx_bytes + st.rx_bytes > before);
	printf("rank %u: rail %d carries payload again (%llu bytes)\n", me,
	       fail_rail, (unsigned long long)(st.tx_bytes + st.rx_bytes - before));
	test_barrier(e);
	for (int i = 0; i < DEPTH; i++) {
		free(sb[i]);
		free(rb[i]);
	}
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc != 2 || (strcmp(argv[1], "survive") && strcmp(argv[1], "alldown") &&
			  strcmp(argv[1], "stream"))) {
		fprintf(stderr, "usage: %s survive|alldown|stream\n", argv[0]);
		return 2;
	}
	mrail_engine_t *e = test_engine();
	CHECK_EQ(mrail_size(e), 2);
	uint32_t me = mrail_rank(e);
	int rc = !strcmp(argv[1], "survive") ? survive(e, me)
		 : !strcmp(argv[1], "alldown") ? alldown(e, me)
					       : stream(e, me);
	CHECK_RC(mrail_engine_destroy(e));
	return rc;
}
