/*
 * Driver instances: one per name in MRAIL_DRIVERS, each opened with its
 * own MRAIL_DRIVER_PARAMS section. The engine polls them all; a gate's
 * rails may belong to several of them.
 */
#include "libmrail/engine.h"
#include "util/log.h"

#include <string.h>

/* The "name:k=v,..." section of MRAIL_DRIVER_PARAMS for one driver. */
static int params_for(const char *all, const char *name, char *out,
		      size_t cap)
{
	size_t nl = strlen(name);
	int seen = 0;
	out[0] = '\0';
	for (const char *p = all; p && *p;) {
		size_t len = strcspn(p, ";");
		const char *colon = memchr(p, ':', len);
		if (!colon) {
			mrail_error("invalid MRAIL_DRIVER_PARAMS='%s': section "
				    "'%.*s' has no 'driver:' prefix", all,
				    (int)len, p);
			return MRAIL_ERR_CONFIG;
		}
		size_t dl = (size_t)(colon - p);
		if (dl == nl && !strncmp(p, name, nl)) {
			size_t vl = len - dl - 1;
			if (vl >= cap || seen++) {
				mrail_error("invalid MRAIL_DRIVER_PARAMS: the "
					    "'%s' section is too long or given "
					    "twice", name);
				return MRAIL_ERR_CONFIG;
			}
			memcpy(out, colon + 1, vl);
			out[vl] = '\0';
		} else if (!mrail_driver_find_n(p, dl) && dl < 16 &&
			   mrail_driver_absent_why(strndupa(p, dl))) {
			mrail_error("MRAIL_DRIVER_PARAMS: driver '%.*s' is not "
				    "built into this libmrail: %s", (int)dl, p,
				    mrail_driver_absent_why(strndupa(p, dl)));
			return MRAIL_ERR_CONFIG;
		} else if (!mrail_driver_find_n(p, dl)) {
			mrail_error("invalid MRAIL_DRIVER_PARAMS='%s': unknown "
				    "driver '%.*s' (known: %s)", all, (int)dl, p,
				    mrail_driver_names());
			return MRAIL_ERR_CONFIG;
		}
		p += len;
		if (*p == ';')
			p++;
	}
	return MRAIL_OK;
}

static int open_instance(struct mrail_engine *e, const char *name)
{
	struct drv_instance *di = &e->drivers[e->ndrv];
	const struct mrail_drv_ops *ops = mrail_driver_find(name);

	if (!ops && mrail_driver_absent_why(name)) {
		mrail_error("MRAIL_DRIVERS='%s': driver '%s' is not built into "
			    "this libmrail: %s (built in: %s)", e->cfg.drivers,
			    name, mrail_driver_absent_why(name),
			    mrail_driver_names());
		return MRAIL_ERR_CONFIG;
	}
	if (!ops) {
		mrail_error("invalid MRAIL_DRIVERS='%s': unknown driver '%s' "
			    "(known: %s)", e->cfg.drivers, name,
			    mrail_driver_names());
		return MRAIL_ERR_CONFIG;
	}
	if (drivers_find(e, name)) {
		mrail_error("invalid MRAIL_DRIVERS='%s': '%s' listed twice (one "
			    "instance serves all of its rails)", e->cfg.drivers,
			    name);
		return MRAIL_ERR_CONFIG;
	}
	if (ops->abi_version != MRAIL_DRV_ABI_VERSION) {
		mrail_error("driver '%s' has ABI %u, the engine needs %u", name,
			    ops->abi_version, MRAIL_DRV_ABI_VERSION);
		return MRAIL_ERR_CONFIG;
	}
	int rc = params_for(e->cfg.driver_params, name, di->params,
			    sizeof di->params);
	if (rc)
		return rc;
	di->engine = e;
	di->ops = ops;
	di->index = e->ndrv;
	struct mrail_drv_open_args args = {&engine_upcalls, di, di->params};
	rc = ops->open(&args, &di->drv);
	if (rc != MRAIL_OK) {
		mrail_error("driver '%s' failed to open: %s", name,
			    mrail_strerror(rc));
		return rc;
	}
	ops->query_caps(di->drv, &di->caps);
	if ((di->caps.flags & (MRAIL_DRV_CAP_RDMA_READ |
			       MRAIL_DRV_CAP_RDMA_WRITE)) && !ops->rma) {
		mrail_error("driver '%s' claims RDMA but has no RMA operations",
			    name);
		ops->close(di->drv);
		di->drv = NULL;
		return MRAIL_ERR_CONFIG;
	}
	rc = mem_init(di);
	if (rc) {
		ops->close(di->drv);
		di->drv = NULL;
		return rc;
	}
	e->ndrv++;
	return MRAIL_OK;
}

int drivers_open(struct mrail_engine *e)
{
	const char *p = e->cfg.drivers;
	int rc = MRAIL_OK;

	while (*p && rc == MRAIL_OK) {
		char name[32];
		size_t n = strcspn(p, ",");
		if (n == 0 || n >= sizeof name) {
			mrail_error("invalid MRAIL_DRIVERS='%s': empty or overlong "
				    "name (known: %s)", e->cfg.drivers,
				    mrail_driver_names());
			return MRAIL_ERR_CONFIG;
		}
		if (e->ndrv == MRAIL_MAX_DRIVERS) {
			mrail_error("invalid MRAIL_DRIVERS='%s': at most %d",
				    e->cfg.drivers, MRAIL_MAX_DRIVERS);
			return MRAIL_ERR_CONFIG;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		rc = open_instance(e, name);
		p += n;
		if (*p == ',' && !*++p) {
			mrail_error("invalid MRAIL_DRIVERS='%s': trailing comma",
				    e->cfg.drivers);
			return MRAIL_ERR_CONFIG;
		}
	}
	if (rc == MRAIL_OK && e->ndrv == 0) {
		mrail_error("invalid MRAIL_DRIVERS='%s': no driver named (known: "
			    "%s)", e->cfg.drivers, mrail_driver_names());
		return MRAIL_ERR_CONFIG;
	}
	e->max_head = SIZE_MAX;
	for (unsigned i = 0; i < e->ndrv; i++)
		if (e->drivers[i].caps.max_head < e->max_head)
			e->max_head = e->drivers[i].caps.max_head;
	return rc;
}

size_t drivers_eager_hint_max(const struct mrail_engine *e)
{
	size_t m = 0;
	for (unsigned i = 0; i < e->ndrv; i++)
		if (e->drivers[i].caps.eager_max_hint > m)
			m = e->drivers[i].caps.eager_max_hint;
	return m;
}

void drivers_close(struct mrail_engine *e)
{
	for (unsigned i = 0; i < e->ndrv; i++)
		if (e->drivers[i].drv) {
			mem_fini(&e->drivers[i]);
			e->drivers[i].ops->close(e->drivers[i].drv);
			e->drivers[i].drv = NULL;
		}
}

/*
 * A driver no peer's plan uses carries none of our traffic: all its
 * progress can find is a connection the handshake drops anyway (its rail
 * is on no plan: "rail on the wrong driver") or one for a gate not planned
 * yet, which only waits a few passes longer. Its progress can cost a
 * system call (a socket driver's epoll_wait): on one host, where shm
 * carries every peer, tcp's empty epoll_wait was half of each idle pass
 * under MPI (perf, docs/mpi-ompi.md "budget"), and still a sixth of it
 * at every 16th pass. So it runs every UNPLANNED_EVERY passes (a
 * connection then waits up to a few hundred microseconds more): on a
 * guest whose system calls cost 1.2 us, every 256th pass was still one
 * epoll_wait per few microseconds of polling (docs/driver-shm.md).
 */
#define UNPLANNED_EVERY 4096

void drivers_mark_planned(struct mrail_engine *e, struct drv_instance *di)
{
	if (di->planned)
		return;
	di->planned = 1;
	e->planned[e->nplanned++] = di;
}

/* The planned ones from their own array: walking all instances to find
 * them was a sixth of an idle pass over shm. */
int drivers_progress(struct mrail_engine *e, uint64_t pass)
{
	int events = 0;
	if (pass % UNPLANNED_EVERY == 0) {
		for (unsigned i = 0; i < e->ndrv; i++)
			events += e->drivers[i].ops->progress(
				e->drivers[i].drv);
		return events;
	}
	for (unsigned i = 0; i < e->nplanned; i++)
		events += e->planned[i]->ops->progress(e->planned[i]->drv);
	return events;
}

bool drivers_trywait(struct mrail_engine *e)
{
	ENGINE_ASSERT_LOCKED(e);
	bool work = false;
	/* Every driver arms, even after one said "work": the engine may
	 * still sleep on all of them once it has progressed. */
	for (unsigned i = 0; i < e->ndrv; i++)
		if (e->drivers[i].ops->trywait &&
		    e->drivers[i].ops->trywait(e->drivers[i].drv) != 0)
			work = true;
	return work;
}

unsigned drivers_wait_fds(struct mrail_engine *e, int *fds, unsigned max)
{
	unsigned n = 0;
	for (unsigned i = 0; i < e->ndrv && n < max; i++) {
		int fd = e->drivers[i].ops->wait_fd(e->drivers[i].drv);
		if (fd >= 0)
			fds[n++] = fd;
	}
	return n;
}

struct drv_instance *drivers_find(struct mrail_engine *e, const char *name)
{
	for (unsigned i = 0; i < e->ndrv; i++)
		if (!strcmp(e->drivers[i].ops->name, name))
			return &e->drivers[i];
	return NULL;
}
