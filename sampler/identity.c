/*
 * The identity a rail's profile is filed under, from what the engine
 * reports about the rail: used by mrail-sample when it writes profiles,
 * and by the engine and benchmarks when they look them up, so the names
 * always agree.
 */
#include "sampler/identity.h"

#include <stdio.h>
#include <string.h>

/* "10.0.0.1:40123" -> "10.0.0.1"; "[fe80::1]:5" -> "[fe80::1]". */
static void host_part(char *out, size_t len, const char *addr)
{
	snprintf(out, len, "%s", addr);
	char *colon = strrchr(out, ':');
	if (colon)
		*colon = '\0';
}

void mrail_rail_identity_of(const struct mrail_rail_info *info, unsigned rail,
			    struct mrail_rail_identity *id)
{
	char addr[64], local[64];

	memset(id, 0, sizeof *id);
	snprintf(id->driver, sizeof id->driver, "%s", info->driver);
	/* The local side: interface and address, without the port. The
	 * address keeps hosts apart when they share the profile directory
	 * (a home directory on NFS, netlab's namespaces): every host may
	 * have an eth0 that reaches the same peer. */
	host_part(local, sizeof local, info->local_addr);
	if (local[0])
		snprintf(id->local, sizeof id->local, "%.15s@%.47s",
			 info->local_if, local);
	else
		snprintf(id->local, sizeof id->local, "%s", info->local_if);
	id->link_mbps = info->speed_mbps;
	/* The peer side: its interface and address, without the port. */
	host_part(addr, sizeof addr, info->remote_addr);
	/* Loopback rails share one interface: tell them apart by index. */
	if (info->conn_type == 0)
		snprintf(id->peer, sizeof id->peer, "%s@%s#%u", info->remote_if,
			 addr, rail);
	else
		snprintf(id->peer, sizeof id->peer, "%s@%s", info->remote_if,
			 addr);
}
