/* The match-bits layout alone: fields round-trip, wildcards match what
 * they must and nothing else (negative tags, other contexts). */
#include "mtl_mrail_bits.h"

#include <stdio.h>

static int fails;
#define EXPECT(c)                                                          \
	do {                                                               \
		if (!(c)) {                                                \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__,      \
				__LINE__, #c);                             \
			fails++;                                           \
		}                                                          \
	} while (0)

static int matches(uint64_t sent, uint32_t cid, int src, int tag)
{
	uint64_t b, m;
	mrail_mtl_recv_bits(cid, src, tag, &b, &m);
	return (sent & m) == (b & m);
}

int main(void)
{
	int tags[] = { 0, 1, 77, MRAIL_MTL_MAX_TAG, -10, -26, -27, -1000000,
		       (int)0x80000000 };
	for (unsigned i = 0; i < sizeof tags / sizeof *tags; i++) {
		int t = tags[i];
		uint64_t s = mrail_mtl_send_bits(MRAIL_MTL_MAX_CID, 65535, t);
		EXPECT(mrail_mtl_bits_tag(s) == t);
		EXPECT(mrail_mtl_bits_source(s) == 65535);
		EXPECT(matches(s, MRAIL_MTL_MAX_CID, 65535, t));
		EXPECT(matches(s, MRAIL_MTL_MAX_CID, MRAIL_MTL_ANY_SOURCE, t));
		EXPECT(!matches(s, 3, 65535, t));
		EXPECT(!matches(s, MRAIL_MTL_MAX_CID, 5, t));
		/* ANY_TAG: user (non-negative) tags only. */
		EXPECT(matches(s, MRAIL_MTL_MAX_CID, MRAIL_MTL_ANY_SOURCE,
			       MRAIL_MTL_ANY_TAG) == (t >= 0));
	}
	EXPECT(!matches(mrail_mtl_send_bits(1, 0, 5), 1, 0, 6));
	EXPECT(!matches(mrail_mtl_send_bits(1, 2, -10), 1, 2, -11));
	EXPECT(matches(mrail_mtl_send_bits(0, 0, 0), 0, 0, 0));
	if (!fails)
		printf("match bits OK\n");
	return fails != 0;
}
