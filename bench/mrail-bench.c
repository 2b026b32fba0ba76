/*
 * mrail-bench: latency and bandwidth of libmrail against a raw TCP
 * baseline over the same interface, between two ranks launched by
 *   mrail-run -n 2 mrail-bench [options]
 * Rank 0 drives the measurements and prints; rank 1 answers.
 */
#include "bench_cpu.h"
#include "bench_opts.h"
#include "bench_pin.h"
#include "bench_report.h"
#include "bench_run.h"
#include "bench_util.h"
#include "engine_bench.h"
#include "rawtcp.h"

#include <mrail.h>
#include <stdio.h>
#include <stdlib.h>

static void fill_setup(struct bench_setup *s, const struct mrail_config *cfg,
		       const struct eng_ctx *c, int cpu, const struct raw_ctx *raw,
		       mrail_engine_t *e)
{
	const char *strategy = getenv("MRAIL_STRATEGY");
	int rails = mrail_rail_count(e, c->peer);

	if (rails < 0)
		bench_die("mrail_rail_count(peer %u) failed: %s (%d)", c->peer,
			  mrail_strerror(rails), rails);
	*s = (struct bench_setup){
		.rank = c->rank, .size = mrail_size(e), .peer = c->peer,
		.rails = rails,
		.strategy = cfg->strategy ? cfg->strategy
			  : (strategy && *strategy ? strategy : "single (default)"),
		.eager_max = cfg->eager_max,
		.progress_thread = cfg->progress_thread,
		.pinned_cpu = cpu,
	};
	if (raw) {
		s->raw_addr = raw->addr;
		s->raw_sndbuf = raw->sndbuf;
		s->raw_rcvbuf = raw->rcvbuf;
	}
}

int main(int argc, char **argv)
{
	struct bench_opts opts;
	struct mrail_config cfg;
	struct eng_ctx eng;
	struct raw_ctx raw;
	struct bench_bufs bufs;
	struct bench_report rep;
	struct bench_setup setup;
	struct bench_cpu cpu0, cpu1;
	mrail_engine_t *e;
	int cpu = -1;
	double peer_cpu = 0, steal = 0;

	bench_opts_parse(&opts, argc, argv);
	MRAIL_CHECK(mrail_config_init(&cfg));
	MRAIL_CHECK(mrail_engine_create(&cfg, &e));
	if (mrail_size(e) != 2)
		bench_die("needs exactly 2 ranks, this job has %u: run "
			  "'mrail-run -n 2 mrail-bench'", mrail_size(e));
	eng = (struct eng_ctx){ .e = e, .rank = mrail_rank(e) };
	eng.peer = 1 - eng.rank;
	bench_set_ident("mrail-bench", (int)eng.rank);
	if (opts.pin)
		cpu = bench_pin(eng.rank);

	eng_barrier(&eng); /* rails are up from here on */
	bench_bufs_init(&bufs, opts.max_size, opts.check ? opts.window : 2);
	if (opts.raw)
		raw_setup(&raw, &eng, opts.raw_addr, opts.raw_sockbuf);
	struct bench_run run = {
		.opts = &opts, .eng = &eng, .raw = opts.raw ? &raw : NULL,
		.bufs = &bufs,
	};

	if (eng.rank == 0) {
		fill_setup(&setup, &cfg, &eng, cpu, run.raw, e);
		bench_report_open(&rep, &opts, &setup);
	}
	bench_cpu_sample(&cpu0);
	for (size_t size = opts.min_size; size <= opts.max_size; size *= 2) {
		struct bench_row row;
		bench_measure(&run, size, &row);
		if (eng.rank == 0)
			bench_report_row(&rep, &row);
	}
	bench_cpu_sample(&cpu1);
	if (eng.rank == 0) {
		eng_recv(&eng, &peer_cpu, sizeof peer_cpu, BENCH_TAG_RESULT);
		bench_report_rails(e, eng.peer);
		bench_report_noise(bench_cpu_count(),
				   bench_cpu_others(&cpu0, &cpu1, peer_cpu, &steal),
				   steal);
		bench_report_close(&rep);
	} else {
		peer_cpu = cpu1.self_s - cpu0.self_s;
		eng_send(&eng, &peer_cpu, sizeof peer_cpu, BENCH_TAG_RESULT);
	}
	eng_barrier(&eng);

	if (opts.raw)
		raw_close(&raw);
	bench_bufs_free(&bufs);
	MRAIL_CHECK(mrail_engine_destroy(e));
	return 0;
}
