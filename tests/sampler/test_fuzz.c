/*
 * Parser fuzzing: random mutations of valid profiles. Every input must
 * either fail with "name:line: reason" or load into a profile that passes
 * mrail_profile_check(), builds a model and writes back to a file that
 * reads back the same. Run under ASan/UBSan to catch what a crash would.
 * MRAIL_FUZZ_ITERS and MRAIL_FUZZ_SEED override the defaults.
 */
#include "sampler_test.h"
#include "sampler/predict.h"
#include "mrail.h"

#define MAX_TEXT 65536

static const char *tokens[] = {
	"-", "nan", "inf", "-inf", "1e999", "1e-999", "-1", "0", "-0", "1e-10",
	"3601", "0x1p-20", "18446744073709551615", "18446744073709551616",
	"1099511627776", "1099511627777", "end", "end 0", "end 99999999999",
	"mrail-profile 1", "mrail-profile 2", ":", ": ", "driver: x", "#",
	"\r", "\r\n", "\t", " ", "\n", "\n\n", "eager-threshold: 1",
	"date: 2024-02-29T00:00:00Z", "link-speed-mbps: 10000000", "%s%n",
};

static uint64_t rs;

static size_t rnd(size_t n)
{
	return n ? (size_t)(test_rand(&rs) % n) : 0;
}

/* A valid profile's text: random sizes and times, both columns. */
static size_t valid_text(char *buf)
{
	static struct mrail_profile p;
	test_profile_header(&p);
	if (rnd(2))
		p.eager_threshold = 1 + rnd(1 << 20);
	unsigned n = 1 + (unsigned)rnd(40);
	uint64_t s = 0;
	for (unsigned i = 0; i < n; i++) {
		s += 1 + rnd(rnd(2) ? 1000 : 1 << 24);
		double e = 1e-9 + test_unif(&rs) * 1e-2;
		double r = 1e-9 + test_unif(&rs) * 1e-2;
		if (p.eager_threshold && s > p.eager_threshold)
			e = NAN;
		else if (rnd(4) == 0)
			e = NAN;
		if (mrail_profile_has(e) && rnd(4) == 0)
			r = NAN;
		test_add(&p, s, e, r);
	}
	FILE *f = fmemopen(buf, MAX_TEXT, "w");
	CHECK(f);
	CHECK_EQ(mrail_profile_format(&p, f), MRAIL_OK);
	long len = ftell(f);
	fclose(f);
	return (size_t)len;
}

static size_t insert(char *b, size_t len, size_t at, const char *s,
		     size_t n)
{
	if (len + n >= MAX_TEXT)
		return len;
	memmove(b + at + n, b + at, len - at);
	memcpy(b + at, s, n);
	return len + n;
}

/* Start of the line holding position at. */
static size_t line_start(const char *b, size_t at)
{
	while (at > 0 && b[at - 1] != '\n')
		at--;
	return at;
}

static size_t line_end(const char *b, size_t len, size_t at)
{
	while (at < len && b[at] != '\n')
		at++;
	return at < len ? at + 1 : len;
}

static size_t mutate(char *b, size_t len)
{
	size_t at = rnd(len + 1), a, e;
	char c;
	const char *tok;
	switch (rnd(9)) {
	case 0: /* flip a byte to anything */
		if (len)
			b[rnd(len)] = (char)rnd(256);
		return len;
	case 1: /* a printable byte in */
		c = (char)(0x20 + rnd(0x5f));
		return insert(b, len, at, &c, 1);
	case 2: /* delete a range */
		e = at + rnd(16);
		if (e > len)
			e = len;
		memmove(b + at, b + e, len - e);
		return len - (e - at);
	case 3: /* truncate */
		return at;
	case 4: /* duplicate a line */
		a = line_start(b, at);
		e = line_end(b, len, at);
		if (len + (e - a) < MAX_TEXT)
			return insert(b, len, a, b + a, e - a);
		return len;
	case 5: /* remove a line */
		a = line_start(b, at);
		e = line_end(b, len, at);
		memmove(b + a, b + e, len - e);
		return len - (e - a);
	case 6: /* an interesting token in */
		tok = tokens[rnd(sizeof tokens / sizeof *tokens)];
		return insert(b, len, at, tok, strlen(tok));
	case 7: /* a digit changed (sizes and times stay plausible) */
		for (size_t k = 0; k < 64 && len; k++) {
			size_t i = rnd(len);
			if (b[i] >= '0' && b[i] <= '9') {
				b[i] = (char)('0' + rnd(10));
				break;
			}
		}
		return len;
	default: /* a long run */
		for (size_t k = rnd(400); k > 0; k--)
			len = insert(b, len, at, "9", 1);
		return len;
	}
}

/* A loaded profile must be fully usable. */
static void check_loaded(const struct mrail_profile *p)
{
	static struct mrail_profile q;
	static char text[MAX_TEXT];
	char err[512];
	struct mrail_rail_model *m;
	CHECK_EQ(mrail_profile_check(p, err, sizeof err), MRAIL_OK);
	CHECK_EQ(mrail_model_from_profile(p, &m), MRAIL_OK);
	double prev = 0;
	for (uint64_t s = 0; s < (UINT64_C(1) << 42); s = s * 2 + 1) {
		double t = mrail_predict(m, s);
		CHECK(isfinite(t) && t >= prev);
		prev = t;
	}
	CHECK(mrail_model_bandwidth(m) > 0 && mrail_model_latency(m) > 0);
	mrail_model_free(m);
	FILE *f = fmemopen(text, sizeof text, "w+");
	CHECK(f);
	CHECK_EQ(mrail_profile_format(p, f), MRAIL_OK);
	rewind(f);
	CHECK_EQ(mrail_profile_read(f, "again", &q, err, sizeof err),
		 MRAIL_OK);
	fclose(f);
	CHECK_EQ(q.nsamples, p->nsamples);
}

static void check_one(char *b, size_t len, unsigned *ok)
{
	static struct mrail_profile p;
	char err[512];
	if (len == 0)
		return; /* fmemopen of 0 bytes is EINVAL; tested elsewhere */
	FILE *f = fmemopen(b, len, "r");
	CHECK(f);
	err[0] = '\0';
	int rc = mrail_profile_read(f, "fz", &p, err, sizeof err);
	fclose(f);
	if (rc == MRAIL_OK) {
		check_loaded(&p);
		(*ok)++;
		return;
	}
	unsigned line;
	char colon;
	if (rc != MRAIL_ERR_INVALID || sscanf(err, "fz:%u%c", &line, &colon)
	    != 2 || colon != ':' || line == 0 || strlen(err) < 8) {
		fprintf(stderr, "bad failure: rc %d, '%s'\n", rc, err);
		exit(1);
	}
}

int main(void)
{
	static char buf[MAX_TEXT];
	const char *e = getenv("MRAIL_FUZZ_ITERS");
	unsigned iters = e ? (unsigned)atoi(e) : 30000, ok = 0;
	e = getenv("MRAIL_FUZZ_SEED");
	rs = e ? strtoull(e, NULL, 0) : 0x9e3779b97f4a7c15ULL;
	printf("fuzz: %u inputs, seed 0x%llx\n", iters,
	       (unsigned long long)rs);
	for (unsigned i = 0; i < iters; i++) {
		size_t len = valid_text(buf);
		for (size_t k = 1 + rnd(4); k > 0; k--)
			len = mutate(buf, len);
		check_one(buf, len, &ok);
	}
	printf("fuzz: ok, %u of %u mutated inputs still valid\n", ok, iters);
	return 0;
}
