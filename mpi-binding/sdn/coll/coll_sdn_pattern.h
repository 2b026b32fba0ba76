/*
 * The (sender, receiver) pairs of the Open MPI 4.1 base algorithms the
 * sdn coll component pins (docs/sdn-controller.md "Announcement"), in
 * communicator ranks. Pure functions: the component translates to
 * MPI_COMM_WORLD ranks; tests/sdn/test_coll_pattern.c checks them.
 */
#ifndef MRAIL_SDN_COLL_PATTERN_H
#define MRAIL_SDN_COLL_PATTERN_H

#include <stddef.h>

#include "ctrl_client.h"

/* ompi_coll_base_bcast_intra_binomial (segsize 0): parent -> child over
 * the binomial tree ompi_coll_base_topo_build_bmtree builds; size - 1
 * pairs, by child's virtual rank. */
size_t mrail_sdn_pairs_bcast_binomial(unsigned size, unsigned root,
				      struct mrail_sdn_pair *out);
/* ompi_coll_base_reduce_intra_basic_linear: every other rank -> root. */
size_t mrail_sdn_pairs_reduce_linear(unsigned size, unsigned root,
				     struct mrail_sdn_pair *out);
/* ompi_coll_base_allreduce_intra_recursivedoubling: the fold of the
 * ranks past the largest power of two, the exchange steps, the unfold. At
 * most mrail_sdn_pairs_allreduce_max(size) pairs. */
size_t mrail_sdn_pairs_allreduce_max(unsigned size);
size_t mrail_sdn_pairs_allreduce_rdbl(unsigned size,
				      struct mrail_sdn_pair *out);

#endif
