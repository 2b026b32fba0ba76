/* Batched gets for every bootstrap: the native call, or one get per key. */
#include "bootstrap/bootstrap.h"

#include "mrail.h"

int mrail_bootstrap_get_many(const struct mrail_bootstrap_ops *ops,
			     struct mrail_bootstrap *bs, uint32_t n,
			     const char *const *keys, void *const *vals,
			     size_t *lens, int *rcs)
{
	if (ops->get_many)
		return ops->get_many(bs, n, keys, vals, lens, rcs);
	for (uint32_t i = 0; i < n; i++) {
		rcs[i] = ops->get(bs, keys[i], vals[i], &lens[i]);
		/* A broken exchange (not a missing key) ends the batch. */
		if (rcs[i] != MRAIL_OK && rcs[i] != MRAIL_ERR_NOT_FOUND &&
		    rcs[i] != MRAIL_ERR_TRUNCATE)
			return rcs[i];
	}
	return MRAIL_OK;
}
