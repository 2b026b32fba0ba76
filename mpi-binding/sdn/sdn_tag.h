/* SDN tag codec, format version 1 (docs/sdn.md "Tag format").
 *
 * A message's MPI context (primitive, communicator, source and destination
 * rank) packed into 48 bits that travel as the destination MAC of the
 * message's packets, so OpenFlow switches can match on it. The result is
 * always a locally administered unicast MAC: it can never collide with a
 * vendor-assigned address and is never flooded as multicast. */
#ifndef MRAIL_SDN_TAG_H
#define MRAIL_SDN_TAG_H

#include <stdint.h>

#define MRAIL_SDN_TAG_VERSION 1

enum mrail_sdn_prim {          /* 4 bits */
	MRAIL_SDN_P2P = 0, MRAIL_SDN_BARRIER = 1, MRAIL_SDN_BCAST = 2,
	MRAIL_SDN_REDUCE = 3, MRAIL_SDN_ALLREDUCE = 4, MRAIL_SDN_ALLGATHER = 5,
	MRAIL_SDN_ALLTOALL = 6, MRAIL_SDN_GATHER = 7, MRAIL_SDN_SCATTER = 8,
	MRAIL_SDN_REDUCE_SCATTER = 9, MRAIL_SDN_SCAN = 10,
	MRAIL_SDN_COLL_OTHER = 13,   /* a blocking collective tag not listed */
	MRAIL_SDN_NBC = 14,          /* nonblocking collective (tag <= -27) */
};

#define MRAIL_SDN_MAX_COMM 4096u   /* 12 bits */
#define MRAIL_SDN_MAX_RANK 16384u  /* 14 bits */

struct mrail_sdn_ctx {
	unsigned prim, comm, src, dst;
};

/* 0, or -ERANGE naming nothing (caller logs) when a field exceeds its
 * limit, -EINVAL for a bad prim. mac is left untouched on error. */
int mrail_sdn_tag_encode(const struct mrail_sdn_ctx *c, uint8_t mac[6]);
/* 0, or -EINVAL when mac is not a version-1 tag (multicast bit, local bit
 * clear, wrong version, unassigned prim). */
int mrail_sdn_tag_decode(const uint8_t mac[6], struct mrail_sdn_ctx *c);
/* Open MPI 4.1 tag (ompi/mca/coll/base/coll_tags.h) -> prim. */
unsigned mrail_sdn_prim_of_ompi_tag(int tag);
/* "bcast", ... for logs and the controller protocol; "unknown" past the
 * defined values. */
const char *mrail_sdn_prim_name(unsigned prim);

#endif
