/*
 * Under mrail-run with MRAIL_STRATEGY=halves (tests/plugins/
 * halves_strategy.c, which counts its eager_rail calls) and one loopback
 * rail: a plugin is asked for every packet even on a gate with a single
 * rail, where the engine places a lone message itself under the built-in
 * `split` and `single` (docs/extending.md). Each rank sends ROUNDS
 * messages, one at a time; the plugin's eager_rail must have been called
 * at least that often.
 */
#include "../engine/harness.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 20

/* The plugin as the engine loaded it, from the last MRAIL_STRATEGY_PATH
 * directory. */
static unsigned long *plugin_counter(void)
{
	const char *dirs = getenv("MRAIL_STRATEGY_PATH");
	CHECK(dirs);
	const char *dir = strrchr(dirs, ':');
	dir = dir ? dir + 1 : dirs;
	char path[4096];
	snprintf(path, sizeof path, "%s/halves.so", dir);
	void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	CHECK(h);
	unsigned long *c = dlsym(h, "halves_eager_calls");
	CHECK(c);
	return c;
}

int main(void)
{
	mrail_engine_t *e = test_engine();
	uint32_t me = mrail_rank(e), peer = 1 - me;
	CHECK_EQ(mrail_size(e), 2);
	test_barrier(e);
	CHECK_EQ(mrail_rail_count(e, peer), 1);
	unsigned long *calls = plugin_counter();
	unsigned long before = __atomic_load_n(calls, __ATOMIC_RELAXED);
	for (uint64_t i = 0; i < ROUNDS; i++) {
		char out[8], in[8] = {0};
		mrail_request_t *rq[2];
		memset(out, (int)(i + me), sizeof out);
		CHECK_RC(mrail_irecv(e, peer, in, sizeof in, i,
				     MRAIL_TAG_MASK_ALL, &rq[0]));
		CHECK_RC(mrail_isend(e, peer, out, sizeof out, i, &rq[1]));
		CHECK_RC(mrail_wait_all(e, 2, rq, NULL));
		for (size_t k = 0; k < sizeof in; k++)
			CHECK_EQ(in[k], (char)(i + peer));
	}
	unsigned long asked =
		__atomic_load_n(calls, __ATOMIC_RELAXED) - before;
	if (getenv("TEST_VERBOSE"))
		fprintf(stderr, "rank %u: eager_rail asked %lu times\n", me,
			asked);
	CHECK(asked >= ROUNDS);
	test_barrier(e);
	CHECK_RC(mrail_engine_destroy(e));
	if (me == 0)
		printf("test_plugin_asked: the plugin placed every packet\n");
	return 0;
}
