/* Pairs of the pinned base algorithms (coll_sdn_pattern.h). */
#include "coll_sdn_pattern.h"

static unsigned top_bit(unsigned v)
{
	unsigned m = 1;

	while (m <= v / 2)
		m <<= 1;
	return m;
}

size_t mrail_sdn_pairs_bcast_binomial(unsigned size, unsigned root,
				      struct mrail_sdn_pair *out)
{
	size_t n = 0;

	/* Virtual rank v's parent is v without its highest set bit. */
	for (unsigned v = 1; v < size; v++) {
		unsigned pv = v ^ top_bit(v);
		out[n].src = (pv + root) % size;
		out[n].dst = (v + root) % size;
		n++;
	}
	return n;
}

size_t mrail_sdn_pairs_reduce_linear(unsigned size, unsigned root,
				     struct mrail_sdn_pair *out)
{
	size_t n = 0;

	for (unsigned r = 0; r < size; r++)
		if (r != root)
			out[n++] = (struct mrail_sdn_pair){ r, root };
	return n;
}

size_t mrail_sdn_pairs_allreduce_max(unsigned size)
{
	size_t steps = 0;

	for (unsigned d = 1; d < size; d <<= 1)
		steps++;
	return (size_t)size * steps + 2 * (size_t)size;
}

size_t mrail_sdn_pairs_allreduce_rdbl(unsigned size,
				      struct mrail_sdn_pair *out)
{
	unsigned adj = size ? top_bit(size) : 0, extra = size - adj;
	size_t n = 0;

	if (size < 2)
		return 0;
	/* Fold: even ranks below 2*extra hand their data to the odd one. */
	for (unsigned r = 0; r < 2 * extra; r += 2)
		out[n++] = (struct mrail_sdn_pair){ r, r + 1 };
	for (unsigned dist = 1; dist < adj; dist <<= 1)
		for (unsigned nr = 0; nr < adj; nr++) {
			unsigned nremote = nr ^ dist;
			unsigned me = nr < extra ? nr * 2 + 1 : nr + extra;
			unsigned remote = nremote < extra ? nremote * 2 + 1
							  : nremote + extra;
			out[n++] = (struct mrail_sdn_pair){ me, remote };
		}
	for (unsigned r = 0; r < 2 * extra; r += 2)
		out[n++] = (struct mrail_sdn_pair){ r + 1, r };
	return n;
}
