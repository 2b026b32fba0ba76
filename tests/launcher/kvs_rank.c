/*
 * A rank of a test job under mrail-run, using the "kvs" bootstrap directly
 * (no engine). Modes:
 *   allgather            put/fence/get all-to-all, plus the KVS semantics
 *   stray                rank 0 first attacks the service, then allgather
 *   die-in-fence R SIG   rank R kills itself with SIG; the others fence
 *   fence-timeout        rank 0 never fences; the others must time out
 *   exchange get|many    the engine's address exchange alone, timed
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "mrail.h"
#include "tests/launcher/kvs_rank.h"
#include "util/clock.h"
#include "util/log.h"

extern const struct mrail_bootstrap_ops mrail_kvs_bootstrap_ops;
static const struct mrail_bootstrap_ops *ops = &mrail_kvs_bootstrap_ops;

/* A value whose length and bytes depend on the rank and the round. */
static size_t make_value(uint32_t rank, unsigned round, uint8_t *buf)
{
	size_t len = 1 + (rank * 37 + round * 11) % 300;
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(rank * 7 + round * 13 + i);
	return len;
}

static struct mrail_bootstrap *start(uint32_t *rank, uint32_t *size)
{
	struct mrail_bootstrap *bs;
	CHECK(ops->detect() == 1, "detect() should see MRAIL_KVS_ADDR");
	int rc = ops->init(&bs);
	CHECK(rc == MRAIL_OK, "init: %d", rc);
	*rank = ops->rank(bs);
	*size = ops->size(bs);
	CHECK(*rank == (uint32_t)atoi(getenv("MRAIL_RANK")), "rank()");
	CHECK(*size == (uint32_t)atoi(getenv("MRAIL_SIZE")), "size()");
	/* Per host with --hosts; else every rank is local. */
	uint32_t lr = ops->local_rank(bs), ls = ops->local_size(bs);
	CHECK(lr == (uint32_t)atoi(getenv("MRAIL_LOCAL_RANK")), "local_rank()");
	CHECK(ls == (uint32_t)atoi(getenv("MRAIL_LOCAL_SIZE")), "local_size()");
	CHECK(lr < ls && ls <= *size, "local rank %u of %u", lr, ls);
	if (!getenv("KVS_RANK_HOSTS")) /* -x KVS_RANK_HOSTS=1 with --hosts */
		CHECK(lr == *rank && ls == *size, "local = global without hosts");
	return bs;
}

static void check_round(struct mrail_bootstrap *bs, uint32_t size,
			unsigned round)
{
	uint8_t want[512], got[512];
	char key[32];

	for (uint32_t q = 0; q < size; q++) {
		size_t wlen = make_value(q, round, want), glen = sizeof got;
		snprintf(key, sizeof key, "addr.%u", q);
		int rc = ops->get(bs, key, got, &glen);
		CHECK(rc == MRAIL_OK, "round %u get %s: %d", round, key, rc);
		CHECK(glen == wlen && !memcmp(got, want, wlen),
		      "round %u: wrong value for %s (len %zu, want %zu)", round,
		      key, glen, wlen);
	}
}

/*
 * get_many of every rank's key, plus 20 copies of the 64 KiB "big" (more
 * than one VALUES reply holds: the client must ask again for the rest),
 * a missing key, the empty value and a buffer too short.
 */
static void check_many(struct mrail_bootstrap *bs, uint32_t size,
		       unsigned round)
{
	enum { NBIG = 20 };
	uint32_t n = size + NBIG + 3;
	const char **keys = calloc(n, sizeof *keys);
	char (*names)[32] = calloc(size, sizeof *names);
	void **vals = calloc(n, sizeof *vals);
	size_t *lens = calloc(n, sizeof *lens);
	int *rcs = calloc(n, sizeof *rcs);
	uint8_t want[512];
	CHECK(keys && names && vals && lens && rcs, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		lens[i] = MRAIL_BOOTSTRAP_VALUE_MAX;
		vals[i] = malloc(lens[i]);
		rcs[i] = 12345;
		CHECK(vals[i], "out of memory");
		if (i < size) {
			snprintf(names[i], sizeof names[i], "addr.%u", i);
			keys[i] = names[i];
		} else {
			keys[i] = "big";
		}
	}
	keys[n - 3] = "no-such-key";
	keys[n - 2] = "empty";
	keys[n - 1] = "addr.0";
	lens[n - 1] = 0;
	int rc = mrail_bootstrap_get_many(ops, bs, n, keys, (void *const *)vals,
					  lens, rcs);
	CHECK(rc == MRAIL_OK, "get_many: %d", rc);
	for (uint32_t q = 0; q < size; q++) {
		size_t wlen = make_value(q, round, want);
		CHECK(rcs[q] == MRAIL_OK && lens[q] == wlen &&
		      !memcmp(vals[q], want, wlen),
		      "get_many round %u: wrong value for rank %u (rc %d)",
		      round, q, rcs[q]);
	}
	for (uint32_t i = size; i < size + NBIG; i++) {
		CHECK(rcs[i] == MRAIL_OK && lens[i] == MRAIL_BOOTSTRAP_VALUE_MAX,
		      "get_many big %u: %d", i, rcs[i]);
		for (size_t b = 0; b < lens[i]; b += 4099)
			CHECK(((uint8_t *)vals[i])[b] == (uint8_t)(b * 31),
			      "get_many big byte %zu", b);
	}
	CHECK(rcs[n - 3] == MRAIL_ERR_NOT_FOUND, "get_many missing: %d",
	      rcs[n - 3]);
	CHECK(rcs[n - 2] == MRAIL_OK && lens[n - 2] == 0, "get_many empty");
	CHECK(rcs[n - 1] == MRAIL_ERR_TRUNCATE &&
	      lens[n - 1] == make_value(0, round, want),
	      "get_many short buffer: %d", rcs[n - 1]);
	for (uint32_t i = 0; i < n; i++)
		free(vals[i]);
	free(keys);
	free(names);
	free(vals);
	free(lens);
	free(rcs);
}

/*
 * The engine's address exchange alone, timed: put a 200-byte blob, fence,
 * read every rank's (one get per key, or one get_many), fence. Rank 0
 * prints the seconds it took.
 */
static int exchange_bench(bool many)
{
	uint32_t rank, size;
	struct mrail_bootstrap *bs = start(&rank, &size);
	uint8_t blob[200];
	char key[32];
	double t0 = mrail_now();
	memset(blob, (int)rank, sizeof blob);
	snprintf(key, sizeof key, "addr.%u", rank);
	CHECK(ops->put(bs, key, blob, sizeof blob) == MRAIL_OK, "put");
	CHECK(ops->fence(bs) == MRAIL_OK, "fence");
	double t1 = mrail_now();
	const char **keys = calloc(size, sizeof *keys);
	char (*names)[32] = calloc(size, sizeof *names);
	void **vals = calloc(size, sizeof *vals);
	size_t *lens = calloc(size, sizeof *lens);
	int *rcs = calloc(size, sizeof *rcs);
	CHECK(keys && names && vals && lens && rcs, "out of memory");
	for (uint32_t q = 0; q < size; q++) {
		snprintf(names[q], sizeof names[q], "addr.%u", q);
		keys[q] = names[q];
		lens[q] = 256;
		vals[q] = malloc(256);
		CHECK(vals[q], "out of memory");
	}
	if (many) {
		CHECK(mrail_bootstrap_get_many(ops, bs, size, keys,
					       (void *const *)vals, lens,
					       rcs) == MRAIL_OK, "get_many");
	} else {
		for (uint32_t q = 0; q < size; q++)
			rcs[q] = ops->get(bs, keys[q], vals[q], &lens[q]);
	}
	for (uint32_t q = 0; q < size; q++) {
		CHECK(rcs[q] == MRAIL_OK && lens[q] == sizeof blob &&
		      ((uint8_t *)vals[q])[0] == (uint8_t)q, "value of %u", q);
		free(vals[q]);
	}
	double t2 = mrail_now();
	CHECK(ops->fence(bs) == MRAIL_OK, "fence");
	double t3 = mrail_now();
	if (rank == 0)
		printf("exchange %s: %u ranks: put+fence %.3f s, gets %.3f s, "
		       "final fence %.3f s, total %.3f s\n",
		       many ? "get_many" : "get", size, t1 - t0, t2 - t1,
		       t3 - t2, t3 - t0);
	ops->fini(bs);
	free(keys);
	free(names);
	free(vals);
	free(lens);
	free(rcs);
	return 0;
}

static int allgather(bool stray)
{
	static uint8_t big[MRAIL_BOOTSTRAP_VALUE_MAX + 1];
	uint8_t val[512];
	char key[MRAIL_BOOTSTRAP_KEY_MAX + 2];
	uint32_t rank, size;
	size_t len;
	int rc;

	if (stray && atoi(getenv("MRAIL_RANK")) == 0)
		stray_connections();
	struct mrail_bootstrap *bs = start(&rank, &size);
	if (stray && rank == 0)
		stray_duplicate_rank(rank);

	/* Nothing is visible before the first fence, not even our own. */
	snprintf(key, sizeof key, "addr.%u", rank);
	len = make_value(rank, 0, val);
	CHECK(ops->put(bs, key, val, len) == MRAIL_OK, "put %s", key);
	len = sizeof val;
	rc = ops->get(bs, key, val, &len);
	CHECK(rc == MRAIL_ERR_NOT_FOUND, "get before fence: %d", rc);
	CHECK(ops->put(bs, "empty", NULL, 0) == MRAIL_OK, "empty put");
	if (rank == 0) {
		for (size_t i = 0; i < MRAIL_BOOTSTRAP_VALUE_MAX; i++)
			big[i] = (uint8_t)(i * 31);
		rc = ops->put(bs, "big", big, MRAIL_BOOTSTRAP_VALUE_MAX);
		CHECK(rc == MRAIL_OK, "max-size put: %d", rc);
	}
	/* Limits are checked before anything is sent (quietly: these
	 * errors are the expected outcome). */
	int level = mrail_log_level;
	mrail_log_level = -1;
	rc = ops->put(bs, "too-big", big, MRAIL_BOOTSTRAP_VALUE_MAX + 1);
	CHECK(rc == MRAIL_ERR_INVALID, "oversized put: %d", rc);
	memset(key, 'k', sizeof key - 1);
	key[sizeof key - 1] = '\0';
	CHECK(ops->put(bs, key, "v", 1) == MRAIL_ERR_INVALID, "long key");
	CHECK(ops->put(bs, "", "v", 1) == MRAIL_ERR_INVALID, "empty key");
	mrail_log_level = level;

	CHECK(ops->fence(bs) == MRAIL_OK, "fence 1");
	check_round(bs, size, 0);
	len = sizeof val;
	rc = ops->get(bs, "empty", val, &len);
	CHECK(rc == MRAIL_OK && len == 0, "empty get: %d len %zu", rc, len);
	len = sizeof val;
	rc = ops->get(bs, "no-such-key", val, &len);
	CHECK(rc == MRAIL_ERR_NOT_FOUND, "missing key: %d", rc);
	len = 0; /* every addr.* value has at least one byte */
	rc = ops->get(bs, "addr.0", val, &len);
	CHECK(rc == MRAIL_ERR_TRUNCATE && len == make_value(0, 0, val),
	      "short buffer: %d len %zu", rc, len);
	static uint8_t big_got[MRAIL_BOOTSTRAP_VALUE_MAX];
	len = sizeof big_got;
	rc = ops->get(bs, "big", big_got, &len);
	CHECK(rc == MRAIL_OK && len == MRAIL_BOOTSTRAP_VALUE_MAX, "big get");
	for (size_t i = 0; i < len; i++)
		CHECK(big_got[i] == (uint8_t)(i * 31), "big byte %zu", i);
	check_many(bs, size, 0);

	/* Round 2: new values replace old ones only at the fence. */
	snprintf(key, sizeof key, "addr.%u", rank);
	len = make_value(rank, 1, val);
	CHECK(ops->put(bs, key, val, len) == MRAIL_OK, "put round 1");
	check_round(bs, size, 0);
	CHECK(ops->fence(bs) == MRAIL_OK, "fence 2");
	check_round(bs, size, 1);
	check_many(bs, size, 1);
	CHECK(ops->fence(bs) == MRAIL_OK, "fence 3");
	ops->fini(bs);

	/* Reconnecting at once (a second engine) finds the same data. */
	bs = start(&rank, &size);
	CHECK(ops->fence(bs) == MRAIL_OK, "fence after reconnecting");
	check_round(bs, size, 1);
	ops->fini(bs);
	printf("rank %u of %u: ok\n", rank, size);
	return 0;
}

static int die_in_fence(int victim, int sig)
{
	uint32_t rank, size;
	struct mrail_bootstrap *bs = start(&rank, &size);

	CHECK(ops->put(bs, "x", "y", 1) == MRAIL_OK, "put");
	if ((int)rank == victim) {
		/* Let the others get into the fence first. */
		usleep(300 * 1000);
		raise(sig);
		pause();
	}
	int rc = ops->fence(bs);
	fprintf(stderr, "rank %u: fence returned %d, it should block\n", rank,
		rc);
	return 1;
}

static int fence_timeout(void)
{
	uint32_t rank, size;
	struct mrail_bootstrap *bs = start(&rank, &size);

	if (rank == 0) {
		sleep(3);
		ops->fini(bs);
		return 0;
	}
	double t0 = mrail_now();
	int rc = ops->fence(bs);
	double dt = mrail_now() - t0;
	CHECK(rc == MRAIL_ERR_TIMEOUT, "fence: %d", rc);
	CHECK(dt > 0.7 && dt < 2.5, "timed out after %.2f s", dt);
	/* The stream is out of step now: later calls must refuse. */
	CHECK(ops->fence(bs) == MRAIL_ERR_BOOTSTRAP, "fence after timeout");
	ops->fini(bs);
	printf("rank %u: fence timed out after %.2f s as asked\n", rank, dt);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && !strcmp(argv[1], "allgather"))
		return allgather(false);
	if (argc == 2 && !strcmp(argv[1], "stray"))
		return allgather(true);
	if (argc == 4 && !strcmp(argv[1], "die-in-fence"))
		return die_in_fence(atoi(argv[2]), atoi(argv[3]));
	if (argc == 2 && !strcmp(argv[1], "fence-timeout"))
		return fence_timeout();
	if (argc == 3 && !strcmp(argv[1], "exchange"))
		return exchange_bench(!strcmp(argv[2], "many"));
	fprintf(stderr, "usage: kvs_rank allgather|stray|die-in-fence R SIG|"
		"fence-timeout\n");
	return 2;
}
