/*
 * Built against the installed library and run with the example strategy
 * plugin (tests/plugins/example_strategy.c, built out of tree against the
 * installed <mrail/strategy.h>) on 2 loopback rails: a 1 MiB message each
 * way must arrive intact, its rendezvous chunks only on the last rail
 * (where the example puts every payload).
 */
#include <mrail.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEN (1u << 20)

static int fail(const char *what, int rc)
{
	fprintf(stderr, "plugin_app: %s: %s\n", what, mrail_strerror(rc));
	return 1;
}

static int swap(mrail_engine_t *e, unsigned peer, void *out, void *in,
		size_t len, uint64_t tag)
{
	mrail_request_t *r[2];
	mrail_status_t st[2];
	int rc = mrail_irecv(e, peer, in, len, tag, MRAIL_TAG_MASK_ALL, &r[0]);
	if (!rc)
		rc = mrail_isend(e, peer, out, len, tag, &r[1]);
	if (!rc)
		rc = mrail_wait_all(e, 2, r, st);
	return rc;
}

int main(void)
{
	mrail_engine_t *e;
	int rc = mrail_engine_create(NULL, &e);
	if (rc)
		return fail("create", rc);
	unsigned me = mrail_rank(e), peer = 1 - me;
	if (mrail_size(e) != 2 || mrail_rail_count(e, peer) != 2) {
		fprintf(stderr, "plugin_app: needs 2 ranks and 2 rails\n");
		return 1;
	}
	unsigned char *out = malloc(LEN), *in = malloc(LEN);
	if (!out || !in)
		return 1;
	for (size_t i = 0; i < LEN; i++)
		out[i] = (unsigned char)(i * 7 + me);
	/* A small exchange first: both engines are up past wire-up. */
	if ((rc = swap(e, peer, out, in, 16, 1)))
		return fail("small exchange", rc);
	struct mrail_rail_stats before[2], after[2];
	for (int r = 0; r < 2; r++)
		if ((rc = mrail_rail_stats(e, peer, r, &before[r])))
			return fail("stats", rc);
	if ((rc = swap(e, peer, out, in, LEN, 2)))
		return fail("1 MiB exchange", rc);
	for (size_t i = 0; i < LEN; i++)
		if (in[i] != (unsigned char)(i * 7 + peer)) {
			fprintf(stderr, "plugin_app: byte %zu differs\n", i);
			return 1;
		}
	for (int r = 0; r < 2; r++)
		if ((rc = mrail_rail_stats(e, peer, r, &after[r])))
			return fail("stats", rc);
	uint64_t c0 = after[0].tx_chunks - before[0].tx_chunks +
		      after[0].rx_chunks - before[0].rx_chunks;
	uint64_t c1 = after[1].tx_chunks - before[1].tx_chunks +
		      after[1].rx_chunks - before[1].rx_chunks;
	if (c0 != 0 || c1 < 2) {
		fprintf(stderr, "plugin_app: chunks on rail 0: %llu, on rail 1: "
			"%llu (want 0 and >= 2)\n", (unsigned long long)c0,
			(unsigned long long)c1);
		return 1;
	}
	/* Nothing outstanding: a last small exchange before leaving. */
	if ((rc = swap(e, peer, out, in, 16, 3)))
		return fail("last exchange", rc);
	free(out);
	free(in);
	mrail_engine_destroy(e);
	if (me == 0)
		printf("plugin_app: 1 MiB each way, chunks only on rail 1\n");
	return 0;
}
