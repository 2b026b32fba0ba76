/*
 * The assignment algorithms against each other and against the thesis's
 * literal method (every permutation of the square matrix padded with
 * dummies, section 3.3.3-3.3.4), on random instances: up to 8 per side
 * (where selection enumerates) and beyond (where it runs the Hungarian
 * method). Then whole selections on random interface tables of 9-12
 * interfaces per side, checked against brute force on their weights.
 */
#include "rails_test.h"

#include "rails/assign.h"

#include <stdint.h>
#include <time.h>

static uint64_t rng = 88172645463325252ull;

static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

/* ---- the thesis's method, literally ----------------------------------- */

struct perm_best {
	int c, q;
	int match[16];
};

static void score_perm(const int *w, unsigned na, unsigned nb,
		       const unsigned *p, struct perm_best *b)
{
	int c = 0, q = 0, m[16];
	for (unsigned i = 0; i < na; i++) {
		m[i] = -1;
		if (p[i] < nb && w[i * nb + p[i]] > 0) {
			m[i] = (int)p[i];
			c++;
			q += w[i * nb + p[i]];
		}
	}
	/* C(P) first, then Q(P); equal ones: lowest partner vector (an
	 * unmatched row, -1, counts as highest). */
	int better = c > b->c || (c == b->c && q > b->q);
	if (!better && c == b->c && q == b->q)
		for (unsigned i = 0; i < na; i++) {
			unsigned x = (unsigned)m[i], y = (unsigned)b->match[i];
			if (x != y) {
				better = x < y;
				break;
			}
		}
	if (better) {
		b->c = c;
		b->q = q;
		memcpy(b->match, m, sizeof m);
	}
}

/* All permutations of 0..n-1 in lexicographic order (3.3.4). */
static void perm_visit(const int *w, unsigned na, unsigned nb, unsigned n,
		       unsigned *p, unsigned k, unsigned used,
		       struct perm_best *b)
{
	if (k == n) {
		score_perm(w, na, nb, p, b);
		return;
	}
	for (unsigned v = 0; v < n; v++)
		if (!(used >> v & 1)) {
			p[k] = v;
			perm_visit(w, na, nb, n, p, k + 1, used | 1u << v, b);
		}
}

static int thesis_assign(const int *w, unsigned na, unsigned nb, int *match)
{
	unsigned n = na > nb ? na : nb, p[16];
	struct perm_best b = {.c = -1};
	perm_visit(w, na, nb, n, p, 0, 0, &b);
	memcpy(match, b.match, na * sizeof *match);
	return b.c;
}

/* ---- helpers ----------------------------------------------------------- */

static void random_matrix(int *w, unsigned na, unsigned nb, unsigned density,
			  int wmax)
{
	for (unsigned k = 0; k < na * nb; k++)
		w[k] = rnd(100) < density ? 1 + (int)rnd((unsigned)wmax) : 0;
}

static int weight_of(const int *w, unsigned nb, const int *m, unsigned na)
{
	int q = 0;
	for (unsigned i = 0; i < na; i++)
		if (m[i] >= 0)
			q += w[i * nb + (unsigned)m[i]];
	return q;
}

/* A matching: partners in range, on edges, no column twice. */
static void check_matching(const int *w, unsigned na, unsigned nb,
			   const int *m, int card)
{
	uint64_t cols = 0;
	int c = 0;
	for (unsigned i = 0; i < na; i++) {
		if (m[i] < 0)
			continue;
		CHECK((unsigned)m[i] < nb);
		CHECK(w[i * nb + (unsigned)m[i]] > 0);
		CHECK(!(cols >> m[i] & 1));
		cols |= (uint64_t)1 << m[i];
		c++;
	}
	CHECK_EQ(c, card);
}

static void check_same(const int *w, unsigned na, unsigned nb, int c1,
		       const int *m1, int c2, const int *m2)
{
	CHECK_EQ(c1, c2);
	for (unsigned i = 0; i < na; i++)
		if (m1[i] != m2[i]) {
			fprintf(stderr, "%ux%u: row %u: %d vs %d (weights %d "
				"vs %d)\n", na, nb, i, m1[i], m2[i],
				weight_of(w, nb, m1, na), weight_of(w, nb, m2, na));
			exit(1);
		}
}

/* ---- matrices ---------------------------------------------------------- */

/* Up to 7 per side: enumeration and Hungarian both equal the literal
 * permutation method, tie-breaking included. */
static void test_vs_thesis_method(void)
{
	int w[64], m1[8], m2[8], m3[8];
	for (unsigned round = 0; round < 3000; round++) {
		unsigned na = 1 + rnd(7), nb = 1 + rnd(7);
		random_matrix(w, na, nb, 10 + rnd(91), round % 3 ? 3 : 1 + (int)rnd(20));
		int c1 = thesis_assign(w, na, nb, m1);
		int c2 = mrail_assign(w, na, nb, MRAIL_ASSIGN_BRUTE, m2);
		int c3 = mrail_assign(w, na, nb, MRAIL_ASSIGN_HUNGARIAN, m3);
		check_matching(w, na, nb, m1, c1);
		check_same(w, na, nb, c1, m1, c2, m2);
		check_same(w, na, nb, c1, m1, c3, m3);
	}
}

/* More than 8 per side: the Hungarian method against enumeration. */
static void test_beyond_eight(void)
{
	int w[12 * 12], m1[12], m2[12], m3[12];
	for (unsigned round = 0; round < 300; round++) {
		unsigned na = 9 + rnd(3), nb = 9 + rnd(3);
		/* few weights and dense rows: many ties */
		random_matrix(w, na, nb, round % 2 ? 30 : 70, round % 4 ? 3 : 1);
		int c1 = mrail_assign(w, na, nb, MRAIL_ASSIGN_BRUTE, m1);
		int c2 = mrail_assign(w, na, nb, MRAIL_ASSIGN_HUNGARIAN, m2);
		int c3 = mrail_assign(w, na, nb, MRAIL_ASSIGN_AUTO, m3);
		check_matching(w, na, nb, m1, c1);
		check_same(w, na, nb, c1, m1, c2, m2);
		check_same(w, na, nb, c1, m1, c3, m3);
	}
}

/* Cardinality comes before weight. */
static void test_cardinality_first(void)
{
	/* One heavy edge 0-0, or two light ones 0-1 and 1-0. */
	int w[4] = {1000, 1, 1, 0}, m[2];
	for (int algo = MRAIL_ASSIGN_BRUTE; algo <= MRAIL_ASSIGN_HUNGARIAN; algo++) {
		CHECK_EQ(mrail_assign(w, 2, 2, algo, m), 2);
		CHECK_EQ(m[0], 1);
		CHECK_EQ(m[1], 0);
	}
}

/* 64 x 64 (MRAIL_NETIF_MAX): quick, a valid matching of the size a plain
 * augmenting-path search finds. */
static int kuhn_try(const int *w, unsigned n, unsigned i, int *col_row,
		    unsigned char *seen)
{
	for (unsigned j = 0; j < n; j++) {
		if (!w[i * n + j] || seen[j])
			continue;
		seen[j] = 1;
		if (col_row[j] < 0 ||
		    kuhn_try(w, n, (unsigned)col_row[j], col_row, seen)) {
			col_row[j] = (int)i;
			return 1;
		}
	}
	return 0;
}

static void test_sixty_four(void)
{
	enum { N = MRAIL_ASSIGN_MAX };
	static int w[N * N];
	int m[N], col_row[N];
	for (unsigned round = 0; round < 5; round++) {
		random_matrix(w, N, N, round == 0 ? 100 : 3 + round * 2, 3);
		clock_t t0 = clock();
		int c = mrail_assign(w, N, N, MRAIL_ASSIGN_AUTO, m);
		double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
		check_matching(w, N, N, m, c);
		int k = 0;
		for (unsigned j = 0; j < N; j++)
			col_row[j] = -1;
		for (unsigned i = 0; i < N; i++) {
			unsigned char seen[N] = {0};
			k += kuhn_try(w, N, i, col_row, seen);
		}
		CHECK_EQ(c, k);
		CHECK(secs < 2.0);
	}
}

static void test_invalid(void)
{
	int w[4] = {0, 1, 2, 3}, m[2];
	CHECK_EQ(mrail_assign(w, MRAIL_ASSIGN_MAX + 1, 1, 0, m),
		 MRAIL_ERR_INVALID);
	w[0] = -1;
	CHECK_EQ(mrail_assign(w, 2, 2, 0, m), MRAIL_ERR_INVALID);
	w[0] = MRAIL_ASSIGN_WEIGHT_MAX + 1;
	CHECK_EQ(mrail_assign(w, 2, 2, 0, m), MRAIL_ERR_INVALID);
	w[0] = 0;
	CHECK_EQ(mrail_assign(w, 2, 2, 7, m), MRAIL_ERR_INVALID);
	CHECK_EQ(mrail_assign(w, 2, 0, 0, m), 0);
	CHECK_EQ(m[0], -1);
	CHECK_EQ(m[1], -1);
}

/* ---- whole selections -------------------------------------------------- */

/* An address from a small pool, so that networks are often shared. Side
 * b's hosts get other host numbers than side a's. */
static void random_addr(char *buf, size_t len, unsigned side)
{
	unsigned net = rnd(4), host = 1 + side * 100 + rnd(90);
	switch (rnd(5)) {
	case 0:
		snprintf(buf, len, "10.0.%u.%u/24", net, host);
		break;
	case 1:
		snprintf(buf, len, "193.175.%u.%u/24", net, host);
		break;
	case 2:
		snprintf(buf, len, "2001:db8:%u::%u/64", net, host);
		break;
	case 3:
		snprintf(buf, len, "192.168.%u.%u/24", net, host);
		break;
	default:
		snprintf(buf, len, "fd00:%u::%u/64", net, host);
		break;
	}
}

static void random_table(struct mrail_netif *t, unsigned n, unsigned side)
{
	for (unsigned i = 0; i < n; i++) {
		char name[16], addrs[256] = "", one[64];
		unsigned k = 1 + rnd(3);
		for (unsigned x = 0; x < k; x++) {
			random_addr(one, sizeof one, side);
			snprintf(addrs + strlen(addrs), sizeof addrs - strlen(addrs),
				 "%s%s", x ? " " : "", one);
		}
		int lo = rnd(8) == 0;
		snprintf(name, sizeof name, "%s%u", lo ? "lo" : "eth", i);
		mkif(&t[i], name, addrs);
		if (lo)
			t[i].flags |= MRAIL_NETIF_LOOPBACK;
	}
}

/* The weights selection must have used, from the exported pieces. */
static void weights_of(const struct mrail_netif *a, unsigned na,
		       const struct mrail_netif *b, unsigned nb,
		       const struct mrail_netif_addr *dup, unsigned ndup, int *w)
{
	for (unsigned i = 0; i < na; i++)
		for (unsigned j = 0; j < nb; j++) {
			int best = 0;
			if ((a[i].flags | b[j].flags) & MRAIL_NETIF_LOOPBACK) {
				w[i * nb + j] = 0;
				continue;
			}
			for (unsigned x = 0; x < a[i].naddrs; x++)
				for (unsigned y = 0; y < b[j].naddrs; y++) {
					int t = mrail_conn_type(&a[i].addrs[x],
								&b[j].addrs[y],
								dup, ndup);
					if (mrail_conn_weight(t) > best)
						best = mrail_conn_weight(t);
				}
			w[i * nb + j] = best;
		}
}

static void test_random_selections(void)
{
	struct mrail_netif a[12], b[12];
	struct mrail_netif_addr dup[2];
	struct mrail_sel_pair p[12];
	int w[12 * 12], m[12];
	char why[4096];

	for (unsigned round = 0; round < 200; round++) {
		unsigned na = 9 + rnd(4), nb = 9 + rnd(4), n = 0;
		unsigned ndup = rnd(3);
		random_table(a, na, 0);
		random_table(b, nb, 1);
		for (unsigned k = 0; k < ndup; k++)
			dup[k] = addr_of(rnd(2) ? "10.0.1.50" : "192.168.2.7");
		struct mrail_sel_input in = {a, na, b, nb, dup, ndup};
		int rc = mrail_select_rails(&in, p, 12, &n, why, sizeof why);
		weights_of(a, na, b, nb, dup, ndup, w);
		int c = mrail_assign(w, na, nb, MRAIL_ASSIGN_BRUTE, m);
		if (c == 0) {
			/* then only the last resort, or nothing */
			CHECK(rc == MRAIL_ERR_NOT_FOUND ||
			      (n == 1 && p[0].type == MRAIL_CONN_PRIVATE_FALLBACK));
			continue;
		}
		CHECK_EQ(rc, MRAIL_OK);
		CHECK_EQ(n, (unsigned)c);
		for (unsigned i = 0, k = 0; i < na; i++) {
			if (m[i] < 0)
				continue;
			CHECK_EQ(p[k].a_if, i);
			CHECK_EQ(p[k].b_if, (unsigned)m[i]);
			int t = mrail_conn_type(&a[i].addrs[p[k].a_addr],
						&b[m[i]].addrs[p[k].b_addr],
						dup, ndup);
			CHECK_EQ(t, p[k].type);
			CHECK_EQ(mrail_conn_weight(t), w[i * nb + (unsigned)m[i]]);
			k++;
		}
	}
}

int main(void)
{
	test_vs_thesis_method();
	test_beyond_eight();
	test_cardinality_first();
	test_sixty_four();
	test_invalid();
	test_random_selections();
	return 0;
}
