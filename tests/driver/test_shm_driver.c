/*
 * Shared-memory driver tests: two instances in one process, and two
 * processes (fork) for what needs a real peer process (frames and RMA
 * across address spaces, a peer killed mid-stream, what a killed job
 * leaves behind). Malformed ring entries come from a hand-made segment.
 * Usage: test-shm-driver [test-name]  (no name: run all).
 */
#include "tests/driver/harness.h"

#include "drivers/shm/shm_internal.h"
#include "mrail.h"
#include "util/clock.h"
#include "util/log.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern const struct mrail_drv_ops mrail_shm_driver_ops;
const struct mrail_drv_ops *ops = &mrail_shm_driver_ops;

#define KiB ((uint64_t)1 << 10)
#define MiB ((uint64_t)1 << 20)
#define MAX_HEAD ((size_t)(MiB + 4096))
#define SKIP 77

static const struct mrail_drv_rma_ops *rma(void)
{
	return ops->rma;
}

static struct tep *pair_params(struct side **a, struct side **b,
			       const char *pa, const char *pb, struct tep *tb)
{
	*a = h_side_open_params("A", pa, NULL);
	*b = h_side_open_params("B", pb, NULL);
	CHECK(*a && *b);
	CHECK(h_side_listen(*a, NULL));
	h_tep_init(tb, "B.conn");
	return h_connect_pair(*b, tb, NULL, *a);
}

static int wait_child(pid_t pid)
{
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	if (WIFSIGNALED(st))
		FAIL("child killed by signal %d", WTERMSIG(st));
	return WEXITSTATUS(st);
}

static bool ignore_send_done(struct tep *t, void *ctx, int status)
{
	(void)t;
	(void)ctx;
	(void)status;
	return true;
}

/* ---- RMA helpers ------------------------------------------------------- */

struct op {
	int done;
	int status;
};

static void op_done(struct tep *t, void *op_ctx, int status)
{
	struct op *o = op_ctx;
	(void)t;
	CHECKF(!o->done, "rma_done twice");
	o->done = 1;
	o->status = status;
}

static int rma_sync(struct tep *t, bool get, void *laddr, size_t len,
		    struct mrail_drv_mr *lmr, uint64_t raddr, const void *rkey,
		    size_t rkey_len)
{
	struct op o = {0};
	int rc;

	t->on_rma_done = op_done;
	h_in_send++;
	rc = get ? rma()->get(t->ep, laddr, len, lmr, raddr, rkey, rkey_len, &o)
		 : rma()->put(t->ep, laddr, len, lmr, raddr, rkey, rkey_len, &o);
	h_in_send--;
	if (rc)
		return rc;
	CHECK(!o.done); /* never completes inside get/put */
	WAIT_FOR(o.done, 60);
	return o.status;
}

struct reg {
	uint8_t *mem;
	size_t len;
	struct mrail_drv_mr *mr;
	uint8_t rkey[MRAIL_DRV_RKEY_MAX];
	size_t rkey_len;
};

#define RW (MRAIL_DRV_ACCESS_LOCAL | MRAIL_DRV_ACCESS_REMOTE_READ |         \
	    MRAIL_DRV_ACCESS_REMOTE_WRITE)

static void reg_make(struct side *s, struct reg *r, size_t len)
{
	r->len = len;
	r->mem = calloc(1, len);
	CHECK(r->mem);
	CHECK(rma()->mr_reg(s->drv, r->mem, len, RW, &r->mr) == 0);
	r->rkey_len = sizeof r->rkey;
	CHECK(rma()->mr_pack(r->mr, r->rkey, &r->rkey_len) == 0);
	CHECK(r->rkey_len <= MRAIL_DRV_RKEY_MAX);
}

static void reg_free(struct reg *r)
{
	if (r->mr)
		rma()->mr_dereg(r->mr);
	free(r->mem);
	r->mr = NULL;
	r->mem = NULL;
}

/* ---- basics ------------------------------------------------------------ */

static int test_caps(void)
{
	struct side *a = h_side_open("A");
	struct mrail_drv_caps c;
	struct mrail_drv_rail_desc d[4];

	ops->query_caps(a->drv, &c);
	CHECK(!strcmp(ops->name, "shm"));
	CHECK(ops->abi_version == MRAIL_DRV_ABI_VERSION);
	CHECK(c.max_head == MAX_HEAD && c.max_body_iov == 64);
	CHECK(c.flags & MRAIL_DRV_CAP_RECV_INTO_USER);
	/* This host lets us read peers' memory: get/put are offered. */
	CHECK(c.flags & MRAIL_DRV_CAP_RDMA_READ);
	CHECK(c.flags & MRAIL_DRV_CAP_RDMA_WRITE);
	CHECK(ops->list_rails(a->drv, d, 4) == 1);
	CHECK(d[0].scope == MRAIL_DRV_SCOPE_HOST && !strcmp(d[0].fabric, "shm"));
	CHECK(ops->wait_fd(a->drv) >= 0);
	CHECK(h_progress(a) == 0);
	CHECK(mrail_driver_find("shm") == &mrail_shm_driver_ops);
	CHECK(strstr(mrail_driver_names(), "shm"));
	h_side_close(a);

	/* Without cross-memory attach: no RDMA, bodies through the rings. */
	struct side *n = h_side_open_params("N", "cma=off", NULL);
	ops->query_caps(n->drv, &c);
	CHECK(!(c.flags & (MRAIL_DRV_CAP_RDMA_READ | MRAIL_DRV_CAP_RDMA_WRITE)));
	h_side_close(n);
	return 0;
}

static int test_params(void)
{
	static const char *const bad[] = {
		"bogus=1", "ring=1000", "ring=2K", "ring=128M", "ring=",
		"cma=maybe", "ring", "ring=64K,ring=x",
	};
	int rc;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct side *s = h_side_open_params("X", bad[i], &rc);
		CHECKF(!s && rc == MRAIL_ERR_CONFIG, "'%s' gave %d", bad[i], rc);
	}
	struct side *s = h_side_open_params("X", "ring=64K,cma=auto", &rc);
	CHECK(s && rc == 0);
	h_side_close(s);
	return 0;
}

/* ---- frames ------------------------------------------------------------ */

static void frame_stream(struct tep *tx, struct tep *rx, int n)
{
	static const size_t heads[] = {32, 33, 100, 4096, 65536, MAX_HEAD};
	static const uint64_t bodies[] = {0, 1, 5000, 65536, 3 * MiB + 5};
	uint64_t rx0 = rx->rx_next_seq;

	for (int i = 0; i < n; i++) {
		size_t h = heads[i % 6];
		uint64_t b = bodies[(i / 2) % 5];
		int pieces = b ? 1 + (int)(h_rand() % 64) : 0;
		CHECK(h_post(tx, h, b, pieces) == 0);
	}
	/* A body may still be streaming when its frame is counted. */
	WAIT_FOR(rx->rx_next_seq == rx0 + (uint64_t)n &&
			 tx->tx_outstanding == 0 &&
			 rx->bodies_started == rx->bodies_done,
		 60);
	CHECK(tx->send_err == 0 && !tx->errors && !rx->errors);
	CHECK(rx->bodies_started == rx->bodies_done);
}

static int frames_with(const char *params)
{
	struct side *a, *b;
	struct tep tb;
	struct tep *ta = pair_params(&a, &b, params, params, &tb);

	frame_stream(&tb, ta, 120);
	frame_stream(ta, &tb, 50);
	for (int i = 0; i < 30; i++) {
		CHECK(h_post(&tb, 64, (uint64_t)i * 1000, i ? 3 : 0) == 0);
		CHECK(h_post(ta, 64, (uint64_t)i * 999, i ? 2 : 0) == 0);
	}
	/* A body may still be streaming when its frame is counted. */
	WAIT_FOR(ta->rx_next_seq == 150 && tb.rx_next_seq == 80 &&
			 !ta->tx_outstanding && !tb.tx_outstanding &&
			 ta->bodies_started == ta->bodies_done &&
			 tb.bodies_started == tb.bodies_done,
		 30);
	CHECK(ops->ep_backlog(tb.ep) == 0);

	/* Limits: too big a head or too many iovec entries is refused. */
	static uint8_t head[MAX_HEAD + 1];
	struct iovec many[65];
	for (int i = 0; i < 65; i++)
		many[i] = (struct iovec){head, 1};
	CHECK(h_send(&tb, head, MAX_HEAD + 1, NULL, 0, NULL) ==
	      MRAIL_ERR_INVALID);
	CHECK(h_send(&tb, head, 32, many, 65, NULL) == MRAIL_ERR_INVALID);
	h_side_close(b);
	h_side_close(a);
	return 0;
}

static int test_frames(void)
{
	return frames_with("");
}

/* The smallest ring: every frame wraps and most are split. */
static int test_frames_small_ring(void)
{
	return frames_with("ring=4K");
}

/*
 * inject (driver.h): frames from pieces, now or not at all. Mixed with
 * queued sends they arrive in posting order, intact; one is declined
 * while a frame posted earlier still waits, and (small ring) when the
 * ring is full; too big a frame is an error, not a write.
 */
static int inject_with(const char *params, bool expect_full,
		       uint64_t min_took)
{
	struct side *a, *b;
	struct tep tb;
	struct tep *ta = pair_params(&a, &b, params, params, &tb);
	uint64_t took = 0, declined = 0, behind = 0;

	CHECK(ops->inject != NULL);
	for (int i = 0; i < 3000; i++) {
		size_t h = 32 + h_rand() % 3000;
		if (i % 97 == 0) {
			/* Queued (a body bigger than a small ring), then an
			 * injection right behind it must wait its turn. */
			CHECK(h_post(&tb, 64, 65536, 3) == 0);
			if (ops->ep_backlog(tb.ep) > 0) {
				/* The receiver makes room; the sender's queue
				 * is not flushed yet. */
				h_progress(a);
				CHECK(h_inject(&tb, 40, 2) == 0);
				declined++;
				behind++;
				CHECK(h_post(&tb, 40, 0, 0) == 0);
			}
			WAIT_FOR(ops->ep_backlog(tb.ep) == 0, 30);
			continue;
		}
		int rc = h_inject(&tb, h, 1 + (int)(h_rand() % 8));
		CHECK(rc == 0 || rc == 1);
		if (rc == 1) {
			took++;
		} else {
			declined++;
			CHECK(h_post(&tb, h, 0, 0) == 0);
			/* Drained, injections go on from where it stood. */
			WAIT_FOR(ops->ep_backlog(tb.ep) == 0, 30);
		}
		if (i % 16 == 0)
			h_progress_all();
	}
	WAIT_FOR(ta->rx_next_seq == tb.tx_next_seq && !tb.tx_outstanding,
		 60);
	CHECK(tb.send_err == 0 && !tb.errors && !ta->errors);
	CHECK(took >= min_took);
	if (expect_full)
		CHECK(behind > 0 && declined > behind);

	static uint8_t big[MAX_HEAD + 1];
	struct iovec v = {big, sizeof big};
	CHECK(ops->inject(tb.ep, &v, 1) == MRAIL_ERR_INVALID);
	printf("inject: %llu frames injected, %llu declined (%llu behind a "
	       "queued frame), all in order\n", (unsigned long long)took,
	       (unsigned long long)declined, (unsigned long long)behind);
	h_side_close(b);
	h_side_close(a);
	return 0;
}

static int test_inject(void)
{
	return inject_with("", false, 2000);
}

static int test_inject_small_ring(void)
{
	return inject_with("ring=4K", true, 500);
}

static int test_frames_fork(void)
{
	struct side *a = h_side_open("A");
	pid_t pid;

	CHECK(h_side_listen(a, NULL));
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct tep tb;
		h_forget_sides();
		struct side *b = h_side_open("B");
		h_tep_init(&tb, "child");
		tb.side = b;
		CHECK(ops->connect(b->drv, NULL, a->blob, a->blob_len, &tb,
				   &tb.ep) == 0);
		WAIT_FOR(tb.connected, 10);
		CHECK(tb.connect_status == 0);
		for (int i = 0; i < 100; i++)
			CHECK(h_post(&tb, 40 + (size_t)i * 2000,
				     (uint64_t)i * 13000, 1 + i % 64) == 0);
		WAIT_FOR(tb.rx_next_seq == 100 && !tb.tx_outstanding, 60);
		WAIT_FOR(tb.errors, 30);
		CHECK(tb.error_status == MRAIL_ERR_PEER_CLOSED);
		h_close(&tb);
		h_side_close(b);
		_exit(0);
	}
	WAIT_FOR(a->naccepted == 1, 30);
	struct tep *ta = &a->acc[0];
	WAIT_FOR(ta->rx_next_seq == 100, 60);
	for (int i = 0; i < 100; i++)
		CHECK(h_post(ta, 32 + (size_t)i * 100, (uint64_t)i * 1311,
			     1 + i % 7) == 0);
	WAIT_FOR(!ta->tx_outstanding, 60);
	/* Let the child read everything before our close ends it. */
	double t0 = mrail_now();
	while (mrail_now() - t0 < 0.2)
		h_progress_all();
	h_close(ta);
	CHECK(wait_child(pid) == 0);
	h_side_close(a);
	return 0;
}

/* ---- RMA --------------------------------------------------------------- */

static const size_t rma_sizes[] = {1, 7, 4096, 65537, MiB + 3, 32 * MiB};

static void rma_roundtrip(struct side *a, struct tep *ta, uint64_t base,
			  size_t rlen, const uint8_t *rkey, size_t rkey_len,
			  uint64_t seed)
{
	struct reg local;

	reg_make(a, &local, rlen);
	for (size_t i = 0; i < sizeof rma_sizes / sizeof rma_sizes[0]; i++) {
		size_t len = rma_sizes[i];
		size_t off = (rlen - len) / 3;
		uint64_t raddr = base + off;

		if (len > rlen)
			continue;
		h_fill(local.mem, len, seed + i, off);
		CHECK(rma_sync(ta, false, local.mem, len, local.mr, raddr,
			       rkey, rkey_len) == 0);
		memset(local.mem, 0, rlen);
		CHECK(rma_sync(ta, true, local.mem + (rlen - len), len,
			       local.mr, raddr, rkey, rkey_len) == 0);
		size_t bad = h_verify(local.mem + (rlen - len), len, seed + i,
				      off);
		CHECKF(bad == SIZE_MAX, "%zu-byte get: byte %zu wrong", len,
		       bad);
	}
	/* Outside the registration: refused before any byte moves. */
	CHECK(rma_sync(ta, true, local.mem, 16, local.mr, base + rlen - 8,
		       rkey, rkey_len) == MRAIL_ERR_INVALID);
	CHECK(rma_sync(ta, true, local.mem, 16, local.mr, base - 1, rkey,
		       rkey_len) == MRAIL_ERR_INVALID);
	CHECK(rma_sync(ta, true, local.mem, 16, local.mr, base, rkey, 7) ==
	      MRAIL_ERR_INVALID);
	reg_free(&local);
}

static int test_rma(void)
{
	struct side *a, *b;
	struct tep tb;
	struct tep *ta = pair_params(&a, &b, "", "", &tb);
	struct reg remote;

	reg_make(b, &remote, 32 * MiB + 4096);
	rma_roundtrip(a, ta, (uintptr_t)remote.mem, remote.len, remote.rkey,
		      remote.rkey_len, 11);
	reg_free(&remote);
	h_side_close(b);
	h_side_close(a);
	return 0;
}

struct rkey_msg {
	uint64_t addr, len;
	uint32_t rkey_len;
	uint8_t rkey[MRAIL_DRV_RKEY_MAX];
};

struct box {
	int n;
	uint8_t buf[512];
	size_t len;
};

static bool box_frame(struct tep *t, const uint8_t *head, size_t len)
{
	struct box *b = t->user;
	CHECK(len <= sizeof b->buf);
	memcpy(b->buf, head, len);
	b->len = len;
	b->n++;
	return true;
}

/* Child of the fork tests: registers 8 MiB, sends its key, then serves
 * (reading frames) until its peer goes, or floods frames if told. */
static void child_serve(struct side *a, bool flood, int ready_fd)
{
	struct tep tb;
	struct box box = {0};
	struct reg r;

	h_forget_sides();
	struct side *b = h_side_open("B");
	h_tep_init(&tb, "child");
	tb.side = b;
	tb.user = &box;
	tb.on_frame = box_frame;
	/* The parent's flood (heads of zeros) is sunk, not checked. */
	tb.on_body = h_sink_body;
	tb.on_body_done = h_sink_body_done;
	tb.on_send_done = ignore_send_done;
	CHECK(ops->connect(b->drv, NULL, a->blob, a->blob_len, &tb,
			   &tb.ep) == 0);
	reg_make(b, &r, 8 * MiB);
	h_fill(r.mem, r.len, 99, 0);
	struct rkey_msg m = {(uintptr_t)r.mem, r.len, (uint32_t)r.rkey_len, {0}};
	memcpy(m.rkey, r.rkey, r.rkey_len);
	CHECK(h_send(&tb, &m, sizeof m, NULL, 0, NULL) == 0);
	static uint8_t big[256 * 1024];
	struct iovec iov = {big, sizeof big};
	for (int i = 0; !tb.errors; i++) {
		if (flood && ops->ep_backlog(tb.ep) < 4 * MiB)
			CHECK(h_send(&tb, big, 64, &iov, 1, NULL) == 0);
		if (i == 1000 && ready_fd >= 0)
			CHECK(write(ready_fd, "r", 1) == 1);
		h_progress_all();
	}
	h_close(&tb);
	reg_free(&r);
	h_side_close(b);
	_exit(0);
}

static bool count_send_err(struct tep *t, void *ctx, int status)
{
	(void)ctx;
	if (status)
		t->send_err++;
	return true;
}

static struct tep *accept_child(struct side *a, struct box *box,
				struct rkey_msg *m)
{
	WAIT_FOR(a->naccepted == 1, 30);
	struct tep *ta = &a->acc[0];
	memset(box, 0, sizeof *box);
	ta->user = box;
	ta->on_frame = box_frame;
	ta->on_body = h_sink_body; /* the child's flood */
	ta->on_body_done = h_sink_body_done;
	WAIT_FOR(box->n == 1 || ta->errors, 30);
	CHECK(!ta->errors && box->len == sizeof *m);
	memcpy(m, box->buf, sizeof *m);
	return ta;
}

static int test_rma_fork(void)
{
	struct side *a = h_side_open("A");
	struct box box;
	struct rkey_msg m;
	pid_t pid;

	CHECK(h_side_listen(a, NULL));
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		child_serve(a, false, -1);
	struct tep *ta = accept_child(a, &box, &m);
	struct reg l;
	reg_make(a, &l, m.len);
	/* The child filled its buffer: a get sees the child's bytes. */
	CHECK(rma_sync(ta, true, l.mem, l.len, l.mr, m.addr, m.rkey,
		       m.rkey_len) == 0);
	CHECK(h_verify(l.mem, l.len, 99, 0) == SIZE_MAX);
	reg_free(&l);
	rma_roundtrip(a, ta, m.addr, m.len, m.rkey, m.rkey_len, 21);
	h_close(ta);
	CHECK(wait_child(pid) == 0);
	h_side_close(a);
	return 0;
}

/* ---- doorbell ---------------------------------------------------------- */

static int test_wait_fd(void)
{
	struct side *a, *b;
	struct tep tb;
	struct tep *ta = pair_params(&a, &b, "", "", &tb);
	struct pollfd p = {.fd = ops->wait_fd(a->drv), .events = POLLIN};

	CHECK(ops->trywait != NULL);
	for (int round = 0; round < 20; round++) {
		/* However long A polls, a frame rings no doorbell: no
		 * system call on either side. */
		for (int i = 0; i < 4 * SHM_EPOLL_EVERY; i++)
			h_progress(a);
		CHECK(poll(&p, 1, 0) == 0);
		CHECK(h_post(&tb, 64, round % 2 ? 100 : 0, 1) == 0);
		CHECK(poll(&p, 1, 0) == 0);
		/* Bytes already there: A must progress, not sleep. */
		CHECK(ops->trywait(a->drv) == MRAIL_ERR_AGAIN);
		WAIT_FOR(ta->rx_next_seq == 2 * (uint64_t)round + 1, 5);
		/* A goes to sleep as the engine does: quiet, then trywait.
		 * B's next frame wakes it. */
		h_progress(a);
		CHECK(ops->trywait(a->drv) == 0);
		CHECK(poll(&p, 1, 0) == 0);
		CHECK(h_post(&tb, 64, round % 2 ? 0 : 100, 1) == 0);
		CHECK(poll(&p, 1, 5000) == 1);
		/* The first progress after the sleep drains the doorbell. */
		h_progress(a);
		CHECK(poll(&p, 1, 0) == 0);
		WAIT_FOR(ta->rx_next_seq == 2 * (uint64_t)round + 2 &&
				 !tb.tx_outstanding,
			 5);
	}
	h_side_close(b);
	h_side_close(a);

	/* A producer waiting for space is woken when the consumer frees it:
	 * B's 64 KiB body cannot fit a 4 KiB ring. */
	ta = pair_params(&a, &b, "ring=4K", "ring=4K", &tb);
	struct pollfd pb = {.fd = ops->wait_fd(b->drv), .events = POLLIN};
	CHECK(h_post(&tb, 64, 64 * KiB, 1) == 0);
	for (int i = 0; i < 4 * SHM_EPOLL_EVERY; i++)
		h_progress(b); /* drain its own doorbell; the ring stays full */
	CHECK(ops->ep_backlog(tb.ep) > 0);
	CHECK(poll(&pb, 1, 0) == 0);
	h_progress(a); /* A reads: B must hear of the space */
	CHECK(poll(&pb, 1, 5000) == 1);
	WAIT_FOR(ta->rx_next_seq == 1 && ta->bodies_done == 1, 5);
	h_side_close(b);
	h_side_close(a);
	return 0;
}

/* ---- stale words -------------------------------------------------------- */

#define STALE_MAGIC 0x53454c4154535f53ULL /* "S_STALES" */
static uint64_t stale_frames;

static bool stale_frame(struct tep *t, const uint8_t *head, size_t len)
{
	uint64_t m;
	(void)t;
	memcpy(&m, head, sizeof m);
	if (m != STALE_MAGIC)
		return false; /* a harness frame: checked as usual */
	CHECK(len == 3008);
	stale_frames++;
	return true;
}

static bool stale_send_done(struct tep *t, void *ctx, int status)
{
	(void)t;
	CHECK(status == 0);
	return ctx == &stale_frames;
}

/*
 * A payload made of words that would be valid one lap later at their own
 * ring positions: every line start the consumer polls next lap must hold
 * zero or a word stored then, never what this payload left (the
 * consumer clears the slots it consumed). Fails when it does not.
 */
static int test_stale_words(void)
{
	struct side *a, *b;
	struct tep tb;
	struct tep *ta = pair_params(&a, &b, "ring=4K", "ring=4K", &tb);
	static uint64_t head[3008 / 8];
	const uint64_t ring = 4096;

	ta->on_frame = stale_frame;
	tb.on_send_done = stale_send_done;
	for (int lap = 0; lap < 3; lap++) {
		/* Nothing queued: the frame goes in whole at the next line. */
		uint64_t at = shm_pad64(((struct mrail_drv_ep *)tb.ep)->tx.pos);
		head[0] = STALE_MAGIC;
		for (size_t i = 1; i < sizeof head / 8; i++) {
			uint64_t q = at + 8 + 8 * i;
			head[i] = q % SHM_FRAME_ALIGN ? 0x0101010101010101ULL * i
						      : shm_frame_word(q + ring, 16,
								       0, 1);
		}
		uint64_t before = stale_frames;
		CHECK(h_send(&tb, head, sizeof head, NULL, 0, &stale_frames) ==
		      0);
		WAIT_FOR(stale_frames == before + 1, 10);
		/* One small frame at a time, the consumer polling the next
		 * boundary in between: a lap of them over the payload. */
		for (int i = 0; i < 40; i++) {
			uint64_t seq = ta->rx_next_seq;
			CHECK(h_post(&tb, 64, 0, 0) == 0);
			WAIT_FOR(ta->rx_next_seq == seq + 1, 10);
			for (int k = 0; k < 4; k++)
				h_progress(a);
			CHECK(!ta->errors && !tb.errors);
		}
		WAIT_FOR(!tb.tx_outstanding, 10);
	}
	h_side_close(b);
	h_side_close(a);
	return 0;
}

/*
 * The ring alone, both sides in one thread, interleaved at random: the
 * producer writes position-derived bytes as far as space allows, the
 * consumer takes what is published in random steps and gives space back
 * at random points (some inside a line's word slot, as a body copied up
 * to the tail leaves it). Every byte taken must be the one written: a
 * release's slot clearing must never reach bytes of the next lap that
 * are not consumed yet (it did, when a head given back inside a slot let
 * the producer in before the clearing that slot was owed).
 */
static uint8_t ring_byte(uint64_t pos)
{
	return (uint8_t)((pos * 0x9e3779b1u) >> 13) | 1; /* never 0 */
}

static int test_ring_model(void)
{
	enum { SIZE = 4096, STEPS = 400000 };
	static _Alignas(64) uint8_t data[SIZE];
	static struct shm_ring_ctl ctl;
	struct shm_ring tx, rx;
	uint64_t seed = 0x2545f4914f6cdd1dULL, bad = 0;
	uint8_t buf[SIZE];

	shm_ring_init(&tx, &ctl, data, SIZE);
	shm_ring_init(&rx, &ctl, data, SIZE);
	for (int step = 0; step < STEPS && !bad; step++) {
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		uint64_t r = seed;
		if (r & 1) { /* producer: up to what fits */
			uint64_t n = (r >> 8) % (SIZE + 1);
			uint64_t space = shm_ring_space(&tx, n);
			if (n > space)
				n = space;
			for (uint64_t i = 0; i < n; i++)
				buf[i] = ring_byte(tx.pos + i);
			shm_ring_write(&tx, buf, n);
			shm_ring_publish(&tx);
			continue;
		}
		uint64_t avail = shm_ring_avail(&rx);
		CHECK(avail != UINT64_MAX && avail <= SIZE);
		uint64_t n = avail ? (r >> 8) % (avail + 1) : 0;
		/* Often stop a few bytes into a line, as a body does. */
		if ((r >> 40) % 4 == 0) {
			uint64_t to = (rx.pos | (SHM_FRAME_ALIGN - 1)) + 1 +
				      (r >> 44) % 8;
			if (to - rx.pos <= avail)
				n = to - rx.pos;
		}
		shm_ring_copy_out(&rx, 0, buf, n);
		for (uint64_t i = 0; i < n && !bad; i++)
			if (buf[i] != ring_byte(rx.pos + i)) {
				fprintf(stderr, "ring byte at %llu is 0x%02x, "
					"written 0x%02x (step %d)\n",
					(unsigned long long)(rx.pos + i), buf[i],
					ring_byte(rx.pos + i), step);
				bad = 1;
			}
		shm_ring_consume(&rx, n);
		if ((r >> 50) % 3 == 0)
			shm_ring_release(&rx);
	}
	CHECK(!bad);
	CHECK(tx.pos > 100 * SIZE); /* many laps */
	return 0;
}

/* ---- failures ---------------------------------------------------------- */

/* Count our mappings of shm segments (memfd "mrail-shm"). */
static int segments_mapped(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	CHECK(f);
	while (fgets(line, sizeof line, f))
		if (strstr(line, "memfd:mrail-shm"))
			n++;
	fclose(f);
	return n;
}

static int shm_files(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (strstr(e->d_name, "mrail"))
			n++;
	closedir(d);
	return n;
}

/*
 * A peer killed with SIGKILL while it floods us and we flood it (our
 * frames hold its ring full): that connection fails with MRAIL_ERR_PEER_CLOSED,
 * our queued frames complete with an error, gets after its death fail,
 * another connection of the same instance goes on, and nothing of the
 * dead peer's segment is left (no file, no mapping once closed).
 */
static int test_peer_killed(void)
{
	struct side *a = h_side_open("A");
	int ready[2];
	pid_t pid;
	int files0 = shm_files();

	CHECK(pipe(ready) == 0);
	CHECK(h_side_listen(a, NULL));
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		child_serve(a, true, ready[1]);
	}
	close(ready[1]);
	struct box box;
	struct rkey_msg m;
	struct tep *ta = accept_child(a, &box, &m);
	ta->on_send_done = count_send_err;

	/* A second connection, inside this process, must survive. */
	struct side *c = h_side_open("C");
	struct tep tc;
	h_tep_init(&tc, "C.conn");
	struct tep *tac = h_connect_pair(c, &tc, NULL, a);
	CHECK(segments_mapped() >= 2);

	static uint8_t big[256 * 1024];
	struct iovec iov = {big, sizeof big};
	for (int i = 0; i < 64; i++)
		CHECK(h_send(ta, big, 64, &iov, 1, NULL) == 0);
	CHECK(ops->ep_backlog(ta->ep) > 0);
	char ch;
	CHECK(read(ready[0], &ch, 1) == 1);
	CHECK(kill(pid, SIGKILL) == 0);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st));
	/* A get to the dead process fails (possibly before we notice): with
	 * ESRCH, or with the connection's error if its hang-up is seen
	 * while the get's completion waits for progress. */
	struct reg l;
	reg_make(a, &l, 4096);
	int rc = rma_sync(ta, true, l.mem, 16, l.mr, m.addr, m.rkey, m.rkey_len);
	CHECKF(rc == MRAIL_ERR_PEER || rc == MRAIL_ERR_PEER_CLOSED, "%d", rc);
	WAIT_FOR(ta->errors, 30);
	CHECKF(ta->error_status == MRAIL_ERR_PEER_CLOSED && strstr(ta->why, "died"),
	       "%d %s", ta->error_status, ta->why);
	CHECK(ta->send_err > 0);
	h_close(ta);
	reg_free(&l);
	/* The other connection still works both ways. */
	CHECK(h_post(&tc, 100, 70000, 3) == 0);
	CHECK(h_post(tac, 100, 5000, 2) == 0);
	WAIT_FOR(tac->rx_next_seq == 1 && tc.rx_next_seq == 1, 10);
	CHECK(!tac->errors && !tc.errors);
	h_close(&tc);
	WAIT_FOR(tac->errors, 10);
	h_close(tac);
	h_side_close(c);
	/* Cleanup: nothing named, nothing mapped. */
	CHECK(segments_mapped() == 0);
	CHECK(shm_files() == files0);
	h_side_close(a);
	return 0;
}

/* ep_close drops pending frames: no upcall, memory not touched again. */
static int test_close_pending(void)
{
	struct side *a, *b;
	struct tep tb;
	struct tep *ta = pair_params(&a, &b, "ring=4K", "ring=4K", &tb);

	uint8_t *heads[5];
	for (int i = 0; i < 5; i++) {
		heads[i] = calloc(1, 64 * KiB);
		CHECK(heads[i]);
		struct iovec iov = {heads[i], 64 * KiB};
		CHECK(h_send(&tb, heads[i], 64, &iov, 1, heads[i]) == 0);
	}
	CHECK(ops->ep_backlog(tb.ep) > 0);
	h_close(&tb);
	for (int i = 0; i < 5; i++)
		free(heads[i]);
	ta->on_body = h_sink_body;
	ta->on_body_done = h_sink_body_done;
	WAIT_FOR(ta->errors, 10);
	CHECK(ta->error_status == MRAIL_ERR_PEER_CLOSED);
	h_close(ta);
	CHECK(segments_mapped() == 0);
	h_side_close(b);
	h_side_close(a);
	return 0;
}

/* ---- malformed peers --------------------------------------------------- */

struct raw_peer {
	int sock, bell;
	uint8_t *seg;
	size_t len;
	struct shm_seg_hdr *h;
	uint8_t *ring0;
};

static int raw_connect(const struct side *to)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	const uint8_t *b = (const uint8_t *)to->blob;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	CHECK(fd >= 0 && to->blob_len > SHM_BLOB_HDR_LEN);
	memcpy(sun.sun_path + 1, b + SHM_BLOB_HDR_LEN, b[5]);
	CHECK(connect(fd, (struct sockaddr *)&sun,
		      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				  b[5])) == 0);
	return fd;
}

static void raw_hello(int sock, uint32_t magic, uint32_t ring, uint32_t len,
		      const int *fds, int nfd)
{
	CHECK(shm_ctl_send(sock, magic, ring, len, fds, nfd) == 0);
}

static void raw_open(struct raw_peer *r, const struct side *to)
{
	uint32_t ring = 4096;
	r->len = SHM_RING_OFFSET + 2 * ring;
	int fd = memfd_create("mrail-shm-test", MFD_CLOEXEC);
	CHECK(fd >= 0 && ftruncate(fd, (off_t)r->len) == 0);
	r->seg = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(r->seg != MAP_FAILED);
	r->h = (struct shm_seg_hdr *)r->seg;
	r->h->magic = SHM_SEG_MAGIC;
	r->h->version = SHM_SEG_VERSION;
	r->h->ring_size = ring;
	r->ring0 = r->seg + SHM_RING_OFFSET;
	r->bell = eventfd(0, EFD_CLOEXEC);
	r->sock = raw_connect(to);
	int fds[2] = {fd, r->bell};
	raw_hello(r->sock, SHM_HELLO_MAGIC, ring, (uint32_t)r->len, fds, 2);
	close(fd);
}

static void raw_close(struct raw_peer *r)
{
	close(r->sock);
	close(r->bell);
	munmap(r->seg, r->len);
}

static int test_bad_frames(void)
{
	struct side *a = h_side_open("A");
	/* Frame words at ring position 0 (shm_internal.h, version 2). */
	const uint64_t ok = shm_frame_word(0, 16, 0, 1);
	const struct {
		uint64_t word;
		uint64_t tail; /* 0: 24 */
		const char *why;
	} cases[] = {
		{(ok & ~0xffULL) | 'X', 0, "bad frame magic"},
		{(ok & ~0xf00ULL) | 9 << 8, 0, "frame version 9"},
		{shm_frame_word(0, 2 << 20, 0, 1), 0, "head of 2097152 bytes"},
		{shm_frame_word(0, 16, 0, 0), 8192, "tail is outside the ring"},
		/* Bytes published, but no frame stamped where one must be. */
		{0x1111111111111111ULL, 0, "no frame stamp"},
		{shm_frame_word(4096, 16, 0, 1), 0, "no frame stamp"},
	};

	CHECK(h_side_listen(a, NULL));
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct raw_peer r;
		int before = a->naccepted;
		raw_open(&r, a);
		WAIT_FOR(a->naccepted == before + 1, 10);
		struct tep *t = &a->acc[before];
		memcpy(r.ring0, &cases[i].word, 8);
		atomic_store(&r.h->ctl[0].tail, cases[i].tail ? cases[i].tail : 24);
		WAIT_FOR(t->errors, 10);
		CHECKF(t->error_status == MRAIL_ERR_PROTO &&
			       strstr(t->why, cases[i].why),
		       "case %zu: %d %s", i, t->error_status, t->why);
		h_close(t);
		raw_close(&r);
	}
	/* A bad word at a line the tail has not passed is nobody's frame
	 * yet (a torn or stale line): an error only once it is published. */
	{
		struct raw_peer r;
		int n = a->naccepted;
		uint64_t w = (ok & ~0xffULL) | 'X';
		raw_open(&r, a);
		WAIT_FOR(a->naccepted == n + 1, 10);
		struct tep *t = &a->acc[n];
		memcpy(r.ring0, &w, 8);
		double t0 = mrail_now();
		while (mrail_now() - t0 < 0.3)
			h_progress_all();
		CHECK(!t->errors);
		atomic_store(&r.h->ctl[0].tail, 24);
		WAIT_FOR(t->errors, 10);
		CHECKF(t->error_status == MRAIL_ERR_PROTO &&
			       strstr(t->why, "bad frame magic"),
		       "unpublished, then published: %d %s", t->error_status,
		       t->why);
		h_close(t);
		raw_close(&r);
	}
	/* Malformed set-up messages: dropped before the engine sees them. */
	int before = a->naccepted;
	int s = raw_connect(a);
	raw_hello(s, SHM_HELLO_MAGIC, 4096, 12288, NULL, 0); /* no fds */
	int s2 = raw_connect(a);
	raw_hello(s2, SHM_HELLO_MAGIC, 3000, 12288, NULL, 0);
	uint8_t junk;
	double t0 = mrail_now();
	while (mrail_now() - t0 < 0.3)
		h_progress_all();
	CHECK(a->naccepted == before);
	CHECK(recv(s, &junk, 1, 0) == 0 && recv(s2, &junk, 1, 0) == 0);
	close(s);
	close(s2);

	/* Bad address blobs. */
	struct tep t;
	uint8_t blob[64];
	memcpy(blob, a->blob, a->blob_len);
	h_tep_init(&t, "bad");
	CHECK(ops->connect(a->drv, NULL, blob, 3, &t, &t.ep) ==
	      MRAIL_ERR_INVALID);
	blob[4] = 2;
	CHECK(ops->connect(a->drv, NULL, blob, a->blob_len, &t, &t.ep) ==
	      MRAIL_ERR_INVALID);
	blob[4] = 1;
	CHECK(ops->connect(a->drv, NULL, blob, a->blob_len - 1, &t, &t.ep) ==
	      MRAIL_ERR_INVALID);
	/* A listener that is gone: connected() reports the failure, as
	 * the peer's end refusing (drivers/common: a dead peer). */
	blob[SHM_BLOB_HDR_LEN] ^= 0x20;
	h_tep_init(&t, "gone");
	t.side = a;
	CHECK(ops->connect(a->drv, NULL, blob, a->blob_len, &t, &t.ep) == 0);
	WAIT_FOR(t.connected, 10);
	CHECK(t.connect_status == MRAIL_ERR_PEER_CLOSED);
	h_close(&t);
	h_side_close(a);
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(void);
} tests[] = {
	{"caps", test_caps},
	{"params", test_params},
	{"frames", test_frames},
	{"frames-small-ring", test_frames_small_ring},
	{"frames-fork", test_frames_fork},
	{"inject", test_inject},
	{"inject-small-ring", test_inject_small_ring},
	{"rma", test_rma},
	{"rma-fork", test_rma_fork},
	{"wait-fd", test_wait_fd},
	{"stale-words", test_stale_words},
	{"ring-model", test_ring_model},
	{"peer-killed", test_peer_killed},
	{"close-pending", test_close_pending},
	{"bad-frames", test_bad_frames},
};

int main(int argc, char **argv)
{
	const char *lvl = getenv("MRAIL_LOG_LEVEL");
	int ran = 0, rc = 0;

	if (lvl && mrail_log_parse_level(lvl) >= 0)
		mrail_log_level = mrail_log_parse_level(lvl);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
		if (argc > 1 && strcmp(argv[1], tests[i].name) != 0)
			continue;
		printf("== %s\n", tests[i].name);
		int r = tests[i].fn();
		if (r == SKIP && argc > 1)
			return SKIP;
		rc |= r == SKIP ? 0 : r;
		ran++;
	}
	if (!ran) {
		fprintf(stderr, "unknown test '%s'\n", argc > 1 ? argv[1] : "");
		return 1;
	}
	return rc;
}
