/*
 * mrail-peers: the concurrent-traffic scenario of the strategies benchmark
 * (issue 5). Rank 0 posts two messages back to back, one to rank 1 and one
 * to rank 2; both leave over rank 0's NICs at the same time, so what the
 * strategy knows about rails already busy (busy-until) decides where the
 * second message goes and when each one completes.
 *
 *   mrail-run -n 3 mrail-peers [--min-size 64K] [--max-size 16M] [--reps 5]
 *              [--strategies iso,bw,split,split:busy=0,split+nopace] [--skew 4]
 *              [--csv FILE]
 *
 * One measurement: the receivers pre-post their receive and tell rank 0
 * (0-byte message); rank 0 takes its post time t0, posts isend to rank 1
 * and isend to rank 2; each receiver takes CLOCK_MONOTONIC when its
 * receive completes and sends it to rank 0 (8 bytes). Ranks on one machine
 * (netlab namespaces, loopback) share the kernel's monotonic clock, so the
 * times compare across ranks. Rank 0 reports, from t0: first completion,
 * second completion (makespan), and MB/s = bytes of both / makespan.
 * Two modes in one run: "equal" (both messages `size`) and "skew" (the
 * second is size / --skew), so the rails' busy-until differs between the
 * two plans. Each rail alone (pin:rail=R) gives the reference: the sum of
 * rank 0's single-rail rates, and the ideal FIFO schedule over that sum.
 * The median of --reps rounds, configurations interleaved per round.
 * Nothing about timing is asserted. docs/peers.md.
 */
#include "bench_util.h"

#include <mrail.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PEERS_MAX_RAILS 16
#define MAX_STRATS 16
#define MAX_CONF (PEERS_MAX_RAILS + MAX_STRATS)
#define MAX_SIZES 40
#define TAG_DATA  0x0e18ULL
#define TAG_READY 0x0e19ULL
#define TAG_TIME  0x0e1aULL

enum { MODE_EQUAL, MODE_SKEW, NMODES };
static const char *mode_name[NMODES] = {"equal", "skew"};

struct conf {
	char name[48];
	char strategy[48];
	mrail_engine_t *e;
};

static struct conf confs[MAX_CONF];
static int nconf, nrails, rank;

/* Median results of one (mode, size, configuration), seconds from t0. */
struct res {
	double first, last; /* first and second completion (makespan) */
	double to[3];       /* completion at rank 1 and 2 (index = rank) */
};

static void wait_spin(mrail_engine_t *e, mrail_request_t *r, const char *what)
{
	mrail_status_t st;
	int rc;
	while ((rc = mrail_test(e, r, &st)) == MRAIL_ERR_AGAIN)
		;
	if (rc != MRAIL_OK)
		bench_die("%s: mrail_test: %s", what, mrail_strerror(rc));
	if (st.error != MRAIL_OK)
		bench_die("%s: request failed: %s", what,
			  mrail_strerror(st.error));
}

/* Receivers wait with mrail_wait (spins briefly, then sleeps in poll
 * until a socket is ready): three ranks share the machine's cores, and
 * the sender and the kernel's shaping need them more than an idle
 * receiver does. */
static void wait_sleep(mrail_engine_t *e, mrail_request_t *r, const char *what)
{
	mrail_status_t st;
	int rc = mrail_wait(e, r, &st);
	if (rc != MRAIL_OK)
		bench_die("%s: mrail_wait: %s", what, mrail_strerror(rc));
	if (st.error != MRAIL_OK)
		bench_die("%s: request failed: %s", what,
			  mrail_strerror(st.error));
}

/* One measurement. len[1], len[2]: bytes for rank 1 and rank 2. Rank 0
 * fills *out (seconds from its post time); the receivers return at once
 * after sending their completion time. */
static void measure(mrail_engine_t *e, void *tx, void *rx, const size_t *len,
		    struct res *out)
{
	mrail_request_t *r[2], *tr[2];
	uint64_t t[3] = {0, 0, 0};

	if (rank != 0) {
		mrail_request_t *d, *s;
		MRAIL_CHECK(mrail_irecv(e, 0, rx, len[rank], TAG_DATA,
					MRAIL_TAG_MASK_ALL, &d));
		MRAIL_CHECK(mrail_isend(e, 0, NULL, 0, TAG_READY, &s));
		wait_sleep(e, s, "ready");
		wait_sleep(e, d, "receive");
		uint64_t done = bench_now_ns();
		MRAIL_CHECK(mrail_isend(e, 0, &done, sizeof done, TAG_TIME,
					&s));
		wait_sleep(e, s, "time send");
		return;
	}
	/* Both receives posted before anything is timed: no message is
	 * unexpected, and the time messages are matched as they come. */
	for (int p = 1; p <= 2; p++) {
		MRAIL_CHECK(mrail_irecv(e, (mrail_peer_t)p, NULL, 0, TAG_READY,
					MRAIL_TAG_MASK_ALL, &r[p - 1]));
		MRAIL_CHECK(mrail_irecv(e, (mrail_peer_t)p, &t[p], sizeof t[p],
					TAG_TIME, MRAIL_TAG_MASK_ALL,
					&tr[p - 1]));
	}
	wait_spin(e, r[0], "ready 1");
	wait_spin(e, r[1], "ready 2");
	uint64_t t0 = bench_now_ns();
	MRAIL_CHECK(mrail_isend(e, 1, tx, len[1], TAG_DATA, &r[0]));
	MRAIL_CHECK(mrail_isend(e, 2, tx, len[2], TAG_DATA, &r[1]));
	wait_spin(e, r[0], "send 1");
	wait_spin(e, r[1], "send 2");
	wait_spin(e, tr[0], "time 1");
	wait_spin(e, tr[1], "time 2");
	for (int p = 1; p <= 2; p++)
		out->to[p] = (double)(int64_t)(t[p] - t0) / 1e9;
	out->first = out->to[1] < out->to[2] ? out->to[1] : out->to[2];
	out->last = out->to[1] < out->to[2] ? out->to[2] : out->to[1];
}

static void add_conf(const char *name, const char *strategy)
{
	struct conf *c = &confs[nconf++];
	struct mrail_config cfg;
	int rc;
	snprintf(c->name, sizeof c->name, "%s", name);
	snprintf(c->strategy, sizeof c->strategy, "%s", strategy);
	/* "STRATEGY+nopace": the same without per-NIC pacing (MRAIL_PACE=0
	 * for this engine only), to compare in one run. */
	char *plus = strstr(c->strategy, "+nopace");
	int nopace = plus && plus[7] == 0;
	if (nopace)
		*plus = 0;
	MRAIL_CHECK(mrail_config_init(&cfg));
	cfg.strategy = c->strategy;
	const char *was = getenv("MRAIL_PACE");
	char saved[8] = "";
	if (was)
		snprintf(saved, sizeof saved, "%s", was);
	if (nopace)
		setenv("MRAIL_PACE", "0", 1);
	rc = mrail_engine_create(&cfg, &c->e);
	if (nopace) {
		if (was)
			setenv("MRAIL_PACE", saved, 1);
		else
			unsetenv("MRAIL_PACE");
	}
	if (rc)
		bench_die("engine with strategy '%s': %s", strategy,
			  mrail_strerror(rc));
	if (mrail_size(c->e) != 3)
		bench_die("needs exactly 3 processes (mrail-run -n 3), got %u",
			  mrail_size(c->e));
}

static void usage(FILE *f)
{
	fprintf(f, "usage: mrail-run -n 3 mrail-peers [--min-size 64K] "
		"[--max-size 16M] [--reps 5]\n"
		"         [--strategies iso,bw,split,split:busy=0,split+nopace] "
		"[--skew 4 (0: equal sizes only)] [--csv FILE]\n");
}

static double median(double *v, int n)
{
	struct bench_stats st;
	bench_stats(v, (size_t)n, &st);
	return st.median;
}

int main(int argc, char **argv)
{
	size_t min_size = 64u << 10, max_size = 16u << 20;
	int reps = 5, skew = 4;
	const char *csv = NULL;
	char strategies[256] = "iso,bw,split,split:busy=0,split+nopace";
	static const struct option lo[] = {
		{"min-size", 1, 0, 'a'}, {"max-size", 1, 0, 'b'},
		{"reps", 1, 0, 'r'}, {"strategies", 1, 0, 's'},
		{"skew", 1, 0, 'k'}, {"csv", 1, 0, 'c'},
		{"help", 0, 0, 'h'}, {0, 0, 0, 0}};
	static size_t sizes[MAX_SIZES];
	int nsizes = 0, ch;

	bench_set_ident("mrail-peers", -1);
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
		case 'r':
			reps = atoi(optarg);
			if (reps < 1 || reps > 1000)
				bench_die("bad --reps '%s'", optarg);
			break;
		case 's':
			if (!*optarg || strlen(optarg) >= sizeof strategies)
				bench_die("bad --strategies '%s'", optarg);
			snprintf(strategies, sizeof strategies, "%s", optarg);
			break;
		case 'k':
			skew = atoi(optarg);
			if (skew < 0 || skew == 1 || skew > 1024)
				bench_die("bad --skew '%s' (0, or 2..1024)",
					  optarg);
			break;
		case 'c': csv = optarg; break;
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
	const int nmodes = skew ? 2 : 1;

	/* Engines coexist: created one after the other (each bootstraps),
	 * in the same order on every rank. The single rails first: their
	 * count comes from the first engine. */
	add_conf("rail0", "pin:rail=0");
	rank = (int)mrail_rank(confs[0].e);
	bench_set_ident("mrail-peers", rank);
	/* Rank 0's rails are the ones both messages share; the receivers
	 * count theirs to rank 0 (the same on a symmetric lab). */
	nrails = mrail_rail_count(confs[0].e, rank == 0 ? 1 : 0);
	if (nrails < 1 || nrails > PEERS_MAX_RAILS)
		bench_die("found %d rails to the peer (1..%d)", nrails,
			  PEERS_MAX_RAILS);
	if (rank == 0 && mrail_rail_count(confs[0].e, 2) != nrails)
		bench_die("%d rails to rank 1 but %d to rank 2", nrails,
			  mrail_rail_count(confs[0].e, 2));
	for (int r = 1; r < nrails; r++) {
		char n[16], s[32];
		snprintf(n, sizeof n, "rail%d", r);
		snprintf(s, sizeof s, "pin:rail=%d", r);
		add_conf(n, s);
	}
	const int first_strat = nconf;
	for (char *save = NULL, *tok = strtok_r(strategies, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (nconf - first_strat >= MAX_STRATS)
			bench_die("at most %d strategies", MAX_STRATS);
		add_conf(tok, tok);
	}

	if (rank == 0) {
		printf("# mrail-peers: rank 0 -> ranks 1 and 2 at once, %d rails, "
		       "sizes %zu..%zu, %d reps", nrails, min_size, max_size,
		       reps);
		if (skew)
			printf(", skew: second message size/%d", skew);
		printf("\n");
		/* pin:rail=R must mean the same NIC of rank 0 for both peers,
		 * or the single-rail reference would use two NICs. */
		for (int r = 0; r < nrails; r++) {
			struct mrail_rail_info in[3];
			for (int p = 1; p <= 2; p++)
				if (mrail_rail_info(confs[0].e, (mrail_peer_t)p,
						    r, &in[p]) != MRAIL_OK)
					bench_die("rail %d to rank %d: no "
						  "information", r, p);
			printf("# rail %d: %s -> %s (rank 1), %s (rank 2)  "
			       "model %s %.1f MB/s / %s %.1f MB/s\n", r,
			       in[1].local_if, in[1].remote_addr,
			       in[2].remote_addr, in[1].model,
			       in[1].bandwidth / 1e6, in[2].model,
			       in[2].bandwidth / 1e6);
			if (strcmp(in[1].local_if, in[2].local_if))
				printf("# WARNING: rail %d leaves over %s to "
				       "rank 1 but %s to rank 2\n", r,
				       in[1].local_if, in[2].local_if);
		}
		fflush(stdout);
	}

	unsigned char *tx = bench_alloc(max_size);
	unsigned char *rx = bench_alloc(max_size);
	static struct res med[NMODES][MAX_SIZES][MAX_CONF];
	double *samp = malloc(sizeof(double) * (size_t)reps * MAX_CONF * 4);
	if (!samp)
		bench_die("out of memory");
#define SAMP(k, what, rep) samp[(((k) * 4) + (what)) * reps + (rep)]

	for (int i = 0; i < nsizes; i++)
		for (int m = 0; m < nmodes; m++) {
			size_t len[3] = {0, sizes[i],
				m == MODE_SKEW ? sizes[i] / (size_t)skew
					       : sizes[i]};
			struct res x;
			for (int k = 0; k < nconf; k++) /* warm-up */
				measure(confs[k].e, tx, rx, len, &x);
			for (int rep = 0; rep < reps; rep++)
				for (int k = 0; k < nconf; k++) {
					memset(&x, 0, sizeof x);
					measure(confs[k].e, tx, rx, len, &x);
					SAMP(k, 0, rep) = x.first;
					SAMP(k, 1, rep) = x.last;
					SAMP(k, 2, rep) = x.to[1];
					SAMP(k, 3, rep) = x.to[2];
				}
			for (int k = 0; k < nconf; k++) {
				struct res *o = &med[m][i][k];
				o->first = median(&SAMP(k, 0, 0), reps);
				o->last = median(&SAMP(k, 1, 0), reps);
				o->to[1] = median(&SAMP(k, 2, 0), reps);
				o->to[2] = median(&SAMP(k, 3, 0), reps);
			}
			if (rank == 0) {
				printf("# %s %zu done\n", mode_name[m],
				       sizes[i]);
				fflush(stdout);
			}
		}
#undef SAMP

	if (rank == 0) {
		FILE *cf = NULL;
		if (csv && !(cf = fopen(csv, "w")))
			bench_die_errno("cannot write %s", csv);
		if (cf)
			fprintf(cf, "mode,size,bytes1,bytes2,config,first_ms,"
				"makespan_ms,rank1_ms,rank2_ms,mbs,ratio_sum\n");
		/* ratio to sum, first/ideal, makespan/ideal per mode and
		 * configuration, for the closing summary */
		static double rs[NMODES][MAX_CONF][MAX_SIZES];
		static double rf[NMODES][MAX_CONF][MAX_SIZES];
		static double rm[NMODES][MAX_CONF][MAX_SIZES];
		for (int m = 0; m < nmodes; m++) {
			printf("\n== %s: rank 0 -> rank 1 (size) and rank 2 "
			       "(%s), posted together; ms from the post, "
			       "median of %d ==\n", mode_name[m],
			       m == MODE_SKEW ? "size/skew" : "size", reps);
			for (int i = 0; i < nsizes; i++) {
				size_t b1 = sizes[i], b2 = m == MODE_SKEW
					? sizes[i] / (size_t)skew : sizes[i];
				double tot = (double)(b1 + b2), sum = 0;
				char s1[16], s2[16];
				/* Each rail alone, both messages over it: rank
				 * 0's rate on that NIC. */
				for (int r = 0; r < nrails; r++)
					sum += tot / med[m][i][r].last / 1e6;
				/* Ideal FIFO over the summed rate: the first
				 * message ends at b1/sum, the second at
				 * (b1+b2)/sum (no schedule can end earlier). */
				double if1 = (double)b1 / (sum * 1e6);
				double ilast = tot / (sum * 1e6);
				bench_fmt_size(s1, sizeof s1, b1);
				bench_fmt_size(s2, sizeof s2, b2);
				printf("\n%s + %s\n", s1, s2);
				printf("  %-16s %9s %9s %9s %9s %8s %6s %7s "
				       "%7s\n", "config", "first", "makespan",
				       "rank1", "rank2", "MB/s", "/sum",
				       "1st/id", "mk/id");
				for (int k = 0; k < nconf; k++) {
					struct res *o = &med[m][i][k];
					double mbs = tot / o->last / 1e6;
					rs[m][k][i] = mbs / sum;
					rf[m][k][i] = o->first / if1;
					rm[m][k][i] = o->last / ilast;
					printf("  %-16s %9.3f %9.3f %9.3f %9.3f "
					       "%8.1f %6.3f %7.3f %7.3f\n",
					       confs[k].name, o->first * 1e3,
					       o->last * 1e3, o->to[1] * 1e3,
					       o->to[2] * 1e3, mbs, mbs / sum,
					       rf[m][k][i], rm[m][k][i]);
					if (cf)
						fprintf(cf, "%s,%zu,%zu,%zu,%s,"
							"%.4f,%.4f,%.4f,%.4f,"
							"%.3f,%.4f\n",
							mode_name[m], sizes[i],
							b1, b2, confs[k].name,
							o->first * 1e3,
							o->last * 1e3,
							o->to[1] * 1e3,
							o->to[2] * 1e3, mbs,
							mbs / sum);
				}
				printf("  %-16s %9s %9s %9s %9s %8.1f\n",
				       "sum of rails", "", "", "", "", sum);
				printf("  %-16s %9.3f %9.3f %9.3f %9.3f %8.1f "
				       "%6.3f %7.3f %7.3f\n", "ideal FIFO",
				       if1 * 1e3, ilast * 1e3, if1 * 1e3,
				       ilast * 1e3, sum, 1.0, 1.0, 1.0);
				if (cf)
					fprintf(cf, "%s,%zu,%zu,%zu,ideal,"
						"%.4f,%.4f,%.4f,%.4f,%.3f,"
						"1\n", mode_name[m], sizes[i],
						b1, b2, if1 * 1e3, ilast * 1e3,
						if1 * 1e3, ilast * 1e3, sum);
			}
		}
		if (cf && fclose(cf))
			bench_die_errno("cannot write %s", csv);

		printf("\nsummary over the %d sizes (min / median / max): "
		       "MB/s / sum of rails, first completion / ideal FIFO, "
		       "makespan / ideal FIFO\n", nsizes);
		for (int m = 0; m < nmodes; m++)
			for (int k = 0; k < nconf; k++) {
				struct bench_stats a, b, c;
				bench_stats(rs[m][k], (size_t)nsizes, &a);
				bench_stats(rf[m][k], (size_t)nsizes, &b);
				bench_stats(rm[m][k], (size_t)nsizes, &c);
				printf("  %-5s %-16s /sum %.3f %.3f %.3f   "
				       "1st/id %.3f %.3f %.3f   "
				       "mk/id %.3f %.3f %.3f\n", mode_name[m],
				       confs[k].name, a.min, a.median, a.max,
				       b.min, b.median, b.max, c.min,
				       c.median, c.max);
			}
		fflush(stdout);
	}

	for (int k = nconf - 1; k >= 0; k--)
		mrail_engine_destroy(confs[k].e);
	free(samp);
	free(tx);
	free(rx);
	return 0;
}
