/*
 * Local endpoints: the listeners peers connect to. Loopback ones serve
 * processes of the same host; one per address of each usable interface
 * (discovered, then filtered by MRAIL_RAILS / MRAIL_RAILS_EXCLUDE) serves
 * other hosts. Also what "same host" means.
 */
#include "libmrail/engine.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int open_endpoint(struct mrail_engine *e, const char *local, int netif,
			 unsigned addr)
{
	if (e->nlocal >= MRAIL_MAX_RAILS) {
		mrail_warn("more than %d local endpoints: %s left out",
			   MRAIL_MAX_RAILS, local);
		return MRAIL_ERR_NOT_FOUND;
	}
	struct local_rail *l = &e->local[e->nlocal];
	l->ops = e->drv_ops;
	l->drv = e->drv;
	l->caps = e->caps;
	l->netif = netif;
	l->addr = addr;
	snprintf(l->local, sizeof l->local, "%s", local);
	l->addr_len = sizeof l->addr_blob;
	int rc = l->ops->listen(l->drv, local, l->addr_blob, &l->addr_len,
				l->name, sizeof l->name);
	if (rc < 0) {
		mrail_warn("cannot listen on %s: %s", local, mrail_strerror(rc));
		return rc;
	}
	e->nlocal++;
	return MRAIL_OK;
}

/* One listener per address of each interface rails to other hosts may
 * use; addresses that cannot be listened on are left out. */
static void open_interface_endpoints(struct mrail_engine *e)
{
	unsigned kept = 0;
	for (unsigned i = 0; i < e->nnetif; i++) {
		struct mrail_netif n = e->netifs[i];
		e->netifs[kept] = n;
		e->netifs[kept].naddrs = 0;
		for (unsigned a = 0; a < n.naddrs; a++) {
			char s[INET6_ADDRSTRLEN];
			inet_ntop(n.addrs[a].family == 4 ? AF_INET : AF_INET6,
				  n.addrs[a].addr, s, sizeof s);
			if (open_endpoint(e, s, (int)kept,
					  e->netifs[kept].naddrs) == MRAIL_OK)
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

static int discover_interfaces(struct mrail_engine *e)
{
	struct mrail_netif *all = calloc(MRAIL_NETIF_MAX, sizeof *all);
	unsigned n = 0, kept = 0;
	char err[512];
	int rc;

	if (!all)
		return MRAIL_ERR_NOMEM;
	if ((e->cfg.rails && !has_token(e->cfg.rails)) ||
	    (e->cfg.rails_exclude && !has_token(e->cfg.rails_exclude))) {
		mrail_error("invalid MRAIL_RAILS%s: no interface named",
			    e->cfg.rails && !has_token(e->cfg.rails) ? ""
								     : "_EXCLUDE");
		free(all);
		return MRAIL_ERR_CONFIG;
	}
	rc = mrail_netif_discover(all, MRAIL_NETIF_MAX, &n);
	if (rc != MRAIL_OK) {
		mrail_warn("interface discovery failed (%s): no rail to other "
			   "hosts", mrail_strerror(rc));
		n = 0;
	}
	rc = mrail_netif_filter(all, &n, e->cfg.rails, e->cfg.rails_exclude,
				err, sizeof err);
	if (rc != MRAIL_OK) {
		mrail_error("invalid MRAIL_RAILS='%s' / MRAIL_RAILS_EXCLUDE='%s': "
			    "%s", e->cfg.rails ? e->cfg.rails : "",
			    e->cfg.rails_exclude ? e->cfg.rails_exclude : "", err);
		free(all);
		return MRAIL_ERR_CONFIG;
	}
	/* Loopback serves processes of this host, through its own rails. */
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

int endpoints_open(struct mrail_engine *e)
{
	int rc = MRAIL_OK;

	if (e->cfg.tcp_loopback_rails < 1 ||
	    e->cfg.tcp_loopback_rails > MRAIL_MAX_RAILS / 2) {
		mrail_error("invalid MRAIL_TCP_LOOPBACK_RAILS=%u: 1..%d",
			    e->cfg.tcp_loopback_rails, MRAIL_MAX_RAILS / 2);
		return MRAIL_ERR_CONFIG;
	}
	for (unsigned i = 0; i < e->cfg.tcp_loopback_rails && !rc; i++)
		rc = open_endpoint(e, "127.0.0.1", -1, i);
	if (rc)
		return rc;
	return discover_interfaces(e);
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
