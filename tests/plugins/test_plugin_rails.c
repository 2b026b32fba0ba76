/*
 * Under mrail-run with MRAIL_STRATEGY=example (tests/plugins/
 * example_strategy.c, loaded from MRAIL_STRATEGY_PATH) and 2 loopback
 * rails: two ranks swap 4 MiB messages; the per-rail counters show
 * the rendezvous chunks of these messages only on the last rail.
 */
#include "../engine/harness.h"

#include <stdio.h>
#include <stdlib.h>

#define LEN (4u << 20)

int main(void)
{
	mrail_engine_t *e = test_engine();
	uint32_t me = mrail_rank(e), n = mrail_size(e);
	CHECK_EQ(n, 2);
	uint32_t peer = 1 - me;
	char *sbuf = malloc(LEN), *rbuf = malloc(LEN);
	CHECK(sbuf && rbuf);
	mrail_request_t *rq[2];
	struct mrail_status st[2];
	struct mrail_rail_stats before[2];

	/* Wire-up traffic (in-band sampling moves chunks too) is not ours. */
	test_barrier(e);
	CHECK_EQ(mrail_rail_count(e, peer), 2);
	for (int r = 0; r < 2; r++)
		CHECK_RC(mrail_rail_stats(e, peer, r, &before[r]));
	for (uint64_t round = 0; round < 4; round++) {
		pattern_fill(sbuf, LEN, round * 2 + me);
		CHECK_RC(mrail_irecv(e, peer, rbuf, LEN, round,
				     MRAIL_TAG_MASK_ALL, &rq[0]));
		CHECK_RC(mrail_isend(e, peer, sbuf, LEN, round, &rq[1]));
		CHECK_RC(mrail_wait_all(e, 2, rq, st));
		CHECK_EQ(st[0].length, LEN);
		CHECK_EQ(pattern_check(rbuf, LEN, round * 2 + peer), LEN);
	}
	test_barrier(e);
	int nr = mrail_rail_count(e, peer);
	CHECK_EQ(nr, 2);
	for (int r = 0; r < nr; r++) {
		struct mrail_rail_stats s;
		CHECK_RC(mrail_rail_stats(e, peer, r, &s));
		s.tx_chunks -= before[r].tx_chunks;
		s.rx_chunks -= before[r].rx_chunks;
		if (getenv("TEST_VERBOSE"))
			fprintf(stderr, "rank %u rail %d: tx_chunks %llu "
				"rx_chunks %llu tx_bytes %llu rx_bytes %llu\n",
				me, r, (unsigned long long)s.tx_chunks,
				(unsigned long long)s.rx_chunks,
				(unsigned long long)s.tx_bytes,
				(unsigned long long)s.rx_bytes);
		if (r == nr - 1) {
			CHECK(s.tx_chunks >= 4);
			CHECK(s.rx_chunks >= 4);
		} else {
			CHECK_EQ(s.tx_chunks, 0);
			CHECK_EQ(s.rx_chunks, 0);
		}
	}
	free(sbuf);
	free(rbuf);
	CHECK_RC(mrail_engine_destroy(e));
	if (me == 0)
		printf("test_plugin_rails: chunks only on rail %d\n", nr - 1);
	return 0;
}
