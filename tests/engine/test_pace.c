/*
 * Per-NIC pacing (libmrail/pace.c, docs/pacing.md), mrail-run -n 3 over
 * one TCP rail, default settings: rank 0 posts two large messages at once,
 * to rank 1 and to rank 2. Both leave over the same NIC; paced, it serves
 * one connection's chunks, then the other's, so the two receives
 * complete one after the other instead of together. Per round each
 * receiver reports when its receive completed (CLOCK_MONOTONIC, shared
 * by processes of one host). Checked per round: the data, and that the
 * later completion comes well after the earlier one (the second message
 * still had at least PACE_GAP of the time to go when the first was done;
 * sharing the NIC ends both within a few percent) in most rounds. Also
 * printed, not checked: rounds in which the message posted first
 * completed first (the NIC serves chunks in the order the receivers'
 * requests for them came; rank 1's normally comes first, but not when
 * rank 1 is descheduled).
 */
#include "harness.h"

#include <time.h>

#define MSG_BYTES (32u << 20)
#define ROUNDS 5
#define PACE_GAP 0.2
#define TAG_DATA 0x9ace0001ull
#define TAG_READY 0x9ace0002ull
#define TAG_TIME 0x9ace0003ull

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void send_wait(mrail_engine_t *e, uint32_t to, void *buf, size_t len,
		      uint64_t tag)
{
	mrail_request_t *rq;
	CHECK_RC(mrail_isend(e, to, buf, len, tag, &rq));
	CHECK_RC(mrail_wait(e, rq, NULL));
}

static void recv_wait(mrail_engine_t *e, uint32_t from, uint64_t tag)
{
	mrail_request_t *rq;
	CHECK_RC(mrail_irecv(e, from, NULL, 0, tag, MRAIL_TAG_MASK_ALL, &rq));
	CHECK_RC(mrail_wait(e, rq, NULL));
}

static void sender(mrail_engine_t *e, uint8_t *buf)
{
	int separated = 0, in_order = 0;
	for (int round = 0; round < ROUNDS; round++) {
		mrail_request_t *rq[4];
		uint64_t t[3];
		for (uint32_t p = 1; p <= 2; p++)
			recv_wait(e, p, TAG_READY);
		uint64_t t0 = now_ns();
		CHECK_RC(mrail_isend(e, 1, buf, MSG_BYTES, TAG_DATA, &rq[0]));
		CHECK_RC(mrail_isend(e, 2, buf, MSG_BYTES, TAG_DATA, &rq[1]));
		CHECK_RC(mrail_irecv(e, 1, &t[1], 8, TAG_TIME,
				     MRAIL_TAG_MASK_ALL, &rq[2]));
		CHECK_RC(mrail_irecv(e, 2, &t[2], 8, TAG_TIME,
				     MRAIL_TAG_MASK_ALL, &rq[3]));
		CHECK_RC(mrail_wait_all(e, 4, rq, NULL));
		double d1 = (double)(int64_t)(t[1] - t0) / 1e9;
		double d2 = (double)(int64_t)(t[2] - t0) / 1e9;
		double first = d1 < d2 ? d1 : d2, last = d1 < d2 ? d2 : d1;
		int sep = last - first >= PACE_GAP * last;
		printf("round %d: rank 1 done at %.2f ms, rank 2 at %.2f ms "
		       "(%s)\n", round, d1 * 1e3, d2 * 1e3,
		       sep ? "one after the other" : "together");
		separated += sep;
		in_order += d1 < d2;
	}
	printf("%d/%d rounds served one after the other, %d/%d with the "
	       "first posted first\n", separated, ROUNDS, in_order, ROUNDS);
	/* Most rounds, not all: three ranks share two cores here, and a
	 * receiver kept off the CPU can end late whatever the NIC did.
	 * Unpaced (MRAIL_PACE=0), 0-1 of 5 rounds separate. */
	CHECK(separated > ROUNDS / 2);
}

static void receiver(mrail_engine_t *e, uint8_t *buf)
{
	for (int round = 0; round < ROUNDS; round++) {
		mrail_request_t *rq;
		memset(buf, 0, MSG_BYTES);
		CHECK_RC(mrail_irecv(e, 0, buf, MSG_BYTES, TAG_DATA,
				     MRAIL_TAG_MASK_ALL, &rq));
		send_wait(e, 0, NULL, 0, TAG_READY);
		CHECK_RC(mrail_wait(e, rq, NULL));
		uint64_t t = now_ns();
		CHECK(pattern_check(buf, MSG_BYTES, 24) == MSG_BYTES);
		send_wait(e, 0, &t, 8, TAG_TIME);
	}
}

int main(void)
{
	mrail_engine_t *e = test_engine();
	CHECK(mrail_size(e) == 3);
	uint8_t *buf = malloc(MSG_BYTES);
	CHECK(buf);
	if (mrail_rank(e) == 0) {
		pattern_fill(buf, MSG_BYTES, 24);
		sender(e, buf);
	} else {
		receiver(e, buf);
	}
	test_barrier(e);
	free(buf);
	CHECK_RC(mrail_engine_destroy(e));
	return 0;
}
