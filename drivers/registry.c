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

/* A driver named by the first n bytes of name. */
const struct mrail_drv_ops *mrail_driver_find_n(const char *name, size_t n)
{
	char buf[32];
	if (n >= sizeof buf)
		return NULL;
	memcpy(buf, name, n);
	buf[n] = '\0';
	return mrail_driver_find(buf);
}
