/*
 * Wire-up at scale (docs/scale.md): create an engine, exchange with both
 * ring neighbours at once (with lazy connection both sides of each pair
 * connect at the same moment: the race handshake.c settles), check the
 * payloads, destroy.
 *   test_scale [ring|alltoall] [--lazy] [--report]
 * alltoall: every rank to every other, payloads eager and rendezvous.
 * --lazy: also check that peers never messaged have no connection (rail
 *   info and stats show every rail of theirs down, no byte sent).
 * --report: one line per rank for bench/scale.sh: creation time, heap in
 *   use and RSS after creation and after the exchange, connected peers.
 */
#include "../engine/harness.h"

#include <malloc.h>
#include <stdbool.h>
#include <time.h>

#define TAG_RING 0x5CA1E
#define SMALL 1024
#define LARGE (64u << 10) /* above the default eager threshold: rendezvous */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "VmRSS: %ld", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

static uint64_t msg_id(uint32_t src, uint32_t dst, int large)
{
	return (uint64_t)src << 32 | (uint64_t)dst << 1 | (uint64_t)large;
}

/* Send SMALL and LARGE to each of `peers`, receive the same from each. */
static void exchange(mrail_engine_t *e, const uint32_t *peers, uint32_t np)
{
	uint32_t me = mrail_rank(e);
	mrail_request_t **rq = calloc(4 * (size_t)np, sizeof *rq);
	uint8_t **buf = calloc(4 * (size_t)np, sizeof *buf);
	CHECK(rq && buf);
	for (uint32_t i = 0; i < np; i++)
		for (int large = 0; large < 2; large++) {
			size_t len = large ? LARGE : SMALL;
			uint8_t **rb = &buf[4 * i + 2 * large];
			uint8_t **sb = &buf[4 * i + 2 * large + 1];
			CHECK((*rb = malloc(len)) && (*sb = malloc(len)));
			pattern_fill(*sb, len, msg_id(me, peers[i], large));
			CHECK_RC(mrail_irecv(e, peers[i], *rb, len,
					     TAG_RING + (uint64_t)large,
					     MRAIL_TAG_MASK_ALL,
					     &rq[4 * i + 2 * large]));
			CHECK_RC(mrail_isend(e, peers[i], *sb, len,
					     TAG_RING + (uint64_t)large,
					     &rq[4 * i + 2 * large + 1]));
		}
	mrail_status_t *st = calloc(4 * (size_t)np, sizeof *st);
	CHECK(st);
	CHECK_RC(mrail_wait_all(e, 4 * (size_t)np, rq, st));
	for (uint32_t i = 0; i < np; i++)
		for (int large = 0; large < 2; large++) {
			size_t len = large ? LARGE : SMALL;
			mrail_status_t *s = &st[4 * i + 2 * large];
			CHECK(s->error == MRAIL_OK && s->length == len);
			size_t bad = pattern_check(buf[4 * i + 2 * large], len,
						   msg_id(peers[i], me, large));
			if (bad != len) {
				fprintf(stderr, "rank %u: message from %u "
					"wrong at byte %zu\n", me, peers[i], bad);
				exit(1);
			}
		}
	for (uint32_t i = 0; i < 4 * np; i++)
		free(buf[i]);
	free(buf);
	free(rq);
	free(st);
}

static void send1(mrail_engine_t *e, mrail_peer_t p, uint64_t tag)
{
	static uint8_t one;
	mrail_request_t *r;
	CHECK_RC(mrail_isend(e, p, &one, 1, tag, &r));
	CHECK_RC(mrail_wait(e, r, NULL));
}

static void recv1(mrail_engine_t *e, mrail_peer_t p, uint64_t tag)
{
	uint8_t one;
	mrail_request_t *r;
	CHECK_RC(mrail_irecv(e, p, &one, 1, tag, MRAIL_TAG_MASK_ALL, &r));
	CHECK_RC(mrail_wait(e, r, NULL));
}

/*
 * A barrier over the ring: a token goes round twice. A rank forwards the
 * first lap once it is done; the second lap tells everyone that all are.
 * Only ring neighbours talk, so no rank connects to a peer another rank
 * is still checking is not connected.
 */
static void ring_barrier(mrail_engine_t *e)
{
	uint32_t n = mrail_size(e), me = mrail_rank(e);
	for (int lap = 0; lap < 2; lap++) {
		if (me == 0) {
			send1(e, 1, TAG_RING + 2);
			recv1(e, n - 1, TAG_RING + 2);
		} else {
			recv1(e, me - 1, TAG_RING + 2);
			send1(e, (me + 1) % n, TAG_RING + 2);
		}
	}
}

/* Whether any rail to `p` is connected or carried a byte. */
static bool connected(mrail_engine_t *e, mrail_peer_t p)
{
	int n = mrail_rail_count(e, p);
	for (int i = 0; i < n; i++) {
		struct mrail_rail_info info;
		struct mrail_rail_stats st;
		CHECK_RC(mrail_rail_info(e, p, i, &info));
		CHECK_RC(mrail_rail_stats(e, p, i, &st));
		if (info.up || st.up || st.tx_bytes || st.rx_bytes)
			return true;
	}
	return false;
}

int main(int argc, char **argv)
{
	bool all = false, lazy = false, report = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "alltoall"))
			all = true;
		else if (!strcmp(argv[i], "--lazy"))
			lazy = true;
		else if (!strcmp(argv[i], "--report"))
			report = true;
		else if (strcmp(argv[i], "ring")) {
			fprintf(stderr, "usage: %s [ring|alltoall] [--lazy] "
				"[--report]\n", argv[0]);
			return 2;
		}
	}
	struct timespec w0, w1;
	clock_gettime(CLOCK_REALTIME, &w0);
	double t0 = now();
	mrail_engine_t *e = test_engine();
	double t_create = now() - t0;
	clock_gettime(CLOCK_REALTIME, &w1);
	struct mallinfo2 mi = mallinfo2();
	long rss = rss_kib();
	uint32_t n = mrail_size(e), me = mrail_rank(e);
	CHECK(n >= 2);

	uint32_t *peers = calloc(n, sizeof *peers), np = 0;
	CHECK(peers);
	for (uint32_t k = 1; k < n; k++) {
		uint32_t p = (me + k) % n;
		if (all || k == 1 || k == n - 1)
			if (!np || peers[np - 1] != p)
				peers[np++] = p;
	}
	if (n == 2)
		np = 1;
	exchange(e, peers, np);
	/* After the exchange, with its buffers freed: what the peers used
	 * (connected, now idle) cost. */
	struct mallinfo2 mu = mallinfo2();
	long rss_used = rss_kib();

	uint32_t nconn = 0;
	for (uint32_t p = 0; p < n; p++) {
		if (p == me)
			continue;
		bool c = connected(e, p), neighbour = false;
		nconn += c;
		for (uint32_t i = 0; i < np; i++)
			neighbour |= peers[i] == p;
		/* The in-band sampling pair (0, 1) talks at creation. */
		if (lazy && c && !neighbour && !(me < 2 && p < 2)) {
			fprintf(stderr, "rank %u: peer %u was never messaged "
				"but is connected\n", me, p);
			return 1;
		}
		if (neighbour && !c) {
			fprintf(stderr, "rank %u: peer %u exchanged messages "
				"but shows no connection\n", me, p);
			return 1;
		}
	}
	if (report)
		printf("scale-report rank=%u size=%u create_s=%.4f "
		       "heap_bytes=%zu rss_kib=%ld connected=%u start=%.6f "
		       "created=%.6f heap_used=%zu rss_used_kib=%ld\n", me, n,
		       t_create, mi.uordblks + mi.hblkhd, rss, nconn,
		       (double)w0.tv_sec + 1e-9 * (double)w0.tv_nsec,
		       (double)w1.tv_sec + 1e-9 * (double)w1.tv_nsec,
		       mu.uordblks + mu.hblkhd, rss_used);
	/* Nobody leaves before everyone checked its connections. */
	ring_barrier(e);
	CHECK_RC(mrail_engine_destroy(e));
	if (me == 0)
		printf("test_scale: %u ranks, %s verified\n", n,
		       all ? "all-to-all" : "ring");
	free(peers);
	return 0;
}
