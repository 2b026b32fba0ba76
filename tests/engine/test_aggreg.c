/*
 * aggreg against greedy on 2 loopback rails (NewMadeleine, seed 004,
 * Fig. 3): a burst of small messages while the receiver is held back (it
 * makes no progress until the sender reports, over a pipe, that its last
 * message is still queued: the rails' socket buffers are full).
 *   aggreg: every message on rail 0, leaving aggregated (fewer packets
 *           than messages); rail 1 carries nothing.
 *   greedy: both rails carry messages, one message per packet.
 * Order and contents verified by the receiver in both runs.
 */
#include "standalone.h"

#include <string.h>

enum { N = 4000, SIZE = 4096, TAG = 5 };

static int go[2]; /* sender -> receiver: "my queue is backed up" */
static const char *mode; /* "aggreg" or "greedy" */

static void stats2(mrail_engine_t *e, uint32_t peer,
		   struct mrail_rail_stats *s)
{
	CHECK_EQ(mrail_rail_count(e, peer), 2);
	for (int r = 0; r < 2; r++)
		CHECK_RC(mrail_rail_stats(e, peer, r, &s[r]));
}

static int job(mrail_engine_t *e, uint32_t rank, uint32_t n)
{
	struct mrail_rail_stats a[2], b[2];
	int aggreg = !strcmp(mode, "aggreg");
	char c = 'g';

	job_barrier(e, rank, n, NULL);
	stats2(e, 1 - rank, a);
	if (rank == 0) {
		mrail_request_t **rq = calloc(N, sizeof *rq);
		uint8_t *bufs = malloc((size_t)N * SIZE);
		CHECK(rq && bufs);
		for (int i = 0; i < N; i++) {
			pattern_fill(bufs + (size_t)i * SIZE, SIZE, (uint64_t)i);
			CHECK_RC(mrail_isend(e, 1, bufs + (size_t)i * SIZE, SIZE,
					     TAG, &rq[i]));
		}
		/* 16 MiB cannot all fit in 2 x 256 KiB socket buffers. */
		CHECK_EQ(mrail_test(e, rq[N - 1], NULL), MRAIL_ERR_AGAIN);
		xwrite(go[1], &c, 1);
		CHECK_RC(mrail_wait_all(e, N, rq, NULL));
		stats2(e, 1, b);
		uint64_t msgs[2], pkts[2];
		for (int r = 0; r < 2; r++) {
			msgs[r] = b[r].tx_msgs - a[r].tx_msgs;
			pkts[r] = b[r].tx_packets - a[r].tx_packets;
			printf("%s: rail %d: %llu messages in %llu packets\n",
			       mode, r, (unsigned long long)msgs[r],
			       (unsigned long long)pkts[r]);
		}
		CHECK_EQ(msgs[0] + msgs[1], N);
		if (aggreg) {
			CHECK_EQ(msgs[0], N);
			CHECK(pkts[0] + N / 8 < msgs[0]); /* many saved */
			CHECK_EQ(msgs[1], 0);
			CHECK_EQ(pkts[1], 0);
		} else {
			/* No packet carries two messages; the few packets
			 * beyond one per message are control packets (the
			 * ACKs of the receiver's credit grants). */
			for (int r = 0; r < 2; r++) {
				CHECK(msgs[r] > 0);
				CHECK(pkts[r] >= msgs[r]);
				CHECK(pkts[r] <= msgs[r] + 64);
			}
		}
		free(rq);
		free(bufs);
	} else {
		xread(go[0], &c, 1);
		uint8_t *buf = malloc(SIZE);
		CHECK(buf);
		for (int i = 0; i < N; i++) {
			mrail_request_t *r;
			mrail_status_t s;
			CHECK_RC(mrail_irecv(e, 0, buf, SIZE, TAG,
					     MRAIL_TAG_MASK_ALL, &r));
			CHECK_RC(mrail_wait(e, r, &s));
			CHECK_EQ(s.length, SIZE);
			CHECK_EQ(pattern_check(buf, SIZE, (uint64_t)i), SIZE);
		}
		/* (The baseline a[] may already count some of the burst:
		 * the sender starts as soon as its barrier is done.) */
		stats2(e, 0, b);
		uint64_t rx1 = b[1].rx_msgs - a[1].rx_msgs;
		if (aggreg) {
			CHECK_EQ(rx1, 0);
			CHECK(b[0].rx_packets + N / 8 < b[0].rx_msgs);
		} else {
			CHECK(rx1 > 0);
		}
		free(buf);
	}
	job_barrier(e, rank, n, NULL);
	return 0;
}

static void run(const char *strategy)
{
	int status[2];
	mode = strategy;
	setenv("MRAIL_STRATEGY", strategy, 1);
	CHECK(pipe(go) == 0);
	fflush(stdout);
	job_run(2, job, status);
	for (int i = 0; i < 2; i++)
		CHECK(WIFEXITED(status[i]) && WEXITSTATUS(status[i]) == 0);
	close(go[0]);
	close(go[1]);
}

int main(void)
{
	setenv("MRAIL_TCP_LOOPBACK_RAILS", "2", 1);
	setenv("MRAIL_TCP_SOCKBUF", "256k", 1);
	run("aggreg");
	run("greedy");
	puts("test_aggreg: aggreg kept one rail and aggregated, greedy "
	     "spread one message per packet");
	return 0;
}
