/*
 * The identity a rail's profile is filed under, from what the engine
 * reports about the rail: used by mrail-sample when it writes profiles,
 * and by the engine and benchmarks when they look them up, so the names
 * always agree.
 */
#include "sampler/identity.h"

#include <stdio.h>
#include <string.h>

void mrail_rail_identity_of(const struct mrail_rail_info *info, unsigned rail,
			    struct mrail_rail_identity *id)
{
	char addr[64];

	memset(id, 0, sizeof *id);
	snprintf(id->driver, sizeof id->driver, "%s", info->driver);
	snprintf(id->local, sizeof id->local, "%s", info->local_if);
	id->link_mbps = info->speed_mbps;
	/* The peer side: its interface and address, without the port. */
	snprintf(addr, sizeof addr, "%s", info->remote_addr);
	char *colon = strrchr(addr, ':');
	if (colon)
		*colon = '\0';
	/* Loopback rails share one interface: tell them apart by index. */
	if (info->conn_type == 0)
		snprintf(id->peer, sizeof id->peer, "%s@%s#%u", info->remote_if,
			 addr, rail);
	else
		snprintf(id->peer, sizeof id->peer, "%s@%s", info->remote_if,
			 addr);
}
