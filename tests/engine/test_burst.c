/*
 * Back-to-back sends to one peer over TCP leave as few packets
 * (libmrail/burst.c, docs/bursts.md), with the default settings but for
 * the rails (mrail-run -n 2, MRAIL_DRIVERS=tcp: two processes of one host
 * would otherwise talk over shm, whose sends are no system calls).
 *
 * Rank 0 sends rounds of BURST messages (sizes 0 B to 2 KiB, every
 * eighth one a standard send of 64 KiB, every ninth one synchronous),
 * then waits for all of them; rank 1 receives every one intact and in
 * order. Once rank 0 has come back quickly a few times, rounds cost at
 * most BURST / 4 packets on its rails (every message its own packet
 * without holding); a slow return (the machine loaded, a sanitizer)
 * turns holding off for two rounds, so the test asks that for most of
 * them: the rounds after the first LEARN cost at most half of what
 * they cost without holding.
 * Then rank 0 posts two messages and computes (sleeps) for COMPUTE_MS
 * without calling the engine, twice: the second message may wait for the
 * first computation, never for the second one (rank 1 measures when each
 * arrives). After that, rounds are coalesced again.
 * With MRAIL_SEND_HOLD=0 every message is its own packet.
 */
#include "harness.h"

#include <unistd.h>

enum { BURST = 64, ROUNDS = 12, LEARN = 3, SMALL_MAX = 2048,
       BIG = 65536, COMPUTE_MS = 300, TAG_A = 7000, TAG_B = 7001,
       TAG_DONE = 9001 };

static size_t len_of(int round, int i)
{
	if (i % 8 == 7)
		return BIG;
	return (size_t)(round * 131 + i * 37) % (SMALL_MAX + 1);
}

static uint64_t tag_of(int round, int i)
{
	return (uint64_t)round * 1000 + (uint64_t)i;
}

/* One round: BURST sends posted back to back, then waited for. Returns
 * the packets it cost. */
static uint64_t send_round(mrail_engine_t *e, int round)
{
	static char buf[BURST][BIG];
	mrail_request_t *r[BURST];
	uint64_t before = test_rail_totals(e, 1).tx_packets;
	for (int i = 0; i < BURST; i++) {
		size_t len = len_of(round, i);
		pattern_fill(buf[i], len, tag_of(round, i));
		if (i % 9 == 8)
			CHECK_RC(mrail_issend(e, 1, buf[i], len,
					      tag_of(round, i), &r[i]));
		else
			CHECK_RC(mrail_isend(e, 1, buf[i], len,
					     tag_of(round, i), &r[i]));
	}
	CHECK_RC(mrail_wait_all(e, BURST, r, NULL));
	return test_rail_totals(e, 1).tx_packets - before;
}

/* Each round posted when rank 1 has posted its receives (a zero-byte
 * message says so), so that no send waits for its match. */
static void go_wait(mrail_engine_t *e, mrail_peer_t from, uint64_t tag)
{
	mrail_request_t *r;
	CHECK_RC(mrail_irecv(e, from, NULL, 0, tag, MRAIL_TAG_MASK_ALL, &r));
	CHECK_RC(mrail_wait(e, r, NULL));
}

static void go_send(mrail_engine_t *e, mrail_peer_t to, uint64_t tag)
{
	mrail_request_t *r;
	CHECK_RC(mrail_isend(e, to, NULL, 0, tag, &r));
	CHECK_RC(mrail_wait(e, r, NULL));
}

#define TAG_GO 0x60000

static void rounds_sender(mrail_engine_t *e, int first, int hold)
{
	uint64_t late = 0, coalesced = 0;
	for (int k = first; k < first + ROUNDS; k++) {
		go_wait(e, 1, TAG_GO + (uint64_t)k);
		uint64_t p = send_round(e, k);
		printf("rank 0: round %d: %d messages in %llu packets\n", k,
		       BURST, (unsigned long long)p);
		if (!hold)
			CHECK(p >= BURST);
		if (k >= first + LEARN) {
			late += p;
			coalesced += p <= BURST / 4;
		}
	}
	uint64_t bound = (uint64_t)(ROUNDS - LEARN) * BURST / 2;
	if (hold && (late > bound || coalesced == 0)) {
		fprintf(stderr, "rank 0: rounds %d-%d cost %llu packets for "
			"%d messages each posted back to back (at most %llu "
			"expected; %llu rounds coalesced)\n", first + LEARN,
			first + ROUNDS - 1, (unsigned long long)late, BURST,
			(unsigned long long)bound,
			(unsigned long long)coalesced);
		exit(1);
	}
}

static void rounds_receiver(mrail_engine_t *e, int first)
{
	for (int k = first; k < first + ROUNDS; k++) {
		/* Receives first, then the go: every send finds its match. */
		static char buf[BURST][BIG];
		mrail_request_t *r[BURST];
		mrail_status_t st[BURST];
		for (int i = 0; i < BURST; i++)
			CHECK_RC(mrail_irecv(e, 0, buf[i], BIG, tag_of(k, i),
					     MRAIL_TAG_MASK_ALL, &r[i]));
		go_send(e, 0, TAG_GO + (uint64_t)k);
		CHECK_RC(mrail_wait_all(e, BURST, r, st));
		for (int i = 0; i < BURST; i++) {
			size_t len = len_of(k, i);
			CHECK_EQ(st[i].error, MRAIL_OK);
			CHECK_EQ(st[i].length, len);
			CHECK_EQ(pattern_check(buf[i], len, tag_of(k, i)),
				 len);
		}
	}
}

static void sender(mrail_engine_t *e)
{
	const char *h = getenv("MRAIL_SEND_HOLD");
	int hold = !(h && !strcmp(h, "0"));
	static char a[64], b[64];
	mrail_request_t *r[2];

	rounds_sender(e, 0, hold);
	/* Post two, then compute without calling the engine. */
	for (int c = 0; c < 2; c++) {
		go_wait(e, 1, TAG_GO + 100 + (uint64_t)c);
		CHECK_RC(mrail_isend(e, 1, a, sizeof a, TAG_A, &r[0]));
		CHECK_RC(mrail_isend(e, 1, b, sizeof b, TAG_B, &r[1]));
		usleep(COMPUTE_MS * 1000);
		CHECK_RC(mrail_wait_all(e, 2, r, NULL));
	}
	rounds_sender(e, ROUNDS, hold);
	go_wait(e, 1, TAG_DONE);
}

static void receiver(mrail_engine_t *e)
{
	static char a[64], b[64];
	mrail_request_t *r[2];
	mrail_status_t st;

	rounds_receiver(e, 0);
	for (int c = 0; c < 2; c++) {
		double at[2] = {0, 0};
		CHECK_RC(mrail_irecv(e, 0, a, sizeof a, TAG_A,
				     MRAIL_TAG_MASK_ALL, &r[0]));
		CHECK_RC(mrail_irecv(e, 0, b, sizeof b, TAG_B,
				     MRAIL_TAG_MASK_ALL, &r[1]));
		go_send(e, 0, TAG_GO + 100 + (uint64_t)c);
		while (at[0] == 0 || at[1] == 0) {
			for (int i = 0; i < 2; i++) {
				if (at[i] != 0)
					continue;
				int rc = mrail_test(e, r[i], &st);
				if (rc == MRAIL_OK) {
					CHECK_EQ(st.error, MRAIL_OK);
					at[i] = test_mono();
				} else {
					CHECK_EQ(rc, MRAIL_ERR_AGAIN);
				}
			}
		}
		double late = at[1] - at[0];
		printf("rank 1: computation %d: second message %.1f ms after "
		       "the first\n", c, late * 1e3);
		/* The second computation finds holding off: the first one
		 * was a slow return. */
		if (c == 1 && late > COMPUTE_MS * 0.5e-3) {
			fprintf(stderr, "rank 1: the second message waited "
				"%.0f ms for the sender's computation again: "
				"holding did not stop after a slow return\n",
				late * 1e3);
			exit(1);
		}
	}
	rounds_receiver(e, ROUNDS);
	go_send(e, 0, TAG_DONE);
}

int main(void)
{
	mrail_engine_t *e = test_pair(sender, receiver);
	test_barrier(e);
	if (mrail_rank(e) == 1)
		printf("burst: OK\n");
	CHECK_RC(mrail_engine_destroy(e));
	return 0;
}
