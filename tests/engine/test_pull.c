/*
 * Buffered messages are pulled ahead of their receive (libmrail/pull.c,
 * docs/flow-control.md "Pulled copies"), with the default settings
 * (mrail-run -n 2): rank 0 sends FLOOD small messages before rank 1
 * posts anything, more than rank 1's eager window (4 MiB), so the last
 * ones go as copies. Once rank 1 has taken the first FIRST messages
 * (room in its window again), their payloads arrive without any receive
 * posted for them: its rails count at least PULLED_MIN more bytes
 * received. Then every message is received intact, in order, through
 * the ways a receive can meet a pulled message: a plain receive, one
 * truncated, iprobe, improbe + imrecv, and one posted while its pull may
 * still be under way.
 */
#include "harness.h"

enum { FLOOD = 1500, LEN = 4096, FIRST = 256, TAG_FLOOD = 1000,
       TAG_MARK = 9000, TAG_DONE = 9001 };
#define PULLED_MIN ((uint64_t)512 << 10)

static void sender(mrail_engine_t *e)
{
	static char buf[LEN];
	mrail_request_t *r;
	for (int i = 0; i < FLOOD; i++) {
		pattern_fill(buf, LEN, TAG_FLOOD + (uint64_t)i);
		CHECK_RC(mrail_isend(e, 1, buf, LEN, TAG_FLOOD + (uint64_t)i,
				     &r));
		CHECK_RC(mrail_wait(e, r, NULL)); /* completes locally */
	}
	CHECK_RC(mrail_isend(e, 1, NULL, 0, TAG_MARK, &r));
	CHECK_RC(mrail_wait(e, r, NULL));
	CHECK_RC(mrail_irecv(e, 1, NULL, 0, TAG_DONE, MRAIL_TAG_MASK_ALL, &r));
	CHECK_RC(mrail_wait(e, r, NULL));
}

static void recv_one(mrail_engine_t *e, int i, size_t len)
{
	static char buf[LEN];
	mrail_request_t *r;
	mrail_status_t st;
	uint64_t tag = TAG_FLOOD + (uint64_t)i;
	CHECK_RC(mrail_irecv(e, 0, buf, len, tag, MRAIL_TAG_MASK_ALL, &r));
	CHECK_RC(mrail_wait(e, r, &st));
	if (len < LEN) {
		CHECK_EQ(st.error, MRAIL_ERR_TRUNCATE);
		CHECK_EQ(st.length, len);
	} else {
		CHECK_EQ(st.error, MRAIL_OK);
		CHECK_EQ(st.length, LEN);
	}
	CHECK_EQ(st.tag, tag);
	CHECK_EQ(pattern_check(buf, len, tag), len);
}

static void receiver(mrail_engine_t *e)
{
	static char buf[LEN];
	mrail_request_t *r;
	mrail_status_t st;
	int flag;

	/* Everything sent before the mark has arrived once it matches. */
	CHECK_RC(mrail_irecv(e, 0, NULL, 0, TAG_MARK, MRAIL_TAG_MASK_ALL, &r));
	CHECK_RC(mrail_wait(e, r, NULL));
	uint64_t before = test_rail_totals(e, 0).rx_bytes;
	int i = 0;
	for (; i < FIRST; i++)
		recv_one(e, i, LEN);
	double until = test_mono() + 60;
	while (test_rail_totals(e, 0).rx_bytes - before < PULLED_MIN) {
		if (test_mono() > until) {
			fprintf(stderr, "rank 1: %llu bytes arrived in 60 s "
				"after %d receives made room, none posted: "
				"the buffered messages were not pulled\n",
				(unsigned long long)(test_rail_totals(e, 0).rx_bytes - before),
				FIRST);
			exit(1);
		}
		mrail_progress(e);
	}
	printf("rank 1: %llu bytes pulled before their receives\n",
	       (unsigned long long)(test_rail_totals(e, 0).rx_bytes - before));

	/* The next ones are pulled (or being pulled): each way to take
	 * one, then the rest in order. */
	CHECK_RC(mrail_iprobe(e, 0, TAG_FLOOD + (uint64_t)i,
			      MRAIL_TAG_MASK_ALL, &flag, &st));
	CHECK(flag);
	CHECK_EQ(st.length, LEN);
	recv_one(e, i++, LEN / 2); /* truncated */
	mrail_message_t *msg = NULL;
	CHECK_RC(mrail_improbe(e, 0, TAG_FLOOD + (uint64_t)i,
			       MRAIL_TAG_MASK_ALL, &flag, &msg, &st));
	CHECK(flag && msg);
	CHECK_EQ(st.length, LEN);
	CHECK_RC(mrail_imrecv(e, buf, LEN, msg, &r));
	CHECK_RC(mrail_wait(e, r, &st));
	CHECK_EQ(st.length, LEN);
	CHECK_EQ(pattern_check(buf, LEN, TAG_FLOOD + (uint64_t)i), LEN);
	i++;
	for (; i < FLOOD; i++)
		recv_one(e, i, LEN);
	CHECK_RC(mrail_isend(e, 0, NULL, 0, TAG_DONE, &r));
	CHECK_RC(mrail_wait(e, r, NULL));
}

int main(void)
{
	mrail_engine_t *e = test_pair(sender, receiver);
	test_barrier(e);
	if (mrail_rank(e) == 1)
		printf("pull: OK\n");
	CHECK_RC(mrail_engine_destroy(e));
	return 0;
}
