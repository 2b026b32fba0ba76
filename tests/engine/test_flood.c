/*
 * Bounded unexpected memory (issue 15): rank 0 posts COUNT (default
 * 100 000) messages of 16 KiB, all with one tag, keeping 64 sends in
 * flight (MPI_Isend + MPI_Waitall style); rank 1 sleeps SLEEP seconds
 * (default 3) before it posts a single receive, then receives them one by
 * one. With TEST_FLOOD_RANKS=n, ranks 0..n-2 all flood rank n-1 (the
 * engine-wide cap). With eager credits (docs/flow-control.md) rank 1 buffers at most
 * its per-peer cap of eager data; the sender switches to rendezvous when
 * its credit runs out and back to eager when credit returns.
 *
 * Checks: every message arrives, in order, with its content; the
 * receiver's peak RSS (VmHWM) grows by at most the eager cap plus
 * TEST_FLOOD_SLACK_MIB
 * (default 24) while the flood lasts. Run with and without
 * MRAIL_PROGRESS_THREAD=1 (with it, the receiver's engine reads
 * everything the sender sends while the application sleeps).
 *
 * TEST_FLOOD_COUNT, TEST_FLOOD_SLEEP, TEST_FLOOD_SLACK_MIB
 * change the figures (fewer messages under sanitizers).
 * TEST_FLOOD_RSS_FACTOR (default 1) multiplies the whole bound: under
 * ThreadSanitizer every page the program touches brings two pages of
 * shadow into the RSS, plus the runtime's own per-thread state, so the
 * same buffering shows 3-5x the growth (6 MiB plain, 33 MiB under
 * TSan; 15 and 44-54 MiB with two senders). Unbounded buffering still
 * fails there: two senders' 5000 x 16 KiB grew it by 770 MiB, against
 * a bound of 84.
 */
#include "standalone.h"
#include "util/size.h"

#include <fcntl.h>

enum { LEN = 16 << 10, WINDOW = 64, TAG_FLOOD = 7 };

/* Under AddressSanitizer, freed memory waits in a quarantine (256 MiB by
 * default) before reuse, which would count as growth here; keep it
 * small. Options from ASAN_OPTIONS still apply on top. */
__attribute__((visibility("default"), used))
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "quarantine_size_mb=4";
}

static long env_long(const char *name, long def)
{
	const char *v = getenv(name);
	return v && *v ? atol(v) : def;
}

/* A field of /proc/self/status in KiB ("VmHWM", "VmRSS"). */
static long status_kib(const char *field)
{
	char line[256];
	long kib = -1;
	size_t n = strlen(field);
	FILE *f = fopen("/proc/self/status", "r");
	CHECK(f);
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, field, n) && line[n] == ':')
			kib = atol(line + n + 1);
	fclose(f);
	CHECK(kib >= 0);
	return kib;
}

/* Start a new peak: VmHWM back to the current RSS (Linux >= 4.0). */
static void reset_peak(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY);
	if (fd >= 0) {
		CHECK(write(fd, "5", 1) == 1);
		close(fd);
	}
}

/* Message i: 64-bit words i * K + j, cheap to write and to check. */
static void fill(uint64_t *w, uint64_t i)
{
	for (size_t j = 0; j < LEN / 8; j++)
		w[j] = i * 0x9E3779B97F4A7C15ULL + j;
}

static int intact(const uint64_t *w, uint64_t i)
{
	for (size_t j = 0; j < LEN / 8; j++)
		if (w[j] != i * 0x9E3779B97F4A7C15ULL + j)
			return 0;
	return 1;
}

static void sender(mrail_engine_t *e, mrail_peer_t to, long count)
{
	uint64_t *buf = malloc((size_t)WINDOW * LEN);
	mrail_request_t *rq[WINDOW] = {0};
	CHECK(buf);
	for (long i = 0; i < count; i++) {
		int k = (int)(i % WINDOW);
		uint64_t *at = buf + (size_t)k * (LEN / 8);
		if (rq[k])
			CHECK_RC(mrail_wait(e, rq[k], NULL));
		fill(at, (uint64_t)i);
		CHECK_RC(mrail_isend(e, to, at, LEN, TAG_FLOOD, &rq[k]));
	}
	for (int k = 0; k < WINDOW; k++)
		if (rq[k])
			CHECK_RC(mrail_wait(e, rq[k], NULL));
	free(buf);
}

/* What the receiver may buffer from `senders` peers (credits.c): each
 * peer's window is the smaller of its cap and an equal share of the
 * engine's over every gate (self included); all within the engine's. */
static uint64_t eager_cap(uint32_t n)
{
	uint64_t peer = 4 << 20, all = 64 << 20;
	const char *v = getenv("MRAIL_UNEXPECTED_PEER_MAX");
	if (v)
		CHECK(mrail_parse_size(v, &peer) == 0);
	v = getenv("MRAIL_UNEXPECTED_MAX");
	if (v)
		CHECK(mrail_parse_size(v, &all) == 0);
	uint64_t w = all / n < peer ? all / n : peer;
	return w * (n - 1) < all ? w * (n - 1) : all;
}

/* Rank n-1 receives from ranks 0..n-2 in turn, each in its send order. */
static void receiver(mrail_engine_t *e, uint32_t n, long count, long sleep_s)
{
	uint64_t cap = eager_cap(n);
	long slack_kib = env_long("TEST_FLOOD_SLACK_MIB", 24) * 1024;
	long factor = env_long("TEST_FLOOD_RSS_FACTOR", 1);
	uint64_t *buf = malloc(LEN);
	CHECK(buf);

	reset_peak();
	long base = status_kib("VmHWM");
	sleep((unsigned)sleep_s);
	for (long i = 0; i < count; i++) {
		for (uint32_t from = 0; from + 1 < n; from++) {
			mrail_request_t *r;
			mrail_status_t st;
			CHECK_RC(mrail_irecv(e, from, buf, LEN, TAG_FLOOD,
					     MRAIL_TAG_MASK_ALL, &r));
			CHECK_RC(mrail_wait(e, r, &st));
			CHECK_EQ(st.length, LEN);
			if (!intact(buf, (uint64_t)i)) {
				fprintf(stderr, "message %ld from rank %u: wrong "
					"or out of order content (first word "
					"%#llx)\n", i, from,
					(unsigned long long)buf[0]);
				exit(1);
			}
		}
	}
	long grew = status_kib("VmHWM") - base;
	long bound = factor * ((long)(cap >> 10) + slack_kib);
	printf("test_flood: %u x %ld x %d KiB received in order; receiver "
	       "peak RSS grew by %ld KiB (bound %ld x (eager cap %llu KiB + "
	       "slack %ld KiB))\n", n - 1, count, LEN >> 10, grew, factor,
	       (unsigned long long)(cap >> 10), slack_kib);
	fflush(stdout);
	CHECK(factor >= 1 && grew <= bound);
	free(buf);
}

static int job(mrail_engine_t *e, uint32_t rank, uint32_t n)
{
	long count = env_long("TEST_FLOOD_COUNT", 100000);
	long sleep_s = env_long("TEST_FLOOD_SLEEP", 3);
	job_barrier(e, rank, n, NULL);
	if (rank + 1 < n)
		sender(e, n - 1, count);
	else
		receiver(e, n, count, sleep_s);
	job_barrier(e, rank, n, NULL);
	return 0;
}

int main(void)
{
	int status[8];
	long n = env_long("TEST_FLOOD_RANKS", 2);
	CHECK(n >= 2 && n <= 8);
	job_run((uint32_t)n, job, status);
	for (int i = 0; i < n; i++) {
		if (!WIFEXITED(status[i]) || WEXITSTATUS(status[i]) != 0) {
			fprintf(stderr, "rank %d failed (status %#x)\n", i,
				status[i]);
			return 1;
		}
	}
	return 0;
}
