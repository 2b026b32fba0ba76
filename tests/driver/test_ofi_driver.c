/*
 * libfabric driver tests: two instances in one process over a provider
 * (tcp;ofi_rxm on the loopback domain, or shm), and two processes (fork)
 * for a peer killed mid-transfer. A provider missing here skips (77).
 * Usage: test-ofi-driver [test-name]  (no name: run all).
 */
#include "tests/driver/harness.h"

#include "util/clock.h"
#include "util/log.h"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern const struct mrail_drv_ops mrail_ofi_driver_ops;
const struct mrail_drv_ops *ops = &mrail_ofi_driver_ops;

#define KiB ((uint64_t)1 << 10)
#define MiB ((uint64_t)1 << 20)
#define SKIP 77

static const char *TCP = "provider=tcp+ofi_rxm,domains=lo";
static const char *SHM = "provider=shm";

/* Open A and B with params; NULL (skip) if the provider is missing. */
static bool open_pair(const char *params, struct side **a, struct side **b)
{
	int rc;

	*a = h_side_open_params("A", params, &rc);
	if (!*a) {
		printf("SKIP: provider unavailable (%s): %d\n", params, rc);
		return false;
	}
	*b = h_side_open_params("B", params, NULL);
	return true;
}

static const char *rail_of(struct side *s)
{
	static struct mrail_drv_rail_desc d[8];
	int n = ops->list_rails(s->drv, d, 8);
	CHECK(n >= 1);
	return d[0].listen;
}

static struct mrail_drv_caps caps_of(struct side *s)
{
	struct mrail_drv_caps c;
	ops->query_caps(s->drv, &c);
	return c;
}

static void frame_stream(struct tep *tx, struct tep *rx, int n, int iov)
{
	static const size_t heads[] = {32, 33, 100, 4096, 65536};
	static const uint64_t bodies[] = {0, 1, 5000, 65536, 4 * MiB};
	uint64_t rx0 = rx->rx_next_seq;

	for (int i = 0; i < n; i++) {
		size_t h = heads[i % 5];
		uint64_t b = bodies[(i / 2) % 5];
		int pieces = b ? 1 + (int)(h_rand() % (uint64_t)iov) : 0;
		CHECK(h_post(tx, h, b, pieces) == 0);
	}
	WAIT_FOR(rx->rx_next_seq == rx0 + (uint64_t)n &&
			 tx->tx_outstanding == 0 &&
			 rx->bodies_started == rx->bodies_done,
		 60);
	CHECK(tx->send_err == 0 && !tx->errors && !rx->errors);
	CHECK(rx->bodies_started == rx->bodies_done);
}

/* ---- cases ------------------------------------------------------------- */

static int test_caps(void)
{
	struct mrail_drv_rail_desc d[8];
	struct side *a;
	int rc, n;

	a = h_side_open_params("A", TCP, &rc);
	if (!a)
		return SKIP;
	struct mrail_drv_caps c = caps_of(a);
	CHECK(c.max_head >= 4096 && c.max_body >= 64 * KiB);
	CHECK(c.max_body_iov >= 1 && (c.flags & MRAIL_DRV_CAP_RECV_INTO_USER));
	CHECK(!(c.flags & MRAIL_DRV_CAP_IP));
	n = ops->list_rails(a->drv, d, 8);
	CHECK(n == 1); /* domains=lo */
	CHECK(!strcmp(d[0].name, "lo") && d[0].scope == MRAIL_DRV_SCOPE_HOST);
	CHECK(!strncmp(d[0].fabric, "tcp;ofi_rxm:", 12));
	h_side_close(a);
	return 0;
}

static int test_params(void)
{
	int rc;

	CHECK(!h_side_open_params("A", "bogus=1", &rc) &&
	      rc == MRAIL_ERR_CONFIG);
	CHECK(!h_side_open_params("A", "provider", &rc) &&
	      rc == MRAIL_ERR_CONFIG);
	CHECK(!h_side_open_params("A", "rx_bufs=1", &rc) &&
	      rc == MRAIL_ERR_CONFIG);
	CHECK(!h_side_open_params("A", "provider=nosuchprov", &rc) &&
	      rc == MRAIL_ERR_NOT_FOUND);
	CHECK(!h_side_open_params("A", "provider=tcp+ofi_rxm,domains=nosuch",
				  &rc) &&
	      rc == MRAIL_ERR_NOT_FOUND);
	CHECK(!h_side_open_params("A", "shm=maybe", &rc) &&
	      rc == MRAIL_ERR_CONFIG);
	CHECK(!h_side_open_params("A", "wait=sometimes", &rc) &&
	      rc == MRAIL_ERR_CONFIG);
	return 0;
}

/* libfabric missing at run time (MRAIL_OFI_LIBRARY names a file that is
 * not there, as meson runs this case): open fails with NOT_FOUND, every
 * time, and nothing else breaks. */
static int test_lib_missing(void)
{
	int rc = 0;

	CHECK(getenv("MRAIL_OFI_LIBRARY"));
	for (int i = 0; i < 2; i++) {
		CHECK(!h_side_open_params("A", TCP, &rc));
		CHECK(rc == MRAIL_ERR_NOT_FOUND);
	}
	return 0;
}

/* The shm rail for peers on this host: added by default, and then the
 * socket provider's loopback rail goes; not added when the user names a
 * provider, unless shm=yes; shm=no never. */
static int test_shm_default(void)
{
	struct mrail_drv_rail_desc d[8];
	struct side *a;
	bool shm = false, lo = false;
	int n;

	a = h_side_open_params("A", "", NULL);
	if (!a)
		return SKIP;
	n = ops->list_rails(a->drv, d, 8);
	for (int i = 0; i < n; i++) {
		shm = shm || !strcmp(d[i].name, "shm");
		lo = lo || !strcmp(d[i].name, "lo");
	}
	h_side_close(a);
	if (!shm) {
		printf("SKIP: no shm provider here\n");
		return SKIP;
	}
	CHECK(!lo);
	a = h_side_open_params("A", "shm=no", NULL);
	CHECK(a);
	n = ops->list_rails(a->drv, d, 8);
	for (int i = 0; i < n; i++)
		CHECK(strcmp(d[i].name, "shm") != 0);
	h_side_close(a);
	a = h_side_open_params("A", TCP, NULL);
	CHECK(a && ops->list_rails(a->drv, d, 8) == 1);
	h_side_close(a);
	/* Named domains stay: lo and shm side by side. */
	a = h_side_open_params("A", "provider=tcp+ofi_rxm,domains=lo,shm=yes",
			       NULL);
	CHECK(a && ops->list_rails(a->drv, d, 8) == 2);
	CHECK(!strcmp(d[0].name, "lo") && !strcmp(d[1].name, "shm"));
	CHECK(d[1].scope == MRAIL_DRV_SCOPE_HOST);
	h_side_close(a);
	return 0;
}

static int frames(const char *params)
{
	struct side *a, *b;
	struct tep tb;

	if (!open_pair(params, &a, &b))
		return SKIP;
	CHECK(h_side_listen(a, rail_of(a)));
	h_tep_init(&tb, "B.conn");
	struct tep *ta = h_connect_pair(b, &tb, rail_of(b), a);
	int iov = caps_of(a).max_body_iov;

	frame_stream(&tb, ta, 100, iov);
	frame_stream(ta, &tb, 40, iov);
	for (int i = 0; i < 30; i++) {
		CHECK(h_post(&tb, 64, (uint64_t)i * 1000, i ? 1 : 0) == 0);
		CHECK(h_post(ta, 64, (uint64_t)i * 999, i ? 1 : 0) == 0);
	}
	WAIT_FOR(ta->rx_next_seq == 130 && tb.rx_next_seq == 70 &&
			 !ta->tx_outstanding && !tb.tx_outstanding,
		 30);
	CHECK(ops->ep_backlog(tb.ep) == 0);
	/* Limits are refused at once. */
	static uint8_t head[70 * 1024];
	CHECK(h_send(&tb, head, sizeof head, NULL, 0, NULL) ==
	      MRAIL_ERR_INVALID);
	/* A second connection between the same rails is its own stream. */
	struct tep tc;
	h_tep_init(&tc, "B.conn2");
	struct tep *tac = h_connect_pair(b, &tc, rail_of(b), a);
	frame_stream(&tc, tac, 20, iov);
	frame_stream(&tb, ta, 10, iov);
	h_close(&tc);
	h_close(tac);
	h_side_close(b);
	h_side_close(a);
	return 0;
}

static int test_frames_tcp(void)
{
	return frames(TCP);
}

static int test_frames_shm(void)
{
	return frames(SHM);
}

/* ---- RMA --------------------------------------------------------------- */

struct op {
	int done, status;
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
	rc = get ? ops->rma->get(t->ep, laddr, len, lmr, raddr, rkey,
				 rkey_len, &o)
		 : ops->rma->put(t->ep, laddr, len, lmr, raddr, rkey, rkey_len,
				 &o);
	h_in_send--;
	CHECKF(rc == 0, "%s returned %d", get ? "get" : "put", rc);
	CHECK(!o.done);
	WAIT_FOR(o.done, 60);
	return o.status;
}

#define RW (MRAIL_DRV_ACCESS_LOCAL | MRAIL_DRV_ACCESS_REMOTE_READ |         \
	    MRAIL_DRV_ACCESS_REMOTE_WRITE)

static int rma(const char *params)
{
	static const size_t sizes[] = {1, 4096, 65537, 4 * MiB + 3};
	struct side *a, *b;
	struct tep tb;
	struct mrail_drv_mr *rmr, *lmr;
	uint8_t rkey[MRAIL_DRV_RKEY_MAX];
	size_t rkey_len = sizeof rkey, len = 8 * MiB;

	if (!open_pair(params, &a, &b))
		return SKIP;
	if (!(caps_of(a).flags & MRAIL_DRV_CAP_RDMA_READ)) {
		printf("SKIP: no FI_RMA with %s\n", params);
		h_side_close(b);
		h_side_close(a);
		return SKIP;
	}
	CHECK(h_side_listen(a, rail_of(a)));
	h_tep_init(&tb, "B.conn");
	h_connect_pair(b, &tb, rail_of(b), a);
	uint8_t *rem = calloc(1, len), *loc = calloc(1, len);
	CHECK(rem && loc);
	CHECK(ops->rma->mr_reg(a->drv, rem, len, RW, &rmr) == 0);
	CHECK(ops->rma->mr_reg(b->drv, loc, len, MRAIL_DRV_ACCESS_LOCAL,
			       &lmr) == 0);
	CHECK(ops->rma->mr_pack(rmr, rkey, &rkey_len) == 0);
	CHECK(rkey_len <= MRAIL_DRV_RKEY_MAX);
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		size_t n = sizes[i], off = (len - n) / 3;
		h_fill(loc, n, 100 + i, off);
		CHECK(rma_sync(&tb, false, loc, n, lmr, (uintptr_t)rem + off,
			       rkey, rkey_len) == 0);
		CHECK(h_verify(rem + off, n, 100 + i, off) == SIZE_MAX);
		memset(loc, 0, len);
		CHECK(rma_sync(&tb, true, loc + 7, n, lmr, (uintptr_t)rem + off,
			       rkey, rkey_len) == 0);
		CHECK(h_verify(loc + 7, n, 100 + i, off) == SIZE_MAX);
	}
	/* A malformed key is refused at once. */
	struct op o = {0};
	CHECK(ops->rma->get(tb.ep, loc, 8, lmr, (uintptr_t)rem, rkey, 3, &o) ==
	      MRAIL_ERR_INVALID);
	ops->rma->mr_dereg(lmr);
	ops->rma->mr_dereg(rmr);
	h_side_close(b);
	h_side_close(a);
	free(rem);
	free(loc);
	return 0;
}

static int test_rma_tcp(void)
{
	return rma(TCP);
}

static int test_rma_shm(void)
{
	return rma(SHM);
}

/* ---- failures ---------------------------------------------------------- */

static int test_bad_blob(void)
{
	struct side *a, *b;
	struct mrail_drv_ep *ep;
	uint8_t junk[20] = "MROA";

	if (!open_pair(TCP, &a, &b))
		return SKIP;
	CHECK(ops->connect(b->drv, NULL, junk, sizeof junk, NULL, &ep) ==
	      MRAIL_ERR_INVALID);
	CHECK(ops->connect(b->drv, NULL, "xx", 2, NULL, &ep) ==
	      MRAIL_ERR_INVALID);
	CHECK(ops->connect(b->drv, "nosuch", junk, sizeof junk, NULL, &ep) ==
	      MRAIL_ERR_INVALID);
	h_side_close(b);
	h_side_close(a);
	return 0;
}

static int test_refuse(void)
{
	struct side *a, *b;
	struct tep tb;

	if (!open_pair(TCP, &a, &b))
		return SKIP;
	CHECK(h_side_listen(a, rail_of(a)));
	a->refuse = true;
	h_tep_init(&tb, "B.conn");
	tb.side = b;
	CHECK(ops->connect(b->drv, rail_of(b), a->blob, a->blob_len, &tb,
			   &tb.ep) == 0);
	WAIT_FOR(tb.connected, 30);
	CHECK(tb.connect_status == MRAIL_ERR_PEER && a->refused == 1);
	h_close(&tb);
	h_side_close(b);
	h_side_close(a);
	return 0;
}

static int test_peer_close(void)
{
	struct side *a, *b;
	struct tep tb;

	if (!open_pair(TCP, &a, &b))
		return SKIP;
	CHECK(h_side_listen(a, rail_of(a)));
	h_tep_init(&tb, "B.conn");
	struct tep *ta = h_connect_pair(b, &tb, rail_of(b), a);
	h_close(ta);
	WAIT_FOR(tb.errors, 30);
	CHECK(tb.error_status == MRAIL_ERR_PEER);
	CHECK(h_send(&tb, "x", 1, NULL, 0, NULL) == MRAIL_ERR_PEER);
	h_close(&tb);
	h_side_close(b);
	h_side_close(a);
	return 0;
}

/* Bodies into one static buffer: a body cut short by the peer's death
 * never gets recv_body_done, so nothing may be allocated per body. */
/* A killed process leaves its shm region behind (docs/driver-ofi.md,
 * known limits): the test that killed it removes it. */
static void remove_shm_regions(pid_t pid)
{
	char prefix[32], path[300];
	struct dirent *d;
	DIR *dir = opendir("/dev/shm");

	if (!dir)
		return;
	snprintf(prefix, sizeof prefix, "mrail_%d_", (int)pid);
	while ((d = readdir(dir)))
		if (!strncmp(d->d_name, prefix, strlen(prefix))) {
			snprintf(path, sizeof path, "/dev/shm/%s", d->d_name);
			unlink(path);
		}
	closedir(dir);
}

/* A peer process killed while it streams bodies to us: our end fails
 * with MRAIL_ERR_PEER (a ping or the transfer itself sees it), no hang,
 * and another connection of the same instance keeps working. */
static int peer_killed(const char *params)
{
	struct side *a, *c;
	int ready[2];
	pid_t pid;
	char ch;

	a = h_side_open_params("A", params, NULL);
	if (!a) {
		printf("SKIP: provider unavailable (%s)\n", params);
		return SKIP;
	}
	CHECK(pipe(ready) == 0);
	CHECK(h_side_listen(a, rail_of(a)));
	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct tep tb;
		/* Never outlive a failed parent. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		h_forget_sides();
		struct side *b = h_side_open_params("B", params, NULL);
		h_tep_init(&tb, "child");
		tb.side = b;
		CHECK(ops->connect(b->drv, rail_of(b), a->blob, a->blob_len,
				   &tb, &tb.ep) == 0);
		WAIT_FOR(tb.connected, 30);
		for (int i = 0;; i++) {
			if (ops->ep_backlog(tb.ep) < 16 * MiB)
				CHECK(h_post(&tb, 64, 4 * MiB, 1) == 0);
			if (i == 50)
				CHECK(write(ready[1], "r", 1) == 1);
			h_progress_all();
		}
	}
	close(ready[1]);
	/* The child's connection first, so which accepted end is whose is
	 * known (h_connect_pair names the next one accepted). */
	WAIT_FOR(a->naccepted == 1, 30);
	struct tep *ta = &a->acc[0];
	/* Before its first body (it cannot send one before our ACCEPT,
	 * which left in the progress call that accepted it). */
	ta->on_body = h_sink_body;
	ta->on_body_done = h_sink_body_done;
	/* A bystander connection within this process. */
	c = h_side_open_params("C", params, NULL);
	struct tep tc;
	h_tep_init(&tc, "C.conn");
	struct tep *tac = h_connect_pair(c, &tc, rail_of(c), a);
	CHECK(a->naccepted == 2 && tac == &a->acc[1]);
	CHECK(read(ready[0], &ch, 1) == 1);
	h_progress_all();
	CHECK(kill(pid, SIGKILL) == 0);
	double t0 = mrail_now();
	WAIT_FOR(ta->errors, 30);
	printf("peer death seen after %.2f s: %s\n", mrail_now() - t0, ta->why);
	CHECK(ta->error_status == MRAIL_ERR_PEER);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st));
	remove_shm_regions(pid);
	h_close(ta);
	/* The other connection is unaffected. */
	frame_stream(&tc, tac, 20, 1);
	frame_stream(tac, &tc, 20, 1);
	h_close(&tc);
	h_close(tac);
	h_side_close(c);
	h_side_close(a);
	return 0;
}

static int test_peer_killed_tcp(void)
{
	return peer_killed(TCP);
}

static int test_peer_killed_shm(void)
{
	return peer_killed(SHM);
}

static int test_wait_fd(void)
{
	struct side *a, *b;
	struct tep tb;

	if (!open_pair(TCP, &a, &b))
		return SKIP;
	CHECK(h_side_listen(a, rail_of(a)));
	h_tep_init(&tb, "B.conn");
	struct tep *ta = h_connect_pair(b, &tb, rail_of(b), a);
	CHECK(ops->wait_fd(a->drv) >= 0);
	/* Quiet, then a frame from B makes A's fd readable. */
	while (ops->progress(a->drv) > 0 || ops->progress(b->drv) > 0)
		;
	CHECK(h_post(&tb, 64, 0, 0) == 0);
	for (int i = 0; i < 100 && !tb.send_ok; i++)
		h_progress(b);
	struct pollfd p = {ops->wait_fd(a->drv), POLLIN, 0};
	double t0 = mrail_now();
	int woke = 0;
	while (!woke && mrail_now() - t0 < 10) {
		woke = poll(&p, 1, 100) > 0;
		h_progress(b);
	}
	CHECK(woke);
	WAIT_FOR(ta->rx_next_seq == 1, 10);
	h_side_close(b);
	h_side_close(a);
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(void);
} tests[] = {
	{"caps", test_caps},
	{"params", test_params},
	{"shm-default", test_shm_default},
	{"lib-missing", test_lib_missing},
	{"frames-tcp", test_frames_tcp},
	{"frames-shm", test_frames_shm},
	{"rma-tcp", test_rma_tcp},
	{"rma-shm", test_rma_shm},
	{"bad-blob", test_bad_blob},
	{"refuse", test_refuse},
	{"peer-close", test_peer_close},
	{"peer-killed-tcp", test_peer_killed_tcp},
	{"peer-killed-shm", test_peer_killed_shm},
	{"wait-fd", test_wait_fd},
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
