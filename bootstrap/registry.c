/* The built-in bootstraps, tried in order. A new one adds one line here. */
#include "bootstrap/bootstrap.h"

#include <stddef.h>

extern const struct mrail_bootstrap_ops mrail_kvs_bootstrap_ops;

static const struct mrail_bootstrap_ops *const bootstraps[] = {
	&mrail_kvs_bootstrap_ops,
};

const struct mrail_bootstrap_ops *mrail_bootstrap_detect(void)
{
	for (size_t i = 0; i < sizeof bootstraps / sizeof bootstraps[0]; i++)
		if (bootstraps[i]->detect())
			return bootstraps[i];
	return NULL;
}
