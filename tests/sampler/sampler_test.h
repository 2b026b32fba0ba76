/* Helpers shared by the sampler tests. */
#ifndef MRAIL_TEST_SAMPLER_H
#define MRAIL_TEST_SAMPLER_H

#include "../check.h"
#include "sampler/profile.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A valid header, no samples yet. */
static inline void test_profile_header(struct mrail_profile *p)
{
	memset(p, 0, sizeof *p);
	strcpy(p->id.driver, "tcp");
	strcpy(p->id.local, "eth0");
	p->id.link_mbps = 10000;
	strcpy(p->id.peer, "node2/eth1");
	strcpy(p->date, "2024-05-01T12:34:56Z");
	strcpy(p->tool, "mrail-sample 0.1.0");
	strcpy(p->statistic, "median of 50, warm-up excluded");
}

static inline void test_add(struct mrail_profile *p, uint64_t size,
			    double eager, double rdv)
{
	CHECK(p->nsamples < MRAIL_PROFILE_MAX_SAMPLES);
	p->samples[p->nsamples++] =
		(struct mrail_profile_sample){size, eager, rdv};
}

/* xorshift64*: reproducible across libcs. */
static inline uint64_t test_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

/* Uniform in [0, 1). */
static inline double test_unif(uint64_t *s)
{
	return (double)(test_rand(s) >> 11) / 9007199254740992.0;
}

/* A temporary directory, removed by the caller (rm -r in the test). */
static inline void test_tmpdir(char *buf, size_t len)
{
	const char *t = getenv("TMPDIR");
	snprintf(buf, len, "%s/mrail-samp-XXXXXX", t && *t ? t : "/tmp");
	CHECK(mkdtemp(buf) != NULL);
}

static inline void test_rmdir(const char *dir)
{
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

#endif
