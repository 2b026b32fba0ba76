/*
 * mrail_wait_fd / mrail_wait_prepare as an event loop uses them (two
 * ranks under mrail-run, whatever rails the environment gives):
 * - a receive posted long before its message: the receiver sleeps in
 *   poll() on the descriptor without a timeout and wakes when the message
 *   comes (an eager one, then a rendezvous of 1 MiB), having woken only
 *   at its timers' pace meanwhile, not spun;
 * - an idle engine (its timer at 1 s) is woken by a message it did not
 *   ask for yet (found unexpected);
 * - with a request pending, the timer wakes the descriptor by itself;
 * - an idle engine (nothing in flight) sleeps 300 ms without a wake-up;
 * - bad use: prepare before mrail_wait_fd, NULL arguments.
 */
#include "harness.h"

#include <poll.h>
#include <time.h>
#include <unistd.h>

enum { BIG = 1 << 20, DELAY_MS = 400 };

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Until r completes, sleep on fd between rounds; returns the sleeps. */
static unsigned wait_sleeping(mrail_engine_t *e, int fd, mrail_request_t *r,
			      mrail_status_t *st)
{
	unsigned sleeps = 0;
	double end = now_s() + 30;
	for (;;) {
		int rc = mrail_test(e, r, st);
		if (rc == MRAIL_OK)
			return sleeps;
		CHECK(rc == MRAIL_ERR_AGAIN);
		CHECK(now_s() < end);
		rc = mrail_wait_prepare(e);
		if (rc == MRAIL_ERR_AGAIN)
			continue;
		CHECK_RC(rc);
		struct pollfd p = {fd, POLLIN, 0};
		CHECK(poll(&p, 1, -1) == 1);
		sleeps++;
	}
}

int main(void)
{
	mrail_engine_t *e = test_engine();
	uint32_t me = mrail_rank(e);
	int fd = -1, fd2 = -1;
	mrail_request_t *r;
	mrail_status_t st;

	CHECK(mrail_size(e) == 2);
	CHECK(mrail_wait_prepare(e) == MRAIL_ERR_INVALID); /* no fd yet */
	CHECK(mrail_wait_fd(e, NULL) == MRAIL_ERR_INVALID);
	CHECK(mrail_wait_fd(NULL, &fd) == MRAIL_ERR_INVALID);
	CHECK_RC(mrail_wait_fd(e, &fd));
	CHECK_RC(mrail_wait_fd(e, &fd2));
	CHECK(fd >= 0 && fd2 == fd);
	test_barrier(e);

	uint8_t *buf = malloc(BIG);
	CHECK(buf);
	for (int round = 0; round < 2; round++) {
		size_t len = round ? BIG : 64;
		if (me == 1) {
			usleep(DELAY_MS * 1000);
			pattern_fill(buf, len, 7 + round);
			CHECK_RC(mrail_isend(e, 0, buf, len, 10 + round, &r));
			CHECK_RC(mrail_wait(e, r, &st));
		} else {
			memset(buf, 0, len);
			CHECK_RC(mrail_irecv(e, 1, buf, len, 10 + round,
					     MRAIL_TAG_MASK_ALL, &r));
			double t0 = now_s();
			unsigned sleeps = wait_sleeping(e, fd, r, &st);
			double took = now_s() - t0;
			CHECK_RC(st.error);
			CHECK(st.length == len);
			CHECK(pattern_check(buf, len, 7 + round) == len);
			/* Woken by the message, at the timers' pace before
			 * (5 ms: ~80 in 400 ms), not at every poll. */
			printf("round %d: %zu B after %.0f ms, %u sleeps\n",
			       round, len, took * 1e3, sleeps);
			CHECK(sleeps >= 1 && sleeps < 2000);
		}
		test_barrier(e);
	}

	/* Nothing posted (an idle engine's timer: 1 s): the message itself
	 * wakes the sleeper, which then finds it unexpected. */
	if (me == 1) {
		usleep(DELAY_MS * 1000);
		CHECK_RC(mrail_isend(e, 0, buf, 8, 12, &r));
		CHECK_RC(mrail_wait(e, r, &st));
	} else {
		int rc, flag = 0;
		while ((rc = mrail_wait_prepare(e)) == MRAIL_ERR_AGAIN)
			;
		CHECK_RC(rc);
		double t0 = now_s();
		struct pollfd p = {fd, POLLIN, 0};
		CHECK(poll(&p, 1, -1) == 1);
		double woke = now_s() - t0;
		while (!flag)
			CHECK_RC(mrail_iprobe(e, 1, 12, MRAIL_TAG_MASK_ALL, &flag,
					      &st));
		printf("idle: woken after %.0f ms by the message\n",
		       woke * 1e3);
		CHECK(woke < 0.95);
		CHECK_RC(mrail_irecv(e, 1, buf, 8, 12, MRAIL_TAG_MASK_ALL, &r));
		CHECK_RC(mrail_wait(e, r, &st));
	}
	test_barrier(e);

	if (me == 0) {
		/* A request in flight: the timer wakes the descriptor. */
		CHECK_RC(mrail_irecv(e, 1, buf, 8, 99, MRAIL_TAG_MASK_ALL, &r));
		int rc;
		while ((rc = mrail_wait_prepare(e)) == MRAIL_ERR_AGAIN)
			;
		CHECK_RC(rc);
		struct pollfd p = {fd, POLLIN, 0};
		CHECK(poll(&p, 1, 5000) == 1);
		CHECK_RC(mrail_cancel(e, r));
		CHECK_RC(mrail_wait(e, r, &st));
		CHECK(st.error == MRAIL_ERR_CANCELED);
		/* Nothing in flight: no wake-up for 300 ms. Rank 1 stays
		 * silent until told (its barrier message would wake us), and
		 * whatever it sent before (an acknowledgement of our packets,
		 * late on a loaded machine) is taken in first. */
		for (double until = now_s() + 0.05; now_s() < until;)
			mrail_progress(e);
		while ((rc = mrail_wait_prepare(e)) == MRAIL_ERR_AGAIN)
			;
		CHECK_RC(rc);
		CHECK(poll(&p, 1, 300) == 0);
		CHECK_RC(mrail_isend(e, 1, NULL, 0, 13, &r));
		CHECK_RC(mrail_wait(e, r, &st));
	} else {
		CHECK_RC(mrail_irecv(e, 0, NULL, 0, 13, MRAIL_TAG_MASK_ALL, &r));
		CHECK_RC(mrail_wait(e, r, &st));
	}
	test_barrier(e);
	free(buf);
	CHECK_RC(mrail_engine_destroy(e));
	if (me == 0)
		printf("test_wait_fd: OK\n");
	return 0;
}
