/*
 * Local endpoints: the listeners peers connect to. The rails each driver
 * lists itself (tcp: loopback rails for processes of the same host; an
 * RDMA driver: its ports or domains), and for IP drivers one per address of
 * each usable interface (discovered, then filtered by MRAIL_RAILS /
 * MRAIL_RAILS_EXCLUDE) for other hosts. Also what "same host" means.
 */
#include "libmrail/engine.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int open_endpoint(struct mrail_engine *e, struct drv_instance *di,
			 const char *local, int netif, unsigned addr,
			 const struct mrail_drv_rail_desc *desc)
{
	if (e->nlocal >= MRAIL_MAX_RAILS) {
		mrail_warn("more than %d local endpoints: %s %s left out",
			   MRAIL_MAX_RAILS, di->ops->name, local);
		return MRAIL_ERR_NOT_FOUND;
	}
	struct local_rail *l = &e->local[e->nlocal];
	memset(l, 0, sizeof *l);
	l->di = di;
	l->ops = di->ops;
	l->drv = di->drv;
	l->caps = di->caps;
	l->netif = netif;
	l->addr = addr;
	if (desc) {
		l->scope = desc->scope;
		snprintf(l->rail_name, sizeof l->rail_name, "%.*s",
			 (int)sizeof l->rail_name - 1, desc->name);
		snprintf(l->fabric, sizeof l->fabric, "%s", desc->fabric);
		snprintf(l->ifname, sizeof l->ifname, "%.15s",
			 desc->ifname[0] ? desc->ifname : desc->name);
		if (desc->nominal_bandwidth > 0)
			l->caps.nominal_bandwidth = desc->nominal_bandwidth;
		if (desc->nominal_latency > 0)
			l->caps.nominal_latency = desc->nominal_latency;
	}
	snprintf(l->local, sizeof l->local, "%s", local);
	l->addr_len = sizeof l->addr_blob;
	int rc = l->ops->listen(l->drv, local, l->addr_blob, &l->addr_len,
				l->name, sizeof l->name);
	if (rc < 0) {
		mrail_warn("%s: cannot listen on %s: %s", di->ops->name, local,
			   mrail_strerror(rc));
		return rc;
	}
	e->nlocal++;
	return MRAIL_OK;
}

static int is_ip_driver(const struct drv_instance *di)
{
	return (di->caps.flags & MRAIL_DRV_CAP_IP) != 0;
}

static int in_list(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");
		if (len == n && !strncmp(p, name, n))
			return 1;
		p += len + (p[len] == ',');
	}
	return 0;
}

static int append(char *list, size_t cap, const char *item, size_t n)
{
	size_t len = strlen(list);
	if (len + n + 2 > cap)
		return -1;
	if (len)
		list[len++] = ',';
	memcpy(list + len, item, n);
	list[len + n] = '\0';
	return 0;
}

/*
 * MRAIL_RAILS: "driver:name" entries go to that driver (its own rails, or
 * its interfaces for an IP driver); plain entries (interface names,
 * addresses, IPv6 ones included) to the IP drivers' address selection.
 */
static int split_rails(struct mrail_engine *e, char *ip, size_t cap)
{
	ip[0] = '\0';
	for (const char *p = e->cfg.rails; p && *p;) {
		size_t len = strcspn(p, ",");
		const char *colon = memchr(p, ':', len);
		struct drv_instance *di = NULL;
		if (colon && (size_t)(colon - p) < 32) {
			char d[32];
			memcpy(d, p, (size_t)(colon - p));
			d[colon - p] = '\0';
			di = drivers_find(e, d);
			if (!di && mrail_driver_find(d)) {
				mrail_error("invalid MRAIL_RAILS='%s': driver '%s' "
					    "is not in MRAIL_DRIVERS='%s'",
					    e->cfg.rails, d, e->cfg.drivers);
				return MRAIL_ERR_CONFIG;
			}
		}
		int bad = 0;
		if (di)
			bad = append(di->rails, sizeof di->rails, colon + 1,
				     len - (size_t)(colon - p) - 1);
		else if (len)
			bad = append(ip, cap, p, len);
		if (bad) {
			mrail_error("invalid MRAIL_RAILS: too long");
			return MRAIL_ERR_CONFIG;
		}
		p += len + (p[len] == ',');
	}
	return MRAIL_OK;
}

/* The rails a driver lists itself, less those MRAIL_RAILS leaves out.
 * Entries naming none of them are interfaces (IP drivers). */
static int open_listed_rails(struct mrail_engine *e, struct drv_instance *di,
			     char *ip, size_t cap)
{
	struct mrail_drv_rail_desc d[MRAIL_MAX_RAILS];
	int n = di->ops->list_rails ? di->ops->list_rails(di->drv, d,
							  MRAIL_MAX_RAILS)
				    : 0;
	int named = 0;

	if (n < 0) {
		mrail_error("%s: listing its rails failed: %s", di->ops->name,
			    mrail_strerror(n));
		return n;
	}
	for (int i = 0; i < n; i++)
		named += in_list(di->rails, d[i].name);
	/* Entries that are no listed rail: interfaces, for an IP driver. */
	for (const char *p = di->rails; *p;) {
		size_t len = strcspn(p, ",");
		char item[64];
		snprintf(item, sizeof item, "%.*s", (int)len, p);
		int known = 0;
		for (int i = 0; i < n && !known; i++)
			known = !strcmp(d[i].name, item);
		if (!known && !is_ip_driver(di)) {
			mrail_error("invalid MRAIL_RAILS='%s': driver '%s' has no "
				    "rail '%s'", e->cfg.rails, di->ops->name,
				    item);
			return MRAIL_ERR_CONFIG;
		}
		if (!known && append(ip, cap, p, len)) {
			mrail_error("invalid MRAIL_RAILS: too long");
			return MRAIL_ERR_CONFIG;
		}
		p += len + (p[len] == ',');
	}
	for (int i = 0; i < n; i++) {
		if (named && !in_list(di->rails, d[i].name))
			continue;
		int rc = open_endpoint(e, di, d[i].listen, -1, (unsigned)i, &d[i]);
		if (rc)
			return rc;
	}
	return MRAIL_OK;
}

/* One listener per address and IP driver, for each interface rails to
 * other hosts may use; addresses no driver can listen on are left out. */
static void open_interface_endpoints(struct mrail_engine *e)
{
	unsigned kept = 0;
	for (unsigned i = 0; i < e->nnetif; i++) {
		struct mrail_netif n = e->netifs[i];
		e->netifs[kept] = n;
		e->netifs[kept].naddrs = 0;
		for (unsigned a = 0; a < n.naddrs; a++) {
			char s[INET6_ADDRSTRLEN];
			int opened = 0;
			inet_ntop(n.addrs[a].family == 4 ? AF_INET : AF_INET6,
				  n.addrs[a].addr, s, sizeof s);
			for (unsigned d = 0; d < e->ndrv; d++)
				if (is_ip_driver(&e->drivers[d]))
					opened += open_endpoint(
						e, &e->drivers[d], s, (int)kept,
						e->netifs[kept].naddrs,
						NULL) == MRAIL_OK;
			if (opened)
				e->netifs[kept].addrs[e->netifs[kept].naddrs++] =
					n.addrs[a];
		}
		if (e->netifs[kept].naddrs > 0)
			kept++;
	}
	e->nnetif = kept;
}

static int has_token(const char *list)
{
	return list && list[strspn(list, ", ")] != '\0';
}

static int discover_interfaces(struct mrail_engine *e, const char *include)
{
	struct mrail_netif *all = calloc(MRAIL_NETIF_MAX, sizeof *all);
	unsigned n = 0, kept = 0;
	char err[512];
	int rc;

	if (!all)
		return MRAIL_ERR_NOMEM;
	rc = mrail_netif_discover(all, MRAIL_NETIF_MAX, &n);
	if (rc != MRAIL_OK) {
		mrail_warn("interface discovery failed (%s): no rail to other "
			   "hosts", mrail_strerror(rc));
		n = 0;
	}
	rc = mrail_netif_filter(all, &n, include, e->cfg.rails_exclude,
				err, sizeof err);
	if (rc != MRAIL_OK) {
		mrail_error("invalid MRAIL_RAILS='%s' / MRAIL_RAILS_EXCLUDE='%s': "
			    "%s", e->cfg.rails ? e->cfg.rails : "",
			    e->cfg.rails_exclude ? e->cfg.rails_exclude : "", err);
		free(all);
		return MRAIL_ERR_CONFIG;
	}
	/* Loopback serves processes of this host, through listed rails. */
	for (unsigned i = 0; i < n; i++)
		if (!(all[i].flags & MRAIL_NETIF_LOOPBACK))
			all[kept++] = all[i];
	e->netifs = all;
	e->nnetif = kept;
	open_interface_endpoints(e);
	for (unsigned i = 0; i < e->nnetif; i++) {
		char desc[256];
		mrail_netif_format(&e->netifs[i], desc, sizeof desc);
		mrail_debug("interface for rails to other hosts: %s", desc);
	}
	return MRAIL_OK;
}

/*
 * A big job with every rank on this host (mrail-run says so: MRAIL_SIZE =
 * MRAIL_LOCAL_SIZE) needs no rail to another host. Discovering interfaces
 * (netlink dumps, sysfs, the hwloc topology for NIC locality) was most of
 * a rank's start-up CPU, paid by every rank (docs/scale.md). Only when the
 * user named no interface, and above the size where connection goes lazy.
 */
static int job_on_this_host(const struct mrail_engine *e)
{
	const char *size = getenv("MRAIL_SIZE");
	const char *local = getenv("MRAIL_LOCAL_SIZE");
	char *end;
	if (e->cfg.rails || e->cfg.rails_exclude || !size || !local ||
	    strcmp(size, local) || e->cfg.bootstrap == 0)
		return 0;
	unsigned long n = strtoul(size, &end, 10);
	return *end == '\0' && n > MRAIL_CONNECT_EAGER_RANKS;
}

int endpoints_open(struct mrail_engine *e)
{
	char ip[1024];
	int rc, any_ip = 0;

	if ((e->cfg.rails && !has_token(e->cfg.rails)) ||
	    (e->cfg.rails_exclude && !has_token(e->cfg.rails_exclude))) {
		mrail_error("invalid MRAIL_RAILS%s: no interface named",
			    e->cfg.rails && !has_token(e->cfg.rails) ? ""
								     : "_EXCLUDE");
		return MRAIL_ERR_CONFIG;
	}
	if ((rc = split_rails(e, ip, sizeof ip)))
		return rc;
	for (unsigned d = 0; d < e->ndrv; d++) {
		if ((rc = open_listed_rails(e, &e->drivers[d], ip, sizeof ip)))
			return rc;
		any_ip |= is_ip_driver(&e->drivers[d]);
	}
	/* MRAIL_RAILS named only other drivers' rails: no interface. */
	if (!any_ip || (e->cfg.rails && !ip[0]))
		return MRAIL_OK;
	if (job_on_this_host(e)) {
		mrail_debug("every rank on this host: no interface discovery");
		return MRAIL_OK;
	}
	return discover_interfaces(e, e->cfg.rails ? ip : NULL);
}

/*
 * Same host means same kernel and same network namespace: processes in
 * different namespaces (the netlab test bed) are different hosts.
 */
uint64_t endpoints_host_identity(void)
{
	char buf[512];
	size_t n = 0;
	struct stat st;
	uint8_t key[MRAIL_AUTH_KEY_BYTES] = {0}, mac[MRAIL_AUTH_MAC_BYTES];
	uint64_t id;

	if (gethostname(buf, 256) == 0)
		n = strnlen(buf, 256);
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	if (f) {
		n += fread(buf + n, 1, 64, f);
		fclose(f);
	}
	if (stat("/proc/self/ns/net", &st) == 0) {
		memcpy(buf + n, &st.st_ino, sizeof st.st_ino);
		n += sizeof st.st_ino;
		memcpy(buf + n, &st.st_dev, sizeof st.st_dev);
		n += sizeof st.st_dev;
	}
	mrail_auth_mac(key, buf, n, mac);
	memcpy(&id, mac, sizeof id);
	return id;
}
