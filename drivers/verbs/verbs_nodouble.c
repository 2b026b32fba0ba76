/* The installed library (and builds without the test drivers) have no
 * verbs test double: it lives in libmrail-testdrivers only. */
#include "drivers/verbs/verbs_api.h"
#include "mrail_config.h"

const struct mrail_verbs_api *mrail_verbs_double_api(const char *conf)
{
	(void)conf;
	return NULL;
}

const char *mrail_verbs_double_why(void)
{
	return MRAIL_HAVE_TEST_DRIVERS
		       ? "only the build's test copy of the library "
			 "(libmrail-testdrivers) has, not the installed libmrail"
		       : "this build lacks (meson option test_drivers)";
}
