/*
 * Memory registration for RDMA driver instances. Every registration the
 * engine makes goes through here, so that one cache per instance
 * (libmrail/regcache.c) can keep them across messages.
 */
#include "libmrail/engine.h"
#include "util/log.h"

#include <stdlib.h>

#define MEM_ACCESS (MRAIL_DRV_ACCESS_LOCAL | MRAIL_DRV_ACCESS_REMOTE_READ | \
		    MRAIL_DRV_ACCESS_REMOTE_WRITE)

int mem_reg_get(struct drv_instance *di, const void *addr, size_t len,
		struct mem_reg **out)
{
	struct mem_reg *m = calloc(1, sizeof *m);
	if (!m)
		return MRAIL_ERR_NOMEM;
	int rc = di->ops->rma->mr_reg(di->drv, (void *)addr, len, MEM_ACCESS,
				      &m->mr);
	if (rc) {
		mrail_error("%s: registering %zu bytes at %p failed: %s",
			    di->ops->name, len, addr, mrail_strerror(rc));
		free(m);
		return rc;
	}
	m->addr = (uintptr_t)addr;
	m->len = len;
	*out = m;
	return MRAIL_OK;
}

void mem_reg_put(struct drv_instance *di, struct mem_reg *m)
{
	if (!m)
		return;
	di->ops->rma->mr_dereg(m->mr);
	free(m);
}

void mem_fini(struct drv_instance *di)
{
	(void)di;
}
