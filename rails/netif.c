/*
 * Interface discovery (getifaddrs, then sysfs and hwloc for what the
 * address list does not say), the MRAIL_RAILS / MRAIL_RAILS_EXCLUDE
 * filter, and the one-line description used in logs and errors.
 */
#include "rails/netif.h"

#include "mrail.h"
#include "rails/netaddr.h"
#include "util/log.h"

#include <errno.h>
#include <hwloc.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- addresses from getifaddrs ---------------------------------------- */

/* Leading one bits of a netmask (a non-contiguous mask stops at its first
 * zero: such masks are invalid for IPv4 and unused for IPv6). */
static uint8_t prefix_from_mask(const uint8_t *m, unsigned bytes)
{
	unsigned bits = 0;
	for (unsigned i = 0; i < bytes; i++) {
		if (m[i] == 0xff) {
			bits += 8;
			continue;
		}
		for (uint8_t b = m[i]; b & 0x80; b = (uint8_t)(b << 1))
			bits++;
		break;
	}
	return (uint8_t)bits;
}

/* IPv4 or IPv6 address and prefix of one getifaddrs entry; 0 otherwise.
 * (Copies, since a struct sockaddr may not be read as its subtypes.) */
static int to_netif_addr(const struct sockaddr *sa, const struct sockaddr *mask,
			 struct mrail_netif_addr *a)
{
	memset(a, 0, sizeof *a);
	if (sa->sa_family == AF_INET) {
		struct sockaddr_in s, m;
		memcpy(&s, sa, sizeof s);
		a->family = 4;
		memcpy(a->addr, &s.sin_addr, 4);
		a->prefix_len = 32;
		if (mask) {
			memcpy(&m, mask, sizeof m);
			a->prefix_len = prefix_from_mask(
				(const uint8_t *)&m.sin_addr, 4);
		}
		return 1;
	}
	if (sa->sa_family == AF_INET6) {
		struct sockaddr_in6 s, m;
		memcpy(&s, sa, sizeof s);
		a->family = 6;
		memcpy(a->addr, &s.sin6_addr, 16);
		a->prefix_len = 128;
		if (mask) {
			memcpy(&m, mask, sizeof m);
			a->prefix_len = prefix_from_mask(
				(const uint8_t *)&m.sin6_addr, 16);
		}
		return 1;
	}
	return 0;
}

/*
 * getifaddrs names IPv4 aliases by their label ("eth0:1"). An alias is the
 * same NIC: as a separate vertex the matching could put two rails on one
 * device, the oversubscription the thesis avoids (3.1), and sysfs knows
 * only the base name.
 */
static void base_name(const char *label, char *name)
{
	size_t len = strcspn(label, ":");
	if (len >= MRAIL_NETIF_NAME_MAX)
		len = MRAIL_NETIF_NAME_MAX - 1;
	memcpy(name, label, len);
	name[len] = '\0';
}

static struct mrail_netif *find_netif(struct mrail_netif *ifs, unsigned n,
				      const char *name)
{
	for (unsigned i = 0; i < n; i++)
		if (!strcmp(ifs[i].name, name))
			return &ifs[i];
	return NULL;
}

static struct mrail_netif *add_netif(struct mrail_netif *ifs, unsigned max,
				     unsigned *n, const char *name,
				     unsigned ifflags)
{
	struct mrail_netif *nif = find_netif(ifs, *n, name);
	if (nif || *n >= max)
		return nif;
	nif = &ifs[(*n)++];
	memset(nif, 0, sizeof *nif);
	snprintf(nif->name, sizeof nif->name, "%s", name);
	nif->flags = MRAIL_NETIF_UP;
	if (ifflags & IFF_LOOPBACK)
		nif->flags |= MRAIL_NETIF_LOOPBACK;
	nif->numa_node = -1;
	return nif;
}

static void add_addr(struct mrail_netif *nif, const struct mrail_netif_addr *a)
{
	for (unsigned k = 0; k < nif->naddrs; k++)
		if (mrail_netaddr_equal(&nif->addrs[k], a))
			return;
	if (nif->naddrs >= MRAIL_NETIF_ADDRS_MAX) {
		char s[64];
		mrail_netaddr_ntop(a, s, sizeof s);
		mrail_debug("interface %s: more than %d addresses, %s left out",
			    nif->name, MRAIL_NETIF_ADDRS_MAX, s);
		return;
	}
	nif->addrs[nif->naddrs++] = *a;
}

static void take_ifaddr(const struct ifaddrs *ifa, struct mrail_netif *out,
			unsigned max, unsigned *n)
{
	struct mrail_netif_addr a;
	char name[MRAIL_NETIF_NAME_MAX];

	if (!ifa->ifa_addr || !(ifa->ifa_flags & IFF_UP) ||
	    !to_netif_addr(ifa->ifa_addr, ifa->ifa_netmask, &a))
		return;
	/* Reachable only with a scope id, which the address blob lacks. */
	if (mrail_netaddr_is_v6_linklocal(&a))
		return;
	base_name(ifa->ifa_name, name);
	struct mrail_netif *nif = add_netif(out, max, n, name, ifa->ifa_flags);
	if (!nif) {
		mrail_debug("more than %u interfaces: %s left out", max, name);
		return;
	}
	add_addr(nif, &a);
}

/* ---- link properties from the kernel ---------------------------------- */

static int sysfs_long(const char *ifname, const char *leaf, long *v)
{
	char path[128];
	snprintf(path, sizeof path, "/sys/class/net/%s/%s", ifname, leaf);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	/* speed of a link without carrier reads as EINVAL: no value. */
	int ok = fscanf(f, "%ld", v) == 1;
	fclose(f);
	return ok ? 0 : -1;
}

static unsigned link_mtu(int sock, const char *name)
{
	struct ifreq ifr;
	long v;

	memset(&ifr, 0, sizeof ifr);
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", name);
	if (sock >= 0 && ioctl(sock, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0)
		return (unsigned)ifr.ifr_mtu;
	if (sysfs_long(name, "mtu", &v) == 0 && v > 0)
		return (unsigned)v;
	return 0;
}

static void fill_link_info(struct mrail_netif *ifs, unsigned n)
{
	int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sock < 0) /* an IPv6-only kernel */
		sock = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	for (unsigned i = 0; i < n; i++) {
		long v;
		ifs[i].mtu = link_mtu(sock, ifs[i].name);
		if (sysfs_long(ifs[i].name, "speed", &v) == 0 && v > 0)
			ifs[i].speed_mbps = (uint64_t)v;
		if (sysfs_long(ifs[i].name, "device/numa_node", &v) == 0 &&
		    v >= 0 && v <= 0xffff)
			ifs[i].numa_node = (int)v;
	}
	if (sock >= 0)
		close(sock);
}

/* ---- locality from hwloc ---------------------------------------------- */

static void locate_osdev(hwloc_topology_t topo, hwloc_obj_t os,
			 struct mrail_netif *nif)
{
	hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, os);
	if (!anc || !anc->cpuset)
		return;
	if (hwloc_bitmap_snprintf(nif->cpuset, sizeof nif->cpuset,
				  anc->cpuset) >= (int)sizeof nif->cpuset)
		nif->cpuset[0] = '\0'; /* a cut cpuset would be wrong */
	if (nif->numa_node < 0 && anc->nodeset &&
	    hwloc_bitmap_weight(anc->nodeset) == 1)
		nif->numa_node = hwloc_bitmap_first(anc->nodeset);
}

/*
 * hwloc plugins that NIC locality does not need: GPU and display ones
 * would initialize their runtimes (slow, and not ours to touch inside an
 * MPI process), and "pci" (libpciaccess) only duplicates what the linux
 * component reads from sysfs, and leaks. Unknown names are ignored.
 */
static void skip_heavy_components(hwloc_topology_t topo)
{
#if HWLOC_API_VERSION >= 0x00020100
	static const char *const skip[] = {"pci",  "opencl", "gl",
					   "cuda", "nvml",   "rsmi",
					   "levelzero"};
	for (size_t k = 0; k < sizeof skip / sizeof skip[0]; k++)
		(void)hwloc_topology_set_components(
			topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, skip[k]);
#else
	(void)topo;
#endif
}

/*
 * Which CPUs are near each NIC: hwloc names network OS devices like the
 * interfaces, below their PCI device. Optional: on any failure the
 * fields stay unknown. Loading a topology takes milliseconds, so it is
 * skipped when only loopback is there.
 */
static void fill_locality(struct mrail_netif *ifs, unsigned n)
{
	hwloc_topology_t topo;
	unsigned phys = 0;

	for (unsigned i = 0; i < n; i++)
		phys += !(ifs[i].flags & MRAIL_NETIF_LOOPBACK);
	if (phys == 0 || hwloc_topology_init(&topo))
		return;
	hwloc_topology_set_io_types_filter(topo,
					   HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	skip_heavy_components(topo);
	if (hwloc_topology_load(topo) == 0) {
		hwloc_obj_t os = NULL;
		while ((os = hwloc_get_next_osdev(topo, os))) {
			struct mrail_netif *nif =
				os->name ? find_netif(ifs, n, os->name) : NULL;
			if (nif)
				locate_osdev(topo, os, nif);
		}
	} else {
		mrail_debug("hwloc could not load the topology: NIC "
			    "locality unknown");
	}
	hwloc_topology_destroy(topo);
}

int mrail_netif_discover(struct mrail_netif *out, unsigned max, unsigned *n)
{
	struct ifaddrs *all;

	if (!n || (max && !out))
		return MRAIL_ERR_INVALID;
	*n = 0;
	if (getifaddrs(&all) != 0) {
		mrail_error("getifaddrs: %s", strerror(errno));
		return MRAIL_ERR_IO;
	}
	for (const struct ifaddrs *ifa = all; ifa; ifa = ifa->ifa_next)
		take_ifaddr(ifa, out, max, n);
	freeifaddrs(all);
	fill_link_info(out, *n);
	fill_locality(out, *n);
	return MRAIL_OK;
}

/* ---- MRAIL_RAILS / MRAIL_RAILS_EXCLUDE -------------------------------- */

enum entry_kind { ENTRY_NAME, ENTRY_ADDR, ENTRY_NET };

struct entry {
	char text[64];
	enum entry_kind kind;
	struct mrail_netif_addr a; /* ENTRY_ADDR, ENTRY_NET */
};

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n';
}

static int classify(struct entry *e, char *err, size_t errlen)
{
	size_t used = 0;
	int r = mrail_netaddr_parse(e->text, &e->a);

	if (r == 1 || r == 2) {
		e->kind = r == 1 ? ENTRY_ADDR : ENTRY_NET;
		return MRAIL_OK;
	}
	if (r < 0) {
		mrail_rails_appendf(err, errlen, &used,
				    "entry '%s' is not an address/prefix "
				    "length", e->text);
		return MRAIL_ERR_CONFIG;
	}
	if (strlen(e->text) >= MRAIL_NETIF_NAME_MAX) {
		mrail_rails_appendf(err, errlen, &used,
				    "entry '%s' is neither an address nor an "
				    "interface name (at most %d characters)",
				    e->text, MRAIL_NETIF_NAME_MAX - 1);
		return MRAIL_ERR_CONFIG;
	}
	e->kind = ENTRY_NAME;
	return MRAIL_OK;
}

/* Next entry of a comma list, blanks around it removed. Returns 1 with an
 * entry, 0 at the end, or a negative MRAIL_ERR_CONFIG. */
static int next_entry(const char **p, struct entry *e, char *err,
		      size_t errlen)
{
	const char *s = *p;
	size_t used = 0;

	while (*s == ',' || is_space(*s))
		s++;
	if (!*s)
		return 0;
	size_t len = strcspn(s, ",");
	*p = s + len;
	while (len && is_space(s[len - 1]))
		len--;
	if (len >= sizeof e->text) {
		mrail_rails_appendf(err, errlen, &used,
				    "entry '%.*s...' is too long", 20, s);
		return MRAIL_ERR_CONFIG;
	}
	memcpy(e->text, s, len);
	e->text[len] = '\0';
	int rc = classify(e, err, errlen);
	return rc == MRAIL_OK ? 1 : rc;
}

static int entry_has_addr(const struct entry *e,
			  const struct mrail_netif_addr *a)
{
	if (e->kind == ENTRY_ADDR)
		return mrail_netaddr_equal(&e->a, a);
	return e->kind == ENTRY_NET &&
	       mrail_netaddr_prefix_equal(&e->a, a, e->a.prefix_len);
}

/* Bits of the addresses of nif that entry e designates (a name: all). */
static unsigned entry_bits(const struct entry *e, const struct mrail_netif *nif)
{
	unsigned bits = 0;
	if (e->kind == ENTRY_NAME)
		return strcmp(e->text, nif->name) ? 0 : (1u << nif->naddrs) - 1;
	for (unsigned k = 0; k < nif->naddrs; k++)
		if (entry_has_addr(e, &nif->addrs[k]))
			bits |= 1u << k;
	return bits;
}

static void unmatched_error(const struct entry *e,
			    const struct mrail_netif *ifs, unsigned n,
			    char *err, size_t errlen)
{
	size_t used = 0;
	mrail_rails_appendf(err, errlen, &used,
			    "entry '%s' matches no interface that is up, nor "
			    "any of their addresses; there are: ", e->text);
	if (n == 0)
		mrail_rails_appendf(err, errlen, &used, "none");
	for (unsigned i = 0; i < n; i++) {
		char one[400];
		mrail_netif_format(&ifs[i], one, sizeof one);
		mrail_rails_appendf(err, errlen, &used, "%s%s", i ? ", " : "",
				    one);
	}
}

/* keep[i]: bit k set = address k of interface i stays. */
static int apply_include(const struct mrail_netif *ifs, unsigned n,
			 const char *include, unsigned *keep, char *err,
			 size_t errlen)
{
	struct entry e;
	const char *p = include;
	int any = 0, rc;

	for (unsigned i = 0; i < n; i++)
		keep[i] = 0;
	while (p && (rc = next_entry(&p, &e, err, errlen)) != 0) {
		if (rc < 0)
			return rc;
		unsigned matched = 0;
		any = 1;
		for (unsigned i = 0; i < n; i++) {
			unsigned b = entry_bits(&e, &ifs[i]);
			keep[i] |= b;
			matched |= b;
		}
		if (!matched) {
			unmatched_error(&e, ifs, n, err, errlen);
			return MRAIL_ERR_CONFIG;
		}
	}
	if (!any) /* no list, or only blanks and commas: no restriction */
		for (unsigned i = 0; i < n; i++)
			keep[i] = (1u << ifs[i].naddrs) - 1;
	return MRAIL_OK;
}

/* Entries matching nothing are fine here: an exclude list is usually
 * shared by hosts that do not all have every interface. */
static int apply_exclude(const struct mrail_netif *ifs, unsigned n,
			 const char *exclude, unsigned *keep, char *err,
			 size_t errlen)
{
	struct entry e;
	const char *p = exclude;
	int rc;

	while (p && (rc = next_entry(&p, &e, err, errlen)) != 0) {
		if (rc < 0)
			return rc;
		for (unsigned i = 0; i < n; i++)
			keep[i] &= ~entry_bits(&e, &ifs[i]);
	}
	return MRAIL_OK;
}

/* Drop what is not kept, keeping the order; an interface without any
 * address left is dropped. */
static void compact(struct mrail_netif *ifs, unsigned *n, const unsigned *keep)
{
	unsigned out = 0;
	for (unsigned i = 0; i < *n; i++) {
		if (!keep[i])
			continue;
		struct mrail_netif nif = ifs[i];
		nif.naddrs = 0;
		for (unsigned k = 0; k < ifs[i].naddrs; k++)
			if (keep[i] >> k & 1)
				nif.addrs[nif.naddrs++] = ifs[i].addrs[k];
		memset(&nif.addrs[nif.naddrs], 0,
		       (MRAIL_NETIF_ADDRS_MAX - nif.naddrs) * sizeof nif.addrs[0]);
		ifs[out++] = nif;
	}
	*n = out;
}

int mrail_netif_filter(struct mrail_netif *ifs, unsigned *n,
		       const char *include, const char *exclude, char *err,
		       size_t errlen)
{
	unsigned keep[MRAIL_NETIF_MAX];
	char scratch[1];

	if (!err) {
		err = scratch;
		errlen = sizeof scratch;
	}
	if (errlen)
		err[0] = '\0';
	if (!n || *n > MRAIL_NETIF_MAX || (*n && !ifs))
		return MRAIL_ERR_INVALID;
	for (unsigned i = 0; i < *n; i++)
		if (ifs[i].naddrs > MRAIL_NETIF_ADDRS_MAX)
			return MRAIL_ERR_INVALID;
	/* Both lists are checked before anything changes: on error the
	 * table is left as it was. */
	int rc = apply_include(ifs, *n, include, keep, err, errlen);
	if (rc == MRAIL_OK)
		rc = apply_exclude(ifs, *n, exclude, keep, err, errlen);
	if (rc == MRAIL_OK)
		compact(ifs, n, keep);
	return rc;
}

/* ---- text ------------------------------------------------------------- */

void mrail_netif_format(const struct mrail_netif *nif, char *buf, size_t len)
{
	size_t used = 0;
	if (!buf || len == 0)
		return;
	buf[0] = '\0';
	/* The name may come from a peer: never read past its array. */
	mrail_rails_appendf(buf, len, &used, "%.*s", MRAIL_NETIF_NAME_MAX,
			    nif->name);
	unsigned na = nif->naddrs < MRAIL_NETIF_ADDRS_MAX ? nif->naddrs
							  : MRAIL_NETIF_ADDRS_MAX;
	for (unsigned k = 0; k < na; k++) {
		char s[64];
		mrail_netaddr_ntop(&nif->addrs[k], s, sizeof s);
		mrail_rails_appendf(buf, len, &used, " %s/%u", s,
				    nif->addrs[k].prefix_len);
	}
}
