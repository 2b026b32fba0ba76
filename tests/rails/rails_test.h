/* Building interface tables from text, for the rails tests. */
#ifndef MRAIL_TEST_RAILS_H
#define MRAIL_TEST_RAILS_H

#include "../check.h"
#include "mrail.h"
#include "rails/netaddr.h"
#include "rails/netif.h"
#include "rails/select.h"

#include <stdio.h>
#include <string.h>

/* One address, "10.0.0.1/24" or "10.0.0.1" (then a host prefix). */
static inline struct mrail_netif_addr addr_of(const char *s)
{
	struct mrail_netif_addr a;
	int r = mrail_netaddr_parse(s, &a);
	if (r <= 0) {
		fprintf(stderr, "bad test address '%s'\n", s);
		exit(1);
	}
	return a;
}

/* mkif(&t[0], "eth0", "193.175.13.2/24 2001:906:638:aa01::02/64");
 * "lo" gets the loopback flag. */
static inline void mkif(struct mrail_netif *nif, const char *name,
			const char *addrs)
{
	char buf[512], *save = NULL;
	memset(nif, 0, sizeof *nif);
	snprintf(nif->name, sizeof nif->name, "%s", name);
	nif->flags = MRAIL_NETIF_UP;
	if (!strcmp(name, "lo"))
		nif->flags |= MRAIL_NETIF_LOOPBACK;
	nif->numa_node = -1;
	snprintf(buf, sizeof buf, "%s", addrs);
	for (char *t = strtok_r(buf, " ", &save); t;
	     t = strtok_r(NULL, " ", &save)) {
		CHECK(nif->naddrs < MRAIL_NETIF_ADDRS_MAX);
		nif->addrs[nif->naddrs++] = addr_of(t);
	}
}

/* Text of address k of an interface, without prefix. */
static inline const char *addr_text(const struct mrail_netif *nif,
				    unsigned k, char *buf, size_t len)
{
	CHECK(k < nif->naddrs);
	mrail_netaddr_ntop(&nif->addrs[k], buf, len);
	return buf;
}

/* The pair joins interface an (address aa) of a and bn (ba) of b. */
static inline void check_pair(const struct mrail_sel_pair *p,
			      const struct mrail_netif *a, const char *an,
			      const char *aa, const struct mrail_netif *b,
			      const char *bn, const char *ba, int type)
{
	char s1[64], s2[64];
	addr_text(&a[p->a_if], p->a_addr, s1, sizeof s1);
	addr_text(&b[p->b_if], p->b_addr, s2, sizeof s2);
	if (strcmp(a[p->a_if].name, an) || strcmp(b[p->b_if].name, bn) ||
	    strcmp(s1, aa) || strcmp(s2, ba) || p->type != type) {
		fprintf(stderr, "expected %s %s <-> %s %s (%d), got %s %s <-> "
			"%s %s (%d)\n", an, aa, bn, ba, type,
			a[p->a_if].name, s1, b[p->b_if].name, s2, p->type);
		exit(1);
	}
}

#endif
