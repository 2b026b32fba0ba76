/* Prediction: exact interpolation, monotonicity, thresholds, nominal. */
#include "sampler_test.h"
#include "sampler/predict.h"
#include "mrail.h"

static struct mrail_rail_model *model(const struct mrail_profile *p)
{
	struct mrail_rail_model *m;
	CHECK_EQ(mrail_model_from_profile(p, &m), MRAIL_OK);
	return m;
}

/* The same formula as predict.c with a linear scan: checks the O(1) and
 * binary-search lookups bit for bit. */
static double reference(const struct mrail_curve *c, uint64_t s)
{
	unsigned n = c->n, i = 0;
	if (s <= c->size[0])
		return c->time[0];
	if (s >= c->size[n - 1])
		return c->time[n - 1] + c->tail * (double)(s - c->size[n - 1]);
	while (c->size[i + 1] <= s)
		i++;
	double f = (double)(s - c->size[i]) /
		   (double)(c->size[i + 1] - c->size[i]);
	return fmin(c->time[i] + (c->time[i + 1] - c->time[i]) * f,
		    c->time[i + 1]);
}

/* t(s) = (16 + s) / 2^20 is exact in binary at every integer size, and so
 * is its interpolation on a power-of-two grid: equality, not tolerance. */
static double lin(uint64_t s)
{
	return (16.0 + (double)s) / 1048576.0;
}

static void test_exact_pow2(void)
{
	static struct mrail_profile p;
	test_profile_header(&p);
	for (uint64_t s = 1; s <= 1024; s *= 2)
		test_add(&p, s, NAN, lin(s));
	struct mrail_rail_model *m = model(&p);
	CHECK(m->rdv.log2_first == 0 && m->eager.n == 0);
	for (uint64_t s = 1; s <= 1024; s *= 2)
		CHECK(mrail_predict(m, s) == lin(s)); /* at samples */
	for (uint64_t s = 1; s <= 1024; s++)
		CHECK(mrail_predict(m, s) == lin(s)); /* between */
	CHECK(mrail_predict(m, 0) == lin(1));         /* below: smallest */
	CHECK(mrail_predict(m, 2048) == lin(2048));   /* above: last slope */
	CHECK(mrail_predict(m, UINT64_C(1) << 40) == lin(UINT64_C(1) << 40));
	CHECK(mrail_model_latency(m) == lin(1));
	CHECK(mrail_model_bandwidth(m) == 1048576.0);
	CHECK(mrail_model_threshold(m) == 0);
	CHECK_EQ(m->threshold_source, MRAIL_THRESHOLD_NONE);
	CHECK_EQ(m->source, MRAIL_MODEL_PROFILE);
	mrail_model_free(m);

	/* A grid starting at 64: clamped below it, still O(1). */
	test_profile_header(&p);
	for (uint64_t s = 64; s <= (UINT64_C(1) << 26); s *= 2)
		test_add(&p, s, NAN, lin(s));
	m = model(&p);
	CHECK(m->rdv.log2_first == 6);
	CHECK(mrail_predict(m, 1) == lin(64));
	CHECK(mrail_predict(m, 63) == lin(64));
	for (uint64_t s = 64; s < (UINT64_C(1) << 28); s = s * 3 / 2 + 1)
		CHECK(mrail_predict(m, s) == lin(s));
	mrail_model_free(m);
}

/* Hand-computed values on an irregular grid (binary search path). */
static void test_exact_irregular(void)
{
	static struct mrail_profile p;
	test_profile_header(&p);
	test_add(&p, 10, 1.0, NAN);
	test_add(&p, 20, 2.0, NAN);
	test_add(&p, 30, 2.5, NAN);
	test_add(&p, 100, 4.25, NAN);
	struct mrail_rail_model *m = model(&p);
	CHECK(m->eager.log2_first == -1 && m->rdv.n == 0);
	CHECK(mrail_predict(m, 0) == 1.0);
	CHECK(mrail_predict(m, 9) == 1.0);
	CHECK(mrail_predict(m, 10) == 1.0);
	CHECK(mrail_predict(m, 15) == 1.5);
	CHECK(mrail_predict(m, 20) == 2.0);
	CHECK(mrail_predict(m, 25) == 2.25);
	CHECK(mrail_predict(m, 30) == 2.5);
	CHECK(mrail_predict(m, 65) == 3.375);
	CHECK(mrail_predict(m, 100) == 4.25);
	/* Beyond: last segment's slope, 1.75 s per 70 B = 0.025 s/B. */
	CHECK(fabs(mrail_predict(m, 140) - 5.25) < 1e-12);
	CHECK(fabs(mrail_model_bandwidth(m) - 40.0) < 1e-9);
	CHECK(mrail_model_threshold(m) == UINT64_MAX);
	mrail_model_free(m);

	/* Powers of two with finer points in between: binary search, and
	 * the same results as the reference on every size. */
	test_profile_header(&p);
	for (uint64_t s = 1; s <= 4096; s *= 2) {
		test_add(&p, s, NAN, 1e-6 + (double)s * 1e-9);
		if (s >= 4)
			test_add(&p, s + s / 2, NAN,
				 1.2e-6 + (double)(s + s / 2) * 1e-9);
	}
	m = model(&p);
	CHECK(m->rdv.log2_first == -1);
	for (uint64_t s = 0; s <= 10000; s++)
		CHECK(mrail_predict(m, s) == reference(&m->rdv, s));
	mrail_model_free(m);
}

/* Noisy, bent, realistic curves: O(1) lookup == linear scan, always. */
static void test_lookup_random(void)
{
	static struct mrail_profile p;
	uint64_t rs = 42;
	for (int iter = 0; iter < 50; iter++) {
		test_profile_header(&p);
		uint64_t first = UINT64_C(1) << (test_rand(&rs) % 8);
		double t = 1e-6;
		for (uint64_t s = first; s <= (UINT64_C(1) << 26); s *= 2) {
			t += (double)s / 1e9 * (0.5 + test_unif(&rs));
			test_add(&p, s, NAN, t);
		}
		struct mrail_rail_model *m = model(&p);
		CHECK(m->rdv.log2_first >= 0);
		for (int k = 0; k < 2000; k++) {
			uint64_t s = test_rand(&rs) >> (test_rand(&rs) % 64);
			CHECK(mrail_predict(m, s) == reference(&m->rdv, s));
		}
		mrail_model_free(m);
	}
}

/* Non-monotonic samples: pool adjacent violators, documented fit. */
static void test_isotonic(void)
{
	static struct mrail_profile p;
	test_profile_header(&p);
	test_add(&p, 1, 1.0, NAN);
	test_add(&p, 2, 3.0, NAN);
	test_add(&p, 4, 2.0, NAN);
	test_add(&p, 8, 4.0, NAN);
	test_add(&p, 16, 3.0, NAN);
	test_add(&p, 32, 3.5, NAN);
	test_add(&p, 64, 1.0, NAN);
	struct mrail_rail_model *m = model(&p);
	/* 3,2 -> 2.5,2.5; then 4,3,3.5,1 -> mean 2.875 (pooled with nothing
	 * before, since 2.5 <= 2.875). */
	CHECK(mrail_predict(m, 1) == 1.0);
	CHECK(mrail_predict(m, 2) == 2.5);
	CHECK(mrail_predict(m, 4) == 2.5);
	CHECK(mrail_predict(m, 8) == 2.875);
	CHECK(mrail_predict(m, 64) == 2.875);
	/* Flat last segment: extrapolates with 2.875 s / 64 B. */
	CHECK(mrail_predict(m, 128) == 2.875 * 2);
	mrail_model_free(m);
}

/* Random profiles, random sizes: never decreasing, never negative or
 * infinite, including across the threshold, derived or user-set. */
static void test_monotonic(void)
{
	static struct mrail_profile p;
	uint64_t rs = 7;
	for (int iter = 0; iter < 300; iter++) {
		test_profile_header(&p);
		unsigned n = 1 + (unsigned)(test_rand(&rs) % 64);
		uint64_t s = 0;
		for (unsigned i = 0; i < n; i++) {
			s += 1 + (test_rand(&rs) % 2 ? s
						      : test_rand(&rs) % 100000);
			if (s > MRAIL_PROFILE_MAX_SIZE)
				break;
			int w = (int)(test_rand(&rs) % 3);
			double e = 1e-9 + test_unif(&rs) * 1e-3;
			double r = 1e-9 + test_unif(&rs) * 1e-3;
			test_add(&p, s, w != 1 ? e : NAN, w != 0 ? r : NAN);
		}
		struct mrail_rail_model *m = model(&p);
		if (iter % 3 == 0)
			mrail_model_set_threshold(m, test_rand(&rs) % (2 * s));
		/* Probes: random, and around every sample and the threshold. */
		uint64_t probe[600];
		unsigned np = 0;
		for (unsigned i = 0; i < p.nsamples; i++) {
			probe[np++] = p.samples[i].size - 1;
			probe[np++] = p.samples[i].size;
			probe[np++] = p.samples[i].size + 1;
		}
		probe[np++] = m->threshold - 1;
		probe[np++] = m->threshold;
		probe[np++] = 0;
		probe[np++] = UINT64_MAX;
		while (np < 600)
			probe[np++] = test_rand(&rs) >> (test_rand(&rs) % 64);
		for (unsigned i = 0; i < np; i++)
			for (unsigned j = 0; j < np; j += 7) {
				uint64_t a = probe[i], b = probe[j];
				double ta = mrail_predict(m, a);
				double tb = mrail_predict(m, b);
				CHECK(isfinite(ta) && ta >= 0);
				if (a <= b && !(ta <= tb)) {
					fprintf(stderr, "iter %d: t(%llu)=%.17g "
						"> t(%llu)=%.17g\n", iter,
						(unsigned long long)a, ta,
						(unsigned long long)b, tb);
					exit(1);
				}
			}
		mrail_model_free(m);
	}
}

/* Both curves straight lines: eager 1us + 1ns/B, rdv 5.00025us +
 * 0.5ns/B; they cross at 8000.5 B, between samples 4096 and 8192. */
static void crossing_profile(struct mrail_profile *p, uint64_t eager_to)
{
	test_profile_header(p);
	for (uint64_t s = 1; s <= (UINT64_C(1) << 20); s *= 2)
		test_add(p, s, s <= eager_to ? 1e-6 + (double)s * 1e-9 : NAN,
			 s >= 64 ? 5.00025e-6 + (double)s * 0.5e-9 : NAN);
}

static void test_threshold(void)
{
	static struct mrail_profile p;
	struct mrail_rail_model *m;

	crossing_profile(&p, 65536);
	m = model(&p);
	CHECK_EQ(m->threshold_source, MRAIL_THRESHOLD_DERIVED);
	CHECK_EQ(mrail_model_threshold(m), 8001);
	CHECK(mrail_predict(m, 8000) == mrail_predict_curve(&m->eager, 8000));
	CHECK(mrail_predict(m, 8001) == mrail_predict_curve(&m->rdv, 8001));
	CHECK(mrail_predict(m, 8001) < 1e-6 + 8001e-9);
	CHECK(mrail_predict(m, 8000) <= mrail_predict(m, 8001));
	mrail_model_free(m);

	/* Eager measured only up to 4096, before the crossing: rendezvous
	 * from the first unmeasured size. */
	crossing_profile(&p, 4096);
	m = model(&p);
	CHECK_EQ(mrail_model_threshold(m), 4097);
	mrail_model_free(m);

	/* Rendezvous faster at every common size: from the first of them. */
	test_profile_header(&p);
	for (uint64_t s = 1; s <= 1024; s *= 2)
		test_add(&p, s, 1e-5 + (double)s * 1e-9,
			 s >= 16 ? 1e-6 + (double)s * 1e-9 : NAN);
	m = model(&p);
	CHECK_EQ(mrail_model_threshold(m), 16);
	/* Eager up to 15 B is slower than rdv at 16 B: capped, monotonic. */
	CHECK(mrail_predict(m, 15) == mrail_predict(m, 16));
	CHECK(mrail_predict(m, 1) <= mrail_predict(m, 16));
	mrail_model_free(m);

	/* Faster, slower again (a bump), then faster for good: the
	 * threshold is past the last crossing. */
	test_profile_header(&p);
	test_add(&p, 1, 1.0, 2.0);
	test_add(&p, 2, 2.0, 1.5);  /* faster */
	test_add(&p, 4, 3.0, 4.0);  /* slower */
	test_add(&p, 8, 5.0, 4.5);  /* faster from here: cross in (4, 8) */
	test_add(&p, 16, 9.0, 5.0);
	m = model(&p);
	/* gain(4) = 1, gain(8) = -0.5: crossing at 4 + 4 * 2/3 = 6.67. */
	CHECK_EQ(mrail_model_threshold(m), 7);
	mrail_model_free(m);

	/* Crossing exactly at a sample: equal there, faster after. */
	test_profile_header(&p);
	test_add(&p, 1, 1.0, 3.0);
	test_add(&p, 2, 2.0, 2.0);
	test_add(&p, 4, 4.0, 3.0);
	m = model(&p);
	CHECK_EQ(mrail_model_threshold(m), 3);
	mrail_model_free(m);

	/* Never faster: eager up to its last sample. */
	test_profile_header(&p);
	for (uint64_t s = 1; s <= 1024; s *= 2)
		test_add(&p, s, 1e-6 * (double)s, 2e-6 * (double)s);
	m = model(&p);
	CHECK_EQ(mrail_model_threshold(m), 1025);
	mrail_model_free(m);

	/* Eager measured below the rendezvous range only. */
	test_profile_header(&p);
	test_add(&p, 1, 1e-6, NAN);
	test_add(&p, 2, 2e-6, NAN);
	test_add(&p, 4, NAN, 1e-6);
	m = model(&p);
	CHECK_EQ(mrail_model_threshold(m), 3);
	mrail_model_free(m);

	/* User threshold above the crossing: eager used, capped so that the
	 * switch never makes a larger message faster. */
	crossing_profile(&p, 65536);
	m = model(&p);
	mrail_model_set_threshold(m, 32768);
	CHECK_EQ(m->threshold_source, MRAIL_THRESHOLD_USER);
	CHECK_EQ(mrail_model_threshold(m), 32768);
	CHECK(mrail_predict(m, 16384) == mrail_predict_curve(&m->eager, 16384));
	CHECK(mrail_predict(m, 32767) == mrail_predict_curve(&m->rdv, 32768));
	CHECK(mrail_predict(m, 32767) <= mrail_predict(m, 32768));
	mrail_model_set_threshold(m, 1024); /* below: plain switch */
	CHECK(mrail_predict(m, 1023) == mrail_predict_curve(&m->eager, 1023));
	CHECK(mrail_predict(m, 1024) == mrail_predict_curve(&m->rdv, 1024));
	mrail_model_free(m);
}

static void test_nominal(void)
{
	struct mrail_rail_model *m;
	CHECK_EQ(mrail_model_from_nominal(1.25e9, 10e-6, &m), MRAIL_OK);
	CHECK_EQ(m->source, MRAIL_MODEL_NOMINAL);
	CHECK(mrail_model_latency(m) == 10e-6);
	CHECK(fabs(mrail_model_bandwidth(m) - 1.25e9) < 1e-3);
	for (uint64_t s = 1; s < (UINT64_C(1) << 40); s = s * 5 + 3) {
		double want = 10e-6 + (double)s / 1.25e9;
		CHECK(fabs(mrail_predict(m, s) - want) <= 1e-15 * want);
	}
	CHECK(isfinite(mrail_predict(m, UINT64_MAX)));
	CHECK_EQ(m->threshold_source, MRAIL_THRESHOLD_NONE);
	mrail_model_free(m);
	CHECK_EQ(mrail_model_from_nominal(1e9, 0, &m), MRAIL_OK);
	CHECK(mrail_predict(m, 0) == 0);
	CHECK(fabs(mrail_predict(m, 1000) - 1e-6) < 1e-20);
	mrail_model_free(m);
	CHECK(mrail_model_from_nominal(0, 1e-6, &m) == MRAIL_ERR_INVALID);
	CHECK(m == NULL);
	CHECK(mrail_model_from_nominal(-1, 1e-6, &m) == MRAIL_ERR_INVALID);
	CHECK(mrail_model_from_nominal(NAN, 1e-6, &m) == MRAIL_ERR_INVALID);
	CHECK(mrail_model_from_nominal(INFINITY, 0, &m) == MRAIL_ERR_INVALID);
	CHECK(mrail_model_from_nominal(1e9, -1, &m) == MRAIL_ERR_INVALID);
	CHECK(mrail_model_from_nominal(1e9, NAN, &m) == MRAIL_ERR_INVALID);
}

/* In-band samples of a 1000 Mbit/s rail (118 MB/s, 50 us) under CPU
 * hogs: the 64 KiB repetitions all waited a time slice, the last segment
 * reads 1.1 GB/s; the span bound keeps 1.5x the end-to-end slope. A clean
 * set keeps its tail slope. */
static void test_bandwidth_checked(void)
{
	static struct mrail_profile p;
	const double bw = 118e6, lat = 50e-6;
	uint64_t sizes[] = {8, 4096, 65536, 262144};
	for (int noisy = 0; noisy < 2; noisy++) {
		test_profile_header(&p);
		for (unsigned i = 0; i < 4; i++) {
			double t = lat + (double)sizes[i] / bw;
			if (noisy && i == 2)
				t = 2.1e-3;
			test_add(&p, sizes[i], t, NAN);
		}
		struct mrail_rail_model *m = model(&p);
		double tail = mrail_model_bandwidth(m);
		double b = mrail_model_bandwidth_checked(m);
		double span = (double)(262144 - 8) /
			      ((lat + 262144 / bw) - (lat + 8 / bw));
		if (noisy) {
			CHECK(tail > 1e9);
			CHECK(fabs(b - 1.5 * span) < 1);
		} else {
			CHECK(b == tail);
			CHECK(fabs(b - bw) < 1);
		}
		mrail_model_free(m);
	}
	struct mrail_rail_model *m;
	CHECK_EQ(mrail_model_from_nominal(1.25e9, 10e-6, &m), MRAIL_OK);
	CHECK(mrail_model_bandwidth_checked(m) == mrail_model_bandwidth(m));
	mrail_model_free(m);
}

static void test_invalid_profile(void)
{
	static struct mrail_profile p;
	struct mrail_rail_model *m = (void *)&p;
	test_profile_header(&p);
	CHECK(mrail_model_from_profile(&p, &m) == MRAIL_ERR_INVALID);
	CHECK(m == NULL);
	test_add(&p, 2, 1e-6, NAN);
	test_add(&p, 1, 1e-6, NAN);
	CHECK(mrail_model_from_profile(&p, &m) == MRAIL_ERR_INVALID);
}

int main(void)
{
	test_exact_pow2();
	test_exact_irregular();
	test_lookup_random();
	test_isotonic();
	test_monotonic();
	test_threshold();
	test_nominal();
	test_bandwidth_checked();
	test_invalid_profile();
	printf("predict: ok\n");
	return 0;
}
