/*
 * External strategies: the example plugin loads (directly and as
 * MRAIL_STRATEGY=example in a standalone engine) and its rdv_split is the
 * one used; a plugin of another ABI, one lacking an op, a bad name and a
 * missing one fail with MRAIL_ERR_CONFIG and a log line saying why. Then the
 * bw and greedy plans: [0, length) covered exactly, in order, proportions.
 */
#include "../check.h"
#include "mrail.h"
#include "strategies/strategy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char logbuf[1 << 16];
static int logfd;

/* Engine creation with MRAIL_STRATEGY=spec, standalone; the log in logbuf. */
static int create_with(const char *spec)
{
	struct mrail_config cfg;
	mrail_engine_t *e = NULL;
	CHECK_EQ(mrail_config_init(&cfg), MRAIL_OK);
	cfg.bootstrap = 0;
	cfg.strategy = spec;
	CHECK_EQ(ftruncate(logfd, 0), 0);
	CHECK_EQ(lseek(logfd, 0, SEEK_SET), 0);
	int rc = mrail_engine_create(&cfg, &e);
	if (rc == MRAIL_OK)
		CHECK_EQ(mrail_engine_destroy(e), MRAIL_OK);
	ssize_t k = pread(logfd, logbuf, sizeof logbuf - 1, 0);
	logbuf[k > 0 ? k : 0] = '\0';
	return rc;
}

static void expect_log(const char *what)
{
	if (!strstr(logbuf, what)) {
		fprintf(stdout, "log lacks '%s':\n%s\n", what, logbuf);
		exit(1);
	}
}

/* What the engine's views predict without a model. */
static double nominal_predict(const struct mrail_rail_view *v, uint64_t bytes)
{
	return v->time_scale * (v->latency + (double)bytes / v->bandwidth);
}

/* A queue view of one message of 100 record bytes. */
static const size_t one_rec[1] = {100};
static const struct mrail_send_queue one_msg = {1, 0, one_rec, 65536};

static void views(struct mrail_rail_view *v, unsigned n, const double *bw)
{
	memset(v, 0, n * sizeof *v);
	for (unsigned i = 0; i < n; i++) {
		v[i].index = i;
		v[i].idle = 1;
		v[i].bandwidth = bw[i];
		v[i].latency = 10e-6;
		v[i].eager_max = 65536;
		v[i].time_scale = 1;
		v[i].predict = nominal_predict;
	}
}

/* A plan covers [0, length) exactly, in offset order, on valid rails. */
static void check_cover(const struct mrail_chunk *c, int cnt, unsigned n,
			uint64_t length, unsigned max)
{
	CHECK(cnt >= 1 && (unsigned)cnt <= max);
	uint64_t off = 0;
	for (int i = 0; i < cnt; i++) {
		CHECK(c[i].rail < n);
		CHECK_EQ(c[i].offset, off);
		CHECK(c[i].length > 0);
		off += c[i].length;
	}
	CHECK_EQ(off, length);
}

static int plan(const char *name, const char *args,
		const struct mrail_rail_view *v, unsigned n, uint64_t length,
		struct mrail_chunk *out, unsigned max)
{
	const struct mrail_strategy_ops *o = mrail_strategy_find(name);
	void *st = NULL;
	CHECK(o);
	CHECK_EQ(o->init(args, &st), MRAIL_OK);
	int cnt = o->rdv_split(st, NULL, v, n, length, out, max);
	o->fini(st);
	check_cover(out, cnt, n, length, max);
	return cnt;
}

static void test_bw(void)
{
	struct mrail_rail_view v[4];
	struct mrail_chunk c[MRAIL_MAX_CHUNKS];
	const double bw[4] = {125e6, 50e6, 25e6, 0}; /* 1000/400/200 Mbit/s */
	views(v, 3, bw);
	/* 8 MiB over 5:2:1. */
	uint64_t L = 8u << 20;
	CHECK_EQ(plan("bw", "", v, 3, L, c, MRAIL_MAX_CHUNKS), 3);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(c[i].rail, i);
		double want = (double)L * bw[i] / 200e6;
		CHECK(c[i].length >= want - 2 && c[i].length <= want + 2);
	}
	/* 256 KiB, min_chunk 64 KiB: the 1/8 share (32 KiB) is left out,
	 * the rest 5:2. */
	L = 256u << 10;
	CHECK_EQ(plan("bw", "min_chunk=64k", v, 3, L, c, MRAIL_MAX_CHUNKS), 2);
	CHECK_EQ(c[0].rail, 0);
	CHECK_EQ(c[1].rail, 1);
	CHECK(c[1].length >= L * 2 / 7 - 1 && c[1].length <= L * 2 / 7 + 1);
	/* Small: one chunk on the fastest rail. */
	CHECK_EQ(plan("bw", "", v, 3, 1000, c, MRAIL_MAX_CHUNKS), 1);
	CHECK_EQ(c[0].rail, 0);
	CHECK_EQ(plan("bw", "min_chunk=1", v, 3, 1, c, MRAIL_MAX_CHUNKS), 1);
	/* Fastest rail not first; max = 2 keeps the two fastest. */
	const double bw2[3] = {10e6, 100e6, 40e6};
	views(v, 3, bw2);
	CHECK_EQ(plan("bw", "min_chunk=1", v, 3, 1u << 20, c, 2), 2);
	CHECK_EQ(c[0].rail, 1);
	CHECK_EQ(c[1].rail, 2);
	/* A rail with unknown bandwidth is the first to go. */
	views(v, 4, bw);
	CHECK_EQ(plan("bw", "", v, 4, 64u << 20, c, MRAIL_MAX_CHUNKS), 3);
	/* Huge payload, odd sizes. */
	views(v, 3, bw);
	plan("bw", "", v, 3, (UINT64_C(1) << 40) + 12345, c, MRAIL_MAX_CHUNKS);
	/* Options. */
	const struct mrail_strategy_ops *o = mrail_strategy_find("bw");
	void *st = NULL;
	CHECK_EQ(o->init("min_chunk=0", &st), MRAIL_ERR_CONFIG);
	CHECK_EQ(o->init("chunks=2", &st), MRAIL_ERR_CONFIG);
	CHECK_EQ(o->init("min_chunk", &st), MRAIL_ERR_CONFIG);
	/* Eager: the fastest idle rail. */
	unsigned count = 0;
	CHECK_EQ(o->init("", &st), MRAIL_OK);
	CHECK_EQ(o->eager_rail(st, NULL, v, 3, &one_msg, &count), 0);
	CHECK_EQ(count, 1);
	v[0].idle = 0;
	CHECK_EQ(o->eager_rail(st, NULL, v, 3, &one_msg, &count), 1);
	v[1].idle = v[2].idle = 0;
	CHECK_EQ(o->eager_rail(st, NULL, v, 3, &one_msg, &count), -1);
	o->fini(st);
}

static void test_greedy(void)
{
	struct mrail_rail_view v[3];
	struct mrail_chunk c[MRAIL_MAX_CHUNKS];
	const double bw[3] = {125e6, 50e6, 25e6};
	views(v, 3, bw);
	/* 1 MiB + 1 in 256 KiB chunks: 5 chunks, round-robin 0,1,2,0,1. */
	uint64_t L = (1u << 20) + 1;
	CHECK_EQ(plan("greedy", "", v, 3, L, c, MRAIL_MAX_CHUNKS), 5);
	for (int i = 0; i < 5; i++) {
		CHECK_EQ(c[i].rail, i % 3);
		CHECK_EQ(c[i].length, i < 4 ? 256u << 10 : 1);
	}
	/* chunk=100 on 1000 bytes: 10 chunks of 100. */
	CHECK_EQ(plan("greedy", "chunk=100", v, 3, 1000, c, MRAIL_MAX_CHUNKS),
		 10);
	/* Cap: 1 GiB in 4 KiB chunks would be 262144; max 256 -> 4 MiB. */
	CHECK_EQ(plan("greedy", "chunk=4k", v, 3, 1u << 30, c,
		      MRAIL_MAX_CHUNKS), 256);
	CHECK_EQ(c[0].length, 4u << 20);
	CHECK_EQ(plan("greedy", "chunk=4k", v, 3, (1u << 30) + 7, c,
		      MRAIL_MAX_CHUNKS), 256);
	/* Small payload: one chunk, on the first idle rail. */
	v[0].idle = 0;
	CHECK_EQ(plan("greedy", "", v, 3, 10, c, MRAIL_MAX_CHUNKS), 1);
	CHECK_EQ(c[0].rail, 1);
	/* Eager: first idle in index order, whatever the bandwidth. */
	const struct mrail_strategy_ops *o = mrail_strategy_find("greedy");
	void *st = NULL;
	/* One message per packet however many are queued and fit. */
	const size_t recs[4] = {100, 100, 100, 100};
	const struct mrail_send_queue q = {4, 1, recs, 65536};
	unsigned count = 0;
	CHECK_EQ(o->init("", &st), MRAIL_OK);
	CHECK_EQ(o->eager_rail(st, NULL, v, 3, &q, &count), 1);
	CHECK_EQ(count, 1);
	v[0].idle = 1;
	count = 0;
	CHECK_EQ(o->eager_rail(st, NULL, v, 3, &q, &count), 0);
	CHECK_EQ(count, 1);
	/* Any rail that becomes idle takes the next message, even the
	 * slowest one. */
	CHECK(o->rail_idle);
	for (unsigned i = 0; i < 3; i++) {
		count = 0;
		CHECK_EQ(o->rail_idle(st, NULL, v, 3, i, &q, &count), 1);
		CHECK_EQ(count, 1);
	}
	v[0].idle = v[1].idle = v[2].idle = 0;
	CHECK_EQ(o->eager_rail(st, NULL, v, 3, &q, &count), -1);
	o->fini(st);
	CHECK_EQ(o->init("chunk=0", &st), MRAIL_ERR_CONFIG);
	CHECK_EQ(o->init("min_chunk=4k", &st), MRAIL_ERR_CONFIG);
	CHECK_EQ(o->init("chunk=lots", &st), MRAIL_ERR_CONFIG);
}

int main(void)
{
	const char *dir = getenv("PLUGIN_DIR");
	char path[4096], tmpl[] = "/tmp/mrail-plugins-XXXXXX";
	CHECK(dir);
	snprintf(path, sizeof path, "/nonexistent-dir::%s", dir);

	test_bw();
	test_greedy();

	logfd = mkstemp(tmpl);
	CHECK(logfd >= 0);
	unlink(tmpl);
	int saved = dup(2);
	CHECK(dup2(logfd, 2) == 2);

	/* The loader directly: the example's plan is one chunk, last rail. */
	const struct mrail_strategy_ops *ops = NULL;
	void *h = NULL, *st = NULL;
	CHECK_EQ(mrail_strategy_load("example", path, &ops, &h), MRAIL_OK);
	CHECK(ops && h && !strcmp(ops->name, "example"));
	CHECK_EQ(ops->init("", &st), MRAIL_OK);
	struct mrail_rail_view v[3];
	struct mrail_chunk c[MRAIL_MAX_CHUNKS];
	const double bw[3] = {1e9, 1e9, 1e9};
	views(v, 3, bw);
	void *peer = NULL;
	CHECK(ops->peer_init && ops->peer_fini && !ops->rail_idle);
	CHECK_EQ(ops->peer_init(st, 1, &peer), MRAIL_OK);
	CHECK(peer);
	CHECK_EQ(ops->rdv_split(st, peer, v, 3, 12345, c, MRAIL_MAX_CHUNKS), 1);
	CHECK_EQ(c[0].rail, 2);
	CHECK_EQ(c[0].length, 12345);
	/* Eager: what fits of the queue, on the last rail if idle. */
	const size_t recs[3] = {40000, 20000, 10000};
	const struct mrail_send_queue q = {3, 0, recs, 65000};
	unsigned count = 0;
	CHECK_EQ(ops->eager_rail(st, peer, v, 3, &q, &count), 2);
	CHECK_EQ(count, 2);
	v[2].idle = 0;
	CHECK_EQ(ops->eager_rail(st, peer, v, 3, &q, &count), -1);
	ops->peer_fini(st, peer);
	ops->fini(st);
	mrail_strategy_unload(h);

	setenv("MRAIL_STRATEGY_PATH", path, 1);
	setenv("MRAIL_LOG_LEVEL", "info", 1);
	/* In an engine (standalone). */
	CHECK_EQ(create_with("example"), MRAIL_OK);
	expect_log("strategy 'example' loaded from ");
	expect_log("/example.so");
	CHECK_EQ(create_with("example:x=1"), MRAIL_ERR_CONFIG);
	/* Wrong ABI, found as libmrail-strategy-badabi.so. */
	CHECK_EQ(create_with("badabi"), MRAIL_ERR_CONFIG);
	char abi[128];
	snprintf(abi, sizeof abi, "libmrail-strategy-badabi.so has strategy "
		 "ABI 999, this libmrail needs %d", MRAIL_STRATEGY_ABI_VERSION);
	expect_log(abi);
	/* An op missing. */
	CHECK_EQ(create_with("noop"), MRAIL_ERR_CONFIG);
	expect_log("noop.so has no init operation");
	/* Not found: the search path is named. */
	CHECK_EQ(create_with("nosuch"), MRAIL_ERR_CONFIG);
	expect_log("no nosuch.so or libmrail-strategy-nosuch.so in "
		   "MRAIL_STRATEGY_PATH=/nonexistent-dir::");
	expect_log(dir);
	CHECK_EQ(create_with("../example"), MRAIL_ERR_CONFIG);
	expect_log("invalid strategy name");
	/* A built-in still wins, and bw/greedy work in an engine. */
	CHECK_EQ(create_with("bw:min_chunk=1k"), MRAIL_OK);
	CHECK_EQ(create_with("greedy:chunk=1m"), MRAIL_OK);
	unsetenv("MRAIL_STRATEGY_PATH");
	CHECK_EQ(create_with("example"), MRAIL_ERR_CONFIG);
	expect_log("MRAIL_STRATEGY_PATH is not set");

	dup2(saved, 2);
	printf("test_plugins: loader, bw and greedy checks passed\n");
	return 0;
}
