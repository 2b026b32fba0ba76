/*
 * Address vectors. fi_addr is the insertion index for FI_AV_TABLE and
 * FI_AV_MAP alike. Inserting resolves each name to the peer's engine blob
 * (mrfi_name.c) and adds it to the engines of the endpoints bound to the
 * AV, which start connecting their rails at once (both sides insert each
 * other, as libmrail requires).
 */
#include "mrfi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int av_grow(struct mrfi_av *av)
{
	if (av->n < av->cap)
		return 0;
	size_t cap = av->cap ? av->cap * 2 : 64;
	struct mrfi_av_entry *e = realloc(av->ent, cap * sizeof *e);
	if (!e)
		return -FI_ENOMEM;
	av->ent = e;
	av->cap = cap;
	return 0;
}

static fi_addr_t av_find(struct mrfi_av *av, const unsigned char *name)
{
	fi_addr_t r = FI_ADDR_NOTAVAIL;
	pthread_mutex_lock(&av->lock);
	for (size_t k = 0; k < av->n; k++)
		if (!av->ent[k].removed &&
		    !memcmp(av->ent[k].name, name, FI_NAME_MAX)) {
			r = k;
			break;
		}
	pthread_mutex_unlock(&av->lock);
	return r;
}

static int av_insert(struct fid_av *fav, const void *addr, size_t count,
		     fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct mrfi_av *av = (struct mrfi_av *)fav;
	(void)context;
	if (flags & FI_EVENT)
		return -FI_ENOEQ; /* no event queues: inserts are synchronous */
	int done = 0;
	/* What each name became, for sampling (fi_addr may be NULL). */
	fi_addr_t *got = calloc(count ? count : 1, sizeof *got);
	if (!got)
		return -FI_ENOMEM;
	for (size_t i = 0; i < count; i++) {
		const unsigned char *name =
			(const unsigned char *)addr + i * FI_NAME_MAX;
		/* The same name again (Open MPI inserts a peer once more for
		 * each intercommunicator): the same fi_addr, since an engine
		 * holds each peer once. */
		fi_addr_t old = av_find(av, name);
		if (old != FI_ADDR_NOTAVAIL) {
			if (fi_addr)
				fi_addr[i] = old;
			got[i] = old;
			done++;
			continue;
		}
		unsigned char *blob = NULL, *own = NULL;
		size_t blen = 0, olen = 0;
		/* Our first endpoint's blob goes along: the peer adds us. */
		pthread_mutex_lock(&av->lock);
		struct mrfi_ep *first = av->neps ? av->eps[0] : NULL;
		pthread_mutex_unlock(&av->lock);
		if (first && mrfi_ep_blob(first, &own, &olen))
			olen = 0;
		int rc = mrfi_name_resolve(name, FI_NAME_MAX, own, olen, &blob,
					   &blen);
		free(own);
		pthread_mutex_lock(&av->lock);
		if (!rc)
			rc = av_grow(av);
		fi_addr_t idx = FI_ADDR_NOTAVAIL;
		if (!rc) {
			idx = av->n++;
			struct mrfi_av_entry *e = &av->ent[idx];
			memset(e, 0, sizeof *e);
			e->blob = blob;
			e->blob_len = blen;
			memcpy(e->name, name, FI_NAME_MAX);
			e->name_len = FI_NAME_MAX;
			blob = NULL;
		}
		struct mrfi_ep *eps[MRFI_AV_EPS];
		int neps = av->neps;
		memcpy(eps, av->eps, sizeof eps);
		pthread_mutex_unlock(&av->lock);
		free(blob);
		for (int k = 0; !rc && k < neps; k++)
			rc = mrfi_ep_add_peer(eps[k], idx);
		if (fi_addr)
			fi_addr[i] = rc ? FI_ADDR_NOTAVAIL : idx;
		got[i] = rc ? FI_ADDR_NOTAVAIL : idx;
		if (!rc)
			done++;
	}
	mrfi_sample_rails(av, addr, count, got);
	free(got);
	return done;
}

static int av_remove(struct fid_av *fav, fi_addr_t *fi_addr, size_t count,
		     uint64_t flags)
{
	struct mrfi_av *av = (struct mrfi_av *)fav;
	(void)flags;
	int rc = 0;
	pthread_mutex_lock(&av->lock);
	for (size_t i = 0; i < count; i++) {
		if (fi_addr[i] >= av->n)
			rc = -FI_EINVAL;
		else
			av->ent[fi_addr[i]].removed = 1;
	}
	pthread_mutex_unlock(&av->lock);
	return rc;
}

static int av_lookup(struct fid_av *fav, fi_addr_t fi_addr, void *addr,
		     size_t *addrlen)
{
	struct mrfi_av *av = (struct mrfi_av *)fav;
	int rc = 0;
	pthread_mutex_lock(&av->lock);
	if (fi_addr >= av->n || av->ent[fi_addr].removed) {
		rc = -FI_EINVAL;
	} else {
		size_t n = av->ent[fi_addr].name_len;
		memcpy(addr, av->ent[fi_addr].name, *addrlen < n ? *addrlen : n);
		if (*addrlen < n)
			rc = -FI_ETOOSMALL;
		*addrlen = n;
	}
	pthread_mutex_unlock(&av->lock);
	return rc;
}

static const char *av_straddr(struct fid_av *fav, const void *addr, char *buf,
			      size_t *len)
{
	(void)fav;
	const unsigned char *b = addr;
	char s[2 * FI_NAME_MAX + 8] = "mrail:";
	size_t o = strlen(s);
	for (int i = 0; i < FI_NAME_MAX; i++, o += 2)
		snprintf(s + o, 3, "%02x", b[i]);
	if (*len > 0) {
		size_t n = *len - 1 < o ? *len - 1 : o;
		memcpy(buf, s, n);
		buf[n] = 0;
	}
	*len = o + 1;
	return buf;
}

static int av_close(struct fid *fid)
{
	struct mrfi_av *av = (struct mrfi_av *)fid;
	if (av->neps)
		return -FI_EBUSY;
	for (size_t i = 0; i < av->n; i++)
		free(av->ent[i].blob);
	free(av->ent);
	pthread_mutex_destroy(&av->lock);
	free(av);
	return 0;
}

static struct fi_ops av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = av_close,
	.bind = mrfi_no_bind,
	.control = mrfi_no_control,
	.ops_open = mrfi_no_ops_open,
};

static struct fi_ops_av av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = av_insert,
	.insertsvc = mrfi_no_insertsvc,
	.insertsym = mrfi_no_insertsym,
	.remove = av_remove,
	.lookup = av_lookup,
	.straddr = av_straddr,
	.av_set = mrfi_no_av_set,
};

int mrfi_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		 struct fid_av **fav, void *context)
{
	if (attr && (attr->flags & FI_EVENT))
		return -FI_ENOSYS;
	if (attr && attr->name)
		return -FI_ENOSYS; /* no shared (named) AVs */
	struct mrfi_av *av = calloc(1, sizeof *av);
	if (!av)
		return -FI_ENOMEM;
	pthread_mutex_init(&av->lock, NULL);
	av->dom = (struct mrfi_domain *)domain;
	av->type = attr && attr->type != FI_AV_UNSPEC ? attr->type : FI_AV_TABLE;
	if (attr)
		attr->type = av->type;
	av->av.fid.fclass = FI_CLASS_AV;
	av->av.fid.context = context;
	av->av.fid.ops = &av_fi_ops;
	av->av.ops = &av_ops;
	*fav = &av->av;
	return 0;
}

/* An endpoint bound to the AV: its engine gets every entry inserted so
 * far now, later ones as they come. */
int mrfi_av_attach(struct mrfi_av *av, struct mrfi_ep *ep)
{
	pthread_mutex_lock(&av->lock);
	if (av->neps == MRFI_AV_EPS) {
		pthread_mutex_unlock(&av->lock);
		return -FI_ENOSPC;
	}
	av->eps[av->neps++] = ep;
	size_t n = av->n;
	pthread_mutex_unlock(&av->lock);
	for (size_t i = 0; i < n; i++) {
		int rc = mrfi_ep_add_peer(ep, i);
		if (rc)
			return rc;
	}
	return 0;
}

void mrfi_av_detach(struct mrfi_av *av, struct mrfi_ep *ep)
{
	pthread_mutex_lock(&av->lock);
	for (int i = 0; i < av->neps; i++)
		if (av->eps[i] == ep) {
			av->eps[i] = av->eps[--av->neps];
			break;
		}
	pthread_mutex_unlock(&av->lock);
}

/* The blob of entry `addr` (copied out under the AV lock). */
int mrfi_av_blob(struct mrfi_av *av, fi_addr_t addr, unsigned char **blob,
		 size_t *len)
{
	int rc = 0;
	pthread_mutex_lock(&av->lock);
	if (addr >= av->n || av->ent[addr].removed) {
		rc = -FI_EINVAL;
	} else {
		*len = av->ent[addr].blob_len;
		*blob = malloc(*len);
		if (!*blob)
			rc = -FI_ENOMEM;
		else
			memcpy(*blob, av->ent[addr].blob, *len);
	}
	pthread_mutex_unlock(&av->lock);
	return rc;
}
