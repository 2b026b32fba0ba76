/*
 * A QP error completion in the middle of a rendezvous (mrail-run -n 3 on
 * the verbs test double, MRAIL_VERBS_DOUBLE=fail_after=..,fail_min=..,
 * fail_rank=R): the double fails one large RDMA work request of rank R
 * while rank 0 sends 64 MiB to rank 1. That rail goes down for the gate
 * (docs/failover.md): the message still arrives intact over the other
 * rail, both ends count the failure, the exchanges with rank 2 carry
 * every byte, and 0 -> 1 keeps working.
 */
#include "../engine/harness.h"

#include <string.h>

#define BIG (64u << 20)
#define MID (16u << 20)
#define TAG_BIG 1
#define TAG_MID 2

static void exchange_with(mrail_engine_t *e, uint32_t peer, uint8_t *out,
			  uint8_t *in, mrail_request_t **r)
{
	CHECK_RC(mrail_irecv(e, peer, in, MID, TAG_MID, MRAIL_TAG_MASK_ALL,
			     &r[0]));
	CHECK_RC(mrail_isend(e, peer, out, MID, TAG_MID, &r[1]));
}

int main(void)
{
	mrail_engine_t *e = test_engine();
	uint32_t me = mrail_rank(e);
	uint8_t *big = malloc(BIG), *out = malloc(MID), *in[2];
	mrail_request_t *r[4];
	mrail_status_t st[4];

	in[0] = malloc(MID);
	in[1] = malloc(MID);
	CHECK(mrail_size(e) == 3 && big && out && in[0] && in[1]);
	pattern_fill(out, MID, 100 + me);
	test_barrier(e); /* every gate up before the fault */

	if (me == 0 || me == 1) {
		if (me == 0) {
			pattern_fill(big, BIG, 7);
			CHECK_RC(mrail_isend(e, 1, big, BIG, TAG_BIG, &r[0]));
		} else {
			CHECK_RC(mrail_irecv(e, 0, big, BIG, TAG_BIG,
					     MRAIL_TAG_MASK_ALL, &r[0]));
		}
		mrail_wait(e, r[0], &st[0]);
		fprintf(stderr, "rank %u: 64 MiB %s rank %u: %s\n", me,
			me == 0 ? "to" : "from", 1 - me,
			mrail_strerror(st[0].error));
		CHECK_EQ(st[0].error, MRAIL_OK);
		CHECK_EQ(st[0].length, BIG);
		if (me == 1)
			CHECK_EQ(pattern_check(big, BIG, 7), BIG);
		uint64_t failures = 0;
		for (int i = 0; i < mrail_rail_count(e, 1 - me); i++) {
			struct mrail_rail_stats rs;
			CHECK_RC(mrail_rail_stats(e, 1 - me, i, &rs));
			failures += rs.failures;
		}
		CHECK(failures >= 1);
		/* The other peer is untouched. */
		exchange_with(e, 2, out, in[0], r);
		CHECK_RC(mrail_wait_all(e, 2, r, st));
		CHECK_EQ(pattern_check(in[0], MID, 102), MID);
		/* The gate lives on. */
		if (me == 0)
			CHECK_RC(mrail_isend(e, 1, out, 8, TAG_MID, &r[0]));
		else
			CHECK_RC(mrail_irecv(e, 0, in[1], 8, TAG_MID,
					     MRAIL_TAG_MASK_ALL, &r[0]));
		CHECK_RC(mrail_wait(e, r[0], &st[0]));
		if (me == 1)
			CHECK_EQ(pattern_check(in[1], 8, 100), 8);
	} else {
		exchange_with(e, 0, out, in[0], r);
		exchange_with(e, 1, out, in[1], r + 2);
		CHECK_RC(mrail_wait_all(e, 4, r, st));
		CHECK_EQ(pattern_check(in[0], MID, 100), MID);
		CHECK_EQ(pattern_check(in[1], MID, 101), MID);
	}
	fprintf(stderr, "test_verbs_fault: rank %u ok\n", me);
	mrail_engine_destroy(e);
	free(big);
	free(out);
	free(in[0]);
	free(in[1]);
	return 0;
}
