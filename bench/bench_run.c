/*
 * bench_run: per-size plan and interleaved measurement.
 */
#include "bench_run.h"
#include "bench_util.h"

#include <stdlib.h>
#include <string.h>

/* Bytes one transport moves one way per size: bounds the run time of the
 * large sizes (the small ones are bounded by --iters). */
#define LAT_BUDGET ((size_t)256 << 20)
#define LAT_MIN_ITERS 10
#define BW_BUDGET ((size_t)128 << 20)

struct lat_plan {
	int blocks, per_block, warm_per_block;
};

static struct lat_plan plan_lat(const struct bench_opts *o, size_t size)
{
	struct lat_plan p;
	size_t cap = LAT_BUDGET / size;
	int iters = o->iters, warm;

	if (cap < LAT_MIN_ITERS)
		cap = LAT_MIN_ITERS;
	if ((size_t)iters > cap)
		iters = (int)cap;
	warm = iters / 10 > 1 ? iters / 10 : 1;
	if (warm > o->warmup)
		warm = o->warmup;
	p.blocks = o->reps < iters ? o->reps : iters;
	p.per_block = (iters + p.blocks - 1) / p.blocks;
	p.warm_per_block = (warm + p.blocks - 1) / p.blocks;
	return p;
}

static void plan_bw(const struct bench_opts *o, const struct bench_bufs *b,
		    size_t size, struct bench_xfer *x)
{
	int window = o->window, nwin;
	size_t cap;

	/* With --check every message of a window needs its own slot. */
	if (o->check && window > bench_bufs_slots(b, size))
		window = bench_bufs_slots(b, size);
	cap = BW_BUDGET / ((size_t)window * size);
	nwin = o->iters;
	if ((size_t)nwin > cap)
		nwin = (int)cap;
	if (nwin < 1)
		nwin = 1;
	x->window = window;
	x->slots = o->check ? window : 1;
	x->nwin = nwin;
	x->warm_win = o->warmup > 0 ? 1 : 0;
}

static uint64_t block_seed(size_t size, int kind, int block)
{
	return ((uint64_t)size << 24) ^ ((uint64_t)kind << 20) ^
	       ((uint64_t)block << 8);
}

static void measure_lat(struct bench_run *r, size_t size, struct bench_row *row)
{
	struct lat_plan p = plan_lat(r->opts, size);
	size_t n = (size_t)p.blocks * (size_t)p.per_block;
	double *raw = bench_alloc(n * sizeof *raw);
	double *eng = bench_alloc(n * sizeof *eng);

	for (int b = 0; b < p.blocks; b++) {
		struct bench_xfer x = {
			.size = size, .check = r->opts->check,
			.iters = p.per_block, .warmup = p.warm_per_block,
		};
		for (int k = 0; k < 2; k++) {
			/* Alternate which transport goes first. */
			int use_raw = (k == 0) == (b % 2 == 0);
			if (use_raw && !r->raw)
				continue;
			x.seed = block_seed(size, use_raw ? 1 : 2, b);
			x.samples = (use_raw ? raw : eng) +
				    (size_t)b * (size_t)p.per_block;
			if (use_raw)
				raw_lat(r->raw, r->bufs, &x);
			else
				eng_lat(r->eng, r->bufs, &x);
		}
	}
	row->lat_blocks = p.blocks;
	if (r->eng->rank == 0) {
		bench_stats(eng, n, &row->eng_lat);
		if (r->raw)
			bench_stats(raw, n, &row->raw_lat);
	}
	free(raw);
	free(eng);
}

static void measure_bw(struct bench_run *r, size_t size, struct bench_row *row)
{
	const int reps = r->opts->reps;
	double *raw = bench_alloc((size_t)reps * sizeof *raw);
	double *eng = bench_alloc((size_t)reps * sizeof *eng);
	struct bench_xfer x = { .size = size, .check = r->opts->check };

	plan_bw(r->opts, r->bufs, size, &x);
	const double mb = (double)size * x.window * x.nwin / 1e6;
	for (int b = 0; b < reps; b++) {
		for (int k = 0; k < 2; k++) {
			int use_raw = (k == 0) == (b % 2 == 0);
			if (use_raw && !r->raw)
				continue;
			x.seed = block_seed(size, use_raw ? 3 : 4, b);
			double t = use_raw ? raw_bw(r->raw, r->bufs, &x)
					   : eng_bw(r->eng, r->bufs, &x);
			if (r->eng->rank == 0)
				(use_raw ? raw : eng)[b] = mb / t;
		}
	}
	row->bw_window = x.window;
	row->bw_nwin = x.nwin;
	if (r->eng->rank == 0) {
		bench_stats(eng, (size_t)reps, &row->eng_bw);
		if (r->raw)
			bench_stats(raw, (size_t)reps, &row->raw_bw);
	}
	free(raw);
	free(eng);
}

void bench_measure(struct bench_run *r, size_t size, struct bench_row *row)
{
	memset(row, 0, sizeof *row);
	row->size = size;
	if (r->opts->do_lat)
		measure_lat(r, size, row);
	if (r->opts->do_bw)
		measure_bw(r, size, row);
}
