/* SDN tag codec, format version 1: layout and limits in docs/sdn.md. */
#include "sdn_tag.h"

#include <errno.h>
#include <stddef.h>

#define OCTET0_LOCAL 0x02u     /* IEEE 802 U/L bit: locally administered */
#define OCTET0_GROUP 0x01u     /* I/G bit: multicast */

/* Slots 11, 12 and 15 are unassigned in version 1: decode rejects them so a
 * later version can give them a meaning without old readers guessing. */
static const char *const prim_names[16] = {
	[MRAIL_SDN_P2P] = "p2p",
	[MRAIL_SDN_BARRIER] = "barrier",
	[MRAIL_SDN_BCAST] = "bcast",
	[MRAIL_SDN_REDUCE] = "reduce",
	[MRAIL_SDN_ALLREDUCE] = "allreduce",
	[MRAIL_SDN_ALLGATHER] = "allgather",
	[MRAIL_SDN_ALLTOALL] = "alltoall",
	[MRAIL_SDN_GATHER] = "gather",
	[MRAIL_SDN_SCATTER] = "scatter",
	[MRAIL_SDN_REDUCE_SCATTER] = "reduce_scatter",
	[MRAIL_SDN_SCAN] = "scan",
	[MRAIL_SDN_COLL_OTHER] = "coll_other",
	[MRAIL_SDN_NBC] = "nbc",
};

static int prim_valid(unsigned prim)
{
	return prim < 16 && prim_names[prim] != NULL;
}

int mrail_sdn_tag_encode(const struct mrail_sdn_ctx *c, uint8_t mac[6])
{
	if (!prim_valid(c->prim))
		return -EINVAL;
	if (c->comm >= MRAIL_SDN_MAX_COMM || c->src >= MRAIL_SDN_MAX_RANK ||
	    c->dst >= MRAIL_SDN_MAX_RANK)
		return -ERANGE;
	uint64_t low = ((uint64_t)c->comm << 28) | ((uint64_t)c->src << 14) |
		       c->dst;
	mac[0] = (uint8_t)((MRAIL_SDN_TAG_VERSION << 6) | (c->prim << 2) |
			   OCTET0_LOCAL);
	for (int i = 1; i < 6; i++)
		mac[i] = (uint8_t)(low >> (8 * (5 - i)));
	return 0;
}

int mrail_sdn_tag_decode(const uint8_t mac[6], struct mrail_sdn_ctx *c)
{
	if ((mac[0] & OCTET0_GROUP) || !(mac[0] & OCTET0_LOCAL) ||
	    (mac[0] >> 6) != MRAIL_SDN_TAG_VERSION)
		return -EINVAL;
	unsigned prim = (mac[0] >> 2) & 0xfu;
	if (!prim_valid(prim))
		return -EINVAL;
	uint64_t low = 0;
	for (int i = 1; i < 6; i++)
		low = (low << 8) | mac[i];
	c->prim = prim;
	c->comm = (unsigned)(low >> 28) & 0xfffu;
	c->src = (unsigned)(low >> 14) & 0x3fffu;
	c->dst = (unsigned)low & 0x3fffu;
	return 0;
}

unsigned mrail_sdn_prim_of_ompi_tag(int tag)
{
	if (tag >= 0)
		return MRAIL_SDN_P2P;
	if (tag <= -27)
		return MRAIL_SDN_NBC;
	switch (tag) {
	case -10: case -11: return MRAIL_SDN_ALLGATHER;
	case -12: return MRAIL_SDN_ALLREDUCE;
	case -13: case -14: case -15: return MRAIL_SDN_ALLTOALL;
	case -16: return MRAIL_SDN_BARRIER;
	case -17: return MRAIL_SDN_BCAST;
	case -18: case -24: return MRAIL_SDN_SCAN;
	case -19: case -20: return MRAIL_SDN_GATHER;
	case -21: return MRAIL_SDN_REDUCE;
	case -22: case -23: return MRAIL_SDN_REDUCE_SCATTER;
	case -25: case -26: return MRAIL_SDN_SCATTER;
	default: return MRAIL_SDN_COLL_OTHER;
	}
}

const char *mrail_sdn_prim_name(unsigned prim)
{
	return prim_valid(prim) ? prim_names[prim] : "unknown";
}
