/* The built-in bootstraps, tried in order. A new one adds one line here. */
#include "bootstrap/bootstrap.h"

#include <stddef.h>

#include "mrail_config.h"

extern const struct mrail_bootstrap_ops mrail_kvs_bootstrap_ops;
extern const struct mrail_bootstrap_ops mrail_pmix_bootstrap_ops;

static const struct mrail_bootstrap_ops *const bootstraps[] = {
#if MRAIL_HAVE_PMIX
	&mrail_pmix_bootstrap_ops, /* first: it wins when both detect */
#endif
	&mrail_kvs_bootstrap_ops,
};

const struct mrail_bootstrap_ops *mrail_bootstrap_detect(void)
{
	for (size_t i = 0; i < sizeof bootstraps / sizeof bootstraps[0]; i++)
		if (bootstraps[i]->detect())
			return bootstraps[i];
	return NULL;
}
