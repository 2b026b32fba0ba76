/*
 * Maximum cardinality, maximum weight bipartite matching (see assign.h).
 *
 * Brute force is the thesis's method (section 3.3.4): enumerate every
 * assignment in lexicographic order and keep the first best one, which is
 * the lowest-index optimum by construction.
 *
 * Beyond 8 interfaces per side (the thesis measured up to 7) enumeration
 * gets slow, so the Hungarian method solves the square problem padded with
 * dummy vertices, on composite weights BIG + w (BIG above any sum of w, so
 * cardinality comes first). It returns some optimum; the lowest-index one
 * is then found on the equality subgraph of the optimal dual, whose perfect
 * matchings are exactly the optimal assignments.
 */
#include "rails/assign.h"

#include "mrail.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAXN MRAIL_ASSIGN_MAX
/* Composite weight of an edge: cardinality first, then weight. */
#define BIG ((long long)MRAIL_ASSIGN_WEIGHT_MAX * MAXN + 1)

/* ---- brute force ------------------------------------------------------ */

struct brute {
	const int *w;
	unsigned na, nb;
	int wmax;
	int bc, bq;           /* best cardinality and weight so far */
	uint64_t used;        /* columns taken by rows 0..i-1 */
	int cur[MAXN], best[MAXN];
};

/*
 * Row i chooses a free column with a positive edge, in increasing order, or
 * none last. Only strictly better leaves replace the best, so the first
 * optimum met (the lexicographically smallest) stays. A branch is cut when
 * even matching all remaining rows at the heaviest weight cannot beat the
 * best strictly: that never cuts a branch that could be chosen.
 */
static void brute_visit(struct brute *s, unsigned i, int c, int q)
{
	int rem = (int)(s->na - i);

	if (c + rem < s->bc ||
	    (c + rem == s->bc && q + rem * s->wmax <= s->bq))
		return;
	if (i == s->na) {
		s->bc = c;
		s->bq = q;
		memcpy(s->best, s->cur, s->na * sizeof *s->cur);
		return;
	}
	for (unsigned j = 0; j < s->nb; j++) {
		int wij = s->w[i * s->nb + j];
		if (wij <= 0 || (s->used >> j & 1))
			continue;
		s->cur[i] = (int)j;
		s->used |= (uint64_t)1 << j;
		brute_visit(s, i + 1, c + 1, q + wij);
		s->used &= ~((uint64_t)1 << j);
	}
	s->cur[i] = -1;
	brute_visit(s, i + 1, c, q);
}

static int assign_brute(const int *w, unsigned na, unsigned nb, int *match)
{
	struct brute s = {.w = w, .na = na, .nb = nb, .bc = -1, .bq = -1};

	for (unsigned k = 0; k < na * nb; k++)
		if (w[k] > s.wmax)
			s.wmax = w[k];
	brute_visit(&s, 0, 0, 0);
	memcpy(match, s.best, na * sizeof *match);
	return s.bc;
}

/* ---- Hungarian method ------------------------------------------------- */

struct hungarian {
	unsigned n;                          /* padded size, 1-based below */
	long long a[MAXN + 1][MAXN + 1];     /* cost = -composite weight */
	long long u[MAXN + 1], v[MAXN + 1];  /* dual: u_i + v_j <= a_ij */
	int p[MAXN + 1];                     /* row matched to column j */
	int way[MAXN + 1];
	long long minv[MAXN + 1];
	unsigned char used[MAXN + 1];
};

/* Augment from row i along shortest reduced-cost paths (Kuhn-Munkres in
 * its O(n^2)-per-row form). */
static void hungarian_row(struct hungarian *h, int i)
{
	int n = (int)h->n, j0 = 0;

	h->p[0] = i;
	for (int j = 0; j <= n; j++) {
		h->minv[j] = LLONG_MAX;
		h->used[j] = 0;
	}
	do {
		int i0 = h->p[j0], j1 = 0;
		long long delta = LLONG_MAX;
		h->used[j0] = 1;
		for (int j = 1; j <= n; j++) {
			if (h->used[j])
				continue;
			long long cur = h->a[i0][j] - h->u[i0] - h->v[j];
			if (cur < h->minv[j]) {
				h->minv[j] = cur;
				h->way[j] = j0;
			}
			if (h->minv[j] < delta) {
				delta = h->minv[j];
				j1 = j;
			}
		}
		for (int j = 0; j <= n; j++) {
			if (h->used[j]) {
				h->u[h->p[j]] += delta;
				h->v[j] -= delta;
			} else {
				h->minv[j] -= delta;
			}
		}
		j0 = j1;
	} while (h->p[j0] != 0);
	do {
		int j1 = h->way[j0];
		h->p[j0] = h->p[j1];
		j0 = j1;
	} while (j0);
}

static void hungarian_solve(struct hungarian *h, const int *w, unsigned na,
			    unsigned nb)
{
	for (unsigned i = 1; i <= h->n; i++)
		for (unsigned j = 1; j <= h->n; j++) {
			int wij = i <= na && j <= nb ? w[(i - 1) * nb + j - 1]
						     : 0;
			h->a[i][j] = wij > 0 ? -(BIG + wij) : 0;
		}
	for (unsigned i = 1; i <= h->n; i++)
		hungarian_row(h, (int)i);
}

/* ---- lowest-index optimum on the equality subgraph -------------------- */

struct canon {
	unsigned n, na, nb;
	const int *w;
	unsigned char tight[MAXN][MAXN]; /* reduced cost 0: in some optimum */
	int row_col[MAXN], col_row[MAXN];
	unsigned char fixed[MAXN];       /* row decided matched: stays put */
	int par[MAXN], queue[MAXN];
	unsigned char seen[MAXN];
};

/* Column c holds no real edge of row r: taking it leaves r unmatched. */
static int zero_col(const struct canon *s, int r, int c)
{
	return (unsigned)r >= s->na || (unsigned)c >= s->nb ||
	       s->w[r * (int)s->nb + c] <= 0;
}

/* Rows along the BFS tree shift one column each: `end` takes c0, and so on
 * back to `start`, whose column j goes to row i. */
static void shift_path(struct canon *s, int i, int start, int end, int c0)
{
	int x = end, col = c0;
	for (;;) {
		int old = s->row_col[x];
		s->row_col[x] = col;
		s->col_row[col] = x;
		if (x == start) {
			s->row_col[i] = old;
			s->col_row[old] = i;
			return;
		}
		col = old;
		x = s->par[x];
	}
}

/*
 * Is there an optimal assignment, consistent with the rows decided so
 * far, where row i takes column j? Equivalent to an alternating cycle
 * through (i, j) in the equality subgraph: the row holding j must move on,
 * and so on, until some row takes i's current column c0. Found by BFS;
 * when found the current assignment is switched to it.
 *
 * Rows decided matched must keep their column. Rows decided unmatched may
 * move: no optimum consistent with the decisions before theirs gives them
 * an edge, and every cycle found here keeps those decisions, so they only
 * ever move between columns that leave them unmatched.
 */
static int try_move(struct canon *s, int i, int j)
{
	int c0 = s->row_col[i], start = s->col_row[j], head = 0, tail = 0;

	if (c0 == j)
		return 1;
	if (s->fixed[start])
		return 0;
	memset(s->seen, 0, sizeof s->seen);
	s->seen[start] = 1;
	s->seen[i] = 1;
	s->queue[tail++] = start;
	while (head < tail) {
		int x = s->queue[head++];
		for (int c = 0; c < (int)s->n; c++) {
			if (c == j || !s->tight[x][c])
				continue;
			if (c == c0) {
				shift_path(s, i, start, x, c0);
				return 1;
			}
			int y = s->col_row[c];
			if (s->seen[y] || s->fixed[y])
				continue;
			s->seen[y] = 1;
			s->par[y] = x;
			s->queue[tail++] = y;
		}
	}
	return 0;
}

/* Decide rows in order: the smallest column that still allows an optimum,
 * else unmatched (then the current assignment already has it so). */
static int canonicalize(struct canon *s, int *match)
{
	int card = 0;
	for (int i = 0; i < (int)s->na; i++) {
		match[i] = -1;
		for (int j = 0; j < (int)s->nb; j++) {
			if (zero_col(s, i, j) || !s->tight[i][j] ||
			    !try_move(s, i, j))
				continue;
			s->fixed[i] = 1;
			match[i] = j;
			card++;
			break;
		}
	}
	return card;
}

static int assign_hungarian(const int *w, unsigned na, unsigned nb,
			    int *match)
{
	struct hungarian *h = calloc(1, sizeof *h);
	struct canon *s = calloc(1, sizeof *s);
	int rc = MRAIL_ERR_NOMEM;

	if (!h || !s)
		goto out;
	h->n = na > nb ? na : nb;
	hungarian_solve(h, w, na, nb);
	s->n = h->n;
	s->na = na;
	s->nb = nb;
	s->w = w;
	for (unsigned i = 0; i < s->n; i++)
		for (unsigned j = 0; j < s->n; j++)
			s->tight[i][j] = h->a[i + 1][j + 1] - h->u[i + 1] -
						 h->v[j + 1] ==
					 0;
	for (unsigned j = 1; j <= h->n; j++) {
		s->row_col[h->p[j] - 1] = (int)j - 1;
		s->col_row[j - 1] = h->p[j] - 1;
	}
	rc = canonicalize(s, match);
out:
	free(h);
	free(s);
	return rc;
}

/* ---- entry point ------------------------------------------------------ */

int mrail_assign(const int *w, unsigned na, unsigned nb, int algo,
		 int *match)
{
	if (na > MAXN || nb > MAXN || (na && nb && !w) || (na && !match))
		return MRAIL_ERR_INVALID;
	for (unsigned k = 0; k < na * nb; k++)
		if (w[k] < 0 || w[k] > MRAIL_ASSIGN_WEIGHT_MAX)
			return MRAIL_ERR_INVALID;
	if (na == 0 || nb == 0) {
		for (unsigned i = 0; i < na; i++)
			match[i] = -1;
		return 0;
	}
	if (algo == MRAIL_ASSIGN_AUTO)
		algo = na <= MRAIL_ASSIGN_BRUTE_MAX && nb <= MRAIL_ASSIGN_BRUTE_MAX
			       ? MRAIL_ASSIGN_BRUTE
			       : MRAIL_ASSIGN_HUNGARIAN;
	if (algo == MRAIL_ASSIGN_BRUTE)
		return assign_brute(w, na, nb, match);
	if (algo == MRAIL_ASSIGN_HUNGARIAN)
		return assign_hungarian(w, na, nb, match);
	return MRAIL_ERR_INVALID;
}
