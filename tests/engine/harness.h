/* Shared helpers for engine tests (run under mrail-run or fork_job). */
#ifndef MRAIL_TEST_HARNESS_H
#define MRAIL_TEST_HARNESS_H

#include <mrail.h>
#include "../check.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK_RC(expr)                                                     \
	do {                                                               \
		int rc_ = (expr);                                          \
		if (rc_ != MRAIL_OK) {                                     \
			fprintf(stderr, "%s:%d: %s -> %d (%s)\n", __FILE__,\
				__LINE__, #expr, rc_, mrail_strerror(rc_));\
			exit(1);                                           \
		}                                                          \
	} while (0)

/* Deterministic content: byte i of the message identified by `id`. */
static inline uint8_t pattern_byte(uint64_t id, size_t i)
{
	uint64_t x = id * 0x9E3779B97F4A7C15ULL + (i >> 3) * 0xBF58476D1CE4E5B9ULL;
	x ^= x >> 29;
	return (uint8_t)(x >> (8 * (i & 7)));
}

static inline void pattern_fill(void *buf, size_t len, uint64_t id)
{
	uint8_t *p = buf;
	for (size_t i = 0; i < len; i++)
		p[i] = pattern_byte(id, i);
}

/* Index of the first wrong byte, or len if all match. */
static inline size_t pattern_check(const void *buf, size_t len, uint64_t id)
{
	const uint8_t *p = buf;
	for (size_t i = 0; i < len; i++)
		if (p[i] != pattern_byte(id, i))
			return i;
	return len;
}

/* splitmix64: reproducible random numbers from a seed. */
static inline uint64_t rnd_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static inline mrail_engine_t *test_engine(void)
{
	mrail_engine_t *e;
	CHECK_RC(mrail_engine_create(NULL, &e));
	return e;
}

/* CLOCK_MONOTONIC in seconds (one clock for every process of a host). */
static inline double test_mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The same in nanoseconds, for times that travel in messages. */
static inline uint64_t test_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One blocking send or receive (exact tag). */
static inline void test_send_wait(mrail_engine_t *e, uint32_t to,
				  const void *buf, size_t len, uint64_t tag)
{
	mrail_request_t *rq;
	CHECK_RC(mrail_isend(e, to, buf, len, tag, &rq));
	CHECK_RC(mrail_wait(e, rq, NULL));
}

static inline void test_recv_wait(mrail_engine_t *e, uint32_t from, void *buf,
				  size_t len, uint64_t tag)
{
	mrail_request_t *rq;
	CHECK_RC(mrail_irecv(e, from, buf, len, tag, MRAIL_TAG_MASK_ALL, &rq));
	CHECK_RC(mrail_wait(e, rq, NULL));
}

/* The counters of every rail to `peer`, summed. */
static inline struct mrail_rail_stats test_rail_totals(mrail_engine_t *e,
						       mrail_peer_t peer)
{
	struct mrail_rail_stats sum;
	memset(&sum, 0, sizeof sum);
	int n = mrail_rail_count(e, peer);
	for (int r = 0; r < n; r++) {
		struct mrail_rail_stats st;
		if (mrail_rail_stats(e, peer, r, &st) != MRAIL_OK)
			continue;
		sum.tx_bytes += st.tx_bytes;
		sum.rx_bytes += st.rx_bytes;
		sum.tx_packets += st.tx_packets;
		sum.rx_packets += st.rx_packets;
	}
	return sum;
}

/* A job of two ranks: rank 0 runs `zero`, rank 1 runs `one`. */
static inline mrail_engine_t *test_pair(void (*zero)(mrail_engine_t *),
					void (*one)(mrail_engine_t *))
{
	mrail_engine_t *e = test_engine();
	CHECK(mrail_size(e) == 2);
	(mrail_rank(e) == 0 ? zero : one)(e);
	return e;
}

#endif

#define TAG_BARRIER 0xBA22BA22BA22BA22ULL

/* Everyone waits for everyone: zero-byte messages to and from all. */
static inline void test_barrier(mrail_engine_t *e)
{
	uint32_t n = mrail_size(e), me = mrail_rank(e);
	mrail_request_t **rq = calloc(2 * (size_t)n, sizeof *rq);
	CHECK(rq);
	for (uint32_t p = 0; p < n; p++) {
		if (p == me)
			continue;
		CHECK_RC(mrail_irecv(e, p, NULL, 0, TAG_BARRIER,
				     MRAIL_TAG_MASK_ALL, &rq[2 * p]));
		CHECK_RC(mrail_isend(e, p, NULL, 0, TAG_BARRIER, &rq[2 * p + 1]));
	}
	CHECK_RC(mrail_wait_all(e, 2 * (size_t)n, rq, NULL));
	free(rq);
}
