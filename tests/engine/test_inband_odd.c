/*
 * In-band sampling covers every rank, also the last one of a job of odd
 * size (it has no rank r^1): with no profiles, every rail of every rank to
 * every peer ends with an in-band model, not nominal figures. Run with 3
 * and 5 ranks, 2 loopback rails, an empty profile directory.
 */
#include "harness.h"

int main(void)
{
	struct mrail_config cfg;
	mrail_engine_t *e;
	CHECK_RC(mrail_config_init(&cfg));
	CHECK_RC(mrail_engine_create(&cfg, &e));
	uint32_t me = mrail_rank(e), n = mrail_size(e);
	CHECK(n >= 3 && n % 2 == 1);
	for (uint32_t p = 0; p < n; p++) {
		if (p == me)
			continue;
		int rails = mrail_rail_count(e, p);
		CHECK(rails == 2);
		for (int r = 0; r < rails; r++) {
			struct mrail_rail_info info;
			CHECK_RC(mrail_rail_info(e, p, r, &info));
			if (strcmp(info.model, "in-band")) {
				fprintf(stderr, "rank %u: rail %d to rank %u has "
					"model '%s', not in-band\n", me, r, p,
					info.model);
				return 1;
			}
		}
	}
	CHECK_RC(mrail_engine_destroy(e));
	printf("rank %u: every rail in-band\n", me);
	return 0;
}
