/*
 * engine_bench: libmrail ping-pong and streaming, busy-polled with
 * mrail_test() (which makes progress) — no blocking waits, no sleeping.
 */
#include "engine_bench.h"
#include "bench_util.h"

#include <stdio.h>

#define WINDOW_MAX 1024

void eng_poll(struct eng_ctx *c, mrail_request_t **reqs, size_t n,
	      const size_t *len, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		mrail_status_t st;
		int rc;
		if (!reqs[i])
			continue;
		while ((rc = mrail_test(c->e, reqs[i], &st)) == MRAIL_ERR_AGAIN)
			;
		if (rc != MRAIL_OK)
			bench_die("%s: mrail_test failed: %s (%d)", what,
				  mrail_strerror(rc), rc);
		reqs[i] = NULL;
		if (st.error != MRAIL_OK)
			bench_die("%s: request %zu completed with error: %s (%d)",
				  what, i, mrail_strerror(st.error), st.error);
		if (len && st.length != len[i])
			bench_die("%s: request %zu moved %zu bytes, expected %zu",
				  what, i, st.length, len[i]);
	}
}

void eng_barrier(struct eng_ctx *c)
{
	mrail_request_t *r[2];
	const size_t len[2] = { 0, 0 };
	MRAIL_CHECK(mrail_irecv(c->e, c->peer, NULL, 0, BENCH_TAG_SYNC,
				MRAIL_TAG_MASK_ALL, &r[0]));
	MRAIL_CHECK(mrail_isend(c->e, c->peer, NULL, 0, BENCH_TAG_SYNC, &r[1]));
	eng_poll(c, r, 2, len, "barrier");
}

void eng_send(struct eng_ctx *c, const void *buf, size_t len, uint64_t tag)
{
	mrail_request_t *r;
	MRAIL_CHECK(mrail_isend(c->e, c->peer, buf, len, tag, &r));
	eng_poll(c, &r, 1, &len, "control send");
}

size_t eng_recv(struct eng_ctx *c, void *buf, size_t cap, uint64_t tag)
{
	mrail_request_t *r;
	mrail_status_t st;
	int rc;
	MRAIL_CHECK(mrail_irecv(c->e, c->peer, buf, cap, tag,
				MRAIL_TAG_MASK_ALL, &r));
	while ((rc = mrail_test(c->e, r, &st)) == MRAIL_ERR_AGAIN)
		;
	MRAIL_CHECK(rc);
	if (st.error != MRAIL_OK)
		bench_die("control receive (tag %#llx) failed: %s (%d)",
			  (unsigned long long)tag, mrail_strerror(st.error),
			  st.error);
	return st.length;
}

static void verify(const void *buf, size_t len, uint64_t seed,
		   const char *what, int i)
{
	size_t bad;
	if (bench_verify(buf, len, seed, &bad))
		bench_die("--check: %s %d of %zu bytes: wrong data at offset %zu",
			  what, i, len, bad);
}

static void lat_initiator(struct eng_ctx *c, const struct bench_bufs *b,
			  const struct bench_xfer *x)
{
	unsigned char *s = bench_bufs_slot(b, b->tx, x->size, 0);
	unsigned char *r = bench_bufs_slot(b, b->rx, x->size, 0);
	const size_t len[2] = { x->size, x->size };
	mrail_request_t *req[2];

	eng_barrier(c);
	for (int i = 0; i < x->warmup + x->iters; i++) {
		if (x->check)
			bench_fill(s, x->size, bench_seed_lat(x, i));
		uint64_t t0 = bench_now_ns();
		MRAIL_CHECK(mrail_irecv(c->e, c->peer, r, x->size,
					BENCH_TAG_PONG, MRAIL_TAG_MASK_ALL,
					&req[1]));
		MRAIL_CHECK(mrail_isend(c->e, c->peer, s, x->size,
					BENCH_TAG_PING, &req[0]));
		eng_poll(c, req, 2, len, "engine ping-pong");
		uint64_t t1 = bench_now_ns();
		if (x->check)
			verify(r, x->size, bench_seed_lat(x, i), "engine pong", i);
		if (i >= x->warmup)
			x->samples[i - x->warmup] = (double)(t1 - t0) / 2e3;
	}
}

/* Echo from alternating slots so the next receive is always pre-posted
 * before the previous pong is sent. */
static void lat_echo(struct eng_ctx *c, const struct bench_bufs *b,
		     const struct bench_xfer *x)
{
	const int n = x->warmup + x->iters;
	mrail_request_t *rreq, *sreq;

	MRAIL_CHECK(mrail_irecv(c->e, c->peer,
				bench_bufs_slot(b, b->rx, x->size, 0), x->size,
				BENCH_TAG_PING, MRAIL_TAG_MASK_ALL, &rreq));
	eng_barrier(c);
	for (int i = 0; i < n; i++) {
		unsigned char *cur = bench_bufs_slot(b, b->rx, x->size, i % 2);
		eng_poll(c, &rreq, 1, &x->size, "engine ping receive");
		if (x->check)
			verify(cur, x->size, bench_seed_lat(x, i), "engine ping", i);
		MRAIL_CHECK(mrail_isend(c->e, c->peer, cur, x->size,
					BENCH_TAG_PONG, &sreq));
		if (i + 1 < n)
			MRAIL_CHECK(mrail_irecv(c->e, c->peer,
				bench_bufs_slot(b, b->rx, x->size, (i + 1) % 2),
				x->size, BENCH_TAG_PING, MRAIL_TAG_MASK_ALL,
				&rreq));
		eng_poll(c, &sreq, 1, &x->size, "engine pong send");
	}
}

void eng_lat(struct eng_ctx *c, const struct bench_bufs *b,
	     const struct bench_xfer *x)
{
	if (c->rank == 0)
		lat_initiator(c, b, x);
	else
		lat_echo(c, b, x);
}

static double bw_sender(struct eng_ctx *c, const struct bench_bufs *b,
			const struct bench_xfer *x)
{
	mrail_request_t *req[WINDOW_MAX + 1];
	size_t len[WINDOW_MAX + 1];
	unsigned char ack;
	uint64_t t0 = 0;

	for (int j = 0; j < x->window; j++)
		len[j] = x->size;
	len[x->window] = 1;
	eng_barrier(c);
	for (int w = 0; w < x->warm_win + x->nwin; w++) {
		if (w == x->warm_win)
			t0 = bench_now_ns();
		MRAIL_CHECK(mrail_irecv(c->e, c->peer, &ack, 1, BENCH_TAG_ACK,
					MRAIL_TAG_MASK_ALL, &req[x->window]));
		for (int j = 0; j < x->window; j++) {
			unsigned char *s =
				bench_bufs_slot(b, b->tx, x->size, j % x->slots);
			if (x->check)
				bench_fill(s, x->size, bench_seed_bw(x, w, j));
			MRAIL_CHECK(mrail_isend(c->e, c->peer, s, x->size,
						BENCH_TAG_DATA, &req[j]));
		}
		eng_poll(c, req, (size_t)x->window + 1, len, "engine stream send");
	}
	return (double)(bench_now_ns() - t0) / 1e9;
}

static void post_window(struct eng_ctx *c, const struct bench_bufs *b,
			const struct bench_xfer *x, mrail_request_t **req)
{
	for (int j = 0; j < x->window; j++)
		MRAIL_CHECK(mrail_irecv(c->e, c->peer,
					bench_bufs_slot(b, b->rx, x->size, j % x->slots),
					x->size, BENCH_TAG_DATA,
					MRAIL_TAG_MASK_ALL, &req[j]));
}

static void bw_receiver(struct eng_ctx *c, const struct bench_bufs *b,
			const struct bench_xfer *x)
{
	mrail_request_t *req[WINDOW_MAX];
	size_t len[WINDOW_MAX];
	const int n = x->warm_win + x->nwin;
	unsigned char ack = 1;

	for (int j = 0; j < x->window; j++)
		len[j] = x->size;
	post_window(c, b, x, req);
	eng_barrier(c);
	for (int w = 0; w < n; w++) {
		eng_poll(c, req, (size_t)x->window, len, "engine stream receive");
		if (x->check)
			for (int j = 0; j < x->window; j++)
				verify(bench_bufs_slot(b, b->rx, x->size, j % x->slots),
				       x->size, bench_seed_bw(x, w, j),
				       "engine stream message", w * x->window + j);
		if (w + 1 < n)
			post_window(c, b, x, req);
		eng_send(c, &ack, 1, BENCH_TAG_ACK);
	}
}

double eng_bw(struct eng_ctx *c, const struct bench_bufs *b,
	      const struct bench_xfer *x)
{
	if (x->window > WINDOW_MAX)
		bench_die("window %d larger than %d", x->window, WINDOW_MAX);
	if (c->rank == 0)
		return bw_sender(c, b, x);
	bw_receiver(c, b, x);
	return 0;
}
