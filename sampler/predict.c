/* Per-rail transfer-time model: isotonic curves, interpolation, threshold. */
#include "sampler/predict.h"
#include "mrail.h"

#include <math.h>
#include <stdlib.h>

/* ---- curves ------------------------------------------------------------ */

/*
 * Pool adjacent violators, in place: the non-decreasing sequence closest
 * to t in least squares. Each block is a run of equal fitted values; a
 * new value lower than the last block's mean merges into it (and the
 * merged block may in turn merge into the one before).
 */
static void isotonic(double *t, unsigned n)
{
	double *sum = malloc(n * sizeof *sum);
	unsigned *cnt = malloc(n * sizeof *cnt), nb = 0;
	if (!sum || !cnt) {
		/* Running max: also non-decreasing, needs no memory. */
		for (unsigned i = 1; i < n; i++)
			t[i] = fmax(t[i], t[i - 1]);
	} else {
		for (unsigned i = 0; i < n; i++) {
			sum[nb] = t[i];
			cnt[nb++] = 1;
			while (nb > 1 && sum[nb - 2] / cnt[nb - 2] >
					 sum[nb - 1] / cnt[nb - 1]) {
				sum[nb - 2] += sum[nb - 1];
				cnt[nb - 2] += cnt[nb - 1];
				nb--;
			}
		}
		for (unsigned b = 0, i = 0; b < nb; b++)
			for (unsigned k = 0; k < cnt[b]; k++)
				t[i++] = sum[b] / cnt[b];
	}
	free(sum);
	free(cnt);
}

/* O(1) lookup needs sizes 2^k, 2^(k+1), ... without gaps. */
static int pow2_grid(const struct mrail_curve *c)
{
	if (c->size[0] == 0 || (c->size[0] & (c->size[0] - 1)))
		return -1;
	int k = __builtin_ctzll(c->size[0]);
	for (unsigned i = 1; i < c->n; i++)
		if (k + (int)i > 63 || c->size[i] != UINT64_C(1) << (k + i))
			return -1;
	return k;
}

/* Slope beyond the last sample: the last segment's. A flat one (the fit
 * pooled the last points) would predict free bytes: then the average
 * bandwidth of the last sample. */
static double tail_slope(const struct mrail_curve *c)
{
	unsigned n = c->n;
	if (n >= 2 && c->time[n - 1] > c->time[n - 2])
		return (c->time[n - 1] - c->time[n - 2]) /
		       (double)(c->size[n - 1] - c->size[n - 2]);
	return c->time[n - 1] / (double)c->size[n - 1];
}

static void curve_finish(struct mrail_curve *c)
{
	if (!c->n)
		return;
	isotonic(c->time, c->n);
	c->log2_first = pow2_grid(c);
	c->tail = tail_slope(c);
}

/* Index i of the segment [size[i], size[i+1]) holding s, for
 * size[0] <= s < size[n-1]. */
static unsigned segment(const struct mrail_curve *c, uint64_t s)
{
	if (c->log2_first >= 0)
		return (unsigned)(63 - __builtin_clzll(s) - c->log2_first);
	unsigned lo = 0, hi = c->n - 1; /* size[lo] <= s < size[hi] */
	while (hi - lo > 1) {
		unsigned mid = lo + (hi - lo) / 2;
		if (c->size[mid] <= s)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

double mrail_predict_curve(const struct mrail_curve *c, uint64_t s)
{
	unsigned n = c->n;
	if (s <= c->size[0])
		return c->time[0];
	if (s >= c->size[n - 1])
		return c->time[n - 1] + c->tail * (double)(s - c->size[n - 1]);
	unsigned i = segment(c, s);
	double f = (double)(s - c->size[i]) /
		   (double)(c->size[i + 1] - c->size[i]);
	double t = c->time[i] + (c->time[i + 1] - c->time[i]) * f;
	/* Each step above is monotonic in s, but t[i] + (t[i+1] - t[i])
	 * may round past t[i+1]: clamp, so the next sample stays above. */
	return fmin(t, c->time[i + 1]);
}

/* ---- threshold --------------------------------------------------------- */

/* Largest sample size of c below x, 0 if none (sizes are >= 1). */
static uint64_t size_below(const struct mrail_curve *c, uint64_t x)
{
	if (c->size[0] >= x)
		return 0;
	if (c->size[c->n - 1] < x)
		return c->size[c->n - 1];
	unsigned lo = 0, hi = c->n - 1; /* size[lo] < x <= size[hi] */
	while (hi - lo > 1) {
		unsigned mid = lo + (hi - lo) / 2;
		if (c->size[mid] < x)
			lo = mid;
		else
			hi = mid;
	}
	return c->size[lo];
}

/* rdv(x) - eager(x): negative where rendezvous is faster. */
static double gain(const struct mrail_rail_model *m, uint64_t x)
{
	return mrail_predict_curve(&m->rdv, x) -
	       mrail_predict_curve(&m->eager, x);
}

/*
 * First integer in (a, b] where gain < 0, knowing gain(a) >= 0 > gain(b).
 * Both curves are linear between consecutive breakpoints, so the crossing
 * is computed, then nudged by a few steps against rounding.
 */
static uint64_t crossing(const struct mrail_rail_model *m, uint64_t a,
			 uint64_t b)
{
	double ga = gain(m, a), gb = gain(m, b);
	double x = (double)a + (double)(b - a) * (ga / (ga - gb));
	uint64_t s = x < (double)b ? (uint64_t)x + 1 : b;
	if (s <= a)
		s = a + 1;
	for (int k = 0; k < 64 && s > a + 1 && gain(m, s - 1) < 0; k++)
		s--;
	for (int k = 0; k < 64 && s < b && gain(m, s) >= 0; k++)
		s++;
	return s;
}

/*
 * Walks the breakpoints of both curves (where either is sampled) down
 * from the last eager sample while rendezvous stays faster: the threshold
 * is just past the highest point where it is not. Beyond the last eager
 * sample eager was not measured (the eager limit), so rendezvous it is.
 */
static uint64_t derive_threshold(const struct mrail_rail_model *m)
{
	uint64_t hi = m->eager.size[m->eager.n - 1];
	uint64_t lo = m->rdv.size[0] > m->eager.size[0] ? m->rdv.size[0]
							: m->eager.size[0];
	if (hi < lo || gain(m, hi) >= 0)
		return hi + 1;
	uint64_t b = hi;
	for (;;) {
		uint64_t e = size_below(&m->eager, b), r = size_below(&m->rdv, b);
		uint64_t a = e > r ? e : r;
		if (a < lo)
			return lo; /* faster at every common size */
		if (gain(m, a) >= 0)
			return crossing(m, a, b);
		b = a;
	}
}

static void update_cap(struct mrail_rail_model *m)
{
	m->eager_cap = m->eager.n && m->rdv.n
			       ? mrail_predict_curve(&m->rdv, m->threshold)
			       : INFINITY;
}

static void set_derived_threshold(struct mrail_rail_model *m)
{
	if (m->eager.n && m->rdv.n) {
		m->threshold = derive_threshold(m);
		m->threshold_source = MRAIL_THRESHOLD_DERIVED;
	} else {
		m->threshold = m->rdv.n ? 0 : UINT64_MAX;
		m->threshold_source = MRAIL_THRESHOLD_NONE;
	}
	update_cap(m);
}

/* ---- models ------------------------------------------------------------ */

/* One allocation: the model, then sizes, then times (eager, rdv). */
static struct mrail_rail_model *model_alloc(unsigned ne, unsigned nr)
{
	size_t n = (size_t)ne + nr;
	struct mrail_rail_model *m =
		calloc(1, sizeof *m + n * (sizeof(uint64_t) + sizeof(double)));
	if (!m)
		return NULL;
	uint64_t *sizes = (uint64_t *)(m + 1);
	double *times = (double *)(sizes + n);
	m->eager = (struct mrail_curve){.n = ne, .size = sizes, .time = times,
					.log2_first = -1};
	m->rdv = (struct mrail_curve){.n = nr, .size = sizes + ne,
				      .time = times + ne, .log2_first = -1};
	return m;
}

int mrail_model_from_profile(const struct mrail_profile *p,
			     struct mrail_rail_model **out)
{
	unsigned ne = 0, nr = 0;
	*out = NULL;
	if (mrail_profile_check(p, NULL, 0))
		return MRAIL_ERR_INVALID;
	for (unsigned i = 0; i < p->nsamples; i++) {
		ne += mrail_profile_has(p->samples[i].eager);
		nr += mrail_profile_has(p->samples[i].rdv);
	}
	struct mrail_rail_model *m = model_alloc(ne, nr);
	if (!m)
		return MRAIL_ERR_NOMEM;
	ne = nr = 0;
	for (unsigned i = 0; i < p->nsamples; i++) {
		const struct mrail_profile_sample *s = &p->samples[i];
		if (mrail_profile_has(s->eager)) {
			m->eager.size[ne] = s->size;
			m->eager.time[ne++] = s->eager;
		}
		if (mrail_profile_has(s->rdv)) {
			m->rdv.size[nr] = s->size;
			m->rdv.time[nr++] = s->rdv;
		}
	}
	curve_finish(&m->eager);
	curve_finish(&m->rdv);
	m->source = MRAIL_MODEL_PROFILE;
	set_derived_threshold(m);
	*out = m;
	return MRAIL_OK;
}

int mrail_model_from_nominal(double bandwidth, double latency,
			     struct mrail_rail_model **out)
{
	*out = NULL;
	/* Bounds keep every prediction finite, even at size 2^64 - 1. */
	if (!(bandwidth >= 1 && bandwidth <= 1e18) ||
	    !(latency >= 0 && latency <= MRAIL_PROFILE_MAX_TIME))
		return MRAIL_ERR_INVALID;
	struct mrail_rail_model *m = model_alloc(0, 1);
	if (!m)
		return MRAIL_ERR_NOMEM;
	/* One point at size 0 and the nominal slope: latency + size / bw. */
	m->rdv.size[0] = 0;
	m->rdv.time[0] = latency;
	m->rdv.tail = 1 / bandwidth;
	m->source = MRAIL_MODEL_NOMINAL;
	set_derived_threshold(m);
	*out = m;
	return MRAIL_OK;
}

void mrail_model_free(struct mrail_rail_model *m)
{
	free(m);
}

double mrail_predict(const struct mrail_rail_model *m, uint64_t size)
{
	if (!m->eager.n)
		return mrail_predict_curve(&m->rdv, size);
	if (!m->rdv.n)
		return mrail_predict_curve(&m->eager, size);
	if (size >= m->threshold)
		return mrail_predict_curve(&m->rdv, size);
	return fmin(mrail_predict_curve(&m->eager, size), m->eager_cap);
}

uint64_t mrail_model_threshold(const struct mrail_rail_model *m)
{
	return m->threshold;
}

void mrail_model_set_threshold(struct mrail_rail_model *m, uint64_t size)
{
	m->threshold = size;
	m->threshold_source = MRAIL_THRESHOLD_USER;
	update_cap(m);
}

double mrail_model_bandwidth(const struct mrail_rail_model *m)
{
	const struct mrail_curve *c = m->rdv.n ? &m->rdv : &m->eager;
	return 1 / c->tail;
}

/* One slow repetition-set at the second-largest size makes the last
 * segment nearly flat: in-band models of a 1000 Mbit/s rail read 3-13
 * GB/s under CPU hogs (docs/mrail-sample.md). The slope over the widest
 * span, smallest to largest sample, moves little with one point's error:
 * the asymptotic figure may exceed it only by what a latency step between
 * the curves explains (rendezvous handshakes: below half the largest
 * sample's transfer time on every rail measured). */
#define SPAN_SLOPE_FACTOR 1.5

double mrail_model_bandwidth_checked(const struct mrail_rail_model *m)
{
	double b = mrail_model_bandwidth(m);
	const struct mrail_curve *lo = m->eager.n ? &m->eager : &m->rdv;
	const struct mrail_curve *hi = &m->rdv;
	if (!m->rdv.n || (m->eager.n && m->eager.size[m->eager.n - 1] >
					    m->rdv.size[m->rdv.n - 1]))
		hi = &m->eager;
	uint64_t s0 = lo->size[0], s1 = hi->size[hi->n - 1];
	double dt = hi->time[hi->n - 1] - lo->time[0];
	if (s1 <= s0 || !(dt > 0))
		return b;
	return fmin(b, SPAN_SLOPE_FACTOR * (double)(s1 - s0) / dt);
}

double mrail_model_latency(const struct mrail_rail_model *m)
{
	return mrail_predict(m, 0);
}
