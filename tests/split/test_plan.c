/*
 * split planner: equal finish, leaving rails out, busy-until, never worse
 * than single/iso/bw, min_chunk, max_chunks, sizes 1 B..4 GiB, 1..8 rails,
 * and random 2-rail instances against an exact brute-force reference.
 */
#include "../check.h"
#include "mrail.h"
#include "sampler/predict.h"
#include "sampler/profile.h"
#include "strategies/split/plan.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MAXR 8
#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

static uint64_t rng = UINT64_C(0x9e3779b97f4a7c15);

static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * UINT64_C(2685821657736338717);
}

static double unif(double a, double b)
{
	return a + (b - a) * ((double)(rnd() >> 11) / 9007199254740992.0);
}

/* log-uniform in [a, b] */
static double logu(double a, double b)
{
	return exp(unif(log(a), log(b)));
}

static struct mrail_rail_model *nominal(double bw, double lat)
{
	struct mrail_rail_model *m;
	CHECK_EQ(mrail_model_from_nominal(bw, lat, &m), MRAIL_OK);
	return m;
}

static void header(struct mrail_profile *p)
{
	memset(p, 0, sizeof *p);
	strcpy(p->id.driver, "tcp");
	strcpy(p->id.local, "eth0");
	p->id.link_mbps = 10000;
	strcpy(p->id.peer, "node2/eth1");
	strcpy(p->date, "2024-05-01T12:34:56Z");
	strcpy(p->tool, "test");
	strcpy(p->statistic, "synthetic");
}

/*
 * A measured-looking rail: rendezvous samples at 2^0..2^32 whose small
 * sizes are latency-dominated (a handshake floor of rdv_lat plus a slow
 * start: half the bandwidth below 64 KiB), and, if eager_lat > 0, an eager
 * curve up to 64 KiB with a lower latency and lower bandwidth (so the
 * model has a derived threshold and two pieces).
 */
static struct mrail_rail_model *profiled(double bw, double rdv_lat,
					 double eager_lat)
{
	static struct mrail_profile p;
	header(&p);
	for (unsigned i = 0; i <= 32; i++) {
		uint64_t s = UINT64_C(1) << i;
		double r = s < 64 * KiB ? rdv_lat + (double)s / (bw / 2)
					: rdv_lat + (double)(32 * KiB) / bw +
						  (double)s / bw;
		double e = NAN;
		if (eager_lat > 0 && s <= 64 * KiB)
			e = eager_lat + (double)s / (bw / 3);
		p.samples[p.nsamples++] =
			(struct mrail_profile_sample){s, e, r};
	}
	char err[256] = "";
	CHECK(mrail_profile_check(&p, err, sizeof err) == MRAIL_OK ||
	      (fprintf(stderr, "%s\n", err), 0));
	struct mrail_rail_model *m;
	CHECK_EQ(mrail_model_from_profile(&p, &m), MRAIL_OK);
	return m;
}

/* time = max(lat, size / bw): a flat latency floor. */
static struct mrail_rail_model *floored(double bw, double lat)
{
	static struct mrail_profile p;
	header(&p);
	for (unsigned i = 0; i <= 30; i++) {
		uint64_t s = UINT64_C(1) << i;
		p.samples[p.nsamples++] = (struct mrail_profile_sample){
			s, NAN, fmax(lat, (double)s / bw)};
	}
	struct mrail_rail_model *m;
	CHECK_EQ(mrail_model_from_profile(&p, &m), MRAIL_OK);
	return m;
}

static struct mrail_rail_model *random_model(void)
{
	double bw = logu(1e7, 1e10), lat = logu(1e-6, 5e-5);
	switch (rnd() % 3) {
	case 0:
		return nominal(bw, lat);
	case 1:
		return profiled(bw, lat, 0);
	default:
		return profiled(bw, lat, lat * unif(0.2, 0.9));
	}
}

static double at(const struct mrail_split_rail *r, uint64_t s)
{
	double k = r->scale > 0 ? r->scale : 1.0;
	return r->busy_until + k * mrail_predict(r->model, s);
}

/* A measured time scale: mostly none (1, or 0 meaning 1), else 0.5..3. */
static double rnd_scale(void)
{
	switch (rnd() % 4) {
	case 0:
		return 0;
	case 1:
		return unif(0.5, 3);
	default:
		return 1;
	}
}

/* Finish of an assignment sizes[0..n) (0: rail unused). */
static double finish_of(const struct mrail_split_rail *r, unsigned n,
			const uint64_t *sizes)
{
	double t = 0;
	for (unsigned i = 0; i < n; i++)
		if (sizes[i])
			t = fmax(t, at(&r[i], sizes[i]));
	return t;
}

/*
 * Plans and checks every structural promise; returns the finish
 * recomputed from the chunks, sizes[] per rail (0: left out).
 */
static double plan(const struct mrail_split_rail *r, unsigned n, uint64_t len,
		   uint64_t min_chunk, unsigned max_chunks, uint64_t *sizes,
		   int *count)
{
	struct mrail_split_params p = {min_chunk, max_chunks, 0};
	struct mrail_chunk out[MAXR + 1], again[MAXR + 1];
	memset(out, 0xa5, sizeof out);
	double fin = -1, fin2 = -1;
	int c = mrail_split_plan(r, n, len, &p, out, &fin);
	unsigned cap = max_chunks && max_chunks < n ? max_chunks : n;
	CHECK(c >= 1 && (unsigned)c <= cap);
	/* out[] beyond the count untouched */
	unsigned char pat[sizeof out[0]];
	memset(pat, 0xa5, sizeof pat);
	CHECK(memcmp(&out[c], pat, sizeof pat) == 0);
	/* deterministic */
	CHECK_EQ(mrail_split_plan(r, n, len, &p, again, &fin2), c);
	for (int i = 0; i < c; i++)
		CHECK(out[i].rail == again[i].rail &&
		      out[i].offset == again[i].offset &&
		      out[i].length == again[i].length);
	CHECK(fin == fin2);

	uint64_t m = min_chunk > 1 ? min_chunk : 1, off = 0;
	if (m > len)
		m = len;
	memset(sizes, 0, n * sizeof *sizes);
	for (int i = 0; i < c; i++) {
		CHECK(out[i].rail < n);
		CHECK(i == 0 || out[i].rail > out[i - 1].rail);
		CHECK_EQ(out[i].offset, off);
		CHECK(out[i].length >= m);
		off += out[i].length;
		sizes[out[i].rail] = out[i].length;
	}
	CHECK_EQ(off, len);
	double t = finish_of(r, n, sizes);
	CHECK(t == fin);
	if (count)
		*count = c;
	return t;
}

static double best_single(const struct mrail_split_rail *r, unsigned n,
			  uint64_t len)
{
	double t = INFINITY;
	for (unsigned i = 0; i < n; i++)
		t = fmin(t, at(&r[i], len));
	return t;
}

static double iso(const struct mrail_split_rail *r, unsigned n, uint64_t len)
{
	uint64_t s[MAXR];
	for (unsigned i = 0; i < n; i++)
		s[i] = len / n + (i < len % n);
	return finish_of(r, n, s);
}

static double bw_split(const struct mrail_split_rail *r, unsigned n,
		       uint64_t len)
{
	uint64_t s[MAXR], given = 0;
	double tot = 0;
	unsigned fast = 0;
	for (unsigned i = 0; i < n; i++) {
		tot += mrail_model_bandwidth(r[i].model);
		if (mrail_model_bandwidth(r[i].model) >
		    mrail_model_bandwidth(r[fast].model))
			fast = i;
	}
	for (unsigned i = 0; i < n; i++) {
		s[i] = (uint64_t)((double)len *
				  (mrail_model_bandwidth(r[i].model) / tot));
		if (s[i] > len - given)
			s[i] = len - given;
		given += s[i];
	}
	s[fast] += len - given;
	return finish_of(r, n, s);
}

/* Exact optimum of a 2-rail instance with no minimum: sizes a, len - a.
 * On [1, len-1] rail 0's time grows with a and rail 1's shrinks, so the
 * best is at their crossing; plus the two single-rail ends. */
static double exact2(const struct mrail_split_rail *r, uint64_t len)
{
	double best = fmin(at(&r[0], len), at(&r[1], len));
	if (len < 2)
		return best;
	uint64_t lo = 1, hi = len - 1;
	/* smallest a in [1, len-1] with at0(a) >= at1(len-a), or len-1 */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (at(&r[0], mid) >= at(&r[1], len - mid))
			hi = mid;
		else
			lo = mid + 1;
	}
	for (uint64_t a = lo > 1 ? lo - 1 : 1; a <= lo + 1 && a < len; a++)
		best = fmin(best, fmax(at(&r[0], a), at(&r[1], len - a)));
	return best;
}

static void free_rails(struct mrail_split_rail *r, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		mrail_model_free((struct mrail_rail_model *)r[i].model);
}

static void test_errors(void)
{
	struct mrail_rail_model *m = nominal(1e9, 1e-6);
	struct mrail_split_rail r[2] = {{m, 0, 1}, {m, 0, 1}};
	struct mrail_chunk out[2];
	memset(out, 0x5a, sizeof out);
	struct mrail_chunk before[2];
	memcpy(before, out, sizeof out);
	CHECK_EQ(mrail_split_plan(NULL, 2, 100, NULL, out, NULL),
		 MRAIL_ERR_INVALID);
	CHECK_EQ(mrail_split_plan(r, 0, 100, NULL, out, NULL),
		 MRAIL_ERR_INVALID);
	CHECK_EQ(mrail_split_plan(r, MRAIL_MAX_RAILS + 1, 100, NULL, out,
				  NULL),
		 MRAIL_ERR_INVALID);
	CHECK_EQ(mrail_split_plan(r, 2, 0, NULL, out, NULL),
		 MRAIL_ERR_INVALID);
	CHECK_EQ(mrail_split_plan(r, 2, 100, NULL, NULL, NULL),
		 MRAIL_ERR_INVALID);
	r[1].busy_until = -1;
	CHECK_EQ(mrail_split_plan(r, 2, 100, NULL, out, NULL),
		 MRAIL_ERR_INVALID);
	r[1].busy_until = NAN;
	CHECK_EQ(mrail_split_plan(r, 2, 100, NULL, out, NULL),
		 MRAIL_ERR_INVALID);
	r[1].busy_until = INFINITY;
	CHECK_EQ(mrail_split_plan(r, 2, 100, NULL, out, NULL),
		 MRAIL_ERR_INVALID);
	r[1].busy_until = 0;
	r[1].scale = -1;
	CHECK_EQ(mrail_split_plan(r, 2, 100, NULL, out, NULL),
		 MRAIL_ERR_INVALID);
	r[1].scale = NAN;
	CHECK_EQ(mrail_split_plan(r, 2, 100, NULL, out, NULL),
		 MRAIL_ERR_INVALID);
	r[1].scale = 1;
	r[1].model = NULL;
	CHECK_EQ(mrail_split_plan(r, 2, 100, NULL, out, NULL),
		 MRAIL_ERR_INVALID);
	CHECK(memcmp(out, before, sizeof out) == 0);
	/* NULL params and NULL finish: defaults */
	r[1].model = m;
	CHECK_EQ(mrail_split_plan(r, 2, 8 * MiB, NULL, out, NULL), 2);
	mrail_model_free(m);
}

/* Two equal rails: halves, exactly equal finish; a 1-rail gate: whole. */
static void test_equal_rails(void)
{
	struct mrail_split_rail r[2] = {{nominal(1e9, 1e-6), 0, 1},
					{nominal(1e9, 1e-6), 0, 1}};
	uint64_t s[2];
	int c;
	double t = plan(r, 2, 8 * MiB, 0, 0, s, &c);
	CHECK_EQ(c, 2);
	CHECK(s[0] >= 4 * MiB - 1 && s[0] <= 4 * MiB + 1);
	CHECK(fabs(t - (1e-6 + 4.0 * MiB / 1e9)) < 1e-9 * t + 2e-9);
	t = plan(r, 1, 8 * MiB, 0, 0, s, &c);
	CHECK_EQ(c, 1);
	CHECK(t == at(&r[0], 8 * MiB));
	/* 1 byte: cannot be split */
	plan(r, 2, 1, 0, 0, s, &c);
	CHECK_EQ(c, 1);
	/* Rail 1 measured 3x slower than its model: a quarter of the bytes
	 * (latency is negligible at 8 MiB). */
	r[1].scale = 3;
	t = plan(r, 2, 8 * MiB, 0, 0, s, &c);
	CHECK_EQ(c, 2);
	CHECK(s[1] > 2 * MiB - 8 * KiB && s[1] < 2 * MiB + 8 * KiB);
	r[1].scale = 1;
	free_rails(r, 2);
}

/* Chosen rails finish within 1% of each other (min_chunk not binding:
 * 1), on nominal and profiled (rendezvous only, piecewise) models. */
static void test_equal_finish(void)
{
	unsigned multi = 0, granular = 0;
	double worst = 0, big = 0;
	for (int it = 0; it < 1500; it++) {
		unsigned n = 2 + (unsigned)(rnd() % 7);
		struct mrail_split_rail r[MAXR];
		for (unsigned i = 0; i < n; i++) {
			double bw = logu(1e7, 1e10), lat = logu(1e-6, 5e-5);
			r[i].model = rnd() % 2 ? nominal(bw, lat)
					       : profiled(bw, lat, 0);
			r[i].busy_until = rnd() % 3 ? 0 : logu(1e-7, 1e-2);
			r[i].scale = rnd_scale();
		}
		uint64_t len = (uint64_t)logu(1024, 4.0 * GiB);
		uint64_t s[MAXR];
		int c;
		double t = plan(r, n, len, 1, 0, s, &c);
		if (c > 1) {
			multi++;
			for (unsigned i = 0; i < n; i++)
				if (s[i]) {
					double ti = at(&r[i], s[i]);
					if (ti >= 0.99 * t)
						worst = fmax(worst,
							     (t - ti) / t);
					if (s[i] >= 64 * KiB)
						big = fmax(big, (t - ti) / t);
					if (ti >= 0.99 * t)
						continue;
					/* only when one byte more costs
					 * over 1% (tiny chunk, slow rail):
					 * then it would finish later */
					CHECK(at(&r[i], s[i] + 1) > t);
					granular++;
				}
		}
		free_rails(r, n);
	}
	printf("equal finish: %u multi-rail plans, worst spread %.3g (%.3g "
	       "for chunks >= 64 KiB), %u chunks off by more only from 1-byte "
	       "granularity\n", multi, worst, big, granular);
	CHECK(big < 1e-4);
	CHECK(multi > 500);
}

/*
 * Left out exactly when including would raise the finish: a rail out of
 * the plan cannot carry even min_chunk bytes by the plan's finish (so no
 * plan using it finishes earlier); a rail in the plan cannot be removed
 * without the best plan over the others finishing no earlier. And no
 * subset of rails (all 2^n - 1, n <= 5) has a better plan.
 */
static void test_leave_out(void)
{
	/* fixed cases: a slow rail, a very busy rail, a high-latency rail */
	struct mrail_split_rail r[3] = {{nominal(1e9, 2e-6), 0, 1},
					{nominal(1e9, 2e-6), 0, 1},
					{nominal(1e6, 2e-6), 0, 1}};
	uint64_t s[MAXR];
	int c;
	plan(r, 3, 1 * MiB, 4 * KiB, 0, s, &c);
	CHECK(c == 2 && s[2] == 0);
	mrail_model_free((struct mrail_rail_model *)r[2].model);
	r[2].model = nominal(1e9, 2e-6);
	r[2].busy_until = 1.0;
	plan(r, 3, 1 * MiB, 0, 0, s, &c);
	CHECK(c == 2 && s[2] == 0);
	r[2].busy_until = 0;
	mrail_model_free((struct mrail_rail_model *)r[2].model);
	r[2].model = nominal(1e9, 1e-3);
	plan(r, 3, 1 * MiB, 0, 0, s, &c);
	CHECK(c == 2 && s[2] == 0);
	free_rails(r, 3);
	/* latency floor (flat up to 10 KB): small messages stay whole on one
	 * rail, splitting would not pay (a tie goes to the single rail) */
	r[0] = (struct mrail_split_rail){floored(1e9, 1e-5), 0, 1};
	r[1] = (struct mrail_split_rail){floored(1e9, 1e-5), 0, 1};
	plan(r, 2, 64, 0, 0, s, &c);
	CHECK_EQ(c, 1);
	plan(r, 2, 8 * KiB, 0, 0, s, &c);
	CHECK_EQ(c, 1);
	plan(r, 2, 1 * MiB, 0, 0, s, &c);
	CHECK_EQ(c, 2);
	free_rails(r, 2);

	for (int it = 0; it < 400; it++) {
		unsigned n = 2 + (unsigned)(rnd() % 4);
		struct mrail_split_rail rr[MAXR], sub[MAXR];
		for (unsigned i = 0; i < n; i++) {
			rr[i].model = random_model();
			rr[i].busy_until = rnd() % 2 ? 0 : logu(1e-6, 1e-2);
			rr[i].scale = rnd_scale();
		}
		uint64_t len = (uint64_t)logu(1, 256.0 * MiB);
		uint64_t mc = rnd() % 2 ? 0 : (uint64_t)logu(1, 1 * MiB);
		uint64_t m = mc > 1 ? mc : 1;
		if (m > len)
			m = len;
		double t = plan(rr, n, len, mc, 0, s, &c);
		unsigned kmax = len / m < n ? (unsigned)(len / m) : n;
		for (unsigned i = 0; i < n; i++)
			if (!s[i] && (unsigned)c < kmax)
				CHECK(at(&rr[i], m) >= t * (1 - 1e-9));
		for (unsigned mask = 1; mask < (1u << n); mask++) {
			unsigned k = 0;
			for (unsigned i = 0; i < n; i++)
				if (mask >> i & 1)
					sub[k++] = rr[i];
			uint64_t ss[MAXR];
			double ts = plan(sub, k, len, mc, 0, ss, NULL);
			CHECK(ts >= t * (1 - 1e-9));
		}
		free_rails(rr, n);
	}
}

/* Busy-until moves bytes off the busy rail, monotonically, and out. */
static void test_busy(void)
{
	struct mrail_split_rail r[2] = {{profiled(1e9, 5e-6, 2e-6), 0, 1},
					{profiled(1e9, 5e-6, 2e-6), 0, 1}};
	uint64_t len = 16 * MiB, s[2], prev = len;
	int c;
	double single = at(&r[0], len);
	plan(r, 2, len, 0, 0, s, &c);
	CHECK_EQ(c, 2);
	CHECK(s[1] >= len / 2 - len / 1000 && s[1] <= len / 2 + len / 1000);
	for (double b = 1e-4; b < 2 * single; b *= 1.5) {
		r[1].busy_until = b;
		double t = plan(r, 2, len, 0, 0, s, &c);
		CHECK(s[1] <= prev);
		CHECK(s[1] < len / 2);
		if (b >= single)
			CHECK(c == 1 && s[1] == 0 && t == single);
		else
			CHECK(c == 2 && t > b);
		prev = s[1];
	}
	CHECK_EQ(prev, 0);
	/* the busy rail is the fast one: it still gets the bytes it can */
	mrail_model_free((struct mrail_rail_model *)r[1].model);
	r[1].model = profiled(8e9, 5e-6, 2e-6);
	r[1].busy_until = 1e-3;
	plan(r, 2, len, 0, 0, s, &c);
	CHECK(c == 2 && s[1] > s[0]);
	free_rails(r, 2);
}

/* Never worse than single, iso and bw on the same input. */
static void test_baselines(void)
{
	unsigned better_iso = 0, better_bw = 0, n_cases = 0;
	for (int it = 0; it < 2000; it++) {
		unsigned n = 1 + (unsigned)(rnd() % 8);
		struct mrail_split_rail r[MAXR];
		for (unsigned i = 0; i < n; i++) {
			r[i].model = random_model();
			r[i].busy_until = rnd() % 2 ? 0 : logu(1e-7, 1e-2);
			r[i].scale = rnd_scale();
		}
		uint64_t len = (uint64_t)logu(1, 4.0 * GiB), s[MAXR];
		double t = plan(r, n, len, 0, 0, s, NULL);
		double ts = best_single(r, n, len), ti = iso(r, n, len),
		       tb = bw_split(r, n, len);
		CHECK(t <= ts);
		CHECK(t <= ti * (1 + 1e-9));
		CHECK(t <= tb * (1 + 1e-9));
		better_iso += t < ti * 0.99;
		better_bw += t < tb * 0.99;
		n_cases++;
		free_rails(r, n);
	}
	printf("baselines: %u cases, >1%% better than iso in %u, bw in %u\n",
	       n_cases, better_iso, better_bw);
}

/* min_chunk and max_chunks honoured; sizes 1 B..4 GiB on 1..8 rails. */
static void test_limits(void)
{
	struct mrail_split_rail r[MAXR];
	for (unsigned i = 0; i < MAXR; i++)
		r[i] = (struct mrail_split_rail){nominal(1e9, 2e-6), 0, 1};
	uint64_t s[MAXR];
	int c;
	plan(r, 8, 64 * MiB, 0, 3, s, &c);
	CHECK_EQ(c, 3);
	plan(r, 8, 64 * MiB, 0, 0, s, &c);
	CHECK_EQ(c, 8);
	plan(r, 8, 1 * MiB, 512 * KiB, 0, s, &c);
	CHECK_EQ(c, 2);
	plan(r, 8, 1 * MiB - 1, 512 * KiB, 0, s, &c);
	CHECK_EQ(c, 1);
	plan(r, 8, 100, 4 * KiB, 0, s, &c); /* smaller than min_chunk */
	CHECK_EQ(c, 1);
	for (unsigned i = 0; i < MAXR; i++) {
		mrail_model_free((struct mrail_rail_model *)r[i].model);
		r[i].model = random_model();
		r[i].busy_until = i % 3 ? 0 : 1e-4 * i;
		r[i].scale = i % 4 ? 1 : 2;
	}
	for (unsigned n = 1; n <= MAXR; n++)
		for (uint64_t len = 1; len <= 4 * GiB; len *= 2)
			for (uint64_t d = 0; d < 2; d++)
				for (unsigned mc = 0; mc < 4; mc++) {
					static const uint64_t mins[] = {
						0, 4 * KiB, 1 * MiB, 256 * MiB};
					uint64_t l = len + d;
					double t = plan(r, n, l, mins[mc],
							mc == 3 ? 2 : 0, s, &c);
					CHECK(t <= best_single(r, n, l));
				}
	free_rails(r, MAXR);
}

/* Random 2-rail instances against the exact optimum and a grid. */
static void test_reference2(void)
{
	double worst = 0;
	for (int it = 0; it < 4000; it++) {
		struct mrail_split_rail r[2];
		for (unsigned i = 0; i < 2; i++) {
			r[i].model = random_model();
			r[i].busy_until = rnd() % 2 ? 0 : logu(1e-7, 1e-3);
			r[i].scale = rnd_scale();
		}
		uint64_t len = (uint64_t)logu(1, 1.0 * GiB), s[2];
		double t = plan(r, 2, len, 0, 0, s, NULL);
		double ref = exact2(r, len);
		CHECK(t >= ref * (1 - 1e-12));
		CHECK(t <= ref * 1.01);
		worst = fmax(worst, t / ref - 1);
		if (it % 8 == 0) { /* a fine grid never beats the plan */
			for (unsigned g = 0; g <= 1000; g++) {
				uint64_t a = (uint64_t)((double)len * g / 1000);
				if (a > len)
					a = len;
				uint64_t ss[2] = {a, len - a};
				CHECK(t <= finish_of(r, 2, ss) * (1 + 1e-9));
			}
		}
		free_rails(r, 2);
	}
	printf("2-rail reference: worst excess over the optimum %.3g\n",
	       worst);
	CHECK(worst < 1e-6);
}

int main(void)
{
	test_errors();
	test_equal_rails();
	test_equal_finish();
	test_leave_out();
	test_busy();
	test_baselines();
	test_limits();
	test_reference2();
	printf("split plan: ok\n");
	return 0;
}
