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

#include <time.h>

enum { FLOOD = 1500, LEN = 4096, FIRST = 256, TAG_FLOOD = 1000,
       TAG_MARK = 9000, TAG_DONE = 9001 };
#define PULLED_MIN ((uint64_t)512 << 10)

static uint64_t rx_total(mrail_engine_t *e, mrail_peer_t peer)
{
	uint64_t sum = 0;
	int n = mrail_rail_count(e, peer);
	for (int r = 0; r < n; r++) {
		struct mrail_rail_stats st;
		if (mrail_rail_stats(e, peer, r, &st) == MRAIL_OK)
			sum += st.rx_bytes;
	}
	return sum;
}

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

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
	uint64_t before = rx_total(e, 0);
	int i = 0;
	for (; i < FIRST; i++)
		recv_one(e, i, LEN);
	double until = mono() + 60;
	while (rx_total(e, 0) - before < PULLED_MIN) {
		if (mono() > until) {
			fprintf(stderr, "rank 1: %llu bytes arrived in 60 s "
				"after %d receives made room, none posted: "
				"the buffered messages were not pulled\n",
				(unsigned long long)(rx_total(e, 0) - before),
				FIRST);
			exit(1);
		}
		mrail_progress(e);
	}
	printf("rank 1: %llu bytes pulled before their receives\n",
	       (unsigned long long)(rx_total(e, 0) - before));

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
