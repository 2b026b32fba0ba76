/*
 * bench_run: measure one message size — plan the iteration counts (scaled
 * down for large sizes), then alternate raw TCP and engine blocks so both
 * see the same machine state, and reduce the samples to statistics.
 */
#ifndef MRAIL_BENCH_RUN_H
#define MRAIL_BENCH_RUN_H

#include "bench_opts.h"
#include "bench_report.h"
#include "engine_bench.h"
#include "rawtcp.h"

struct bench_run {
	const struct bench_opts *opts;
	struct eng_ctx *eng;
	struct raw_ctx *raw;   /* NULL: no baseline */
	struct bench_bufs *bufs;
};

/* Both ranks call it with the same size; row is meaningful on rank 0. */
void bench_measure(struct bench_run *run, size_t size, struct bench_row *row);

#endif
