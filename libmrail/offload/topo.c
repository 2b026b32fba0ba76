/*
 * hwloc: the machine's cores and NUMA nodes, which cores the process is
 * bound to, and which cores sit near a NIC. HWLOC_XMLFILE (read by hwloc
 * itself) replaces the machine, so tests check layouts this host lacks.
 */
#include "libmrail/offload/offload.h"
#include "util/log.h"

#include <string.h>

int offload_topo_load(struct offload_topo *t)
{
	memset(t, 0, sizeof *t);
	if (hwloc_topology_init(&t->topo))
		return MRAIL_ERR_NOMEM;
	/* NICs are I/O objects: keep them (PCI bridges too, for locality). */
	hwloc_topology_set_io_types_filter(t->topo,
					   HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	/* hwloc's pci component (libpciaccess) leaks at every load (LSan,
	 * 1 KiB); the linux component still places network and OpenFabrics
	 * devices by their sysfs local_cpus, which is all we read. */
	hwloc_topology_set_components(t->topo,
				      HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST,
				      "pci");
	if (hwloc_topology_load(t->topo)) {
		mrail_warn("offload: hwloc could not load the topology");
		hwloc_topology_destroy(t->topo);
		t->topo = NULL;
		return MRAIL_ERR_IO;
	}
	int n = hwloc_get_nbobjs_by_type(t->topo, HWLOC_OBJ_CORE);
	t->ncores = n > 0 ? (unsigned)n : 0;
	if (t->ncores > 64)
		t->ncores = 64; /* masks are 64 bits; more cores: first 64 */
	n = hwloc_get_nbobjs_by_type(t->topo, HWLOC_OBJ_NUMANODE);
	t->nnuma = n > 0 ? (unsigned)n : 0;
	return MRAIL_OK;
}

void offload_topo_free(struct offload_topo *t)
{
	if (t->topo)
		hwloc_topology_destroy(t->topo);
	t->topo = NULL;
}

/* Bit i set when core i shares a PU with set. */
static uint64_t cores_in(const struct offload_topo *t, hwloc_const_bitmap_t set)
{
	uint64_t m = 0;
	for (unsigned i = 0; i < t->ncores; i++) {
		hwloc_obj_t c = hwloc_get_obj_by_type(t->topo, HWLOC_OBJ_CORE, i);
		if (c && hwloc_bitmap_intersects(c->cpuset, set))
			m |= (uint64_t)1 << i;
	}
	return m;
}

static uint64_t all_cores(const struct offload_topo *t)
{
	return t->ncores >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << t->ncores) - 1;
}

uint64_t offload_topo_near(const struct offload_topo *t, const char *ifname,
			   int *known)
{
	*known = 0;
	if (!t->topo || !ifname || !*ifname)
		return all_cores(t);
	hwloc_obj_t os = NULL;
	while ((os = hwloc_get_next_osdev(t->topo, os)))
		if (os->name && !strcmp(os->name, ifname) &&
		    (os->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK ||
		     os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS))
			break;
	if (!os)
		return all_cores(t);
	hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t->topo, os);
	if (!anc || !anc->cpuset)
		return all_cores(t);
	uint64_t m = cores_in(t, anc->cpuset);
	if (!m)
		return all_cores(t);
	*known = 1;
	return m;
}

uint64_t offload_topo_bound(const struct offload_topo *t)
{
	if (!t->topo)
		return 0;
	hwloc_bitmap_t set = hwloc_bitmap_alloc();
	uint64_t m = all_cores(t);
	if (set && hwloc_get_cpubind(t->topo, set, HWLOC_CPUBIND_PROCESS) == 0)
		m = cores_in(t, set);
	hwloc_bitmap_free(set);
	return m;
}

int offload_topo_core_pu(const struct offload_topo *t, unsigned core)
{
	hwloc_obj_t c = hwloc_get_obj_by_type(t->topo, HWLOC_OBJ_CORE, core);
	if (!c || !c->cpuset)
		return -1;
	return hwloc_bitmap_first(c->cpuset);
}
