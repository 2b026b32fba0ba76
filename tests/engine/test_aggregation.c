/*
 * Small messages queued behind a busy rail leave aggregated: rank 1 does
 * not read for a while, so rank 0's socket buffers fill, later messages
 * wait on the gate's queue and are packed several per packet. Order and
 * contents must survive; the packet counters must show aggregation.
 */
#include "harness.h"

#include <unistd.h>

enum { N = 8000, SIZE = 4096, TAG = 3 };

int main(void)
{
	mrail_engine_t *e = test_engine();
	uint32_t me = mrail_rank(e);
	CHECK_EQ(mrail_size(e), 2);
	struct mrail_rail_stats st;

	if (me == 0) {
		mrail_request_t **rq = calloc(N, sizeof *rq);
		uint8_t *bufs = malloc((size_t)N * SIZE);
		for (int i = 0; i < N; i++) {
			pattern_fill(bufs + (size_t)i * SIZE, SIZE, (uint64_t)i);
			CHECK_RC(mrail_isend(e, 1, bufs + (size_t)i * SIZE, SIZE,
					     TAG, &rq[i]));
		}
		CHECK_RC(mrail_wait_all(e, N, rq, NULL));
		CHECK_RC(mrail_rail_stats(e, 1, 0, &st));
		printf("sender: %llu messages in %llu packets\n",
		       (unsigned long long)st.tx_msgs,
		       (unsigned long long)st.tx_packets);
		CHECK(st.tx_msgs >= N);
		CHECK(st.tx_packets < st.tx_msgs);
		free(rq);
		free(bufs);
	} else {
		usleep(500 * 1000); /* let the sender's socket buffers fill */
		uint8_t *buf = malloc(SIZE);
		for (int i = 0; i < N; i++) {
			mrail_request_t *r;
			mrail_status_t s;
			CHECK_RC(mrail_irecv(e, 0, buf, SIZE, TAG,
					     MRAIL_TAG_MASK_ALL, &r));
			CHECK_RC(mrail_wait(e, r, &s));
			CHECK_EQ(s.length, SIZE);
			CHECK_EQ(pattern_check(buf, SIZE, (uint64_t)i), SIZE);
		}
		CHECK_RC(mrail_rail_stats(e, 0, 0, &st));
		CHECK(st.rx_packets < st.rx_msgs);
		free(buf);
	}
	test_barrier(e);
	CHECK_RC(mrail_engine_destroy(e));
	return 0;
}
