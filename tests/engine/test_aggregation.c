/*
 * Small messages queued behind a busy rail leave aggregated. The receiver
 * makes no progress until the sender reports (over a pipe, not the rail)
 * that its last message is still queued — its socket buffers are full —
 * so the rest must leave several per packet once the receiver drains.
 * Order and contents must survive; the packet counters show aggregation.
 */
#include "standalone.h"

enum { N = 8000, SIZE = 4096, TAG = 3 };

static int go[2]; /* sender -> receiver: "my queue is backed up" */

static int job(mrail_engine_t *e, uint32_t rank, uint32_t n)
{
	struct mrail_rail_stats st;
	char c = 'g';

	job_barrier(e, rank, n, NULL);
	if (rank == 0) {
		mrail_request_t **rq = calloc(N, sizeof *rq);
		uint8_t *bufs = malloc((size_t)N * SIZE);
		for (int i = 0; i < N; i++) {
			pattern_fill(bufs + (size_t)i * SIZE, SIZE, (uint64_t)i);
			CHECK_RC(mrail_isend(e, 1, bufs + (size_t)i * SIZE, SIZE,
					     TAG, &rq[i]));
		}
		/* 32 MiB cannot all fit in the socket buffers. */
		CHECK_EQ(mrail_test(e, rq[N - 1], NULL), MRAIL_ERR_AGAIN);
		xwrite(go[1], &c, 1);
		CHECK_RC(mrail_wait_all(e, N, rq, NULL));
		CHECK_RC(mrail_rail_stats(e, 1, 0, &st));
		printf("sender: %llu messages in %llu packets\n",
		       (unsigned long long)st.tx_msgs,
		       (unsigned long long)st.tx_packets);
		CHECK(st.tx_msgs >= N);
		CHECK(st.tx_packets + N / 8 < st.tx_msgs); /* many saved */
		free(rq);
		free(bufs);
	} else {
		xread(go[0], &c, 1);
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
	job_barrier(e, rank, n, NULL);
	return 0;
}

int main(void)
{
	int status[2];
	CHECK(pipe(go) == 0);
	job_run(2, job, status);
	for (int i = 0; i < 2; i++)
		CHECK(WIFEXITED(status[i]) && WEXITSTATUS(status[i]) == 0);
	return 0;
}
