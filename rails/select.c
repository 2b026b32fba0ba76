/*
 * Address selection after Peiselt, chapter 3 (see select.h and
 * docs/address-selection.md): weight every pair of interfaces by the best
 * connection type over their address pairs, take the matching of maximum
 * cardinality and then maximum weight (rails/assign.c), and when it is
 * empty try the thesis's last resort, one private IPv4 pair (section 3.4).
 */
#include "rails/select.h"

#include "mrail.h"
#include "rails/assign.h"
#include "rails/netaddr.h"

#include <stdlib.h>
#include <string.h>

/* ---- one address pair ------------------------------------------------- */

static int in_dup(const struct mrail_netif_addr *a,
		  const struct mrail_netif_addr *dup, unsigned ndup)
{
	for (unsigned k = 0; k < ndup; k++)
		if (mrail_netaddr_equal(a, &dup[k]))
			return 1;
	return 0;
}

/*
 * "Same network prefix" (thesis 3.2): each address lies in the other's
 * network, i.e. they agree on the longer of the two prefixes. Both kernels
 * then see the other end on-link; it is the literal rule when the prefix
 * lengths match, and it is symmetric, so both ends agree.
 */
static int same_network(const struct mrail_netif_addr *x,
			const struct mrail_netif_addr *y)
{
	unsigned bits = x->prefix_len > y->prefix_len ? x->prefix_len
						       : y->prefix_len;
	return mrail_netaddr_prefix_equal(x, y, bits);
}

/* Thesis 3.2 step 3: a private network in which some address is held by
 * several hosts cannot be trusted to be one network. The network is taken
 * wide (the shorter prefix) so that no view of it hides a collision. */
static int net_has_dup(const struct mrail_netif_addr *x,
		       const struct mrail_netif_addr *y,
		       const struct mrail_netif_addr *dup, unsigned ndup)
{
	unsigned bits = x->prefix_len < y->prefix_len ? x->prefix_len
						       : y->prefix_len;
	for (unsigned k = 0; k < ndup; k++)
		if (mrail_netaddr_prefix_equal(x, &dup[k], bits))
			return 1;
	return 0;
}

/* The address can be an endpoint of a connection to another host. */
static int endpoint_ok(const struct mrail_netif_addr *a)
{
	return mrail_netaddr_valid(a) && !mrail_netaddr_is_loopback(a) &&
	       !mrail_netaddr_is_unusable(a);
}

int mrail_conn_type(const struct mrail_netif_addr *x,
		    const struct mrail_netif_addr *y,
		    const struct mrail_netif_addr *dup, unsigned ndup)
{
	if (!endpoint_ok(x) || !endpoint_ok(y) || x->family != y->family)
		return MRAIL_CONN_NONE;
	/* One address on two hosts names neither reliably (table 3.1,
	 * "address collisions"), whatever its class. */
	if (mrail_netaddr_equal(x, y) || in_dup(x, dup, ndup) ||
	    in_dup(y, dup, ndup))
		return MRAIL_CONN_NONE;
	int px = mrail_netaddr_is_private(x), py = mrail_netaddr_is_private(y);
	int same = same_network(x, y);
	if (px && py)
		return same && !net_has_dup(x, y, dup, ndup)
			       ? MRAIL_CONN_PRIVATE_SAME
			       : MRAIL_CONN_NONE;
	if (px || py) /* a private end is not reachable from outside */
		return MRAIL_CONN_NONE;
	return same ? MRAIL_CONN_PUBLIC_SAME : MRAIL_CONN_PUBLIC_ROUTED;
}

int mrail_conn_weight(int type)
{
	switch (type) {
	case MRAIL_CONN_PRIVATE_SAME:
		return 1;
	case MRAIL_CONN_PUBLIC_ROUTED:
		return 2;
	case MRAIL_CONN_PUBLIC_SAME:
		return 3;
	default:
		return 0;
	}
}

const char *mrail_conn_type_name(int type)
{
	switch (type) {
	case MRAIL_CONN_NONE:
		return "none";
	case MRAIL_CONN_PRIVATE_SAME:
		return "private, same network";
	case MRAIL_CONN_PUBLIC_SAME:
		return "public, same network";
	case MRAIL_CONN_PUBLIC_ROUTED:
		return "public, routed";
	case MRAIL_CONN_PRIVATE_FALLBACK:
		return "private, other network (last resort)";
	default:
		return "?";
	}
}

/* ---- one interface pair ----------------------------------------------- */

/*
 * Among equally good address pairs of one interface pair: IPv4 first (the
 * smaller header carries more payload per packet), then by the lower and
 * then the higher address. The order does not depend on which host is
 * side a, so both orientations pick the same addresses.
 */
static int pair_key_cmp(const struct mrail_netif_addr *x1,
			const struct mrail_netif_addr *y1,
			const struct mrail_netif_addr *x2,
			const struct mrail_netif_addr *y2)
{
	if (x1->family != x2->family)
		return x1->family < x2->family ? -1 : 1;
	int o1 = mrail_netaddr_cmp(x1, y1) > 0, o2 = mrail_netaddr_cmp(x2, y2) > 0;
	const struct mrail_netif_addr *lo1 = o1 ? y1 : x1, *hi1 = o1 ? x1 : y1;
	const struct mrail_netif_addr *lo2 = o2 ? y2 : x2, *hi2 = o2 ? x2 : y2;
	int c = mrail_netaddr_cmp(lo1, lo2);
	return c ? c : mrail_netaddr_cmp(hi1, hi2);
}

struct edge {
	int type;         /* best connection type of the interface pair */
	unsigned xa, yb;  /* the address pair that gives it */
};

/* Thesis 3.3: each pair of interfaces is worth its best address pair. */
static struct edge best_edge(const struct mrail_netif *ia,
			     const struct mrail_netif *ib,
			     const struct mrail_netif_addr *dup,
			     unsigned ndup)
{
	struct edge e = {MRAIL_CONN_NONE, 0, 0};

	if ((ia->flags | ib->flags) & MRAIL_NETIF_LOOPBACK)
		return e;
	for (unsigned x = 0; x < ia->naddrs; x++)
		for (unsigned y = 0; y < ib->naddrs; y++) {
			int t = mrail_conn_type(&ia->addrs[x], &ib->addrs[y],
						dup, ndup);
			int w = mrail_conn_weight(t), we = mrail_conn_weight(e.type);
			if (w == 0 || w < we)
				continue;
			if (w == we && pair_key_cmp(&ia->addrs[x], &ib->addrs[y],
						    &ia->addrs[e.xa],
						    &ib->addrs[e.yb]) >= 0)
				continue;
			e = (struct edge){t, x, y};
		}
	return e;
}

/* ---- the last resort (thesis 3.4) ------------------------------------- */

/* Both ends private IPv4, neither collided: each end is "the remote host"
 * of the other, and a rail is used in both directions. */
static int fallback_ok(const struct mrail_netif_addr *x,
		       const struct mrail_netif_addr *y,
		       const struct mrail_netif_addr *dup, unsigned ndup)
{
	return endpoint_ok(x) && endpoint_ok(y) && x->family == 4 &&
	       y->family == 4 && mrail_netaddr_is_private(x) &&
	       mrail_netaddr_is_private(y) && !mrail_netaddr_equal(x, y) &&
	       !in_dup(x, dup, ndup) && !in_dup(y, dup, ndup);
}

/* Fallback candidates of one interface pair into *p: the first in the
 * address order of pair_key_cmp, over this and earlier interface pairs. */
static void fallback_scan(const struct mrail_sel_input *in, unsigned i,
			  unsigned j, struct mrail_sel_pair *p, int *found)
{
	const struct mrail_netif *ia = &in->a[i], *ib = &in->b[j];

	if ((ia->flags | ib->flags) & MRAIL_NETIF_LOOPBACK)
		return;
	for (unsigned x = 0; x < ia->naddrs; x++)
		for (unsigned y = 0; y < ib->naddrs; y++) {
			if (!fallback_ok(&ia->addrs[x], &ib->addrs[y], in->dup,
					 in->ndup))
				continue;
			if (*found &&
			    pair_key_cmp(&ia->addrs[x], &ib->addrs[y],
					 &in->a[p->a_if].addrs[p->a_addr],
					 &in->b[p->b_if].addrs[p->b_addr]) >= 0)
				continue;
			*p = (struct mrail_sel_pair){
				i, x, j, y, MRAIL_CONN_PRIVATE_FALLBACK};
			*found = 1;
		}
}

/* The usable private pair that comes first in the address order (which
 * does not depend on the orientation); equal ones: lowest indexes. */
static int find_fallback(const struct mrail_sel_input *in,
			 struct mrail_sel_pair *p)
{
	int found = 0;
	for (unsigned i = 0; i < in->na; i++)
		for (unsigned j = 0; j < in->nb; j++)
			fallback_scan(in, i, j, p, &found);
	return found;
}

/* ---- input checks and messages ---------------------------------------- */

static int check_side(const struct mrail_netif *ifs, unsigned n,
		      const char *side, char *why, size_t whylen)
{
	size_t used = 0;
	if (n > MRAIL_NETIF_MAX || (n && !ifs)) {
		mrail_rails_appendf(why, whylen, &used,
				    "host %s: %u interfaces (at most %d)", side,
				    n, MRAIL_NETIF_MAX);
		return MRAIL_ERR_INVALID;
	}
	for (unsigned i = 0; i < n; i++)
		if (ifs[i].naddrs > MRAIL_NETIF_ADDRS_MAX) {
			mrail_rails_appendf(why, whylen, &used,
					    "host %s: interface %u has %u "
					    "addresses (at most %d)", side, i,
					    ifs[i].naddrs,
					    MRAIL_NETIF_ADDRS_MAX);
			return MRAIL_ERR_INVALID;
		}
	return MRAIL_OK;
}

static void list_side(const struct mrail_netif *ifs, unsigned n, char *buf,
		      size_t len, size_t *used)
{
	if (n == 0)
		mrail_rails_appendf(buf, len, used, "(no interface)");
	for (unsigned i = 0; i < n; i++) {
		char one[400];
		mrail_netif_format(&ifs[i], one, sizeof one);
		mrail_rails_appendf(buf, len, used, "%s%s", i ? ", " : "", one);
	}
}

static void explain(const struct mrail_sel_input *in, unsigned refused,
		    char *why, size_t whylen)
{
	size_t used = 0;
	mrail_rails_appendf(why, whylen, &used,
			    "no interface pair can carry a rail (needs "
			    "addresses of one family, public IPv4/IPv6 or "
			    "private IPv4 on one network; no private IPv4 "
			    "pair left to try as last resort)");
	if (refused)
		mrail_rails_appendf(why, whylen, &used,
				    "; %u interface pair(s) refused because an "
				    "address is held by several hosts of the job",
				    refused);
	mrail_rails_appendf(why, whylen, &used, "; host a: ");
	list_side(in->a, in->na, why, whylen, &used);
	mrail_rails_appendf(why, whylen, &used, "; host b: ");
	list_side(in->b, in->nb, why, whylen, &used);
}

/* Address pairs that would connect but for a collision (for `why`). */
static unsigned count_refused(const struct mrail_sel_input *in)
{
	unsigned n = 0;
	if (in->ndup == 0)
		return 0;
	for (unsigned i = 0; i < in->na; i++)
		for (unsigned j = 0; j < in->nb; j++)
			if (best_edge(&in->a[i], &in->b[j], NULL, 0).type !=
			    MRAIL_CONN_NONE)
				n++;
	return n;
}

/* ---- entry point ------------------------------------------------------ */

struct sel_work {
	struct edge e[MRAIL_NETIF_MAX][MRAIL_NETIF_MAX];
	int w[MRAIL_NETIF_MAX * MRAIL_NETIF_MAX];
	int match[MRAIL_NETIF_MAX];
};

static int match_interfaces(const struct mrail_sel_input *in,
			    struct sel_work *s)
{
	for (unsigned i = 0; i < in->na; i++)
		for (unsigned j = 0; j < in->nb; j++) {
			s->e[i][j] = best_edge(&in->a[i], &in->b[j], in->dup,
					       in->ndup);
			s->w[i * in->nb + j] = mrail_conn_weight(s->e[i][j].type);
		}
	return mrail_assign(s->w, in->na, in->nb, MRAIL_ASSIGN_AUTO, s->match);
}

static void emit(const struct mrail_sel_input *in, const struct sel_work *s,
		 struct mrail_sel_pair *out, unsigned max, unsigned *n)
{
	for (unsigned i = 0; i < in->na && *n < max; i++) {
		if (s->match[i] < 0)
			continue;
		unsigned j = (unsigned)s->match[i];
		const struct edge *e = &s->e[i][j];
		out[(*n)++] = (struct mrail_sel_pair){i, e->xa, j, e->yb,
						      e->type};
	}
}

int mrail_select_rails(const struct mrail_sel_input *in,
		       struct mrail_sel_pair *out, unsigned max, unsigned *n,
		       char *why, size_t whylen)
{
	char scratch[1];
	if (!why) {
		why = scratch;
		whylen = sizeof scratch;
	}
	if (whylen)
		why[0] = '\0';
	if (!in || !n || (max && !out) || (in->ndup && !in->dup))
		return MRAIL_ERR_INVALID;
	*n = 0;
	int rc = check_side(in->a, in->na, "a", why, whylen);
	if (rc == MRAIL_OK)
		rc = check_side(in->b, in->nb, "b", why, whylen);
	if (rc != MRAIL_OK)
		return rc;

	struct sel_work *s = malloc(sizeof *s);
	if (!s)
		return MRAIL_ERR_NOMEM;
	int card = match_interfaces(in, s);
	if (card > 0) {
		emit(in, s, out, max, n);
	} else if (card == 0) {
		struct mrail_sel_pair p;
		if (find_fallback(in, &p)) {
			if (max)
				out[(*n)++] = p;
		} else {
			explain(in, count_refused(in), why, whylen);
			card = MRAIL_ERR_NOT_FOUND;
		}
	}
	free(s);
	return card < 0 ? card : MRAIL_OK;
}
