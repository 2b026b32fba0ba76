#include "util/rail_timeout.h"

#include <errno.h>
#include <stdlib.h>

int mrail_rail_timeout_env(double *seconds)
{
	const char *s = getenv("MRAIL_RAIL_TIMEOUT");
	*seconds = MRAIL_RAIL_TIMEOUT_DEFAULT;
	if (!s)
		return 0;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end || errno || !(v > 0) || v > 86400)
		return -1;
	*seconds = v;
	return 0;
}
