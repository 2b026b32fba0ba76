/*
 * The address blob (version 3, docs/wire.md): who the engine is, which host
 * it runs on, its interfaces with their addresses and, per address, one
 * listener per IP driver; then the rails drivers list themselves (loopback
 * rails, HCA ports, fabric domains). Peers choose rails from it.
 */
#include "libmrail/engine.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

#define ADDR_MAGIC 0x41524d00u /* "\0MRA" as little-endian u32 */
#define ADDR_VERSION 3u

struct addr_hdr {
	uint32_t magic_version;
	uint16_t nnetif;
	uint16_t nlisted;
	uint64_t uuid;
	uint64_t host_id;
};

struct netif_hdr {
	char name[MRAIL_NETIF_NAME_MAX];
	uint32_t flags;
	uint32_t mtu;
	uint64_t speed_mbps;
	int32_t numa_node;
	uint16_t naddrs;
	uint16_t reserved;
};

#define ADDR_REC_SIZE 18 /* family, prefix_len, 16 address bytes */

struct writer {
	uint8_t *p;
	size_t len, cap;
	int overflow;
};

static void put(struct writer *w, const void *src, size_t n)
{
	if (w->len + n > w->cap) {
		w->overflow = 1;
		return;
	}
	memcpy(w->p + w->len, src, n);
	w->len += n;
}

static void put_endpoint(struct writer *w, const struct local_rail *l)
{
	uint8_t dl = (uint8_t)strlen(l->ops->name);
	uint16_t bl = (uint16_t)l->addr_len;
	put(w, &dl, 1);
	put(w, l->ops->name, dl);
	put(w, &bl, 2);
	put(w, l->addr_blob, bl);
}

static void put_str(struct writer *w, const char *s)
{
	uint8_t n = (uint8_t)strlen(s);
	put(w, &n, 1);
	put(w, s, n);
}

int address_encode(struct mrail_engine *e, void *buf, size_t *len)
{
	ENGINE_ASSERT_LOCKED(e);
	uint8_t tmp[MRAIL_ADDR_MAX];
	struct writer w = {tmp, 0, sizeof tmp, 0};
	struct addr_hdr h = {ADDR_MAGIC | ADDR_VERSION, (uint16_t)e->nnetif, 0,
			     e->uuid, e->host_id};

	for (unsigned i = 0; i < e->nlocal; i++)
		h.nlisted += e->local[i].netif < 0;
	put(&w, &h, sizeof h);
	for (unsigned i = 0; i < e->nnetif; i++) {
		const struct mrail_netif *n = &e->netifs[i];
		struct netif_hdr nh;
		memset(&nh, 0, sizeof nh);
		memcpy(nh.name, n->name, sizeof nh.name);
		nh.name[sizeof nh.name - 1] = '\0';
		nh.flags = n->flags;
		nh.mtu = n->mtu;
		nh.speed_mbps = n->speed_mbps;
		nh.numa_node = n->numa_node;
		nh.naddrs = (uint16_t)n->naddrs;
		put(&w, &nh, sizeof nh);
		for (unsigned a = 0; a < n->naddrs; a++) {
			put(&w, &n->addrs[a].family, 1);
			put(&w, &n->addrs[a].prefix_len, 1);
			put(&w, n->addrs[a].addr, 16);
		}
		for (unsigned a = 0; a < n->naddrs; a++) {
			uint8_t nep = 0;
			for (unsigned k = 0; k < e->nlocal; k++)
				nep += e->local[k].netif == (int)i &&
				       e->local[k].addr == a;
			put(&w, &nep, 1);
			for (unsigned k = 0; k < e->nlocal; k++)
				if (e->local[k].netif == (int)i &&
				    e->local[k].addr == a)
					put_endpoint(&w, &e->local[k]);
		}
	}
	for (unsigned i = 0; i < e->nlocal; i++) {
		const struct local_rail *l = &e->local[i];
		uint8_t scope = (uint8_t)l->scope;
		if (l->netif >= 0)
			continue;
		put_endpoint(&w, l);
		put(&w, &scope, 1);
		put_str(&w, l->rail_name);
		put_str(&w, l->fabric);
		put_str(&w, l->ifname);
	}
	if (w.overflow)
		return MRAIL_ERR_INVALID;
	if (*len < w.len) {
		*len = w.len;
		return MRAIL_ERR_INVALID;
	}
	memcpy(buf, tmp, w.len);
	*len = w.len;
	return MRAIL_OK;
}

struct reader {
	const uint8_t *p;
	size_t len, off;
};

static int take(struct reader *r, void *dst, size_t n)
{
	if (n > r->len - r->off)
		return -1;
	memcpy(dst, r->p + r->off, n);
	r->off += n;
	return 0;
}

static int take_endpoint(struct reader *r, struct remote_ep *ep,
			 const char **why)
{
	uint8_t dl;
	uint16_t bl;
	if (take(r, &dl, 1) || dl >= sizeof ep->driver ||
	    take(r, ep->driver, dl)) {
		*why = "address blob truncated or driver name too long";
		return -1;
	}
	ep->driver[dl] = '\0';
	if (take(r, &bl, 2) || bl > sizeof ep->blob || take(r, ep->blob, bl)) {
		*why = "address blob truncated or listener address too long";
		return -1;
	}
	ep->len = bl;
	return 0;
}

static int take_str(struct reader *r, char *dst, size_t cap)
{
	uint8_t n;
	if (take(r, &n, 1) || n >= cap || take(r, dst, n))
		return -1;
	dst[n] = '\0';
	return memchr(dst, '\0', n) ? -1 : 0;
}

static int take_netif(struct reader *r, struct mrail_netif *n,
		      const char **why)
{
	struct netif_hdr nh;
	if (take(r, &nh, sizeof nh)) {
		*why = "address blob truncated in an interface record";
		return -1;
	}
	if (!memchr(nh.name, '\0', sizeof nh.name) ||
	    nh.naddrs > MRAIL_NETIF_ADDRS_MAX) {
		*why = "interface record with a bad name or too many addresses";
		return -1;
	}
	memset(n, 0, sizeof *n);
	memcpy(n->name, nh.name, sizeof n->name);
	n->flags = nh.flags;
	n->mtu = nh.mtu;
	n->speed_mbps = nh.speed_mbps;
	n->numa_node = nh.numa_node;
	n->naddrs = nh.naddrs;
	for (unsigned a = 0; a < n->naddrs; a++) {
		struct mrail_netif_addr *x = &n->addrs[a];
		if (take(r, &x->family, 1) || take(r, &x->prefix_len, 1) ||
		    take(r, x->addr, 16)) {
			*why = "address blob truncated in an address record";
			return -1;
		}
		if ((x->family != 4 && x->family != 6) ||
		    x->prefix_len > (x->family == 4 ? 32 : 128)) {
			*why = "address record with a bad family or prefix";
			return -1;
		}
	}
	return 0;
}

int address_parse(const void *blob, size_t len, struct peer_address *pa,
		  const char **why)
{
	struct reader r = {blob, len, 0};
	struct addr_hdr h;

	memset(pa, 0, sizeof *pa);
	if (len > MRAIL_ADDR_MAX || take(&r, &h, sizeof h)) {
		*why = "address blob has an impossible length";
		return -1;
	}
	if ((h.magic_version & ~0xffu) != ADDR_MAGIC) {
		*why = "not a libmrail address blob";
		return -1;
	}
	if ((h.magic_version & 0xffu) != ADDR_VERSION) {
		*why = "address blob of an unsupported version";
		return -1;
	}
	if (h.nnetif > MRAIL_NETIF_MAX || h.nlisted > MRAIL_MAX_RAILS) {
		*why = "address blob lists too many interfaces or endpoints";
		return -1;
	}
	pa->uuid = h.uuid;
	pa->host_id = h.host_id;
	/* Endpoints per address are bounded by the drivers an engine holds. */
	size_t max_ep = (size_t)h.nnetif * MRAIL_NETIF_ADDRS_MAX *
			MRAIL_MAX_DRIVERS + h.nlisted + 1;
	pa->netif = calloc(h.nnetif ? h.nnetif : 1, sizeof *pa->netif);
	pa->ep = calloc(max_ep, sizeof *pa->ep);
	if (!pa->netif || !pa->ep) {
		*why = "out of memory";
		address_free(pa);
		return -1;
	}
	for (unsigned i = 0; i < h.nnetif; i++) {
		struct mrail_netif *n = &pa->netif[i];
		if (take_netif(&r, n, why))
			goto bad;
		pa->nnetif++;
		for (unsigned a = 0; a < n->naddrs; a++) {
			uint8_t nep;
			if (take(&r, &nep, 1) || nep > MRAIL_MAX_DRIVERS) {
				*why = "address blob truncated or too many "
				       "endpoints on one address";
				goto bad;
			}
			for (unsigned k = 0; k < nep; k++) {
				struct remote_ep *ep = &pa->ep[pa->nep++];
				ep->netif = (int)i;
				ep->addr = a;
				if (take_endpoint(&r, ep, why))
					goto bad;
			}
		}
	}
	for (unsigned i = 0; i < h.nlisted; i++) {
		struct remote_ep *ep = &pa->ep[pa->nep++];
		uint8_t scope;
		ep->netif = -1;
		if (take_endpoint(&r, ep, why))
			goto bad;
		if (take(&r, &scope, 1) || take_str(&r, ep->name, sizeof ep->name) ||
		    take_str(&r, ep->fabric, sizeof ep->fabric) ||
		    take_str(&r, ep->ifname, sizeof ep->ifname) ||
		    (scope != MRAIL_DRV_SCOPE_HOST &&
		     scope != MRAIL_DRV_SCOPE_FABRIC)) {
			*why = "address blob: bad rail record (scope, name or "
			       "fabric)";
			goto bad;
		}
		ep->scope = scope;
		/* Its index among the rails its driver listed. */
		ep->addr = 0;
		for (unsigned k = 0; k + 1 < pa->nep; k++)
			ep->addr += pa->ep[k].netif < 0 &&
				    !strcmp(pa->ep[k].driver, ep->driver);
	}
	if (r.off != len) {
		*why = "trailing bytes after the address blob";
		goto bad;
	}
	return 0;
bad:
	address_free(pa);
	return -1;
}

void address_free(struct peer_address *pa)
{
	free(pa->netif);
	free(pa->ep);
	pa->netif = NULL;
	pa->ep = NULL;
	pa->nnetif = pa->nep = 0;
}
