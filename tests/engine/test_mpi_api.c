/*
 * The MPI-facing API under mrail-run (-n 2 and -n 3): iprobe, improbe +
 * imrecv (eager, rendezvous, self, truncation, iovec), a race between a
 * matched probe in one thread and any-source receives in another, callbacks
 * (thread, never inside a post, posting from a callback, KEEP,
 * set_callback), caller storage, synchronous sends (checked with an explicit
 * handshake), cancel racing with matching, remote data
 * (MRAIL_REQ_DATA) and immediate completion (MRAIL_REQ_IMMEDIATE).
 */
#include "harness.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { EAGER = 1000, RDV = 200 << 10 };

static mrail_engine_t *E;
static uint32_t me, np;

static void send_wait(uint32_t to, const void *buf, size_t len, uint64_t tag)
{
	mrail_request_t *r;
	mrail_status_t st;
	CHECK_RC(mrail_isend(E, to, buf, len, tag, &r));
	CHECK_RC(mrail_wait(E, r, &st));
	CHECK_RC(st.error);
}

static void recv_wait(uint32_t from, void *buf, size_t len, uint64_t tag)
{
	mrail_request_t *r;
	mrail_status_t st;
	CHECK_RC(mrail_irecv(E, from, buf, len, tag, MRAIL_TAG_MASK_ALL, &r));
	CHECK_RC(mrail_wait(E, r, &st));
	CHECK_RC(st.error);
}

/* Progress until a matching message is unexpected here. */
static mrail_status_t probe_until(mrail_peer_t src, uint64_t tag)
{
	mrail_status_t st;
	int flag = 0;
	while (!flag)
		CHECK_RC(mrail_iprobe(E, src, tag, MRAIL_TAG_MASK_ALL, &flag, &st));
	return st;
}

static mrail_message_t *mprobe_until(mrail_peer_t src, uint64_t tag,
				     mrail_status_t *st)
{
	mrail_message_t *m = NULL;
	int flag = 0;
	while (!flag)
		CHECK_RC(mrail_improbe(E, src, tag, MRAIL_TAG_MASK_ALL, &flag,
				       &m, st));
	CHECK(m != NULL);
	return m;
}

/* ---- iprobe ----------------------------------------------------------- */
static void test_iprobe(uint8_t *a, uint8_t *b)
{
	if (me != 0) {
		pattern_fill(a, EAGER, 100 + me);
		pattern_fill(b, RDV, 200 + me);
		if (me == 1) {
			send_wait(0, a, EAGER, 100);
			send_wait(0, b, RDV, 101);
		} else {
			send_wait(0, a, EAGER, 102);
		}
		return;
	}
	mrail_status_t st = probe_until(1, 100);
	CHECK_EQ(st.source, 1);
	CHECK_EQ(st.tag, 100);
	CHECK_EQ(st.length, EAGER);
	CHECK_RC(st.error);
	st = probe_until(1, 101);
	CHECK_EQ(st.length, RDV);
	/* Probing does not take it: a mask-0 probe still finds the first. */
	int flag = 0;
	CHECK_RC(mrail_iprobe(E, MRAIL_ANY_PEER, 0, 0, &flag, &st));
	CHECK(flag == 1);
	CHECK(st.tag == 100 || st.tag == 102);
	CHECK_RC(mrail_iprobe(E, 1, 999, MRAIL_TAG_MASK_ALL, &flag, &st));
	CHECK(flag == 0);
	if (np > 2) {
		st = probe_until(MRAIL_ANY_PEER, 102);
		CHECK_EQ(st.source, 2);
		recv_wait(2, a, EAGER, 102);
		CHECK_EQ(pattern_check(a, EAGER, 102), EAGER);
	}
	recv_wait(1, a, EAGER, 100);
	CHECK_EQ(pattern_check(a, EAGER, 101), EAGER);
	recv_wait(1, b, RDV, 101);
	CHECK_EQ(pattern_check(b, RDV, 201), RDV);
	CHECK_EQ(mrail_iprobe(E, 77, 0, 0, &flag, NULL), MRAIL_ERR_NOT_FOUND);
}

/* ---- improbe / imrecv ------------------------------------------------- */
static void imrecv_check(mrail_message_t *m, void *buf, size_t cap,
			 size_t want_len, int want_err, uint64_t id)
{
	mrail_request_t *r;
	mrail_status_t st;
	CHECK_RC(mrail_imrecv(E, buf, cap, m, &r));
	CHECK_RC(mrail_wait(E, r, &st));
	CHECK_EQ(st.error, want_err);
	CHECK_EQ(st.length, want_len);
	CHECK_EQ(pattern_check(buf, want_len, id), want_len);
}

static void test_improbe(uint8_t *a, uint8_t *b)
{
	mrail_status_t st;
	mrail_request_t *r, *other;
	uint8_t go = 1;
	int flag;

	if (me == 1) {
		pattern_fill(a, EAGER, 300);
		pattern_fill(b, RDV, 301);
		mrail_request_t *s4[4];
		CHECK_RC(mrail_isend(E, 0, a, EAGER, 200, &s4[0]));
		CHECK_RC(mrail_isend(E, 0, b, RDV, 201, &s4[1]));
		CHECK_RC(mrail_isend(E, 0, a, EAGER, 202, &s4[2])); /* truncated */
		CHECK_RC(mrail_isend(E, 0, b, RDV, 203, &s4[3]));   /* truncated */
		CHECK_RC(mrail_wait_all(E, 4, s4, NULL));
		recv_wait(0, &go, 1, 210);
		pattern_fill(a, EAGER, 302);
		send_wait(0, a, EAGER, 200);  /* for the receive posted */
		return;
	}
	if (me != 0)
		return;
	/* Eager: once taken, no receive and no probe can see it. */
	mrail_message_t *m = mprobe_until(1, 200, &st);
	CHECK_EQ(st.length, EAGER);
	CHECK_RC(mrail_irecv(E, 1, a + EAGER, EAGER, 200, MRAIL_TAG_MASK_ALL,
			     &other));
	probe_until(1, 203); /* everything has arrived */
	CHECK_RC(mrail_iprobe(E, 1, 200, MRAIL_TAG_MASK_ALL, &flag, NULL));
	CHECK(flag == 0);
	CHECK_EQ(mrail_test(E, other, &st), MRAIL_ERR_AGAIN);
	imrecv_check(m, a, EAGER, EAGER, MRAIL_OK, 300);
	/* A bad handle, or one already received, is refused. */
	CHECK_EQ(mrail_imrecv(E, a, EAGER, m, &r), MRAIL_ERR_INVALID);
	/* Rendezvous, into an iovec of three pieces. */
	m = mprobe_until(1, 201, &st);
	CHECK_EQ(st.length, RDV);
	struct iovec iov[3] = {{b, 1000}, {b + 1000, 50000},
			       {b + 51000, RDV - 51000}};
	CHECK_RC(mrail_imrecvv(E, iov, 3, m, &r));
	CHECK_RC(mrail_wait(E, r, &st));
	CHECK_RC(st.error);
	CHECK_EQ(pattern_check(b, RDV, 301), RDV);
	/* Truncation, eager and rendezvous. */
	m = mprobe_until(1, 202, &st);
	imrecv_check(m, a, 100, 100, MRAIL_ERR_TRUNCATE, 300);
	m = mprobe_until(1, 203, &st);
	memset(b, 0, RDV);
	imrecv_check(m, b, 70000, 70000, MRAIL_ERR_TRUNCATE, 301);
	CHECK(b[70000] == 0);
	/* The posted receive gets the next message, not the probed one. */
	send_wait(1, &go, 1, 210);
	CHECK_RC(mrail_wait(E, other, &st));
	CHECK_EQ(pattern_check(a + EAGER, EAGER, 302), EAGER);

	/* Messages to self, eager and large. */
	mrail_request_t *s[2];
	pattern_fill(a, EAGER, 310);
	pattern_fill(b, RDV, 311);
	CHECK_RC(mrail_isend(E, me, a, EAGER, 220, &s[0]));
	CHECK_RC(mrail_isend(E, me, b, RDV, 221, &s[1]));
	uint8_t *c = malloc(RDV);
	CHECK(c);
	m = mprobe_until(me, 221, &st);
	CHECK_EQ(st.length, RDV);
	CHECK_EQ(st.source, me);
	imrecv_check(m, c, RDV, RDV, MRAIL_OK, 311);
	m = mprobe_until(MRAIL_ANY_PEER, 220, &st);
	imrecv_check(m, c, EAGER, EAGER, MRAIL_OK, 310);
	CHECK_RC(mrail_wait_all(E, 2, s, NULL));
	free(c);
}

/* ---- race: improbe in one thread, any-source irecv in another --------- */
enum { RACE_N = 150, RACE_TAG = 300 };
static atomic_int race_total, race_by_probe, race_by_recv;
static int race_expected;
static unsigned char race_seen[3][RACE_N];
static pthread_mutex_t race_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t race_len(int i)
{
	return i % 3 == 2 ? 40000 : 64; /* some rendezvous too */
}

static void race_record(const uint8_t *buf, const mrail_status_t *st)
{
	uint32_t src = buf[0], idx = buf[1] | (uint32_t)buf[2] << 8;
	CHECK_RC(st->error);
	CHECK(src == st->source && src >= 1 && src < 3 && idx < RACE_N);
	CHECK_EQ(st->length, race_len((int)idx));
	CHECK(buf[st->length - 1] == (uint8_t)(idx * 7));
	pthread_mutex_lock(&race_lock);
	race_seen[src][idx]++;
	pthread_mutex_unlock(&race_lock);
	atomic_fetch_add(&race_total, 1);
}

static void *race_prober(void *arg)
{
	uint8_t *buf = malloc(40000);
	(void)arg;
	CHECK(buf);
	while (atomic_load(&race_total) < race_expected) {
		mrail_message_t *m;
		mrail_status_t st;
		mrail_request_t *r;
		int flag;
		CHECK_RC(mrail_improbe(E, MRAIL_ANY_PEER, RACE_TAG,
				       MRAIL_TAG_MASK_ALL, &flag, &m, &st));
		if (!flag)
			continue;
		CHECK_RC(mrail_imrecv(E, buf, 40000, m, &r));
		CHECK_RC(mrail_wait(E, r, &st));
		race_record(buf, &st);
		atomic_fetch_add(&race_by_probe, 1);
	}
	free(buf);
	return NULL;
}

static void *race_receiver(void *arg)
{
	uint8_t *buf = malloc(40000);
	(void)arg;
	CHECK(buf);
	for (;;) {
		mrail_request_t *r;
		mrail_status_t st;
		CHECK_RC(mrail_irecv(E, MRAIL_ANY_PEER, buf, 40000, RACE_TAG,
				     MRAIL_TAG_MASK_ALL, &r));
		int rc;
		while ((rc = mrail_test(E, r, &st)) == MRAIL_ERR_AGAIN &&
		       atomic_load(&race_total) < race_expected)
			;
		if (rc == MRAIL_ERR_AGAIN) {
			/* All were received: nothing may match it now. */
			CHECK_RC(mrail_cancel(E, r));
			CHECK_RC(mrail_wait(E, r, &st));
			CHECK_EQ(st.error, MRAIL_ERR_CANCELED);
			break;
		}
		race_record(buf, &st);
		atomic_fetch_add(&race_by_recv, 1);
	}
	free(buf);
	return NULL;
}

static void test_race(void)
{
	uint32_t senders = np < 3 ? np - 1 : 2;
	if (me >= 1 && me <= senders) {
		uint8_t *buf = calloc(1, 40000);
		mrail_request_t *r[RACE_N];
		CHECK(buf);
		/* One buffer per message: they are all in flight at once. */
		uint8_t *bufs = malloc((size_t)RACE_N * 40000);
		CHECK(bufs);
		for (int i = 0; i < RACE_N; i++) {
			uint8_t *p = bufs + (size_t)i * 40000;
			p[0] = (uint8_t)me;
			p[1] = (uint8_t)i;
			p[2] = (uint8_t)(i >> 8);
			p[race_len(i) - 1] = (uint8_t)(i * 7);
			CHECK_RC(mrail_isend(E, 0, p, race_len(i), RACE_TAG,
					     &r[i]));
		}
		CHECK_RC(mrail_wait_all(E, RACE_N, r, NULL));
		free(bufs);
		free(buf);
		return;
	}
	if (me != 0)
		return;
	race_expected = (int)senders * RACE_N;
	pthread_t t[2];
	CHECK(pthread_create(&t[0], NULL, race_prober, NULL) == 0);
	CHECK(pthread_create(&t[1], NULL, race_receiver, NULL) == 0);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	for (uint32_t s = 1; s <= senders; s++)
		for (int i = 0; i < RACE_N; i++)
			CHECK_EQ(race_seen[s][i], 1);
	printf("race: %d messages, %d by improbe, %d by irecv, each once\n",
	       race_expected, atomic_load(&race_by_probe),
	       atomic_load(&race_by_recv));
}

/* ---- callbacks ---------------------------------------------------------- */
struct cb_state {
	int calls;
	mrail_status_t st;
	pthread_t thread;
	mrail_request_t *req;
};

static void cb_note(mrail_request_t *req, const mrail_status_t *st, void *ctx)
{
	struct cb_state *s = ctx;
	s->calls++;
	s->st = *st;
	s->thread = pthread_self();
	s->req = req;
}

/* Ping-pong driven only by callbacks: each receive's callback posts the
 * reply and the next receive. */
enum { PP_ROUNDS = 20 };
static int pp_round, pp_sends;
static uint64_t pp_buf[2];

static void pp_sent(mrail_request_t *req, const mrail_status_t *st, void *ctx)
{
	(void)req;
	(void)ctx;
	CHECK_RC(st->error);
	pp_sends++;
}

static void pp_recv(mrail_request_t *req, const mrail_status_t *st, void *ctx)
{
	struct mrail_req_args a = MRAIL_REQ_ARGS_INIT;
	mrail_request_t *r;
	(void)req;
	(void)ctx;
	CHECK_RC(st->error);
	CHECK_EQ(pp_buf[0], (uint64_t)pp_round);
	pp_round++;
	pp_buf[1] = (uint64_t)pp_round;
	a.cb = pp_sent;
	CHECK_RC(mrail_isend_x(E, 1, &pp_buf[1], 8, 410, &a, &r));
	if (pp_round < PP_ROUNDS) {
		a.cb = pp_recv;
		CHECK_RC(mrail_irecv_x(E, 1, &pp_buf[0], 8, 411,
				       MRAIL_TAG_MASK_ALL, &a, &r));
	}
}

static void test_callbacks(uint8_t *a)
{
	struct mrail_req_args args = MRAIL_REQ_ARGS_INIT;
	struct cb_state s = {0};
	mrail_request_t *r;
	mrail_status_t st;

	if (me == 1) {
		uint64_t v;
		for (int i = 0; i < PP_ROUNDS; i++) {
			v = (uint64_t)i;
			send_wait(0, &v, 8, 411);
			recv_wait(0, &v, 8, 410);
			CHECK_EQ(v, (uint64_t)i + 1);
		}
		pattern_fill(a, EAGER, 400);
		send_wait(0, a, EAGER, 400);
		return;
	}
	if (me != 0)
		return;
	/* A send to self completes inside isend: its callback must not. */
	args.cb = cb_note;
	args.cb_ctx = &s;
	CHECK_RC(mrail_isend_x(E, me, a, 16, 401, &args, &r));
	CHECK_EQ(s.calls, 0);
	CHECK_RC(mrail_irecv_x(E, me, a + 16, 16, 401, MRAIL_TAG_MASK_ALL,
			       &args, &r));
	CHECK_EQ(s.calls, 0);
	while (s.calls < 2)
		CHECK(mrail_progress(E) >= 0);
	CHECK(pthread_equal(s.thread, pthread_self()));
	CHECK_RC(s.st.error);
	CHECK_EQ(s.st.length, 16);

	/* Posting from callbacks. */
	struct mrail_req_args pa = MRAIL_REQ_ARGS_INIT;
	pa.cb = pp_recv;
	CHECK_RC(mrail_irecv_x(E, 1, &pp_buf[0], 8, 411, MRAIL_TAG_MASK_ALL,
			       &pa, &r));
	while (pp_round < PP_ROUNDS || pp_sends < PP_ROUNDS)
		CHECK(mrail_progress(E) >= 0);

	/* KEEP: the status stays for test/wait after the callback. */
	memset(&s, 0, sizeof s);
	args.flags = MRAIL_REQ_KEEP;
	CHECK_RC(mrail_irecv_x(E, 1, a, EAGER, 400, MRAIL_TAG_MASK_ALL, &args,
			       &r));
	CHECK_RC(mrail_wait(E, r, &st));
	CHECK_EQ(s.calls, 1); /* wait reports it after its callback */
	CHECK(s.req == r);
	CHECK_RC(st.error);
	CHECK_EQ(st.length, EAGER);
	CHECK_EQ(pattern_check(a, EAGER, 400), EAGER);

	/* set_callback on a request already complete; only once. */
	memset(&s, 0, sizeof s);
	CHECK_RC(mrail_isend(E, me, a, 8, 402, &r));
	CHECK_RC(mrail_request_set_callback(r, cb_note, &s));
	CHECK_EQ(mrail_request_set_callback(r, cb_note, &s), MRAIL_ERR_INVALID);
	CHECK_EQ(s.calls, 0);
	while (s.calls < 1)
		mrail_progress(E);
	recv_wait(me, a, 8, 402);
	/* Bad args. */
	struct mrail_req_args bad = MRAIL_REQ_ARGS_INIT;
	bad.version = 99;
	CHECK_EQ(mrail_isend_x(E, me, a, 8, 1, &bad, &r), MRAIL_ERR_INVALID);
	bad = (struct mrail_req_args)MRAIL_REQ_ARGS_INIT;
	bad.flags = MRAIL_REQ_SYNC;
	CHECK_EQ(mrail_irecv_x(E, me, a, 8, 1, 0, &bad, &r), MRAIL_ERR_INVALID);
}

/* ---- caller storage ----------------------------------------------------- */
enum { STORE_N = 32, STORE_ROUNDS = 10 };
static _Alignas(max_align_t) unsigned char storage[STORE_N][1024];

/*
 * What Open MPI does under MPI_THREAD_MULTIPLE: the callback completes the
 * MPI request, another thread frees it and posts its next receive into the
 * same memory while the engine is still returning from the callback. Here
 * the callback itself posts into its own storage a receive that matches a
 * rendezvous already waiting (so its transfer starts inside the post); the
 * engine must not touch the storage once the callback returned (it used
 * to free the new receive's rendezvous ranges: a crash on its arrival).
 */
enum { REUSE_TAG = 510 };
static uint8_t *reuse_buf[2];
static int reuse_calls;
static mrail_status_t reuse_st[2];

static void reuse_second(mrail_request_t *r, const mrail_status_t *st,
			 void *ctx)
{
	(void)r;
	(void)ctx;
	reuse_st[1] = *st;
	reuse_calls++;
}

static void reuse_first(mrail_request_t *r, const mrail_status_t *st,
			void *ctx)
{
	struct mrail_req_args a = MRAIL_REQ_ARGS_INIT;
	mrail_request_t *again;
	(void)ctx;
	reuse_st[0] = *st;
	reuse_calls++;
	a.storage = r;
	a.cb = reuse_second;
	CHECK_RC(mrail_irecv_x(E, 1, reuse_buf[1], RDV, REUSE_TAG + 1,
			       MRAIL_TAG_MASK_ALL, &a, &again));
	CHECK((void *)again == (void *)r);
}

static void test_storage_reused_in_callback(void)
{
	mrail_request_t *r[2];
	mrail_status_t st;

	for (int i = 0; i < 2; i++) {
		reuse_buf[i] = malloc(RDV);
		CHECK(reuse_buf[i]);
	}
	if (me == 1) {
		for (int i = 0; i < 2; i++) {
			pattern_fill(reuse_buf[i], RDV, REUSE_TAG + i);
			CHECK_RC(mrail_isend(E, 0, reuse_buf[i], RDV,
					     REUSE_TAG + i, &r[i]));
		}
		CHECK_RC(mrail_wait_all(E, 2, r, NULL));
	} else if (me == 0) {
		struct mrail_req_args a = MRAIL_REQ_ARGS_INIT;
		int flag = 0;
		/* Both announcements here (they match in the order sent). */
		while (!flag)
			CHECK_RC(mrail_iprobe(E, 1, REUSE_TAG + 1,
					      MRAIL_TAG_MASK_ALL, &flag, &st));
		a.storage = storage[0];
		a.cb = reuse_first;
		CHECK_RC(mrail_irecv_x(E, 1, reuse_buf[0], RDV, REUSE_TAG,
				       MRAIL_TAG_MASK_ALL, &a, &r[0]));
		while (reuse_calls < 2)
			CHECK(mrail_progress(E) >= 0);
		for (int i = 0; i < 2; i++) {
			CHECK_RC(reuse_st[i].error);
			CHECK_EQ(reuse_st[i].length, RDV);
			CHECK_EQ(pattern_check(reuse_buf[i], RDV,
					       REUSE_TAG + i), RDV);
		}
	}
	for (int i = 0; i < 2; i++)
		free(reuse_buf[i]);
}

static void test_storage(void)
{
	mrail_request_t *r[STORE_N];
	mrail_status_t st[STORE_N];
	uint64_t v[STORE_N];
	struct mrail_req_args a = MRAIL_REQ_ARGS_INIT;

	CHECK(mrail_request_size() <= sizeof storage[0]);
	if (me > 1)
		return;
	uint32_t other = 1 - me;
	/* Static memory: the engine must never free() it, and may reuse it
	 * at once after test/wait. */
	for (int round = 0; round < STORE_ROUNDS; round++) {
		for (int i = 0; i < STORE_N; i++) {
			a.storage = storage[i];
			if (me == 0) {
				CHECK_RC(mrail_irecv_x(E, other, &v[i], 8, 500,
						       MRAIL_TAG_MASK_ALL, &a,
						       &r[i]));
			} else {
				v[i] = (uint64_t)(round * STORE_N + i);
				CHECK_RC(mrail_isend_x(E, other, &v[i], 8, 500,
						       &a, &r[i]));
			}
			CHECK((void *)r[i] == (void *)storage[i]);
		}
		CHECK_RC(mrail_wait_all(E, STORE_N, r, st));
		for (int i = 0; i < STORE_N && me == 0; i++)
			CHECK_EQ(v[i], (uint64_t)(round * STORE_N + i));
	}
	/* Misaligned storage is refused. */
	a.storage = storage[0] + 1;
	CHECK_EQ(mrail_isend_x(E, other, v, 8, 500, &a, &r[0]),
		 MRAIL_ERR_INVALID);
	test_storage_reused_in_callback();
}

/* ---- immediate completion (MRAIL_REQ_IMMEDIATE) ------------------------- */
/*
 * A send that completes inside isend hands back no request: its buffer
 * and storage are the caller's at once (rewritten here right after each
 * post: the receiver must still see what was sent), and its callback is
 * never called. A send that cannot complete inside (rendezvous,
 * synchronous) gets a request as usual. Rank 1 floods rank 0 with many
 * more messages than the receiver's credit covers without ever calling
 * progress between posts: nothing may be lost or reordered.
 */
enum { IMM_N = 4000, IMM_QUIET = 16, IMM_TAG = 520 };

/*
 * Receives with MRAIL_REQ_IMMEDIATE (rank 0; rank 1 sent IMM_TAG + 5 and
 * + 6): one that finds its message here completes inside the post, its
 * callback run before the call returns and no handle given back (with
 * KEEP: the handle, collectable); one whose message is not here yet is an
 * ordinary request whose callback runs later, once; without a callback
 * the flag changes nothing.
 */
static void test_immediate_recv(struct mrail_req_args *a, struct cb_state *s)
{
	mrail_request_t *r, *sr;
	mrail_status_t st;
	uint64_t v = 0, out;

	a->flags = MRAIL_REQ_IMMEDIATE;
	/* From a peer, unexpected here. */
	probe_until(1, IMM_TAG + 5);
	s->calls = 0;
	r = (mrail_request_t *)&v; /* must be overwritten */
	CHECK_RC(mrail_irecv_x(E, 1, &v, 8, IMM_TAG + 5, MRAIL_TAG_MASK_ALL, a,
			       &r));
	CHECK(r == NULL);
	CHECK_EQ(s->calls, 1);
	CHECK(pthread_equal(s->thread, pthread_self()));
	CHECK_RC(s->st.error);
	CHECK_EQ(s->st.source, 1);
	CHECK_EQ(s->st.tag, IMM_TAG + 5);
	CHECK_EQ(s->st.length, 8);
	CHECK_EQ(v, 9);
	/* Matched probe, then imrecv: done inside too. */
	mrail_message_t *m = NULL;
	int flag = 0;
	while (!flag)
		CHECK_RC(mrail_improbe(E, 1, IMM_TAG + 6, MRAIL_TAG_MASK_ALL,
				       &flag, &m, &st));
	CHECK_RC(mrail_imrecv_x(E, &v, 8, m, a, &r));
	CHECK(r == NULL);
	CHECK_EQ(s->calls, 2);
	CHECK_EQ(v, 10);
	/* Not here yet: a request, its callback later and once. */
	s->calls = 0;
	CHECK_RC(mrail_irecv_x(E, me, &v, 8, IMM_TAG + 7, MRAIL_TAG_MASK_ALL, a,
			       &r));
	CHECK(r != NULL);
	CHECK_EQ(s->calls, 0);
	out = 11;
	CHECK_RC(mrail_isend(E, me, &out, 8, IMM_TAG + 7, &sr));
	CHECK_RC(mrail_wait(E, sr, &st));
	while (s->calls == 0)
		CHECK(mrail_progress(E) >= 0);
	CHECK_EQ(v, 11);
	for (int i = 0; i < 100; i++)
		CHECK(mrail_progress(E) >= 0);
	CHECK_EQ(s->calls, 1);
	/* KEEP: the callback inside, the handle collectable at once. */
	out = 12;
	CHECK_RC(mrail_isend(E, me, &out, 8, IMM_TAG + 8, &sr));
	a->flags = MRAIL_REQ_IMMEDIATE | MRAIL_REQ_KEEP;
	a->storage = NULL;
	CHECK_RC(mrail_irecv_x(E, me, &v, 8, IMM_TAG + 8, MRAIL_TAG_MASK_ALL, a,
			       &r));
	CHECK(r != NULL);
	CHECK_EQ(s->calls, 2);
	CHECK_RC(mrail_test(E, r, &st));
	CHECK_EQ(st.length, 8);
	CHECK_EQ(v, 12);
	CHECK_RC(mrail_wait(E, sr, &st));
	/* No callback: an ordinary request. */
	struct mrail_req_args plain = MRAIL_REQ_ARGS_INIT;
	plain.flags = MRAIL_REQ_IMMEDIATE;
	out = 13;
	CHECK_RC(mrail_isend(E, me, &out, 8, IMM_TAG + 9, &sr));
	CHECK_RC(mrail_irecv_x(E, me, &v, 8, IMM_TAG + 9, MRAIL_TAG_MASK_ALL,
			       &plain, &r));
	CHECK(r != NULL);
	CHECK_RC(mrail_wait(E, r, &st));
	CHECK_EQ(v, 13);
	CHECK_RC(mrail_wait(E, sr, &st));
	CHECK_EQ(s->calls, 2);
	printf("immediate: receives of messages already here done inside "
	       "the post\n");
}

static void test_immediate(uint8_t *big)
{
	struct mrail_req_args a = MRAIL_REQ_ARGS_INIT;
	struct cb_state s = {0};
	static mrail_request_t *pending[IMM_N];
	mrail_request_t *r;
	mrail_status_t st;
	uint64_t v;

	a.flags = MRAIL_REQ_IMMEDIATE;
	if (me > 1)
		return;
	a.cb = cb_note;
	a.cb_ctx = &s;
	a.storage = storage[0];
	if (me == 1) {
		size_t npend = 0;
		for (int i = 0; i < IMM_N; i++) {
			v = (uint64_t)i;
			r = (mrail_request_t *)&v; /* must be overwritten */
			CHECK_RC(mrail_isend_x(E, 0, &v, 8, IMM_TAG, &a, &r));
			if (!r) {
				v = UINT64_MAX; /* the caller's again */
				continue;
			}
			/* Not done inside (queued behind a busy rail):
			 * its buffer and storage are in use until its
			 * callback has run. */
			CHECK((void *)r == (void *)storage[0]);
			npend++;
			while (s.calls < (int)npend)
				CHECK(mrail_progress(E) >= 0);
			CHECK_RC(s.st.error);
		}
		CHECK_EQ(s.calls, (int)npend);
		printf("immediate: %d of %d sends done inside isend\n",
		       IMM_N - (int)npend, IMM_N);
		/* A loaded machine can keep a rail busy at every post of
		 * the flood (ofi tcp in CI: 0 of 4000); a send into an idle
		 * engine is the case that must complete inside. */
		size_t quiet_pend = 0;
		for (int i = 0; i < IMM_QUIET; i++) {
			struct timespec t0, t1;
			clock_gettime(CLOCK_MONOTONIC, &t0);
			do {
				CHECK(mrail_progress(E) >= 0);
				usleep(500);
				clock_gettime(CLOCK_MONOTONIC, &t1);
			} while ((t1.tv_sec - t0.tv_sec) * 1000000000L +
					 (t1.tv_nsec - t0.tv_nsec) <
				 10000000L);
			v = (uint64_t)i;
			CHECK_RC(mrail_isend_x(E, 0, &v, 8, IMM_TAG + 4, &a, &r));
			if (!r)
				continue;
			quiet_pend++;
			npend++;
			while (s.calls < (int)npend)
				CHECK(mrail_progress(E) >= 0);
			CHECK_RC(s.st.error);
		}
		printf("immediate: %d of %d sends into an idle engine done "
		       "inside isend\n", IMM_QUIET - (int)quiet_pend,
		       IMM_QUIET);
		CHECK(npend < IMM_N + IMM_QUIET); /* one at least */
		/* Rendezvous and synchronous sends always give a request. */
		int calls = s.calls;
		pattern_fill(big, RDV, IMM_TAG + 1);
		CHECK_RC(mrail_isend_x(E, 0, big, RDV, IMM_TAG + 1, &a, &r));
		CHECK(r != NULL);
		while (s.calls == calls)
			CHECK(mrail_progress(E) >= 0);
		CHECK_RC(s.st.error);
		CHECK_EQ(s.st.length, RDV);
		a.flags |= MRAIL_REQ_SYNC;
		v = 7;
		CHECK_RC(mrail_isend_x(E, 0, &v, 8, IMM_TAG + 2, &a, &r));
		CHECK(r != NULL);
		while (s.calls == calls + 1)
			CHECK(mrail_progress(E) >= 0);
		CHECK_RC(s.st.error);
		/* For rank 0's receives that find their message here. */
		v = 9;
		send_wait(0, &v, 8, IMM_TAG + 5);
		v = 10;
		send_wait(0, &v, 8, IMM_TAG + 6);
		return;
	}
	/* Rank 0: receive the flood in order, after letting it pile up. */
	usleep(100 * 1000);
	for (int i = 0; i < IMM_N; i++) {
		uint64_t got = UINT64_MAX;
		recv_wait(1, &got, 8, IMM_TAG);
		CHECK_EQ(got, (uint64_t)i);
	}
	for (int i = 0; i < IMM_QUIET; i++) {
		uint64_t got = UINT64_MAX;
		recv_wait(1, &got, 8, IMM_TAG + 4);
		CHECK_EQ(got, (uint64_t)i);
	}
	recv_wait(1, big, RDV, IMM_TAG + 1);
	CHECK_EQ(pattern_check(big, RDV, IMM_TAG + 1), RDV);
	recv_wait(1, &v, 8, IMM_TAG + 2);
	CHECK_EQ(v, 7);
	/* To self: done inside when the receive is posted already. */
	uint64_t in = 0;
	CHECK_RC(mrail_irecv(E, me, &in, 8, IMM_TAG + 3, MRAIL_TAG_MASK_ALL,
			     &pending[0]));
	v = 42;
	a.flags = MRAIL_REQ_IMMEDIATE;
	CHECK_RC(mrail_isend_x(E, me, &v, 8, IMM_TAG + 3, &a, &r));
	CHECK(r == NULL);
	CHECK_RC(mrail_wait(E, pending[0], &st));
	CHECK_EQ(in, 42);
	for (int i = 0; i < 100; i++)
		CHECK(mrail_progress(E) >= 0);
	CHECK_EQ(s.calls, 0);
	test_immediate_recv(&a, &s);
}

/* ---- synchronous sends ------------------------------------------------- */
/*
 * Rank 0 issends; rank 1 proves it holds the message unmatched (probe),
 * says so; rank 0 then sees its send still pending (the only way it could
 * complete is an ack that rank 1 has not sent); then rank 1 receives it.
 */
static void test_ssend_one(uint8_t *buf, size_t len, uint64_t tag)
{
	uint8_t token = 0;
	mrail_request_t *r;
	mrail_status_t st;
	if (me == 0) {
		pattern_fill(buf, len, tag);
		CHECK_RC(mrail_issend(E, 1, buf, len, tag, &r));
		send_wait(1, &token, 1, tag + 1);     /* after it, in order */
		recv_wait(1, &token, 1, tag + 2);     /* "I hold it unmatched" */
		for (int i = 0; i < 50; i++)
			CHECK_EQ(mrail_test(E, r, &st), MRAIL_ERR_AGAIN);
		send_wait(1, &token, 1, tag + 3);     /* "receive it now" */
		CHECK_RC(mrail_wait(E, r, &st));
		CHECK_RC(st.error);
		CHECK_EQ(st.length, len);
	} else if (me == 1) {
		recv_wait(0, &token, 1, tag + 1);
		int flag;
		CHECK_RC(mrail_iprobe(E, 0, tag, MRAIL_TAG_MASK_ALL, &flag, &st));
		CHECK(flag == 1);
		CHECK_EQ(st.length, len);
		send_wait(0, &token, 1, tag + 2);
		recv_wait(0, &token, 1, tag + 3);
		memset(buf, 0, len);
		recv_wait(0, buf, len, tag);
		CHECK_EQ(pattern_check(buf, len, tag), len);
	}
}

static void test_ssend(uint8_t *buf)
{
	test_ssend_one(buf, 64, 600);
	test_ssend_one(buf, RDV, 610);
	test_ssend_one(buf, 0, 620);
	/* Matched by a posted receive on arrival (fast path) and by imrecv. */
	if (me == 0) {
		mrail_request_t *r;
		mrail_status_t st;
		CHECK_RC(mrail_issend(E, 1, buf, 64, 630, &r));
		CHECK_RC(mrail_wait(E, r, &st));
		CHECK_RC(mrail_issend(E, 1, buf, 64, 631, &r));
		CHECK_RC(mrail_wait(E, r, &st));
		/* To self: pending until the receive is posted. */
		CHECK_RC(mrail_issend(E, me, buf, 64, 632, &r));
		for (int i = 0; i < 10; i++)
			CHECK_EQ(mrail_test(E, r, &st), MRAIL_ERR_AGAIN);
		recv_wait(me, buf + 64, 64, 632);
		CHECK_RC(mrail_wait(E, r, &st));
		CHECK_EQ(st.length, 64);
	} else if (me == 1) {
		mrail_status_t st;
		recv_wait(0, buf, 64, 630);
		mrail_message_t *m = mprobe_until(0, 631, &st);
		mrail_request_t *r;
		CHECK_RC(mrail_imrecv(E, buf, 64, m, &r));
		CHECK_RC(mrail_wait(E, r, &st));
	}
}

/* ---- remote data (MRAIL_REQ_DATA) -------------------------------------- */
/*
 * 64 bits beside the payload, reported to the receive's callback, by
 * iprobe_data and by message_data: eager, synchronous, rendezvous, to self,
 * truncated, posted before or after arrival, and mixed with messages that
 * carry none (several records to one packet).
 */
enum { RD_TAG = 900, RD_MIX = 48 };
#define RD_VAL(i) (0xDA7A000000000000ull | (uint64_t)(i) << 8 | 0x5a)

struct rd_seen {
	int done, has;
	uint64_t data;
	mrail_status_t st;
};

static void rd_cb(mrail_request_t *r, const mrail_status_t *st, void *ctx)
{
	struct rd_seen *s = ctx;
	s->has = mrail_request_data(r, &s->data);
	s->st = *st;
	s->done = 1;
}

static void rd_send(uint32_t to, const void *buf, size_t len, uint64_t tag,
		    int with, unsigned flags, uint64_t data,
		    mrail_request_t **r)
{
	struct mrail_req_args a = MRAIL_REQ_ARGS_INIT;
	a.flags = flags | (with ? MRAIL_REQ_DATA : 0);
	a.data = data;
	CHECK_RC(mrail_isend_x(E, to, buf, len, tag, &a, r));
}

static void rd_post(uint32_t from, void *buf, size_t len, uint64_t tag,
		    struct rd_seen *s)
{
	struct mrail_req_args a = MRAIL_REQ_ARGS_INIT;
	mrail_request_t *r;
	memset(s, 0, sizeof *s);
	a.cb = rd_cb;
	a.cb_ctx = s;
	CHECK_RC(mrail_irecv_x(E, from, buf, len, tag, MRAIL_TAG_MASK_ALL, &a,
			       &r));
}

static void rd_wait(struct rd_seen *s)
{
	while (!s->done)
		CHECK(mrail_progress(E) >= 0);
}

/* Receive one message already unexpected here, checking every view of
 * its data. */
static void rd_take_unexpected(uint32_t from, void *buf, size_t len,
			       size_t msg_len, uint64_t tag, int with,
			       uint64_t data)
{
	mrail_status_t st;
	int flag = 0, has = -1;
	uint64_t d = 0;
	while (!flag)
		CHECK_RC(mrail_iprobe_data(E, from, tag, MRAIL_TAG_MASK_ALL,
					   &flag, &st, &has, &d));
	CHECK_EQ(st.length, msg_len);
	CHECK_EQ(has, with);
	if (with)
		CHECK_EQ(d, data);
	mrail_message_t *m = mprobe_until(from, tag, &st);
	d = 0;
	CHECK_EQ(mrail_message_data(m, &d), with);
	if (with)
		CHECK_EQ(d, data);
	struct mrail_req_args a = MRAIL_REQ_ARGS_INIT;
	struct rd_seen s = { 0 };
	mrail_request_t *r;
	a.cb = rd_cb;
	a.cb_ctx = &s;
	CHECK_RC(mrail_imrecv_x(E, buf, len, m, &a, &r));
	rd_wait(&s);
	CHECK_EQ(s.has, with);
	if (with)
		CHECK_EQ(s.data, data);
	CHECK_EQ(s.st.error, msg_len > len ? MRAIL_ERR_TRUNCATE : MRAIL_OK);
	CHECK_EQ(s.st.msg_length, msg_len);
}

static void test_remote_data(uint8_t *buf)
{
	static const size_t sizes[] = { 0, 8, EAGER, RDV };
	mrail_request_t *r;
	mrail_status_t st;
	struct mrail_req_args a = MRAIL_REQ_ARGS_INIT;

	/* Refused: data on a receive; data with a version 1 struct. */
	a.flags = MRAIL_REQ_DATA;
	CHECK_EQ(mrail_irecv_x(E, MRAIL_ANY_PEER, buf, 8, 1, 0, &a, &r),
		 MRAIL_ERR_INVALID);
	a.version = 1;
	CHECK_EQ(mrail_isend_x(E, me, buf, 8, 1, &a, &r), MRAIL_ERR_INVALID);
	if (me > 1)
		return;
	if (me == 1) {
		/* Version 1 structs are still taken (no data). */
		a.flags = 0;
		CHECK_RC(mrail_isend_x(E, 0, buf, 8, RD_TAG, &a, &r));
		CHECK_RC(mrail_wait(E, r, &st));
		/* Unexpected at the receiver: every size, with and without;
		 * synchronous eager. */
		for (int k = 0; k < 4; k++)
			for (int with = 0; with < 2; with++) {
				pattern_fill(buf, sizes[k], RD_TAG + k);
				rd_send(0, buf, sizes[k], RD_TAG + 1 + k, with,
					0, RD_VAL(k), &r);
				CHECK_RC(mrail_wait(E, r, &st));
			}
		rd_send(0, buf, 64, RD_TAG + 10, 1, MRAIL_REQ_SYNC, RD_VAL(10),
			&r);
		CHECK_RC(mrail_wait(E, r, &st));
		/* Posted first (rank 0 says when). */
		recv_wait(0, buf, 1, RD_TAG + 20);
		for (int k = 0; k < 4; k++) {
			rd_send(0, buf, sizes[k], RD_TAG + 21 + k, 1, 0,
				RD_VAL(21 + k), &r);
			CHECK_RC(mrail_wait(E, r, &st));
		}
		/* A burst: records with and without IMM share packets. */
		mrail_request_t *rs[RD_MIX];
		uint64_t v[RD_MIX];
		for (int i = 0; i < RD_MIX; i++) {
			v[i] = (uint64_t)i;
			rd_send(0, &v[i], 8, RD_TAG + 30, i % 3 != 0, 0,
				RD_VAL(100 + i), &rs[i]);
		}
		CHECK_RC(mrail_wait_all(E, RD_MIX, rs, NULL));
		return;
	}
	/* Rank 0. */
	recv_wait(1, buf, 8, RD_TAG);
	for (int k = 0; k < 4; k++)
		for (int with = 0; with < 2; with++) {
			size_t take = sizes[k] > 8 ? sizes[k] - 8 : sizes[k];
			/* With data, also truncated: still reported. */
			rd_take_unexpected(1, buf, with ? take : sizes[k],
					   sizes[k], RD_TAG + 1 + k, with,
					   RD_VAL(k));
			if (!with)
				CHECK_EQ(pattern_check(buf, sizes[k],
						       RD_TAG + k),
					 sizes[k]);
		}
	rd_take_unexpected(1, buf, 64, 64, RD_TAG + 10, 1, RD_VAL(10));
	struct rd_seen s[4];
	uint8_t *big = malloc(4 * (size_t)RDV);
	CHECK(big);
	for (int k = 0; k < 4; k++)
		rd_post(1, big + (size_t)k * RDV, RDV, RD_TAG + 21 + k, &s[k]);
	send_wait(1, buf, 1, RD_TAG + 20);
	for (int k = 0; k < 4; k++) {
		rd_wait(&s[k]);
		CHECK_RC(s[k].st.error);
		CHECK_EQ(s[k].has, 1);
		CHECK_EQ(s[k].data, RD_VAL(21 + k));
	}
	free(big);
	for (int i = 0; i < RD_MIX; i++) {
		uint64_t v = ~0ull;
		struct rd_seen m;
		rd_post(1, &v, 8, RD_TAG + 30, &m);
		rd_wait(&m);
		CHECK_EQ(v, (uint64_t)i);
		CHECK_EQ(m.has, i % 3 != 0);
		if (m.has)
			CHECK_EQ(m.data, RD_VAL(100 + i));
	}
	/* To self: eager (copied at once) and large (waits for the match). */
	for (int k = 2; k < 4; k++) {
		uint8_t *out = malloc(sizes[k]);
		CHECK(out);
		pattern_fill(out, sizes[k], 77);
		rd_send(me, out, sizes[k], RD_TAG + 40 + k, 1, 0,
			RD_VAL(40 + k), &r);
		rd_take_unexpected(me, buf, sizes[k], sizes[k],
				   RD_TAG + 40 + k, 1, RD_VAL(40 + k));
		CHECK_RC(mrail_wait(E, r, &st));
		CHECK_EQ(pattern_check(buf, sizes[k], 77), sizes[k]);
		free(out);
	}
}

/* ---- cancel racing with matching -------------------------------------- */
enum { CANCEL_N = 60 };
static void test_cancel(void)
{
	uint64_t v = 0, go = 0;
	mrail_request_t *r;
	mrail_status_t st;
	int canceled = 0, busy = 0;
	if (me == 1) {
		for (int i = 0; i < CANCEL_N; i++) {
			recv_wait(0, &go, 8, 701);
			v = (uint64_t)i;
			send_wait(0, &v, 8, 700);
			if (i % 3 == 2) /* marker: 700 is matched before it */
				send_wait(0, &v, 8, 702);
		}
		return;
	}
	if (me != 0)
		return;
	struct cb_state s;
	struct mrail_req_args a = MRAIL_REQ_ARGS_INIT;
	a.cb = cb_note;
	a.cb_ctx = &s;
	uint64_t seed = 42;
	for (int i = 0; i < CANCEL_N; i++) {
		int with_cb = i & 1;
		memset(&s, 0, sizeof s);
		v = UINT64_MAX;
		if (with_cb)
			CHECK_RC(mrail_irecv_x(E, 1, &v, 8, 700,
					       MRAIL_TAG_MASK_ALL, &a, &r));
		else
			CHECK_RC(mrail_irecv(E, 1, &v, 8, 700,
					     MRAIL_TAG_MASK_ALL, &r));
		send_wait(1, &go, 8, 701);
		if (i % 3 == 2) {
			/* Messages from one peer match in the order sent:
			 * once the marker sent after it is here, 700 is
			 * matched, and cancel must say so. (Counting arrivals
			 * instead raced with control records.) */
			uint64_t mark;
			recv_wait(1, &mark, 8, 702);
			int rc = with_cb && s.calls ? MRAIL_ERR_BUSY
						    : mrail_cancel(E, r);
			CHECK_EQ(rc, MRAIL_ERR_BUSY);
		}
		/* A random while (the mix of outcomes, not their
		 * correctness, depends on it). */
		struct timespec t0, t1;
		long spin_ns = (long)(rnd_next(&seed) % 400000);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			mrail_progress(E); /* callbacks may run here */
			clock_gettime(CLOCK_MONOTONIC, &t1);
		} while ((t1.tv_sec - t0.tv_sec) * 1000000000L +
			 (t1.tv_nsec - t0.tv_nsec) < spin_ns);
		int rc = with_cb && s.calls ? MRAIL_ERR_BUSY : mrail_cancel(E, r);
		CHECK(rc == MRAIL_OK || rc == MRAIL_ERR_BUSY);
		if (with_cb) {
			while (!s.calls)
				mrail_progress(E);
			st = s.st;
		} else {
			CHECK_RC(mrail_wait(E, r, &st));
		}
		if (rc == MRAIL_OK) {
			canceled++;
			CHECK_EQ(st.error, MRAIL_ERR_CANCELED);
			CHECK_EQ(v, UINT64_MAX); /* nothing written */
			recv_wait(1, &v, 8, 700); /* the message is still there */
		} else {
			busy++;
			CHECK_RC(st.error);
		}
		CHECK_EQ(v, (uint64_t)i);
	}
	/* A send cannot be canceled. */
	CHECK_RC(mrail_isend(E, me, &v, 8, 702, &r));
	CHECK_EQ(mrail_cancel(E, r), MRAIL_ERR_INVALID);
	recv_wait(me, &go, 8, 702);
	CHECK_RC(mrail_wait(E, r, &st));
	printf("cancel: %d canceled, %d already matched\n", canceled, busy);
}

int main(void)
{
	E = test_engine();
	me = mrail_rank(E);
	np = mrail_size(E);
	CHECK(np >= 2);
	uint8_t *a = malloc(2 * EAGER), *b = malloc(RDV);
	CHECK(a && b);
	test_barrier(E);
	test_iprobe(a, b);
	test_barrier(E);
	test_improbe(a, b);
	test_barrier(E);
	test_race();
	test_barrier(E);
	test_callbacks(a);
	test_barrier(E);
	test_storage();
	test_barrier(E);
	test_ssend(b);
	test_barrier(E);
	test_cancel();
	test_barrier(E);
	test_remote_data(b);
	test_barrier(E);
	test_immediate(b);
	test_barrier(E);
	free(a);
	free(b);
	CHECK_RC(mrail_engine_destroy(E));
	if (me == 0)
		printf("test_mpi_api: %u processes OK\n", np);
	return 0;
}
