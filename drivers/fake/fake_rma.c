/*
 * Fake driver, one-sided operations: memory registration in a table that
 * lives in the registering process, and get/put with process_vm_readv /
 * process_vm_writev against the peer process.
 *
 * Before every get/put the initiator reads the target's table slot and
 * checks what RDMA hardware would (slot valid, key equal, range inside the
 * registration, access allowed) and what the local side must honour (local
 * memory inside a valid lmr), so the test double catches engine bugs such
 * as using a deregistered key or reading outside a registration: each
 * violation completes the operation with MRAIL_ERR_PROTO and logs why.
 *
 * Operations run in progress when their modelled time is due: the copy and
 * the rma_done upcall happen together, so dropping an operation in
 * ep_close guarantees its memory is never touched afterwards.
 */
#include "drivers/fake/fake_internal.h"
#include "util/clock.h"
#include "util/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <unistd.h>

/* ---- permission -------------------------------------------------------- */

int fake_rma_check_permission(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
	int scope = 0, probe = 42, copy = 0;
	struct iovec l = {&copy, sizeof copy}, r = {&probe, sizeof probe};

	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = 0;
		fclose(f);
	}
	/* Yama scope 1 only lets ancestors read us: let any peer in (our
	 * peers are the processes the test or job started). */
	if (prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) < 0 &&
	    errno != EINVAL)
		mrail_debug("fake: prctl(PR_SET_PTRACER_ANY): %s",
			    strerror(errno));
	if (scope >= 3 || (scope == 2 && geteuid() != 0)) {
		mrail_error("fake driver: kernel.yama.ptrace_scope=%d forbids "
			    "process_vm_readv between peer processes, which "
			    "get/put need (set it to 0 or 1)",
			    scope);
		return MRAIL_ERR_IO;
	}
	if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != sizeof copy ||
	    copy != probe) {
		mrail_error("fake driver: process_vm_readv does not work here "
			    "(%s): get/put need it (ptrace permission; "
			    "a seccomp filter or container may block it)",
			    strerror(errno));
		return MRAIL_ERR_IO;
	}
	return 0;
}

/* ---- registration table ------------------------------------------------ */

static _Atomic uint64_t key_state; /* instances may live in threads */

static uint64_t new_key(void)
{
	/* splitmix64 from a random seed: distinct, unguessable enough for
	 * catching stale keys; never 0 (0 marks a free slot). */
	uint64_t z;

	do {
		z = atomic_fetch_add(&key_state, 0x9e3779b97f4a7c15ull) +
		    0x9e3779b97f4a7c15ull;
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		z ^= z >> 31;
	} while (z == 0);
	return z;
}

int fake_rma_init(struct mrail_drv *drv)
{
	size_t bytes = FAKE_MR_SLOTS * sizeof(struct fake_mr_slot);
	uint64_t seed, zero = 0;

	if (atomic_load(&key_state) == 0) {
		if (getrandom(&seed, sizeof seed, 0) != sizeof seed)
			seed = (uint64_t)getpid() * 0x2545f4914f6cdd1dull ^
			       (uint64_t)(mrail_now() * 1e9);
		atomic_compare_exchange_strong(&key_state, &zero, seed);
	}
	drv->mr_table = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (drv->mr_table == MAP_FAILED) {
		drv->mr_table = NULL;
		mrail_error("fake: mmap of the registration table: %s",
			    strerror(errno));
		return MRAIL_ERR_NOMEM;
	}
	drv->mr_free = malloc(FAKE_MR_SLOTS * sizeof *drv->mr_free);
	drv->mr_live = calloc(FAKE_MR_SLOTS, sizeof *drv->mr_live);
	if (!drv->mr_free || !drv->mr_live) {
		free(drv->mr_free);
		free(drv->mr_live);
		munmap(drv->mr_table, bytes);
		drv->mr_table = NULL;
		return MRAIL_ERR_NOMEM;
	}
	for (uint32_t i = 0; i < FAKE_MR_SLOTS; i++)
		drv->mr_free[i] = FAKE_MR_SLOTS - 1 - i;
	drv->mr_free_cnt = FAKE_MR_SLOTS;
	return 0;
}

void fake_rma_fini(struct mrail_drv *drv)
{
	while (drv->rma_head) {
		struct fake_rma *op = drv->rma_head;
		drv->rma_head = op->next;
		free(op);
	}
	while (drv->quarantine) {
		struct mrail_drv_mr *mr = drv->quarantine;
		drv->quarantine = mr->next;
		free(mr);
	}
	/* Registrations left behind: the handles die with the instance
	 * (the engine must not deregister them afterwards). */
	unsigned left = 0;
	for (uint32_t i = 0; drv->mr_live && i < FAKE_MR_SLOTS; i++)
		if (drv->mr_live[i]) {
			free(drv->mr_live[i]);
			left++;
		}
	if (left)
		mrail_warn("fake: close with %u memory registrations still "
			   "alive (freed)",
			   left);
	free(drv->mr_live);
	if (drv->mr_table)
		munmap(drv->mr_table,
		       FAKE_MR_SLOTS * sizeof(struct fake_mr_slot));
	free(drv->mr_free);
}

static int fake_mr_reg(struct mrail_drv *drv, void *addr, size_t len,
		       unsigned access, struct mrail_drv_mr **out)
{
	const unsigned known = MRAIL_DRV_ACCESS_LOCAL |
			       MRAIL_DRV_ACCESS_REMOTE_READ |
			       MRAIL_DRV_ACCESS_REMOTE_WRITE;
	struct mrail_drv_mr *mr;
	struct fake_mr_slot *s;

	if (!drv || !out || !addr || !len || !access || (access & ~known)) {
		mrail_error("fake: mr_reg(%p, %zu bytes, access %#x): invalid",
			    addr, len, access);
		return MRAIL_ERR_INVALID;
	}
	if (drv->mr_free_cnt == 0) {
		mrail_error("fake: mr_reg: all %d registration slots in use",
			    FAKE_MR_SLOTS);
		return MRAIL_ERR_NOMEM;
	}
	mr = calloc(1, sizeof *mr);
	if (!mr)
		return MRAIL_ERR_NOMEM;
	mr->magic = FAKE_MR_MAGIC;
	mr->slot = drv->mr_free[--drv->mr_free_cnt];
	drv->mr_live[mr->slot] = mr;
	mr->drv = drv;
	mr->key = new_key();
	mr->addr = addr;
	mr->len = len;
	mr->access = access;
	s = &drv->mr_table[mr->slot];
	s->addr = (uintptr_t)addr;
	s->len = len;
	s->access = access;
	s->key = mr->key;
	/* A peer reading concurrently sees valid only after the rest. */
	__atomic_store_n(&s->valid, 1, __ATOMIC_RELEASE);
	*out = mr;
	return 0;
}

static void fake_mr_dereg(struct mrail_drv_mr *mr)
{
	struct mrail_drv *drv;
	struct fake_mr_slot *s;

	if (!mr)
		return;
	if (mr->magic != FAKE_MR_MAGIC) {
		mrail_error("fake: mr_dereg of a handle that is not "
			    "registered (%s)",
			    mr->magic == FAKE_MR_DEAD ? "already deregistered"
						      : "garbage");
		return;
	}
	drv = mr->drv;
	s = &drv->mr_table[mr->slot];
	__atomic_store_n(&s->valid, 0, __ATOMIC_RELEASE);
	s->key = 0;
	drv->mr_free[drv->mr_free_cnt++] = mr->slot;
	drv->mr_live[mr->slot] = NULL;
	/* Kept for a while so that a stale handle is recognised. */
	mr->magic = FAKE_MR_DEAD;
	mr->next = NULL;
	if (drv->quarantine_tail)
		drv->quarantine_tail->next = mr;
	else
		drv->quarantine = mr;
	drv->quarantine_tail = mr;
	if (++drv->quarantine_cnt > FAKE_MR_QUARANTINE) {
		struct mrail_drv_mr *old = drv->quarantine;
		drv->quarantine = old->next;
		drv->quarantine_cnt--;
		free(old);
	}
}

static int fake_mr_pack(struct mrail_drv_mr *mr, void *rkey, size_t *rkey_len)
{
	uint8_t *k = rkey;

	if (!mr || mr->magic != FAKE_MR_MAGIC || !rkey || !rkey_len) {
		mrail_error("fake: mr_pack of an unregistered handle");
		return MRAIL_ERR_INVALID;
	}
	if (*rkey_len < FAKE_RKEY_LEN) {
		*rkey_len = FAKE_RKEY_LEN;
		return MRAIL_ERR_INVALID;
	}
	memset(k, 0, FAKE_RKEY_LEN);
	k[0] = FAKE_RKEY_VERSION;
	k[1] = (uint8_t)mr->access;
	fake_put_le32(k + 4, (uint32_t)getpid());
	fake_put_le64(k + 8, (uintptr_t)mr->drv->mr_table);
	fake_put_le32(k + 16, mr->slot);
	fake_put_le64(k + 24, mr->key);
	fake_put_le64(k + 32, (uintptr_t)mr->addr);
	fake_put_le64(k + 40, mr->len);
	*rkey_len = FAKE_RKEY_LEN;
	return 0;
}

/* ---- posting ----------------------------------------------------------- */

static int post(struct mrail_drv_ep *ep, enum fake_rma_kind kind, void *laddr,
		size_t len, struct mrail_drv_mr *lmr, uint64_t raddr,
		const void *rkey, size_t rkey_len, void *op_ctx)
{
	struct mrail_drv *drv;
	struct fake_rma *op;

	if (!ep || ep->dc.state == DC_EP_CLOSED || !laddr || !rkey ||
	    len == 0 || len > FAKE_MAX_RMA) {
		mrail_error("fake: %s of %zu bytes: invalid arguments",
			    kind == FAKE_GET ? "get" : "put", len);
		return MRAIL_ERR_INVALID;
	}
	if (ep->dc.state == DC_EP_FAILED)
		return MRAIL_ERR_PEER;
	drv = fake_drv(ep);
	op = calloc(1, sizeof *op);
	if (!op)
		return MRAIL_ERR_NOMEM;
	op->ep = ep;
	op->kind = kind;
	op->op_ctx = op_ctx;
	op->laddr = laddr;
	op->len = len;
	op->lmr = lmr;
	op->raddr = raddr;
	op->rkey_len = rkey_len;
	memcpy(op->rkey, rkey,
	       rkey_len < FAKE_RKEY_LEN ? rkey_len : FAKE_RKEY_LEN);
	if (kind == FAKE_GET)
		drv->cnt.gets++;
	else
		drv->cnt.puts++;
	if (fake_rail_faulty(drv, ep->rail)) {
		if (drv->par.fail_rma_after >= 0 &&
		    drv->rma_posted >= (uint64_t)drv->par.fail_rma_after &&
		    (drv->par.faults < 0 ||
		     drv->cnt.errors_injected < (uint64_t)drv->par.faults)) {
			op->status = MRAIL_ERR_IO;
			drv->cnt.errors_injected++;
		}
		drv->rma_posted++;
	}
	op->due = fake_link_due(drv, ep->rail, len);
	if (drv->rma_tail)
		drv->rma_tail->next = op;
	else
		drv->rma_head = op;
	drv->rma_tail = op;
	/* Completion comes from progress: make wait_fd say when. */
	fake_timer_want(drv, op->due > 0 ? op->due : mrail_now());
	return 0;
}

static int fake_get(struct mrail_drv_ep *ep, void *laddr, size_t len,
		    struct mrail_drv_mr *lmr, uint64_t raddr, const void *rkey,
		    size_t rkey_len, void *op_ctx)
{
	return post(ep, FAKE_GET, laddr, len, lmr, raddr, rkey, rkey_len,
		    op_ctx);
}

static int fake_put(struct mrail_drv_ep *ep, const void *laddr, size_t len,
		    struct mrail_drv_mr *lmr, uint64_t raddr, const void *rkey,
		    size_t rkey_len, void *op_ctx)
{
	return post(ep, FAKE_PUT, (void *)laddr, len, lmr, raddr, rkey,
		    rkey_len, op_ctx);
}

/* ---- execution --------------------------------------------------------- */

#define OPNAME(op) ((op)->kind == FAKE_GET ? "get" : "put")

static int violation(const struct fake_rma *op, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int violation(const struct fake_rma *op, const char *fmt, ...)
{
	char why[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	mrail_warn("fake: %s of %zu bytes at %#llx with %s: %s", OPNAME(op),
		   op->len, (unsigned long long)op->raddr,
		   op->ep->dc.remote_name, why);
	return MRAIL_ERR_PROTO;
}

static int errno_status(const struct fake_rma *op, int err, const char *what)
{
	if (err == ESRCH)
		return MRAIL_ERR_PEER; /* the peer process is gone */
	if (err == EFAULT)
		return violation(op, "%s: memory not mapped in the peer",
				 what);
	mrail_error("fake: %s with %s: %s: %s%s", OPNAME(op),
		    op->ep->dc.remote_name, what, strerror(err),
		    err == EPERM ? " (ptrace permission to the peer process "
				   "is needed)"
				 : "");
	return MRAIL_ERR_IO;
}

static int check_local(const struct fake_rma *op)
{
	const struct mrail_drv_mr *m = op->lmr;
	uintptr_t a = (uintptr_t)op->laddr;

	if (!m || m->magic != FAKE_MR_MAGIC)
		return violation(op, "local registration %s",
				 !m ? "missing"
				 : m->magic == FAKE_MR_DEAD
					 ? "was deregistered"
					 : "is not a registration");
	if (m->drv != fake_drv(op->ep))
		return violation(op, "local registration belongs to another "
				     "driver instance");
	if (a < (uintptr_t)m->addr || op->len > m->len ||
	    a - (uintptr_t)m->addr > m->len - op->len)
		return violation(op, "local memory %p+%zu outside its "
				     "registration %p+%zu",
				 op->laddr, op->len, m->addr, m->len);
	if (op->kind == FAKE_GET && !(m->access & MRAIL_DRV_ACCESS_LOCAL))
		return violation(op, "local registration lacks LOCAL access "
				     "(a get writes local memory)");
	return 0;
}

static int check_remote(const struct fake_rma *op)
{
	const uint8_t *k = op->rkey;
	struct fake_mr_slot s;
	uint64_t table, key;
	uint32_t slot;
	pid_t pid;
	unsigned need = op->kind == FAKE_GET ? MRAIL_DRV_ACCESS_REMOTE_READ
					     : MRAIL_DRV_ACCESS_REMOTE_WRITE;

	if (op->rkey_len != FAKE_RKEY_LEN || k[0] != FAKE_RKEY_VERSION)
		return violation(op, "remote key of %zu bytes, version %u "
				     "(expected %d bytes, version %u)",
				 op->rkey_len, k[0], FAKE_RKEY_LEN,
				 FAKE_RKEY_VERSION);
	pid = (pid_t)fake_get_le32(k + 4);
	table = fake_get_le64(k + 8);
	slot = fake_get_le32(k + 16);
	key = fake_get_le64(k + 24);
	if (pid != op->ep->peer_pid)
		return violation(op, "remote key of process %d used on a "
				     "connection to process %d",
				 (int)pid, (int)op->ep->peer_pid);
	if (slot >= FAKE_MR_SLOTS || !table)
		return violation(op, "remote key names slot %u of table "
				     "%#llx",
				 slot, (unsigned long long)table);
	struct iovec l = {&s, sizeof s};
	struct iovec r = {(void *)(uintptr_t)(table + slot * sizeof s),
			  sizeof s};
	ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
	if (n != (ssize_t)sizeof s)
		return errno_status(op, n < 0 ? errno : EFAULT,
				    "reading the peer's registration table");
	if (!s.valid || s.key != key)
		return violation(op, "remote key is stale (registration "
				     "slot %u %s)",
				 slot,
				 s.valid ? "was re-registered"
					 : "is deregistered");
	if (op->raddr < s.addr || op->len > s.len ||
	    op->raddr - s.addr > s.len - op->len)
		return violation(op, "remote range %#llx+%zu outside the "
				     "registration %#llx+%llu",
				 (unsigned long long)op->raddr, op->len,
				 (unsigned long long)s.addr,
				 (unsigned long long)s.len);
	if (!(s.access & need))
		return violation(op, "remote registration lacks %s access",
				 need == MRAIL_DRV_ACCESS_REMOTE_READ
					 ? "REMOTE_READ"
					 : "REMOTE_WRITE");
	return 0;
}

static int execute(struct fake_rma *op)
{
	pid_t pid = op->ep->peer_pid;
	size_t done = 0;
	int rc = check_local(op);

	if (rc == 0)
		rc = check_remote(op);
	while (rc == 0 && done < op->len) {
		struct iovec l = {(char *)op->laddr + done, op->len - done};
		struct iovec r = {(void *)(uintptr_t)(op->raddr + done),
				  op->len - done};
		ssize_t n = op->kind == FAKE_GET
				    ? process_vm_readv(pid, &l, 1, &r, 1, 0)
				    : process_vm_writev(pid, &l, 1, &r, 1, 0);
		if (n <= 0)
			rc = errno_status(op, n < 0 ? errno : EFAULT,
					  "copying data");
		else
			done += (size_t)n;
	}
	return rc;
}

static void unlink_op(struct mrail_drv *drv, struct fake_rma *prev,
		      struct fake_rma *op)
{
	if (prev)
		prev->next = op->next;
	else
		drv->rma_head = op->next;
	if (drv->rma_tail == op)
		drv->rma_tail = prev;
	op->next = NULL;
}

/* The first operation ready to complete, unlinked; NULL if none. */
static struct fake_rma *take_due(struct mrail_drv *drv, double now,
				 double *next_due)
{
	struct fake_rma *prev = NULL;

	for (struct fake_rma *op = drv->rma_head; op; prev = op, op = op->next) {
		if (op->ep->dc.state == DC_EP_CONNECTING)
			continue; /* runs once connected */
		if (op->ep->dc.state == DC_EP_CONNECTED && op->due > now) {
			if (op->due < *next_due)
				*next_due = op->due;
			continue;
		}
		unlink_op(drv, prev, op);
		return op;
	}
	return NULL;
}

int fake_rma_progress(struct mrail_drv *drv, double now, double *next_due)
{
	unsigned limit = 0;
	int n = 0;

	/* Only what is queued now: an rma_done may post more. */
	for (struct fake_rma *op = drv->rma_head; op; op = op->next)
		limit++;
	while (limit-- > 0) {
		struct fake_rma *op = take_due(drv, now, next_due);
		if (!op)
			break;
		struct mrail_drv_ep *ep = op->ep;
		int status = op->status;

		if (status == 0 && ep->dc.state != DC_EP_CONNECTED)
			status = MRAIL_ERR_PEER;
		if (status == 0)
			status = execute(op);
		if (status == 0)
			drv->cnt.rma_bytes += op->len;
		else
			drv->cnt.rma_errors++;
		void *op_ctx = op->op_ctx;
		free(op);
		drv->dc.base.up->rma_done(ep->dc.ctx, op_ctx, status);
		n++;
	}
	return n;
}

void fake_rma_fail_of(struct mrail_drv_ep *ep, int status)
{
	for (struct fake_rma *op = fake_drv(ep)->rma_head; op; op = op->next)
		if (op->ep == ep) {
			if (op->status == 0)
				op->status = status;
			op->due = 0;
		}
	fake_timer_want(fake_drv(ep), mrail_now());
}

void fake_rma_drop_of(struct mrail_drv_ep *ep)
{
	struct mrail_drv *drv = fake_drv(ep);
	struct fake_rma *prev = NULL, *op = drv->rma_head;

	while (op) {
		struct fake_rma *next = op->next;
		if (op->ep == ep) {
			unlink_op(drv, prev, op);
			free(op);
		} else {
			prev = op;
		}
		op = next;
	}
}

const struct mrail_drv_rma_ops fake_rma_ops = {
	.mr_reg = fake_mr_reg,
	.mr_dereg = fake_mr_dereg,
	.mr_pack = fake_mr_pack,
	.get = fake_get,
	.put = fake_put,
};
