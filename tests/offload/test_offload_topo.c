/*
 * Topology and core choice on layouts this machine lacks (hwloc XML:
 * 2 packages x 4 cores, NIC eth9 under package 1), and the strict parsing
 * of MRAIL_OFFLOAD_CORES. Argument: the XML file.
 */
#include "libmrail/offload/offload.h"
#include "../check.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	struct offload_topo t;
	uint64_t m;
	int known;

	CHECK(argc == 2);
	CHECK(setenv("HWLOC_XMLFILE", argv[1], 1) == 0);
	/* The XML is not this machine: do not let hwloc refuse it. */
	CHECK(setenv("HWLOC_THISSYSTEM", "0", 1) == 0);
	CHECK(offload_topo_load(&t) == MRAIL_OK);
	CHECK(t.ncores == 8);
	CHECK(t.nnuma == 2);
	/* NIC locality: eth9 hangs under package 1 (cores 4-7). */
	CHECK(offload_topo_near(&t, "eth9", &known) == 0xf0 && known);
	/* Unknown to hwloc (veth, lo): the whole machine. */
	CHECK(offload_topo_near(&t, "lo", &known) == 0xff && !known);
	CHECK(offload_topo_core_pu(&t, 5) == 5);
	offload_topo_free(&t);

	/* MRAIL_OFFLOAD_CORES parsing. */
	CHECK(offload_parse_cores(NULL, 8, &m) == MRAIL_OK &&
	      m == OFFLOAD_CORES_AUTO);
	CHECK(offload_parse_cores("auto", 8, &m) == MRAIL_OK &&
	      m == OFFLOAD_CORES_AUTO);
	CHECK(offload_parse_cores("none", 8, &m) == MRAIL_OK && m == 0);
	CHECK(offload_parse_cores("1,4-6", 8, &m) == MRAIL_OK && m == 0x72);
	CHECK(offload_parse_cores("8", 8, &m) == MRAIL_ERR_CONFIG);
	CHECK(offload_parse_cores("3-1", 8, &m) == MRAIL_ERR_CONFIG);
	CHECK(offload_parse_cores("1,", 8, &m) == MRAIL_ERR_CONFIG);
	CHECK(offload_parse_cores("1;2", 8, &m) == MRAIL_ERR_CONFIG);
	CHECK(offload_parse_cores("", 8, &m) == MRAIL_ERR_CONFIG);
	CHECK(offload_parse_cores("Auto", 8, &m) == MRAIL_ERR_CONFIG);
	CHECK(offload_parse_cores("-1", 8, &m) == MRAIL_ERR_CONFIG);

	/* Core choice: 2 unbound local ranks on 8 cores take cores 0-1;
	 * the other 6 are shared round robin. */
	CHECK(offload_choose_cores(OFFLOAD_CORES_AUTO, 8, 0xff, 1, 0, 2) ==
	      0x54); /* 2, 4, 6 */
	CHECK(offload_choose_cores(OFFLOAD_CORES_AUTO, 8, 0xff, 1, 1, 2) ==
	      0xa8); /* 3, 5, 7 */
	/* One rank bound to cores 0-3: only 4-7 (core 0 is its own). */
	CHECK(offload_choose_cores(OFFLOAD_CORES_AUTO, 8, 0x0f, 0, 0, 1) ==
	      0xf0);
	/* 8 ranks on 8 cores: nothing idle, offload steps aside. */
	CHECK(offload_choose_cores(OFFLOAD_CORES_AUTO, 8, 0xff, 1, 3, 8) == 0);
	/* An explicit list is taken as it is, by every rank. */
	CHECK(offload_choose_cores(0x3, 2, 0x3, 1, 1, 2) == 0x3);
	puts("topology, parsing and core choice ok");
	return 0;
}
