/*
 * mrail_sample_peer(): in-band sampling for engines without a bootstrap
 * (the MPI binding pairs the processes). Two standalone processes sample
 * their rails with each other: afterwards every rail's model comes from
 * the in-band measurement (it was the nominal or default one), messages
 * still flow, and bad arguments are refused.
 */
#include "standalone.h"

static int job(mrail_engine_t *e, uint32_t rank, uint32_t n)
{
	uint32_t other = 1 - rank;
	struct mrail_rail_info ri;
	(void)n;

	CHECK_EQ(mrail_sample_peer(NULL, other, 1), MRAIL_ERR_INVALID);
	CHECK_EQ(mrail_sample_peer(e, 77, 1), MRAIL_ERR_NOT_FOUND);
	CHECK_RC(mrail_rail_info(e, other, 0, &ri));
	CHECK(strcmp(ri.model, "in-band") != 0);
	/* Before any message: the call itself waits for the connection. */
	CHECK_RC(mrail_sample_peer(e, other, rank == 0));
	int nr = mrail_rail_count(e, other);
	CHECK(nr >= 1);
	for (int i = 0; i < nr; i++) {
		CHECK_RC(mrail_rail_info(e, other, i, &ri));
		if (strcmp(ri.model, "in-band")) {
			fprintf(stderr, "rank %u rail %d: model %s after "
				"sampling\n", rank, i, ri.model);
			return 1;
		}
		CHECK(ri.bandwidth > 0 && ri.latency > 0);
	}
	/* The engine is in step and usable: 1 MiB each way, checked. */
	size_t len = 1 << 20;
	uint8_t *out = malloc(len), *in = malloc(len);
	mrail_request_t *r[2];
	mrail_status_t st[2];
	CHECK(out && in);
	pattern_fill(out, len, rank);
	CHECK_RC(mrail_irecv(e, other, in, len, 5, MRAIL_TAG_MASK_ALL, &r[0]));
	CHECK_RC(mrail_isend(e, other, out, len, 5, &r[1]));
	CHECK_RC(mrail_wait_all(e, 2, r, st));
	CHECK_EQ(pattern_check(in, len, other), len);
	free(out);
	free(in);
	return 0;
}

int main(void)
{
	int status[2];
	job_run(2, job, status);
	for (int i = 0; i < 2; i++)
		if (!WIFEXITED(status[i]) || WEXITSTATUS(status[i]) != 0) {
			fprintf(stderr, "rank %d failed (status %#x)\n", i,
				status[i]);
			return 1;
		}
	printf("test_sample_peer: both sides sampled their rails in-band\n");
	return 0;
}
