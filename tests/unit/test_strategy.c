/* Built-in strategies: plans cover the payload exactly, options parse. */
#include "../check.h"
#include "mrail.h"
#include "strategies/strategy.h"

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
	puts("test_strategy: ok");
	return 0;
}
