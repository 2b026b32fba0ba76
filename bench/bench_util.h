/*
 * bench_util: small helpers shared by mrail-bench and mrail-demo — error
 * reporting, clocks, statistics, size formatting and data patterns.
 */
#ifndef MRAIL_BENCH_UTIL_H
#define MRAIL_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Program name and rank used to prefix every diagnostic. */
void bench_set_ident(const char *prog, int rank);

/* Print "prog[rank]: message" to stderr and exit(1). */
void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Same, with ": strerror(errno)" appended. */
void bench_die_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Abort with a clear message when an mrail_* call did not return MRAIL_OK. */
void bench_check_rc(int rc, const char *what, const char *file, int line);
#define MRAIL_CHECK(call) bench_check_rc((call), #call, __FILE__, __LINE__)

/* malloc that dies on failure; memory is touched (zeroed) so page faults
 * happen before any timing. */
void *bench_alloc(size_t len);

/* Monotonic clock. */
uint64_t bench_now_ns(void);

/* Statistics over n samples (the array is sorted in place). n > 0. */
struct bench_stats {
	double min, median, max, mean;
	size_t n;
};
void bench_stats(double *samples, size_t n, struct bench_stats *out);

/* "1", "512", "4K", "16M" ... for table cells (powers of two only exact). */
void bench_fmt_size(char *buf, size_t cap, size_t bytes);
/* "1.50 GiB" style, for byte counters. */
void bench_fmt_bytes(char *buf, size_t cap, uint64_t bytes);

/* Parse a size with an optional K/M/G suffix (binary). -1 on error. */
int bench_parse_size(const char *s, size_t *out);

/* Deterministic pseudo-random byte pattern depending on seed and offset. */
void bench_fill(void *buf, size_t len, uint64_t seed);
/* 0 if buf holds bench_fill(seed); otherwise 1 and *bad = first bad offset. */
int bench_verify(const void *buf, size_t len, uint64_t seed, size_t *bad);

/* 64-bit checksum of a buffer (fast, order-sensitive). */
uint64_t bench_checksum(const void *buf, size_t len);

#endif
