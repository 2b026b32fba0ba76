/*
 * mrail-demo: the first thing to run. Two ranks exchange large messages
 * (1 MiB .. 64 MiB, both directions at once) for a few seconds over several
 * rails, verify a checksum of every message, and rank 0 shows how the
 * traffic was spread over the rails:
 *
 *   mrail-run -n 2 mrail-demo
 *
 * Default (only when the variable is unset): MRAIL_TCP_LOOPBACK_RAILS=2.
 * The strategy is the engine's default (split) unless MRAIL_STRATEGY says.
 */
#include "bench_util.h"
#include "demo_rails.h"

#include <errno.h>
#include <getopt.h>
#include <mrail.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG_DATA 0xde0001
#define TAG_SUM 0xde0002
#define TAG_DONE 0xde0003

struct demo_opts {
	double seconds;
	size_t min_size, max_size;
};

/* Sent after each message: what the receiver must find in its buffer. */
struct trailer {
	uint64_t checksum, length;
	uint32_t more; /* rank 0, last size of a round: another round follows */
	uint32_t pad;
};

/* Sent by rank 1 at the end. */
struct verdict {
	uint64_t messages, bad;
};

struct demo {
	mrail_engine_t *e;
	uint32_t rank;
	mrail_peer_t peer;
	unsigned char *tx, *rx;
	uint64_t messages, bad, bytes; /* received by this rank */
	double xfer_s;                  /* time inside the data exchanges */
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: mrail-run -n 2 mrail-demo [--seconds S] [--min-size B] [--max-size B]\n"
"  Exchange 1 MiB .. 64 MiB messages for about S seconds (default 3), verify\n"
"  their checksums and show the traffic per rail. Unless set, the demo uses\n"
"  MRAIL_TCP_LOOPBACK_RAILS=2; the strategy is MRAIL_STRATEGY, else split.\n");
}

static void parse(struct demo_opts *o, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "min-size", required_argument, NULL, 'm' },
		{ "max-size", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	char *end;

	*o = (struct demo_opts){ 3.0, (size_t)1 << 20, (size_t)64 << 20 };
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			errno = 0;
			o->seconds = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(o->seconds >= 0) ||
			    o->seconds > 3600)
				bench_die("--seconds '%s': expected 0..3600", optarg);
			break;
		case 'm':
		case 'M':
			if (bench_parse_size(optarg, c == 'm' ? &o->min_size : &o->max_size))
				bench_die("--%s '%s': expected a byte count (e.g. 64M)",
					  c == 'm' ? "min-size" : "max-size", optarg);
			break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc)
		bench_die("unexpected argument '%s' (see --help)", argv[optind]);
	if (o->min_size < 1 || o->max_size < o->min_size ||
	    o->max_size > ((size_t)1 << 30))
		bench_die("sizes: need 1 <= --min-size <= --max-size <= 1G");
}

static void wait_all(struct demo *d, mrail_request_t **r, size_t n,
		     const char *what)
{
	mrail_status_t st[4];
	int rc = mrail_wait_all(d->e, n, r, st);
	if (rc != MRAIL_OK)
		bench_die("%s failed: %s (%d)", what, mrail_strerror(rc), rc);
	for (size_t i = 0; i < n; i++)
		if (st[i].error != MRAIL_OK)
			bench_die("%s: request %zu failed: %s (%d)", what, i,
				  mrail_strerror(st[i].error), st[i].error);
}

/* Send src to the peer and receive the peer's message of the same tag and
 * length into dst, both at once. */
static void exchange(struct demo *d, const void *src, void *dst, size_t len,
		     uint64_t tag, const char *what)
{
	mrail_request_t *r[2];
	MRAIL_CHECK(mrail_irecv(d->e, d->peer, dst, len, tag,
				MRAIL_TAG_MASK_ALL, &r[0]));
	MRAIL_CHECK(mrail_isend(d->e, d->peer, src, len, tag, &r[1]));
	wait_all(d, r, 2, what);
}

/* One message each way; returns the peer's "more" flag. */
static int one_message(struct demo *d, size_t size, uint64_t seed, int more)
{
	struct trailer mine, theirs;

	bench_fill(d->tx, size, seed);
	mine = (struct trailer){ bench_checksum(d->tx, size), size,
				 (uint32_t)more, 0 };
	uint64_t t0 = bench_now_ns();
	exchange(d, d->tx, d->rx, size, TAG_DATA, "data exchange");
	d->xfer_s += (double)(bench_now_ns() - t0) / 1e9;
	exchange(d, &mine, &theirs, sizeof mine, TAG_SUM, "checksum exchange");

	d->messages++;
	d->bytes += size;
	if (theirs.length != size || bench_checksum(d->rx, size) != theirs.checksum) {
		d->bad++;
		fprintf(stderr, "mrail-demo[%u]: message %llu of %zu bytes: "
			"CHECKSUM MISMATCH\n", d->rank,
			(unsigned long long)d->messages, size);
	}
	return (int)theirs.more;
}

int main(int argc, char **argv)
{
	struct demo_opts o;
	struct mrail_config cfg;
	struct demo d = { 0 };
	struct demo_rails before, after;
	struct verdict peer_v = { 0, 0 }, my_v;
	int nsizes = 0;

	parse(&o, argc, argv);
	/* The demo's defaults; the user's environment wins. */
	setenv("MRAIL_TCP_LOOPBACK_RAILS", "2", 0);
	MRAIL_CHECK(mrail_config_init(&cfg));
	MRAIL_CHECK(mrail_engine_create(&cfg, &d.e));
	d.rank = mrail_rank(d.e);
	bench_set_ident("mrail-demo", (int)d.rank);
	if (mrail_size(d.e) != 2)
		bench_die("needs exactly 2 ranks, this job has %u: run "
			  "'mrail-run -n 2 mrail-demo'", mrail_size(d.e));
	d.peer = 1 - d.rank;
	d.tx = bench_alloc(o.max_size);
	d.rx = bench_alloc(o.max_size);

	/* Connect the rails, then count only the demo's own traffic. */
	exchange(&d, &d.rank, &my_v, 0, TAG_DONE, "start barrier");
	demo_rails_snapshot(d.e, d.peer, &before);
	uint64_t start = bench_now_ns();
	for (uint32_t round = 0, more = 1; more; round++) {
		int k = 0;
		for (size_t size = o.min_size; size <= o.max_size; size *= 2, k++) {
			int last = size > o.max_size / 2;
			int want = last && d.rank == 0 &&
				   (double)(bench_now_ns() - start) / 1e9 < o.seconds;
			uint64_t seed = ((uint64_t)round << 16) | ((uint64_t)k << 1) | d.rank;
			int peer_more = one_message(&d, size, seed, want);
			if (last)
				more = d.rank == 0 ? (uint32_t)want : (uint32_t)peer_more;
		}
		nsizes = k;
	}
	double wall = (double)(bench_now_ns() - start) / 1e9;
	demo_rails_snapshot(d.e, d.peer, &after);

	my_v = (struct verdict){ d.messages, d.bad };
	exchange(&d, &my_v, &peer_v, sizeof my_v, TAG_DONE, "final exchange");
	if (d.rank == 0) {
		char per_dir[32], lo[32], hi[32];
		uint64_t total = d.messages + peer_v.messages;
		uint64_t bad = d.bad + peer_v.bad;
		bench_fmt_bytes(per_dir, sizeof per_dir, d.bytes);
		bench_fmt_bytes(lo, sizeof lo, o.min_size);
		bench_fmt_bytes(hi, sizeof hi, o.min_size << (nsizes - 1));
		printf("mrail-demo: rank 0 <-> rank 1, strategy %s, %d rail(s), "
		       "%.1f s\n", cfg.strategy ? cfg.strategy : getenv("MRAIL_STRATEGY"),
		       after.n, wall);
		printf("exchanged %llu messages each way (%s .. %s, %s per "
		       "direction), checksums: %s\n",
		       (unsigned long long)d.messages, lo, hi, per_dir,
		       bad ? "FAILED" : "all OK");
		if (bad)
			printf("  %llu of %llu messages corrupted\n",
			       (unsigned long long)bad, (unsigned long long)total);
		demo_rails_print(&before, &after, d.xfer_s);
		printf("(bandwidth = bytes / %.2f s spent in the exchanges, per "
		       "direction; share = sent + received)\n", d.xfer_s);
		fflush(stdout);
	}
	free(d.tx);
	free(d.rx);
	MRAIL_CHECK(mrail_engine_destroy(d.e));
	return d.bad || peer_v.bad ? 1 : 0;
}
