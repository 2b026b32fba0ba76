/* Sampling sessions from the membership (sample_pairs.h). */
#include "mpi-binding/common/sample_pairs.h"

#include <stdlib.h>

size_t sample_pairs(size_t n, const uint32_t *node, struct sample_pair *out)
{
	size_t ns = 0;
	int64_t *mate = malloc(n * sizeof *mate);
	if (!mate)
		return 0;
	for (size_t r = 0; r < n; r++)
		mate[r] = -1;
	for (size_t r = 0; r < n; r++)
		for (size_t q = r + 1; mate[r] < 0 && q < n; q++)
			if (mate[q] < 0 && node[q] != node[r]) {
				mate[r] = (int64_t)q;
				mate[q] = (int64_t)r;
				out[ns++] = (struct sample_pair){ (uint32_t)r,
								  (uint32_t)q };
			}
	/* Left over: after the pairs, in the same order on every side. */
	for (size_t r = 0; r < n; r++)
		for (size_t q = 0; mate[r] < 0 && q < n; q++)
			if (node[q] != node[r]) {
				mate[r] = (int64_t)q;
				out[ns++] = (struct sample_pair){ (uint32_t)q,
								  (uint32_t)r };
			}
	free(mate);
	return ns;
}
