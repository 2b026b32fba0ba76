/*
 * Which cores this rank's workers may use. hwloc does not say which cores
 * are idle: we decide from the binding and the local rank count that the
 * launcher gives (MRAIL_LOCAL_RANK / MRAIL_LOCAL_SIZE), not from load.
 */
#include "libmrail/offload/offload.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

static int bad(const char *s, const char *why)
{
	mrail_error("invalid MRAIL_OFFLOAD_CORES='%s': %s (expected auto, "
		    "none, or core indices like 2,3 or 4-7)", s, why);
	return MRAIL_ERR_CONFIG;
}

static int number(const char **p, unsigned long *v)
{
	char *end;
	if (**p < '0' || **p > '9')
		return -1;
	*v = strtoul(*p, &end, 10);
	*p = end;
	return 0;
}

int offload_parse_cores(const char *s, unsigned ncores, uint64_t *mask)
{
	if (!s || !strcmp(s, "auto")) {
		*mask = OFFLOAD_CORES_AUTO;
		return MRAIL_OK;
	}
	if (!strcmp(s, "none")) {
		*mask = 0;
		return MRAIL_OK;
	}
	uint64_t m = 0;
	const char *p = s;
	for (;;) {
		unsigned long a, b;
		if (number(&p, &a))
			return bad(s, "a core index must be a decimal number");
		b = a;
		if (*p == '-') {
			p++;
			if (number(&p, &b))
				return bad(s, "a range needs an upper bound");
			if (b < a)
				return bad(s, "a range goes downwards");
		}
		if (b >= ncores || b >= 64) {
			char why[80];
			snprintf(why, sizeof why, "core %lu does not exist "
				 "(this machine has %u cores)", b, ncores);
			return bad(s, why);
		}
		for (unsigned long i = a; i <= b; i++)
			m |= (uint64_t)1 << i;
		if (*p == 0)
			break;
		if (*p != ',')
			return bad(s, "cores are separated by commas");
		p++;
	}
	*mask = m;
	return MRAIL_OK;
}

uint64_t offload_choose_cores(uint64_t requested, unsigned ncores,
			      uint64_t bound, int bound_all,
			      unsigned local_rank, unsigned local_size)
{
	uint64_t all = ncores >= 64 ? ~(uint64_t)0
				    : ((uint64_t)1 << ncores) - 1;
	uint64_t avail;
	if (local_size == 0)
		local_size = 1;
	if (requested == OFFLOAD_CORES_AUTO) {
		/* Unbound ranks are taken to run on the first local_size
		 * cores (one each); a bound rank also keeps its own cores. */
		avail = all;
		for (unsigned i = 0; i < local_size && i < 64; i++)
			avail &= ~((uint64_t)1 << i);
		if (!bound_all)
			avail &= ~bound;
	} else {
		/* An explicit list is the user's decision, for every rank
		 * (tests force workers on a machine with no idle core). */
		return requested & all;
	}
	/* Share among the local ranks: the k-th available core goes to
	 * local rank k % local_size, so no two ranks pin to one core. */
	uint64_t mine = 0;
	unsigned k = 0;
	for (unsigned i = 0; i < 64; i++) {
		if (!(avail & ((uint64_t)1 << i)))
			continue;
		if (k++ % local_size == local_rank % local_size)
			mine |= (uint64_t)1 << i;
	}
	return mine;
}
