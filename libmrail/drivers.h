/*
 * Driver instances (drivers.c): one per name in MRAIL_DRIVERS, each with
 * its ops, capabilities, parameters and, for RDMA drivers, a registration
 * cache reached through mem.c.
 */
#ifndef MRAIL_LIBMRAIL_DRIVERS_H
#define MRAIL_LIBMRAIL_DRIVERS_H

#include "drivers/driver.h"

#include <stdbool.h>

struct mrail_engine;
struct mrail_regcache;
struct mrail_regcache_entry;

#define MRAIL_MAX_DRIVERS 8

/*
 * A driver instance. An engine holds one per name in MRAIL_DRIVERS; its
 * rails may serve one gate together with rails of other instances.
 */
struct drv_instance {
	struct mrail_engine *engine; /* the upcalls' engine_ctx is &this */
	const struct mrail_drv_ops *ops;
	struct mrail_drv *drv;
	struct mrail_drv_caps caps;
	unsigned index;              /* in engine->drivers */
	char params[256];            /* this driver's MRAIL_DRIVER_PARAMS */
	struct mrail_regcache *regcache; /* RDMA drivers (mem.c) */
	char rails[256];             /* its "driver:name" MRAIL_RAILS entries,
	                                names only, comma-separated */
	int planned;                 /* a peer's plan has a rail on it
	                                (pairing.c); polled less if not */
};

/* drivers.c: driver instances */
int drivers_open(struct mrail_engine *e);
void drivers_close(struct mrail_engine *e);
/* pass: the engine's progress pass count (drivers no plan uses are
 * polled only on some passes). */
int drivers_progress(struct mrail_engine *e, uint64_t pass);
/* A peer's plan has a rail on di (pairing.c): polled on every pass. */
void drivers_mark_planned(struct mrail_engine *e, struct drv_instance *di);
/* Fills fds (up to max) with the instances' wait fds; returns how many. */
unsigned drivers_wait_fds(struct mrail_engine *e, int *fds, unsigned max);
/* Before sleeping on the wait fds: arm the drivers (ops->trywait); true
 * if one has work already (progress instead of sleeping). Lock held. */
bool drivers_trywait(struct mrail_engine *e);
/* The largest eager_max_hint of the instances (0 with none). */
size_t drivers_eager_hint_max(const struct mrail_engine *e);
struct drv_instance *drivers_find(struct mrail_engine *e, const char *name);

/* mem.c: memory registration through the instance's cache; an entry's
 * handle is the driver's struct mrail_drv_mr. */
int mem_init(struct drv_instance *di);
int mem_reg_get(struct drv_instance *di, const void *addr, size_t len,
		struct mrail_regcache_entry **out);
void mem_reg_put(struct drv_instance *di, struct mrail_regcache_entry *reg);
void mem_fini(struct drv_instance *di);

#endif
