/*
 * One-copy transfers for the engine's rendezvous: get and put move bytes
 * straight between the two processes' memory with process_vm_readv /
 * process_vm_writev (cross-memory attach). A registration is only a
 * range and a key; the remote key names the range, and a get or put
 * outside it is refused before any byte moves. A put copies inside
 * put(); a get issued from progress (an RTS in the ring) is queued and
 * run at the end of the pass, with the other gets of that pass from the
 * same peer in one system call; a get issued outside progress copies
 * inside get(). Completions are reported from progress like a send's.
 *
 * Where the kernel does not let us (Yama ptrace_scope 2 or 3, a seccomp
 * filter), the driver offers no RDMA capability and the engine sends
 * rendezvous bodies through the rings instead (copy in, copy out).
 */
#include "drivers/shm/shm_internal.h"
#include "mrail.h"
#include "util/log.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#define SHM_MR_MAGIC 0x4d52534dU

struct mrail_drv_mr {
	uint32_t magic;
	struct mrail_drv *drv;
	uint64_t key;
	void *addr;
	size_t len;
};

bool shm_cma_usable(int want)
{
	FILE *f;
	int scope = 0, probe = 42, copy = 0;
	struct iovec l = {&copy, sizeof copy}, r = {&probe, sizeof probe};

	if (want == 0)
		return false;
	if ((f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r"))) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = 0;
		fclose(f);
	}
	/* Yama scope 1 lets only ancestors in: let our peers in (as Open
	 * MPI's vader does). */
	if (scope == 1 && prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) &&
	    errno != EINVAL)
		mrail_debug("shm: prctl(PR_SET_PTRACER_ANY): %s",
			    strerror(errno));
	if (scope >= 3 || (scope == 2 && geteuid() != 0)) {
		mrail_info("shm: kernel.yama.ptrace_scope=%d forbids "
			   "process_vm_readv between peers: large messages "
			   "are copied through the rings", scope);
		return false;
	}
	if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != sizeof copy ||
	    copy != probe) {
		mrail_info("shm: process_vm_readv does not work here (%s): "
			   "large messages are copied through the rings",
			   strerror(errno));
		return false;
	}
	return true;
}

static _Atomic uint64_t key_state;

static int shm_mr_reg(struct mrail_drv *drv, void *addr, size_t len,
		      unsigned access, struct mrail_drv_mr **out)
{
	struct mrail_drv_mr *mr = malloc(sizeof *mr);

	(void)access; /* cross-memory attach cannot restrict it */
	if (!mr)
		return MRAIL_ERR_NOMEM;
	uint64_t k = atomic_fetch_add(&key_state, 0x9e3779b97f4a7c15ull);
	*mr = (struct mrail_drv_mr){SHM_MR_MAGIC, drv,
				    k ^ drv->key_salt, addr, len};
	*out = mr;
	return MRAIL_OK;
}

static void shm_mr_dereg(struct mrail_drv_mr *mr)
{
	if (mr) {
		mr->magic = 0;
		free(mr);
	}
}

static int shm_mr_pack(struct mrail_drv_mr *mr, void *rkey, size_t *rkey_len)
{
	uint8_t *k = rkey;

	shm_put_le32(k, SHM_RKEY_VERSION);
	shm_put_le32(k + 4, 0);
	shm_put_le64(k + 8, (uint64_t)(uintptr_t)mr->addr);
	shm_put_le64(k + 16, mr->len);
	shm_put_le64(k + 24, mr->key);
	*rkey_len = SHM_RKEY_LEN;
	return MRAIL_OK;
}

/* Check the key and that [raddr, raddr+len) lies inside what it names. */
static const char *check_rkey(const void *rkey, size_t rkey_len,
			      uint64_t raddr, size_t len)
{
	const uint8_t *k = rkey;

	if (rkey_len != SHM_RKEY_LEN || shm_get_le32(k) != SHM_RKEY_VERSION)
		return "malformed remote key";
	uint64_t base = shm_get_le64(k + 8), rlen = shm_get_le64(k + 16);
	if (raddr < base || len > rlen || raddr - base > rlen - len)
		return "range outside the remote registration";
	return NULL;
}

/* ---- completions (rma_done from progress only) -------------------------- */

static struct shm_rma_done *done_add(struct mrail_drv *drv,
				     struct mrail_drv_ep *ep, void *ctx,
				     int status)
{
	struct shm_rma_done *d = drv->rma_free;

	if (d)
		drv->rma_free = d->next;
	else if (!(d = malloc(sizeof *d)))
		return NULL;
	*d = (struct shm_rma_done){NULL, ep, ctx, status, false, NULL, 0, 0};
	if (drv->rma_tail)
		drv->rma_tail->next = d;
	else
		drv->rma_head = d;
	drv->rma_tail = d;
	return d;
}

/* One copy, resumed after a short count or EINTR; 0 or the error. */
static int copy_one(struct mrail_drv_ep *ep, bool write, void *laddr,
		    uint64_t raddr, size_t len)
{
	if (ep->dc.state == DC_EP_FAILED || ep->dc.state == DC_EP_CLOSED ||
	    !ep->peer_pid)
		return MRAIL_ERR_PEER;
	size_t done = 0;
	while (done < len) {
		struct iovec l = {(uint8_t *)laddr + done, len - done};
		struct iovec r = {(void *)(uintptr_t)(raddr + done), len - done};
		ssize_t n = write ? process_vm_writev(ep->peer_pid, &l, 1, &r, 1, 0)
				  : process_vm_readv(ep->peer_pid, &l, 1, &r, 1, 0);
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		int err = n < 0 ? errno : EFAULT;
		mrail_info("shm: %s of %zu bytes at 0x%llx in %s: %s",
			   write ? "put" : "get", len,
			   (unsigned long long)raddr, ep->dc.remote_name,
			   strerror(err));
		/* ESRCH: the peer is gone (its socket tells the rest). */
		return err == ESRCH ? MRAIL_ERR_PEER : MRAIL_ERR_IO;
	}
	return 0;
}

/* Gets per process_vm_readv (the kernel allows IOV_MAX, 1024). */
#define SHM_GETS_PER_CALL 64
/* Bytes per call, past which no further get joins: a batch reports its
 * completions only when the whole call returns, so the cap bounds how
 * long the first get waits behind the rest (about 170 µs at 6 GB/s),
 * and at 1 MiB a call's own cost (2.4-2.9 µs) is under 2 % of the copy. */
#define SHM_BATCH_BYTES (1u << 20)

/* Runs the queued gets from first on whose endpoint is first's, up to
 * SHM_GETS_PER_CALL and SHM_BATCH_BYTES, in one call; returns the first
 * not run. */
static struct shm_rma_done *run_batch(struct mrail_drv *drv,
				      struct shm_rma_done *first)
{
	struct iovec l[SHM_GETS_PER_CALL], r[SHM_GETS_PER_CALL];
	struct shm_rma_done *batch[SHM_GETS_PER_CALL], *d = first;
	struct mrail_drv_ep *ep = first->ep;
	unsigned k = 0;
	size_t bytes = 0;

	for (; d && k < SHM_GETS_PER_CALL && bytes < SHM_BATCH_BYTES;
	     d = d->next) {
		if (!d->pending)
			continue;
		if (d->ep != ep)
			break;
		l[k] = (struct iovec){d->laddr, d->len};
		r[k] = (struct iovec){(void *)(uintptr_t)d->raddr, d->len};
		batch[k++] = d;
		bytes += d->len;
	}
	ssize_t n = -1;
	bool live = ep->dc.state != DC_EP_FAILED &&
		    ep->dc.state != DC_EP_CLOSED && ep->peer_pid;
	if (k > 1 && live)
		n = process_vm_readv(ep->peer_pid, l, k, r, k, 0);
	/* What the call did not finish (a short count, an error, a single
	 * get) goes one get at a time, with the error of the one at fault. */
	size_t left = n > 0 ? (size_t)n : 0; /* bytes the call copied */
	for (unsigned i = 0; i < k; i++) {
		struct shm_rma_done *g = batch[i];
		if (left >= g->len) {
			left -= g->len;
			g->status = 0;
		} else {
			g->status = copy_one(ep, false, (uint8_t *)g->laddr + left,
					     g->raddr + left, g->len - left);
			left = 0;
		}
		g->pending = false;
		drv->rma_pending--;
	}
	return d;
}

void shm_rma_run_pending(struct mrail_drv *drv)
{
	struct shm_rma_done *d = drv->rma_head;

	while (d && drv->rma_pending) {
		if (d->pending)
			d = run_batch(drv, d);
		else
			d = d->next;
	}
}

/* Take ep's entries (all if NULL) off the list, in order. */
static struct shm_rma_done *take(struct mrail_drv *drv, struct mrail_drv_ep *ep)
{
	struct shm_rma_done *out = NULL, **tail = &out, **pp = &drv->rma_head;

	drv->rma_tail = NULL;
	while (*pp) {
		struct shm_rma_done *d = *pp;
		if (!ep || d->ep == ep) {
			*pp = d->next;
			d->next = NULL;
			*tail = d;
			tail = &d->next;
		} else {
			drv->rma_tail = d;
			pp = &d->next;
		}
	}
	return out;
}

/* take, of entries no longer pending: ep's queued gets are dropped (they
 * fail or vanish with it, and must not copy into a buffer the engine
 * has given back). */
static struct shm_rma_done *take_ran(struct mrail_drv *drv,
				     struct mrail_drv_ep *ep)
{
	struct shm_rma_done *out = take(drv, ep);

	for (struct shm_rma_done *d = out; d; d = d->next)
		if (d->pending) {
			d->pending = false;
			drv->rma_pending--;
		}
	return out;
}

/* Report (status < 1: with that status instead of their own) or drop. */
static int finish(struct mrail_drv *drv, struct shm_rma_done *d, bool report,
		  int status)
{
	int n = 0;

	while (d) {
		struct shm_rma_done *next = d->next;
		struct mrail_drv_ep *ep = d->ep;
		if (report && ep->dc.state != DC_EP_CLOSED) {
			drv->dc.base.up->rma_done(ep->dc.ctx, d->ctx,
						  status ? status : d->status);
			n++;
		}
		d->next = drv->rma_free;
		drv->rma_free = d;
		d = next;
	}
	return n;
}

int shm_rma_completions_now(struct mrail_drv *drv)
{
	if (drv->rma_pending)
		shm_rma_run_pending(drv);
	return finish(drv, take(drv, NULL), true, 0);
}

/* After ep_error only errors may be reported: the bytes did move, but
 * the engine has written the connection off. */
void shm_rma_fail_of(struct dc_ep *ep, int status)
{
	struct mrail_drv *drv = (struct mrail_drv *)ep->drv;
	finish(drv, take_ran(drv, shm_ep(ep)), true, status);
}

void shm_rma_drop_of(struct dc_ep *ep)
{
	struct mrail_drv *drv = (struct mrail_drv *)ep->drv;
	finish(drv, take_ran(drv, shm_ep(ep)), false, 0);
}

void shm_rma_fini(struct mrail_drv *drv)
{
	struct shm_rma_done *d = take(drv, NULL);

	drv->rma_pending = 0;
	while (d) {
		struct shm_rma_done *next = d->next;
		free(d);
		d = next;
	}
	while ((d = drv->rma_free)) {
		drv->rma_free = d->next;
		free(d);
	}
}

/* ---- get and put ------------------------------------------------------- */

static int rma(struct mrail_drv_ep *ep, bool write, void *laddr, size_t len,
	       struct mrail_drv_mr *lmr, uint64_t raddr, const void *rkey,
	       size_t rkey_len, void *op_ctx)
{
	struct mrail_drv *drv = (struct mrail_drv *)ep->dc.drv;
	const char *bad = check_rkey(rkey, rkey_len, raddr, len);
	int status = 0;

	if (len > SHM_MAX_RMA || !lmr || lmr->magic != SHM_MR_MAGIC ||
	    (uint8_t *)laddr < (uint8_t *)lmr->addr ||
	    (size_t)((uint8_t *)laddr - (uint8_t *)lmr->addr) > lmr->len ||
	    len > lmr->len - (size_t)((uint8_t *)laddr - (uint8_t *)lmr->addr))
		return MRAIL_ERR_INVALID;
	if (bad) {
		mrail_warn("shm: %s to %s refused: %s", write ? "put" : "get",
			   ep->dc.remote_name, bad);
		return MRAIL_ERR_INVALID;
	}
	bool queue = !write && drv->dc.progress_depth > 0;
	if (!queue)
		status = copy_one(ep, write, laddr, raddr, len);
	struct shm_rma_done *d = done_add(drv, ep, op_ctx, status);
	if (!d)
		return MRAIL_ERR_NOMEM;
	if (queue) {
		d->pending = true;
		d->laddr = laddr;
		d->raddr = raddr;
		d->len = len;
		drv->rma_pending++;
	}
	return 0;
}

static int shm_get(struct mrail_drv_ep *ep, void *laddr, size_t len,
		   struct mrail_drv_mr *lmr, uint64_t raddr, const void *rkey,
		   size_t rkey_len, void *op_ctx)
{
	return rma(ep, false, laddr, len, lmr, raddr, rkey, rkey_len, op_ctx);
}

static int shm_put(struct mrail_drv_ep *ep, const void *laddr, size_t len,
		   struct mrail_drv_mr *lmr, uint64_t raddr, const void *rkey,
		   size_t rkey_len, void *op_ctx)
{
	return rma(ep, true, (void *)laddr, len, lmr, raddr, rkey, rkey_len,
		   op_ctx);
}

const struct mrail_drv_rma_ops shm_rma_ops = {
	.mr_reg = shm_mr_reg,
	.mr_dereg = shm_mr_dereg,
	.mr_pack = shm_mr_pack,
	.get = shm_get,
	.put = shm_put,
};
