/*
 * The traffic of tests/sdn/test_sdn_bpf.sh (mrail-run -n 2, one rank per
 * network namespace, MRAIL_SDN=bpf): rank 0 sends rank 1 phases of
 * messages whose engine tags are MTL match bits (mtl_mrail_bits.h), so the
 * tagger names them: Bcast (tag -17) and Reduce (-21) on communicator 3,
 * point-to-point (tag 42) on communicator 0, a nonblocking collective
 * (-30), then Bcast and Reduce alternating message by message (a tag
 * change on the socket every message: the fence at work). Rank 1 checks
 * every byte. Prints, per phase, the bytes sent under each tag, for the
 * script to compare with the capture.
 */
#include "../engine/harness.h"
#include "mpi-binding/ompi/mtl_mrail_bits.h"
#include "mpi-binding/sdn/sdn_node.h"

struct phase {
	const char *prim;
	unsigned cid;
	int tag;
	size_t len;
	int count;
};

static const struct phase phases[] = {
	{"bcast", 3, -17, 65536, 30},
	{"reduce", 3, -21, 65536, 30},
	{"p2p", 0, 42, 1 << 20, 8},
	{"nbc", 3, -30, 4096, 20},
};

int main(void)
{
	const char *re = getenv("MRAIL_RANK");
	CHECK(re);
	unsigned me = (unsigned)atoi(re);
	struct mrail_sdn_opts o = {.world_rank = me, .nprocs = 2,
				   .fence_us = -1};
	struct mrail_sdn *sdn;
	char err[512];
	if (mrail_sdn_open(&o, &sdn, err, sizeof err)) {
		fprintf(stderr, "rank %u: %s\n", me, err);
		return 1;
	}
	struct mrail_config cfg;
	mrail_engine_t *e;
	CHECK_RC(mrail_config_init(&cfg));
	cfg.rail_hooks = mrail_sdn_hooks(sdn);
	cfg.rail_hooks_ctx = sdn;
	CHECK_RC(mrail_engine_create(&cfg, &e));
	CHECK_EQ(mrail_size(e), 2);
	uint8_t *buf = malloc(1 << 20);
	CHECK(buf);
	unsigned long long sent[5] = {0};

	/* Phases 0..3, then phase 4: Bcast and Reduce alternating. */
	for (int ph = 0; ph < 5; ph++) {
		int count = ph < 4 ? phases[ph].count : 40;
		for (int i = 0; i < count; i++) {
			const struct phase *p =
				ph < 4 ? &phases[ph] : &phases[i % 2];
			uint64_t bits = mrail_mtl_send_bits(p->cid, (int)me,
							    p->tag);
			uint64_t id = (uint64_t)ph << 32 | (uint64_t)i;
			mrail_request_t *rq;
			if (me == 0) {
				pattern_fill(buf, p->len, id);
				CHECK_RC(mrail_isend(e, 1, buf, p->len, bits,
						     &rq));
				CHECK_RC(mrail_wait(e, rq, NULL));
				sent[ph < 4 ? ph : i % 2] += p->len;
			} else {
				uint64_t rb = mrail_mtl_send_bits(p->cid, 0,
								  p->tag);
				CHECK_RC(mrail_irecv(e, 0, buf, p->len, rb,
						     MRAIL_TAG_MASK_ALL, &rq));
				CHECK_RC(mrail_wait(e, rq, NULL));
				CHECK_EQ(pattern_check(buf, p->len, id),
					 p->len);
			}
		}
	}
	/* Rank 0 must not leave before rank 1 has everything. */
	uint64_t token = 0;
	mrail_request_t *rq;
	if (me == 0)
		CHECK_RC(mrail_irecv(e, 1, &token, 8, 1, MRAIL_TAG_MASK_ALL,
				     &rq));
	else
		CHECK_RC(mrail_isend(e, 0, &token, 8, 1, &rq));
	CHECK_RC(mrail_wait(e, rq, NULL));
	CHECK_RC(mrail_engine_destroy(e));
	struct mrail_sdn_stats st;
	mrail_sdn_get_stats(sdn, &st);
	if (me == 0) {
		for (int ph = 0; ph < 4; ph++)
			printf("sent %s %u %llu\n", phases[ph].prim,
			       phases[ph].cid, sent[ph]);
		printf("sdn retags %llu fences %llu fence_timeouts %llu "
		       "errors %llu\n", (unsigned long long)st.retags,
		       (unsigned long long)st.fences,
		       (unsigned long long)st.fence_timeouts,
		       (unsigned long long)st.errors);
		CHECK_EQ(st.errors, 0);
		CHECK(st.retags >= 4);
	}
	mrail_sdn_close(sdn);
	free(buf);
	return 0;
}
