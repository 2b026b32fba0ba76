/*
 * libfabric driver, rails: the driver's knobs, which fi_info entries become
 * rails (fi_getinfo, filtered by provider and domain ourselves because
 * domain_attr->name hints are ignored), and the per-rail libfabric objects
 * (fabric, domain, address vector, completion queue, one RDM endpoint and
 * its pre-posted head buffers).
 */
#include "drivers/ofi/ofi_internal.h"
#include "rails/netaddr.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/params.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define OFI_DEFAULT_PROVIDER "tcp;ofi_rxm"

static atomic_uint shm_counter;

/* ---- params ------------------------------------------------------------ */

static void plus_to_semicolon(char *s)
{
	for (; *s; s++)
		if (*s == '+')
			*s = ';';
}

static int set_str(char *dst, size_t cap, const char *key, const char *val)
{
	if (strlen(val) >= cap || !*val) {
		mrail_error("ofi: parameter %s='%s': expected a non-empty value "
			    "shorter than %zu characters",
			    key, val, cap);
		return MRAIL_ERR_CONFIG;
	}
	snprintf(dst, cap, "%s", val);
	return 0;
}

static int parse_shm(const char *key, const char *val, enum ofi_shm_mode *m)
{
	if (!strcmp(val, "auto"))
		*m = OFI_SHM_AUTO;
	else if (!strcmp(val, "yes") || !strcmp(val, "1"))
		*m = OFI_SHM_YES;
	else if (!strcmp(val, "no") || !strcmp(val, "0"))
		*m = OFI_SHM_NO;
	else {
		mrail_error("ofi: parameter %s='%s': expected auto, yes or no",
			    key, val);
		return MRAIL_ERR_CONFIG;
	}
	return 0;
}

static int parse_wait(const char *key, const char *val, bool *poll)
{
	if (!strcmp(val, "fd"))
		*poll = false;
	else if (!strcmp(val, "poll"))
		*poll = true;
	else {
		mrail_error("ofi: %s='%s': expected fd or poll", key, val);
		return -1;
	}
	return 0;
}

int ofi_params_parse(const char *s, struct ofi_params *p)
{
	const char *env;
	char key[32], val[256];
	int rc;

	memset(p, 0, sizeof *p);
	p->rx_bufs = OFI_RX_BUFS;
	env = getenv("MRAIL_OFI_PROVIDER");
	if (env && set_str(p->provider, sizeof p->provider,
			   "MRAIL_OFI_PROVIDER", env))
		return MRAIL_ERR_CONFIG;
	env = getenv("MRAIL_OFI_SHM");
	if (env && parse_shm("MRAIL_OFI_SHM", env, &p->shm))
		return MRAIL_ERR_CONFIG;
	env = getenv("MRAIL_OFI_WAIT");
	if (env && parse_wait("MRAIL_OFI_WAIT", env, &p->wait_poll))
		return MRAIL_ERR_CONFIG;
	env = getenv("MRAIL_OFI_DOMAINS");
	if (env && set_str(p->domains, sizeof p->domains, "MRAIL_OFI_DOMAINS",
			   env))
		return MRAIL_ERR_CONFIG;
	/* Params given to open() win over the environment shorthands. */
	for (const char *pos = s ? s : ""; *pos;) {
		rc = mrail_params_next(&pos, key, sizeof key, val, sizeof val);
		if (rc == 0)
			break;
		if (rc < 0) {
			mrail_error("ofi: malformed parameters '%s': expected "
				    "key=value,... (keys: provider, domains, "
				    "rx_bufs, shm, wait)",
				    s);
			return MRAIL_ERR_CONFIG;
		}
		if (!strcmp(key, "shm")) {
			if (parse_shm(key, val, &p->shm))
				return MRAIL_ERR_CONFIG;
		} else if (!strcmp(key, "wait")) {
			if (parse_wait(key, val, &p->wait_poll))
				return MRAIL_ERR_CONFIG;
		} else if (!strcmp(key, "provider")) {
			if (set_str(p->provider, sizeof p->provider, key, val))
				return MRAIL_ERR_CONFIG;
		} else if (!strcmp(key, "domains")) {
			if (set_str(p->domains, sizeof p->domains, key, val))
				return MRAIL_ERR_CONFIG;
			/* ',' separates params: domains use '+'. */
			for (char *c = p->domains; *c; c++)
				if (*c == '+')
					*c = ',';
		} else if (!strcmp(key, "rx_bufs")) {
			char *end;
			long v = strtol(val, &end, 10);
			if (*end || end == val || v < 2 || v > 4096) {
				mrail_error("ofi: parameter rx_bufs='%s': "
					    "expected 2..4096",
					    val);
				return MRAIL_ERR_CONFIG;
			}
			p->rx_bufs = (int)v;
		} else {
			mrail_error("ofi: unknown parameter '%s' (known: "
				    "provider, domains, rx_bufs, shm, wait)",
				    key);
			return MRAIL_ERR_CONFIG;
		}
	}
	p->provider_given = p->provider[0] != 0;
	if (!p->provider[0])
		snprintf(p->provider, sizeof p->provider, "%s",
			 OFI_DEFAULT_PROVIDER);
	plus_to_semicolon(p->provider);
	return 0;
}

/* ---- discovery --------------------------------------------------------- */

static bool in_csv(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");
		if (len == n && !strncmp(p, name, n))
			return true;
		p += len + (p[len] == ',');
	}
	return false;
}

static bool loopback_addr(const struct fi_info *fi)
{
	if (!fi->src_addr || (fi->addr_format != FI_SOCKADDR_IN &&
			      fi->addr_format != FI_SOCKADDR_IN6))
		return false;
	return mrail_sockaddr_is_loopback(fi->src_addr);
}

static struct fi_info *make_hints(const char *provider, bool rma,
				  bool mr_local, bool directed)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_TAGGED;
	/* Body receives name their sender: shm (1.17) otherwise lets a
	 * dead peer's stale body reach another connection's receive. */
	if (directed)
		h->caps |= FI_DIRECTED_RECV;
	if (rma)
		h->caps |= FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ |
			   FI_REMOTE_WRITE;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				  FI_MR_PROV_KEY | FI_MR_ENDPOINT;
	if (mr_local)
		h->domain_attr->mr_mode |= FI_MR_LOCAL;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	/* Frames of one connection must arrive in posting order. */
	h->tx_attr->msg_order = FI_ORDER_SAS;
	h->rx_attr->msg_order = FI_ORDER_SAS;
	h->fabric_attr->prov_name = strdup(provider);
	return h;
}

/* The first of: with RMA, with RMA and local registration, without RMA,
 * without RMA with local registration; each with directed receives if the
 * provider has them. */
static struct fi_info *getinfo(const char *provider, bool quiet)
{
	static const bool tries[4][2] = {
		{true, false}, {true, true}, {false, false}, {false, true}};
	struct fi_info *out = NULL;
	int last = -FI_ENODATA;

	for (int i = 0; i < 8 && !out; i++) {
		struct fi_info *h = make_hints(provider, tries[i / 2][0],
					       tries[i / 2][1], i % 2 == 0);
		if (!h)
			return NULL;
		last = fi_getinfo(OFI_FI_VERSION, NULL, NULL, 0, h, &out);
		fi_freeinfo(h);
		if (last)
			out = NULL;
	}
	if (!out && !quiet)
		mrail_error("ofi: provider '%s' offers no reliable-datagram "
			    "endpoint with tagged messages here (fi_getinfo: "
			    "%s); check MRAIL_OFI_PROVIDER and `fi_info -p "
			    "'%s'`",
			    provider, fi_strerror(-last), provider);
	return out;
}

static int rail_index_of(struct mrail_drv *drv, const char *domain)
{
	for (int i = 0; i < drv->nrails; i++)
		if (!strcmp(drv->rails[i].name, domain))
			return i;
	return -1;
}

static void describe(struct ofi_rail *r, struct fi_info *fi)
{
	const char *prov = fi->fabric_attr->prov_name;
	const char *dom = fi->domain_attr->name ? fi->domain_attr->name : "?";

	snprintf(r->name, sizeof r->name, "%s", dom);
	snprintf(r->fabric_name, sizeof r->fabric_name, "%s:%s", prov,
		 fi->fabric_attr->name ? fi->fabric_attr->name : "?");
	r->scope = strstr(prov, "shm") || !strcmp(dom, "lo") ||
				   loopback_addr(fi)
			   ? MRAIL_DRV_SCOPE_HOST
			   : MRAIL_DRV_SCOPE_FABRIC;
	snprintf(r->printable, sizeof r->printable, "%s/%s", prov, dom);
	r->mr_local = (fi->domain_attr->mr_mode & FI_MR_LOCAL) ||
		      (fi->mode & FI_LOCAL_MR);
	r->virt_addr = fi->domain_attr->mr_mode & FI_MR_VIRT_ADDR;
	r->prov_key = fi->domain_attr->mr_mode & FI_MR_PROV_KEY;
	r->mr_endpoint = fi->domain_attr->mr_mode & FI_MR_ENDPOINT;
	r->rma = (fi->caps & FI_RMA) && (fi->caps & FI_READ) &&
		 (fi->caps & FI_WRITE);
	r->directed = fi->caps & FI_DIRECTED_RECV;
	r->inject_size = fi->tx_attr->inject_size;
	r->rx_iov_limit = fi->rx_attr->iov_limit ? fi->rx_attr->iov_limit : 1;
	r->cq_fd = -1;
}

/* One rail per domain of provider in all (filtered by domains). */
static void add_rails(struct mrail_drv *drv, struct fi_info *all,
		      const char *provider, const char *domains, int max)
{
	char left[256] = "";
	size_t used = 0;

	for (struct fi_info *fi = all; fi; fi = fi->next) {
		const char *dom = fi->domain_attr->name;
		int at;

		if (!dom || strcmp(fi->fabric_attr->prov_name, provider))
			continue;
		if (domains[0] && !in_csv(domains, dom))
			continue;
		at = rail_index_of(drv, dom);
		/* One rail per domain: IPv4 preferred over the IPv6
		 * entries of the same interface. */
		if (at >= 0) {
			struct ofi_rail *r = &drv->rails[at];
			if (r->info->addr_format != FI_SOCKADDR_IN &&
			    fi->addr_format == FI_SOCKADDR_IN) {
				struct fi_info *dup = fi_dupinfo(fi);
				if (dup) {
					fi_freeinfo(r->info);
					r->info = dup;
					describe(r, dup);
				}
			}
			continue;
		}
		if (drv->nrails >= max) {
			if (!in_csv(left, dom) && used < sizeof left)
				used += (size_t)snprintf(left + used,
							 sizeof left - used,
							 "%s%s", used ? "," : "",
							 dom);
			continue;
		}
		struct ofi_rail *r = &drv->rails[drv->nrails];
		memset(r, 0, sizeof *r);
		r->info = fi_dupinfo(fi);
		if (!r->info)
			continue;
		r->drv = drv;
		r->index = drv->nrails++;
		describe(r, r->info);
	}
	if (left[0])
		mrail_warn("ofi: %s: more than %d domains, left out: %s "
			   "(choose with domains=... or MRAIL_OFI_DOMAINS)",
			   provider, max, left);
}

/* The shm provider's entries when this instance adds a shm rail for
 * peers on this host (docs/driver-ofi.md): shm=yes, or shm=auto with the
 * default provider. NULL otherwise; *rc set when shm=yes cannot be met. */
static struct fi_info *shm_wanted(const struct ofi_params *p, int *rc)
{
	bool want = p->shm == OFI_SHM_YES ||
		    (p->shm == OFI_SHM_AUTO && !p->provider_given);
	struct fi_info *all;

	*rc = 0;
	if (!want || !strcmp(p->provider, "shm"))
		return NULL;
	all = getinfo("shm", p->shm != OFI_SHM_YES);
	if (!all && p->shm == OFI_SHM_YES) {
		mrail_error("ofi: shm=yes, but the shm provider offers no "
			    "endpoint here (`fi_info -p shm`)");
		*rc = MRAIL_ERR_NOT_FOUND;
	} else if (!all) {
		mrail_debug("ofi: no shm provider here: peers on this host "
			    "use %s",
			    p->provider);
	}
	return all;
}

/* With a shm rail the provider's own loopback rails go (unless named in
 * domains): pairing uses every host-scope rail two processes share, and
 * shm is the faster one. */
static void drop_loopback(struct mrail_drv *drv, int n)
{
	const struct ofi_params *p = &drv->par;

	for (int i = 0; i < n; i++) {
		struct ofi_rail *r = &drv->rails[i];
		if (r->scope != MRAIL_DRV_SCOPE_HOST ||
		    (p->domains[0] && in_csv(p->domains, r->name)))
			continue;
		mrail_debug("ofi: %s left out: shm serves this host",
			    r->printable);
		fi_freeinfo(r->info);
		memmove(r, r + 1, (size_t)(drv->nrails - i - 1) * sizeof *r);
		drv->nrails--;
		n--;
		i--;
	}
	for (int i = 0; i < drv->nrails; i++)
		drv->rails[i].index = i;
}

int ofi_rails_discover(struct mrail_drv *drv)
{
	struct fi_info *all, *shm;
	int rc, n;

	shm = shm_wanted(&drv->par, &rc);
	if (rc)
		return rc;
	all = getinfo(drv->par.provider, false);
	if (!all) {
		if (shm)
			fi_freeinfo(shm);
		return MRAIL_ERR_NOT_FOUND;
	}
	/* The shm rail keeps a slot whatever the number of interfaces. */
	add_rails(drv, all, drv->par.provider, drv->par.domains,
		  OFI_MAX_RAILS - (shm ? 1 : 0));
	fi_freeinfo(all);
	n = drv->nrails;
	if (n == 0) {
		mrail_error("ofi: provider '%s' has no domain%s%s here",
			    drv->par.provider,
			    drv->par.domains[0] ? " among " : "",
			    drv->par.domains);
		if (shm)
			fi_freeinfo(shm);
		return MRAIL_ERR_NOT_FOUND;
	}
	if (shm) {
		add_rails(drv, shm, "shm", "", OFI_MAX_RAILS);
		fi_freeinfo(shm);
		if (drv->nrails > n)
			drop_loopback(drv, n);
		else if (drv->par.shm == OFI_SHM_YES) {
			mrail_error("ofi: shm=yes, but the shm provider has no "
				    "domain here");
			return MRAIL_ERR_NOT_FOUND;
		}
	}
	for (int i = 0; i < drv->nrails; i++)
		mrail_debug("ofi: rail %d: %s fabric %s%s%s", i,
			    drv->rails[i].printable, drv->rails[i].fabric_name,
			    drv->rails[i].rma ? ", RMA" : "",
			    drv->rails[i].mr_local ? ", local MR" : "");
	return 0;
}

/* ---- endpoint set-up --------------------------------------------------- */

static int fail(struct ofi_rail *r, const char *what, int rc)
{
	mrail_error("ofi: %s on %s: %s", what, r->printable, fi_strerror(-rc));
	return MRAIL_ERR_IO;
}

static int open_cq(struct ofi_rail *r)
{
	struct fi_cq_attr attr = {0};
	int rc;

	attr.format = FI_CQ_FORMAT_TAGGED;
	attr.size = 8192;
	if (!r->drv->par.wait_poll) {
		attr.wait_obj = FI_WAIT_FD;
		rc = fi_cq_open(r->domain, &attr, &r->cq, NULL);
		if (rc == 0 &&
		    fi_control(&r->cq->fid, FI_GETWAIT, &r->cq_fd) == 0)
			return 0;
	}
	if (r->cq) {
		fi_close(&r->cq->fid);
		r->cq = NULL;
	}
	/* No fd to sleep on: the instance busy-polls (docs/driver-ofi.md). */
	r->cq_fd = -1;
	attr.wait_obj = FI_WAIT_NONE;
	rc = fi_cq_open(r->domain, &attr, &r->cq, NULL);
	if (rc)
		return fail(r, "fi_cq_open", rc);
	if (!r->drv->par.wait_poll)
		mrail_info("ofi: %s: completion queue without a wait fd, the "
			   "engine will poll it",
			   r->printable);
	return 0;
}

/* shm names its region after src_addr (by default the pid): several
 * instances in one process need their own. */
static int unique_shm_name(struct ofi_rail *r)
{
	char name[64];

	if (r->info->addr_format != FI_ADDR_STR ||
	    !strstr(r->info->fabric_attr->prov_name, "shm"))
		return 0;
	/* A random part too: a killed process leaves its region in
	 * /dev/shm, and a later process with the same pid would find the
	 * name taken (fi_enable: EBUSY). */
	uint32_t nonce;
	if (getrandom(&nonce, sizeof nonce, GRND_NONBLOCK) != sizeof nonce)
		nonce = (uint32_t)(mrail_now() * 1e9);
	snprintf(name, sizeof name, "fi_shm://mrail_%d_%u_%08x", (int)getpid(),
		 atomic_fetch_add(&shm_counter, 1), nonce);
	free(r->info->src_addr);
	r->info->src_addr = strdup(name);
	if (!r->info->src_addr)
		return MRAIL_ERR_NOMEM;
	r->info->src_addrlen = strlen(name) + 1;
	return 0;
}

static int post_heads(struct ofi_rail *r)
{
	size_t slot = OFI_HDR_LEN + OFI_MAX_HEAD;
	int n = r->drv->par.rx_bufs, rc;

	r->rx = calloc((size_t)n, sizeof *r->rx);
	r->rx_repost = calloc((size_t)n, sizeof *r->rx_repost);
	r->rx_mem = malloc(slot * (size_t)n);
	if (!r->rx || !r->rx_mem || !r->rx_repost)
		return MRAIL_ERR_NOMEM;
	r->nrx = n;
	if (r->mr_local) {
		rc = fi_mr_reg(r->domain, r->rx_mem, slot * (size_t)n,
			       FI_RECV, 0, 0, 0, &r->rx_mr, NULL);
		if (rc)
			return fail(r, "fi_mr_reg of the head buffers", rc);
	}
	for (int i = 0; i < n; i++) {
		r->rx[i].op.kind = OFI_OP_RX_HEAD;
		r->rx[i].op.rail = r;
		r->rx[i].buf = r->rx_mem + slot * (size_t)i;
		ofi_rx_post(r, &r->rx[i]);
	}
	return 0;
}

void ofi_rx_post(struct ofi_rail *r, struct ofi_rx *rx)
{
	void *desc = r->rx_mr ? fi_mr_desc(r->rx_mr) : NULL;
	ssize_t rc = fi_trecv(r->ep, rx->buf, OFI_HDR_LEN + OFI_MAX_HEAD, desc,
			      FI_ADDR_UNSPEC, OFI_TAG_HEAD, OFI_TAG_HEAD_IGNORE,
			      &rx->op.fctx);

	if (rc == 0)
		return;
	if (rc != -FI_EAGAIN)
		mrail_error("ofi: posting a head buffer on %s: %s (one "
			    "buffer less)",
			    r->printable, fi_strerror((int)-rc));
	else if (r->nrepost < r->nrx)
		r->rx_repost[r->nrepost++] = rx;
	ofi_kick(r->drv);
}

void ofi_rx_repost_pending(struct ofi_rail *r)
{
	int n = r->nrepost;

	r->nrepost = 0;
	for (int i = 0; i < n; i++)
		ofi_rx_post(r, r->rx_repost[i]);
}

int ofi_rail_up(struct ofi_rail *r)
{
	struct fi_av_attr av = {0};
	int rc;

	if (r->up)
		return 0;
	rc = unique_shm_name(r);
	if (rc)
		return rc;
	rc = fi_fabric(r->info->fabric_attr, &r->fabric, NULL);
	if (rc)
		return fail(r, "fi_fabric", rc);
	rc = fi_domain(r->fabric, r->info, &r->domain, NULL);
	if (rc)
		return fail(r, "fi_domain", rc);
	rc = open_cq(r);
	if (rc)
		return rc;
	av.type = r->info->domain_attr->av_type;
	rc = fi_av_open(r->domain, &av, &r->av, NULL);
	if (rc)
		return fail(r, "fi_av_open", rc);
	rc = fi_endpoint(r->domain, r->info, &r->ep, NULL);
	if (rc)
		return fail(r, "fi_endpoint", rc);
	rc = fi_ep_bind(r->ep, &r->av->fid, 0);
	if (!rc)
		rc = fi_ep_bind(r->ep, &r->cq->fid, FI_TRANSMIT | FI_RECV);
	if (rc)
		return fail(r, "fi_ep_bind", rc);
	rc = fi_enable(r->ep);
	if (rc)
		return fail(r, "fi_enable", rc);
	r->addr_len = sizeof r->addr;
	rc = fi_getname(&r->ep->fid, r->addr, &r->addr_len);
	if (rc == -FI_ETOOSMALL) {
		mrail_error("ofi: %s: endpoint address of %zu bytes, this "
			    "driver carries at most %d",
			    r->printable, r->addr_len, OFI_ADDR_MAX);
		return MRAIL_ERR_IO;
	}
	if (rc)
		return fail(r, "fi_getname", rc);
	rc = post_heads(r);
	if (rc)
		return rc;
	r->up = true;
	return 0;
}

void ofi_rail_fini(struct ofi_rail *r)
{
	if (r->ep)
		fi_close(&r->ep->fid);
	if (r->rx_mr)
		fi_close(&r->rx_mr->fid);
	if (r->av)
		fi_close(&r->av->fid);
	if (r->cq)
		fi_close(&r->cq->fid);
	if (r->domain)
		fi_close(&r->domain->fid);
	if (r->fabric)
		fi_close(&r->fabric->fid);
	while (r->peers) {
		struct ofi_peer *p = r->peers;
		r->peers = p->next;
		free(p);
	}
	free(r->rx);
	free(r->rx_repost);
	free(r->rx_mem);
	if (r->info)
		fi_freeinfo(r->info);
	memset(r, 0, sizeof *r);
}

int ofi_rail_peer(struct ofi_rail *r, const void *addr, size_t len,
		  fi_addr_t *fa)
{
	struct ofi_peer *p;
	int rc;

	for (p = r->peers; p; p = p->next)
		if (p->len == len && !memcmp(p->addr, addr, len)) {
			*fa = p->fa;
			return 0;
		}
	if (len > OFI_ADDR_MAX)
		return MRAIL_ERR_INVALID;
	p = calloc(1, sizeof *p);
	if (!p)
		return MRAIL_ERR_NOMEM;
	rc = fi_av_insert(r->av, addr, 1, &p->fa, 0, NULL);
	if (rc != 1) {
		mrail_error("ofi: %s: cannot insert a peer address in the "
			    "address vector: %s",
			    r->printable, rc < 0 ? fi_strerror(-rc) : "refused");
		free(p);
		return MRAIL_ERR_PEER;
	}
	memcpy(p->addr, addr, len);
	p->len = len;
	p->next = r->peers;
	r->peers = p;
	*fa = p->fa;
	return 0;
}
