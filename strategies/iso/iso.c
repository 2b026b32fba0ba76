/*
 * iso: a rendezvous payload in equal chunks over all rails of the gate
 * (the equal split NewMadeleine's paper measures against). Options:
 *   chunks=N     chunks per rail (default 1), to exercise reassembly with
 *                many chunks per message;
 *   min_chunk=B  no chunk smaller than B bytes (default 64 KiB): below
 *                that, splitting costs more than a rail's handshake
 *                saves, so mid-size payloads use fewer rails.
 * Eager packets go to the fastest idle rail.
 */
#include "mrail.h"
#include "strategies/strategy.h"
#include "util/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct iso_state {
	unsigned chunks_per_rail;
	uint64_t min_chunk;
};

static int parse_u64(const char *key, const char *val, uint64_t lo,
		     uint64_t hi, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(val, &end, 10);
	if (errno || end == val || *end || v < lo || v > hi || val[0] == '-') {
		mrail_error("MRAIL_STRATEGY: iso option %s='%s' must be an "
			    "integer in [%llu, %llu]", key, val,
			    (unsigned long long)lo, (unsigned long long)hi);
		return MRAIL_ERR_CONFIG;
	}
	*out = v;
	return MRAIL_OK;
}

static int iso_init(const char *args, void **state)
{
	struct iso_state *s = calloc(1, sizeof *s);
	char *copy = strdup(args ? args : ""), *save = NULL;
	int rc = MRAIL_OK;

	if (!s || !copy) {
		free(s);
		free(copy);
		return MRAIL_ERR_NOMEM;
	}
	s->chunks_per_rail = 1;
	s->min_chunk = 65536;
	for (char *kv = strtok_r(copy, ",", &save); kv && rc == MRAIL_OK;
	     kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		uint64_t v = 0;
		if (!eq) {
			mrail_error("MRAIL_STRATEGY: iso option '%s' is not "
				    "key=value", kv);
			rc = MRAIL_ERR_CONFIG;
			break;
		}
		*eq = '\0';
		if (!strcmp(kv, "chunks")) {
			rc = parse_u64(kv, eq + 1, 1, 64, &v);
			s->chunks_per_rail = (unsigned)v;
		} else if (!strcmp(kv, "min_chunk")) {
			rc = parse_u64(kv, eq + 1, 1, UINT64_MAX >> 1, &v);
			s->min_chunk = v;
		} else {
			mrail_error("MRAIL_STRATEGY: unknown iso option '%s' "
				    "(known: chunks, min_chunk)", kv);
			rc = MRAIL_ERR_CONFIG;
		}
	}
	free(copy);
	if (rc != MRAIL_OK) {
		free(s);
		return rc;
	}
	*state = s;
	return MRAIL_OK;
}

static void iso_fini(void *state)
{
	free(state);
}

static int iso_eager_rail(void *state, const struct mrail_rail_view *rails,
			  unsigned n, size_t bytes)
{
	(void)state;
	(void)bytes;
	return mrail_strategy_fastest_idle(rails, n);
}

static int iso_rdv_split(void *state, const struct mrail_rail_view *rails,
			 unsigned n, uint64_t length, struct mrail_chunk *out,
			 unsigned max)
{
	struct iso_state *s = state;
	uint64_t count = (uint64_t)n * s->chunks_per_rail;
	(void)rails;

	if (count > max)
		count = max;
	if (count > length / s->min_chunk)
		count = length / s->min_chunk;
	if (count == 0)
		count = 1;
	uint64_t base = length / count, extra = length % count, off = 0;
	for (uint64_t i = 0; i < count; i++) {
		uint64_t len = base + (i < extra ? 1 : 0);
		out[i].rail = (unsigned)(i % n);
		out[i].offset = off;
		out[i].length = len;
		off += len;
	}
	return (int)count;
}

const struct mrail_strategy_ops mrail_iso_strategy_ops = {
	.name = "iso",
	.abi_version = MRAIL_STRATEGY_ABI_VERSION,
	.init = iso_init,
	.fini = iso_fini,
	.eager_rail = iso_eager_rail,
	.rdv_split = iso_rdv_split,
};
