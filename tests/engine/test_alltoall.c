/*
 * All-to-all exchanges of random sizes (0 B .. 64 MiB) with checksums, run
 * with 2..8 processes and 1 or 3 rails (meson runs it in several set-ups;
 * the multi-rail ones use the iso strategy, so rendezvous payloads arrive
 * as chunks on several rails and are reassembled in place).
 * Round kinds: receives posted first; sends first (everything unexpected);
 * receives from any peer.
 */
#include "harness.h"

#include <unistd.h>

#define ROUNDS 3
#define BIG (64u << 20)

static size_t msg_size(uint32_t round, uint32_t src, uint32_t dst, uint32_t n)
{
	uint64_t s = 0x5eed ^ ((uint64_t)round << 40 | (uint64_t)src << 20 | dst);
	if (round == 2) /* any-source round: same size from every source */
		s = 0x5eed ^ ((uint64_t)round << 40 | dst);
	/* One 64 MiB message per run, the rest log-uniform up to 8 MiB. */
	if (round == 0 && src == n - 1 && dst == 0)
		return BIG;
	uint64_t r = rnd_next(&s);
	switch (r % 4) {
	case 0: return (size_t)(r >> 8) % 65;
	case 1: return (size_t)(r >> 8) % (32 << 10);
	case 2: return (size_t)(r >> 8) % (1 << 20);
	default: return (size_t)(r >> 8) % (8 << 20);
	}
}

static uint64_t msg_id(uint32_t round, uint32_t src, uint32_t dst)
{
	return (uint64_t)round << 32 | (uint64_t)src << 16 | dst;
}

static void run_round(mrail_engine_t *e, uint32_t round)
{
	uint32_t n = mrail_size(e), me = mrail_rank(e);
	mrail_request_t **sreq = calloc(n, sizeof *sreq);
	mrail_request_t **rreq = calloc(n, sizeof *rreq);
	mrail_status_t *rst = calloc(n, sizeof *rst);
	uint8_t **sbuf = calloc(n, sizeof *sbuf), **rbuf = calloc(n, sizeof *rbuf);
	int any = round == 2, sends_first = round == 1;

	for (uint32_t p = 0; p < n; p++) {
		size_t slen = msg_size(round, me, p, n);
		sbuf[p] = malloc(slen + 1);
		CHECK(sbuf[p]);
		pattern_fill(sbuf[p], slen, msg_id(round, me, p));
		rbuf[p] = malloc(msg_size(round, p, me, n) + 1);
		CHECK(rbuf[p]);
	}
	for (int phase = 0; phase < 2; phase++) {
		if (phase == sends_first) {
			for (uint32_t p = 0; p < n; p++)
				CHECK_RC(mrail_irecv(e, any ? MRAIL_ANY_PEER : p,
						     rbuf[p],
						     msg_size(round, p, me, n),
						     round, MRAIL_TAG_MASK_ALL,
						     &rreq[p]));
			if (!sends_first)
				test_barrier(e); /* receives really posted first */
		} else {
			for (uint32_t k = 0; k < n; k++) {
				uint32_t p = (me + k) % n; /* spread the load */
				CHECK_RC(mrail_isend(e, p, sbuf[p],
						     msg_size(round, me, p, n),
						     round, &sreq[p]));
			}
			if (sends_first) {
				/* Let messages arrive before receives exist. */
				for (int i = 0; i < 50; i++) {
					mrail_progress(e);
					usleep(1000);
				}
			}
		}
	}
	CHECK_RC(mrail_wait_all(e, n, rreq, rst));
	CHECK_RC(mrail_wait_all(e, n, sreq, NULL));
	for (uint32_t p = 0; p < n; p++) {
		uint32_t src = rst[p].source;
		CHECK(src < n);
		if (!any)
			CHECK_EQ(src, p);
		size_t len = msg_size(round, src, me, n);
		CHECK_EQ(rst[p].length, len);
		size_t bad = pattern_check(rbuf[p], len, msg_id(round, src, me));
		if (bad != len)
			fprintf(stderr, "rank %u: round %u message from %u (%zu "
				"bytes) differs at byte %zu\n", me, round, src,
				len, bad);
		CHECK_EQ(bad, len);
	}
	for (uint32_t p = 0; p < n; p++) {
		free(sbuf[p]);
		free(rbuf[p]);
	}
	free(sbuf);
	free(rbuf);
	free(sreq);
	free(rreq);
	free(rst);
}

int main(void)
{
	mrail_engine_t *e = test_engine();
	uint32_t me = mrail_rank(e), n = mrail_size(e);
	for (uint32_t round = 0; round < ROUNDS; round++)
		run_round(e, round);
	test_barrier(e);
	/* Rails really carried traffic: with iso, every rail to a peer that
	 * sent a large message has received chunks. */
	uint64_t total = 0;
	for (uint32_t p = 0; p < mrail_size(e); p++)
		for (int r = 0; r < mrail_rail_count(e, p); r++) {
			struct mrail_rail_stats st;
			CHECK_RC(mrail_rail_stats(e, p, r, &st));
			total += st.rx_bytes;
			if (me == 0 && p == mrail_size(e) - 1)
				CHECK(st.rx_chunks > 0); /* the 64 MiB one */
		}
	CHECK(mrail_size(e) == 1 || total > 0);
	CHECK_RC(mrail_engine_destroy(e));
	if (me == 0)
		printf("test_alltoall: %u ranks, all messages verified\n", n);
	return 0;
}
