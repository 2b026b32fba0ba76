/*
 * MRAIL_RAILS / MRAIL_RAILS_EXCLUDE filtering, the one-line format, and a
 * smoke test of discovery on this host.
 */
#include "rails_test.h"

#include <stdio.h>
#include <string.h>

static unsigned host_table(struct mrail_netif *t)
{
	mkif(&t[0], "lo", "127.0.0.1/8 ::1/128");
	mkif(&t[1], "eth0", "10.0.0.1/24 2001:db8::1/64");
	mkif(&t[2], "eth1", "193.175.13.2/24 10.0.0.9/24");
	mkif(&t[3], "ib0", "192.168.7.1/24");
	return 4;
}

static void check_if(const struct mrail_netif *nif, const char *want)
{
	char buf[400];
	mrail_netif_format(nif, buf, sizeof buf);
	if (strcmp(buf, want)) {
		fprintf(stderr, "got '%s', expected '%s'\n", buf, want);
		exit(1);
	}
}

static int filter(struct mrail_netif *t, unsigned *n, const char *inc,
		  const char *exc, char *err, size_t errlen)
{
	*n = host_table(t);
	return mrail_netif_filter(t, n, inc, exc, err, errlen);
}

static void test_include(void)
{
	struct mrail_netif t[4];
	unsigned n;
	char err[512];

	/* unset, or nothing but separators: everything */
	CHECK_EQ(filter(t, &n, NULL, NULL, err, sizeof err), MRAIL_OK);
	CHECK_EQ(n, 4);
	CHECK_EQ(err[0], '\0');
	CHECK_EQ(filter(t, &n, " , ", NULL, err, sizeof err), MRAIL_OK);
	CHECK_EQ(n, 4);

	/* by name: the interface with all its addresses, in table order */
	CHECK_EQ(filter(t, &n, " ib0 ,eth0", NULL, err, sizeof err), MRAIL_OK);
	CHECK_EQ(n, 2);
	check_if(&t[0], "eth0 10.0.0.1/24 2001:db8::1/64");
	check_if(&t[1], "ib0 192.168.7.1/24");

	/* by address: the interface owning it, with only that address */
	CHECK_EQ(filter(t, &n, "2001:db8::1", NULL, err, sizeof err), MRAIL_OK);
	CHECK_EQ(n, 1);
	check_if(&t[0], "eth0 2001:db8::1/64");
	CHECK_EQ(filter(t, &n, "10.0.0.9,10.0.0.1", NULL, err, sizeof err),
		 MRAIL_OK);
	CHECK_EQ(n, 2);
	check_if(&t[0], "eth0 10.0.0.1/24");
	check_if(&t[1], "eth1 10.0.0.9/24");

	/* a name and one of its addresses: the name wins */
	CHECK_EQ(filter(t, &n, "eth1,10.0.0.9", NULL, err, sizeof err),
		 MRAIL_OK);
	CHECK_EQ(n, 1);
	check_if(&t[0], "eth1 193.175.13.2/24 10.0.0.9/24");

	/* by network: the addresses inside it */
	CHECK_EQ(filter(t, &n, "10.0.0.0/24", NULL, err, sizeof err), MRAIL_OK);
	CHECK_EQ(n, 2);
	check_if(&t[0], "eth0 10.0.0.1/24");
	check_if(&t[1], "eth1 10.0.0.9/24");
	CHECK_EQ(filter(t, &n, "2001:db8::/32", NULL, err, sizeof err),
		 MRAIL_OK);
	CHECK_EQ(n, 1);
	check_if(&t[0], "eth0 2001:db8::1/64");
}

static void test_exclude(void)
{
	struct mrail_netif t[4];
	unsigned n;
	char err[512];

	CHECK_EQ(filter(t, &n, NULL, "lo,ib0", err, sizeof err), MRAIL_OK);
	CHECK_EQ(n, 2);
	check_if(&t[0], "eth0 10.0.0.1/24 2001:db8::1/64");
	check_if(&t[1], "eth1 193.175.13.2/24 10.0.0.9/24");

	/* an address: only it goes; an interface left empty goes too */
	CHECK_EQ(filter(t, &n, NULL, "10.0.0.9, 192.168.7.1", err, sizeof err),
		 MRAIL_OK);
	CHECK_EQ(n, 3);
	check_if(&t[2], "eth1 193.175.13.2/24");

	/* a network */
	CHECK_EQ(filter(t, &n, NULL, "10.0.0.0/8", err, sizeof err), MRAIL_OK);
	CHECK_EQ(n, 4);
	check_if(&t[1], "eth0 2001:db8::1/64");
	check_if(&t[2], "eth1 193.175.13.2/24");

	/* entries matching nothing are fine in an exclude list */
	CHECK_EQ(filter(t, &n, NULL, "docker0,10.9.9.9", err, sizeof err),
		 MRAIL_OK);
	CHECK_EQ(n, 4);

	/* include, then exclude */
	CHECK_EQ(filter(t, &n, "eth0,eth1", "2001:db8::1,eth1", err, sizeof err),
		 MRAIL_OK);
	CHECK_EQ(n, 1);
	check_if(&t[0], "eth0 10.0.0.1/24");

	/* everything excluded: an empty table, not an error */
	CHECK_EQ(filter(t, &n, NULL, "lo,eth0,eth1,ib0", err, sizeof err),
		 MRAIL_OK);
	CHECK_EQ(n, 0);
}

static void check_err(const char *err, const char *part)
{
	if (!strstr(err, part)) {
		fprintf(stderr, "'%s' not in error: %s\n", part, err);
		exit(1);
	}
}

static void test_errors(void)
{
	struct mrail_netif t[4];
	unsigned n;
	char err[512];

	/* an include entry matching nothing names itself and what exists;
	 * the table is left unchanged */
	CHECK_EQ(filter(t, &n, "eth0,eth7", NULL, err, sizeof err),
		 MRAIL_ERR_CONFIG);
	CHECK_EQ(n, 4);
	check_if(&t[1], "eth0 10.0.0.1/24 2001:db8::1/64");
	check_err(err, "'eth7'");
	check_err(err, "lo 127.0.0.1/8 ::1/128, eth0 10.0.0.1/24 "
		       "2001:db8::1/64, eth1 193.175.13.2/24 10.0.0.9/24, "
		       "ib0 192.168.7.1/24");
	CHECK_EQ(filter(t, &n, "10.0.0.2", NULL, err, sizeof err),
		 MRAIL_ERR_CONFIG);
	check_err(err, "'10.0.0.2'");
	CHECK_EQ(filter(t, &n, "172.16.0.0/12", NULL, err, sizeof err),
		 MRAIL_ERR_CONFIG);
	check_err(err, "'172.16.0.0/12'");

	/* malformed entries, in either list */
	CHECK_EQ(filter(t, &n, "10.0.0.0/33", NULL, err, sizeof err),
		 MRAIL_ERR_CONFIG);
	check_err(err, "'10.0.0.0/33'");
	CHECK_EQ(filter(t, &n, NULL, "eth0/24", err, sizeof err),
		 MRAIL_ERR_CONFIG);
	CHECK_EQ(filter(t, &n, NULL, "10.0.0.0/+8", err, sizeof err),
		 MRAIL_ERR_CONFIG);
	CHECK_EQ(filter(t, &n, "averyveryverylongname0", NULL, err, sizeof err),
		 MRAIL_ERR_CONFIG);
	check_err(err, "at most 15 characters");
	char longer[200];
	memset(longer, 'x', sizeof longer - 1);
	longer[sizeof longer - 1] = '\0';
	CHECK_EQ(filter(t, &n, longer, NULL, err, sizeof err), MRAIL_ERR_CONFIG);
	check_err(err, "too long");

	/* nothing on this host at all */
	n = 0;
	CHECK_EQ(mrail_netif_filter(t, &n, "eth0", NULL, err, sizeof err),
		 MRAIL_ERR_CONFIG);
	check_err(err, "there are: none");

	/* a short buffer is cut, not overflowed */
	char tiny[10];
	memset(tiny, 'x', sizeof tiny);
	CHECK_EQ(filter(t, &n, "nope", NULL, tiny, 6), MRAIL_ERR_CONFIG);
	CHECK_EQ(strlen(tiny), 5);
	CHECK_EQ(tiny[6], 'x');
	CHECK_EQ(filter(t, &n, "nope", NULL, NULL, 0), MRAIL_ERR_CONFIG);
	CHECK_EQ(mrail_netif_filter(t, NULL, NULL, NULL, err, sizeof err),
		 MRAIL_ERR_INVALID);
}

static void test_format(void)
{
	struct mrail_netif t[4];
	char buf[16];
	host_table(t);
	check_if(&t[0], "lo 127.0.0.1/8 ::1/128");
	memset(buf, 'x', sizeof buf);
	mrail_netif_format(&t[1], buf, 9);
	CHECK(!strcmp(buf, "eth0 10."));
	CHECK_EQ(buf[9], 'x');
	struct mrail_netif bare;
	memset(&bare, 0, sizeof bare);
	memcpy(bare.name, "0123456789abcdef", 16); /* no NUL: from a peer */
	char wide[64];
	mrail_netif_format(&bare, wide, sizeof wide);
	CHECK(!strcmp(wide, "0123456789abcdef"));
}

static void test_discover(void)
{
	struct mrail_netif t[MRAIL_NETIF_MAX];
	unsigned n = 0;
	int saw_lo = 0;

	CHECK_EQ(mrail_netif_discover(t, MRAIL_NETIF_MAX, &n), MRAIL_OK);
	for (unsigned i = 0; i < n; i++) {
		char desc[400];
		mrail_netif_format(&t[i], desc, sizeof desc);
		printf("%s mtu %u speed %llu numa %d cpuset '%s'\n", desc,
		       t[i].mtu, (unsigned long long)t[i].speed_mbps,
		       t[i].numa_node, t[i].cpuset);
		CHECK(t[i].flags & MRAIL_NETIF_UP);
		CHECK(t[i].naddrs > 0);
		CHECK(!strchr(t[i].name, ':'));
		for (unsigned k = 0; k < t[i].naddrs; k++) {
			CHECK(mrail_netaddr_valid(&t[i].addrs[k]));
			CHECK(!mrail_netaddr_is_v6_linklocal(&t[i].addrs[k]));
		}
		if (strcmp(t[i].name, "lo"))
			continue;
		struct mrail_netif_addr want = addr_of("127.0.0.1/8");
		int has = 0;
		for (unsigned k = 0; k < t[i].naddrs; k++)
			has |= mrail_netaddr_equal(&t[i].addrs[k], &want) &&
			       t[i].addrs[k].prefix_len == 8;
		CHECK(has);
		CHECK(t[i].flags & MRAIL_NETIF_LOOPBACK);
		CHECK(t[i].mtu > 0);
		saw_lo = 1;
	}
	CHECK(saw_lo);

	/* A small table is filled up to its size. */
	unsigned m = 0;
	CHECK_EQ(mrail_netif_discover(t, 1, &m), MRAIL_OK);
	CHECK_EQ(m, n ? 1 : 0);
	CHECK_EQ(mrail_netif_discover(NULL, 0, &m), MRAIL_OK);
	CHECK_EQ(m, 0);
	CHECK_EQ(mrail_netif_discover(t, 1, NULL), MRAIL_ERR_INVALID);
}

int main(void)
{
	test_include();
	test_exclude();
	test_errors();
	test_format();
	test_discover();
	return 0;
}
