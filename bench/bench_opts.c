/*
 * bench_opts: command line of mrail-bench.
 */
#include "bench_opts.h"
#include "bench_util.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f,
"usage: mrail-run -n 2 mrail-bench [options]\n"
"  Ping-pong latency and streaming bandwidth of libmrail between two ranks,\n"
"  interleaved with a raw TCP baseline over the same interface.\n"
"\n"
"  --min-size B     smallest message (default 1; K/M/G suffixes allowed)\n"
"  --max-size B     largest message (default 64M)\n"
"  --iters N        ping-pong iterations for small sizes (default 1000;\n"
"                   scaled down for large sizes)\n"
"  --warmup N       warm-up iterations for small sizes (default 100)\n"
"  --reps N         interleaved raw/engine repetitions per size (default 5)\n"
"  --window N       outstanding sends in the bandwidth test (default 16)\n"
"  --mode M         lat, bw or all (default all)\n"
"  --no-raw         skip the raw TCP baseline\n"
"  --raw-addr IP    address of the raw TCP baseline (default: the local\n"
"                   address of rail 0, else 127.0.0.1)\n"
"  --raw-sockbuf B  SO_SNDBUF/SO_RCVBUF of the raw sockets (default: like\n"
"                   the TCP driver, MRAIL_TCP_SOCKBUF or 4M; 0 keeps kernel\n"
"                   autotuning)\n"
"  --pin            pin rank r to CPU r %% ncpus\n"
"  --check          fill and verify every payload (timings then include\n"
"                   the verification and are not representative)\n"
"  --csv FILE       also write the results as CSV\n"
"  -h, --help       this text\n");
}

static long parse_long(const char *opt, const char *val, long lo, long hi)
{
	char *end;
	errno = 0;
	long v = strtol(val, &end, 10);
	if (errno || end == val || *end || v < lo || v > hi)
		bench_die("%s '%s': expected an integer in [%ld, %ld]", opt,
			  val, lo, hi);
	return v;
}

static size_t parse_size_opt(const char *opt, const char *val)
{
	size_t v;
	if (bench_parse_size(val, &v))
		bench_die("%s '%s': expected a byte count (e.g. 4096, 64K, 16M)",
			  opt, val);
	return v;
}

enum {
	OPT_MIN = 256, OPT_MAX, OPT_ITERS, OPT_WARMUP, OPT_REPS, OPT_WINDOW,
	OPT_MODE, OPT_NORAW, OPT_RAWADDR, OPT_SOCKBUF, OPT_PIN, OPT_CHECK,
	OPT_CSV,
};

void bench_opts_parse(struct bench_opts *o, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "min-size", required_argument, NULL, OPT_MIN },
		{ "max-size", required_argument, NULL, OPT_MAX },
		{ "iters", required_argument, NULL, OPT_ITERS },
		{ "warmup", required_argument, NULL, OPT_WARMUP },
		{ "reps", required_argument, NULL, OPT_REPS },
		{ "window", required_argument, NULL, OPT_WINDOW },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "no-raw", no_argument, NULL, OPT_NORAW },
		{ "raw-addr", required_argument, NULL, OPT_RAWADDR },
		{ "raw-sockbuf", required_argument, NULL, OPT_SOCKBUF },
		{ "pin", no_argument, NULL, OPT_PIN },
		{ "check", no_argument, NULL, OPT_CHECK },
		{ "csv", required_argument, NULL, OPT_CSV },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct bench_opts){
		.min_size = 1, .max_size = (size_t)64 << 20,
		.iters = 1000, .warmup = 100, .reps = 5, .window = 16,
		.do_lat = 1, .do_bw = 1, .raw = 1, .raw_sockbuf = 4l << 20,
	};
	/* Same socket buffers as the engine's TCP driver by default. */
	const char *drv_sockbuf = getenv("MRAIL_TCP_SOCKBUF");
	size_t v;
	if (drv_sockbuf && !bench_parse_size(drv_sockbuf, &v) && v <= (1u << 30))
		o->raw_sockbuf = (long)v;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case OPT_MIN: o->min_size = parse_size_opt("--min-size", optarg); break;
		case OPT_MAX: o->max_size = parse_size_opt("--max-size", optarg); break;
		case OPT_ITERS: o->iters = (int)parse_long("--iters", optarg, 1, 10000000); break;
		case OPT_WARMUP: o->warmup = (int)parse_long("--warmup", optarg, 0, 10000000); break;
		case OPT_REPS: o->reps = (int)parse_long("--reps", optarg, 1, 1000); break;
		case OPT_WINDOW: o->window = (int)parse_long("--window", optarg, 1, 1024); break;
		case OPT_MODE:
			if (!strcmp(optarg, "lat"))
				o->do_lat = 1, o->do_bw = 0;
			else if (!strcmp(optarg, "bw"))
				o->do_lat = 0, o->do_bw = 1;
			else if (!strcmp(optarg, "all"))
				o->do_lat = 1, o->do_bw = 1;
			else
				bench_die("--mode '%s': expected lat, bw or all", optarg);
			break;
		case OPT_NORAW: o->raw = 0; break;
		case OPT_RAWADDR: o->raw_addr = optarg; break;
		case OPT_SOCKBUF:
			o->raw_sockbuf = (long)parse_size_opt("--raw-sockbuf", optarg);
			if (o->raw_sockbuf > (1l << 30))
				bench_die("--raw-sockbuf '%s': at most 1G", optarg);
			break;
		case OPT_PIN: o->pin = 1; break;
		case OPT_CHECK: o->check = 1; break;
		case OPT_CSV: o->csv = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc)
		bench_die("unexpected argument '%s' (see --help)", argv[optind]);
	if (o->min_size < 1)
		bench_die("--min-size must be at least 1");
	if (o->max_size < o->min_size)
		bench_die("--max-size (%zu) is smaller than --min-size (%zu)",
			  o->max_size, o->min_size);
	if (o->max_size > ((size_t)1 << 30))
		bench_die("--max-size: at most 1G");
}
