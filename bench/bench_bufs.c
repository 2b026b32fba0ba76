/*
 * bench_bufs: the send/receive arenas of mrail-bench.
 */
#include "bench_xfer.h"
#include "bench_util.h"

#include <stdlib.h>

#define ARENA_WINDOW_MAX ((size_t)64 << 20)

void bench_bufs_init(struct bench_bufs *b, size_t max_size, int window)
{
	size_t cap = 2 * max_size, win = (size_t)window * max_size;
	if (win > cap)
		cap = win < ARENA_WINDOW_MAX ? win : ARENA_WINDOW_MAX;
	if (cap < 2 * max_size)
		cap = 2 * max_size;
	b->cap = cap;
	b->tx = bench_alloc(cap);
	b->rx = bench_alloc(cap);
}

void bench_bufs_free(struct bench_bufs *b)
{
	free(b->tx);
	free(b->rx);
	b->tx = b->rx = NULL;
}

int bench_bufs_slots(const struct bench_bufs *b, size_t size)
{
	size_t n = b->cap / size;
	return n > 1024 ? 1024 : (int)n;
}

unsigned char *bench_bufs_slot(const struct bench_bufs *b, unsigned char *arena,
			       size_t size, int i)
{
	return arena + (size_t)(i % bench_bufs_slots(b, size)) * size;
}
