/*
 * Address selection (Peiselt, chapter 3) on hand-made host pairs: the
 * thesis's own example, the connection types, collisions, the fallback,
 * 1..8 interfaces per side, and symmetry of the two orientations.
 */
#include "rails_test.h"

#include "rails/assign.h"

#define MAXP MRAIL_NETIF_MAX

struct result {
	int rc;
	unsigned n;
	struct mrail_sel_pair p[MAXP];
	char why[2048];
};

static struct result sel_dup(const struct mrail_netif *a, unsigned na,
			     const struct mrail_netif *b, unsigned nb,
			     const char *const *dup, unsigned ndup)
{
	struct mrail_netif_addr d[16];
	struct mrail_sel_input in = {a, na, b, nb, d, ndup};
	struct result r;
	CHECK(ndup <= 16);
	for (unsigned k = 0; k < ndup; k++)
		d[k] = addr_of(dup[k]);
	memset(&r, 0, sizeof r);
	r.rc = mrail_select_rails(&in, r.p, MAXP, &r.n, r.why, sizeof r.why);
	CHECK(r.rc == MRAIL_OK || r.n == 0);
	for (unsigned i = 1; i < r.n; i++)
		CHECK(r.p[i - 1].a_if < r.p[i].a_if); /* ordered by a_if */
	return r;
}

static struct result sel(const struct mrail_netif *a, unsigned na,
			 const struct mrail_netif *b, unsigned nb)
{
	return sel_dup(a, na, b, nb, NULL, 0);
}

/* (b, a) gives the same pairs as (a, b), sides swapped. */
static void check_mirrored(const struct mrail_netif *a, unsigned na,
			   const struct mrail_netif *b, unsigned nb,
			   const char *const *dup, unsigned ndup)
{
	struct result r = sel_dup(a, na, b, nb, dup, ndup);
	struct result m = sel_dup(b, nb, a, na, dup, ndup);
	CHECK_EQ(r.rc, m.rc);
	CHECK_EQ(r.n, m.n);
	for (unsigned i = 0; i < r.n; i++) {
		unsigned k = 0;
		while (k < m.n && m.p[k].b_if != r.p[i].a_if)
			k++;
		CHECK(k < m.n);
		CHECK_EQ(m.p[k].a_if, r.p[i].b_if);
		CHECK_EQ(m.p[k].a_addr, r.p[i].b_addr);
		CHECK_EQ(m.p[k].b_addr, r.p[i].a_addr);
		CHECK_EQ(m.p[k].type, r.p[i].type);
	}
}

/* ---- connection types of address pairs -------------------------------- */

struct type_case {
	const char *x, *y;
	const char *dup; /* NULL: none */
	int type;
};

static void test_conn_types(void)
{
	static const struct type_case cases[] = {
		/* table 3.1 */
		{"193.175.13.2/24", "193.175.13.9/24", NULL, MRAIL_CONN_PUBLIC_SAME},
		{"193.175.13.2/24", "193.175.14.2/24", NULL, MRAIL_CONN_PUBLIC_ROUTED},
		{"10.0.0.1/24", "10.0.0.2/24", NULL, MRAIL_CONN_PRIVATE_SAME},
		{"10.0.0.1/24", "10.0.1.2/24", NULL, MRAIL_CONN_NONE},
		{"172.16.0.1/12", "172.31.255.1/12", NULL, MRAIL_CONN_PRIVATE_SAME},
		{"172.32.0.1/16", "172.32.0.2/16", NULL, MRAIL_CONN_PUBLIC_SAME},
		{"172.15.0.1/16", "172.15.0.2/16", NULL, MRAIL_CONN_PUBLIC_SAME},
		{"192.168.1.1/24", "192.168.1.2/24", NULL, MRAIL_CONN_PRIVATE_SAME},
		{"192.169.1.1/24", "192.169.1.2/24", NULL, MRAIL_CONN_PUBLIC_SAME},
		{"169.254.1.1/16", "169.254.2.2/16", NULL, MRAIL_CONN_PRIVATE_SAME},
		/* a private end cannot be reached from a public one */
		{"10.0.0.1/24", "193.175.14.2/24", NULL, MRAIL_CONN_NONE},
		/* no common family */
		{"10.0.0.1/24", "2001:db8::1/64", NULL, MRAIL_CONN_NONE},
		{"193.175.13.2/24", "2001:db8::1/64", NULL, MRAIL_CONN_NONE},
		/* IPv6: all public in the thesis, ULA included */
		{"2001:db8:1::1/64", "2001:db8:1::2/64", NULL, MRAIL_CONN_PUBLIC_SAME},
		{"2001:db8:1::1/64", "2001:db8:2::1/64", NULL, MRAIL_CONN_PUBLIC_ROUTED},
		{"fd00::1/64", "fd00::2/64", NULL, MRAIL_CONN_PUBLIC_SAME},
		{"fd00:1::1/64", "fd00:2::1/64", NULL, MRAIL_CONN_PUBLIC_ROUTED},
		/* never endpoints to another host */
		{"fe80::1/64", "fe80::2/64", NULL, MRAIL_CONN_NONE},
		{"127.0.0.1/8", "127.0.0.2/8", NULL, MRAIL_CONN_NONE},
		{"::1/128", "::1/128", NULL, MRAIL_CONN_NONE},
		{"0.0.0.0/0", "193.175.14.2/24", NULL, MRAIL_CONN_NONE},
		{"224.0.0.1/4", "224.0.0.2/4", NULL, MRAIL_CONN_NONE},
		/* same network = each in the other's network */
		{"10.0.0.1/8", "10.0.0.2/24", NULL, MRAIL_CONN_PRIVATE_SAME},
		{"10.0.0.1/8", "10.1.0.1/16", NULL, MRAIL_CONN_NONE},
		{"193.175.0.1/16", "193.175.1.1/24", NULL, MRAIL_CONN_PUBLIC_ROUTED},
		{"10.0.0.1/32", "10.0.0.2/32", NULL, MRAIL_CONN_NONE},
		/* collisions: one address on two hosts */
		{"10.0.0.1/24", "10.0.0.1/24", NULL, MRAIL_CONN_NONE},
		{"193.175.13.2/24", "193.175.13.2/24", NULL, MRAIL_CONN_NONE},
		{"10.0.0.1/24", "10.0.0.2/24", "10.0.0.1", MRAIL_CONN_NONE},
		{"10.0.0.1/24", "10.0.0.2/24", "10.0.0.77", MRAIL_CONN_NONE},
		{"10.0.0.1/24", "10.0.0.2/24", "10.0.1.77", MRAIL_CONN_PRIVATE_SAME},
		{"10.0.0.1/16", "10.0.0.2/24", "10.0.9.9", MRAIL_CONN_NONE},
		{"193.175.13.2/24", "193.175.13.3/24", "193.175.13.9", MRAIL_CONN_PUBLIC_SAME},
		{"193.175.13.2/24", "193.175.13.3/24", "193.175.13.3", MRAIL_CONN_NONE},
		{"2001:db8::1/64", "2001:db8::2/64", "2001:db8::1", MRAIL_CONN_NONE},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct type_case *c = &cases[i];
		struct mrail_netif_addr x = addr_of(c->x), y = addr_of(c->y), d;
		unsigned nd = 0;
		if (c->dup) {
			d = addr_of(c->dup);
			nd = 1;
		}
		int t1 = mrail_conn_type(&x, &y, &d, nd);
		int t2 = mrail_conn_type(&y, &x, &d, nd);
		if (t1 != c->type || t2 != c->type) {
			fprintf(stderr, "%s / %s (dup %s): %d %d, expected %d\n",
				c->x, c->y, c->dup ? c->dup : "-", t1, t2,
				c->type);
			exit(1);
		}
	}
	/* Bytes 4..15 of an IPv4 address (from a peer) do not count. */
	struct mrail_netif_addr x = addr_of("10.0.0.1/24"), y = x;
	struct mrail_netif_addr d = addr_of("10.0.0.1");
	y.addr[9] = 0x55;
	CHECK(mrail_netaddr_equal(&x, &y));
	CHECK_EQ(mrail_conn_type(&y, &x, NULL, 0), MRAIL_CONN_NONE);
	y.addr[3] = 2;
	CHECK_EQ(mrail_conn_type(&y, &x, NULL, 0), MRAIL_CONN_PRIVATE_SAME);
	CHECK_EQ(mrail_conn_type(&y, &x, &d, 1), MRAIL_CONN_NONE);

	/* The matching prefers the same network (thesis 3.3, text). */
	CHECK(mrail_conn_weight(MRAIL_CONN_PUBLIC_SAME) >
	      mrail_conn_weight(MRAIL_CONN_PUBLIC_ROUTED));
	CHECK(mrail_conn_weight(MRAIL_CONN_PUBLIC_ROUTED) >
	      mrail_conn_weight(MRAIL_CONN_PRIVATE_SAME));
	CHECK(mrail_conn_weight(MRAIL_CONN_PRIVATE_SAME) > 0);
	CHECK_EQ(mrail_conn_weight(MRAIL_CONN_NONE), 0);
	CHECK_EQ(mrail_conn_weight(MRAIL_CONN_PRIVATE_FALLBACK), 0);
	CHECK(!strcmp(mrail_conn_type_name(MRAIL_CONN_PUBLIC_ROUTED),
		      "public, routed"));
	CHECK(!strcmp(mrail_conn_type_name(99), "?"));
}

/* ---- the thesis's example (sections 2.4.3 and 3.3.1) ------------------ */

static void thesis_hosts(struct mrail_netif *a, struct mrail_netif *b)
{
	mkif(&a[0], "eth0", "193.175.13.2/24 2001:906:638:aa01::02/64");
	mkif(&a[1], "eth1", "2001:906:638:bb01::02/64");
	mkif(&b[0], "eth0", "193.175.14.2/24");
	mkif(&b[1], "eth1", "193.175.15.2/24 2001:906:638:bb02::02/64");
}

static void test_thesis_example(void)
{
	struct mrail_netif a[2], b[2];
	thesis_hosts(a, b);

	/* Host A selects 193.175.14.2 and 2001:906:638:bb02::02: two rails.
	 * 193.175.15.2 would look as good for eth0 but leave eth1 (IPv6
	 * only) without a partner. */
	struct result r = sel(a, 2, b, 2);
	CHECK_EQ(r.rc, MRAIL_OK);
	CHECK_EQ(r.n, 2);
	check_pair(&r.p[0], a, "eth0", "193.175.13.2", b, "eth0",
		   "193.175.14.2", MRAIL_CONN_PUBLIC_ROUTED);
	check_pair(&r.p[1], a, "eth1", "2001:906:638:bb01::2", b, "eth1",
		   "2001:906:638:bb02::2", MRAIL_CONN_PUBLIC_ROUTED);
	CHECK_EQ(mrail_conn_type(&a[1].addrs[0], &b[0].addrs[0], NULL, 0),
		 MRAIL_CONN_NONE);

	/* Host B's view. */
	struct result m = sel(b, 2, a, 2);
	CHECK_EQ(m.n, 2);
	check_pair(&m.p[0], b, "eth0", "193.175.14.2", a, "eth0",
		   "193.175.13.2", MRAIL_CONN_PUBLIC_ROUTED);
	check_pair(&m.p[1], b, "eth1", "2001:906:638:bb02::2", a, "eth1",
		   "2001:906:638:bb01::2", MRAIL_CONN_PUBLIC_ROUTED);
	check_mirrored(a, 2, b, 2, NULL, 0);
}

/* ---- families ---------------------------------------------------------- */

static void test_ipv6_only(void)
{
	struct mrail_netif a[2], b[2];
	mkif(&a[0], "eth0", "2001:db8:1::1/64");
	mkif(&a[1], "eth1", "2001:db8:2::1/64");
	mkif(&b[0], "ib0", "2001:db8:2::2/64");
	mkif(&b[1], "ib1", "2001:db8:1::2/64");
	/* Crossed: the same-network pairs win over the straight ones. */
	struct result r = sel(a, 2, b, 2);
	CHECK_EQ(r.n, 2);
	check_pair(&r.p[0], a, "eth0", "2001:db8:1::1", b, "ib1",
		   "2001:db8:1::2", MRAIL_CONN_PUBLIC_SAME);
	check_pair(&r.p[1], a, "eth1", "2001:db8:2::1", b, "ib0",
		   "2001:db8:2::2", MRAIL_CONN_PUBLIC_SAME);
	check_mirrored(a, 2, b, 2, NULL, 0);
}

static void test_dual_stack(void)
{
	struct mrail_netif a[2], b[2];

	/* One NIC each: the public IPv6 pair beats the private IPv4 one. */
	mkif(&a[0], "eth0", "10.0.0.1/24 2001:db8:1::1/64");
	mkif(&b[0], "eth0", "10.0.0.2/24 2001:db8:1::2/64");
	struct result r = sel(a, 1, b, 1);
	CHECK_EQ(r.n, 1);
	check_pair(&r.p[0], a, "eth0", "2001:db8:1::1", b, "eth0",
		   "2001:db8:1::2", MRAIL_CONN_PUBLIC_SAME);

	/* Figure 2.1: two clusters on one private network, IPv6 between
	 * them. The IPv4 pair looks local but the addresses collide. */
	const char *dup[] = {"192.168.1.10", "192.168.1.20"};
	mkif(&a[0], "eth0", "192.168.1.10/24 2001:db8:a::10/64");
	mkif(&b[0], "eth0", "192.168.1.20/24 2001:db8:b::20/64");
	r = sel_dup(a, 1, b, 1, dup, 2);
	CHECK_EQ(r.n, 1);
	check_pair(&r.p[0], a, "eth0", "2001:db8:a::10", b, "eth0",
		   "2001:db8:b::20", MRAIL_CONN_PUBLIC_ROUTED);

	/* Figure 3.1: a private cluster network plus IPv6 on a second NIC:
	 * both are used, one rail each. */
	mkif(&a[0], "eth0", "10.1.0.1/16");
	mkif(&a[1], "eth1", "2001:db8:f::1/64");
	mkif(&b[0], "eth0", "10.1.0.2/16");
	mkif(&b[1], "eth1", "2001:db8:f::2/64");
	r = sel(a, 2, b, 2);
	CHECK_EQ(r.n, 2);
	check_pair(&r.p[0], a, "eth0", "10.1.0.1", b, "eth0", "10.1.0.2",
		   MRAIL_CONN_PRIVATE_SAME);
	check_pair(&r.p[1], a, "eth1", "2001:db8:f::1", b, "eth1",
		   "2001:db8:f::2", MRAIL_CONN_PUBLIC_SAME);

	/* Equally good IPv4 and IPv6 pairs: IPv4, whichever side is a. */
	mkif(&a[0], "eth0", "2001:db8:1::1/64 193.175.1.1/24");
	mkif(&b[0], "eth0", "193.175.2.2/24 2001:db8:2::2/64");
	r = sel(a, 1, b, 1);
	check_pair(&r.p[0], a, "eth0", "193.175.1.1", b, "eth0", "193.175.2.2",
		   MRAIL_CONN_PUBLIC_ROUTED);
	check_mirrored(a, 1, b, 1, NULL, 0);
}

static void test_same_network_preferred(void)
{
	struct mrail_netif a[1], b[2];
	mkif(&a[0], "eth0", "193.175.1.1/24");
	mkif(&b[0], "eth0", "193.175.2.2/24");
	mkif(&b[1], "eth1", "193.175.1.2/24");
	struct result r = sel(a, 1, b, 2);
	CHECK_EQ(r.n, 1);
	check_pair(&r.p[0], a, "eth0", "193.175.1.1", b, "eth1", "193.175.1.2",
		   MRAIL_CONN_PUBLIC_SAME);
}

/* ---- private networks -------------------------------------------------- */

static void test_private_same_subnet(void)
{
	struct mrail_netif a[1], b[1];
	mkif(&a[0], "eth0", "10.1.0.1/16");
	mkif(&b[0], "eth0", "10.1.200.7/16");
	struct result r = sel(a, 1, b, 1);
	CHECK_EQ(r.rc, MRAIL_OK);
	CHECK_EQ(r.n, 1);
	check_pair(&r.p[0], a, "eth0", "10.1.0.1", b, "eth0", "10.1.200.7",
		   MRAIL_CONN_PRIVATE_SAME);
}

static void check_why_names(const struct result *r, const char *a_if,
			    const char *b_if)
{
	if (!strstr(r->why, a_if) || !strstr(r->why, b_if)) {
		fprintf(stderr, "why lacks '%s' / '%s': %s\n", a_if, b_if,
			r->why);
		exit(1);
	}
}

static void test_private_different_subnets(void)
{
	struct mrail_netif a[2], b[2];
	mkif(&a[0], "eth0", "10.1.0.1/24");
	mkif(&b[0], "eth0", "10.2.0.1/24");

	/* Nothing sure: the thesis's last resort (3.4) tries the private
	 * pair, hoping it is routed. */
	struct result r = sel(a, 1, b, 1);
	CHECK_EQ(r.rc, MRAIL_OK);
	CHECK_EQ(r.n, 1);
	check_pair(&r.p[0], a, "eth0", "10.1.0.1", b, "eth0", "10.2.0.1",
		   MRAIL_CONN_PRIVATE_FALLBACK);
	check_mirrored(a, 1, b, 1, NULL, 0);

	/* Several candidates: the first in address order, in both
	 * orientations. */
	mkif(&a[0], "eth0", "10.9.0.1/24");
	mkif(&a[1], "eth1", "10.1.0.1/24");
	mkif(&b[0], "eth0", "10.2.0.5/24");
	mkif(&b[1], "eth1", "10.3.0.5/24");
	r = sel(a, 2, b, 2);
	CHECK_EQ(r.n, 1);
	check_pair(&r.p[0], a, "eth1", "10.1.0.1", b, "eth0", "10.2.0.5",
		   MRAIL_CONN_PRIVATE_FALLBACK);
	check_mirrored(a, 2, b, 2, NULL, 0);
	mkif(&a[0], "eth0", "10.1.0.1/24");
	mkif(&b[0], "eth0", "10.2.0.1/24");

	/* Not when anything sure exists. */
	mkif(&a[1], "eth1", "193.175.1.1/24");
	mkif(&b[1], "eth1", "193.175.9.9/24");
	r = sel(a, 2, b, 2);
	CHECK_EQ(r.n, 1);
	check_pair(&r.p[0], a, "eth1", "193.175.1.1", b, "eth1", "193.175.9.9",
		   MRAIL_CONN_PUBLIC_ROUTED);

	/* No rail: the peer's private address is held by other hosts too,
	 * so even the last resort could reach the wrong one. */
	const char *dup[] = {"10.2.0.1"};
	r = sel_dup(a, 1, b, 1, dup, 1);
	CHECK_EQ(r.rc, MRAIL_ERR_NOT_FOUND);
	CHECK_EQ(r.n, 0);
	check_why_names(&r, "host a: eth0 10.1.0.1/24", "host b: eth0 10.2.0.1/24");

	/* No rail: private IPv4 against IPv6 only (the thesis's example
	 * for OMPI_ERR_UNREACH). */
	mkif(&b[0], "ib0", "2001:db8::7/64");
	r = sel(a, 1, b, 1);
	CHECK_EQ(r.rc, MRAIL_ERR_NOT_FOUND);
	check_why_names(&r, "eth0 10.1.0.1/24", "ib0 2001:db8::7/64");
}

static void test_colliding_private(void)
{
	struct mrail_netif a[2], b[2];
	mkif(&a[0], "eth0", "192.168.1.10/24");
	mkif(&b[0], "eth0", "192.168.1.20/24");

	/* Another host of the job also has 192.168.1.10: the network is
	 * refused, and the address cannot serve as last resort either. */
	const char *dup_own[] = {"192.168.1.10"};
	struct result r = sel_dup(a, 1, b, 1, dup_own, 1);
	CHECK_EQ(r.rc, MRAIL_ERR_NOT_FOUND);
	check_why_names(&r, "eth0 192.168.1.10/24", "eth0 192.168.1.20/24");
	CHECK(strstr(r.why, "held by several hosts"));

	/* Two other hosts collide inside the network: it is refused as
	 * "same network", and the pair is only the last resort. */
	const char *dup_other[] = {"192.168.1.99"};
	r = sel_dup(a, 1, b, 1, dup_other, 1);
	CHECK_EQ(r.n, 1);
	check_pair(&r.p[0], a, "eth0", "192.168.1.10", b, "eth0",
		   "192.168.1.20", MRAIL_CONN_PRIVATE_FALLBACK);

	/* A collision in another private network does not matter. */
	const char *dup_far[] = {"192.168.2.10", "10.0.0.1"};
	r = sel_dup(a, 1, b, 1, dup_far, 2);
	check_pair(&r.p[0], a, "eth0", "192.168.1.10", b, "eth0",
		   "192.168.1.20", MRAIL_CONN_PRIVATE_SAME);

	/* With public IPv6 on a second NIC, that is the one rail. */
	mkif(&a[1], "eth1", "2001:db8:1::10/64");
	mkif(&b[1], "eth1", "2001:db8:2::20/64");
	r = sel_dup(a, 2, b, 2, dup_own, 1);
	CHECK_EQ(r.n, 1);
	check_pair(&r.p[0], a, "eth1", "2001:db8:1::10", b, "eth1",
		   "2001:db8:2::20", MRAIL_CONN_PUBLIC_ROUTED);
	check_mirrored(a, 2, b, 2, dup_own, 1);
}

/* ---- shapes ------------------------------------------------------------ */

static void test_more_local_than_remote(void)
{
	struct mrail_netif a[4], b[2];
	mkif(&a[0], "eth0", "10.0.0.1/24");
	mkif(&a[1], "eth1", "193.175.1.1/24");
	mkif(&a[2], "eth2", "2001:db8:2::1/64");
	mkif(&a[3], "eth3", "193.175.9.1/24");
	mkif(&b[0], "eth0", "193.175.1.2/24");
	mkif(&b[1], "eth1", "2001:db8:2::2/64");
	struct result r = sel(a, 4, b, 2);
	CHECK_EQ(r.n, 2);
	check_pair(&r.p[0], a, "eth1", "193.175.1.1", b, "eth0", "193.175.1.2",
		   MRAIL_CONN_PUBLIC_SAME);
	check_pair(&r.p[1], a, "eth2", "2001:db8:2::1", b, "eth1",
		   "2001:db8:2::2", MRAIL_CONN_PUBLIC_SAME);
	check_mirrored(a, 4, b, 2, NULL, 0);

	/* Only eth3 reaches b's eth0 when eth1 is gone: routed. */
	a[1] = a[3];
	r = sel(a, 3, b, 2);
	CHECK_EQ(r.n, 2);
	check_pair(&r.p[0], a, "eth3", "193.175.9.1", b, "eth0", "193.175.1.2",
		   MRAIL_CONN_PUBLIC_ROUTED);
}

/*
 * ka x kb interfaces, interface i of a on network i, interface j of b on
 * network kb-1-j: the best matching crosses over, min(ka, kb) rails, all
 * on the same network. Runs both the enumeration (<= 8) and, through the
 * random test, the Hungarian method.
 */
static void test_one_to_eight(void)
{
	struct mrail_netif a[8], b[8];
	for (unsigned ka = 1; ka <= 8; ka++)
		for (unsigned kb = 1; kb <= 8; kb++) {
			char name[16], ad[64];
			for (unsigned i = 0; i < ka; i++) {
				snprintf(name, sizeof name, "eth%u", i);
				snprintf(ad, sizeof ad, "%s%u::1/64 193.175.%u.1/24",
					 i % 2 ? "2001:db8:" : "2001:db9:", i, i);
				mkif(&a[i], name, ad);
			}
			for (unsigned j = 0; j < kb; j++) {
				unsigned net = kb - 1 - j;
				snprintf(name, sizeof name, "ib%u", j);
				snprintf(ad, sizeof ad, "193.175.%u.2/24 %s%u::2/64",
					 net, net % 2 ? "2001:db8:" : "2001:db9:",
					 net);
				mkif(&b[j], name, ad);
			}
			struct result r = sel(a, ka, b, kb);
			unsigned k = ka < kb ? ka : kb;
			CHECK_EQ(r.rc, MRAIL_OK);
			CHECK_EQ(r.n, k);
			for (unsigned i = 0; i < k; i++) {
				CHECK_EQ(r.p[i].a_if, i);
				CHECK_EQ(r.p[i].b_if, kb - 1 - i);
				CHECK_EQ(r.p[i].type, MRAIL_CONN_PUBLIC_SAME);
				/* IPv4 first among equal address pairs */
				CHECK_EQ(a[i].addrs[r.p[i].a_addr].family, 4);
				CHECK_EQ(b[r.p[i].b_if].addrs[r.p[i].b_addr].family, 4);
			}
			check_mirrored(a, ka, b, kb, NULL, 0);
		}
}

static void test_loopback_only(void)
{
	struct mrail_netif a[2], b[2];
	mkif(&a[0], "lo", "127.0.0.1/8 ::1/128");
	mkif(&b[0], "lo", "127.0.0.1/8 ::1/128");
	struct result r = sel(a, 1, b, 1);
	CHECK_EQ(r.rc, MRAIL_ERR_NOT_FOUND);
	CHECK_EQ(r.n, 0);
	check_why_names(&r, "host a: lo 127.0.0.1/8 ::1/128",
			"host b: lo 127.0.0.1/8 ::1/128");

	/* A loopback interface is never a rail, whatever it holds. */
	mkif(&a[0], "lo", "10.0.0.1/24");
	mkif(&b[0], "lo", "10.0.0.2/24");
	CHECK_EQ(sel(a, 1, b, 1).rc, MRAIL_ERR_NOT_FOUND);

	/* Next to a real interface, loopback is skipped. */
	mkif(&a[0], "lo", "127.0.0.1/8");
	mkif(&a[1], "eth0", "193.175.1.1/24");
	mkif(&b[0], "eth0", "193.175.1.2/24");
	mkif(&b[1], "lo", "127.0.0.1/8");
	r = sel(a, 2, b, 2);
	CHECK_EQ(r.n, 1);
	check_pair(&r.p[0], a, "eth0", "193.175.1.1", b, "eth0", "193.175.1.2",
		   MRAIL_CONN_PUBLIC_SAME);

	/* No interface at all on one side. */
	r = sel(a, 2, b, 0);
	CHECK_EQ(r.rc, MRAIL_ERR_NOT_FOUND);
	CHECK(strstr(r.why, "host b: (no interface)"));
}

/*
 * Ties between interface matchings go to the lowest indexes of side a.
 * Here every pair but the diagonal is equally good: (a, b) picks
 * 0-1 1-2 2-0, (b, a) the other optimum. Same rail count and quality, not
 * the same pairs, which is why the engine always orients the call.
 */
static void test_tie_orientation(void)
{
	struct mrail_netif a[3], b[3];
	mkif(&a[0], "eth0", "10.0.1.1/24 10.0.2.1/24");
	mkif(&a[1], "eth1", "10.0.0.2/24 10.0.2.2/24");
	mkif(&a[2], "eth2", "10.0.0.3/24 10.0.1.3/24");
	mkif(&b[0], "eth0", "10.0.0.100/24");
	mkif(&b[1], "eth1", "10.0.1.100/24");
	mkif(&b[2], "eth2", "10.0.2.100/24");
	struct result r = sel(a, 3, b, 3), m = sel(b, 3, a, 3);
	CHECK_EQ(r.n, 3);
	CHECK_EQ(m.n, 3);
	CHECK_EQ(r.p[0].b_if, 1);
	CHECK_EQ(r.p[1].b_if, 2);
	CHECK_EQ(r.p[2].b_if, 0);
	CHECK_EQ(m.p[0].b_if, 1); /* b's eth0 with a's eth1 */
	CHECK_EQ(m.p[1].b_if, 2);
	CHECK_EQ(m.p[2].b_if, 0);
}

static void test_limits(void)
{
	struct mrail_netif a[2], b[2];
	struct mrail_sel_pair p[2];
	unsigned n = 99;
	char why[256];
	thesis_hosts(a, b);
	struct mrail_sel_input in = {a, 2, b, 2, NULL, 0};

	/* At most max pairs: the first by a_if. */
	CHECK_EQ(mrail_select_rails(&in, p, 1, &n, why, sizeof why), MRAIL_OK);
	CHECK_EQ(n, 1);
	CHECK_EQ(p[0].a_if, 0);
	CHECK_EQ(mrail_select_rails(&in, NULL, 0, &n, NULL, 0), MRAIL_OK);
	CHECK_EQ(n, 0);

	/* Malformed tables (peer data) are refused, not read past. */
	CHECK_EQ(mrail_select_rails(NULL, p, 2, &n, why, sizeof why),
		 MRAIL_ERR_INVALID);
	b[1].naddrs = MRAIL_NETIF_ADDRS_MAX + 1;
	CHECK_EQ(mrail_select_rails(&in, p, 2, &n, why, sizeof why),
		 MRAIL_ERR_INVALID);
	CHECK(strstr(why, "host b"));
	b[1].naddrs = 2;
	in.nb = MRAIL_NETIF_MAX + 1;
	CHECK_EQ(mrail_select_rails(&in, p, 2, &n, why, sizeof why),
		 MRAIL_ERR_INVALID);
	in.nb = 2;
	/* A bad family or prefix in a peer address is just unusable. */
	b[0].addrs[0].family = 5;
	b[1].addrs[0].prefix_len = 33;
	CHECK_EQ(mrail_select_rails(&in, p, 2, &n, why, sizeof why), MRAIL_OK);
	CHECK_EQ(n, 1);
	CHECK_EQ(p[0].b_if, 1);
	CHECK_EQ(p[0].b_addr, 1);
	/* A short `why` is cut, not overflowed. */
	mkif(&a[0], "lo", "127.0.0.1/8");
	in.na = 1;
	char tiny[8];
	memset(tiny, 'x', sizeof tiny);
	CHECK_EQ(mrail_select_rails(&in, p, 2, &n, tiny, 5),
		 MRAIL_ERR_NOT_FOUND);
	CHECK_EQ(strlen(tiny), 4);
	CHECK_EQ(tiny[5], 'x');
}

int main(void)
{
	test_conn_types();
	test_thesis_example();
	test_ipv6_only();
	test_dual_stack();
	test_same_network_preferred();
	test_private_same_subnet();
	test_private_different_subnets();
	test_colliding_private();
	test_more_local_than_remote();
	test_one_to_eight();
	test_loopback_only();
	test_tie_orientation();
	test_limits();
	return 0;
}
