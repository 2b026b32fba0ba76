/*
 * Eager traffic between every pair of 2..4 processes, random sizes up to
 * the eager limit, contiguous and 3-piece iovec sends and receives,
 * receive buffers too short (truncated: the prefix and MRAIL_ERR_TRUNCATE),
 * receives posted first, sends first (unexpected) and from any peer;
 * every byte checked.
 * Run with offload forced and without it: the same checks pass (the
 * content is a deterministic pattern, so "identical results").
 * TEST_OFFLOAD=1: workers must exist and messages must have gone in parts;
 * TEST_OFFLOAD=0: offload must be off; TEST_OFFLOAD=bad: workers exist but
 * nothing went in parts (the strategy's plans were refused).
 * TEST_SHUTDOWN=1: the senders destroy their engine with sends still in
 * the workers' hands; the receivers must still get every byte.
 */
#include "../engine/harness.h"

#include <sys/uio.h>

#define CHECKF(cond, ...)                                                  \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);    \
			fprintf(stderr, __VA_ARGS__);                      \
			fputc('\n', stderr);                               \
			exit(1);                                           \
		}                                                          \
	} while (0)

#define MSGS 40

static size_t msg_size(uint64_t id, size_t max)
{
	uint64_t s = id;
	uint64_t r = rnd_next(&s);
	return r % 4 == 0 ? (size_t)(r >> 8) % 64 : 1 + (size_t)(r >> 8) % max;
}

static uint64_t msg_id(uint32_t round, uint32_t src, uint32_t dst, int k)
{
	return (uint64_t)round << 48 | (uint64_t)src << 32 |
	       (uint64_t)dst << 16 | (uint64_t)k;
}

static void run_round(mrail_engine_t *e, uint32_t round, size_t max)
{
	uint32_t n = mrail_size(e), me = mrail_rank(e);
	unsigned nreq = 2 * (n - 1) * MSGS, q = 0;
	mrail_request_t **reqs = calloc(nreq, sizeof *reqs);
	mrail_status_t *st = calloc(nreq, sizeof *st);
	uint8_t **bufs = calloc(nreq, sizeof *bufs);
	size_t *lens = calloc(nreq, sizeof *lens);
	uint64_t *ids = calloc(nreq, sizeof *ids);
	size_t *sent = calloc(nreq, sizeof *sent);
	CHECKF(reqs && st && bufs && lens && ids && sent, "alloc");

	for (int pass = 0; pass < 2; pass++) {
		int recv_pass = round == 1 ? 1 : 0; /* round 1: sends first */
		for (uint32_t p = 0; p < n; p++) {
			if (p == me)
				continue;
			for (int k = 0; k < MSGS; k++) {
				if (pass == recv_pass) {
					uint64_t id = msg_id(round, p, me, k);
					size_t len = msg_size(id, max);
					/* One in 5 buffers is too short
					 * (truncation), one in 4 is 3 pieces:
					 * parts land at their offsets. */
					size_t rlen = k % 5 == 3 ? len / 2 : len;
					uint8_t *b = malloc(len + 1);
					bufs[q] = b;
					lens[q] = rlen;
					sent[q] = len;
					ids[q] = id;
					/* Round 2: any source, told apart by
					 * tag (source and index). */
					mrail_peer_t src =
						round == 2 ? MRAIL_ANY_PEER : p;
					struct iovec v[3] = {
						{b, rlen / 3},
						{b + rlen / 3, rlen / 3},
						{b + 2 * (rlen / 3),
						 rlen - 2 * (rlen / 3)},
					};
					if (k % 4 == 1 && rlen >= 3)
						CHECK_RC(mrail_irecvv(e, src, v,
							3, id,
							MRAIL_TAG_MASK_ALL,
							&reqs[q]));
					else
						CHECK_RC(mrail_irecv(e, src, b,
							rlen, id,
							MRAIL_TAG_MASK_ALL,
							&reqs[q]));
					q++;
					continue;
				}
				uint64_t id = msg_id(round, me, p, k);
				size_t len = msg_size(id, max);
				uint8_t *b = malloc(len + 1);
				pattern_fill(b, len, id);
				bufs[q] = b;
				lens[q] = 0;
				if (k % 3 == 2 && len >= 3) {
					struct iovec v[3] = {
						{b, len / 3},
						{b + len / 3, len / 3},
						{b + 2 * (len / 3),
						 len - 2 * (len / 3)},
					};
					CHECK_RC(mrail_isendv(e, p, v, 3, id,
							      &reqs[q]));
				} else {
					CHECK_RC(mrail_isend(e, p, b, len, id,
							     &reqs[q]));
				}
				q++;
			}
		}
	}
	int rc = mrail_wait_all(e, (int)q, reqs, st);
	CHECKF(rc == MRAIL_OK || rc == MRAIL_ERR_TRUNCATE, "wait_all: %s",
	       mrail_strerror(rc));
	for (unsigned i = 0; i < q; i++) {
		int want = sent[i] > lens[i] ? MRAIL_ERR_TRUNCATE : MRAIL_OK;
		CHECKF(st[i].error == want, "request %u: %s, expected %s", i,
		      mrail_strerror(st[i].error), mrail_strerror(want));
		if (lens[i] || ids[i]) {
			CHECKF(st[i].length == lens[i], "length %zu != %zu",
			      (size_t)st[i].length, lens[i]);
			size_t bad = pattern_check(bufs[i], lens[i], ids[i]);
			CHECKF(bad == lens[i], "round %u msg %llx: byte %zu of "
			      "%zu wrong", round, (unsigned long long)ids[i],
			      bad, lens[i]);
		}
		free(bufs[i]);
	}
	free(reqs);
	free(st);
	free(bufs);
	free(lens);
	free(ids);
	free(sent);
}

/* Rank 0 sends a burst to each peer and destroys its engine at once.
 * Every send has its own buffer: a send buffer is the application's again
 * only when its request completes (include/mrail.h), and these requests
 * never are collected, so a buffer is reusable only after destroy. */
static void shutdown_run(mrail_engine_t *e, size_t max)
{
	uint32_t n = mrail_size(e), me = mrail_rank(e);
	if (me == 0) {
		size_t len = max < (1 << 15) ? max : (1 << 15);
		uint8_t **b = calloc((size_t)n * MSGS, sizeof *b);
		CHECKF(b, "alloc");
		for (uint32_t p = 1; p < n; p++)
			for (int k = 0; k < MSGS; k++) {
				mrail_request_t *r;
				uint8_t *m = b[p * MSGS + k] = malloc(len);
				CHECKF(m, "alloc");
				pattern_fill(m, len, msg_id(9, 0, p, k));
				CHECK_RC(mrail_isend(e, p, m, len,
						     (uint64_t)k, &r));
			}
		struct mrail_offload_info oi;
		CHECK_RC(mrail_offload_info(e, &oi));
		printf("rank 0: %llu messages in parts before destroy\n",
		       (unsigned long long)oi.messages);
		CHECK_RC(mrail_engine_destroy(e));
		for (size_t i = 0; i < (size_t)n * MSGS; i++)
			free(b[i]);
		free(b);
		return;
	}
	static uint8_t b[1 << 15];
	size_t len = max < sizeof b ? max : sizeof b;
	for (int k = 0; k < MSGS; k++) {
		mrail_request_t *r;
		mrail_status_t st;
		CHECK_RC(mrail_irecv(e, 0, b, len, (uint64_t)k,
				     MRAIL_TAG_MASK_ALL, &r));
		CHECK_RC(mrail_wait(e, r, &st));
		CHECKF(st.error == MRAIL_OK && st.length == len, "message %d: %s, %zu bytes", k,
		      mrail_strerror(st.error), (size_t)st.length);
		CHECKF(pattern_check(b, len, msg_id(9, 0, me, k)) == len, "message %d corrupted", k);
	}
	CHECK_RC(mrail_engine_destroy(e));
}

int main(void)
{
	mrail_engine_t *e = test_engine();
	const char *want = getenv("TEST_OFFLOAD");
	const char *sd = getenv("TEST_SHUTDOWN");
	size_t max = 32768;
	struct mrail_offload_info oi;
	CHECK_RC(mrail_offload_info(e, &oi));
	if (want && !strcmp(want, "0"))
		CHECKF(oi.workers == 0, "offload on with %u workers",
		      oi.workers);
	if (want && (!strcmp(want, "1") || !strcmp(want, "bad")))
		CHECKF(oi.workers >= 2, "offload has %u workers", oi.workers);
	if (sd && !strcmp(sd, "1")) {
		shutdown_run(e, max);
		return 0;
	}
	for (uint32_t round = 0; round < 3; round++)
		run_round(e, round, max);
	CHECK_RC(mrail_offload_info(e, &oi));
	printf("rank %u: %u workers, T_O %.2f/%.2f us, %llu messages in %llu "
	       "parts, %llu declined, lock wait %.2f us/take\n",
	       mrail_rank(e), oi.workers, oi.t_o_spinning * 1e6,
	       oi.t_o_asleep * 1e6, (unsigned long long)oi.messages,
	       (unsigned long long)oi.parts, (unsigned long long)oi.declined,
	       oi.lock_takes ? oi.lock_wait / oi.lock_takes * 1e6 : 0);
	if (want && !strcmp(want, "1"))
		CHECKF(oi.messages > 0, "nothing went in parts");
	if (want && !strcmp(want, "0"))
		CHECKF(oi.messages == 0, "offloaded with offload off");
	if (want && !strcmp(want, "bad"))
		CHECKF(oi.messages == 0, "a refused plan was carried out");
	CHECK_RC(mrail_engine_destroy(e));
	return 0;
}
