/* The built-in drivers. A new driver adds one line here. */
#include "drivers/driver.h"

#include <string.h>

extern const struct mrail_drv_ops mrail_tcp_driver_ops;

static const struct mrail_drv_ops *const drivers[] = {
	&mrail_tcp_driver_ops,
};

const struct mrail_drv_ops *mrail_driver_find(const char *name)
{
	for (size_t i = 0; i < sizeof drivers / sizeof drivers[0]; i++)
		if (!strcmp(drivers[i]->name, name))
			return drivers[i];
	return NULL;
}

const char *mrail_driver_names(void)
{
	return "tcp";
}
