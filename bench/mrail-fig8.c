/*
 * mrail-fig8: the paper's Fig. 8 (Brunet, Trahay, Denis, Cluster 2008) on
 * the engine: streaming bandwidth rank 0 -> rank 1 against message size,
 * for each rail alone (pin:rail=R), iso, bw and split, all in one run and
 * interleaved per repetition so the ratios are fair. Also the sum of the
 * single-rail bandwidths and the oracle: the best split found by exhaustive
 * search (step 0.01) over the single-rail curves measured in this run.
 *
 *   mrail-run -n 2 mrail-fig8 [--min-size 4K] [--max-size 64M] [--reps 5]
 *                             [--bytes 8M] [--window 8] [--csv FILE]
 *
 * One measurement: sender posts `m` messages (m = max(1, bytes / size)) in
 * batches of at most `window` isends, waits for each batch, then waits for
 * a 0-byte ack from the receiver; MB/s = m * size / time (10^6 bytes/s).
 * The median of --reps repetitions is reported. docs/fig8.md.
 */
#include "bench_util.h"

#include <mrail.h>

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIG8_MAX_RAILS 16
#define TAG_DATA 0x0f18ULL
#define TAG_ACK  0x0f19ULL
#define TAG_SYNC 0x0f1aULL
#define MAX_EXTRA 4
#define MAX_CONF (FIG8_MAX_RAILS + 3 + MAX_EXTRA)
#define MAX_SIZES 40
#define WINDOW_MAX 64

struct conf {
	char name[32];
	char strategy[64];
	mrail_engine_t *e;
};

static struct conf confs[MAX_CONF];
static int nconf, nrails;
static mrail_peer_t peer;
static int rank;

static void wait_all(mrail_engine_t *e, mrail_request_t **r, int n,
		     const char *what)
{
	for (int i = 0; i < n; i++) {
		mrail_status_t st;
		int rc;
		while ((rc = mrail_test(e, r[i], &st)) == MRAIL_ERR_AGAIN)
			;
		if (rc != MRAIL_OK)
			bench_die("%s: mrail_test: %s", what, mrail_strerror(rc));
		if (st.error != MRAIL_OK)
			bench_die("%s: request failed: %s", what,
				  mrail_strerror(st.error));
	}
}

static void barrier(mrail_engine_t *e)
{
	mrail_request_t *r[2];
	MRAIL_CHECK(mrail_irecv(e, peer, NULL, 0, TAG_SYNC, MRAIL_TAG_MASK_ALL,
				&r[0]));
	MRAIL_CHECK(mrail_isend(e, peer, NULL, 0, TAG_SYNC, &r[1]));
	wait_all(e, r, 2, "barrier");
}

/* Seconds for m messages of `size` (rank 0's clock; rank 1 returns 0). */
static double stream(mrail_engine_t *e, void *tx, void *rx, size_t size,
		     long m, int window)
{
	mrail_request_t *r[WINDOW_MAX];
	uint64_t t0;
	long done = 0;

	barrier(e);
	if (rank == 0) {
		mrail_request_t *ack;
		t0 = bench_now_ns();
		while (done < m) {
			int w = (int)(m - done < window ? m - done : window);
			for (int i = 0; i < w; i++)
				MRAIL_CHECK(mrail_isend(e, peer, tx, size,
							TAG_DATA, &r[i]));
			wait_all(e, r, w, "send");
			done += w;
		}
		MRAIL_CHECK(mrail_irecv(e, peer, NULL, 0, TAG_ACK,
					MRAIL_TAG_MASK_ALL, &ack));
		wait_all(e, &ack, 1, "ack");
		return (double)(bench_now_ns() - t0) / 1e9;
	}
	while (done < m) {
		int w = (int)(m - done < window ? m - done : window);
		for (int i = 0; i < w; i++)
			MRAIL_CHECK(mrail_irecv(e, peer, rx, size, TAG_DATA,
						MRAIL_TAG_MASK_ALL, &r[i]));
		wait_all(e, r, w, "receive");
		done += w;
	}
	MRAIL_CHECK(mrail_isend(e, peer, NULL, 0, TAG_ACK, &r[0]));
	wait_all(e, r, 1, "ack send");
	return 0;
}

/* strategy: "NAME[:ARGS][@eager=SIZE]"; the suffix sets the engine's
 * eager_max (an experiment on the threshold, not a strategy option). */
static mrail_engine_t *make_engine(const char *strategy)
{
	struct mrail_config cfg;
	mrail_engine_t *e;
	char strat[64];
	const char *at;
	int rc;
	MRAIL_CHECK(mrail_config_init(&cfg));
	snprintf(strat, sizeof strat, "%s", strategy);
	if ((at = strchr(strategy, '@'))) {
		size_t v;
		if (strncmp(at, "@eager=", 7) || bench_parse_size(at + 7, &v))
			bench_die("bad configuration '%s' (STRATEGY[@eager="
				  "SIZE])", strategy);
		strat[at - strategy] = '\0';
		cfg.eager_max = v;
	}
	cfg.strategy = strat;
	if ((rc = mrail_engine_create(&cfg, &e)))
		bench_die("engine with strategy '%s': %s", strategy,
			  mrail_strerror(rc));
	if (mrail_size(e) != 2)
		bench_die("needs exactly 2 processes (mrail-run -n 2), got %u",
			  mrail_size(e));
	return e;
}

static void add_conf(const char *name, const char *strategy)
{
	struct conf *c = &confs[nconf++];
	snprintf(c->name, sizeof c->name, "%s", name);
	snprintf(c->strategy, sizeof c->strategy, "%s", strategy);
	c->e = make_engine(strategy);
}

/* ---- oracle ------------------------------------------------------------ */
static size_t sizes[MAX_SIZES];
static int nsizes;
/* single-rail seconds per message at sizes[i], rail r */
static double tsingle[FIG8_MAX_RAILS][MAX_SIZES];

/* Streaming time of x bytes on rail r, linear between measured sizes;
 * 0 for x = 0 (rail unused), the smallest size's time below it, and
 * extrapolated with the last segment's slope above the largest. */
static double t_rail(int r, double x)
{
	if (x <= 0)
		return 0;
	if (x <= (double)sizes[0] || nsizes == 1)
		return tsingle[r][0] * (x > sizes[0] ? x / sizes[0] : 1);
	for (int i = 1; i < nsizes; i++) {
		if (x <= (double)sizes[i]) {
			double f = (x - sizes[i - 1]) /
				   (double)(sizes[i] - sizes[i - 1]);
			return tsingle[r][i - 1] +
			       f * (tsingle[r][i] - tsingle[r][i - 1]);
		}
	}
	int k = nsizes - 1;
	double slope = (tsingle[r][k] - tsingle[r][k - 1]) /
		       (double)(sizes[k] - sizes[k - 1]);
	return tsingle[r][k] + slope * (x - sizes[k]);
}

/* Exhaustive search over fractions in steps of 1/100: rail r gets k
 * hundredths of s, rails r+1.. share the `left - k` others. Keeps the
 * plan with the smallest max time in o_best / o_frac. */
static double o_best;
static int o_cur[FIG8_MAX_RAILS], o_frac[FIG8_MAX_RAILS];

static void search(double s, int r, int left, double cur)
{
	for (int k = (r == nrails - 1 ? left : 0); k <= left; k++) {
		double t = t_rail(r, s * k / 100.0);
		if (t < cur)
			t = cur;
		if (t >= o_best)
			continue; /* cannot improve: max only grows */
		o_cur[r] = k;
		if (r == nrails - 1) {
			o_best = t;
			memcpy(o_frac, o_cur, sizeof o_frac);
		} else {
			search(s, r + 1, left - k, t);
		}
	}
}

static void rail_stats_table(void)
{
	printf("\nreceiver's rail counters per configuration (whole run): "
	       "payload MB, chunks, rx busy s, time scale\n");
	for (int k = 0; k < nconf; k++) {
		printf("  %-6s", confs[k].name);
		for (int r = 0; r < nrails; r++) {
			struct mrail_rail_stats st;
			MRAIL_CHECK(mrail_rail_stats(confs[k].e, peer, r, &st));
			printf("  r%d %8.1f %6llu %7.2f %5.2f", r,
			       (double)st.rx_bytes / 1e6,
			       (unsigned long long)st.rx_chunks,
			       st.rx_busy_seconds, st.time_scale);
		}
		printf("\n");
	}
	fflush(stdout);
}

/* ---- main -------------------------------------------------------------- */
static void usage(FILE *f)
{
	fprintf(f, "usage: mrail-run -n 2 mrail-fig8 [--min-size 4K] "
		"[--max-size 64M] [--reps 5] [--bytes 8M] [--window 8] "
		"[--csv FILE] [--verbose] "
		"[--extra NAME=STRATEGY[@eager=SIZE]]...\n");
}

static double median(double *v, int n)
{
	struct bench_stats st;
	bench_stats(v, (size_t)n, &st);
	return st.median;
}

int main(int argc, char **argv)
{
	size_t min_size = 4096, max_size = 64u << 20, bytes = 8u << 20;
	int reps = 5, window = 8, verbose = 0;
	const char *csv = NULL;
	static const struct option lo[] = {
		{"min-size", 1, 0, 'a'}, {"max-size", 1, 0, 'b'},
		{"reps", 1, 0, 'r'}, {"bytes", 1, 0, 'B'},
		{"window", 1, 0, 'w'}, {"csv", 1, 0, 'c'},
		{"verbose", 0, 0, 'v'}, {"extra", 1, 0, 'x'},
		{"help", 0, 0, 'h'}, {0, 0, 0, 0}};
	const char *extra[MAX_EXTRA];
	int nextra = 0;
	int ch;

	bench_set_ident("mrail-fig8", -1);
	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case 'a':
			if (bench_parse_size(optarg, &min_size) || !min_size)
				bench_die("bad --min-size '%s'", optarg);
			break;
		case 'b':
			if (bench_parse_size(optarg, &max_size))
				bench_die("bad --max-size '%s'", optarg);
			break;
		case 'B':
			if (bench_parse_size(optarg, &bytes))
				bench_die("bad --bytes '%s'", optarg);
			break;
		case 'r':
			reps = atoi(optarg);
			if (reps < 1 || reps > 1000)
				bench_die("bad --reps '%s'", optarg);
			break;
		case 'w':
			window = atoi(optarg);
			if (window < 1 || window > WINDOW_MAX)
				bench_die("bad --window '%s' (1..%d)", optarg,
					  WINDOW_MAX);
			break;
		case 'c': csv = optarg; break;
		case 'v': verbose = 1; break;
		case 'x':
			if (nextra == MAX_EXTRA || !strchr(optarg, '=') ||
			    strchr(optarg, '=') == optarg ||
			    strchr(optarg, '=') - optarg >= 8)
				bench_die("bad --extra '%s' (NAME=STRATEGY, NAME "
					  "1..7 characters, at most %d)", optarg,
					  MAX_EXTRA);
			extra[nextra++] = optarg;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || min_size > max_size) {
		usage(stderr);
		return 2;
	}
	for (size_t s = min_size; s <= max_size && nsizes < MAX_SIZES; s *= 2)
		sizes[nsizes++] = s;

	/* Engines coexist: created one after the other (each bootstraps). */
	add_conf("rail0", "pin:rail=0");
	rank = (int)mrail_rank(confs[0].e);
	peer = (mrail_peer_t)(1 - rank);
	bench_set_ident("mrail-fig8", rank);
	nrails = mrail_rail_count(confs[0].e, peer);
	if (nrails < 2 || nrails > FIG8_MAX_RAILS)
		bench_die("needs at least 2 rails to the peer, found %d "
			  "(set MRAIL_RAILS or MRAIL_TCP_LOOPBACK_RAILS)",
			  nrails);
	for (int r = 1; r < nrails; r++) {
		char n[16], s[32];
		snprintf(n, sizeof n, "rail%d", r);
		snprintf(s, sizeof s, "pin:rail=%d", r);
		add_conf(n, s);
	}
	add_conf("iso", "iso");
	add_conf("bw", "bw");
	add_conf("split", "split");
	for (int x = 0; x < nextra; x++) {
		char name[8];
		const char *eq = strchr(extra[x], '=');
		snprintf(name, sizeof name, "%.*s", (int)(eq - extra[x]), extra[x]);
		add_conf(name, eq + 1);
	}
	const int ciso = nrails, cbw = nrails + 1, csplit = nrails + 2;

	if (rank == 0) {
		printf("# mrail-fig8: %d rails, sizes %zu..%zu, %d reps, "
		       "%zu bytes per measurement, window %d\n", nrails,
		       min_size, max_size, reps, bytes, window);
		for (int r = 0; r < nrails; r++) {
			struct mrail_rail_info info;
			if (mrail_rail_info(confs[0].e, peer, r, &info) ==
			    MRAIL_OK)
				printf("# rail %d: %s -> %s  model %s  "
				       "%.1f MB/s  %.1f us\n", r,
				       info.local_if, info.remote_addr,
				       info.model, info.bandwidth / 1e6,
				       info.latency * 1e6);
		}
		fflush(stdout);
	}

	unsigned char *tx = bench_alloc(max_size), *rx = bench_alloc(max_size);
	static double mbs[MAX_SIZES][MAX_CONF];
	/* (max - min) / median over the rounds: the run's own spread */
	static double spr[MAX_SIZES][MAX_CONF];
	double *samp = malloc(sizeof(double) * (size_t)reps * MAX_CONF);
	if (!samp)
		bench_die("out of memory");

	for (int i = 0; i < nsizes; i++) {
		size_t s = sizes[i];
		long m = (long)(bytes / s);
		if (m < 1)
			m = 1;
		for (int k = 0; k < nconf; k++) /* warm-up: one message */
			stream(confs[k].e, tx, rx, s, 1, 1);
		for (int rep = 0; rep < reps; rep++)
			for (int k = 0; k < nconf; k++) {
				double t = stream(confs[k].e, tx, rx, s, m,
						  window);
				samp[k * reps + rep] = t > 0
					? (double)s * (double)m / t / 1e6 : 0;
			}
		for (int k = 0; k < nconf; k++) {
			double *v = samp + k * reps, lo = v[0], hi = v[0];
			mbs[i][k] = median(v, reps);
			for (int rep = 1; rep < reps; rep++) {
				lo = v[rep] < lo ? v[rep] : lo;
				hi = v[rep] > hi ? v[rep] : hi;
			}
			spr[i][k] = mbs[i][k] > 0 ? (hi - lo) / mbs[i][k] : 0;
		}
		for (int r = 0; r < nrails; r++)
			tsingle[r][i] = mbs[i][r] > 0
				? (double)s / (mbs[i][r] * 1e6) : 0;
		if (rank == 0) {
			printf("# %zu done:", s);
			for (int k = 0; k < nconf; k++)
				printf(" %s %.1f", confs[k].name, mbs[i][k]);
			printf("\n");
			for (int k = 0; verbose && k < nconf; k++) {
				printf("#   %-6s", confs[k].name);
				for (int rep = 0; rep < reps; rep++)
					printf(" %.1f", samp[k * reps + rep]);
				printf("\n");
			}
			fflush(stdout);
		}
	}

	if (rank == 0) {
		FILE *cf = NULL;
		static double orc[MAX_SIZES], sum[MAX_SIZES];
		static int ofrac[MAX_SIZES][FIG8_MAX_RAILS];
		if (csv && !(cf = fopen(csv, "w")))
			bench_die_errno("cannot write %s", csv);
		for (int i = 0; i < nsizes; i++) {
			o_best = INFINITY;
			search((double)sizes[i], 0, 100, 0);
			memcpy(ofrac[i], o_frac, sizeof o_frac);
			orc[i] = (double)sizes[i] / o_best / 1e6;
			sum[i] = 0;
			for (int r = 0; r < nrails; r++)
				sum[i] += mbs[i][r];
		}
		printf("\nMB/s (10^6 bytes/s), median of %d\n", reps);
		printf("%8s", "size");
		for (int k = 0; k < nconf; k++)
			printf(" %8s", confs[k].name);
		printf(" %8s %8s %-9s %7s %7s %7s %7s %7s %7s\n", "sum",
		       "oracle", "orc-split", "spl/sum", "spl/orc", "spl/bst",
		       "spl/iso", "spl/bw", "spl-spr");
		if (cf) {
			fprintf(cf, "size");
			for (int k = 0; k < nconf; k++)
				fprintf(cf, ",%s", confs[k].name);
			fprintf(cf, ",sum,oracle,split_spread");
			for (int r = 0; r < nrails; r++)
				fprintf(cf, ",oracle_frac%d", r);
			fprintf(cf, "\n");
		}
		for (int i = 0; i < nsizes; i++) {
			char sz[16], fr[32] = "";
			double best = 0, sp = mbs[i][csplit];
			for (int r = 0; r < nrails; r++)
				if (mbs[i][r] > best)
					best = mbs[i][r];
			for (int r = 0; r < nrails; r++) {
				size_t l = strlen(fr);
				snprintf(fr + l, sizeof fr - l, "%s%d",
					 r ? "/" : "", ofrac[i][r]);
			}
			bench_fmt_size(sz, sizeof sz, sizes[i]);
			printf("%8s", sz);
			for (int k = 0; k < nconf; k++)
				printf(" %8.1f", mbs[i][k]);
			printf(" %8.1f %8.1f %-9s %7.3f %7.3f %7.3f %7.3f "
			       "%7.3f %6.1f%%\n", sum[i], orc[i], fr,
			       sp / sum[i], sp / orc[i], sp / best,
			       sp / mbs[i][ciso], sp / mbs[i][cbw],
			       100 * spr[i][csplit]);
			if (cf) {
				fprintf(cf, "%zu", sizes[i]);
				for (int k = 0; k < nconf; k++)
					fprintf(cf, ",%.3f", mbs[i][k]);
				fprintf(cf, ",%.3f,%.3f,%.4f", sum[i], orc[i],
					spr[i][csplit]);
				for (int r = 0; r < nrails; r++)
					fprintf(cf, ",%.2f",
						ofrac[i][r] / 100.0);
				fprintf(cf, "\n");
			}
		}
		if (cf && fclose(cf))
			bench_die_errno("cannot write %s", csv);

		/* The criteria, as measured. */
		int c_sum = 1, c_best = 1, c_iso = 1, c_bw = 1, c_orc = 1;
		int c_bw3 = 1, any_sum = 0, any_orc = 0, any_bw3 = 0;
		int c_orc24 = 1, c_sum24 = 1, c_spr = 1;
		int any_orc24 = 0, any_sum24 = 0, any_spr = 0;
		char why[8][512] = {"", "", "", "", "", "", "", ""};
		for (int i = 0; i < nsizes; i++) {
			double best = 0, sp = mbs[i][csplit];
			char sz[16];
			bench_fmt_size(sz, sizeof sz, sizes[i]);
			for (int r = 0; r < nrails; r++)
				if (mbs[i][r] > best)
					best = mbs[i][r];
#define FAIL(flag, idx, cond) do { if (!(cond)) { flag = 0; \
	size_t l_ = strlen(why[idx]); \
	snprintf(why[idx] + l_, sizeof why[idx] - l_, " %s", sz); } } while (0)
			if (sizes[i] >= (4u << 20)) {
				any_sum = 1;
				FAIL(c_sum, 0, sp >= 0.95 * sum[i]);
			}
			FAIL(c_best, 1, sp >= 0.97 * best);
			FAIL(c_iso, 2, sp >= 0.97 * mbs[i][ciso]);
			FAIL(c_bw, 3, sp >= 0.97 * mbs[i][cbw]);
			if (sizes[i] >= (64u << 10)) {
				any_orc = 1;
				FAIL(c_orc, 4, sp >= 0.95 * orc[i]);
			}
			if (sizes[i] >= (16u << 10)) {
				any_orc24 = 1;
				FAIL(c_orc24, 5, sp >= 0.97 * orc[i]);
			}
			if (sizes[i] >= (1u << 20)) {
				any_sum24 = 1;
				FAIL(c_sum24, 6, sp >= 0.97 * sum[i]);
			}
			if (sizes[i] >= (64u << 10) && sizes[i] <= (128u << 10)) {
				any_spr = 1;
				FAIL(c_spr, 7, spr[i][csplit] < 0.05);
			}
			if (nrails >= 3 && sizes[i] >= (64u << 10) &&
			    sizes[i] <= (1u << 20)) {
				any_bw3 = 1;
				if (!(sp > mbs[i][cbw]))
					c_bw3 = 0;
			}
#undef FAIL
		}
		printf("\ncriteria (issue 5):\n");
#define VERDICT(any, ok, text, idx) printf("  %-46s %s%s%s\n", text, \
	!(any) ? "n/a (no such size)" : (ok) ? "met" : "NOT met", \
	(any) && !(ok) ? ", fails at" : "", (any) && !(ok) ? why[idx] : "")
		VERDICT(any_sum, c_sum, ">= 4M: split >= 0.95 sum", 0);
		VERDICT(1, c_best, "all sizes: split >= best single - 3%", 1);
		VERDICT(1, c_iso, "all sizes: split >= iso - 3%", 2);
		VERDICT(1, c_bw, "all sizes: split >= bw - 3%", 3);
		VERDICT(any_orc, c_orc, ">= 64K: split >= 0.95 oracle", 4);
		if (nrails >= 3)
			printf("  %-46s %s\n", "64K..1M: split > bw (3 rails)",
			       !any_bw3 ? "n/a (no such size)"
			       : c_bw3 ? "met" : "NOT met");
		printf("criteria (issue 24):\n");
		VERDICT(any_orc24, c_orc24, ">= 16K: split >= 0.97 oracle", 5);
		VERDICT(any_sum24, c_sum24, ">= 1M: split >= 0.97 sum", 6);
		VERDICT(any_spr, c_spr,
			"64K..128K: split spread over rounds < 5%", 7);
#undef VERDICT
		fflush(stdout);
	}

	/* How each configuration spread the traffic, seen by the receiver
	 * (it plans the payloads and measures the chunks). */
	barrier(confs[0].e);
	if (rank == 1)
		rail_stats_table();
	for (int k = nconf - 1; k >= 0; k--)
		mrail_engine_destroy(confs[k].e);
	free(samp);
	free(tx);
	free(rx);
	return 0;
}
