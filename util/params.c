#include "util/params.h"

#include <string.h>

int mrail_params_next(const char **pos, char *key, size_t kcap, char *val,
		      size_t vcap)
{
	const char *p = *pos;
	if (!p || !*p)
		return 0;
	size_t len = strcspn(p, ",");
	const char *eq = memchr(p, '=', len);
	*pos = p + len + (p[len] == ',');
	if (!eq || eq == p)
		return -1;
	size_t kl = (size_t)(eq - p), vl = len - kl - 1;
	if (kl >= kcap || vl >= vcap)
		return -1;
	memcpy(key, p, kl);
	key[kl] = '\0';
	memcpy(val, eq + 1, vl);
	val[vl] = '\0';
	return 1;
}
