/*
 * Test harness for driver tests: a fake engine that records every upcall
 * and checks the driver contract on each one (upcalls only from progress,
 * never from send, none after ep_close, only failed send_done after
 * ep_error), plus a self-checking frame stream (sequence numbers, patterned
 * heads and bodies received into scattered buffers).
 */
#ifndef MRAIL_TESTS_DRIVER_HARNESS_H
#define MRAIL_TESTS_DRIVER_HARNESS_H

#include "drivers/driver.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FAIL(...)                                                          \
	do {                                                               \
		fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);       \
		fprintf(stderr, __VA_ARGS__);                              \
		fputc('\n', stderr);                                       \
		abort();                                                   \
	} while (0)
#define CHECK(c)                                                           \
	do {                                                               \
		if (!(c))                                                  \
			FAIL("%s", #c);                                    \
	} while (0)
#define CHECKF(c, ...)                                                     \
	do {                                                               \
		if (!(c))                                                  \
			FAIL(__VA_ARGS__);                                 \
	} while (0)

/* Progress every open side until cond holds; fail after secs seconds. */
#define WAIT_FOR(cond, secs)                                               \
	do {                                                               \
		double t0_ = mrail_now();                                  \
		while (!(cond)) {                                          \
			h_progress_all();                                  \
			if (mrail_now() - t0_ > (secs))                    \
				FAIL("timeout (%gs) waiting for %s",       \
				     (double)(secs), #cond);               \
		}                                                          \
	} while (0)

extern const struct mrail_drv_ops *ops;

struct tep;
struct side;

/* Frame stream layout: every head starts with this. */
struct h_head {
	uint64_t seq;
	uint64_t body_len;
	uint32_t head_len;
	uint32_t magic; /* H_HEAD_MAGIC */
};
#define H_HEAD_MAGIC 0x7e57f00du

struct tep {
	char label[32];
	struct side *side;
	struct mrail_drv_ep *ep;
	bool closed;

	int connected, connect_status;
	int errors, error_status;
	char why[256];

	/* receive stream */
	uint64_t rx_next_seq;
	uint64_t frames, bodies_started, bodies_done;
	uint64_t rx_bytes;
	int rx_pieces; /* scatter bodies over this many buffers (0: 1..6) */

	/* send stream */
	uint64_t tx_next_seq;
	uint64_t tx_done_seq; /* send_done must come in posting order */
	uint64_t send_ok, send_err;
	int last_send_err;
	uint64_t tx_outstanding;
	/* Frames injected (h_inject): no send_done comes for them, so the
	 * order check skips their numbers. Ascending, a ring. */
	uint64_t injected[1024];
	uint64_t inj_head, inj_tail;

	/* Optional overrides (return true when handled). */
	bool (*on_frame)(struct tep *, const uint8_t *head, size_t len);
	void *(*on_body)(struct tep *, const uint8_t *head, size_t len,
			 uint64_t body_len, struct iovec *dst, int *cnt);
	bool (*on_body_done)(struct tep *, void *cookie);
	bool (*on_send_done)(struct tep *, void *send_ctx, int status);
	void (*on_error)(struct tep *);
	/* RMA drivers: rma_done (required when the test posts get/put). */
	void (*on_rma_done)(struct tep *, void *op_ctx, int status);
	uint64_t rma_ok, rma_err;
	int last_rma_err;
	void *user;
};

#define H_MAX_ACCEPT 8
struct side {
	char name[16];
	struct mrail_drv *drv;
	char blob[64];
	size_t blob_len;
	char lname[96];
	bool refuse;
	int refused;
	int naccepted;
	struct tep acc[H_MAX_ACCEPT];
	void (*on_accept)(struct side *, struct tep *);
};

extern int h_in_progress, h_in_send;

void h_tep_init(struct tep *t, const char *label);
struct side *h_side_open(const char *name);
/* Open with driver params ("key=value,..."); rc of ops->open in *rc if
 * rc is not NULL (then NULL is returned on failure instead of failing). */
struct side *h_side_open_params(const char *name, const char *params,
				int *rc);
/* In a forked child: drop the parent's sides without touching them. */
void h_forget_sides(void);
void h_side_close(struct side *s);
/* Listen on local; false if the address family is unavailable. */
bool h_side_listen(struct side *s, const char *local);
int h_progress(struct side *s);
void h_progress_all(void);
/* Connect t from side `from` (binding `local`) to `to`'s listener and
 * wait until both ends are up; returns the accepted end. */
struct tep *h_connect_pair(struct side *from, struct tep *t, const char *local,
			   struct side *to);

/* Post a self-checking frame: head_len >= sizeof(struct h_head) (or 0),
 * body split into `pieces` iovec entries (some empty). */
int h_post(struct tep *t, size_t head_len, uint64_t body_len, int pieces);
/* The same frame without a body through the driver's inject op, its
 * head split into `pieces` (1..8) iovec entries: returns inject's answer
 * (1 left, 0 declined: nothing sent, or an error). */
int h_inject(struct tep *t, size_t head_len, int pieces);
int h_send(struct tep *t, const void *head, size_t hlen,
	   const struct iovec *body, int cnt, void *send_ctx);

uint8_t h_pat(uint64_t seed, uint64_t off);
void h_fill(uint8_t *p, size_t len, uint64_t seed, uint64_t off);
/* Index of the first wrong byte, or SIZE_MAX. */
size_t h_verify(const uint8_t *p, size_t len, uint64_t seed, uint64_t off);
uint64_t h_rand(void);
uint64_t h_split(uint64_t left, int remaining, bool empty);
/* ep_close, and remember that no upcall may follow. */
void h_close(struct tep *t);
/* on_body/on_body_done for a flood nobody checks: bodies (up to 4 MiB)
 * land in one static buffer. */
void *h_sink_body(struct tep *t, const uint8_t *head, size_t len,
		  uint64_t body_len, struct iovec *dst, int *cnt);
bool h_sink_body_done(struct tep *t, void *cookie);

/* Raw socket helpers for malformed-peer tests. */
int h_raw_connect(const struct side *to);
void h_raw_write(int fd, const void *buf, size_t len);
/* Write all of buf, progressing every side while the socket is full. */
void h_raw_write_progress(int fd, const void *buf, size_t len);
void h_frame_header(uint8_t h[16], uint32_t magic, uint32_t head_len,
		    uint64_t body_len);

#endif
