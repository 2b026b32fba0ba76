/*
 * Network interfaces of this host, as the rail selection sees them
 * (getifaddrs + sysfs + hwloc). Published to peers inside the address
 * blob, so the layout of these structs is part of docs/wire.md.
 */
#ifndef MRAIL_RAILS_NETIF_H
#define MRAIL_RAILS_NETIF_H

#include <stddef.h>
#include <stdint.h>

#define MRAIL_NETIF_NAME_MAX 16
#define MRAIL_NETIF_ADDRS_MAX 8
#define MRAIL_NETIF_MAX 64

enum mrail_netif_flags {
	MRAIL_NETIF_LOOPBACK = 1u << 0,
	MRAIL_NETIF_UP = 1u << 1,
};

struct mrail_netif_addr {
	uint8_t family;     /* 4 or 6 */
	uint8_t prefix_len; /* 0..32 / 0..128 */
	uint8_t addr[16];   /* network byte order; IPv4 in the first 4 bytes */
};

struct mrail_netif {
	char name[MRAIL_NETIF_NAME_MAX];
	unsigned flags;      /* MRAIL_NETIF_* */
	unsigned mtu;
	uint64_t speed_mbps; /* 0 if unknown (sysfs speed) */
	int numa_node;       /* -1 if unknown (hwloc / sysfs) */
	char cpuset[64];     /* hwloc cpuset string of the device, "" if unknown */
	unsigned naddrs;
	struct mrail_netif_addr addrs[MRAIL_NETIF_ADDRS_MAX];
};

/*
 * The interfaces that are up, with their IPv4 and IPv6 addresses (IPv6
 * link-local addresses left out: they need a scope to be reachable).
 * Fills at most `max`; returns 0 or a negative MRAIL_ERR_*.
 */
int mrail_netif_discover(struct mrail_netif *out, unsigned max, unsigned *n);

/*
 * Keep the interfaces named in `include` (comma list of interface names or
 * addresses; NULL = all) and drop those in `exclude`. An entry of
 * `include` that matches nothing is an error: returns MRAIL_ERR_CONFIG and
 * writes why (naming the entry and the interfaces there are) into err.
 */
int mrail_netif_filter(struct mrail_netif *ifs, unsigned *n,
		       const char *include, const char *exclude, char *err,
		       size_t errlen);

/* "eth0 10.0.0.1/24 2001:db8::1/64" for logs and error messages. */
void mrail_netif_format(const struct mrail_netif *nif, char *buf, size_t len);

#endif
