#include "mrail.h"
#include "strategies/strategy.h"
#include "util/log.h"
#include "util/size.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mrail_strategy_fastest_idle(const struct mrail_rail_view *rails,
				unsigned n)
{
	int best = -1;
	for (unsigned i = 0; i < n; i++)
		if (rails[i].idle &&
		    (best < 0 || rails[i].bandwidth > rails[best].bandwidth))
			best = (int)i;
	return best;
}

static int earliest(const struct mrail_rail_view *rails, unsigned n,
		    uint64_t bytes, int idle_only)
{
	int best = -1;
	double best_t = 0;
	/* One rail (a same-host peer over shm): nothing to compare, and no
	 * prediction to compute on every small send. */
	if (n == 1)
		return idle_only && !rails[0].idle ? -1 : 0;
	for (unsigned i = 0; i < n; i++) {
		if (idle_only && !rails[i].idle)
			continue;
		double t = rails[i].busy_until +
			   rails[i].predict(&rails[i], bytes);
		if (best < 0 || t < best_t) {
			best = (int)i;
			best_t = t;
		}
	}
	return best;
}

int mrail_strategy_earliest_idle_finish(const struct mrail_rail_view *rails,
					unsigned n, uint64_t bytes)
{
	return earliest(rails, n, bytes, 1);
}

int mrail_strategy_earliest_finish(const struct mrail_rail_view *rails,
				   unsigned n, uint64_t bytes)
{
	return earliest(rails, n, bytes, 0);
}

int mrail_strategy_whole(const struct mrail_rail_view *rails, unsigned n,
			 uint64_t length, struct mrail_chunk *out)
{
	int r = earliest(rails, n, length, 0);
	out[0].rail = (unsigned)(r < 0 ? 0 : r);
	out[0].offset = 0;
	out[0].length = length;
	return 1;
}

static void known_keys(const struct mrail_strategy_opt *opts, unsigned n,
		       char *buf, size_t len)
{
	size_t off = 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s",
					i ? ", " : "", opts[i].key);
	if (n == 0)
		snprintf(buf, len, "none");
}

int mrail_strategy_parse(const char *strategy, const char *args,
			 const struct mrail_strategy_opt *opts, unsigned n)
{
	char *copy = strdup(args ? args : ""), *save = NULL, known[256];
	int rc = MRAIL_OK;

	if (!copy)
		return MRAIL_ERR_NOMEM;
	for (char *kv = strtok_r(copy, ",", &save); kv && rc == MRAIL_OK;
	     kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		const struct mrail_strategy_opt *o = NULL;
		uint64_t v;
		if (eq)
			*eq = '\0';
		for (unsigned i = 0; i < n && !o; i++)
			if (!strcmp(opts[i].key, kv))
				o = &opts[i];
		if (o && eq && !mrail_parse_size(eq + 1, &v) && v >= o->min &&
		    v <= o->max) {
			*o->value = v;
			continue;
		}
		known_keys(opts, n, known, sizeof known);
		if (!o)
			mrail_error("MRAIL_STRATEGY: %s has no option '%s' "
				    "(options: %s)", strategy, kv, known);
		else
			mrail_error("MRAIL_STRATEGY: %s option %s='%s' must be "
				    "an integer in [%llu, %llu] (k/m/g allowed)",
				    strategy, kv, eq ? eq + 1 : "",
				    (unsigned long long)o->min,
				    (unsigned long long)o->max);
		rc = MRAIL_ERR_CONFIG;
	}
	free(copy);
	return rc;
}
