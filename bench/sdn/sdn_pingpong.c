/*
 * sdn-pingpong: ping-pong latency and bandwidth of 2 ranks (mrail-run) with
 * the SDN tagging hooks the MTL installs (MRAIL_SDN, docs/sdn.md); engine
 * tags are MTL match bits of a point-to-point message (cid 0, tag 1).
 * usage: sdn-pingpong [ITERS]
 * Prints on rank 0: "lat_us L bw_MBps B retags R lat_msgs M bw_msgs N"
 * where L is the median half round trip of 8-byte messages, B the
 * bandwidth of 4 MiB ping-pongs (bytes / half round trip, median), M and
 * N the one-way messages of each half (warm-up included).
 * With MRAIL_SDN_CONTROLLER=host:port each rank also says HELLO to the
 * controller and, before measuring, the pair's pattern is announced in
 * sync mode (rank 0 PATTERN and waits for the flows, rank 1 WAITs), as
 * the coll component does before a collective: the measured traffic then
 * runs with the controller attached, its one sync wait not counted.
 */
#include <mrail.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctrl_client.h"
#include "mpi-binding/ompi/mtl_mrail_bits.h"
#include "sdn_node.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "sdn-pingpong: %s: %s\n", what, mrail_strerror(rc));
	exit(1);
}

/* Median half round trip of `iters` ping-pongs of len bytes. */
static double pingpong(mrail_engine_t *e, unsigned me, void *buf, size_t len,
		       int iters)
{
	double *t = malloc(sizeof(double) * (size_t)iters);
	uint64_t tag = mrail_mtl_send_bits(0, (int)me, 1);
	uint64_t rtag = mrail_mtl_send_bits(0, (int)(1 - me), 1);
	mrail_request_t *rq;
	int rc;
	if (!t)
		exit(1);
	for (int i = -iters / 10 - 1; i < iters; i++) {
		double t0 = now();
		if (me == 0) {
			if ((rc = mrail_isend(e, 1, buf, len, tag, &rq)) ||
			    (rc = mrail_wait(e, rq, NULL)) ||
			    (rc = mrail_irecv(e, 1, buf, len, rtag,
					      MRAIL_TAG_MASK_ALL, &rq)) ||
			    (rc = mrail_wait(e, rq, NULL)))
				die("ping", rc);
		} else {
			if ((rc = mrail_irecv(e, 0, buf, len, rtag,
					      MRAIL_TAG_MASK_ALL, &rq)) ||
			    (rc = mrail_wait(e, rq, NULL)) ||
			    (rc = mrail_isend(e, 0, buf, len, tag, &rq)) ||
			    (rc = mrail_wait(e, rq, NULL)))
				die("pong", rc);
		}
		if (i >= 0)
			t[i] = (now() - t0) / 2;
	}
	qsort(t, (size_t)iters, sizeof *t, cmp);
	double m = t[iters / 2];
	free(t);
	return m;
}

/* HELLO, then the pair's pattern announced and waited for (sync mode). */
static struct mrail_sdn_ctrl *controller_sync(const char *addr, unsigned me)
{
	static const struct mrail_sdn_pair pair = {.src = 0, .dst = 1};
	struct mrail_sdn_ctrl *c;
	char err[256], host[64], rails[4096];
	int rc;

	if (mrail_sdn_ctrl_connect(addr, 10000, &c, err, sizeof err)) {
		fprintf(stderr, "sdn-pingpong: controller %s: %s\n", addr, err);
		exit(1);
	}
	if (gethostname(host, sizeof host))
		strcpy(host, "unknown");
	host[sizeof host - 1] = '\0';
	if ((rc = mrail_sdn_ctrl_local_rails(rails, sizeof rails)) ||
	    mrail_sdn_ctrl_hello(c, "sdn-pingpong", me, 2, host, rails)) {
		fprintf(stderr, "sdn-pingpong: controller HELLO: %s\n",
			rc ? strerror(-rc) : mrail_sdn_ctrl_error(c));
		exit(1);
	}
	rc = me == 0 ? mrail_sdn_ctrl_pattern(c, "sdn-pingpong", 0, "bcast",
					      0, &pair, 1, 1)
		     : mrail_sdn_ctrl_wait(c, "sdn-pingpong",
					   mrail_sdn_ctrl_pattern_key(
						   0, "bcast", &pair, 1));
	if (rc) {
		fprintf(stderr, "sdn-pingpong: controller sync: %s\n",
			mrail_sdn_ctrl_error(c));
		exit(1);
	}
	return c;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 2000;
	const char *re = getenv("MRAIL_RANK");
	unsigned me = re ? (unsigned)atoi(re) : 0;
	struct mrail_sdn_opts o = {.world_rank = me, .nprocs = 2,
				   .fence_us = -1};
	struct mrail_sdn *sdn;
	char err[512];
	if (iters < 10) {
		fprintf(stderr, "usage: sdn-pingpong [ITERS >= 10]\n");
		return 2;
	}
	if (mrail_sdn_open(&o, &sdn, err, sizeof err)) {
		fprintf(stderr, "sdn-pingpong: %s\n", err);
		return 1;
	}
	const char *ctl_addr = getenv("MRAIL_SDN_CONTROLLER");
	struct mrail_sdn_ctrl *ctl =
		ctl_addr && *ctl_addr ? controller_sync(ctl_addr, me) : NULL;
	struct mrail_config cfg;
	mrail_engine_t *e;
	int rc = mrail_config_init(&cfg);
	if (rc)
		die("config", rc);
	cfg.rail_hooks = mrail_sdn_hooks(sdn);
	cfg.rail_hooks_ctx = sdn;
	if ((rc = mrail_engine_create(&cfg, &e)))
		die("engine", rc);
	if (mrail_size(e) != 2) {
		fprintf(stderr, "sdn-pingpong: run with 2 ranks\n");
		return 1;
	}
	size_t big = 4u << 20;
	char *buf = calloc(1, big);
	if (!buf)
		return 1;
	/* SDN_PINGPONG=lat|bw: one half only, for bench/sdn/overhead.sh's
	 * per-message and per-transfer in-kernel cost. */
	const char *only = getenv("SDN_PINGPONG");
	int do_lat = !only || strcmp(only, "bw"), do_bw = !only || strcmp(only, "lat");
	int bw_iters = iters / 20 + 5;
	double lat = do_lat ? pingpong(e, me, buf, 8, iters) : 0;
	double bw = do_bw ? big / pingpong(e, me, buf, big, bw_iters) / 1e6 : 0;
	/* One-way messages of each half, warm-up included. */
	long lat_msgs = do_lat ? 2L * (iters + iters / 10 + 1) : 0;
	long bw_msgs = do_bw ? 2L * (bw_iters + bw_iters / 10 + 1) : 0;
	mrail_engine_destroy(e);
	struct mrail_sdn_stats st;
	mrail_sdn_get_stats(sdn, &st);
	if (me == 0)
		printf("lat_us %.3f bw_MBps %.1f retags %llu lat_msgs %ld "
		       "bw_msgs %ld\n", lat * 1e6, bw,
		       (unsigned long long)st.retags, lat_msgs, bw_msgs);
	mrail_sdn_close(sdn);
	mrail_sdn_ctrl_close(ctl);
	free(buf);
	return 0;
}
