/*
 * Rail profiles (sampler/profile.c, docs/profile-format.md): files in the
 * profile directory, which any user able to write there controls. A
 * profile that reads back must pass the checks, and what it formats to
 * must read back to the same profile.
 */
#include "fuzz.h"
#include "sampler/profile.h"
#include "util/log.h"

#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	mrail_log_level = MRAIL_LOG_TRACE; /* format every message too */
	return 0;
}

static int same_time(double a, double b)
{
	return (a != a && b != b) || a == b;
}

static void check_same(const struct mrail_profile *a,
		       const struct mrail_profile *b)
{
	FUZZ_CHECK(!strcmp(a->id.driver, b->id.driver));
	FUZZ_CHECK(!strcmp(a->id.local, b->id.local));
	FUZZ_CHECK(!strcmp(a->id.peer, b->id.peer));
	FUZZ_CHECK(a->id.link_mbps == b->id.link_mbps);
	FUZZ_CHECK(!strcmp(a->date, b->date));
	FUZZ_CHECK(!strcmp(a->tool, b->tool));
	FUZZ_CHECK(!strcmp(a->statistic, b->statistic));
	FUZZ_CHECK(a->eager_threshold == b->eager_threshold);
	FUZZ_CHECK(a->nsamples == b->nsamples);
	for (unsigned i = 0; i < a->nsamples; i++) {
		FUZZ_CHECK(a->samples[i].size == b->samples[i].size);
		FUZZ_CHECK(same_time(a->samples[i].eager, b->samples[i].eager));
		FUZZ_CHECK(same_time(a->samples[i].rdv, b->samples[i].rdv));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mrail_profile p, q;
	char err[256];

	FILE *f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	int rc = mrail_profile_read(f, "fuzz", &p, err, sizeof err);
	fclose(f);
	if (rc != MRAIL_OK) {
		FUZZ_CHECK(strlen(err) < sizeof err && err[0]);
		return 0;
	}
	FUZZ_CHECK(mrail_profile_check(&p, err, sizeof err) == MRAIL_OK);

	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	if (!m)
		return 0;
	rc = mrail_profile_format(&p, m);
	fclose(m);
	FUZZ_CHECK(rc == MRAIL_OK);
	f = fmemopen(text, len, "r");
	if (f) {
		rc = mrail_profile_read(f, "fuzz-again", &q, err, sizeof err);
		fclose(f);
		if (rc != MRAIL_OK)
			fprintf(stderr, "re-read failed: %s\n%s", err, text);
		FUZZ_CHECK(rc == MRAIL_OK);
		check_same(&p, &q);
	}
	free(text);
	return 0;
}
