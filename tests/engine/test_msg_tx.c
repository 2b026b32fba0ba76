/*
 * The msg_tx hook (the seam of the SDN tagger), mrail-run -n 2: rank 0
 * sends messages of every protocol one at a time (eager, rendezvous split
 * over the rails); for each, on every rail, the hook saw the message's own
 * tag once per record or payload frame the rail's stats say it carried
 * (tx_msgs + tx_chunks), with that rail's rail_up state. Rank 1 only
 * receives meanwhile: answering with RTRs must not report any of them. Then a
 * burst of small messages (aggregated): each report names one of them.
 */
#include "harness.h"

#define MAX_RAILS 64
#define TAG_BASE 0x5d00000000001000ull

struct rec {
	uint64_t calls, wrong;
	uint64_t want;
	uint64_t ours;          /* reports naming a message of this test */
};

static struct rec recs[MAX_RAILS];
static uint64_t stray;          /* reports with a state that is no rail's */

static void *on_up(void *ctx, const struct mrail_rail_conn *c)
{
	(void)ctx;
	CHECK(c->rail >= 0 && c->rail < MAX_RAILS);
	return &recs[c->rail];
}

static void on_down(void *ctx, const struct mrail_rail_conn *c, void *state)
{
	(void)ctx;
	(void)c;
	(void)state;
}

static void on_tx(void *ctx, void *state, uint64_t tag)
{
	CHECK(ctx == (void *)recs);
	struct rec *r = state;
	if (r < recs || r >= recs + MAX_RAILS) {
		stray++;
		return;
	}
	r->calls++;
	if (r->want != tag)
		r->wrong++;
	if ((tag & ~0xfffull) == TAG_BASE)
		r->ours++;
}

static const struct mrail_rail_hooks hooks = {on_up, on_down, on_tx};

static uint64_t carried(mrail_engine_t *e, int rail)
{
	struct mrail_rail_stats s;
	CHECK_RC(mrail_rail_stats(e, 1, rail, &s));
	return s.tx_msgs + s.tx_chunks;
}

int main(void)
{
	static const size_t sizes[] = {8, 1000, 60000, 1 << 20, 4 << 20};
	enum { NSIZES = sizeof(sizes) / sizeof(sizes[0]), BURST = 32 };
	struct mrail_config cfg;
	mrail_engine_t *e;

	CHECK_RC(mrail_config_init(&cfg));
	cfg.rail_hooks = &hooks;
	cfg.rail_hooks_ctx = recs;
	CHECK_RC(mrail_engine_create(&cfg, &e));
	uint32_t me = mrail_rank(e);
	CHECK_EQ(mrail_size(e), 2);
	int nr = mrail_rail_count(e, 1 - me);
	CHECK(nr >= 1 && nr <= MAX_RAILS);
	uint8_t *buf = malloc(sizes[NSIZES - 1]);
	CHECK(buf);

	if (me == 0) {
		for (int i = 0; i < NSIZES; i++) {
			uint64_t tag = TAG_BASE + (uint64_t)i, before[MAX_RAILS];
			for (int k = 0; k < nr; k++) {
				recs[k].calls = recs[k].wrong = 0;
				recs[k].want = tag;
				before[k] = carried(e, k);
			}
			pattern_fill(buf, sizes[i], tag);
			mrail_request_t *rq;
			CHECK_RC(mrail_isend(e, 1, buf, sizes[i], tag, &rq));
			CHECK_RC(mrail_wait(e, rq, NULL));
			uint64_t total = 0;
			for (int k = 0; k < nr; k++) {
				uint64_t moved = carried(e, k) - before[k];
				if (recs[k].calls != moved)
					fprintf(stderr, "size %zu rail %d: %llu "
						"reports, %llu records/chunks\n",
						sizes[i], k,
						(unsigned long long)recs[k].calls,
						(unsigned long long)moved);
				CHECK_EQ(recs[k].calls, moved);
				CHECK_EQ(recs[k].wrong, 0);
				total += recs[k].calls;
			}
			CHECK(total >= 1);
		}
		/* Aggregation: one report per packet, naming its first
		 * message, so between 1 and BURST reports, all ours. */
		mrail_request_t *rq[BURST];
		uint64_t small[BURST], calls = 0;
		for (int k = 0; k < nr; k++) {
			recs[k].calls = recs[k].wrong = 0;
			recs[k].want = TAG_BASE + 100;
		}
		for (int b = 0; b < BURST; b++) {
			small[b] = (uint64_t)b;
			CHECK_RC(mrail_isend(e, 1, &small[b], 8, TAG_BASE + 100,
					     &rq[b]));
		}
		CHECK_RC(mrail_wait_all(e, BURST, rq, NULL));
		for (int k = 0; k < nr; k++) {
			CHECK_EQ(recs[k].wrong, 0);
			calls += recs[k].calls;
		}
		CHECK(calls >= 1 && calls <= BURST);
		CHECK_EQ(stray, 0);
	} else {
		for (int i = 0; i < NSIZES; i++) {
			uint64_t tag = TAG_BASE + (uint64_t)i;
			mrail_request_t *rq;
			CHECK_RC(mrail_irecv(e, 0, buf, sizes[i], tag,
					     MRAIL_TAG_MASK_ALL, &rq));
			CHECK_RC(mrail_wait(e, rq, NULL));
			CHECK_EQ(pattern_check(buf, sizes[i], tag), sizes[i]);
		}
		for (int b = 0; b < BURST; b++) {
			uint64_t v;
			mrail_request_t *rq;
			CHECK_RC(mrail_irecv(e, 0, &v, 8, TAG_BASE + 100,
					     MRAIL_TAG_MASK_ALL, &rq));
			CHECK_RC(mrail_wait(e, rq, NULL));
			CHECK_EQ(v, (uint64_t)b);
		}
		/* Receiving (RTRs, RDMA reads) is not sending a message;
		 * the engine's own wire-up ping-pongs (in-band sampling)
		 * are, under their reserved tag. */
		for (int k = 0; k < nr; k++)
			CHECK_EQ(recs[k].ours, 0);
		CHECK_EQ(stray, 0);
	}
	free(buf);
	CHECK_RC(mrail_engine_destroy(e));
	printf("test_msg_tx: rank %u ok (%d rails)\n", me, nr);
	return 0;
}
