/*
 * Small messages are not held behind a large message's payload
 * (libmrail/pace.c, drivers/tcp TCP_NOTSENT_LOWAT; docs/pacing.md,
 * "Answers behind payload"). mrail-run -n 2, default settings.
 *
 * Per round rank 1 posts a receive for LARGE bytes and one for 8 bytes
 * of another tag, then says it is ready; rank 0 sends the large message,
 * keeps progressing until its payload is moving (the receiver's answer
 * came and chunks went to the drivers: OVERTAKE_AFTER of the time the
 * rails need for it), then sends the small one. Rank 1 notes when each
 * receive completed, rank 0 when it posted the small send (the clock is
 * CLOCK_MONOTONIC, which processes of one kernel share, netlab hosts
 * included). Checked: the data, and in most rounds that the small message
 * arrived within SMALL_SHARE of the time from its post to the large
 * message's end. MPI lets it: different tags, so no ordering between the
 * two. A payload chunk handed to the kernel whole put every byte of it
 * ahead of the small message on its connection, and the split makes the
 * chunks on all rails end together, so the small message arrived with
 * the large one's last bytes (share about 1).
 *
 * Run by tests/multirail/netlab_pair.sh between two netlab hosts (rails
 * 1000 + 400 Mbit/s, where the large message takes about 100 ms) and over
 * two loopback TCP rails of one host (suite engine), where the same rule
 * holds at memory speed.
 */
#include "harness.h"


#define LARGE (16u << 20)
#define ROUNDS 7
#define SMALL_SHARE 0.25
#define OVERTAKE_AFTER 0.1
#define TAG_LARGE 0x0ce10001ull
#define TAG_SMALL 0x0ce10002ull
#define TAG_READY 0x0ce10003ull
#define TAG_TIME 0x0ce10004ull

/* Bytes per second of all of rank 0's rails to rank 1 together, as the
 * engine models them (the strategy splits by these). */
static double rails_rate(mrail_engine_t *e)
{
	struct mrail_rail_info info;
	double sum = 0;
	for (int i = 0; mrail_rail_info(e, 1, i, &info) == MRAIL_OK; i++)
		if (info.bandwidth > 0 && !strcmp(info.state, "up"))
			sum += info.bandwidth;
	CHECK(sum > 0);
	return sum;
}

static int sender(mrail_engine_t *e, uint8_t *buf)
{
	/* Until the payload moves: the RTS's round trip, the plan, the
	 * first chunks handed over. A tenth of the message's time is well
	 * past that and well before its end. */
	double wait_s = OVERTAKE_AFTER * LARGE / rails_rate(e);
	uint64_t small = 0x5a5a5a5a5a5a5a5aull;
	int ahead = 0;

	for (int round = 0; round < ROUNDS; round++) {
		mrail_request_t *rq[2];
		uint64_t t[2];
		test_recv_wait(e, 1, NULL, 0, TAG_READY);
		CHECK_RC(mrail_isend(e, 1, buf, LARGE, TAG_LARGE, &rq[0]));
		uint64_t until = test_mono_ns() + (uint64_t)(wait_s * 1e9);
		while (test_mono_ns() < until)
			mrail_progress(e);
		uint64_t posted = test_mono_ns();
		CHECK_RC(mrail_isend(e, 1, &small, sizeof small, TAG_SMALL,
				     &rq[1]));
		CHECK_RC(mrail_wait_all(e, 2, rq, NULL));
		test_recv_wait(e, 1, t, sizeof t, TAG_TIME);
		double ds = (double)(int64_t)(t[0] - posted) / 1e9;
		double dl = (double)(int64_t)(t[1] - posted) / 1e9;
		int ok = dl > 0 && ds <= SMALL_SHARE * dl;
		printf("round %d: small message after %.2f ms, large one's end "
		       "after %.2f ms (share %.2f: %s)\n", round, ds * 1e3,
		       dl * 1e3, dl > 0 ? ds / dl : 0.0,
		       ok ? "overtook" : "held behind");
		ahead += ok;
	}
	printf("%d/%d rounds: the small message overtook the large one's "
	       "payload\n", ahead, ROUNDS);
	return ahead;
}

static void receiver(mrail_engine_t *e, uint8_t *buf)
{
	for (int round = 0; round < ROUNDS; round++) {
		mrail_request_t *rq[2];
		uint64_t small = 0, t[2] = {0, 0};
		memset(buf, 0, LARGE);
		CHECK_RC(mrail_irecv(e, 0, buf, LARGE, TAG_LARGE,
				     MRAIL_TAG_MASK_ALL, &rq[0]));
		CHECK_RC(mrail_irecv(e, 0, &small, sizeof small, TAG_SMALL,
				     MRAIL_TAG_MASK_ALL, &rq[1]));
		test_send_wait(e, 0, NULL, 0, TAG_READY);
		/* Whichever completes first; the times say which. */
		int left = 2;
		while (left > 0) {
			for (int i = 0; i < 2; i++) {
				if (!rq[i] || mrail_test(e, rq[i], NULL) != MRAIL_OK)
					continue;
				rq[i] = NULL;
				t[i == 0 ? 1 : 0] = test_mono_ns();
				left--;
			}
		}
		CHECK(small == 0x5a5a5a5a5a5a5a5aull);
		CHECK(pattern_check(buf, LARGE, 31) == LARGE);
		test_send_wait(e, 0, t, sizeof t, TAG_TIME);
	}
}

int main(void)
{
	mrail_engine_t *e = test_engine();
	CHECK(mrail_size(e) == 2);
	uint8_t *buf = malloc(LARGE);
	CHECK(buf);
	if (mrail_rank(e) == 0) {
		pattern_fill(buf, LARGE, 31);
		/* Most rounds, not all: two ranks and the links' shaping
		 * share two cores, and a receiver kept off its CPU can see
		 * both arrivals at once whatever the rails did. */
		CHECK(sender(e, buf) > ROUNDS / 2);
	} else {
		receiver(e, buf);
	}
	test_barrier(e);
	free(buf);
	CHECK_RC(mrail_engine_destroy(e));
	return 0;
}
