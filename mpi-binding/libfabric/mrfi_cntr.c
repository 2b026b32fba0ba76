/*
 * Counters (fi_cntr(3)): FI_CNTR_EVENTS_COMP only. An endpoint bound to a
 * counter with FI_SEND/FI_RECV bumps it from the completion callback of
 * every operation of that kind, whether or not a CQ entry is written
 * (selective completion and fi_inject leave the CQ out, never a
 * counter); failed operations (truncation, cancel) bump the error count
 * instead. FI_READ/FI_WRITE/FI_REMOTE_* bindings are accepted because
 * MPICH's ch4:ofi binds its RMA counter unconditionally at MPI_Init: no
 * such operation exists here (no FI_RMA), so they never move.
 * Progress is manual: read, readerr and wait drive the bound endpoints'
 * engines, as CQ reads do.
 */
#include "mrfi.h"

#include <sched.h>
#include <stdlib.h>
#include <time.h>

static void cntr_progress(struct mrfi_cntr *c)
{
	struct mrfi_ep *eps[MRFI_CNTR_EPS];
	pthread_mutex_lock(&c->lock);
	int n = c->neps;
	for (int i = 0; i < n; i++)
		eps[i] = c->eps[i];
	pthread_mutex_unlock(&c->lock);
	for (int i = 0; i < n; i++)
		mrfi_ep_progress(eps[i]);
}

void mrfi_cntr_inc(struct mrfi_cntr *c, int error)
{
	if (!c)
		return;
	if (error)
		atomic_fetch_add(&c->err, 1);
	else
		atomic_fetch_add(&c->val, 1);
}

static uint64_t cntr_read(struct fid_cntr *fc)
{
	struct mrfi_cntr *c = (struct mrfi_cntr *)fc;
	cntr_progress(c);
	return atomic_load(&c->val);
}

static uint64_t cntr_readerr(struct fid_cntr *fc)
{
	struct mrfi_cntr *c = (struct mrfi_cntr *)fc;
	cntr_progress(c);
	return atomic_load(&c->err);
}

static int cntr_add(struct fid_cntr *fc, uint64_t v)
{
	atomic_fetch_add(&((struct mrfi_cntr *)fc)->val, v);
	return 0;
}

static int cntr_set(struct fid_cntr *fc, uint64_t v)
{
	atomic_store(&((struct mrfi_cntr *)fc)->val, v);
	return 0;
}

static int cntr_adderr(struct fid_cntr *fc, uint64_t v)
{
	atomic_fetch_add(&((struct mrfi_cntr *)fc)->err, v);
	return 0;
}

static int cntr_seterr(struct fid_cntr *fc, uint64_t v)
{
	atomic_store(&((struct mrfi_cntr *)fc)->err, v);
	return 0;
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Like fi_cq_sread here, waiting polls the engines and yields the core
 * between rounds (the engine has no descriptor to sleep on). A new error
 * ends the wait with -FI_EAVAIL: the threshold may never be reached once
 * an operation has failed. */
static int cntr_wait(struct fid_cntr *fc, uint64_t threshold, int timeout)
{
	struct mrfi_cntr *c = (struct mrfi_cntr *)fc;
	uint64_t err0 = atomic_load(&c->err);
	double end = timeout >= 0 ? now_ms() + timeout : 0;
	for (;;) {
		cntr_progress(c);
		if (atomic_load(&c->val) >= threshold)
			return 0;
		if (atomic_load(&c->err) != err0)
			return -FI_EAVAIL;
		if (timeout >= 0 && now_ms() >= end)
			return -FI_ETIMEDOUT;
		sched_yield();
	}
}

static int cntr_close(struct fid *fid)
{
	struct mrfi_cntr *c = (struct mrfi_cntr *)fid;
	if (c->neps)
		return -FI_EBUSY;
	pthread_mutex_destroy(&c->lock);
	free(c);
	return 0;
}

static struct fi_ops cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cntr_close,
	.bind = mrfi_no_bind,
	.control = mrfi_no_control,
	.ops_open = mrfi_no_ops_open,
};

static struct fi_ops_cntr cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = cntr_read,
	.readerr = cntr_readerr,
	.add = cntr_add,
	.set = cntr_set,
	.wait = cntr_wait,
	.adderr = cntr_adderr,
	.seterr = cntr_seterr,
};

int mrfi_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		   struct fid_cntr **fc, void *context)
{
	if (attr && attr->events != FI_CNTR_EVENTS_COMP) {
		FI_INFO(&mrfi_prov, FI_LOG_CNTR, "counter events %d: only "
			"FI_CNTR_EVENTS_COMP\n", (int)attr->events);
		return -FI_ENOSYS;
	}
	if (attr && attr->wait_obj != FI_WAIT_NONE &&
	    attr->wait_obj != FI_WAIT_UNSPEC) {
		FI_INFO(&mrfi_prov, FI_LOG_CNTR, "wait object %d: only "
			"FI_WAIT_NONE and FI_WAIT_UNSPEC (fi_cntr_wait "
			"polls)\n", (int)attr->wait_obj);
		return -FI_ENOSYS;
	}
	if (attr && attr->flags)
		return -FI_EINVAL;
	struct mrfi_cntr *c = calloc(1, sizeof *c);
	if (!c)
		return -FI_ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	atomic_init(&c->val, 0);
	atomic_init(&c->err, 0);
	c->dom = (struct mrfi_domain *)domain;
	c->cntr.fid.fclass = FI_CLASS_CNTR;
	c->cntr.fid.context = context;
	c->cntr.fid.ops = &cntr_fi_ops;
	c->cntr.ops = &cntr_ops;
	*fc = &c->cntr;
	return 0;
}

int mrfi_cntr_attach(struct mrfi_cntr *c, struct mrfi_ep *ep)
{
	pthread_mutex_lock(&c->lock);
	int rc = 0;
	for (int i = 0; i < c->neps; i++)
		if (c->eps[i] == ep)
			goto out;
	if (c->neps == MRFI_CNTR_EPS)
		rc = -FI_ENOSPC;
	else
		c->eps[c->neps++] = ep;
out:
	pthread_mutex_unlock(&c->lock);
	return rc;
}

void mrfi_cntr_detach(struct mrfi_cntr *c, struct mrfi_ep *ep)
{
	pthread_mutex_lock(&c->lock);
	for (int i = 0; i < c->neps; i++)
		if (c->eps[i] == ep) {
			c->eps[i] = c->eps[--c->neps];
			break;
		}
	pthread_mutex_unlock(&c->lock);
}
