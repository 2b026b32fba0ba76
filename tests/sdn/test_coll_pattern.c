/* Pairs of the algorithms coll/sdn pins, against hand-derived ones. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_sdn_pattern.h"
#include "../check.h"

static void expect(const struct mrail_sdn_pair *p, size_t n, const char *want)
{
	char got[1024];
	size_t used = 0;

	got[0] = '\0';
	for (size_t i = 0; i < n; i++)
		used += (size_t)snprintf(got + used, sizeof(got) - used, "%s%u-%u",
					 i ? "," : "", p[i].src, p[i].dst);
	if (strcmp(got, want) != 0) {
		fprintf(stderr, "pairs %s, want %s\n", got, want);
		exit(1);
	}
}

int main(void)
{
	struct mrail_sdn_pair p[256];

	/* Binomial tree of ompi_coll_base_topo_build_bmtree: 4 ranks, root 0:
	 * the parent of virtual rank v is v ^ (next_pow2(v) >> 1), so
	 * 0 -> 1, 0 -> 2, 1 -> 3; root 2 of 5 shifts virtual ranks. */
	expect(p, mrail_sdn_pairs_bcast_binomial(4, 0, p), "0-1,0-2,1-3");
	expect(p, mrail_sdn_pairs_bcast_binomial(5, 2, p),
	       "2-3,2-4,3-0,2-1");
	expect(p, mrail_sdn_pairs_bcast_binomial(8, 0, p),
	       "0-1,0-2,1-3,0-4,1-5,2-6,3-7");
	CHECK_EQ(mrail_sdn_pairs_bcast_binomial(1, 0, p), 0);
	expect(p, mrail_sdn_pairs_reduce_linear(4, 1, p), "0-1,2-1,3-1");
	/* Recursive doubling: exchanges at distance 1 then 2. */
	CHECK(mrail_sdn_pairs_allreduce_max(4) >= 8);
	expect(p, mrail_sdn_pairs_allreduce_rdbl(4, p),
	       "0-1,1-0,2-3,3-2,0-2,1-3,2-0,3-1");
	/* 3 ranks: 0 folds into 1; 1 and 2 exchange; 1 unfolds to 0. */
	expect(p, mrail_sdn_pairs_allreduce_rdbl(3, p), "0-1,1-2,2-1,1-0");
	for (unsigned n = 2; n < 40; n++)
		CHECK(mrail_sdn_pairs_allreduce_rdbl(n, p) <=
		      mrail_sdn_pairs_allreduce_max(n));
	printf("test_coll_pattern: ok\n");
	return 0;
}
