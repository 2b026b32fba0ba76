/*
 * Fake driver knobs: "key=value,..." from the open args (or the
 * MRAIL_FAKE_PARAMS environment variable when those are empty). Every
 * error names the key and what was expected.
 */
#include "drivers/fake/fake_internal.h"
#include "util/log.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A number with an optional unit from `units` (suffix -> factor). */
struct unit {
	const char *suffix;
	double factor;
};

static const struct unit time_units[] = {
	{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}, {"", 1}, {NULL, 0}};
/* Rates are decimal (network convention): 1g = 1e9 bytes/s. */
static const struct unit rate_units[] = {
	{"k", 1e3}, {"K", 1e3}, {"m", 1e6}, {"M", 1e6},
	{"g", 1e9}, {"G", 1e9}, {"", 1},    {NULL, 0}};

static int parse_unit(const char *s, size_t len, const struct unit *u,
		      double *out)
{
	char buf[64];
	char *end;
	double v;

	if (len == 0 || len >= sizeof buf)
		return -1;
	memcpy(buf, s, len);
	buf[len] = 0;
	errno = 0;
	v = strtod(buf, &end);
	if (end == buf || errno || !isfinite(v) || v < 0)
		return -1;
	for (; u->suffix; u++)
		if (!strcmp(end, u->suffix)) {
			*out = v * u->factor;
			return 0;
		}
	return -1;
}

static int parse_count(const char *s, size_t len, int64_t max, int64_t *out)
{
	int64_t v = 0;

	if (len == 0)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
		if (v > max)
			return -1;
	}
	*out = v;
	return 0;
}

/* "a/b/c" per rail, or one value for every rail; count in *n. */
static int parse_list(const char *s, size_t len, const struct unit *u,
		      double *vals, int *n)
{
	size_t start = 0;

	*n = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && s[i] != '/')
			continue;
		if (*n == FAKE_MAX_RAILS ||
		    parse_unit(s + start, i - start, u, &vals[*n]) < 0)
			return -1;
		(*n)++;
		start = i + 1;
	}
	return 0;
}

static int bad(const char *key, size_t klen, const char *val, size_t vlen,
	       const char *expected)
{
	mrail_error("fake driver: invalid parameter '%.*s=%.*s': expected %s",
		    (int)klen, key, (int)vlen, val, expected);
	return MRAIL_ERR_CONFIG;
}

static int spread(const char *name, const double *vals, int n, int rails,
		  double *out)
{
	if (n == 0)
		return 0;
	if (n != 1 && n != rails) {
		mrail_error("fake driver: parameter '%s' lists %d values for "
			    "%d rails (give one, or one per rail)",
			    name, n, rails);
		return MRAIL_ERR_CONFIG;
	}
	for (int i = 0; i < rails; i++)
		out[i] = vals[n == 1 ? 0 : i];
	return 0;
}

int fake_params_parse(const char *s, struct fake_params *p)
{
	double lat[FAKE_MAX_RAILS], bw[FAKE_MAX_RAILS];
	int nlat = 0, nbw = 0, rc;
	int64_t v;

	memset(p, 0, sizeof *p);
	p->rails = 2;
	p->fail_rma_after = p->drop_after = -1;
	p->fail_rail = -1;
	p->faults = p->stall_after = -1;
	while (s && *s) {
		size_t len = strcspn(s, ",");
		const char *eq = memchr(s, '=', len);
		size_t klen = eq ? (size_t)(eq - s) : len;
		const char *val = eq ? eq + 1 : s + len;
		size_t vlen = eq ? len - klen - 1 : 0;

		if (len == 0) {
			/* tolerate ",," and a trailing comma */
		} else if (!eq) {
			mrail_error("fake driver: parameter '%.*s' has no "
				    "value (expected key=value)",
				    (int)len, s);
			return MRAIL_ERR_CONFIG;
		} else if (klen == 5 && !strncmp(s, "rails", 5)) {
			if (parse_count(val, vlen, FAKE_MAX_RAILS, &v) < 0 ||
			    v < 1)
				return bad(s, klen, val, vlen,
					   "a rail count from 1 to 16");
			p->rails = (int)v;
		} else if (klen == 3 && !strncmp(s, "lat", 3)) {
			if (parse_list(val, vlen, time_units, lat, &nlat) < 0)
				return bad(s, klen, val, vlen,
					   "a time such as 5us, 1ms, 0.2s (or "
					   "one per rail: 5us/20us)");
		} else if (klen == 2 && !strncmp(s, "bw", 2)) {
			if (parse_list(val, vlen, rate_units, bw, &nbw) < 0)
				return bad(s, klen, val, vlen,
					   "bytes/s such as 400m or 1g (k/m/g "
					   "= 1e3/1e6/1e9; 0 = unlimited; or "
					   "one per rail: 1g/400m)");
		} else if (klen == 14 && !strncmp(s, "fail_rma_after", 14)) {
			if (parse_count(val, vlen, INT64_MAX / 16, &v) < 0)
				return bad(s, klen, val, vlen,
					   "a count of operations");
			p->fail_rma_after = v;
		} else if (klen == 10 && !strncmp(s, "drop_after", 10)) {
			if (parse_count(val, vlen, INT64_MAX / 16, &v) < 0)
				return bad(s, klen, val, vlen,
					   "a count of frames");
			p->drop_after = v;
		} else if (klen == 11 && !strncmp(s, "stall_after", 11)) {
			if (parse_count(val, vlen, INT64_MAX / 16, &v) < 0)
				return bad(s, klen, val, vlen,
					   "a count of frames");
			p->stall_after = v;
		} else if ((klen == 9 && !strncmp(s, "outage_at", 9)) ||
			   (klen == 6 && !strncmp(s, "outage", 6))) {
			double t;
			if (parse_unit(val, vlen, time_units, &t) < 0 ||
			    t < 0 || t > 86400)
				return bad(s, klen, val, vlen,
					   "one time such as 3s or 8000ms "
					   "(at most a day)");
			*(klen == 9 ? &p->outage_at : &p->outage) = t;
		} else if (klen == 6 && !strncmp(s, "faults", 6)) {
			if (parse_count(val, vlen, INT64_MAX / 16, &v) < 0)
				return bad(s, klen, val, vlen,
					   "a count of faults");
			p->faults = v;
		} else if (klen == 6 && !strncmp(s, "inject", 6)) {
			if (vlen == 2 && !strncmp(val, "on", 2))
				p->inject = 1;
			else if (vlen == 3 && !strncmp(val, "off", 3))
				p->inject = 0;
			else
				return bad(s, klen, val, vlen, "on or off");
		} else if (klen == 9 && !strncmp(s, "fail_rail", 9)) {
			if (parse_count(val, vlen, FAKE_MAX_RAILS - 1, &v) < 0)
				return bad(s, klen, val, vlen,
					   "a rail index from 0 to 15");
			p->fail_rail = (int)v;
		} else {
			mrail_error("fake driver: unknown parameter '%.*s' "
				    "(known: rails, lat, bw, fail_rma_after, "
				    "drop_after, stall_after, fail_rail, "
				    "faults, outage_at, outage, inject)",
				    (int)klen, s);
			return MRAIL_ERR_CONFIG;
		}
		s += len;
		if (*s == ',')
			s++;
	}
	rc = spread("lat", lat, nlat, p->rails, p->lat);
	if (rc == 0)
		rc = spread("bw", bw, nbw, p->rails, p->bw);
	if (rc == 0 && p->fail_rail >= p->rails) {
		mrail_error("fake driver: parameter 'fail_rail=%d' names no "
			    "rail (rails=%d)",
			    p->fail_rail, p->rails);
		rc = MRAIL_ERR_CONFIG;
	}
	return rc;
}
