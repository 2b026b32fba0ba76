/*
 * The built-in drivers. A new driver adds one line here.
 *
 * Compiled once per library: the installed libmrail lists the production
 * drivers; the build's test copy, libmrail-testdrivers, is compiled with
 * MRAIL_REGISTRY_TEST_DRIVERS and lists the test drivers (fake) too.
 */
#include "drivers/driver.h"
#include "mrail_config.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#ifndef MRAIL_REGISTRY_TEST_DRIVERS
#define MRAIL_REGISTRY_TEST_DRIVERS 0
#endif

extern const struct mrail_drv_ops mrail_tcp_driver_ops;
extern const struct mrail_drv_ops mrail_shm_driver_ops;
extern const struct mrail_drv_ops mrail_fake_driver_ops;
extern const struct mrail_drv_ops mrail_verbs_driver_ops;
extern const struct mrail_drv_ops mrail_ofi_driver_ops;

static const struct mrail_drv_ops *const drivers[] = {
	&mrail_tcp_driver_ops,
	&mrail_shm_driver_ops,
#if MRAIL_HAVE_LIBFABRIC
	&mrail_ofi_driver_ops,
#endif
#if MRAIL_REGISTRY_TEST_DRIVERS
	&mrail_fake_driver_ops,
#endif
#if MRAIL_HAVE_IBVERBS
	&mrail_verbs_driver_ops,
#endif
};

#define NDRIVERS (sizeof drivers / sizeof drivers[0])

const struct mrail_drv_ops *mrail_driver_find(const char *name)
{
	for (size_t i = 0; i < NDRIVERS; i++)
		if (!strcmp(drivers[i]->name, name))
			return drivers[i];
	return NULL;
}

static char names[256];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void build_names(void)
{
	size_t used = 0;

	for (size_t i = 0; i < NDRIVERS && used < sizeof names; i++)
		used += (size_t)snprintf(names + used, sizeof names - used,
					 "%s%s", i ? ", " : "",
					 drivers[i]->name);
}

const char *mrail_driver_names(void)
{
	pthread_once(&names_once, build_names);
	return names;
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

/* Drivers left out of this build, and why: asking for one says so rather
 * than "unknown driver". */
static const struct {
	const char *name, *why;
	int built;
} optional[] = {
	{"ofi", "libmrail was configured without libfabric (libfabric-dev "
		"missing, or -Dofi=disabled)", MRAIL_HAVE_LIBFABRIC},
	{"verbs", "libmrail was configured without libibverbs "
		  "(libibverbs-dev missing)", MRAIL_HAVE_IBVERBS},
	{"fake", MRAIL_HAVE_TEST_DRIVERS
			 ? "it is a test driver: only the build's test copy of "
			   "the library (libmrail-testdrivers) has it, not "
			   "the installed libmrail"
			 : "test drivers are off (-Dtest_drivers=false)",
	 MRAIL_REGISTRY_TEST_DRIVERS},
};

const char *mrail_driver_absent_why(const char *name)
{
	for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++)
		if (!optional[i].built && !strcmp(optional[i].name, name))
			return optional[i].why;
	return NULL;
}
