/*
 * Standard sends up to the eager threshold complete without their receive,
 * with the default settings (mrail-run -n 2): also the first message on a
 * new connection (no credit yet) and a flood beyond the receiver's window
 * (4 MiB), all sent before the receiver posts anything. Synchronous sends
 * still wait for their match. docs/flow-control.md "Local completion".
 */
#include "harness.h"

#include <unistd.h>

enum { TAG_FIRST = 1, TAG_SECOND = 2, TAG_SYNC = 50, TAG_GO = 51,
       TAG_ACK = 60, TAG_FLOOD = 1000, TAG_LAST = 5000, FLOOD = 1500,
       FLOOD_LEN = 4096 };

static void sender(mrail_engine_t *e)
{
	static char buf[FLOOD_LEN];
	mrail_request_t *r;
	char one = 11;

	/* Waited before anything is sent to the receiver's first receive. */
	CHECK_RC(mrail_isend(e, 1, &one, 1, TAG_FIRST, &r));
	CHECK_RC(mrail_wait(e, r, NULL));
	pattern_fill(buf, 8, TAG_SECOND);
	CHECK_RC(mrail_isend(e, 1, buf, 8, TAG_SECOND, &r));
	CHECK_RC(mrail_wait(e, r, NULL));

	for (int i = 0; i < FLOOD; i++) {
		pattern_fill(buf, FLOOD_LEN, TAG_FLOOD + (uint64_t)i);
		CHECK_RC(mrail_isend(e, 1, buf, FLOOD_LEN,
				     TAG_FLOOD + (uint64_t)i, &r));
		CHECK_RC(mrail_wait(e, r, NULL));
	}
	CHECK_RC(mrail_irecv(e, 1, NULL, 0, TAG_ACK, MRAIL_TAG_MASK_ALL, &r));
	CHECK_RC(mrail_wait(e, r, NULL));

	mrail_request_t *s;
	mrail_status_t st;
	CHECK_RC(mrail_issend(e, 1, &one, 1, TAG_SYNC, &s));
	for (int i = 0; i < 2000; i++)
		CHECK(mrail_test(e, s, &st) == MRAIL_ERR_AGAIN);
	CHECK_RC(mrail_isend(e, 1, NULL, 0, TAG_GO, &r));
	CHECK_RC(mrail_wait(e, r, NULL));
	CHECK_RC(mrail_wait(e, s, NULL));

	/* Completed sends still held here when the engine closes: the
	 * receiver takes them only after a pause. */
	for (int i = 0; i < FLOOD; i++) {
		pattern_fill(buf, FLOOD_LEN, TAG_LAST + (uint64_t)i);
		CHECK_RC(mrail_isend(e, 1, buf, FLOOD_LEN,
				     TAG_LAST + (uint64_t)i, &r));
		CHECK_RC(mrail_wait(e, r, NULL));
	}
}

static void receiver(mrail_engine_t *e)
{
	static char buf[FLOOD_LEN];
	mrail_request_t *r;
	mrail_status_t st;
	char one = 0;

	CHECK_RC(mrail_irecv(e, 0, buf, 8, TAG_SECOND, MRAIL_TAG_MASK_ALL, &r));
	CHECK_RC(mrail_wait(e, r, &st));
	CHECK(st.length == 8 && pattern_check(buf, 8, TAG_SECOND) == 8);
	CHECK_RC(mrail_irecv(e, 0, &one, 1, TAG_FIRST, MRAIL_TAG_MASK_ALL, &r));
	CHECK_RC(mrail_wait(e, r, &st));
	CHECK(st.length == 1 && one == 11);

	/* The last one first: every other one was sent before it. */
	for (int k = 0; k < FLOOD; k++) {
		int i = k == 0 ? FLOOD - 1 : k - 1;
		CHECK_RC(mrail_irecv(e, 0, buf, FLOOD_LEN,
				     TAG_FLOOD + (uint64_t)i,
				     MRAIL_TAG_MASK_ALL, &r));
		CHECK_RC(mrail_wait(e, r, &st));
		CHECK(st.length == FLOOD_LEN &&
		      pattern_check(buf, FLOOD_LEN, TAG_FLOOD + (uint64_t)i) ==
			      FLOOD_LEN);
	}
	CHECK_RC(mrail_isend(e, 0, NULL, 0, TAG_ACK, &r));
	CHECK_RC(mrail_wait(e, r, NULL));

	CHECK_RC(mrail_irecv(e, 0, NULL, 0, TAG_GO, MRAIL_TAG_MASK_ALL, &r));
	CHECK_RC(mrail_wait(e, r, NULL));
	CHECK_RC(mrail_irecv(e, 0, &one, 1, TAG_SYNC, MRAIL_TAG_MASK_ALL, &r));
	CHECK_RC(mrail_wait(e, r, &st));
	CHECK(one == 11);

	usleep(300 * 1000); /* the sender is closing meanwhile */
	for (int i = 0; i < FLOOD; i++) {
		CHECK_RC(mrail_irecv(e, 0, buf, FLOOD_LEN,
				     TAG_LAST + (uint64_t)i,
				     MRAIL_TAG_MASK_ALL, &r));
		CHECK_RC(mrail_wait(e, r, &st));
		CHECK(st.length == FLOOD_LEN &&
		      pattern_check(buf, FLOOD_LEN, TAG_LAST + (uint64_t)i) ==
			      FLOOD_LEN);
	}
}

int main(void)
{
	mrail_engine_t *e = test_pair(sender, receiver);
	/* No barrier: the sender closes with its last sends still held. */
	if (mrail_rank(e) == 1)
		printf("local completion: OK\n");
	mrail_engine_destroy(e);
	return 0;
}
