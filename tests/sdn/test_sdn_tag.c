/* SDN tag codec (docs/sdn.md): round trip at every field's limits, errors
 * past them, the MAC class bits, and the Open MPI tag -> primitive map. */
#include <errno.h>
#include <string.h>

#include "../check.h"
#include "mpi-binding/sdn/sdn_tag.h"

static const unsigned prims[] = {
	MRAIL_SDN_P2P, MRAIL_SDN_BARRIER, MRAIL_SDN_BCAST, MRAIL_SDN_REDUCE,
	MRAIL_SDN_ALLREDUCE, MRAIL_SDN_ALLGATHER, MRAIL_SDN_ALLTOALL,
	MRAIL_SDN_GATHER, MRAIL_SDN_SCATTER, MRAIL_SDN_REDUCE_SCATTER,
	MRAIL_SDN_SCAN, MRAIL_SDN_COLL_OTHER, MRAIL_SDN_NBC,
};

static void round_trip(unsigned prim, unsigned comm, unsigned src,
		       unsigned dst)
{
	struct mrail_sdn_ctx in = { prim, comm, src, dst }, out;
	uint8_t mac[6];
	CHECK_EQ(mrail_sdn_tag_encode(&in, mac), 0);
	CHECK((mac[0] & 0x01) == 0);            /* never multicast */
	CHECK((mac[0] & 0x02) == 0x02);         /* locally administered */
	CHECK_EQ(mac[0] >> 6, MRAIL_SDN_TAG_VERSION);
	memset(&out, 0xff, sizeof(out));
	CHECK_EQ(mrail_sdn_tag_decode(mac, &out), 0);
	CHECK_EQ(out.prim, prim);
	CHECK_EQ(out.comm, comm);
	CHECK_EQ(out.src, src);
	CHECK_EQ(out.dst, dst);
}

static void layout(void)
{
	/* The layout fixed in docs/sdn.md, byte for byte. */
	struct mrail_sdn_ctx c = { MRAIL_SDN_BCAST, 0xabc, 0x1234, 0x2bcd };
	uint8_t mac[6];
	CHECK_EQ(mrail_sdn_tag_encode(&c, mac), 0);
	/* 01 0010 1 0 = 0x4a; then abc | 01 0010 0011 0100 | 10 1011 1100 1101 */
	const uint8_t want[6] = { 0x4a, 0xab, 0xc4, 0x8d, 0x2b, 0xcd };
	CHECK(memcmp(mac, want, 6) == 0);
}

static void limits(void)
{
	const unsigned cv[] = { 0, 1, 2047, MRAIL_SDN_MAX_COMM - 1 };
	const unsigned rv[] = { 0, 1, 8191, 8192, MRAIL_SDN_MAX_RANK - 1 };
	for (size_t p = 0; p < sizeof(prims) / sizeof(prims[0]); p++)
		for (size_t c = 0; c < 4; c++)
			for (size_t s = 0; s < 5; s++)
				for (size_t d = 0; d < 5; d++)
					round_trip(prims[p], cv[c], rv[s],
						   rv[d]);

	uint8_t mac[6] = { 1, 2, 3, 4, 5, 6 }, keep[6];
	memcpy(keep, mac, 6);
	struct mrail_sdn_ctx c = { MRAIL_SDN_P2P, MRAIL_SDN_MAX_COMM, 0, 0 };
	CHECK_EQ(mrail_sdn_tag_encode(&c, mac), -ERANGE);
	c.comm = 0;
	c.src = MRAIL_SDN_MAX_RANK;
	CHECK_EQ(mrail_sdn_tag_encode(&c, mac), -ERANGE);
	c.src = 0;
	c.dst = MRAIL_SDN_MAX_RANK;
	CHECK_EQ(mrail_sdn_tag_encode(&c, mac), -ERANGE);
	c.dst = 0xffffffffu;
	CHECK_EQ(mrail_sdn_tag_encode(&c, mac), -ERANGE);
	c.dst = 0;
	for (unsigned p = 11; p < 40; p++) {
		if (p == MRAIL_SDN_COLL_OTHER || p == MRAIL_SDN_NBC)
			continue;
		c.prim = p;
		CHECK_EQ(mrail_sdn_tag_encode(&c, mac), -EINVAL);
	}
	CHECK(memcmp(mac, keep, 6) == 0);       /* untouched on error */
}

static void bad_macs(void)
{
	struct mrail_sdn_ctx out;
	uint8_t good[6], m[6];
	struct mrail_sdn_ctx c = { MRAIL_SDN_REDUCE, 5, 6, 7 };
	CHECK_EQ(mrail_sdn_tag_encode(&c, good), 0);

	memcpy(m, good, 6); m[0] |= 0x01;       /* multicast */
	CHECK_EQ(mrail_sdn_tag_decode(m, &out), -EINVAL);
	memcpy(m, good, 6); m[0] &= ~0x02;      /* vendor (universal) MAC */
	CHECK_EQ(mrail_sdn_tag_decode(m, &out), -EINVAL);
	for (unsigned v = 0; v < 4; v++) {      /* other versions */
		if (v == MRAIL_SDN_TAG_VERSION)
			continue;
		memcpy(m, good, 6);
		m[0] = (uint8_t)((m[0] & 0x3f) | (v << 6));
		CHECK_EQ(mrail_sdn_tag_decode(m, &out), -EINVAL);
	}
	memcpy(m, good, 6);                     /* unassigned prim 15 */
	m[0] |= 0x3c;
	CHECK_EQ(mrail_sdn_tag_decode(m, &out), -EINVAL);
	const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	CHECK_EQ(mrail_sdn_tag_decode(bcast, &out), -EINVAL);
	const uint8_t vendor[6] = { 0x00, 0x1b, 0x21, 0x0a, 0x0b, 0x0c };
	CHECK_EQ(mrail_sdn_tag_decode(vendor, &out), -EINVAL);
	/* Every one of the 256 first octets: decode accepts exactly the
	 * version-1 unicast local ones with an assigned prim. */
	unsigned ok = 0;
	for (unsigned o = 0; o < 256; o++) {
		memcpy(m, good, 6);
		m[0] = (uint8_t)o;
		if (mrail_sdn_tag_decode(m, &out) == 0) {
			CHECK((o & 3) == 2 && (o >> 6) == 1);
			ok++;
		}
	}
	CHECK_EQ(ok, sizeof(prims) / sizeof(prims[0]));
}

static void ompi_tags(void)
{
	const struct { int tag; unsigned prim; } map[] = {
		{ 0, MRAIL_SDN_P2P }, { 7, MRAIL_SDN_P2P },
		{ 0x7fffffff, MRAIL_SDN_P2P },
		{ -1, MRAIL_SDN_COLL_OTHER }, { -9, MRAIL_SDN_COLL_OTHER },
		{ -10, MRAIL_SDN_ALLGATHER }, { -11, MRAIL_SDN_ALLGATHER },
		{ -12, MRAIL_SDN_ALLREDUCE }, { -13, MRAIL_SDN_ALLTOALL },
		{ -14, MRAIL_SDN_ALLTOALL }, { -15, MRAIL_SDN_ALLTOALL },
		{ -16, MRAIL_SDN_BARRIER }, { -17, MRAIL_SDN_BCAST },
		{ -18, MRAIL_SDN_SCAN }, { -19, MRAIL_SDN_GATHER },
		{ -20, MRAIL_SDN_GATHER }, { -21, MRAIL_SDN_REDUCE },
		{ -22, MRAIL_SDN_REDUCE_SCATTER },
		{ -23, MRAIL_SDN_REDUCE_SCATTER }, { -24, MRAIL_SDN_SCAN },
		{ -25, MRAIL_SDN_SCATTER }, { -26, MRAIL_SDN_SCATTER },
		{ -27, MRAIL_SDN_NBC }, { -1000, MRAIL_SDN_NBC },
		{ -0x7fffffff - 1, MRAIL_SDN_NBC },
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (mrail_sdn_prim_of_ompi_tag(map[i].tag) != map[i].prim) {
			fprintf(stderr, "tag %d -> %u, want %u\n", map[i].tag,
				mrail_sdn_prim_of_ompi_tag(map[i].tag),
				map[i].prim);
			exit(1);
		}
	}
}

static void names(void)
{
	CHECK(strcmp(mrail_sdn_prim_name(MRAIL_SDN_BCAST), "bcast") == 0);
	CHECK(strcmp(mrail_sdn_prim_name(MRAIL_SDN_ALLREDUCE), "allreduce") == 0);
	CHECK(strcmp(mrail_sdn_prim_name(MRAIL_SDN_NBC), "nbc") == 0);
	CHECK(strcmp(mrail_sdn_prim_name(11), "unknown") == 0);
	CHECK(strcmp(mrail_sdn_prim_name(1000), "unknown") == 0);
	for (size_t p = 0; p < sizeof(prims) / sizeof(prims[0]); p++)
		CHECK(strcmp(mrail_sdn_prim_name(prims[p]), "unknown") != 0);
}

int main(void)
{
	layout();
	limits();
	bad_macs();
	ompi_tags();
	names();
	return 0;
}
