/*
 * mrail-sample: profile the rails between two processes and write one
 * profile per rail (docs/profile-format.md) where the engine finds them.
 *
 *   mrail-run -n 2 mrail-sample [--rails 0,1] [--max-size 64M] ...
 *   mrail-sample --show FILE [--plot out.png]
 *
 * Each rail is measured alone (strategy pin:rail=R), eager and rendezvous
 * separately (eager threshold at its maximum, then at 0), over the real
 * engine paths. Both ranks write the profile of their side.
 */
#include "sample_tool.h"
#include "sampler/identity.h"
#include "sampler/profile.h"
#include "sampler/predict.h"
#include "util/size.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EAGER_LIMIT (512u << 10) /* the largest eager message of TCP */
#define MAX_SIZES 96

static void die(const char *what, int rc)
{
	sample_die("mrail-sample", what, rc);
}

static uint64_t parse_size(const char *opt, const char *s)
{
	uint64_t v;
	if (mrail_parse_size(s, &v) || v == 0 || v > (1ULL << 36)) {
		fprintf(stderr, "mrail-sample: %s '%s': expected a size such "
			"as 4096, 64K or 64M\n", opt, s);
		exit(2);
	}
	return v;
}

/* Powers of two, plus 1.5x points where the protocols cross (4K..1M). */
static unsigned make_sizes(const struct sample_opts *o, uint64_t *sizes)
{
	unsigned n = 0;
	for (uint64_t s = 1; s && s <= o->max_size; s *= 2) {
		if (s >= o->min_size)
			sizes[n++] = s;
		uint64_t mid = s + s / 2;
		if (s >= 4096 && s < (1u << 20) && mid >= o->min_size &&
		    mid <= o->max_size)
			sizes[n++] = mid;
	}
	return n;
}

static void fmt_size(uint64_t s, char *buf, size_t len)
{
	if (s >= (1u << 20) && s % (1u << 20) == 0)
		snprintf(buf, len, "%lluM", (unsigned long long)(s >> 20));
	else if (s >= 1024 && s % 1024 == 0)
		snprintf(buf, len, "%lluK", (unsigned long long)(s >> 10));
	else
		snprintf(buf, len, "%llu", (unsigned long long)s);
}

static void progress(const struct sample_opts *o, unsigned rail,
		     const char *proto, unsigned i, unsigned n, uint64_t size)
{
	char s[32];
	if (o->quiet)
		return;
	fmt_size(size, s, sizeof s);
	if (isatty(STDOUT_FILENO)) {
		int w = 30, done = (int)(w * (i + 1) / n);
		printf("\r  rail %u %-5s [%.*s%*s] %6s", rail, proto, done,
		       "##############################", w - done, "", s);
		if (i + 1 == n)
			printf("\n");
		fflush(stdout);
	} else if (i + 1 == n) {
		printf("  rail %u %s: %u sizes measured\n", rail, proto, n);
	}
}

/* An engine whose traffic to the peer takes one rail, one protocol. */
static mrail_engine_t *engine_for(unsigned rail, size_t eager_max)
{
	return sample_engine("mrail-sample", rail, eager_max);
}

static void measure_curve(struct sample_opts *o, unsigned rail,
			  int eager, const uint64_t *sizes, unsigned n,
			  struct mrail_profile *p, void *buf)
{
	mrail_engine_t *e = engine_for(rail, eager ? EAGER_LIMIT : 0);
	uint32_t me = mrail_rank(e);
	double est = 1e-5;
	/* Eager stops at 512 KiB: it gets a third, rendezvous the rest. */
	o->left = eager ? o->budget / 3 : 2 * o->budget / 3;
	for (unsigned i = 0; i < n; i++) {
		double t = NAN;
		if (!eager || sizes[i] <= EAGER_LIMIT) {
			int rc = sample_size(e, me, o, buf, sizes[i], est, &t);
			if (rc)
				die("measurement", rc);
			/* The next size (about twice as large) takes about
			 * twice as long: budget its repetitions by that. */
			est = 2 * t;
		}
		if (eager)
			p->samples[i].eager = t;
		else
			p->samples[i].rdv = t;
		if (me == 0)
			progress(o, rail, eager ? "eager" : "rdv", i, n, sizes[i]);
	}
	int rc = mrail_engine_destroy(e);
	if (rc)
		die("engine close", rc);
}

/* Is rail r in the --rails list ("0,2")? Every rail without a list. */
static int wanted(const struct sample_opts *o, int r)
{
	if (!o->rails)
		return 1;
	for (const char *p = o->rails; *p;) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p) { /* a comma */
			p++;
			continue;
		}
		if (v == r)
			return 1;
		p = end;
	}
	return 0;
}

static void identity_of(mrail_engine_t *e, unsigned rail,
			struct mrail_rail_identity *id)
{
	struct mrail_rail_info info;
	int rc = mrail_rail_info(e, 1 - mrail_rank(e), (int)rail, &info);
	if (rc)
		die("rail information", rc);
	mrail_rail_identity_of(&info, rail, id);
}


static void summary_line(const struct mrail_profile *p, unsigned rail)
{
	struct mrail_rail_model *m;
	int rc = mrail_model_from_profile(p, &m);
	if (rc) {
		printf("  rail %u: no model: %s\n", rail, mrail_strerror(rc));
		return;
	}
	printf("  %-4u %-6s %-8s %10.2f %12.1f %12llu\n", rail, p->id.driver,
	       p->id.local, 1e6 * mrail_model_latency(m),
	       mrail_model_bandwidth(m) / 1e6,
	       (unsigned long long)mrail_model_threshold(m));
	mrail_model_free(m);
}

static int run_sampling(struct sample_opts *o)
{
	uint64_t sizes[MAX_SIZES];
	unsigned n = make_sizes(o, sizes);
	mrail_engine_t *probe = engine_for(0, EAGER_LIMIT);
	uint32_t me = mrail_rank(probe);
	int nrails = mrail_rail_count(probe, 1 - me);
	char dir[MRAIL_PROFILE_PATH_MAX];
	static struct mrail_profile profiles[16];
	int rc;

	if (nrails <= 0)
		die("rails", nrails ? nrails : MRAIL_ERR_NOT_FOUND);
	if (nrails > 16)
		nrails = 16;
	if (o->out_dir)
		snprintf(dir, sizeof dir, "%s", o->out_dir);
	else if ((rc = mrail_profile_dir(dir, sizeof dir)))
		die("profile directory", rc);
	if ((rc = mrail_profile_mkdir(dir)))
		die(dir, rc);
	for (int r = 0; r < nrails; r++)
		identity_of(probe, (unsigned)r, &profiles[r].id);
	mrail_engine_destroy(probe);

	void *buf = calloc(1, o->max_size);
	if (!buf)
		die("buffer", MRAIL_ERR_NOMEM);
	if (me == 0)
		printf("mrail-sample: %d rail(s), %u sizes from %llu B to %llu B; "
		       "at most %.0f s per rail (<= %.2f s per size and "
		       "protocol)\n", nrails, n, (unsigned long long)o->min_size,
		       (unsigned long long)o->max_size, o->budget,
		       o->seconds_per_size);
	for (int r = 0; r < nrails; r++) {
		if (!wanted(o, r))
			continue;
		struct mrail_profile *p = &profiles[r];
		p->nsamples = n;
		for (unsigned i = 0; i < n; i++)
			p->samples[i].size = sizes[i];
		measure_curve(o, (unsigned)r, 1, sizes, n, p, buf);
		measure_curve(o, (unsigned)r, 0, sizes, n, p, buf);
		mrail_profile_set_now(p);
		snprintf(p->tool, sizeof p->tool, "mrail-sample 0.1.0");
		snprintf(p->statistic, sizeof p->statistic,
			 "median of ping-pong half round trips, warm-up "
			 "excluded, <= %.2f s per size", o->seconds_per_size);
		p->eager_threshold = EAGER_LIMIT;
		char path[MRAIL_PROFILE_PATH_MAX];
		if ((rc = mrail_profile_path(dir, &p->id, path, sizeof path)) ||
		    (rc = mrail_profile_write(p, path)))
			die("writing the profile", rc);
		if (me == 0)
			printf("  rail %d: %s\n", r, path);
	}
	if (me == 0) {
		printf("\n  %-4s %-6s %-8s %10s %12s %12s\n", "rail", "driver",
		       "local", "lat (us)", "bw (MB/s)", "threshold");
		for (int r = 0; r < nrails; r++)
			if (wanted(o, r))
				summary_line(&profiles[r], (unsigned)r);
	}
	free(buf);
	return 0;
}

static int show(const char *file, const char *plot)
{
	static struct mrail_profile p;
	char err[512];
	int rc = mrail_profile_load(file, &p, err, sizeof err);
	if (rc) {
		fprintf(stderr, "mrail-sample: %s\n", rc == MRAIL_ERR_NOT_FOUND
			? "no such profile" : err);
		return 1;
	}
	printf("%s: %s %s (%llu Mb/s) -> %s, %s, %s\n", file, p.id.driver,
	       p.id.local, (unsigned long long)p.id.link_mbps, p.id.peer,
	       p.date, p.statistic);
	printf("%12s %14s %14s %12s %12s\n", "size", "eager (us)", "rdv (us)",
	       "eager MB/s", "rdv MB/s");
	for (unsigned i = 0; i < p.nsamples; i++) {
		const struct mrail_profile_sample *s = &p.samples[i];
		char e[32] = "-", r[32] = "-", eb[32] = "-", rb[32] = "-";
		if (mrail_profile_has(s->eager)) {
			snprintf(e, sizeof e, "%.2f", 1e6 * s->eager);
			snprintf(eb, sizeof eb, "%.1f", s->size / s->eager / 1e6);
		}
		if (mrail_profile_has(s->rdv)) {
			snprintf(r, sizeof r, "%.2f", 1e6 * s->rdv);
			snprintf(rb, sizeof rb, "%.1f", s->size / s->rdv / 1e6);
		}
		printf("%12llu %14s %14s %12s %12s\n",
		       (unsigned long long)s->size, e, r, eb, rb);
	}
	if (plot)
		return sample_plot(&p, plot);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mrail-run -n 2 mrail-sample [options]\n"
		"       mrail-sample --show FILE [--plot OUT.png]\n"
		"  --rails LIST      rails to profile, e.g. 0,2 (default: all)\n"
		"  --min-size B      smallest size (default 1)\n"
		"  --max-size B      largest size (default 64M)\n"
		"  --seconds S       time budget per size and protocol (0.25)\n"
		"  --max-reps N      repetitions at most per size (200)\n"
		"  --budget S        seconds per rail at most (25): repetitions\n"
		"                    shrink, down to one, to stay within it\n"
		"  --out DIR         where to write (default: MRAIL_PROFILE_DIR,\n"
		"                    else XDG_CACHE_HOME/mrail/profiles, else\n"
		"                    ~/.cache/mrail/profiles)\n"
		"  --quiet           no progress\n");
}

int main(int argc, char **argv)
{
	struct sample_opts o = {1, 64u << 20, 0.25, 200, NULL, NULL, 0, 25, 0};
	const char *show_file = NULL, *plot = NULL;
	static const struct option opts[] = {
		{"rails", required_argument, NULL, 'r'},
		{"min-size", required_argument, NULL, 'm'},
		{"max-size", required_argument, NULL, 'M'},
		{"seconds", required_argument, NULL, 's'},
		{"max-reps", required_argument, NULL, 'n'},
		{"out", required_argument, NULL, 'o'},
		{"show", required_argument, NULL, 'S'},
		{"plot", required_argument, NULL, 'p'},
		{"quiet", no_argument, NULL, 'q'},
		{"budget", required_argument, NULL, 'b'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end;
		switch (c) {
		case 'r':
			o.rails = optarg;
			if (strspn(optarg, "0123456789,") != strlen(optarg) ||
			    !*optarg) {
				fprintf(stderr, "mrail-sample: --rails '%s': "
					"expected rail numbers like 0,2\n", optarg);
				return 2;
			}
			break;
		case 'm': o.min_size = parse_size("--min-size", optarg); break;
		case 'M': o.max_size = parse_size("--max-size", optarg); break;
		case 's':
			o.seconds_per_size = strtod(optarg, &end);
			if (*end || !(o.seconds_per_size > 0) ||
			    o.seconds_per_size > 60) {
				fprintf(stderr, "mrail-sample: --seconds '%s': "
					"expected seconds in (0, 60]\n", optarg);
				return 2;
			}
			break;
		case 'n':
			o.max_reps = (unsigned)strtoul(optarg, &end, 10);
			if (*end || o.max_reps < 3 || o.max_reps > 100000) {
				fprintf(stderr, "mrail-sample: --max-reps '%s': "
					"expected 3..100000\n", optarg);
				return 2;
			}
			break;
		case 'o': o.out_dir = optarg; break;
		case 'S': show_file = optarg; break;
		case 'p': plot = optarg; break;
		case 'q': o.quiet = 1; break;
		case 'b':
			o.budget = strtod(optarg, &end);
			if (*end || !(o.budget >= 1) || o.budget > 3600) {
				fprintf(stderr, "mrail-sample: --budget '%s': "
					"expected seconds in [1, 3600]\n", optarg);
				return 2;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "mrail-sample: unexpected argument '%s'\n",
			argv[optind]);
		return 2;
	}
	if (show_file)
		return show(show_file, plot);
	if (plot) {
		fprintf(stderr, "mrail-sample: --plot goes with --show FILE\n");
		return 2;
	}
	if (o.min_size > o.max_size) {
		fprintf(stderr, "mrail-sample: --min-size above --max-size\n");
		return 2;
	}
	return run_sampling(&o);
}
