/*
 * A rank of a test job under a PMIx launcher (Open MPI's mpirun), using the
 * "pmix" bootstrap directly (no engine). Modes:
 *   semantics       the bootstrap contract: detection order, identity, put
 *                   visibility, limits, truncation, keys with and without a
 *                   rank suffix, replacement, re-initialisation
 *   fence-timeout   rank 0 never fences; the others must time out
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "mrail.h"
#include "util/clock.h"
#include "util/log.h"

#define CHECK(cond, ...)                                                  \
	do {                                                              \
		if (!(cond)) {                                            \
			fprintf(stderr, "pmix_rank %s:%d: check failed: %s: ",  \
				__FILE__, __LINE__, #cond);               \
			fprintf(stderr, __VA_ARGS__);                     \
			fputc('\n', stderr);                              \
			exit(1);                                          \
		}                                                         \
	} while (0)

extern const struct mrail_bootstrap_ops mrail_pmix_bootstrap_ops;
static const struct mrail_bootstrap_ops *ops = &mrail_pmix_bootstrap_ops;

static uint32_t env_num(const char *name)
{
	const char *v = getenv(name);
	CHECK(v, "%s is not set (not started by Open MPI's mpirun?)", name);
	return (uint32_t)strtoul(v, NULL, 10);
}

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

	CHECK(ops->detect() == 1, "detect() should see the PMIx server");
	/* PMIx comes first: a stale MRAIL_KVS_ADDR must not win. */
	CHECK(mrail_bootstrap_detect() == ops, "registry picked %s",
	      mrail_bootstrap_detect() ? mrail_bootstrap_detect()->name
				       : "nothing");
	int rc = ops->init(&bs);
	CHECK(rc == MRAIL_OK, "init: %d", rc);
	*rank = ops->rank(bs);
	*size = ops->size(bs);
	/* What Open MPI tells its own ranks must agree with PMIx. */
	CHECK(*rank == env_num("OMPI_COMM_WORLD_RANK"), "rank() %u", *rank);
	CHECK(*size == env_num("OMPI_COMM_WORLD_SIZE"), "size() %u", *size);
	CHECK(ops->local_rank(bs) == env_num("OMPI_COMM_WORLD_LOCAL_RANK"),
	      "local_rank() %u", ops->local_rank(bs));
	CHECK(ops->local_size(bs) == env_num("OMPI_COMM_WORLD_LOCAL_SIZE"),
	      "local_size() %u", ops->local_size(bs));
	return bs;
}

static void check_round(struct mrail_bootstrap *bs, uint32_t size,
			unsigned round)
{
	uint8_t want[512], got[512];
	char key[32];

	for (uint32_t q = 0; q < size; q++) {
		size_t wlen = make_value(q, round, want), glen = sizeof got;
		snprintf(key, sizeof key, "mrail.addr.%u", q);
		int rc = ops->get(bs, key, got, &glen);
		CHECK(rc == MRAIL_OK, "round %u get %s: %d", round, key, rc);
		CHECK(glen == wlen && !memcmp(got, want, wlen),
		      "round %u: wrong value for %s (len %zu, want %zu)", round,
		      key, glen, wlen);
	}
}

static void expect_value(struct mrail_bootstrap *bs, const char *key,
			 const char *want)
{
	char got[64];
	size_t len = sizeof got;
	int rc = ops->get(bs, key, got, &len);

	CHECK(rc == MRAIL_OK, "get %s: %d", key, rc);
	CHECK(len == strlen(want) && !memcmp(got, want, len),
	      "get %s: '%.*s', want '%s'", key, (int)len, got, want);
}

static int semantics(void)
{
	static uint8_t big[MRAIL_BOOTSTRAP_VALUE_MAX + 1];
	uint8_t val[512];
	char key[MRAIL_BOOTSTRAP_KEY_MAX + 2];
	uint32_t rank, size;
	size_t len;
	int rc;

	struct mrail_bootstrap *bs = start(&rank, &size);
	CHECK(size >= 2, "run with at least 2 ranks");

	/* Nothing is visible before the first fence, not even our own. */
	snprintf(key, sizeof key, "mrail.addr.%u", rank);
	len = make_value(rank, 0, val);
	CHECK(ops->put(bs, key, val, len) == MRAIL_OK, "put %s", key);
	for (uint32_t q = 0; q < size; q++) {
		snprintf(key, sizeof key, "mrail.addr.%u", q);
		len = sizeof val;
		rc = ops->get(bs, key, val, &len);
		CHECK(rc == MRAIL_ERR_NOT_FOUND, "get %s before fence: %d",
		      key, rc);
	}
	CHECK(ops->put(bs, "empty", NULL, 0) == MRAIL_OK, "empty put");
	/* Published by one rank, under keys that do not name it. */
	if (rank == size - 1) {
		CHECK(ops->put(bs, "only-last", "L", 1) == MRAIL_OK, "put");
		CHECK(ops->put(bs, "note.0", "N", 1) == MRAIL_OK, "put");
		CHECK(ops->put(bs, "far.99999", "F", 1) == MRAIL_OK, "put");
	}
	/* Twice before a fence: the later value wins. */
	CHECK(ops->put(bs, "twice", "first", 5) == MRAIL_OK, "put");
	snprintf(key, sizeof key, "twice.%u", rank);
	CHECK(ops->put(bs, key, "first", 5) == MRAIL_OK, "put");
	CHECK(ops->put(bs, key, "second", 6) == MRAIL_OK, "put");
	if (rank == 0) {
		for (size_t i = 0; i < MRAIL_BOOTSTRAP_VALUE_MAX; i++)
			big[i] = (uint8_t)(i * 31);
		rc = ops->put(bs, "big", big, MRAIL_BOOTSTRAP_VALUE_MAX);
		CHECK(rc == MRAIL_OK, "max-size put: %d", rc);
	}
	/* Limits are checked before PMIx sees anything (quietly: these
	 * errors are the expected outcome). */
	int level = mrail_log_level;
	mrail_log_level = -1;
	rc = ops->put(bs, "too-big", big, MRAIL_BOOTSTRAP_VALUE_MAX + 1);
	CHECK(rc == MRAIL_ERR_INVALID, "oversized put: %d", rc);
	memset(key, 'k', sizeof key - 1);
	key[sizeof key - 1] = '\0';
	CHECK(ops->put(bs, key, "v", 1) == MRAIL_ERR_INVALID, "long key");
	CHECK(ops->put(bs, "", "v", 1) == MRAIL_ERR_INVALID, "empty key");
	CHECK(ops->put(bs, "pmix.mine", "v", 1) == MRAIL_ERR_INVALID,
	      "reserved key");
	len = sizeof val;
	CHECK(ops->get(bs, "pmix.job.size", val, &len) == MRAIL_ERR_INVALID,
	      "reserved key get");
	mrail_log_level = level;

	CHECK(ops->fence(bs) == MRAIL_OK, "fence 1");
	check_round(bs, size, 0);
	len = sizeof val;
	rc = ops->get(bs, "empty", val, &len);
	CHECK(rc == MRAIL_OK && len == 0, "empty get: %d len %zu", rc, len);
	len = sizeof val;
	rc = ops->get(bs, "no-such-key", val, &len);
	CHECK(rc == MRAIL_ERR_NOT_FOUND, "missing key: %d", rc);
	len = sizeof val;
	rc = ops->get(bs, "no-such-key.1", val, &len);
	CHECK(rc == MRAIL_ERR_NOT_FOUND, "missing key at a rank: %d", rc);
	expect_value(bs, "only-last", "L");
	expect_value(bs, "note.0", "N");
	expect_value(bs, "far.99999", "F");
	expect_value(bs, "twice", "first");
	for (uint32_t q = 0; q < size; q++) {
		snprintf(key, sizeof key, "twice.%u", q);
		expect_value(bs, key, "second");
	}
	len = 0; /* every mrail.addr.* value has at least one byte */
	rc = ops->get(bs, "mrail.addr.0", NULL, &len);
	CHECK(rc == MRAIL_ERR_TRUNCATE && len == make_value(0, 0, val),
	      "zero buffer: %d len %zu", rc, len);
	uint8_t two[2] = {0xee, 0xee};
	len = 1;
	rc = ops->get(bs, "big", two, &len);
	CHECK(rc == MRAIL_ERR_TRUNCATE && len == MRAIL_BOOTSTRAP_VALUE_MAX &&
		      two[0] == 0 && two[1] == 0xee,
	      "short buffer: %d len %zu", rc, len);
	static uint8_t big_got[MRAIL_BOOTSTRAP_VALUE_MAX];
	len = sizeof big_got;
	rc = ops->get(bs, "big", big_got, &len);
	CHECK(rc == MRAIL_OK && len == MRAIL_BOOTSTRAP_VALUE_MAX, "big get");
	for (size_t i = 0; i < len; i++)
		CHECK(big_got[i] == (uint8_t)(i * 31), "big byte %zu", i);

	/* Round 2: new values replace old ones only at the fence. */
	snprintf(key, sizeof key, "mrail.addr.%u", rank);
	len = make_value(rank, 1, val);
	CHECK(ops->put(bs, key, val, len) == MRAIL_OK, "put round 1");
	/* (Ranks ahead of us may have published round 1 already: PMIx shows
	 * committed values on the node before the fence completes.) */
	check_round(bs, size, 0);
	CHECK(ops->fence(bs) == MRAIL_OK, "fence 2");
	check_round(bs, size, 1);
	expect_value(bs, "note.0", "N"); /* older rounds stay */
	ops->fini(bs);

	/* A second engine in the same process: same job, same data. */
	bs = start(&rank, &size);
	check_round(bs, size, 1);
	CHECK(ops->fence(bs) == MRAIL_OK, "fence after re-init");
	check_round(bs, size, 1);
	snprintf(key, sizeof key, "mrail.addr.%u", rank);
	len = make_value(rank, 2, val);
	CHECK(ops->put(bs, key, val, len) == MRAIL_OK, "put round 2");
	CHECK(ops->fence(bs) == MRAIL_OK, "fence 4");
	check_round(bs, size, 2);
	ops->fini(bs);
	printf("rank %u of %u: ok\n", rank, size);
	return 0;
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
	CHECK(dt > 0.7 && dt < 2.9, "timed out after %.2f s", dt);
	ops->fini(bs);
	printf("rank %u: fence timed out after %.2f s as asked\n", rank, dt);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	int level = mrail_log_parse_level(getenv("MRAIL_LOG_LEVEL"));
	if (level >= 0)
		mrail_log_level = level;
	if (argc == 2 && !strcmp(argv[1], "semantics"))
		return semantics();
	if (argc == 2 && !strcmp(argv[1], "fence-timeout"))
		return fence_timeout();
	fprintf(stderr, "usage: pmix_rank semantics|fence-timeout\n");
	return 2;
}
