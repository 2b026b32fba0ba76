/*
 * bench_util: error reporting, clocks, statistics, formatting, patterns.
 */
#include "bench_util.h"

#include "mrail.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *ident_prog = "mrail-bench";
static int ident_rank = -1;

void bench_set_ident(const char *prog, int rank)
{
	ident_prog = prog;
	ident_rank = rank;
}

static void vreport(const char *fmt, va_list ap, int err)
{
	char msg[1024];
	vsnprintf(msg, sizeof msg, fmt, ap);
	if (ident_rank >= 0)
		fprintf(stderr, "%s[%d]: %s", ident_prog, ident_rank, msg);
	else
		fprintf(stderr, "%s: %s", ident_prog, msg);
	if (err)
		fprintf(stderr, ": %s", strerror(err));
	fputc('\n', stderr);
	fflush(stderr);
}

void bench_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(fmt, ap, 0);
	va_end(ap);
	exit(1);
}

void bench_die_errno(const char *fmt, ...)
{
	int err = errno;
	va_list ap;
	va_start(ap, fmt);
	vreport(fmt, ap, err);
	va_end(ap);
	exit(1);
}

void bench_check_rc(int rc, const char *what, const char *file, int line)
{
	if (rc == MRAIL_OK)
		return;
	bench_die("%s failed: %s (%d) [%s:%d]", what, mrail_strerror(rc), rc,
		  file, line);
}

void *bench_alloc(size_t len)
{
	void *p = malloc(len ? len : 1);
	if (!p)
		bench_die("out of memory allocating %zu bytes", len);
	memset(p, 0, len);
	return p;
}

uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void bench_stats(double *s, size_t n, struct bench_stats *out)
{
	double sum = 0;
	qsort(s, n, sizeof *s, cmp_double);
	for (size_t i = 0; i < n; i++)
		sum += s[i];
	out->n = n;
	out->min = s[0];
	out->max = s[n - 1];
	out->mean = sum / (double)n;
	out->median = (n % 2) ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

void bench_fmt_size(char *buf, size_t cap, size_t b)
{
	if (b >= (1u << 30) && b % (1u << 30) == 0)
		snprintf(buf, cap, "%zuG", b >> 30);
	else if (b >= (1u << 20) && b % (1u << 20) == 0)
		snprintf(buf, cap, "%zuM", b >> 20);
	else if (b >= (1u << 10) && b % (1u << 10) == 0)
		snprintf(buf, cap, "%zuK", b >> 10);
	else
		snprintf(buf, cap, "%zu", b);
}

void bench_fmt_bytes(char *buf, size_t cap, uint64_t b)
{
	static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	int u = 0;
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, cap, "%llu B", (unsigned long long)b);
	else if (b % (1ull << (10 * u)) == 0)
		snprintf(buf, cap, "%llu %s", (unsigned long long)(b >> (10 * u)),
			 unit[u]);
	else
		snprintf(buf, cap, "%.2f %s", v, unit[u]);
}

int bench_parse_size(const char *s, size_t *out)
{
	char *end;
	errno = 0;
	if (!s || !*s || *s == '-')
		return -1;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	unsigned shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end == 'i' || *end == 'B')
		end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
	if (*end || (shift && v > (SIZE_MAX >> shift)))
		return -1;
	*out = (size_t)(v << shift);
	return 0;
}

static inline uint64_t splitmix64(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

/* Word i of the pattern; bytes are taken little-endian from the words. */
static inline uint64_t pattern_word(uint64_t seed, size_t i)
{
	return splitmix64(seed * 0xD1B54A32D192ED03ull + i);
}

void bench_fill(void *buf, size_t len, uint64_t seed)
{
	unsigned char *p = buf;
	size_t words = len / 8, i;
	for (i = 0; i < words; i++) {
		uint64_t w = pattern_word(seed, i);
		memcpy(p + 8 * i, &w, 8);
	}
	if (len % 8) {
		uint64_t w = pattern_word(seed, i);
		memcpy(p + 8 * i, &w, len % 8);
	}
}

int bench_verify(const void *buf, size_t len, uint64_t seed, size_t *bad)
{
	const unsigned char *p = buf;
	size_t words = len / 8, i;
	for (i = 0; i < words; i++) {
		uint64_t w = pattern_word(seed, i), got;
		memcpy(&got, p + 8 * i, 8);
		if (got != w)
			goto mismatch;
	}
	if (len % 8) {
		uint64_t w = pattern_word(seed, i);
		if (memcmp(p + 8 * i, &w, len % 8))
			goto mismatch;
	}
	return 0;
mismatch:
	/* Narrow down to the first bad byte of word i. */
	{
		uint64_t w = pattern_word(seed, i);
		const unsigned char *e = (const unsigned char *)&w;
		size_t off = 8 * i, n = len - off < 8 ? len - off : 8;
		for (size_t k = 0; k < n; k++)
			if (p[off + k] != e[k]) {
				*bad = off + k;
				return 1;
			}
		*bad = off;
		return 1;
	}
}

static inline uint64_t rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

uint64_t bench_checksum(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	const uint64_t k = 0x9E3779B97F4A7C15ull;
	uint64_t h[4] = { k, k ^ 1, k ^ 2, k ^ 3 };
	size_t i = 0;
	for (; i + 32 <= len; i += 32)
		for (int l = 0; l < 4; l++) {
			uint64_t w;
			memcpy(&w, p + i + 8 * l, 8);
			h[l] = rotl64(h[l] ^ w, 29) * k;
		}
	uint64_t t = 0;
	for (; i < len; i++)
		t = splitmix64(t ^ p[i]);
	uint64_t r = (uint64_t)len * k;
	for (int l = 0; l < 4; l++)
		r = splitmix64(r ^ h[l]);
	return splitmix64(r ^ t);
}
