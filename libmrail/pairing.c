/*
 * Which rails a gate gets. Processes of the same host (same network
 * namespace) talk over the loopback endpoints; processes of different
 * hosts over the interface pairs chosen by address selection
 * (rails/select.c), computed identically on both sides: the end with the
 * smaller uuid is always side "a".
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
					       int netif, unsigned addr)
{
	for (unsigned i = 0; i < pa->nep; i++)
		if (pa->ep[i].netif == netif && pa->ep[i].addr == addr)
			return &pa->ep[i];
	return NULL;
}

static int local_endpoint(const struct mrail_engine *e, int netif, unsigned addr)
{
	for (unsigned i = 0; i < e->nlocal; i++)
		if (e->local[i].netif == netif && e->local[i].addr == addr)
			return (int)i;
	return -1;
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

static unsigned plan_loopback(struct mrail_engine *e,
			      const struct peer_address *pa,
			      struct rail_plan *plan)
{
	unsigned n = 0, k = 0;
	for (unsigned i = 0; i < e->nlocal; i++) {
		if (e->local[i].netif >= 0)
			continue;
		const struct remote_ep *rep = remote_endpoint(pa, -1, k++);
		if (!rep || strcmp(rep->driver, e->local[i].ops->name))
			break;
		set_plan(&plan[n++], i, rep, "lo", "lo", 0);
	}
	return n;
}

static int plan_selected(struct mrail_engine *e, const struct peer_address *pa,
			 struct rail_plan *plan, unsigned *n, char *why,
			 size_t whylen)
{
	struct mrail_sel_pair pairs[MRAIL_MAX_RAILS];
	struct mrail_netif_addr *dups = NULL;
	unsigned ndup = 0, np = 0;
	int swap = e->uuid > pa->uuid, rc;

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
	*n = 0;
	for (unsigned i = 0; i < np; i++) {
		unsigned lif = swap ? pairs[i].b_if : pairs[i].a_if;
		unsigned la = swap ? pairs[i].b_addr : pairs[i].a_addr;
		unsigned rif = swap ? pairs[i].a_if : pairs[i].b_if;
		unsigned ra = swap ? pairs[i].a_addr : pairs[i].b_addr;
		int lep = local_endpoint(e, (int)lif, la);
		const struct remote_ep *rep = remote_endpoint(pa, (int)rif, ra);
		if (lep < 0 || !rep) {
			snprintf(why, whylen, "selected interface pair has no "
				 "listener (internal error)");
			return MRAIL_ERR_PEER;
		}
		if (strcmp(rep->driver, e->local[lep].ops->name)) {
			snprintf(why, whylen, "peer's %s uses driver '%s', we "
				 "use '%s'", pa->netif[rif].name, rep->driver,
				 e->local[lep].ops->name);
			return MRAIL_ERR_PEER;
		}
		set_plan(&plan[(*n)++], (unsigned)lep, rep, e->netifs[lif].name,
			 pa->netif[rif].name, pairs[i].type);
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
	if (pa->host_id == e->host_id) {
		n = plan_loopback(e, pa, plan);
		if (n == 0)
			snprintf(why, whylen, "same host but no loopback "
				 "endpoint on one side");
	} else {
		rc = plan_selected(e, pa, plan, &n, why, whylen);
	}
	if (rc != MRAIL_OK || n == 0) {
		free(plan);
		return rc != MRAIL_OK ? rc : MRAIL_ERR_PEER;
	}
	g->plan = plan;
	g->nrails = n;
	for (unsigned i = 0; i < n; i++)
		mrail_info("%s: rail %u: %s %s <-> %s (%s)", g->name, i,
			   e->local[plan[i].local_ep].ops->name,
			   plan[i].local_if, plan[i].remote_if,
			   plan[i].conn_type ? mrail_conn_type_name(plan[i].conn_type)
						 : "loopback");
	return MRAIL_OK;
}
