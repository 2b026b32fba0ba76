/*
 * rawtcp: the raw TCP baseline of mrail-bench — one TCP connection between
 * the two ranks over the same interface as the engine's rail 0, driven with
 * the same busy-polling discipline (non-blocking socket, MSG_DONTWAIT
 * spins) and the same message pattern as engine_bench.
 */
#ifndef MRAIL_BENCH_RAWTCP_H
#define MRAIL_BENCH_RAWTCP_H

#include "bench_xfer.h"
#include "engine_bench.h"

struct raw_ctx {
	int fd;
	uint32_t rank;
	struct eng_ctx *sync;  /* barriers go through the engine */
	char addr[64];         /* address rank 0 listens on */
	int sndbuf, rcvbuf;    /* effective socket buffer sizes */
};

/*
 * Both ranks. Rank 0 listens on addr (NULL: the local address of rail 0 to
 * the peer, else 127.0.0.1) on an ephemeral port and sends address and port
 * to rank 1 in an mrail message; rank 1 connects. sockbuf > 0 sets
 * SO_SNDBUF/SO_RCVBUF like the TCP driver (0 keeps kernel autotuning).
 * TCP_NODELAY is on.
 */
void raw_setup(struct raw_ctx *r, struct eng_ctx *sync, const char *addr,
	       long sockbuf);
void raw_close(struct raw_ctx *r);

/* Same blocks as eng_lat / eng_bw, over the raw socket. */
void raw_lat(struct raw_ctx *r, const struct bench_bufs *b,
	     const struct bench_xfer *x);
double raw_bw(struct raw_ctx *r, const struct bench_bufs *b,
	      const struct bench_xfer *x);

/* Host part of an endpoint string "a.b.c.d:port" or "[v6]:port" into
 * host (cap bytes); 0 on success, -1 if it is not a numeric IP. */
int raw_endpoint_host(const char *endpoint, char *host, size_t cap);

#endif
