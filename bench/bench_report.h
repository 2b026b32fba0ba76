/*
 * bench_report: what rank 0 of mrail-bench prints — the header, one table
 * row (and CSV line) per size, the engine's per-rail counters and the two
 * headline figures.
 */
#ifndef MRAIL_BENCH_REPORT_H
#define MRAIL_BENCH_REPORT_H

#include "bench_opts.h"
#include "bench_util.h"

#include <mrail.h>
#include <stdio.h>

/* Results of one message size. Unmeasured parts have n == 0. */
struct bench_row {
	size_t size;
	int lat_blocks;                  /* interleaved blocks per transport */
	struct bench_stats raw_lat, eng_lat; /* one-way us over iterations */
	int bw_window, bw_nwin;          /* messages per rep = window * nwin */
	struct bench_stats raw_bw, eng_bw;   /* MB/s over repetitions */
};

/* Description of the run for the header. */
struct bench_setup {
	uint32_t rank, size, peer;
	int rails;              /* rails to the peer */
	const char *strategy;   /* MRAIL_STRATEGY or "single (default)" */
	size_t eager_max;
	int progress_thread;
	int pinned_cpu;         /* -1: not pinned */
	const char *raw_addr;   /* NULL: no raw baseline */
	int raw_sndbuf, raw_rcvbuf;
};

struct bench_report {
	const struct bench_opts *opts;
	FILE *csv;
	struct bench_row lat8, bw16m; /* headline rows (size 0: not measured) */
};

void bench_report_open(struct bench_report *r, const struct bench_opts *o,
		       const struct bench_setup *s);
void bench_report_row(struct bench_report *r, const struct bench_row *row);
/* Per-rail counters of the engine towards peer. */
void bench_report_rails(mrail_engine_t *e, mrail_peer_t peer);
/* How much CPU other processes took during the run (in CPUs). */
void bench_report_noise(int ncpus, double others, double steal);
/* Headline figures; closes the CSV file. */
void bench_report_close(struct bench_report *r);

#endif
