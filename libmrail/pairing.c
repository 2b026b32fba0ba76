/*
 * Which rails a gate gets. Processes of the same host (same network
 * namespace) talk over the rails drivers list themselves (tcp's loopback
 * rails, the fake driver's, shared-memory domains); processes of
 * different hosts over the interface pairs chosen by address selection
 * (rails/select.c) for IP drivers, plus fabric rails (HCA ports, fabric
 * domains) of the same fabric. Computed identically on both sides: the end
 * with the smaller uuid is always side "a".
 */
#include "libmrail/engine.h"
#include "rails/select.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

struct addr_owner {
	struct mrail_netif_addr a;
	uint64_t host_id;
};

static int owner_cmp(const void *x, const void *y)
{
	const struct addr_owner *p = x, *q = y;
	int c = memcmp(&p->a.family, &q->a.family, 1);
	if (!c)
		c = memcmp(p->a.addr, q->a.addr, 16);
	if (!c)
		c = (p->host_id > q->host_id) - (p->host_id < q->host_id);
	return c;
}

static void add_owners(struct addr_owner *o, size_t *n, uint64_t host,
		       const struct mrail_netif *ifs, unsigned nifs)
{
	for (unsigned i = 0; i < nifs; i++)
		for (unsigned a = 0; a < ifs[i].naddrs; a++) {
			o[*n].a = ifs[i].addrs[a];
			o[*n].a.prefix_len = 0; /* identity is the address */
			o[*n].host_id = host;
			(*n)++;
		}
}

/* Addresses that more than one host claims (thesis: collisions). */
static int collect_dups(struct mrail_engine *e, const struct peer_address *pas,
			unsigned n, struct mrail_netif_addr **out,
			unsigned *nout)
{
	size_t cap = (size_t)e->nnetif * MRAIL_NETIF_ADDRS_MAX, cnt = 0;
	for (unsigned p = 0; p < n; p++)
		cap += (size_t)pas[p].nnetif * MRAIL_NETIF_ADDRS_MAX;
	struct addr_owner *o = malloc((cap ? cap : 1) * sizeof *o);
	struct mrail_netif_addr *d = malloc((cap ? cap : 1) * sizeof *d);
	if (!o || !d) {
		free(o);
		free(d);
		return MRAIL_ERR_NOMEM;
	}
	add_owners(o, &cnt, e->host_id, e->netifs, e->nnetif);
	for (unsigned p = 0; p < n; p++)
		add_owners(o, &cnt, pas[p].host_id, pas[p].netif, pas[p].nnetif);
	qsort(o, cnt, sizeof *o, owner_cmp);
	unsigned nd = 0;
	for (size_t i = 1; i < cnt; i++) {
		int same_addr = o[i].a.family == o[i - 1].a.family &&
				!memcmp(o[i].a.addr, o[i - 1].a.addr, 16);
		int new_dup = nd == 0 || d[nd - 1].family != o[i].a.family ||
			      memcmp(d[nd - 1].addr, o[i].a.addr, 16);
		if (same_addr && o[i].host_id != o[i - 1].host_id && new_dup)
			d[nd++] = o[i].a;
	}
	free(o);
	free(*out);
	*out = d;
	*nout = nd;
	return MRAIL_OK;
}

int engine_find_dups(struct mrail_engine *e, const struct peer_address *pas,
		     unsigned n)
{
	int rc = collect_dups(e, pas, n, &e->dups, &e->ndup);
	for (unsigned i = 0; i < e->ndup && rc == MRAIL_OK; i++) {
		char s[INET6_ADDRSTRLEN];
		inet_ntop(e->dups[i].family == 4 ? AF_INET : AF_INET6,
			  e->dups[i].addr, s, sizeof s);
		mrail_info("address %s is held by several hosts of the job: "
			   "private networks containing it are not used", s);
	}
	return rc;
}

static const struct remote_ep *remote_endpoint(const struct peer_address *pa,
					       int netif, unsigned addr,
					       const char *driver)
{
	for (unsigned i = 0; i < pa->nep; i++)
		if (pa->ep[i].netif == netif && pa->ep[i].addr == addr &&
		    !strcmp(pa->ep[i].driver, driver))
			return &pa->ep[i];
	return NULL;
}

static void set_plan(struct rail_plan *p, unsigned local_ep,
		     const struct remote_ep *rep, const char *lif,
		     const char *rif, int type)
{
	p->local_ep = local_ep;
	memcpy(p->remote_blob, rep->blob, rep->len);
	p->remote_len = rep->len;
	snprintf(p->local_if, sizeof p->local_if, "%s", lif);
	snprintf(p->remote_if, sizeof p->remote_if, "%s", rif);
	p->conn_type = type;
}

/* A rail a driver listed, on either side, for pairing. */
struct listed {
	const char *driver, *fabric, *name; /* name: its interface */
	int scope;
	int index;  /* local: in engine->local; remote: in pa->ep */
	int used;
};

static int listed_cmp(const void *x, const void *y)
{
	const struct listed *p = x, *q = y;
	int c = strcmp(p->driver, q->driver);
	return c ? c : p->index - q->index;
}

static int has_scope(const struct listed *l, unsigned n, const char *driver,
		     int scope)
{
	for (unsigned i = 0; i < n; i++)
		if (l[i].scope == scope && !strcmp(l[i].driver, driver))
			return 1;
	return 0;
}

/* TCP loopback rails the user asked for (see plan_listed). */
static int has_asked(const struct listed *l, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (l[i].scope == MRAIL_DRV_SCOPE_HOST &&
		    !strcmp(l[i].driver, "tcp") && !strcmp(l[i].fabric, "asked"))
			return 1;
	return 0;
}

/*
 * Listed rails pair with the peer's of the same driver and fabric, in the
 * order of side "a" (the smaller uuid) so both ends number the rails
 * alike. Same host: a driver with host-scope rails on both sides uses
 * those (loopback, shared memory); otherwise fabric-scope rails, which
 * are all that other hosts may use.
 */
static void plan_listed(struct mrail_engine *e, const struct peer_address *pa,
			struct rail_plan *plan, unsigned *n)
{
	struct listed loc[MRAIL_MAX_RAILS], rem[MRAIL_MAX_RAILS];
	unsigned nl = 0, nr = 0;
	int same_host = pa->host_id == e->host_id;

	for (unsigned i = 0; i < e->nlocal && nl < MRAIL_MAX_RAILS; i++)
		if (e->local[i].netif < 0)
			loc[nl++] = (struct listed){
				e->local[i].ops->name, e->local[i].fabric,
				e->local[i].ifname, e->local[i].scope,
				(int)i, 0};
	for (unsigned i = 0; i < pa->nep && nr < MRAIL_MAX_RAILS; i++)
		if (pa->ep[i].netif < 0)
			rem[nr++] = (struct listed){
				pa->ep[i].driver, pa->ep[i].fabric,
				pa->ep[i].ifname, pa->ep[i].scope, (int)i, 0};
	qsort(loc, nl, sizeof *loc, listed_cmp);
	qsort(rem, nr, sizeof *rem, listed_cmp);
	int swap = e->uuid > pa->uuid;
	struct listed *a = swap ? rem : loc, *b = swap ? loc : rem;
	unsigned na = swap ? nr : nl, nb = swap ? nl : nr;

	/* Between two processes of one host, shm and TCP's loopback rails
	 * exclude each other: shm unless the user asked for loopback rails
	 * (tcp loopback_rails set: their fabric says "asked"), as a slower
	 * path would only take slices of every message (driver-shm.md). */
	int shm_both = same_host &&
		       has_scope(a, na, "shm", MRAIL_DRV_SCOPE_HOST) &&
		       has_scope(b, nb, "shm", MRAIL_DRV_SCOPE_HOST);
	int tcp_asked = same_host && (has_asked(a, na) || has_asked(b, nb));

	for (unsigned i = 0; i < na && *n < MRAIL_MAX_RAILS; i++) {
		int scope = MRAIL_DRV_SCOPE_FABRIC;
		if (same_host &&
		    has_scope(a, na, a[i].driver, MRAIL_DRV_SCOPE_HOST) &&
		    has_scope(b, nb, a[i].driver, MRAIL_DRV_SCOPE_HOST))
			scope = MRAIL_DRV_SCOPE_HOST;
		if (a[i].scope != scope)
			continue;
		if (shm_both && scope == MRAIL_DRV_SCOPE_HOST &&
		    !strcmp(a[i].driver, tcp_asked ? "shm" : "tcp"))
			continue;
		for (unsigned j = 0; j < nb; j++) {
			if (b[j].used || b[j].scope != scope ||
			    strcmp(a[i].driver, b[j].driver) ||
			    strcmp(a[i].fabric, b[j].fabric))
				continue;
			b[j].used = 1;
			const struct listed *l = swap ? &b[j] : &a[i];
			const struct listed *r = swap ? &a[i] : &b[j];
			set_plan(&plan[(*n)++], (unsigned)l->index,
				 &pa->ep[r->index], l->name, r->name, 0);
			break;
		}
	}
}

static int plan_selected(struct mrail_engine *e, const struct peer_address *pa,
			 struct rail_plan *plan, unsigned *n, char *why,
			 size_t whylen)
{
	struct mrail_sel_pair pairs[MRAIL_MAX_RAILS];
	struct mrail_netif_addr *dups = NULL;
	unsigned ndup = 0, np = 0;
	int swap = e->uuid > pa->uuid, rc;

	if (e->nnetif == 0 || pa->nnetif == 0)
		return MRAIL_OK; /* no IP driver on one side */
	if (e->bootstrapped) {
		dups = e->dups;
		ndup = e->ndup;
	} else if ((rc = collect_dups(e, pa, 1, &dups, &ndup))) {
		return rc;
	}
	struct mrail_sel_input in = {
		swap ? pa->netif : e->netifs, swap ? pa->nnetif : e->nnetif,
		swap ? e->netifs : pa->netif, swap ? e->nnetif : pa->nnetif,
		dups, ndup};
	rc = mrail_select_rails(&in, pairs, MRAIL_MAX_RAILS, &np, why, whylen);
	if (!e->bootstrapped)
		free(dups);
	if (rc)
		return rc;
	for (unsigned i = 0; i < np; i++) {
		unsigned lif = swap ? pairs[i].b_if : pairs[i].a_if;
		unsigned la = swap ? pairs[i].b_addr : pairs[i].a_addr;
		unsigned rif = swap ? pairs[i].a_if : pairs[i].b_if;
		unsigned ra = swap ? pairs[i].a_addr : pairs[i].b_addr;
		int found = 0;
		/* One rail per IP driver both ends listen with there. */
		for (unsigned k = 0; k < e->nlocal && *n < MRAIL_MAX_RAILS; k++) {
			const struct local_rail *l = &e->local[k];
			if (l->netif != (int)lif || l->addr != la)
				continue;
			const struct remote_ep *rep =
				remote_endpoint(pa, (int)rif, ra, l->ops->name);
			if (!rep)
				continue;
			set_plan(&plan[(*n)++], k, rep, e->netifs[lif].name,
				 pa->netif[rif].name, pairs[i].type);
			found = 1;
		}
		if (!found) {
			snprintf(why, whylen, "peer's %s has no listener of a "
				 "driver we use on %s", pa->netif[rif].name,
				 e->netifs[lif].name);
			return MRAIL_ERR_PEER;
		}
	}
	return MRAIL_OK;
}

int gate_plan_rails(struct mrail_engine *e, struct gate *g,
		    const struct peer_address *pa, char *why, size_t whylen)
{
	struct rail_plan *plan = calloc(MRAIL_MAX_RAILS, sizeof *plan);
	unsigned n = 0;
	int rc = MRAIL_OK;

	if (!plan)
		return MRAIL_ERR_NOMEM;
	if (pa->host_id != e->host_id)
		rc = plan_selected(e, pa, plan, &n, why, whylen);
	if (rc == MRAIL_OK)
		plan_listed(e, pa, plan, &n);
	if (rc == MRAIL_OK && n == 0)
		snprintf(why, whylen, "%s", pa->host_id == e->host_id
			 ? "same host but no driver with rails on both sides"
			 : "no interface pair and no fabric in common");
	if (rc != MRAIL_OK || n == 0) {
		free(plan);
		return rc != MRAIL_OK ? rc : MRAIL_ERR_PEER;
	}
	/* Planned in the largest table; kept at its size: one per peer,
	 * 20 KiB each at full size (docs/scale.md). */
	struct rail_plan *fit = realloc(plan, n * sizeof *plan);
	g->plan = fit ? fit : plan;
	g->nrails = n;
	plan = g->plan;
	for (unsigned i = 0; i < n; i++)
		drivers_mark_planned(e, e->local[plan[i].local_ep].di);
	for (unsigned i = 0; i < n; i++)
		mrail_info("%s: rail %u: %s %s <-> %s (%s)", g->name, i,
			   e->local[plan[i].local_ep].ops->name,
			   plan[i].local_if, plan[i].remote_if,
			   plan[i].conn_type ? mrail_conn_type_name(plan[i].conn_type)
						 : "loopback");
	return MRAIL_OK;
}
