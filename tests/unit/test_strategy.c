/* Built-in strategies: plans cover the payload exactly, options parse. */
#include "../check.h"
#include "mrail.h"
#include "strategies/strategy.h"
#include "sampler/predict.h"

static void check_plan(const struct mrail_chunk *c, int n, unsigned nrails,
		       uint64_t len)
{
	uint64_t off = 0;
	CHECK(n >= 1 && n <= MRAIL_MAX_CHUNKS);
	for (int i = 0; i < n; i++) {
		CHECK(c[i].rail < nrails);
		CHECK(c[i].offset == off);
		CHECK(c[i].length > 0);
		off += c[i].length;
	}
	CHECK(off == len);
}

int main(void)
{
	struct mrail_rail_view v[3] = {
		{0, 1, 0, 1e9, 1e-5, 32768, NULL, 0},
		{1, 0, 1 << 20, 2e9, 1e-5, 32768, NULL, 5e-4},
		{2, 1, 0, 5e8, 1e-5, 32768, NULL, 0},
	};
	struct mrail_chunk c[MRAIL_MAX_CHUNKS];
	void *st;
	const struct mrail_strategy_ops *iso = mrail_strategy_find("iso");
	const struct mrail_strategy_ops *single = mrail_strategy_find("single");
	CHECK(iso && single && !mrail_strategy_find("nope"));

	CHECK(iso->init("chunks=4,min_chunk=1", &st) == MRAIL_OK);
	uint64_t lens[] = {1, 2, 11, 4096, 1000003, 1ULL << 33};
	for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
		int n = iso->rdv_split(st, v, 3, lens[i], c, MRAIL_MAX_CHUNKS);
		check_plan(c, n, 3, lens[i]);
		if (lens[i] >= 12)
			CHECK(n == 12);
	}
	/* Fastest idle rail for eager: rail 0 (rail 1 is busy). */
	CHECK(iso->eager_rail(st, v, 3, 100) == 0);
	iso->fini(st);
	CHECK(iso->init("chunks=0", &st) == MRAIL_ERR_CONFIG);
	CHECK(iso->init("what=1", &st) == MRAIL_ERR_CONFIG);
	CHECK(iso->init("chunks", &st) == MRAIL_ERR_CONFIG);
	CHECK(iso->init("", &st) == MRAIL_OK);
	int n = iso->rdv_split(st, v, 3, 5000, c, MRAIL_MAX_CHUNKS);
	check_plan(c, n, 3, 5000);
	CHECK(n == 1); /* below the default min_chunk: stays whole */
	iso->fini(st);

	CHECK(single->init("", &st) == MRAIL_OK);
	n = single->rdv_split(st, v, 3, 1 << 20, c, MRAIL_MAX_CHUNKS);
	check_plan(c, n, 3, 1 << 20);
	CHECK(n == 1 && c[0].rail == 0); /* rail 1 busy, rail 2 slower */
	single->fini(st);
	CHECK(single->init("x=1", &st) == MRAIL_ERR_CONFIG);
	const struct mrail_strategy_ops *pin = mrail_strategy_find("pin");
	CHECK(pin && pin->init("rail=2", &st) == MRAIL_OK);
	n = pin->rdv_split(st, v, 3, 1 << 20, c, MRAIL_MAX_CHUNKS);
	check_plan(c, n, 3, 1 << 20);
	CHECK(n == 1 && c[0].rail == 2);
	CHECK(pin->eager_rail(st, v, 3, 10) == 2);
	/* Only rails 0 and 1 up: the highest rail not above the pinned. */
	CHECK(pin->eager_rail(st, v, 2, 10) == -1); /* rail 1 is busy */
	pin->fini(st);
	CHECK(pin->init("rail=64", &st) == MRAIL_ERR_CONFIG);
	CHECK(pin->init("rails=1", &st) == MRAIL_ERR_CONFIG);
	/* split: equal finish over a fast and a slow rail, the slow one
	 * busy for a while: more bytes go to the fast, idle rail. */
	const struct mrail_strategy_ops *split = mrail_strategy_find("split");
	struct mrail_rail_model *fast, *slow;
	CHECK(split && split->init("min_chunk=4096", &st) == MRAIL_OK);
	CHECK(mrail_model_from_nominal(125e6, 10e-6, &fast) == MRAIL_OK);
	CHECK(mrail_model_from_nominal(50e6, 10e-6, &slow) == MRAIL_OK);
	struct mrail_rail_view sv[2] = {
		{0, 1, 0, 125e6, 10e-6, 32768, fast, 0},
		{1, 1, 0, 50e6, 10e-6, 32768, slow, 0},
	};
	n = split->rdv_split(st, sv, 2, 64 << 20, c, MRAIL_MAX_CHUNKS);
	check_plan(c, n, 2, 64 << 20);
	CHECK(n == 2);
	/* 125:50 of the bytes, within a percent */
	CHECK(c[0].length > 0.70 * (64 << 20) && c[0].length < 0.73 * (64 << 20));
	sv[1].busy_until = 0.1; /* 5 MB of work queued on the slow rail */
	n = split->rdv_split(st, sv, 2, 64 << 20, c, MRAIL_MAX_CHUNKS);
	check_plan(c, n, 2, 64 << 20);
	CHECK(c[0].length > 0.75 * (64 << 20));
	/* Eager: the idle rail that delivers first. */
	CHECK(split->eager_rail(st, sv, 2, 1000) == 0);
	split->fini(st);
	CHECK(split->init("min_chunk", &st) == MRAIL_ERR_CONFIG);
	mrail_model_free(fast);
	mrail_model_free(slow);
	puts("test_strategy: ok");
	return 0;
}
