/*
 * bench_xfer: what the engine and the raw TCP measurements share — the
 * buffer arenas and the description of one measurement block, so both
 * transports move exactly the same bytes in exactly the same pattern.
 */
#ifndef MRAIL_BENCH_XFER_H
#define MRAIL_BENCH_XFER_H

#include <stddef.h>
#include <stdint.h>

/* One send and one receive arena per rank, carved into size-byte slots. */
struct bench_bufs {
	unsigned char *tx, *rx;
	size_t cap; /* bytes of each arena */
};

/* Arenas big enough for two max_size slots and, up to 64 MiB, a window of
 * distinct slots. Memory is touched before any timing. */
void bench_bufs_init(struct bench_bufs *b, size_t max_size, int window);
void bench_bufs_free(struct bench_bufs *b);

/* Number of distinct size-byte slots in an arena (>= 2). */
int bench_bufs_slots(const struct bench_bufs *b, size_t size);

/* Slot i (modulo the number of slots) of an arena. */
unsigned char *bench_bufs_slot(const struct bench_bufs *b, unsigned char *arena,
			       size_t size, int i);

/* One measurement block. */
struct bench_xfer {
	size_t size;
	int check;       /* fill on send, verify on receive */
	uint64_t seed;   /* pattern seed base of this block */
	/* latency: warmup + iters round trips; rank 0 stores iters one-way
	 * times (half round-trip, microseconds) in samples. */
	int iters, warmup;
	double *samples;
	/* bandwidth: warm_win + nwin windows of `window` messages, each
	 * window acknowledged by the receiver; rank 0 gets the seconds taken
	 * by the nwin timed windows. Message j of a window uses slot
	 * j % slots of the arenas: 1 (like osu_bw: one send and one receive
	 * buffer), or one slot per message with --check. */
	int window, nwin, warm_win, slots;
};

/* Pattern seed of latency iteration i / bandwidth message (w, j). */
static inline uint64_t bench_seed_lat(const struct bench_xfer *x, int i)
{
	return x->seed + (uint64_t)i;
}
static inline uint64_t bench_seed_bw(const struct bench_xfer *x, int w, int j)
{
	return x->seed + (uint64_t)w * (uint64_t)x->window + (uint64_t)j;
}

#endif
