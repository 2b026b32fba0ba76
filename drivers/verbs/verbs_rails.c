/*
 * Verbs driver rails: one per active HCA port, with the nominal model
 * the engine plans with before any sampling (link speed from
 * ibv_query_port) and the order it pairs them in (HCAs near the
 * process's CPUs first, from hwloc). docs/driver-verbs.md, "Capabilities
 * and rails".
 */
#include "drivers/verbs/verbs_internal.h"
#include "util/log.h"

#include <stdio.h>
#include <string.h>

/* ---- rails: speed and locality ----------------------------------------- */

/* Data rate of one lane (Gbit/s, after line encoding) by active_speed. */
static double lane_gbps(uint8_t speed)
{
	switch (speed) {
	case 1: return 2.0;     /* SDR */
	case 2: return 4.0;     /* DDR */
	case 4: return 8.0;     /* QDR */
	case 8: return 10.0;    /* FDR10 */
	case 16: return 13.64;  /* FDR */
	case 32: return 25.0;   /* EDR */
	case 64: return 50.0;   /* HDR */
	case 128: return 100.0; /* NDR */
	case 255: return 200.0; /* XDR (reported as 255 by some stacks) */
	default: return 0;
	}
}

static int lanes(uint8_t width)
{
	switch (width) {
	case 1: return 1;
	case 2: return 4;
	case 4: return 8;
	case 8: return 12;
	case 16: return 2;
	default: return 0;
	}
}

static void port_fabric(struct vb_port *p)
{
	const uint8_t *g = p->gid.raw;

	/* IB: the subnet prefix; RoCE: the GID's subnet (its upper half). */
	snprintf(p->fabric, sizeof p->fabric,
		 "%s:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
		 p->eth ? "roce" : "ib", g[0], g[1], g[2], g[3], g[4], g[5],
		 g[6], g[7]);
}

void vb_locality(struct mrail_drv *drv, struct ibv_device **list)
{
	hwloc_topology_t topo;
	hwloc_bitmap_t mine, set;

	for (int i = 0; i < drv->ndev; i++)
		drv->devs[i].near = true;
	if (hwloc_topology_init(&topo) < 0)
		return;
	if (hwloc_topology_load(topo) == 0) {
		mine = hwloc_bitmap_alloc();
		set = hwloc_bitmap_alloc();
		if (hwloc_get_cpubind(topo, mine, HWLOC_CPUBIND_PROCESS) < 0)
			hwloc_bitmap_copy(mine,
					  hwloc_topology_get_complete_cpuset(topo));
		for (int i = 0; i < drv->ndev; i++)
			if (drv->api->device_cpuset(topo, list[i], set) == 0)
				drv->devs[i].near =
					hwloc_bitmap_intersects(set, mine);
		hwloc_bitmap_free(mine);
		hwloc_bitmap_free(set);
	}
	hwloc_topology_destroy(topo);
}

void vb_add_ports(struct mrail_drv *drv, struct vb_dev *d, int nports)
{
	for (int pn = 1; pn <= nports && drv->nports < VB_MAX_RAILS; pn++) {
		struct vb_port *p = &drv->ports[drv->nports];
		memset(p, 0, sizeof *p);
		p->dev = d;
		p->num = (uint8_t)pn;
		if (drv->api->query_port(d->ctx, p->num, &p->attr) ||
		    p->attr.state != IBV_PORT_ACTIVE) {
			mrail_debug("verbs: %s:%d is not active", d->name, pn);
			continue;
		}
		if (drv->api->query_gid(d->ctx, p->num, drv->gid_index,
					&p->gid)) {
			mrail_warn("verbs: %s:%d: no GID %d (gid_index)", d->name,
				   pn, drv->gid_index);
			continue;
		}
		p->eth = p->attr.link_layer == IBV_LINK_LAYER_ETHERNET;
		snprintf(p->name, sizeof p->name, "%.27s:%u", d->name,
			 (unsigned)p->num);
		port_fabric(p);
		p->bw = lane_gbps(p->attr.active_speed) *
			lanes(p->attr.active_width) * 1e9 / 8;
		drv->nports++;
	}
}

/* Rails on the devices nearest our CPUs first (the engine pairs rails in
 * listing order); stable otherwise. */
void vb_order_ports(struct mrail_drv *drv)
{
	struct vb_port tmp[VB_MAX_RAILS];
	int n = 0;

	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < drv->nports; i++)
			if (drv->ports[i].dev->near == (pass == 0))
				tmp[n++] = drv->ports[i];
	memcpy(drv->ports, tmp, sizeof tmp[0] * (size_t)n);
}

int vb_list_rails(struct mrail_drv *drv, struct mrail_drv_rail_desc *out,
			 int max)
{
	int n;

	if (!drv || (max > 0 && !out))
		return MRAIL_ERR_INVALID;
	for (n = 0; n < drv->nports && n < max; n++) {
		struct mrail_drv_rail_desc *d = &out[n];
		const struct vb_port *p = &drv->ports[n];
		memset(d, 0, sizeof *d);
		snprintf(d->name, sizeof d->name, "%s", p->name);
		snprintf(d->fabric, sizeof d->fabric, "%s", p->fabric);
		snprintf(d->listen, sizeof d->listen, "%s", p->name);
		d->scope = MRAIL_DRV_SCOPE_FABRIC;
		d->numa_node = -1;
		d->nominal_bandwidth = p->bw;
		d->nominal_latency = 2e-6;
	}
	return n;
}
