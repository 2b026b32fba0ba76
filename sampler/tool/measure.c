/*
 * mrail-sample, measuring: one-way time of one rail, one protocol, by
 * ping-pong between two ranks (one-way = half the round trip), median over
 * repetitions after a warm-up. The rail is chosen with the pin strategy
 * and the protocol with the eager threshold, each in an engine of its own,
 * so the real engine paths are what is timed.
 */
#include "sample_tool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>

double sample_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int wait_req(mrail_engine_t *e, mrail_request_t *r)
{
	mrail_status_t st;
	int rc;
	/* Busy-poll: what an MPI library waiting on a message does. */
	while ((rc = mrail_test(e, r, &st)) == MRAIL_ERR_AGAIN)
		;
	return rc ? rc : st.error;
}

static int pingpong_once(mrail_engine_t *e, uint32_t me, void *buf,
			 size_t len, double *rtt)
{
	mrail_request_t *r;
	uint32_t peer = 1 - me;
	double t0 = sample_now();
	int rc;
	if (me == 0) {
		if ((rc = mrail_isend(e, peer, buf, len, 1, &r)) ||
		    (rc = wait_req(e, r)) ||
		    (rc = mrail_irecv(e, peer, buf, len, 1, MRAIL_TAG_MASK_ALL, &r)) ||
		    (rc = wait_req(e, r)))
			return rc;
	} else {
		if ((rc = mrail_irecv(e, peer, buf, len, 1, MRAIL_TAG_MASK_ALL, &r)) ||
		    (rc = wait_req(e, r)) ||
		    (rc = mrail_isend(e, peer, buf, len, 1, &r)) ||
		    (rc = wait_req(e, r)))
			return rc;
	}
	*rtt = sample_now() - t0;
	return MRAIL_OK;
}

/*
 * Both ranks take rank 0's figure: the next size's repetition count is
 * derived from it, and the two ranks must run the same number of
 * ping-pongs (and write the same profile).
 */
static int agree(mrail_engine_t *e, uint32_t me, double *value)
{
	mrail_request_t *r;
	int rc = me == 0
		? mrail_isend(e, 1, value, sizeof *value, 2, &r)
		: mrail_irecv(e, 0, value, sizeof *value, 2, MRAIL_TAG_MASK_ALL, &r);
	return rc ? rc : wait_req(e, r);
}

/* Repetitions for one size: many for small sizes, few for large ones, so
 * each size costs about the same time; at least 5. */
unsigned sample_reps(const struct sample_opts *o, uint64_t size,
		     double est_oneway)
{
	double per = 2 * est_oneway > 1e-6 ? 2 * est_oneway : 1e-6;
	double n = o->seconds_per_size / per;
	if (n > o->max_reps)
		n = o->max_reps;
	/* A median needs a few; large transfers are stable anyway. */
	if (n < 3)
		n = 3;
	/* The rail's time budget is a bound: near its end, fewer. */
	if (o->budget > 0 && n * per > o->left)
		n = o->left / per > 1 ? floor(o->left / per) : 1;
	(void)size;
	return (unsigned)n;
}

int sample_size(mrail_engine_t *e, uint32_t me, struct sample_opts *o,
		void *buf, uint64_t size, double est_oneway, double *median)
{
	unsigned reps = sample_reps(o, size, est_oneway);
	unsigned warm = reps / 10 + 2;
	if (est_oneway > 0.05 || reps < 3) /* slow or out of budget */
		warm = o->budget > 0 && o->left <= 0 ? 0 : 1;
	double *t = malloc(sizeof *t * reps);
	int rc = MRAIL_OK;
	if (!t)
		return MRAIL_ERR_NOMEM;
	for (unsigned i = 0; i < warm && rc == MRAIL_OK; i++) {
		double x;
		rc = pingpong_once(e, me, buf, size, &x);
	}
	for (unsigned i = 0; i < reps && rc == MRAIL_OK; i++)
		rc = pingpong_once(e, me, buf, size, &t[i]);
	if (rc == MRAIL_OK) {
		qsort(t, reps, sizeof *t, cmp_double);
		*median = (reps % 2 ? t[reps / 2]
				    : 0.5 * (t[reps / 2 - 1] + t[reps / 2])) / 2;
		rc = agree(e, me, median);
		/* Charge the budget with the agreed figure (not the local
		 * clock), so both ranks count alike. */
		o->left -= 2 * *median * (reps + warm);
	}
	free(t);
	return rc;
}

void sample_die(const char *tool, const char *what, int rc)
{
	fprintf(stderr, "%s: %s: %s\n", tool, what, mrail_strerror(rc));
	exit(1);
}

mrail_engine_t *sample_engine(const char *tool, unsigned rail,
			      size_t eager_max)
{
	struct mrail_config cfg;
	char strategy[32];
	mrail_engine_t *e;
	int rc = mrail_config_init(&cfg);
	if (rc)
		sample_die(tool, "configuration", rc);
	snprintf(strategy, sizeof strategy, "pin:rail=%u", rail);
	cfg.strategy = strategy;
	cfg.eager_max = eager_max;
	if ((rc = mrail_engine_create(&cfg, &e)))
		sample_die(tool, "engine", rc);
	if (mrail_size(e) != 2) {
		fprintf(stderr, "%s: needs exactly 2 processes (mrail-run -n 2 "
			"%s), got %u\n", tool, tool, mrail_size(e));
		exit(2);
	}
	return e;
}
