/*
 * engine_bench: the libmrail side of mrail-bench — busy-polled ping-pong
 * and windowed streaming between rank 0 and rank 1, plus the small blocking
 * helpers (barrier, send, receive) the rest of the benchmark uses.
 */
#ifndef MRAIL_BENCH_ENGINE_H
#define MRAIL_BENCH_ENGINE_H

#include "bench_xfer.h"

#include <mrail.h>

/* Tags of mrail-bench's messages (full mask matching). */
enum {
	BENCH_TAG_SYNC = 0xbe0001,
	BENCH_TAG_PING,
	BENCH_TAG_PONG,
	BENCH_TAG_DATA,
	BENCH_TAG_ACK,
	BENCH_TAG_SETUP,
	BENCH_TAG_RESULT,
};

struct eng_ctx {
	mrail_engine_t *e;
	mrail_peer_t peer; /* the other rank */
	uint32_t rank;     /* 0 drives the measurement, 1 answers */
};

/*
 * Spin on mrail_test() until every non-NULL request of reqs completed
 * (entries are set to NULL). Requests are tested in order, one
 * mrail_test() — which makes progress — per spin. Dies on any error or when
 * a completed request's length differs from len[i] (len may be NULL).
 */
void eng_poll(struct eng_ctx *c, mrail_request_t **reqs, size_t n,
	      const size_t *len, const char *what);

/* Both ranks: exchange an empty message (the peer reached this point). */
void eng_barrier(struct eng_ctx *c);

/* Busy-polled blocking send and receive of small control messages. The
 * receive returns the received length (dies if truncated). */
void eng_send(struct eng_ctx *c, const void *buf, size_t len, uint64_t tag);
size_t eng_recv(struct eng_ctx *c, void *buf, size_t cap, uint64_t tag);

/* Ping-pong block (see struct bench_xfer). Both ranks call it. */
void eng_lat(struct eng_ctx *c, const struct bench_bufs *b,
	     const struct bench_xfer *x);

/* Streaming block; returns the timed seconds on rank 0, 0 on rank 1. */
double eng_bw(struct eng_ctx *c, const struct bench_bufs *b,
	      const struct bench_xfer *x);

#endif
