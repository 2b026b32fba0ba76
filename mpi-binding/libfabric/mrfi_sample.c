/*
 * In-band sampling of the rails under the provider. libfabric has no
 * bootstrap and no moment at which a process knows its peers are idle,
 * but MPI libraries give one: at initialisation every process inserts
 * the names of the whole job, its own among them, in one fi_av_insert
 * (Open MPI's ofi MTL in add_procs, MPICH ch4:ofi at its address
 * exchange), and no application message can exist before that call
 * returns on both sides. So an insert that contains the endpoint's own
 * name and names on other hosts is taken as that moment: each process
 * samples its rails with one partner on another host through
 * mrail_sample_peer(), as the mrail MTL does at MPI_Init. Without it the
 * rails plan with nominal figures (netlab's veths report 10 Gbit/s each)
 * and the split cuts messages in equal parts.
 *
 * Every process must compute the same pairs from its own copy of the
 * list, whatever order its library put the names in: the names are
 * sorted (bytes), hosts told apart by the IPv4 addresses a name lists,
 * and pairs chosen as the MTL does (each unpaired name takes the lowest
 * unpaired name on another host; one left over is served by the lowest
 * name on another host). Sessions run in that one global order, so the
 * lowest unfinished session always has both sides at it: no deadlock.
 *
 * Open MPI's ofi MTL adds peers on other nodes lazily instead (its
 * mpi_add_procs_cutoff is 0: at MPI_Init only the processes of this node,
 * then one insert per peer at first contact), when the peer may be doing
 * anything. There the inserting side asks the peer's name service
 * (mrfi_name.c), whose thread takes the other side of the exchange while
 * the peer's application waits on the engine lock for the few hundred
 * milliseconds it takes. An endpoint runs one session at a time and never
 * waits for another (a busy one answers "no" and the asker tries its
 * next new peer), so endpoints asking each other cannot deadlock; it asks
 * until one session has succeeded: the models then serve every rail on
 * the same local interface (libmrail/inband.c).
 *
 * MRAIL_INBAND_SAMPLING=0 turns both off (the engine then skips the
 * exchange; it must be set alike for the whole job).
 */
#include "mrfi.h"
#include "mpi-binding/common/sample_pairs.h"

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct sname {
	const unsigned char *name;
	fi_addr_t addr;
};

static int by_name(const void *a, const void *b)
{
	return memcmp(((const struct sname *)a)->name,
		      ((const struct sname *)b)->name, FI_NAME_MAX);
}

/* Names of one host list the same addresses (mrfi_name.c: byte 4 is
 * their count, the addresses start at byte 24). */
static int same_host(const unsigned char *a, const unsigned char *b)
{
	unsigned n = a[4];
	if (n != b[4] || n == 0 || 24 + 4 * n > FI_NAME_MAX)
		return n == b[4] && n == 0;
	return !memcmp(a + 24, b + 24, 4 * n);
}

/* Partners of name `me`, in the global session order (sample_pairs.h);
 * returns their count. Names on one host get one node number. */
static size_t sessions(const struct sname *s, size_t n, size_t me,
		       size_t *with)
{
	size_t ns = 0;
	uint32_t *node = malloc(n * sizeof *node);
	struct sample_pair *p = malloc(n * sizeof *p);
	if (node && p) {
		for (size_t r = 0; r < n; r++) {
			node[r] = (uint32_t)r;
			for (size_t q = 0; q < r; q++)
				if (same_host(s[q].name, s[r].name)) {
					node[r] = node[q];
					break;
				}
		}
		size_t np = sample_pairs(n, node, p);
		for (size_t i = 0; i < np; i++)
			if (p[i].a == me || p[i].b == me)
				with[ns++] = p[i].a == me ? p[i].b : p[i].a;
	}
	free(node);
	free(p);
	return ns;
}

/* Whether `names` holds the endpoint's own name. */
static int lists_self(const struct mrfi_ep *ep, const unsigned char *names,
		      size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (!memcmp(names + i * FI_NAME_MAX, ep->name, FI_NAME_MAX))
			return 1;
	return 0;
}

static void sample_ep(struct mrfi_ep *ep, const unsigned char *names,
		      size_t count, const fi_addr_t *addrs)
{
	struct sname *s = malloc(count * sizeof *s);
	size_t *with = malloc(count * sizeof *with);
	size_t n = 0, me = SIZE_MAX;
	if (!s || !with)
		goto out;
	for (size_t i = 0; i < count; i++) {
		const unsigned char *nm = names + i * FI_NAME_MAX;
		int dup = 0;
		for (size_t k = 0; k < n && !dup; k++)
			dup = !memcmp(s[k].name, nm, FI_NAME_MAX);
		if (!dup)
			s[n++] = (struct sname){ nm, addrs[i] };
	}
	qsort(s, n, sizeof *s, by_name);
	for (size_t i = 0; i < n; i++)
		if (!memcmp(s[i].name, ep->name, FI_NAME_MAX))
			me = i;
	if (me == SIZE_MAX)
		goto out;
	size_t ns = sessions(s, n, me, with);
	for (size_t i = 0; i < ns; i++) {
		mrail_peer_t peer;
		size_t o = with[i];
		/* A name service may be serving a lazy asker: wait for
		 * it (it never waits for us). */
		while (!mrfi_sample_try_begin(ep))
			sched_yield();
		if (s[o].addr == FI_ADDR_NOTAVAIL ||
		    mrfi_ep_peer_of(ep, s[o].addr, &peer)) {
			mrfi_sample_end(ep, 0);
			/* Its insert failed here: so will the partner's
			 * session with us (it cannot reach us either). */
			FI_WARN(&mrfi_prov, FI_LOG_AV, "in-band sampling: "
				"partner not in the address vector; rails "
				"keep their profile or nominal model\n");
			continue;
		}
		mrfi_sample_end(ep, mrfi_sample_with(ep, peer, me < o));
	}
out:
	free(s);
	free(with);
}

int mrfi_sample_try_begin(struct mrfi_ep *ep)
{
	int idle = 0;
	return __atomic_compare_exchange_n(&ep->sampling, &idle, 1, 0,
					   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

void mrfi_sample_end(struct mrfi_ep *ep, int ok)
{
	if (ok)
		__atomic_store_n(&ep->sampled_ok, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&ep->sampling, 0, __ATOMIC_RELEASE);
}

int mrfi_sample_with(struct mrfi_ep *ep, mrail_peer_t peer, int first)
{
	int rc = mrail_sample_peer(ep->engine, peer, first);
	if (rc != MRAIL_OK) {
		FI_WARN(&mrfi_prov, FI_LOG_AV, "in-band sampling with engine "
			"peer %u: %s\n", (unsigned)peer, mrail_strerror(rc));
		return 0;
	}
	FI_INFO(&mrfi_prov, FI_LOG_AV, "in-band sampling with engine peer %u "
		"done (%s; rails with profiles keep them)\n", (unsigned)peer,
		first ? "leading" : "answering");
	return 1;
}

/* Lazy inserts: ask new peers on other hosts, in turn, until one session
 * has succeeded. */
static void sample_lazy(struct mrfi_ep *ep, const unsigned char *names,
			size_t count, const fi_addr_t *addrs)
{
	uint64_t uuid = 0;
	for (size_t i = 0; i < count; i++) {
		const unsigned char *nm = names + i * FI_NAME_MAX;
		mrail_peer_t peer;
		if (__atomic_load_n(&ep->sampled_ok, __ATOMIC_ACQUIRE))
			return;
		if (addrs[i] == FI_ADDR_NOTAVAIL ||
		    same_host(nm, ep->name) ||
		    mrfi_ep_peer_of(ep, addrs[i], &peer))
			continue;
		if (!uuid && !(uuid = mrfi_ep_uuid(ep)))
			return;
		/* Two endpoints asking each other at once both hear "busy":
		 * a few tries, after random pauses (during which our own
		 * service may answer the other's request instead). */
		for (int t = 0; t < 4; t++) {
			if (__atomic_load_n(&ep->sampled_ok, __ATOMIC_ACQUIRE))
				return;
			if (t) {
				struct timespec ts = { 0, (5 + rand_r(&ep->seed) %
							    45) * 1000000L };
				nanosleep(&ts, NULL);
			}
			if (!mrfi_sample_try_begin(ep))
				continue; /* our service is answering someone */
			int asked = mrfi_name_ask_sample(nm, uuid);
			int ok = asked && mrfi_sample_with(ep, peer, 1);
			mrfi_sample_end(ep, ok);
			if (asked)
				break; /* done, or failed for good */
		}
	}
}

void mrfi_sample_rails(struct mrfi_av *av, const unsigned char *names,
		       size_t count, const fi_addr_t *addrs)
{
	struct mrfi_ep *eps[MRFI_AV_EPS];
	pthread_mutex_lock(&av->lock);
	int neps = av->neps;
	memcpy(eps, av->eps, sizeof eps);
	pthread_mutex_unlock(&av->lock);
	for (int k = 0; k < neps; k++) {
		struct mrfi_ep *ep = eps[k];
		if (!lists_self(ep, names, count)) {
			sample_lazy(ep, names, count, addrs);
			continue;
		}
		pthread_mutex_lock(&ep->lock);
		int done = ep->sampled;
		ep->sampled = 1;
		pthread_mutex_unlock(&ep->lock);
		if (!done)
			sample_ep(ep, names, count, addrs);
	}
}
