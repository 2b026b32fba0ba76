/*
 * Rendezvous payload by RDMA and over mixed drivers (mrail-run -n 2):
 * messages of 0 B..64 MiB both ways, contiguous and scattered, every chunk
 * checked; then the per-rail counters must show the protocol asked for in
 * TEST_RMA_EXPECT ("get", "put", "send") on the RDMA rails, and, when
 * TEST_RMA_MIXED=1, chunks of the same messages on rails of both drivers.
 */
#include "harness.h"

#include <string.h>

static const size_t sizes[] = {0, 1, 4096, 65536 + 3, 1 << 20, 16 << 20,
			       64 << 20};

/* Scattered layouts: three pieces of odd lengths. */
static int split3(void *buf, size_t len, struct iovec *iov)
{
	size_t a = len / 3, b = len / 2 - len / 7;
	iov[0] = (struct iovec){buf, a};
	iov[1] = (struct iovec){(char *)buf + a, b};
	iov[2] = (struct iovec){(char *)buf + a + b, len - a - b};
	return 3;
}

static void exchange(mrail_engine_t *e, uint32_t me, size_t len, int scatter,
		     uint64_t id)
{
	uint32_t peer = 1 - me;
	uint8_t *out = malloc(len + 1), *in = malloc(len + 1);
	struct iovec oiov[3], iiov[3];
	mrail_request_t *rq[2];
	mrail_status_t st[2];

	CHECK(out && in);
	pattern_fill(out, len, id * 2 + me);
	memset(in, 0, len + 1);
	/* The sender scatters on even ids, the receiver on odd ones: both
	 * one-sided protocols get a contiguous side to reach. */
	if (scatter && id % 2 == 0)
		CHECK_RC(mrail_irecvv(e, peer, iiov, split3(in, len, iiov), 5,
				      MRAIL_TAG_MASK_ALL, &rq[0]));
	else
		CHECK_RC(mrail_irecv(e, peer, in, len, 5, MRAIL_TAG_MASK_ALL,
				     &rq[0]));
	if (scatter && id % 2 == 1)
		CHECK_RC(mrail_isendv(e, peer, oiov, split3(out, len, oiov), 5,
				      &rq[1]));
	else
		CHECK_RC(mrail_isend(e, peer, out, len, 5, &rq[1]));
	CHECK_RC(mrail_wait_all(e, 2, rq, st));
	CHECK_EQ(st[0].length, len);
	CHECK_EQ(pattern_check(in, len, id * 2 + peer), len);
	free(out);
	free(in);
}

int main(void)
{
	mrail_engine_t *e = test_engine();
	uint32_t me = mrail_rank(e);
	const char *expect = getenv("TEST_RMA_EXPECT");
	const char *mixed = getenv("TEST_RMA_MIXED");
	uint64_t id = 0;

	CHECK(mrail_size(e) == 2);
	for (int scatter = 0; scatter < 2; scatter++)
		for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
			exchange(e, me, sizes[i], scatter, id++);

	int nrails = mrail_rail_count(e, 1 - me);
	uint64_t rdma = 0, rdma_reads = 0, rdma_writes = 0, tcp_chunks = 0;
	for (int i = 0; i < nrails; i++) {
		struct mrail_rail_stats s;
		CHECK_RC(mrail_rail_stats(e, 1 - me, i, &s));
		printf("rank %u rail %d %s: tx_chunks %llu rx_chunks %llu "
		       "rma_reads %llu rma_writes %llu\n", me, i, s.driver,
		       (unsigned long long)s.tx_chunks,
		       (unsigned long long)s.rx_chunks,
		       (unsigned long long)s.rma_reads,
		       (unsigned long long)s.rma_writes);
		rdma_reads += s.rma_reads;
		rdma_writes += s.rma_writes;
		rdma += s.rma_reads + s.rma_writes;
		if (!strcmp(s.driver, "tcp"))
			tcp_chunks += s.tx_chunks + s.rx_chunks;
	}
	if (expect && !strcmp(expect, "get")) {
		/* Scattered senders leave the receiver to ask for writes. */
		CHECK(rdma_reads > 0);
	} else if (expect && !strcmp(expect, "put")) {
		CHECK(rdma_writes > 0);
		CHECK(rdma_reads == 0);
	} else if (expect && !strcmp(expect, "send")) {
		CHECK(rdma == 0);
	}
	if (mixed && !strcmp(mixed, "1")) {
		CHECK(tcp_chunks > 0);
		CHECK(rdma > 0 || (expect && !strcmp(expect, "send")));
	}
	CHECK_RC(mrail_engine_destroy(e));
	printf("test_rma: rank %u ok (%d rails)\n", me, nrails);
	return 0;
}
