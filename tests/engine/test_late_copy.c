/*
 * A small standard send that found the copy caps full completes once the
 * receiver takes earlier copies, before its own receive is posted
 * (libmrail/send.c, send_detach_waiting; docs/flow-control.md "Local
 * completion"), with the default caps (mrail-run -n 2, tcp rails: a copy
 * is made only where the RTS gave no RDMA key).
 *
 * Rank 0 posts FLOOD sends of LEN bytes before rank 1 posts anything:
 * the first fill rank 1's eager window (4 MiB), the next the copy caps
 * (4 MiB per peer), the rest wait as plain RTS. Once rank 0's
 * completions stop, it says so (TAG_STUCK); rank 1 takes the first FIRST
 * messages, which frees its window, so it pulls copies, which frees the
 * caps: rank 0 must then see more of its sends complete while rank 1
 * still has no receive posted for them. Every buffer is overwritten as
 * soon as its send completes, and rank 1 checks every message: a copy
 * made late is still the message.
 */
#include "harness.h"

#include <unistd.h>

enum { FLOOD = 6000, LEN = 2048, FIRST = 1024, TAG_FLOOD = 1000,
       TAG_STUCK = 90000, TAG_TOOK = 90001 };
#define QUIET 0.5   /* s without a completion: the caps are full */
#define PATIENCE 20 /* s to wait for a completion after TAG_TOOK */

static uint64_t done;
static mrail_request_t *reqs[FLOOD];
static char (*bufs)[LEN];

/* Collect completed sends, scribbling over their buffers. */
static int reap(mrail_engine_t *e)
{
	int n = 0;
	mrail_progress(e);
	for (int i = 0; i < FLOOD; i++) {
		mrail_status_t st;
		if (!reqs[i] || mrail_test(e, reqs[i], &st) != MRAIL_OK)
			continue;
		CHECK_EQ(st.error, MRAIL_OK);
		reqs[i] = NULL;
		memset(bufs[i], 0xEE, LEN);
		done++;
		n++;
	}
	return n;
}

static void sender(mrail_engine_t *e)
{
	mrail_request_t *r;
	CHECK(bufs = malloc((size_t)FLOOD * LEN));
	for (int i = 0; i < FLOOD; i++) {
		pattern_fill(bufs[i], LEN, TAG_FLOOD + (uint64_t)i);
		CHECK_RC(mrail_isend(e, 1, bufs[i], LEN,
				     TAG_FLOOD + (uint64_t)i, &reqs[i]));
	}
	double last = test_mono();
	while (test_mono() - last < QUIET)
		if (reap(e))
			last = test_mono();
	uint64_t stuck = done;
	printf("rank 0: %llu of %d sends complete before any receive\n",
	       (unsigned long long)stuck, FLOOD);
	if (stuck == FLOOD) {
		fprintf(stderr, "rank 0: every send completed: the caps did "
			"not bind, the test proves nothing\n");
		exit(1);
	}
	mrail_request_t *took;
	CHECK_RC(mrail_irecv(e, 1, NULL, 0, TAG_TOOK, MRAIL_TAG_MASK_ALL,
			     &took));
	CHECK_RC(mrail_isend(e, 1, NULL, 0, TAG_STUCK, &r));
	CHECK_RC(mrail_wait(e, r, NULL));
	CHECK_RC(mrail_wait(e, took, NULL));
	/* Rank 1 took FIRST messages and posts nothing more until we say
	 * (its receives for the rest wait for TAG_STUCK + 1). */
	uint64_t before = done;
	double until = test_mono() + PATIENCE;
	while (done == before && test_mono() < until)
		reap(e);
	printf("rank 0: %llu more sends complete after the receiver took "
	       "%d, none of them received\n",
	       (unsigned long long)(done - before), FIRST);
	if (done == before) {
		fprintf(stderr, "rank 0: no send completed in %d s although "
			"the receiver took earlier copies\n", PATIENCE);
		exit(1);
	}
	CHECK_RC(mrail_isend(e, 1, NULL, 0, TAG_STUCK + 1, &r));
	CHECK_RC(mrail_wait(e, r, NULL));
	while (done < FLOOD)
		reap(e);
	free(bufs);
}

static void recv_one(mrail_engine_t *e, int i)
{
	static char buf[LEN];
	mrail_request_t *r;
	mrail_status_t st;
	uint64_t tag = TAG_FLOOD + (uint64_t)i;
	CHECK_RC(mrail_irecv(e, 0, buf, LEN, tag, MRAIL_TAG_MASK_ALL, &r));
	CHECK_RC(mrail_wait(e, r, &st));
	CHECK_EQ(st.error, MRAIL_OK);
	CHECK_EQ(st.length, LEN);
	if (pattern_check(buf, LEN, tag) != LEN) {
		fprintf(stderr, "rank 1: message %d is not what was sent\n", i);
		exit(1);
	}
}

static void receiver(mrail_engine_t *e)
{
	mrail_request_t *r;
	CHECK_RC(mrail_irecv(e, 0, NULL, 0, TAG_STUCK, MRAIL_TAG_MASK_ALL, &r));
	CHECK_RC(mrail_wait(e, r, NULL));
	for (int i = 0; i < FIRST; i++)
		recv_one(e, i);
	CHECK_RC(mrail_isend(e, 0, NULL, 0, TAG_TOOK, &r));
	CHECK_RC(mrail_wait(e, r, NULL));
	CHECK_RC(mrail_irecv(e, 0, NULL, 0, TAG_STUCK + 1, MRAIL_TAG_MASK_ALL,
			     &r));
	CHECK_RC(mrail_wait(e, r, NULL));
	for (int i = FIRST; i < FLOOD; i++)
		recv_one(e, i);
	printf("rank 1: %d messages intact\n", FLOOD);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	mrail_engine_t *e = test_pair(sender, receiver);
	test_barrier(e);
	CHECK_RC(mrail_engine_destroy(e));
	return 0;
}
