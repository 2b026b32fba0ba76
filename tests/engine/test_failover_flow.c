/*
 * Failover with the default settings (docs/failover.md, "Tests"): two
 * ranks on netlab stream for a while, one way or both, while
 * tests/multirail/netlab_failover_flow.sh breaks a rail of one host
 * (link down, flapping, ss -K). Every message arrives intact; no gap
 * between two completions is longer than TEST_FLOW_MAX_GAP (the
 * documented bound: MRAIL_RAIL_TIMEOUT + 2 s); the broken rail counts
 * its failure (TEST_EXPECT_FAILOVER) and no other rail fails; once the
 * link is back the rail is up again and carries payload.
 *
 * Environment: TEST_FAIL_RANK (1) is the host whose rail TEST_FAIL_RAIL
 * (1), interface TEST_FAIL_IF, breaks; TEST_FLOW_SIDE says what that
 * rank does: send (only it sends), recv (only its peer sends), both;
 * TEST_FLOW_LEN bytes per message (16 MiB: rendezvous; a few KiB:
 * eager); TEST_FLOW_SECONDS of streaming; TEST_FLOW_TIMELINE: print
 * the completions per 0.25 s even when the run passes (a failing run
 * always prints them).
 */
#include "harness.h"

#include <sched.h>
#include <time.h>
#include <unistd.h>

enum { DEPTH = 4 };             /* messages in flight per way */
#define TAG_FLOW 16ULL          /* data; TAG_FLOW + 1: the end */
#define TAG_AFTER 32ULL
#define AFTER_LEN (16u << 20)   /* split over every rail */
#define TIMELINE_STEP 0.25      /* s */
enum { TIMELINE_STEPS = 240 };

static double mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double env_num(const char *name, double dflt)
{
	const char *s = getenv(name);
	return s && *s ? atof(s) : dflt;
}

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

struct flow {
	mrail_engine_t *e;
	uint32_t me, peer;
	size_t len;
	int sends, recvs;            /* this rank's roles */
	uint64_t *sb[DEPTH], *rb[DEPTH];
	mrail_request_t *sr[DEPTH], *rr[DEPTH];
	uint64_t sent, posted_send;  /* messages completed / posted */
	uint64_t got, end_count;
	int send_done, recv_done, end_posted;
	uint64_t end_msg;
	double last_event, max_gap, max_gap_wall;
	double t0, t0_wall;
	double bound;                /* TEST_FLOW_MAX_GAP (0: none) */
	int dumped;                  /* the engine's state, once past it */
	/* Completions per TIMELINE_STEP since t0: printed when the run
	 * fails (or TEST_FLOW_TIMELINE is set), to tell a stall from a
	 * slow drain after the failover. */
	unsigned timeline[TIMELINE_STEPS];
};

static void event(struct flow *f)
{
	double now = mono_now();
	if (now - f->last_event > f->max_gap) {
		f->max_gap = now - f->last_event;
		f->max_gap_wall = wall_now();
	}
	f->last_event = now;
	double k = (now - f->t0) / TIMELINE_STEP;
	if (k >= 0 && k < TIMELINE_STEPS)
		f->timeline[(int)k]++;
}

static void timeline_dump(const struct flow *f)
{
	int last = TIMELINE_STEPS - 1;
	while (last > 0 && !f->timeline[last])
		last--;
	fprintf(stderr, "rank %u: completions per %.2f s from %.3f:", f->me,
		TIMELINE_STEP, f->t0_wall);
	for (int k = 0; k <= last; k++)
		fprintf(stderr, " %u", f->timeline[k]);
	fputc('\n', stderr);
}

static void rails_dump(const struct flow *f)
{
	int n = mrail_rail_count(f->e, f->peer);
	for (int r = 0; r < n; r++) {
		struct mrail_rail_info info;
		struct mrail_rail_stats st;
		if (mrail_rail_info(f->e, f->peer, r, &info) ||
		    mrail_rail_stats(f->e, f->peer, r, &st))
			continue;
		fprintf(stderr, "rank %u rail %d: %s, failures %llu, "
			"reconnects %llu, tx %llu B rx %llu B, time scale "
			"%.2f\n", f->me, r, info.state,
			(unsigned long long)st.failures,
			(unsigned long long)st.reconnects,
			(unsigned long long)st.tx_bytes,
			(unsigned long long)st.rx_bytes, st.time_scale);
	}
}

static void post_recv(struct flow *f, int k)
{
	/* Mask ~1: the data tag and the end tag. */
	CHECK_RC(mrail_irecv(f->e, f->peer, f->rb[k], f->len, TAG_FLOW,
			     ~1ULL, &f->rr[k]));
}

/* One step of the sending side: the oldest send done, next one posted. */
static int send_step(struct flow *f, double stop_at)
{
	if (f->send_done)
		return 0;
	if (f->end_posted) {
		mrail_status_t st;
		if (mrail_test(f->e, f->sr[0], &st) != MRAIL_OK)
			return 0;
		CHECK_EQ(st.error, MRAIL_OK);
		event(f);
		f->send_done = 1;
		return 1;
	}
	if (f->posted_send - f->sent == DEPTH || mono_now() > stop_at) {
		if (f->posted_send == f->sent) { /* all done: the end */
			f->end_msg = f->sent;
			CHECK_RC(mrail_isend(f->e, f->peer, &f->end_msg,
					     sizeof f->end_msg, TAG_FLOW + 1,
					     &f->sr[0]));
			f->end_posted = 1;
			return 1;
		}
		int k = (int)(f->sent % DEPTH);
		mrail_status_t st;
		if (mrail_test(f->e, f->sr[k], &st) != MRAIL_OK)
			return 0;
		CHECK_EQ(st.error, MRAIL_OK);
		CHECK_EQ(st.length, f->len);
		f->sent++;
		event(f);
		return 1;
	}
	int k = (int)(f->posted_send % DEPTH);
	words_fill(f->sb[k], f->len / 8, f->posted_send);
	CHECK_RC(mrail_isend(f->e, f->peer, f->sb[k], f->len, TAG_FLOW,
			     &f->sr[k]));
	f->posted_send++;
	return 1;
}

static int recv_step(struct flow *f)
{
	if (f->recv_done)
		return 0;
	int k = (int)(f->got % DEPTH);
	mrail_status_t st;
	if (mrail_test(f->e, f->rr[k], &st) != MRAIL_OK)
		return 0;
	CHECK_EQ(st.error, MRAIL_OK);
	event(f);
	if (st.tag == TAG_FLOW + 1) {
		CHECK_EQ(st.length, sizeof(uint64_t));
		memcpy(&f->end_count, f->rb[k], sizeof f->end_count);
		if (f->end_count != f->got) {
			fprintf(stderr, "rank %u: %llu messages received, the "
				"sender sent %llu\n", f->me,
				(unsigned long long)f->got,
				(unsigned long long)f->end_count);
			exit(1);
		}
		/* Receives posted after the end match nothing. */
		for (int j = 1; j < DEPTH; j++) {
			mrail_request_t *r = f->rr[(k + j) % DEPTH];
			CHECK_RC(mrail_cancel(f->e, r));
			CHECK_RC(mrail_wait(f->e, r, &st));
		}
		f->recv_done = 1;
		return 1;
	}
	CHECK_EQ(st.length, f->len);
	size_t bad = words_check(f->rb[k], f->len / 8, f->got);
	if (bad != f->len / 8) {
		fprintf(stderr, "rank %u: message %llu: word %zu wrong\n",
			f->me, (unsigned long long)f->got, bad);
		exit(1);
	}
	f->got++;
	post_recv(f, k);
	return 1;
}

static void flow_run(struct flow *f, double seconds)
{
	if (f->recvs)
		for (int k = 0; k < DEPTH; k++)
			post_recv(f, k);
	f->send_done = !f->sends;
	f->recv_done = !f->recvs;
	test_barrier(f->e);
	double t0 = mono_now(), stop_at = t0 + seconds;
	f->t0 = t0;
	f->t0_wall = wall_now();
	printf("rank %u: streaming %zu-byte messages (%s%s) at %.3f\n", f->me,
	       f->len, f->sends ? "send" : "", f->recvs ? " recv" : "",
	       wall_now());
	f->last_event = t0;
	unsigned idle = 0;
	while (!f->send_done || !f->recv_done) {
		int n = mrail_progress(f->e);
		n += send_step(f, stop_at) + recv_step(f);
		double quiet = mono_now() - f->last_event;
		/* What this rank waits on, while it waits: the next failure
		 * past the bound tells its cause, not only its length. */
		if (f->bound > 0 && quiet > f->bound && !f->dumped) {
			fprintf(stderr, "rank %u: nothing completed for %.2f s "
				"(sent %llu, received %llu); engine state:\n",
				f->me, quiet, (unsigned long long)f->sent,
				(unsigned long long)f->got);
			mrail_engine_dump(f->e, 2);
			f->dumped = 1;
		}
		if (quiet > 90) {
			fprintf(stderr, "rank %u: nothing completed for 90 s "
				"(sent %llu, received %llu)\n", f->me,
				(unsigned long long)f->sent,
				(unsigned long long)f->got);
			timeline_dump(f);
			rails_dump(f);
			mrail_engine_dump(f->e, 2);
			exit(1);
		}
		if (n > 0) {
			idle = 0;
		} else if (++idle > 64) {
			if (idle < 512)
				sched_yield();
			else
				usleep(100);
		}
	}
	printf("rank %u: flow done in %.2f s: %llu sent, %llu received "
	       "intact; longest wait for a completion %.2f s, ending at "
	       "%.3f\n", f->me, mono_now() - t0, (unsigned long long)f->sent,
	       (unsigned long long)f->got, f->max_gap, f->max_gap_wall);
}

/* The broken rail is up again (the script restored it) and carries a
 * share of 16 MiB messages each way. */
static void after(struct flow *f, int rail)
{
	struct mrail_rail_info info;
	struct mrail_rail_stats st;
	double until = mono_now() + 30;
	for (;;) {
		CHECK_RC(mrail_rail_info(f->e, f->peer, rail, &info));
		if (info.up)
			break;
		if (mono_now() > until) {
			fprintf(stderr, "rank %u: rail %d not up 30 s after "
				"the flow\n", f->me, rail);
			rails_dump(f);
			exit(1);
		}
		if (mrail_progress(f->e) <= 0)
			usleep(200);
	}
	test_barrier(f->e);
	/* The state the split starts from, shown if the rail then takes
	 * next to nothing (its share by bandwidth is a quarter or more). */
	FILE *state = tmpfile();
	if (state)
		mrail_engine_dump(f->e, fileno(state));
	CHECK_RC(mrail_rail_stats(f->e, f->peer, rail, &st));
	uint64_t before = st.tx_bytes + st.rx_bytes;
	uint64_t *sb = malloc(AFTER_LEN), *rb = malloc(AFTER_LEN);
	CHECK(sb && rb);
	for (int m = 0; m < DEPTH; m++) {
		mrail_request_t *r[2];
		mrail_status_t s[2];
		words_fill(sb, AFTER_LEN / 8, 1000 + m * 2 + f->me);
		CHECK_RC(mrail_irecv(f->e, f->peer, rb, AFTER_LEN, TAG_AFTER,
				     MRAIL_TAG_MASK_ALL, &r[0]));
		CHECK_RC(mrail_isend(f->e, f->peer, sb, AFTER_LEN, TAG_AFTER,
				     &r[1]));
		CHECK_RC(mrail_wait_all(f->e, 2, r, s));
		CHECK_EQ(s[0].error, MRAIL_OK);
		CHECK_EQ(s[1].error, MRAIL_OK);
		CHECK_EQ(words_check(rb, AFTER_LEN / 8, 1000 + m * 2 + f->peer),
			 AFTER_LEN / 8);
	}
	CHECK_RC(mrail_rail_stats(f->e, f->peer, rail, &st));
	uint64_t moved = st.tx_bytes + st.rx_bytes - before;
	if (moved < 2ULL * DEPTH * AFTER_LEN / 32 && state) {
		fprintf(stderr, "rank %u: rail %d carried %llu of %llu bytes "
			"after coming back; the engine before:\n", f->me, rail,
			(unsigned long long)moved,
			2ULL * DEPTH * AFTER_LEN);
		rewind(state);
		char line[1024];
		while (fgets(line, sizeof line, state))
			fputs(line, stderr);
	}
	if (state)
		fclose(state);
	if (moved == 0) {
		fprintf(stderr, "rank %u: rail %d carried nothing after "
			"coming back\n", f->me, rail);
		rails_dump(f);
		mrail_engine_dump(f->e, 2);
		exit(1);
	}
	printf("rank %u: rail %d carries payload again (%llu bytes); "
	       "failures %llu reconnects %llu\n", f->me, rail,
	       (unsigned long long)moved, (unsigned long long)st.failures,
	       (unsigned long long)st.reconnects);
	test_barrier(f->e);
	free(sb);
	free(rb);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	mrail_engine_t *e = test_engine();
	CHECK_EQ(mrail_size(e), 2);
	struct flow f = {.e = e, .me = mrail_rank(e)};
	f.peer = 1 - f.me;
	uint32_t fail_rank = (uint32_t)env_num("TEST_FAIL_RANK", 1);
	int rail = (int)env_num("TEST_FAIL_RAIL", 1);
	const char *side = getenv("TEST_FLOW_SIDE");
	const char *fif = getenv("TEST_FAIL_IF");
	double max_gap = env_num("TEST_FLOW_MAX_GAP", 0);
	f.bound = max_gap;
	int expect = getenv("TEST_EXPECT_FAILOVER") != NULL;
	f.len = (size_t)env_num("TEST_FLOW_LEN", 16 << 20) & ~(size_t)7;
	CHECK(f.len >= 8);
	if (!side)
		side = "both";
	int failing = f.me == fail_rank;
	f.sends = !strcmp(side, "both") ||
		  !strcmp(side, failing ? "send" : "recv");
	f.recvs = !strcmp(side, "both") ||
		  !strcmp(side, failing ? "recv" : "send");
	CHECK(f.sends || f.recvs || !strcmp(side, "both"));
	for (int k = 0; k < DEPTH; k++) {
		CHECK(f.sb[k] = malloc(f.len));
		CHECK(f.rb[k] = malloc(f.len));
	}
	CHECK(mrail_rail_count(e, f.peer) > rail);
	if (fif) {
		struct mrail_rail_info info;
		CHECK_RC(mrail_rail_info(e, f.peer, rail, &info));
		const char *ifn = failing ? info.local_if : info.remote_if;
		if (strcmp(ifn, fif)) {
			fprintf(stderr, "rank %u: rail %d is on %s, not %s\n",
				f.me, rail, ifn, fif);
			return 1;
		}
	}

	flow_run(&f, env_num("TEST_FLOW_SECONDS", 14));
	int bad = 0;
	int n = mrail_rail_count(e, f.peer);
	for (int r = 0; r < n; r++) {
		struct mrail_rail_stats st;
		CHECK_RC(mrail_rail_stats(e, f.peer, r, &st));
		printf("rank %u rail %d: failures %llu reconnects %llu retx "
		       "%llu B down %.2f s\n", f.me, r,
		       (unsigned long long)st.failures,
		       (unsigned long long)st.reconnects,
		       (unsigned long long)st.retx_bytes, st.down_seconds);
		if (r == rail && expect && st.failures < 1) {
			fprintf(stderr, "rank %u: rail %d: no failure "
				"counted\n", f.me, r);
			bad = 1;
		}
		if (r != rail && st.failures > 0) {
			fprintf(stderr, "rank %u: rail %d failed too\n", f.me,
				r);
			bad = 1;
		}
	}
	if (max_gap > 0 && f.max_gap > max_gap) {
		fprintf(stderr, "rank %u: waited %.2f s for a completion: "
			"more than %.2f s\n", f.me, f.max_gap, max_gap);
		bad = 1;
	}
	if (bad || getenv("TEST_FLOW_TIMELINE"))
		timeline_dump(&f);
	if (bad) {
		rails_dump(&f);
		return 1;
	}
	after(&f, rail);
	for (int k = 0; k < DEPTH; k++) {
		free(f.sb[k]);
		free(f.rb[k]);
	}
	CHECK_RC(mrail_engine_destroy(e));
	printf("rank %u: flow ok\n", f.me);
	return 0;
}
