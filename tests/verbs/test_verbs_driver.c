/*
 * Verbs driver tests on the verbs test double (MRAIL_VERBS_DOUBLE, set
 * here unless TEST_VERBS_HW=1 asks for the real HCA): rails and their
 * nominal model, the "no device" error, frames over RC SENDs with
 * credits, RDMA get/put and their access errors, a QP error completion,
 * peers in two processes, wait_fd; and the double's own verbs semantics
 * (QP state machine, RNR, rkey checks). Tests that need the double skip
 * (77) on hardware; on hardware without an HCA every test skips.
 * Usage: test-verbs-driver [test-name]  (no name: run all).
 */
#include "tests/driver/harness.h"

#include "drivers/verbs/verbs_api.h"
#include "util/clock.h"
#include "util/log.h"

#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern const struct mrail_drv_ops mrail_verbs_driver_ops;
const struct mrail_drv_ops *ops = &mrail_verbs_driver_ops;

#define KiB ((uint64_t)1 << 10)
#define MiB ((uint64_t)1 << 20)
#define SKIP 77
#define MAX_HEAD ((size_t)(32 * KiB - 16))
#define MAX_BODY MiB

static bool hw;

/* Set the double's configuration (before any side is open). */
static void use_double(const char *conf)
{
	setenv("MRAIL_VERBS_DOUBLE", conf, 1);
}

static struct tep *pair(struct side **a, struct side **b, struct tep *tb)
{
	*a = h_side_open("A");
	*b = h_side_open("B");
	CHECK(h_side_listen(*a, NULL));
	h_tep_init(tb, "B.conn");
	return h_connect_pair(*b, tb, NULL, *a);
}

static void frame_stream(struct tep *tx, struct tep *rx, int n)
{
	static const size_t heads[] = {32, 33, 100, 4096, 20000, MAX_HEAD};
	static const uint64_t bodies[] = {0, 1, 5000, 65536, 300000,
					  MAX_BODY};
	uint64_t rx0 = rx->rx_next_seq;

	for (int i = 0; i < n; i++) {
		size_t h = heads[i % 6];
		uint64_t b = bodies[(i / 2) % 6];
		int pieces = b ? 1 + (int)(h_rand() % 64) : 0;
		CHECK(h_post(tx, h, b, pieces) == 0);
	}
	WAIT_FOR(rx->rx_next_seq == rx0 + (uint64_t)n &&
			 tx->tx_outstanding == 0,
		 60);
	CHECK(tx->send_err == 0 && !tx->errors && !rx->errors);
	CHECK(rx->bodies_started == rx->bodies_done);
}

/* ---- rails, caps, errors ----------------------------------------------- */

static int test_caps(void)
{
	struct mrail_drv_rail_desc d[8];
	struct mrail_drv_caps c;
	struct side *s;
	int n;

	if (hw)
		return SKIP;
	/* Two HCAs of two HDR 4x ports; the process is near the second. */
	use_double("devices=2,ports=2,speed=64,width=2,near=1");
	s = h_side_open("S");
	ops->query_caps(s->drv, &c);
	CHECK(c.flags & MRAIL_DRV_CAP_RDMA_READ);
	CHECK(c.flags & MRAIL_DRV_CAP_RDMA_WRITE);
	CHECK(c.flags & MRAIL_DRV_CAP_NEEDS_REG);
	CHECK(c.max_head == MAX_HEAD && c.max_body == MAX_BODY);
	CHECK(ops->rma && ops->list_rails);
	n = ops->list_rails(s->drv, d, 8);
	CHECK(n == 4);
	/* Nearest HCA first, ports in order within it. */
	CHECK(!strcmp(d[0].name, "vdbl1:1") && !strcmp(d[1].name, "vdbl1:2"));
	CHECK(!strcmp(d[2].name, "vdbl0:1") && !strcmp(d[3].name, "vdbl0:2"));
	for (int i = 0; i < n; i++) {
		CHECK(d[i].scope == MRAIL_DRV_SCOPE_FABRIC);
		CHECKF(!strcmp(d[i].fabric, "roce:fe80:0000:0000:0000"),
		       "fabric %s", d[i].fabric);
		CHECK(!strcmp(d[i].listen, d[i].name));
		/* HDR: 50 Gbit/s per lane, 4 lanes. */
		CHECKF(d[i].nominal_bandwidth == 25e9, "bw %g",
		       d[i].nominal_bandwidth);
	}
	CHECK(ops->list_rails(s->drv, d, 1) == 1);
	char blob[64], name[64];
	size_t len = sizeof blob;
	CHECK(ops->listen(s->drv, "vdbl7:1", blob, &len, name,
			  sizeof name) == MRAIL_ERR_NOT_FOUND);
	h_side_close(s);
	return 0;
}

static int test_no_device(void)
{
	int rc;

	if (hw)
		return SKIP;
	unsetenv("MRAIL_VERBS_DOUBLE");
	struct side *s = h_side_open_params("S", "", &rc);
	if (s) {
		h_side_close(s); /* this host has an HCA */
		return SKIP;
	}
	CHECK(rc == MRAIL_ERR_NOT_FOUND);
	use_double("devices=9");
	CHECK(!h_side_open_params("S", "", &rc) && rc == MRAIL_ERR_CONFIG);
	use_double("bogus=1");
	CHECK(!h_side_open_params("S", "", &rc) && rc == MRAIL_ERR_CONFIG);
	use_double("1");
	CHECK(!h_side_open_params("S", "double=2", &rc) &&
	      rc == MRAIL_ERR_CONFIG);
	unsetenv("MRAIL_VERBS_DOUBLE");
	s = h_side_open_params("S", "double=1", &rc);
	CHECK(s); /* the parameter selects the double too */
	h_side_close(s);
	return 0;
}

static int test_bad_blob(void)
{
	struct side *a, *b;
	struct tep tb;
	uint8_t blob[64];

	a = h_side_open("A");
	b = h_side_open("B");
	CHECK(h_side_listen(a, NULL));
	memcpy(blob, a->blob, a->blob_len);
	h_tep_init(&tb, "bad");
	tb.side = b;
	CHECK(ops->connect(b->drv, NULL, blob, a->blob_len - 1, &tb,
			   &tb.ep) == MRAIL_ERR_INVALID);
	blob[4] = 9; /* version */
	CHECK(ops->connect(b->drv, NULL, blob, a->blob_len, &tb, &tb.ep) ==
	      MRAIL_ERR_INVALID);
	h_side_close(b);
	h_side_close(a);
	return 0;
}

/* ---- frames and credits ------------------------------------------------ */

static int test_frames(void)
{
	struct side *a, *b;
	struct tep tb;
	struct tep *ta = pair(&a, &b, &tb);

	frame_stream(&tb, ta, 300);
	frame_stream(ta, &tb, 100);
	for (int i = 0; i < 40; i++) {
		CHECK(h_post(&tb, 64, (uint64_t)i * 10000, i ? 3 : 0) == 0);
		CHECK(h_post(ta, 64, (uint64_t)i * 9999, i ? 2 : 0) == 0);
	}
	WAIT_FOR(ta->rx_next_seq == 340 && tb.rx_next_seq == 140 &&
			 !ta->tx_outstanding && !tb.tx_outstanding,
		 30);
	CHECK(ops->ep_backlog(tb.ep) == 0);
	static uint8_t head[MAX_HEAD + 1];
	struct iovec big = {head, MAX_BODY + 1};
	CHECK(h_send(&tb, head, MAX_HEAD + 1, NULL, 0, NULL) ==
	      MRAIL_ERR_INVALID);
	CHECK(h_send(&tb, head, 32, &big, 1, NULL) == MRAIL_ERR_INVALID);
	h_side_close(b);
	h_side_close(a);
	return 0;
}

/* The receiver does not progress: the sender stops at its credits (no
 * receive-not-ready error), then everything arrives in order. */
static int test_credits(void)
{
	struct side *a, *b;
	struct tep tb;
	struct tep *ta = pair(&a, &b, &tb);
	double t0;

	for (int i = 0; i < 500; i++)
		CHECK(h_post(&tb, 40, i % 5 ? 0 : 70000, 2) == 0);
	t0 = mrail_now();
	while (mrail_now() - t0 < 0.3)
		h_progress(b);
	CHECK(ops->ep_backlog(tb.ep) > 0 && !tb.errors);
	CHECK(tb.send_ok < 500);
	WAIT_FOR(ta->rx_next_seq == 500 && !tb.tx_outstanding, 60);
	CHECK(!tb.errors && !ta->errors && tb.send_err == 0);
	/* Only one side talks for long: credits flow back explicitly. */
	frame_stream(&tb, ta, 400);
	h_side_close(b);
	h_side_close(a);
	return 0;
}

static int test_wait_fd(void)
{
	struct side *a, *b;
	struct tep tb;
	struct tep *ta = pair(&a, &b, &tb);
	struct pollfd p = {.fd = ops->wait_fd(a->drv), .events = POLLIN};

	CHECK(p.fd >= 0);
	while (h_progress(a) > 0)
		;
	CHECK(h_post(&tb, 64, 100, 1) == 0);
	for (int i = 0; i < 5; i++)
		h_progress(b);
	CHECK(poll(&p, 1, 5000) == 1); /* a's completion woke it */
	WAIT_FOR(ta->rx_next_seq == 1 && tb.send_ok == 1, 5);
	h_side_close(b);
	h_side_close(a);
	return 0;
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
		 : ops->rma->put(t->ep, laddr, len, lmr, raddr, rkey,
				 rkey_len, &o);
	h_in_send--;
	if (rc)
		return rc;
	CHECK(!o.done);
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

static void reg_make(struct side *s, struct reg *r, size_t len, unsigned acc)
{
	r->len = len;
	r->mem = calloc(1, len);
	CHECK(r->mem);
	CHECK(ops->rma->mr_reg(s->drv, r->mem, len, acc, &r->mr) == 0);
	r->rkey_len = sizeof r->rkey;
	CHECK(ops->rma->mr_pack(r->mr, r->rkey, &r->rkey_len) == 0);
	CHECK(r->rkey_len <= MRAIL_DRV_RKEY_MAX);
}

static void reg_free(struct reg *r)
{
	if (r->mr)
		ops->rma->mr_dereg(r->mr);
	free(r->mem);
	r->mr = NULL;
}

#define RW (MRAIL_DRV_ACCESS_LOCAL | MRAIL_DRV_ACCESS_REMOTE_READ |         \
	    MRAIL_DRV_ACCESS_REMOTE_WRITE)

static int test_rma(void)
{
	static const size_t sizes[] = {1, 7, 4096, 65537, MiB + 3, 64 * MiB};
	struct side *a, *b;
	struct tep tb;
	struct tep *ta = pair(&a, &b, &tb);
	struct reg remote, local;

	reg_make(b, &remote, 64 * MiB + 4096, RW);
	reg_make(a, &local, 64 * MiB + 4096, MRAIL_DRV_ACCESS_LOCAL);
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		size_t len = sizes[i], off = (remote.len - len) / 3;
		uint64_t raddr = (uintptr_t)remote.mem + off;
		h_fill(local.mem, len, 11 + i, off);
		CHECK(rma_sync(ta, false, local.mem, len, local.mr, raddr,
			       remote.rkey, remote.rkey_len) == 0);
		CHECK(h_verify(remote.mem + off, len, 11 + i, off) ==
		      SIZE_MAX);
		memset(local.mem, 0, len);
		CHECK(rma_sync(ta, true, local.mem + 5, len, local.mr, raddr,
			       remote.rkey, remote.rkey_len) == 0);
		CHECK(h_verify(local.mem + 5, len, 11 + i, off) == SIZE_MAX);
	}
	/* Outside the registration the key names: refused at once. */
	CHECK(rma_sync(ta, true, local.mem, 100, local.mr,
		       (uintptr_t)remote.mem + remote.len - 50, remote.rkey,
		       remote.rkey_len) == MRAIL_ERR_INVALID);
	CHECK(!ta->errors);
	reg_free(&local);
	reg_free(&remote);
	h_side_close(b);
	h_side_close(a);
	return 0;
}

/* A key the target no longer honours: the HCA answers remote access
 * error; the operation and the connection fail, on both sides. */
static int test_rma_access(void)
{
	struct side *a, *b;
	struct tep tb;
	struct tep *ta = pair(&a, &b, &tb);
	struct reg ro, local;
	int st;

	reg_make(b, &ro, MiB, MRAIL_DRV_ACCESS_LOCAL |
				      MRAIL_DRV_ACCESS_REMOTE_READ);
	reg_make(a, &local, MiB, MRAIL_DRV_ACCESS_LOCAL);
	CHECK(rma_sync(ta, true, local.mem, 4096, local.mr,
		       (uintptr_t)ro.mem, ro.rkey, ro.rkey_len) == 0);
	st = rma_sync(ta, false, local.mem, 4096, local.mr, (uintptr_t)ro.mem,
		      ro.rkey, ro.rkey_len);
	CHECKF(st == MRAIL_ERR_PROTO, "put to a read-only region: %d", st);
	WAIT_FOR(ta->errors && tb.errors, 10);
	CHECK(ta->error_status == MRAIL_ERR_PROTO);
	CHECK(tb.error_status == MRAIL_ERR_PEER);
	CHECK(strstr(ta->why, "remote access"));
	h_close(ta);
	h_close(&tb);
	/* A new connection works; a deregistered key does not. */
	struct tep tc;
	h_tep_init(&tc, "B.conn2");
	struct tep *tc_acc = h_connect_pair(b, &tc, NULL, a);
	(void)tc_acc;
	uint8_t key[MRAIL_DRV_RKEY_MAX];
	size_t klen = ro.rkey_len;
	memcpy(key, ro.rkey, klen);
	uint64_t addr = (uintptr_t)ro.mem;
	reg_free(&ro);
	st = rma_sync(tc_acc, true, local.mem, 64, local.mr, addr, key, klen);
	CHECK(st == MRAIL_ERR_PROTO);
	reg_free(&local);
	h_side_close(b);
	h_side_close(a);
	return 0;
}

/* ---- faults ------------------------------------------------------------ */

static int test_qp_error(void)
{
	struct side *a, *b;
	struct tep tb, tc;

	if (hw)
		return SKIP;
	/* The 31st RC work request of this process fails (both sides live
	 * here: the connection set-up and the stream below count). */
	use_double("fail_after=30");
	struct tep *ta = pair(&a, &b, &tb);
	for (int i = 0; i < 100; i++)
		CHECK(h_post(&tb, 64, i % 3 ? 0 : 100000, 2) == 0);
	WAIT_FOR(tb.errors && ta->errors, 10);
	CHECK(tb.error_status == MRAIL_ERR_PEER && strstr(tb.why, "retry"));
	CHECK(ta->error_status == MRAIL_ERR_PEER);
	WAIT_FOR(tb.send_ok + tb.send_err == 100, 10);
	CHECK(tb.send_err > 0 && tb.send_ok < 100);
	CHECK(h_post(&tb, 64, 0, 0) == MRAIL_ERR_PEER);
	h_close(&tb);
	h_close(ta);
	/* Another connection of the same processes is unaffected. */
	h_tep_init(&tc, "B.conn2");
	struct tep *tc_acc = h_connect_pair(b, &tc, NULL, a);
	frame_stream(&tc, tc_acc, 100);
	frame_stream(tc_acc, &tc, 100);
	h_side_close(b);
	h_side_close(a);
	use_double("1");
	return 0;
}

/* Peers in two processes: frames both ways, then the parent reads and
 * writes the child's memory; the parent's close ends the child's. */
static int test_fork(void)
{
	struct side *a = h_side_open("A");
	int pipefd[2];
	pid_t pid;

	CHECK(h_side_listen(a, NULL));
	CHECK(pipe(pipefd) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct tep tb;
		struct reg r;
		h_forget_sides();
		struct side *b = h_side_open("B");
		h_tep_init(&tb, "child");
		tb.side = b;
		CHECK(ops->connect(b->drv, NULL, a->blob, a->blob_len, &tb,
				   &tb.ep) == 0);
		WAIT_FOR(tb.connected, 10);
		CHECK(tb.connect_status == 0);
		reg_make(b, &r, 8 * MiB, RW);
		h_fill(r.mem, r.len, 99, 0);
		uint64_t addr = (uintptr_t)r.mem;
		CHECK(write(pipefd[1], &addr, sizeof addr) == sizeof addr);
		CHECK(write(pipefd[1], &r.rkey_len, sizeof r.rkey_len) ==
		      sizeof r.rkey_len);
		CHECK(write(pipefd[1], r.rkey, r.rkey_len) ==
		      (ssize_t)r.rkey_len);
		for (int i = 0; i < 100; i++)
			CHECK(h_post(&tb, 40 + (size_t)i * 200,
				     (uint64_t)i * 9000, 1 + i % 64) == 0);
		WAIT_FOR(tb.rx_next_seq == 100 && !tb.tx_outstanding, 60);
		WAIT_FOR(tb.errors, 60); /* the parent closes */
		CHECK(tb.error_status == MRAIL_ERR_PEER);
		/* The parent's put landed. */
		CHECK(h_verify(r.mem + MiB, MiB, 77, 0) == SIZE_MAX);
		h_close(&tb);
		reg_free(&r);
		h_side_close(b);
		_exit(0);
	}
	WAIT_FOR(a->naccepted == 1, 30);
	struct tep *ta = &a->acc[0];
	uint64_t addr;
	size_t klen;
	uint8_t key[MRAIL_DRV_RKEY_MAX];
	CHECK(read(pipefd[0], &addr, sizeof addr) == sizeof addr);
	CHECK(read(pipefd[0], &klen, sizeof klen) == sizeof klen);
	CHECK(klen <= sizeof key && read(pipefd[0], key, klen) == (ssize_t)klen);
	WAIT_FOR(ta->rx_next_seq == 100, 60);
	for (int i = 0; i < 100; i++)
		CHECK(h_post(ta, 32 + (size_t)i * 100, (uint64_t)i * 10007,
			     1 + i % 7) == 0);
	WAIT_FOR(!ta->tx_outstanding, 60);
	struct reg l;
	reg_make(a, &l, 8 * MiB, MRAIL_DRV_ACCESS_LOCAL);
	CHECK(rma_sync(ta, true, l.mem, 8 * MiB, l.mr, addr, key, klen) == 0);
	CHECK(h_verify(l.mem, 8 * MiB, 99, 0) == SIZE_MAX);
	h_fill(l.mem, MiB, 77, 0);
	CHECK(rma_sync(ta, false, l.mem, MiB, l.mr, addr + MiB, key, klen) ==
	      0);
	reg_free(&l);
	h_close(ta);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed");
	h_side_close(a);
	return 0;
}

/* ---- the double's own verbs semantics ---------------------------------- */

struct dqp {
	struct ibv_qp *qp;
	union ibv_gid gid;
};

static void dqp_init(const struct mrail_verbs_api *v, struct ibv_pd *pd,
		     struct ibv_cq *cq, struct dqp *q)
{
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq,
				      .qp_type = IBV_QPT_RC};
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1,
				.qp_access_flags = IBV_ACCESS_REMOTE_READ};

	ia.cap.max_send_wr = ia.cap.max_recv_wr = 8;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	q->qp = v->create_qp(pd, &ia);
	CHECK(q->qp);
	CHECK(v->query_gid(pd->context, 1, 0, &q->gid) == 0);
	/* INIT without access flags: refused. */
	CHECK(v->modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_PORT) != 0);
	CHECK(v->modify_qp(q->qp, &a,
			   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS) == 0);
}

static void dqp_rts(const struct mrail_verbs_api *v, struct dqp *q,
		    const struct dqp *to)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR,
				.path_mtu = IBV_MTU_1024,
				.dest_qp_num = to->qp->qp_num};
	int rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;

	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = to->gid;
	a.ah_attr.port_num = 1;
	CHECK(v->modify_qp(q->qp, &a, rtr) == 0);
	a.qp_state = IBV_QPS_RTS;
	CHECK(v->modify_qp(q->qp, &a,
			   IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				   IBV_QP_MAX_QP_RD_ATOMIC) == 0);
}

static struct ibv_wc poll_one(const struct mrail_verbs_api *v,
			      struct ibv_cq *cq)
{
	struct ibv_wc wc;
	double t0 = mrail_now();
	while (v->poll_cq(cq, 1, &wc) == 0)
		CHECK(mrail_now() - t0 < 5);
	return wc;
}

static int test_double(void)
{
	if (hw)
		return SKIP;
	const struct mrail_verbs_api *v = mrail_verbs_double_api("1");
	int n;
	struct ibv_device **list = v->get_device_list(&n);
	CHECK(list && n == 2);
	struct ibv_context *ctx = v->open_device(list[0]);
	struct ibv_pd *pd = v->alloc_pd(ctx);
	struct ibv_cq *cq = v->create_cq(ctx, 64, NULL, NULL, 0);
	static uint8_t buf[8192];
	struct ibv_mr *mr = v->reg_mr(pd, buf, sizeof buf,
				      IBV_ACCESS_LOCAL_WRITE |
					      IBV_ACCESS_REMOTE_READ);
	struct dqp x, y;
	struct ibv_sge sge = {(uintptr_t)buf, 64, mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	struct ibv_recv_wr rwr = {.sg_list = &sge, .num_sge = 1}, *rbad;
	struct ibv_wc wc;

	CHECK(ctx && pd && cq && mr);
	dqp_init(v, pd, cq, &x);
	dqp_init(v, pd, cq, &y);
	/* Sending before RTS is a misuse, not a completion. */
	CHECK(v->post_send(x.qp, &wr, &bad) == EINVAL && bad == &wr);
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS};
	CHECK(v->modify_qp(x.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) != 0);
	dqp_rts(v, &x, &y);
	dqp_rts(v, &y, &x);
	/* A SEND with a receive posted, then one without: RNR. */
	CHECK(v->post_recv(y.qp, &rwr, &rbad) == 0);
	CHECK(v->post_send(x.qp, &wr, &bad) == 0);
	/* One CQ for both: the two completions in either order. */
	for (int i = 0, sends = 0, recvs = 0; i < 2; i++) {
		wc = poll_one(v, cq);
		CHECK(wc.status == IBV_WC_SUCCESS);
		if (wc.opcode == IBV_WC_SEND)
			CHECK(++sends == 1 && wc.qp_num == x.qp->qp_num);
		else
			CHECK(++recvs == 1 && wc.opcode == IBV_WC_RECV &&
			      wc.byte_len == 64 && wc.qp_num == y.qp->qp_num &&
			      wc.src_qp == x.qp->qp_num);
	}
	CHECK(v->post_send(x.qp, &wr, &bad) == 0);
	wc = poll_one(v, cq);
	CHECK(wc.status == IBV_WC_RNR_RETRY_EXC_ERR);
	/* x is in error now: the next request is flushed. */
	CHECK(v->post_send(x.qp, &wr, &bad) == 0);
	wc = poll_one(v, cq);
	CHECK(wc.status == IBV_WC_WR_FLUSH_ERR);
	/* RDMA WRITE where y only allows READ: remote access error. */
	struct dqp z;
	dqp_init(v, pd, cq, &z);
	struct dqp w;
	dqp_init(v, pd, cq, &w);
	dqp_rts(v, &z, &w);
	dqp_rts(v, &w, &z);
	struct ibv_send_wr rd = wr;
	rd.opcode = IBV_WR_RDMA_READ;
	rd.wr.rdma.remote_addr = (uintptr_t)buf + 4096;
	rd.wr.rdma.rkey = mr->rkey;
	CHECK(v->post_send(z.qp, &rd, &bad) == 0);
	wc = poll_one(v, cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ);
	rd.wr.rdma.rkey = mr->rkey ^ (1u << 20); /* a stale key */
	CHECK(v->post_send(z.qp, &rd, &bad) == 0);
	wc = poll_one(v, cq);
	CHECK(wc.status == IBV_WC_REM_ACCESS_ERR);
	CHECK(v->destroy_cq(cq) == EBUSY); /* QPs still use it */
	CHECK(v->destroy_qp(x.qp) == 0 && v->destroy_qp(y.qp) == 0);
	CHECK(v->destroy_qp(z.qp) == 0 && v->destroy_qp(w.qp) == 0);
	while (v->poll_cq(cq, 1, &wc) > 0)
		;
	CHECK(v->dereg_mr(mr) == 0 && v->destroy_cq(cq) == 0);
	CHECK(v->dealloc_pd(pd) == 0 && v->close_device(ctx) == 0);
	v->free_device_list(list);
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(void);
} tests[] = {
	{"caps", test_caps},       {"no-device", test_no_device},
	{"bad-blob", test_bad_blob}, {"frames", test_frames},
	{"credits", test_credits}, {"wait-fd", test_wait_fd},
	{"rma", test_rma},         {"rma-access", test_rma_access},
	{"qp-error", test_qp_error}, {"fork", test_fork},
	{"double", test_double},
};

int main(int argc, char **argv)
{
	const char *lvl = getenv("MRAIL_LOG_LEVEL");
	const char *h = getenv("TEST_VERBS_HW");
	int ran = 0, rc = 0;

	if (lvl && mrail_log_parse_level(lvl) >= 0)
		mrail_log_level = mrail_log_parse_level(lvl);
	setvbuf(stdout, NULL, _IOLBF, 0);
	hw = h && !strcmp(h, "1");
	if (hw) {
		int orc;
		unsetenv("MRAIL_VERBS_DOUBLE");
		struct side *s = h_side_open_params("probe", "", &orc);
		if (!s) {
			printf("no RDMA device: skipped\n");
			return SKIP;
		}
		h_side_close(s);
	} else {
		use_double("1");
	}
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
