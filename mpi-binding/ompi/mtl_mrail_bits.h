/*
 * Match bits of the mrail MTL (docs/mpi-ompi.md, "Match bits").
 *
 * One libmrail tag carries the MPI envelope:
 *
 *   63            48 47            32 31                              0
 *   +---------------+---------------+---------------------------------+
 *   | context id 16 | source rank 16|  MPI tag, 32 bits two's compl.  |
 *   +---------------+---------------+---------------------------------+
 *
 * The source is the sender's rank in the communicator (so MPI_ANY_SOURCE
 * receives learn it without a table); the engine peer is also used to
 * narrow a receive with a named source. MPI_ANY_TAG keeps bit 31 in the
 * mask with value 0, so it never matches the negative tags Open MPI's
 * collectives use. Layout version MRAIL_MTL_BITS_VERSION travels in the
 * modex blob, so two builds with different layouts refuse each other.
 *
 * Plain C without Open MPI headers: tests/mpi/test_bits.c checks it alone.
 */
#ifndef MTL_MRAIL_BITS_H
#define MTL_MRAIL_BITS_H

#include <stdint.h>

#define MRAIL_MTL_BITS_VERSION 1
#define MRAIL_MTL_CID_BITS 16
#define MRAIL_MTL_SRC_BITS 16
#define MRAIL_MTL_MAX_CID ((1u << MRAIL_MTL_CID_BITS) - 1)
#define MRAIL_MTL_MAX_RANK ((1u << MRAIL_MTL_SRC_BITS) - 1)
#define MRAIL_MTL_MAX_TAG 0x7fffffff

/* Same values as MPI_ANY_SOURCE / MPI_ANY_TAG in Open MPI's mpi.h (checked
 * by a static assertion where both are visible). */
#define MRAIL_MTL_ANY_SOURCE (-1)
#define MRAIL_MTL_ANY_TAG (-1)

static inline uint64_t mrail_mtl_send_bits(uint32_t cid, int src, int tag)
{
	return ((uint64_t)(cid & MRAIL_MTL_MAX_CID) << 48) |
	       ((uint64_t)((uint32_t)src & MRAIL_MTL_MAX_RANK) << 32) |
	       (uint64_t)(uint32_t)tag;
}

/* Bits and mask for a receive or probe of (src, tag) on context cid. */
static inline void mrail_mtl_recv_bits(uint32_t cid, int src, int tag,
				       uint64_t *bits, uint64_t *mask)
{
	uint64_t b = (uint64_t)(cid & MRAIL_MTL_MAX_CID) << 48;
	uint64_t m = (uint64_t)MRAIL_MTL_MAX_CID << 48;

	if (src != MRAIL_MTL_ANY_SOURCE) {
		b |= (uint64_t)((uint32_t)src & MRAIL_MTL_MAX_RANK) << 32;
		m |= (uint64_t)MRAIL_MTL_MAX_RANK << 32;
	}
	if (tag != MRAIL_MTL_ANY_TAG) {
		b |= (uint64_t)(uint32_t)tag;
		m |= 0xffffffffu;
	} else {
		m |= 0x80000000u; /* sign bit must be 0: user tags only */
	}
	*bits = b;
	*mask = m;
}

static inline int mrail_mtl_bits_source(uint64_t bits)
{
	return (int)((bits >> 32) & MRAIL_MTL_MAX_RANK);
}

static inline int mrail_mtl_bits_tag(uint64_t bits)
{
	return (int)(uint32_t)bits;
}

/* Modex blob: this header, then the engine's mrail_address() blob. */
#define MRAIL_MTL_MODEX_MAGIC 0x4d524d54u /* "MRMT" */
struct mrail_mtl_modex_hdr {
	uint32_t magic;
	uint16_t version; /* MRAIL_MTL_BITS_VERSION */
	uint16_t reserved;
	uint32_t addr_len; /* bytes of address that follow */
};

#endif
