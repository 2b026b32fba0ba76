/*
 * Memory registration for RDMA driver instances. Every registration the
 * engine makes goes through one cache per instance (libmrail/regcache.c,
 * docs/regcache.md), so buffers used again are not registered again, and
 * memory given back to the system is never reached through a stale one.
 */
#include "libmrail/engine.h"
#include "libmrail/regcache.h"
#include "util/log.h"

/* One access set for every registration: cached entries serve reads,
 * writes and local use alike. */
#define MEM_ACCESS (MRAIL_DRV_ACCESS_LOCAL | MRAIL_DRV_ACCESS_REMOTE_READ | \
		    MRAIL_DRV_ACCESS_REMOTE_WRITE)

static int reg(void *ctx, void *addr, size_t len, void **handle)
{
	struct drv_instance *di = ctx;
	struct mrail_drv_mr *mr;
	int rc = di->ops->rma->mr_reg(di->drv, addr, len, MEM_ACCESS, &mr);
	if (rc) {
		mrail_error("%s: registering %zu bytes at %p failed: %s",
			    di->ops->name, len, addr, mrail_strerror(rc));
		return rc;
	}
	*handle = mr;
	return MRAIL_OK;
}

static void dereg(void *ctx, void *handle)
{
	struct drv_instance *di = ctx;
	di->ops->rma->mr_dereg(handle);
}

static const struct mrail_regcache_ops cache_ops = {reg, dereg};

int mem_init(struct drv_instance *di)
{
	struct mrail_regcache_limits lim;
	int rc;
	if (!di->ops->rma)
		return MRAIL_OK;
	/* The environment is read either way, so a wrong MRAIL_REGCACHE is
	 * reported whatever drivers run. */
	if ((rc = mrail_regcache_limits_env(&lim)))
		return rc;
	if (di->caps.flags & MRAIL_DRV_CAP_REG_CHEAP)
		lim.enabled = 0;
	return mrail_regcache_create(&cache_ops, di, &lim, &di->regcache);
}

int mem_reg_get(struct drv_instance *di, const void *addr, size_t len,
		struct mrail_regcache_entry **out)
{
	return mrail_regcache_get(di->regcache, addr, len, out);
}

void mem_reg_put(struct drv_instance *di, struct mrail_regcache_entry *reg)
{
	if (reg)
		mrail_regcache_put(di->regcache, reg);
}

/* Before the driver closes: the cache deregisters what it keeps. */
void mem_fini(struct drv_instance *di)
{
	if (di->regcache) {
		mrail_regcache_destroy(di->regcache);
		di->regcache = NULL;
	}
}
