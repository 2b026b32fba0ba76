/*
 * Who samples rails with whom at start-up, shared by the MPI bindings
 * (the Open MPI MTL and the libfabric provider): every process computes
 * the same list from the same ordered membership, so no message is needed
 * to agree on it, and sessions run in list order on every side.
 */
#ifndef MRAIL_MPI_BINDING_SAMPLE_PAIRS_H
#define MRAIL_MPI_BINDING_SAMPLE_PAIRS_H

#include <stddef.h>
#include <stdint.h>

struct sample_pair {
	uint32_t a, b; /* member indexes, on different nodes */
};

/*
 * node[i]: the node of member i (equal numbers: same host; processes of
 * one host share its NICs and learn nothing from each other). Members are
 * paired greedily in order with the next unpaired member of another node;
 * one left over is served afterwards by the lowest member of another node.
 * Writes at most n pairs to out and returns their count (0 if out of
 * memory or nobody is on another node).
 */
size_t sample_pairs(size_t n, const uint32_t *node, struct sample_pair *out);

#endif
