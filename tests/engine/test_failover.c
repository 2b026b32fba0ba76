/*
 * Rail failover (docs/failover.md) under mrail-run. survive and alldown:
 * 2 ranks on the fake driver, whose knobs kill connections (drop_after,
 * fail_rail, faults); stream*: TCP on netlab, where
 * tests/multirail/netlab_failover.sh takes links down.
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
 *   test_failover unkept   A rail whose driver injects (fake inject=on)
 *                          drops a connection: the frames it lost were
 *                          kept nowhere and cannot be replayed. Rank 1
 *                          receives every message intact and in order
 *                          up to the loss, then its receives fail
 *                          (MRAIL_ERR_PEER), as rank 0's requests do; or,
 *                          when the drop hit no injected frame, every
 *                          message arrives. No gap, no hang.
 *   test_failover stream   netlab: every rank streams both ways with every
 *                          other rank while a host loses a rail (see
 *                          stream()); 2 or more ranks.
 *   test_failover stream-alldown
 *                          netlab: the same stream with one peer while a
 *                          host loses every rail: the requests fail within
 *                          the timeout (see stream_alldown()).
 */
#include "harness.h"

#include <sched.h>
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
	/* And carries payload again within 5 s (issue 15): rounds until
	 * every rail moved bytes. One round may leave the rail out: the
	 * strategy plans with what it learnt while the rail stalled. Both
	 * ranks run the same number of rounds: another while either wants
	 * one. */
	uint64_t before[16];
	for (int i = 0; i < nrails && i < 16; i++) {
		totals(e, peer, i, &st);
		before[i] = st.rx_bytes + st.tx_bytes;
	}
	double back_by = mrail_now() + 5;
	int idle_rail = -1;
	for (uint8_t more = 1; more;) {
		exchange_round(e, me, ROUNDS, sbuf, rbuf);
		idle_rail = -1;
		for (int i = 0; i < nrails && i < 16; i++) {
			totals(e, peer, i, &st);
			if (st.rx_bytes + st.tx_bytes == before[i])
				idle_rail = i;
		}
		uint8_t mine = idle_rail >= 0 && mrail_now() < back_by, theirs;
		mrail_request_t *r[2];
		CHECK_RC(mrail_irecv(e, peer, &theirs, 1, 8,
				     MRAIL_TAG_MASK_ALL, &r[0]));
		CHECK_RC(mrail_isend(e, peer, &mine, 1, 8, &r[1]));
		CHECK_RC(mrail_wait_all(e, 2, r, NULL));
		more = mine | theirs;
	}
	if (idle_rail >= 0) {
		fprintf(stderr, "rank %u: rail %d carried nothing within 5 s "
			"of coming back\n", me, idle_rail);
		exit(1);
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

static int unkept(mrail_engine_t *e, uint32_t me)
{
	enum { N = 400, TAG = 9 };
	uint32_t peer = 1 - me;
	double limit = mrail_now() + 60;
	mrail_status_t st;
	int failed = 0;

	if (me == 0) {
		struct mrail_req_args a = MRAIL_REQ_ARGS_INIT;
		static uint64_t v[N];
		static mrail_request_t *rq[N];
		int pending = 0;
		a.flags = MRAIL_REQ_IMMEDIATE;
		for (int i = 0; i < N; i++) {
			v[i] = (uint64_t)i;
			int rc = mrail_isend_x(e, peer, &v[i], sizeof v[i], TAG,
					       &a, &rq[i]);
			if (rc != MRAIL_OK) {
				CHECK_EQ(rc, MRAIL_ERR_PEER);
				rq[i] = NULL;
				failed++;
				continue;
			}
			pending += rq[i] != NULL;
			mrail_progress(e);
		}
		while (pending > 0 && mrail_now() < limit) {
			for (int i = 0; i < N; i++) {
				if (!rq[i] || mrail_test(e, rq[i], &st) != MRAIL_OK)
					continue;
				rq[i] = NULL;
				pending--;
				if (st.error != MRAIL_OK) {
					CHECK_EQ(st.error, MRAIL_ERR_PEER);
					failed++;
				}
			}
			usleep(1000);
		}
		CHECK_EQ(pending, 0);
		/* Either nothing injected was lost (every message arrives
		 * and rank 1 says so), or the loss fails the peer once the
		 * reconnected rail tells what it processed. */
		if (!failed) {
			uint8_t done = 0;
			mrail_request_t *r;
			int rc = mrail_irecv(e, peer, &done, 1, TAG + 1,
					     MRAIL_TAG_MASK_ALL, &r);
			if (rc == MRAIL_OK) {
				while ((rc = mrail_test(e, r, &st)) ==
					       MRAIL_ERR_AGAIN &&
				       mrail_now() < limit)
					usleep(100);
				CHECK_RC(rc); /* no hang */
				rc = st.error;
			}
			if (rc != MRAIL_OK) {
				CHECK_EQ(rc, MRAIL_ERR_PEER);
				failed++;
			}
		}
		printf("rank 0: unkept ok: %s\n",
		       failed ? "the peer failed after the loss"
			      : "nothing lost, every message arrived");
		return 0;
	}
	int got = 0;
	for (; got < N; got++) {
		uint64_t v = UINT64_MAX;
		mrail_request_t *r;
		int rc = mrail_irecv(e, peer, &v, sizeof v, TAG,
				     MRAIL_TAG_MASK_ALL, &r);
		if (rc == MRAIL_OK) {
			while ((rc = mrail_test(e, r, &st)) == MRAIL_ERR_AGAIN &&
			       mrail_now() < limit)
				usleep(100);
			CHECK_RC(rc); /* no hang: done within the limit */
			rc = st.error;
		}
		if (rc != MRAIL_OK) {
			CHECK_EQ(rc, MRAIL_ERR_PEER);
			break;
		}
		CHECK_EQ(v, (uint64_t)got); /* in order, no gap */
	}
	if (got == N) {
		mrail_request_t *r;
		uint8_t done = 1;
		CHECK_RC(mrail_isend(e, peer, &done, 1, TAG + 1, &r));
		CHECK_RC(mrail_wait(e, r, &st));
		CHECK_RC(st.error);
	}
	printf("rank 1: unkept ok: %d of %d messages in order%s\n", got, N,
	       got < N ? ", then the peer failed" : "");
	return 0;
}

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int env_int(const char *name, int dflt)
{
	const char *s = getenv(name);
	return s && *s ? atoi(s) : dflt;
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

/* ---- netlab streams (tests/multirail/netlab_failover.sh) ------------- */

#define STREAM_LEN (16u << 20)
#define STREAM_WORDS (STREAM_LEN / 8)
enum { DEPTH = 4 }; /* messages in flight per peer and way */

/* The two-way stream with one peer, and what we saw of its failing rail. */
struct pstream {
	uint32_t peer;
	int watch;          /* the failing host is this rank or the peer */
	int nrails;
	uint64_t *sb[DEPTH], *rb[DEPTH];
	mrail_request_t *sr[DEPTH], *rr[DEPTH];
	int seen_down;
	double back_at;     /* wall clock: up again after the failure */
	double payload_at;  /* wall clock: first payload on it after that */
	uint64_t bytes_back;
	double all_down_at; /* monotonic: since when no rail is up (0: one is) */
};

struct streams {
	mrail_engine_t *e;
	uint32_t me, n;
	int fail_rail;
	struct pstream *ps;
	int nps;
	double next_poll;
};

/* Message m from rank `from` to rank `to`: its own content. */
static uint64_t stream_id(const struct streams *s, int m, uint32_t from,
			  uint32_t to)
{
	return ((uint64_t)m * s->n + from) * s->n + to;
}

/* Every 2 ms: the failing rail of each watched peer (down, up again,
 * payload again) and whether any rail to each peer is up. A gate that
 * failed may answer with an error: counted as nothing up. */
static void monitor(struct streams *s, int force)
{
	double now = mrail_now();
	if (!force && now < s->next_poll)
		return;
	s->next_poll = now + 0.002;
	for (int i = 0; i < s->nps; i++) {
		struct pstream *p = &s->ps[i];
		struct mrail_rail_info info;
		struct mrail_rail_stats st;
		int any_up = 0;
		for (int r = 0; r < p->nrails; r++)
			if (mrail_rail_info(s->e, p->peer, r, &info) == MRAIL_OK &&
			    info.up)
				any_up = 1;
		if (any_up)
			p->all_down_at = 0;
		else if (p->all_down_at == 0)
			p->all_down_at = now;
		if (!p->watch ||
		    mrail_rail_info(s->e, p->peer, s->fail_rail, &info) ||
		    mrail_rail_stats(s->e, p->peer, s->fail_rail, &st))
			continue;
		uint64_t bytes = st.tx_bytes + st.rx_bytes;
		if (!info.up) {
			p->seen_down = 1;
			p->back_at = p->payload_at = 0;
		} else if (p->back_at == 0) {
			if (p->seen_down || st.reconnects > 0) {
				p->back_at = wall_now();
				p->bytes_back = bytes;
			}
		} else if (p->payload_at == 0 && bytes > p->bytes_back) {
			p->payload_at = wall_now();
		}
	}
}

/* Progress (watching the rails) until r completes or `until` (monotonic,
 * 0: no limit) passes: MRAIL_OK or MRAIL_ERR_TIMEOUT. Busy while events
 * come, then yields, then naps: three ranks share two cores. */
static int wait_mon(struct streams *s, mrail_request_t *r, mrail_status_t *st,
		    double until)
{
	unsigned idle = 0;
	double idle_since = 0;
	for (;;) {
		monitor(s, 0);
		int events = mrail_progress(s->e);
		if (mrail_test(s->e, r, st) == MRAIL_OK)
			return MRAIL_OK;
		if (until > 0 && mrail_now() > until)
			return MRAIL_ERR_TIMEOUT;
		if (events > 0) {
			idle = 0;
			continue;
		}
		if (++idle < 64)
			continue;
		if (idle == 64)
			idle_since = mrail_now();
		if (mrail_now() - idle_since < 200e-6)
			sched_yield();
		else
			usleep(100);
	}
}

static void streams_init(struct streams *s, mrail_engine_t *e, uint32_t me)
{
	const char *fif = getenv("TEST_FAIL_IF");
	uint32_t fail_rank = (uint32_t)env_int("TEST_FAIL_RANK", 1);

	memset(s, 0, sizeof *s);
	s->e = e;
	s->me = me;
	s->n = mrail_size(e);
	s->fail_rail = env_int("TEST_FAIL_RAIL", 1);
	CHECK(s->n >= 2 && fail_rank < s->n);
	CHECK(s->ps = calloc(s->n - 1, sizeof *s->ps));
	for (uint32_t q = 0; q < s->n; q++) {
		if (q == me)
			continue;
		struct pstream *p = &s->ps[s->nps++];
		struct mrail_rail_info info;
		p->peer = q;
		p->watch = me == fail_rank || q == fail_rank;
		p->nrails = mrail_rail_count(e, q);
		CHECK(p->nrails > s->fail_rail);
		for (int k = 0; k < DEPTH; k++) {
			CHECK(p->sb[k] = malloc(STREAM_LEN));
			CHECK(p->rb[k] = malloc(STREAM_LEN));
		}
		if (!p->watch || !fif)
			continue;
		/* The rail the script takes down is this rank's (or the
		 * peer's) interface TEST_FAIL_IF. */
		CHECK_RC(mrail_rail_info(e, q, s->fail_rail, &info));
		const char *ifn = me == fail_rank ? info.local_if : info.remote_if;
		if (strcmp(ifn, fif)) {
			fprintf(stderr, "rank %u peer %u: rail %d is on %s, not "
				"%s\n", me, q, s->fail_rail, ifn, fif);
			exit(1);
		}
	}
}

static void streams_free(struct streams *s)
{
	for (int i = 0; i < s->nps; i++)
		for (int k = 0; k < DEPTH; k++) {
			free(s->ps[i].sb[k]);
			free(s->ps[i].rb[k]);
		}
	free(s->ps);
}

static void post_msg(struct streams *s, struct pstream *p, int m, uint64_t tag)
{
	int k = m % DEPTH;
	CHECK_RC(mrail_irecv(s->e, p->peer, p->rb[k], STREAM_LEN, tag,
			     MRAIL_TAG_MASK_ALL, &p->rr[k]));
	words_fill(p->sb[k], STREAM_WORDS, stream_id(s, m, s->me, p->peer));
	CHECK_RC(mrail_isend(s->e, p->peer, p->sb[k], STREAM_LEN, tag,
			     &p->sr[k]));
}

/* Wait for message m both ways with p (no time limit: mrail-run's
 * --timeout is the limit) and check what arrived. */
static void finish_msg(struct streams *s, struct pstream *p, int m)
{
	int k = m % DEPTH;
	mrail_status_t s1 = {0}, s2 = {0};
	CHECK_RC(wait_mon(s, p->rr[k], &s1, 0));
	CHECK_RC(wait_mon(s, p->sr[k], &s2, 0));
	p->rr[k] = p->sr[k] = NULL;
	CHECK_EQ(s1.error, MRAIL_OK);
	CHECK_EQ(s2.error, MRAIL_OK);
	CHECK_EQ(s1.length, STREAM_LEN);
	size_t bad = words_check(p->rb[k], STREAM_WORDS,
				 stream_id(s, m, p->peer, s->me));
	if (bad != STREAM_WORDS) {
		fprintf(stderr, "rank %u: message %d from %u: word %zu wrong\n",
			s->me, m, p->peer, bad);
		exit(1);
	}
}

/*
 * netlab: every rank streams TEST_STREAM_MIB MiB each way with every
 * other rank in 16 MiB messages, DEPTH in flight per peer and way, every
 * one checked. The script takes rail TEST_FAIL_RAIL of the host of rank
 * TEST_FAIL_RANK down (or kills its connections) in the middle. Then:
 * the counters of that rail show the failure (and the reconnect) on
 * every pair that used it and no other rail failed; it is up again and
 * carries payload again with every peer of that host, the wall-clock
 * times of which are printed for the script.
 */
static int stream(mrail_engine_t *e, uint32_t me)
{
	struct streams s;
	int total = env_int("TEST_STREAM_MIB", 1024) / 16;
	int expect = getenv("TEST_EXPECT_FAILOVER") != NULL;

	streams_init(&s, e, me);
	test_barrier(e);
	printf("rank %u: streaming %d x 16 MiB each way with each of %d "
	       "peer(s)\n", me, total, s.nps);
	double t0 = mrail_now();
	for (int m = 0; m < total + DEPTH; m++)
		for (int i = 0; i < s.nps; i++) {
			if (m >= DEPTH)
				finish_msg(&s, &s.ps[i], m - DEPTH);
			if (m < total)
				post_msg(&s, &s.ps[i], m, 11);
		}
	double t1 = mrail_now();
	printf("rank %u: %d MiB each way with each of %d peer(s) in %.2f s, "
	       "checksums ok\n", me, total * 16, s.nps, t1 - t0);

	int bad = 0;
	for (int i = 0; i < s.nps; i++) {
		struct pstream *p = &s.ps[i];
		for (int r = 0; r < p->nrails; r++) {
			struct mrail_rail_stats st;
			CHECK_RC(mrail_rail_stats(e, p->peer, r, &st));
			int failing = p->watch && r == s.fail_rail;
			printf("rank %u peer %u rail %d%s: failures %llu "
			       "reconnects %llu retx %llu B down %.2f s\n", me,
			       p->peer, r, failing ? " (failed)" : "",
			       (unsigned long long)st.failures,
			       (unsigned long long)st.reconnects,
			       (unsigned long long)st.retx_bytes,
			       st.down_seconds);
			if (failing && expect && st.failures < 1) {
				fprintf(stderr, "rank %u peer %u: rail %d: no "
					"failure counted\n", me, p->peer, r);
				bad = 1;
			}
			if (!failing && st.failures > 0) {
				fprintf(stderr, "rank %u peer %u: rail %d failed "
					"too\n", me, p->peer, r);
				bad = 1;
			}
		}
	}
	if (bad)
		exit(1);

	/* Back up (the script brings the link up meanwhile), then used. */
	double until = mrail_now() + 30;
	for (;;) {
		monitor(&s, 1);
		int waiting = 0;
		for (int i = 0; i < s.nps; i++) {
			struct mrail_rail_info info;
			CHECK_RC(mrail_rail_info(e, s.ps[i].peer, s.fail_rail,
						 &info));
			waiting |= s.ps[i].watch && !info.up;
		}
		if (!waiting)
			break;
		if (mrail_now() > until) {
			fprintf(stderr, "rank %u: rail %d not up again after "
				"30 s\n", me, s.fail_rail);
			exit(1);
		}
		if (mrail_progress(e) <= 0)
			usleep(200);
	}
	test_barrier(e);
	uint64_t *before = calloc(s.n, sizeof *before);
	CHECK(before);
	for (int i = 0; i < s.nps; i++) {
		struct mrail_rail_stats st;
		CHECK_RC(mrail_rail_stats(e, s.ps[i].peer, s.fail_rail, &st));
		before[i] = st.tx_bytes + st.rx_bytes;
		post_msg(&s, &s.ps[i], total, 12);
	}
	for (int m = total + 1; m < total + DEPTH; m++)
		for (int i = 0; i < s.nps; i++)
			post_msg(&s, &s.ps[i], m, 12);
	for (int m = total; m < total + DEPTH; m++)
		for (int i = 0; i < s.nps; i++)
			finish_msg(&s, &s.ps[i], m);
	monitor(&s, 1);
	for (int i = 0; i < s.nps; i++) {
		struct pstream *p = &s.ps[i];
		struct mrail_rail_stats st;
		if (!p->watch)
			continue;
		CHECK_RC(mrail_rail_stats(e, p->peer, s.fail_rail, &st));
		uint64_t moved = st.tx_bytes + st.rx_bytes - before[i];
		if (expect && st.reconnects < 1) {
			fprintf(stderr, "rank %u peer %u: rail %d: no reconnect "
				"counted\n", me, p->peer, s.fail_rail);
			exit(1);
		}
		if (moved == 0 || p->back_at == 0 || p->payload_at == 0) {
			fprintf(stderr, "rank %u peer %u: rail %d carried nothing "
				"after coming back (%llu bytes)\n", me, p->peer,
				s.fail_rail, (unsigned long long)moved);
			exit(1);
		}
		printf("rank %u peer %u: rail %d carries payload again (%llu "
		       "bytes in the last exchange); up at %.3f, payload at "
		       "%.3f\n", me, p->peer, s.fail_rail,
		       (unsigned long long)moved, p->back_at, p->payload_at);
	}
	test_barrier(e);
	free(before);
	streams_free(&s);
	return 0;
}

/* What a rank stuck with its peer knows of the rails (stderr). */
static void rails_dump(struct streams *s, const struct pstream *p)
{
	for (int r = 0; r < p->nrails; r++) {
		struct mrail_rail_info info;
		struct mrail_rail_stats st;
		if (mrail_rail_info(s->e, p->peer, r, &info) ||
		    mrail_rail_stats(s->e, p->peer, r, &st))
			continue;
		fprintf(stderr, "rank %u peer %u rail %d: %s, failures %llu, "
			"tx %llu B rx %llu B, tx busy %.2f s rx busy %.2f s\n",
			s->me, p->peer, r, info.state,
			(unsigned long long)st.failures,
			(unsigned long long)st.tx_bytes,
			(unsigned long long)st.rx_bytes, st.tx_busy_seconds,
			st.rx_busy_seconds);
	}
}

/*
 * netlab, every rail down: the same two-way stream, without end, until
 * the script takes every rail of one host down. Then each rank's pending
 * requests must fail with MRAIL_ERR_PEER (or complete, intact) within
 * MRAIL_RAIL_TIMEOUT plus a margin of the last rail to the peer going
 * down, never hang; new requests fail at once; main() destroys the
 * engine. The wall-clock time of the failure is printed for the script.
 */
static int stream_alldown(mrail_engine_t *e, uint32_t me)
{
	struct streams s;
	double timeout = 5, margin = 1.5;
	const char *t = getenv("MRAIL_RAIL_TIMEOUT");
	if (t)
		timeout = atof(t);

	streams_init(&s, e, me);
	CHECK_EQ(s.nps, 1); /* 2 ranks: one peer, which we lose */
	struct pstream *p = &s.ps[0];
	test_barrier(e);
	printf("rank %u: streaming 16 MiB messages each way until every "
	       "rail is down\n", me);
	double start = mrail_now(), err_at = 0, err_wall = 0;
	int m, failed = 0, ok = 0, slot_msg[DEPTH] = {0};
	double limit = 4 * timeout + 30; /* per wait: no hang */
	for (m = 0; !err_at; m++) {
		int k = m % DEPTH;
		if (mrail_now() - start > 120) {
			fprintf(stderr, "rank %u: no failure after 120 s\n", me);
			exit(1);
		}
		if (m >= DEPTH) {
			mrail_status_t s1 = {0}, s2 = {0};
			int which = wait_mon(&s, p->rr[k], &s1,
					     mrail_now() + limit) ? 1
				    : wait_mon(&s, p->sr[k], &s2,
					       mrail_now() + limit) ? 2 : 0;
			if (which) {
				fprintf(stderr, "rank %u: %s of message %d "
					"pending for %.0f s\n", me,
					which == 1 ? "receive" : "send",
					m - DEPTH, limit);
				rails_dump(&s, p);
				exit(1);
			}
			p->rr[k] = p->sr[k] = NULL;
			if (s1.error != MRAIL_OK || s2.error != MRAIL_OK) {
				/* The first failure: the stream ends here. */
				err_at = mrail_now();
				err_wall = wall_now();
				CHECK(s1.error == MRAIL_OK ||
				      s1.error == MRAIL_ERR_PEER);
				CHECK(s2.error == MRAIL_OK ||
				      s2.error == MRAIL_ERR_PEER);
				failed += (s1.error != MRAIL_OK) +
					  (s2.error != MRAIL_OK);
				break;
			}
			CHECK_EQ(s1.length, STREAM_LEN);
			CHECK_EQ(words_check(p->rb[k], STREAM_WORDS,
					     stream_id(&s, m - DEPTH, p->peer, me)),
				 STREAM_WORDS);
			ok++;
		}
		slot_msg[k] = m;
		int rc = mrail_irecv(e, p->peer, p->rb[k], STREAM_LEN, 11,
				     MRAIL_TAG_MASK_ALL, &p->rr[k]);
		if (rc == MRAIL_OK) {
			words_fill(p->sb[k], STREAM_WORDS,
				   stream_id(&s, m, me, p->peer));
			rc = mrail_isend(e, p->peer, p->sb[k], STREAM_LEN, 11,
					 &p->sr[k]);
		}
		if (rc != MRAIL_OK) { /* refused: the gate failed already */
			CHECK_EQ(rc, MRAIL_ERR_PEER);
			err_at = mrail_now();
			err_wall = wall_now();
			failed++;
		}
	}
	/* Whatever is still pending must end, in error or intact, and soon. */
	double drain_until = err_at + timeout + 10;
	for (int k = 0; k < DEPTH; k++) {
		mrail_request_t **rq[2] = {&p->rr[k], &p->sr[k]};
		for (int j = 0; j < 2; j++) {
			mrail_status_t st = {0};
			if (!*rq[j])
				continue;
			if (wait_mon(&s, *rq[j], &st, drain_until) != MRAIL_OK) {
				fprintf(stderr, "rank %u: a request still pending "
					"%.1f s after the first failure\n", me,
					mrail_now() - err_at);
				rails_dump(&s, p);
				exit(1);
			}
			*rq[j] = NULL;
			if (st.error != MRAIL_OK) {
				CHECK_EQ(st.error, MRAIL_ERR_PEER);
				failed++;
			} else if (j == 0) { /* a receive: all of it, intact */
				CHECK_EQ(st.length, STREAM_LEN);
				CHECK_EQ(words_check(p->rb[k], STREAM_WORDS,
						     stream_id(&s, slot_msg[k],
							       p->peer, me)),
					 STREAM_WORDS);
				ok++;
			}
		}
	}
	monitor(&s, 1);
	/* The first error came from the gate failing: MRAIL_RAIL_TIMEOUT
	 * after its last rail went down (seen by polling: 2 ms late at
	 * most, unless the gate failed first). */
	double since = p->all_down_at > 0 ? err_at - p->all_down_at : -1;
	printf("rank %u: alldown: %d message(s) intact, %d request(s) failed "
	       "(MRAIL_ERR_PEER) at %.3f, %.2f s after every rail was down "
	       "(MRAIL_RAIL_TIMEOUT %.1f s)\n", me, ok, failed, err_wall, since,
	       timeout);
	CHECK(failed > 0);
	if (p->all_down_at == 0 || since > timeout + margin) {
		fprintf(stderr, "rank %u: requests failed %.2f s after every "
			"rail was down: more than MRAIL_RAIL_TIMEOUT + %.1f s\n",
			me, since, margin);
		exit(1);
	}
	/* The peer is gone for us: new requests fail at once. */
	mrail_request_t *r;
	CHECK_EQ(mrail_isend(e, p->peer, p->sb[0], 1, 4, &r), MRAIL_ERR_PEER);
	streams_free(&s);
	printf("rank %u: alldown ok: failed at %.3f\n", me, err_wall);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const modes[] = {"survive", "alldown", "stream",
					    "stream-alldown", "unkept"};
	int mode = -1;
	setvbuf(stdout, NULL, _IONBF, 0);
	for (int i = 0; argc == 2 && i < 5; i++)
		if (!strcmp(argv[1], modes[i]))
			mode = i;
	if (mode < 0) {
		fprintf(stderr, "usage: %s survive|alldown|stream|"
			"stream-alldown|unkept\n", argv[0]);
		return 2;
	}
	mrail_engine_t *e = test_engine();
	if (mode < 2 || mode == 4)
		CHECK_EQ(mrail_size(e), 2);
	uint32_t me = mrail_rank(e);
	int rc = mode == 0   ? survive(e, me)
		 : mode == 1 ? alldown(e, me)
		 : mode == 2 ? stream(e, me)
		 : mode == 3 ? stream_alldown(e, me)
			     : unkept(e, me);
	double t = mrail_now();
	CHECK_RC(mrail_engine_destroy(e));
	if (mode == 2 || mode == 3)
		printf("rank %u: engine destroyed in %.2f s\n", me,
		       mrail_now() - t);
	return rc;
}
