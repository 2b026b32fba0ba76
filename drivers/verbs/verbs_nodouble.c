/* Builds without the test drivers have no verbs test double. */
#include "drivers/verbs/verbs_api.h"

const struct mrail_verbs_api *mrail_verbs_double_api(const char *conf)
{
	(void)conf;
	return NULL;
}
