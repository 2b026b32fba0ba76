/*
 * The assignment problem of address selection (Peiselt, section 3.3.2-3.3.4):
 * in a bipartite graph given as an na x nb matrix of integer edge weights
 * (0 = no edge), find the matching of maximum cardinality and, among
 * those, of maximum total weight.
 *
 * Ties are broken by lowest indexes: among the optimal matchings the one
 * whose partner vector (match[0], match[1], ...) is lexicographically
 * smallest, an unmatched row counting as larger than every column. Both
 * algorithms below return exactly that matching, so which one runs never
 * changes the rails.
 */
#ifndef MRAIL_RAILS_ASSIGN_H
#define MRAIL_RAILS_ASSIGN_H

#include "rails/netif.h"

#define MRAIL_ASSIGN_MAX MRAIL_NETIF_MAX
/* Largest edge weight accepted (the composite weights of the Hungarian
 * method stay far from integer limits with it). */
#define MRAIL_ASSIGN_WEIGHT_MAX 1000

enum mrail_assign_algo {
	MRAIL_ASSIGN_AUTO,      /* brute force up to 8 per side, else Hungarian */
	MRAIL_ASSIGN_BRUTE,     /* the thesis's enumeration: exponential */
	MRAIL_ASSIGN_HUNGARIAN, /* Kuhn-Munkres, O(n^3), then O(n^4) tie-break */
};

/* Up to this many vertices per side, AUTO enumerates (thesis 3.3.3). */
#define MRAIL_ASSIGN_BRUTE_MAX 8

/*
 * w[i * nb + j] >= 0 is the weight of edge (i, j). Fills match[0..na) with
 * the partner column of each row or -1, and returns the cardinality, or
 * MRAIL_ERR_INVALID (sizes above MRAIL_ASSIGN_MAX, weights out of range).
 */
int mrail_assign(const int *w, unsigned na, unsigned nb, int algo,
		 int *match);

#endif
