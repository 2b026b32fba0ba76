/*
 * The header promises that any thread may call the API at any time: four
 * threads per process exchange messages concurrently on one engine, each
 * on its own tag, eager and rendezvous sizes mixed, with a progress thread
 * running too (meson runs it with MRAIL_PROGRESS_THREAD=1).
 */
#include "harness.h"

#include <pthread.h>

enum { THREADS = 4, ROUNDS = 150 };

static mrail_engine_t *E;
static uint32_t me, peer;

static void *worker(void *arg)
{
	uint64_t t = (uint64_t)(uintptr_t)arg;
	size_t max = 200000;
	uint8_t *out = malloc(max), *in = malloc(max);
	uint64_t seed = t;
	for (int i = 0; i < ROUNDS; i++) {
		size_t len = (size_t)(rnd_next(&seed) % (i % 5 == 0 ? max : 5000));
		uint64_t id = t << 32 | (uint64_t)i;
		mrail_request_t *r[2];
		mrail_status_t st[2];
		pattern_fill(out, len, id ^ me);
		CHECK_RC(mrail_irecv(E, peer, in, max, 100 + t, MRAIL_TAG_MASK_ALL, &r[0]));
		CHECK_RC(mrail_isend(E, peer, out, len, 100 + t, &r[1]));
		CHECK_RC(mrail_wait_all(E, 2, r, st));
		CHECK_EQ(st[0].length, len);
		CHECK_EQ(pattern_check(in, len, id ^ peer), len);
	}
	free(out);
	free(in);
	return NULL;
}

int main(void)
{
	pthread_t th[THREADS];
	E = test_engine();
	me = mrail_rank(E);
	CHECK_EQ(mrail_size(E), 2);
	peer = 1 - me;
	for (uintptr_t t = 0; t < THREADS; t++)
		CHECK(pthread_create(&th[t], NULL, worker, (void *)t) == 0);
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	test_barrier(E);
	CHECK_RC(mrail_engine_destroy(E));
	return 0;
}
