/*
 * bench_report: table, CSV, rail counters and headline of mrail-bench.
 */
#include "bench_report.h"

#include <string.h>

#define LAT_TARGET_US 2.0
#define BW_TARGET_RATIO 0.90

void bench_report_open(struct bench_report *r, const struct bench_opts *o,
		       const struct bench_setup *s)
{
	memset(r, 0, sizeof *r);
	r->opts = o;
	char eager[64] = "auto (profiles, else 32768 B; shm 65536 B)";
	if (s->eager_max != MRAIL_EAGER_MAX_AUTO)
		snprintf(eager, sizeof eager, "%zu B", s->eager_max);
	printf("# mrail-bench: %u ranks, rank 0 <-> rank %u, %d rail(s), "
	       "strategy %s, eager_max %s\n", s->size, s->peer, s->rails,
	       s->strategy, eager);
	printf("# polling: busy — engine spins on mrail_test() (progress thread "
	       "%s), raw TCP spins on non-blocking send/recv(MSG_DONTWAIT)\n",
	       s->progress_thread ? "ON" : "off");
	if (s->raw_addr)
		printf("# raw TCP baseline: one connection to %s, TCP_NODELAY, "
		       "SO_SNDBUF %d / SO_RCVBUF %d (kernel values)\n",
		       s->raw_addr, s->raw_sndbuf, s->raw_rcvbuf);
	else
		printf("# raw TCP baseline: off (--no-raw)\n");
	if (s->pinned_cpu >= 0)
		printf("# pinning: rank 0 on CPU %d (rank r on CPU r %% ncpus)\n",
		       s->pinned_cpu);
	else
		printf("# pinning: off (--pin to enable)\n");
	printf("# latency: one-way = half round-trip, min and median over all "
	       "iterations; %d blocks per size, raw and engine interleaved\n",
	       o->reps);
	printf("# bandwidth: window of %d sends + ack, %d repetitions per size "
	       "interleaved, median MB/s (1 MB = 10^6 bytes)\n", o->window,
	       o->reps);
	if (o->check)
		printf("# --check: every payload is filled and verified; timings "
		       "include that work and are NOT representative\n");
	printf("\n%8s  %20s  %20s  %8s  %10s  %10s  %7s\n", "",
	       "raw lat (us)", "engine lat (us)", "delta", "raw", "engine",
	       "ratio");
	printf("%8s  %9s %10s  %9s %10s  %8s  %10s  %10s  %7s\n", "size",
	       "min", "med", "min", "med", "med (us)", "MB/s", "MB/s",
	       "eng/raw");
	fflush(stdout);

	if (o->csv) {
		r->csv = fopen(o->csv, "w");
		if (!r->csv)
			bench_die_errno("cannot open --csv file '%s'", o->csv);
		fprintf(r->csv, "size,lat_iters,raw_lat_min_us,raw_lat_med_us,"
			"eng_lat_min_us,eng_lat_med_us,delta_min_us,"
			"delta_med_us,bw_msgs,raw_bw_med_MBps,raw_bw_max_MBps,"
			"eng_bw_med_MBps,eng_bw_max_MBps,bw_ratio_med\n");
	}
}

static void cell(char *buf, size_t cap, const char *fmt, double v, int ok)
{
	if (ok)
		snprintf(buf, cap, fmt, v);
	else
		snprintf(buf, cap, "-");
}

static void csv_val(FILE *f, const char *fmt, double v, int ok)
{
	fputc(',', f);
	if (ok)
		fprintf(f, fmt, v);
}

void bench_report_row(struct bench_report *r, const struct bench_row *w)
{
	char sz[16], c[8][24];
	int rl = w->raw_lat.n > 0, el = w->eng_lat.n > 0;
	int rb = w->raw_bw.n > 0, eb = w->eng_bw.n > 0;

	if (w->size == 8)
		r->lat8 = *w;
	if (w->size == ((size_t)16 << 20))
		r->bw16m = *w;
	bench_fmt_size(sz, sizeof sz, w->size);
	cell(c[0], sizeof c[0], "%.2f", w->raw_lat.min, rl);
	cell(c[1], sizeof c[1], "%.2f", w->raw_lat.median, rl);
	cell(c[2], sizeof c[2], "%.2f", w->eng_lat.min, el);
	cell(c[3], sizeof c[3], "%.2f", w->eng_lat.median, el);
	cell(c[4], sizeof c[4], "%+.2f", w->eng_lat.median - w->raw_lat.median,
	     rl && el);
	cell(c[5], sizeof c[5], "%.1f", w->raw_bw.median, rb);
	cell(c[6], sizeof c[6], "%.1f", w->eng_bw.median, eb);
	cell(c[7], sizeof c[7], "%.3f", w->eng_bw.median / w->raw_bw.median,
	     rb && eb && w->raw_bw.median > 0);
	printf("%8s  %9s %10s  %9s %10s  %8s  %10s  %10s  %7s\n", sz, c[0],
	       c[1], c[2], c[3], c[4], c[5], c[6], c[7]);
	fflush(stdout);

	if (!r->csv)
		return;
	fprintf(r->csv, "%zu,%zu", w->size, el ? w->eng_lat.n : w->raw_lat.n);
	csv_val(r->csv, "%.3f", w->raw_lat.min, rl);
	csv_val(r->csv, "%.3f", w->raw_lat.median, rl);
	csv_val(r->csv, "%.3f", w->eng_lat.min, el);
	csv_val(r->csv, "%.3f", w->eng_lat.median, el);
	csv_val(r->csv, "%.3f", w->eng_lat.min - w->raw_lat.min, rl && el);
	csv_val(r->csv, "%.3f", w->eng_lat.median - w->raw_lat.median, rl && el);
	fprintf(r->csv, ",%d", w->bw_window * w->bw_nwin);
	csv_val(r->csv, "%.2f", w->raw_bw.median, rb);
	csv_val(r->csv, "%.2f", w->raw_bw.max, rb);
	csv_val(r->csv, "%.2f", w->eng_bw.median, eb);
	csv_val(r->csv, "%.2f", w->eng_bw.max, eb);
	csv_val(r->csv, "%.4f", w->eng_bw.median / w->raw_bw.median,
		rb && eb && w->raw_bw.median > 0);
	fputc('\n', r->csv);
}

void bench_report_rails(mrail_engine_t *e, mrail_peer_t peer)
{
	int n = mrail_rail_count(e, peer);
	if (n < 0)
		bench_die("mrail_rail_count(peer %u) failed: %s (%d)", peer,
			  mrail_strerror(n), n);
	printf("\nengine rails to rank %u (counters of rank 0, whole run):\n",
	       peer);
	for (int i = 0; i < n; i++) {
		struct mrail_rail_stats s;
		struct mrail_rail_info info;
		char tx[32], rx[32], txw[32], rxw[32];
		MRAIL_CHECK(mrail_rail_stats(e, peer, i, &s));
		MRAIL_CHECK(mrail_rail_info(e, peer, i, &info));
		bench_fmt_bytes(tx, sizeof tx, s.tx_bytes);
		bench_fmt_bytes(rx, sizeof rx, s.rx_bytes);
		bench_fmt_bytes(txw, sizeof txw, s.tx_wire_bytes);
		bench_fmt_bytes(rxw, sizeof rxw, s.rx_wire_bytes);
		printf("  rail %d: %s, %s, %s %s -> %s %s, model %s (%.1f us, "
		       "%.0f MB/s)\n", i, s.driver, s.up ? "up" : "DOWN",
		       info.local_if, s.local, info.remote_if, s.remote,
		       info.model, 1e6 * info.latency, info.bandwidth / 1e6);
		printf("    tx %12s (wire %12s)  msgs %10llu  chunks %8llu  "
		       "packets %10llu  busy %9.3f s\n", tx, txw,
		       (unsigned long long)s.tx_msgs,
		       (unsigned long long)s.tx_chunks,
		       (unsigned long long)s.tx_packets, s.tx_busy_seconds);
		printf("    rx %12s (wire %12s)  msgs %10llu  chunks %8llu  "
		       "packets %10llu  busy %9.3f s\n", rx, rxw,
		       (unsigned long long)s.rx_msgs,
		       (unsigned long long)s.rx_chunks,
		       (unsigned long long)s.rx_packets, s.rx_busy_seconds);
		printf("    time scale (measured/predicted chunk time) %.3f\n",
		       s.time_scale);
	}
	if (n == 0)
		printf("  (none)\n");
}

void bench_report_noise(int ncpus, double others, double steal)
{
	printf("\nmachine: %d CPUs; other processes used %.2f CPUs on average "
	       "during the measurements, hypervisor steal %.2f CPUs\n", ncpus,
	       others, steal);
	if (others > 0.25 || steal > 0.1)
		printf("WARNING: the machine was busy — figures are disturbed; "
		       "rerun on an idle machine before trusting them\n");
}

static void headline_lat(const struct bench_row *w)
{
	if (w->size == 0 || !w->eng_lat.n) {
		printf("8-byte latency: not measured (needs --mode lat|all and "
		       "8 within --min-size..--max-size)\n");
		return;
	}
	if (!w->raw_lat.n) {
		printf("8-byte latency: engine %.2f us (median; min %.2f), raw "
		       "baseline not run\n", w->eng_lat.median, w->eng_lat.min);
		return;
	}
	double d = w->eng_lat.median - w->raw_lat.median;
	printf("8-byte latency: engine %.2f us vs raw %.2f us (delta %+.2f us)"
	       "  [medians; min %.2f vs %.2f; target delta <= %.0f us: %s]\n",
	       w->eng_lat.median, w->raw_lat.median, d, w->eng_lat.min,
	       w->raw_lat.min, LAT_TARGET_US, d <= LAT_TARGET_US ? "met" : "NOT met");
}

static void headline_bw(const struct bench_row *w)
{
	if (w->size == 0 || !w->eng_bw.n) {
		printf("16 MiB bandwidth: not measured (needs --mode bw|all and "
		       "16M within --min-size..--max-size)\n");
		return;
	}
	if (!w->raw_bw.n) {
		printf("16 MiB bandwidth: engine %.1f MB/s (median), raw baseline "
		       "not run\n", w->eng_bw.median);
		return;
	}
	double q = w->eng_bw.median / w->raw_bw.median;
	printf("16 MiB bandwidth: engine %.1f MB/s vs raw %.1f MB/s (ratio %.3f)"
	       "  [medians of %zu; best %.1f vs %.1f; target >= %.2f: %s]\n",
	       w->eng_bw.median, w->raw_bw.median, q, w->eng_bw.n,
	       w->eng_bw.max, w->raw_bw.max, BW_TARGET_RATIO,
	       q >= BW_TARGET_RATIO ? "met" : "NOT met");
}

void bench_report_close(struct bench_report *r)
{
	printf("\n");
	headline_lat(&r->lat8);
	headline_bw(&r->bw16m);
	if (r->opts->check)
		printf("(--check run: figures include data verification)\n");
	fflush(stdout);
	if (r->csv && fclose(r->csv))
		bench_die_errno("writing --csv file '%s'", r->opts->csv);
	r->csv = NULL;
}
