/*
 * Equal-completion split (see plan.h and docs/split.md).
 *
 * For a target finish time T, rail i can carry cap_i(T): the largest size
 * s in [m, L] with busy_i + predict_i(s) <= T (0 if not even m bytes fit).
 * cap_i is non-decreasing in T because predict is non-decreasing in size.
 * T is feasible when the K largest capacities sum to at least L (K: the
 * chunk cap, and at most L / m rails so that each can get m bytes). The
 * smallest feasible T is found by bisection between the earliest any rail
 * could finish m bytes and the best single rail's finish; the chunks are
 * then sized between the capacities just below and at that T.
 */
#include "strategies/split/plan.h"

#include "mrail.h"

#include <math.h>
#include <string.h>

typedef unsigned __int128 u128;

#define SPLIT_REL_TOL 1e-9
#define SPLIT_MAX_ITER 200

static double at(const struct mrail_split_rail *r, uint64_t s)
{
	double k = r->scale > 0 ? r->scale : 1.0;
	return r->busy_until + k * mrail_predict(r->model, s);
}

/* Largest s in [m, len] with at(s) <= t; 0 if at(m) > t. */
static uint64_t cap(const struct mrail_split_rail *r, double t, uint64_t m,
		    uint64_t len)
{
	if (!(at(r, m) <= t))
		return 0;
	if (at(r, len) <= t)
		return len;
	uint64_t lo = m, hi = len; /* at(lo) <= t < at(hi) */
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (at(r, mid) <= t)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Marks in sel[] the (at most) k rails of largest non-zero capacity, ties
 * to the lowest index; returns the sum of their capacities. */
static u128 top_k(const uint64_t *c, unsigned n, unsigned k,
		  unsigned char *sel)
{
	u128 sum = 0;
	memset(sel, 0, n);
	for (unsigned j = 0; j < k; j++) {
		int best = -1;
		for (unsigned i = 0; i < n; i++)
			if (!sel[i] && c[i] > 0 &&
			    (best < 0 || c[i] > c[best]))
				best = (int)i;
		if (best < 0)
			break;
		sel[best] = 1;
		sum += c[best];
	}
	return sum;
}

static void caps(const struct mrail_split_rail *rails, unsigned n, double t,
		 uint64_t m, uint64_t len, uint64_t *c)
{
	for (unsigned i = 0; i < n; i++)
		c[i] = cap(&rails[i], t, m, len);
}

static int feasible(const struct mrail_split_rail *rails, unsigned n,
		    double t, uint64_t m, uint64_t len, unsigned k)
{
	uint64_t c[MRAIL_MAX_RAILS];
	unsigned char sel[MRAIL_MAX_RAILS];
	caps(rails, n, t, m, len, c);
	return top_k(c, n, k, sel) >= len;
}

/* Spreads `amount` over the selected rails in proportion to room[i]
 * (sum of room >= amount), adding (sign > 0) or subtracting. */
static void spread(uint64_t *a, const uint64_t *room,
		   const unsigned char *sel, unsigned n, uint64_t amount,
		   int sign)
{
	u128 total = 0;
	uint64_t left = amount;
	uint64_t given[MRAIL_MAX_RAILS] = {0};
	for (unsigned i = 0; i < n; i++)
		if (sel[i])
			total += room[i];
	if (total == 0)
		return;
	for (unsigned i = 0; i < n; i++) {
		if (!sel[i])
			continue;
		given[i] = (uint64_t)((u128)amount * room[i] / total);
		left -= given[i];
	}
	/* The rounding leftover (< rails), one byte at a time in index order:
	 * the total room left is at least the leftover. */
	while (left > 0)
		for (unsigned i = 0; i < n && left > 0; i++)
			if (sel[i] && given[i] < room[i]) {
				given[i]++;
				left--;
			}
	for (unsigned i = 0; i < n; i++)
		if (sel[i])
			a[i] = sign > 0 ? a[i] + given[i] : a[i] - given[i];
}

static int valid(const struct mrail_split_rail *rails, unsigned n,
		 uint64_t length)
{
	if (!rails || n == 0 || n > MRAIL_MAX_RAILS || length == 0)
		return 0;
	for (unsigned i = 0; i < n; i++)
		if (!rails[i].model || !isfinite(rails[i].busy_until) ||
		    rails[i].busy_until < 0 || !isfinite(rails[i].scale) ||
		    rails[i].scale < 0)
			return 0;
	return 1;
}

/* The minimum chunk and the chunk count cap the plan works with. */
static void limits(unsigned n, uint64_t length,
		   const struct mrail_split_params *p, uint64_t *m,
		   unsigned *k)
{
	*m = p && p->min_chunk > 1 ? p->min_chunk : 1;
	if (*m > length)
		*m = length;
	*k = n;
	if (p && p->max_chunks && p->max_chunks < *k)
		*k = p->max_chunks;
	if (length / *m < *k)
		*k = (unsigned)(length / *m);
}

int mrail_split_parts_by(const struct mrail_split_rail *rails, unsigned n,
			 uint64_t length, const struct mrail_split_params *p,
			 double t)
{
	uint64_t m;
	unsigned k;
	if (!valid(rails, n, length) || !(t > 0))
		return 0;
	limits(n, length, p, &m, &k);
	return k >= 2 && feasible(rails, n, t, m, length, k);
}

int mrail_split_plan(const struct mrail_split_rail *rails, unsigned n,
		     uint64_t length, const struct mrail_split_params *p,
		     struct mrail_chunk *out, double *finish)
{
	if (!out || !valid(rails, n, length))
		return MRAIL_ERR_INVALID;

	uint64_t m;
	unsigned k;
	limits(n, length, p, &m, &k);
	double tol = p && p->rel_tol > 0 ? p->rel_tol : SPLIT_REL_TOL;

	/* The best single rail: the upper bound, and the answer on a tie. */
	unsigned best = 0;
	double t_single = at(&rails[0], length);
	for (unsigned i = 1; i < n; i++) {
		double t = at(&rails[i], length);
		if (t < t_single) {
			t_single = t;
			best = i;
		}
	}

	if (k >= 2) {
		double lo = INFINITY, hi = t_single;
		for (unsigned i = 0; i < n; i++)
			lo = fmin(lo, at(&rails[i], m));
		if (feasible(rails, n, lo, m, length, k)) {
			hi = lo;
		} else {
			/* infeasible(lo), feasible(hi) */
			for (int it = 0; it < SPLIT_MAX_ITER; it++) {
				if (hi - lo <= tol * hi)
					break;
				double mid = lo + (hi - lo) / 2;
				if (mid <= lo || mid >= hi)
					break;
				if (feasible(rails, n, mid, m, length, k))
					hi = mid;
				else
					lo = mid;
			}
		}

		uint64_t chi[MRAIL_MAX_RAILS], a[MRAIL_MAX_RAILS];
		uint64_t room[MRAIL_MAX_RAILS];
		unsigned char sel[MRAIL_MAX_RAILS];
		caps(rails, n, hi, m, length, chi);
		top_k(chi, n, k, sel);
		caps(rails, n, lo, m, length, a);
		u128 sum = 0;
		unsigned used = 0;
		for (unsigned i = 0; i < n; i++) {
			if (!sel[i])
				continue;
			used++;
			if (a[i] < m)
				a[i] = m;
			if (a[i] > chi[i])
				a[i] = chi[i];
			sum += a[i];
		}
		if (sum < length) {
			for (unsigned i = 0; i < n; i++)
				room[i] = sel[i] ? chi[i] - a[i] : 0;
			spread(a, room, sel, n, (uint64_t)(length - sum), 1);
		} else if (sum > length) {
			/* min_chunk raised a rail (or lo was feasible) */
			for (unsigned i = 0; i < n; i++)
				room[i] = sel[i] ? a[i] - m : 0;
			spread(a, room, sel, n, (uint64_t)(sum - length), -1);
		}

		double t = 0;
		for (unsigned i = 0; i < n; i++)
			if (sel[i])
				t = fmax(t, at(&rails[i], a[i]));
		if (used >= 2 && t < t_single) {
			unsigned c = 0;
			uint64_t off = 0;
			for (unsigned i = 0; i < n; i++) {
				if (!sel[i])
					continue;
				out[c++] = (struct mrail_chunk){i, off, a[i]};
				off += a[i];
			}
			if (finish)
				*finish = t;
			return (int)c;
		}
	}

	out[0] = (struct mrail_chunk){best, 0, length};
	if (finish)
		*finish = t_single;
	return 1;
}
