/* MRAIL_SDN backend selection and what the backends share. */
#include "sdn_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *env_or(const char *v, const char *name, const char *def)
{
	if (v)
		return v;
	const char *e = getenv(name);
	return e && *e ? e : def;
}

static int parse_fence(const struct mrail_sdn_opts *o, unsigned *us,
		       char *err, size_t errlen)
{
	if (o->fence_us >= 0) {
		*us = (unsigned)o->fence_us;
		return 0;
	}
	const char *e = getenv("MRAIL_SDN_FENCE_US");
	if (!e || !*e) {
		*us = 2000;
		return 0;
	}
	char *end;
	errno = 0;
	unsigned long v = strtoul(e, &end, 10);
	if (errno || *end || e[0] == '-' || v > 10000000) {
		snprintf(err, errlen, "MRAIL_SDN_FENCE_US=\"%s\" is not a "
			 "number of microseconds (0 .. 10000000)", e);
		return -EINVAL;
	}
	*us = (unsigned)v;
	return 0;
}

int mrail_sdn_open(const struct mrail_sdn_opts *o, struct mrail_sdn **out,
		   char *err, size_t errlen)
{
	const char *mode = env_or(o->mode, "MRAIL_SDN", "none");
	enum sdn_backend b;
	*out = NULL;
	if (!strcmp(mode, "none"))
		return 0;
	if (!strcmp(mode, "unisonflow"))
		b = SDN_UNISONFLOW;
	else if (!strcmp(mode, "bpf"))
		b = SDN_BPF;
	else {
		snprintf(err, errlen, "SDN mode \"%s\" (MRAIL_SDN, "
			 "mtl_mrail_sdn) is not none|unisonflow|bpf", mode);
		return -EINVAL;
	}
	struct mrail_sdn *s = calloc(1, sizeof *s);
	if (!s)
		return -ENOMEM;
	s->backend = b;
	s->fd = -1;
	s->world_rank = o->world_rank;
	s->nprocs = o->nprocs;
	s->ioctl_fn = o->ioctl_fn;
	int rc = -ENOMEM;
	if (o->nprocs && !(s->peer_rank = malloc(o->nprocs *
						 sizeof *s->peer_rank)))
		goto fail;
	for (unsigned i = 0; i < o->nprocs; i++)
		atomic_init(&s->peer_rank[i], UINT_MAX);
	if (b == SDN_UNISONFLOW) {
		rc = sdn_uf_open(s, env_or(o->device, "MRAIL_SDN_DEVICE", NULL),
				 err, errlen);
		s->hooks.rail_up = sdn_uf_rail_up;
		s->hooks.rail_down = sdn_uf_rail_down;
	} else {
		rc = parse_fence(o, &s->fence_us, err, errlen);
		if (!rc)
			rc = sdn_bpf_open(s, env_or(o->bpf_dir,
						    "MRAIL_SDN_BPF_DIR", NULL),
					  err, errlen);
		s->hooks.rail_up = sdn_bpf_rail_up;
		s->hooks.rail_down = sdn_bpf_rail_down;
		s->hooks.msg_tx = sdn_bpf_msg_tx;
	}
	if (rc)
		goto fail;
	*out = s;
	return 0;
fail:
	if (s->fd >= 0)
		close(s->fd);
	free(s->peer_rank);
	free(s);
	return rc;
}

const struct mrail_rail_hooks *mrail_sdn_hooks(const struct mrail_sdn *s)
{
	return s ? &s->hooks : NULL;
}

void mrail_sdn_set_peer_rank(struct mrail_sdn *s, mrail_peer_t peer,
			     unsigned world_rank)
{
	if (s && peer < s->nprocs)
		atomic_store_explicit(&s->peer_rank[peer], world_rank,
				      memory_order_relaxed);
}

unsigned sdn_peer_rank(const struct mrail_sdn *s, mrail_peer_t peer)
{
	unsigned r = peer < s->nprocs
			     ? atomic_load_explicit(&s->peer_rank[peer],
						    memory_order_relaxed)
			     : UINT_MAX;
	return r == UINT_MAX ? (unsigned)peer : r;
}

void sdn_warn_once(struct mrail_sdn *s, const char *fmt, ...)
{
	if (atomic_exchange(&s->warned, 1))
		return;
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	fprintf(stderr, "mrail sdn: rank %u: %s (warned once)\n",
		s->world_rank, line);
}

void mrail_sdn_get_stats(const struct mrail_sdn *s, struct mrail_sdn_stats *st)
{
	memset(st, 0, sizeof *st);
	if (!s)
		return;
	st->registered = s->st.registered;
	st->unregistered = s->st.unregistered;
	st->retags = s->st.retags;
	st->fences = s->st.fences;
	st->fence_timeouts = s->st.fence_timeouts;
	st->untagged = s->st.untagged;
	st->errors = s->st.errors;
}

void mrail_sdn_close(struct mrail_sdn *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	free(s->peer_rank);
	free(s);
}
