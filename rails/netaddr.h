/*
 * Small helpers on struct mrail_netif_addr shared by interface discovery,
 * filtering and address selection: classification (what the thesis calls
 * private / public), prefix comparison, text conversion.
 */
#ifndef MRAIL_RAILS_NETADDR_H
#define MRAIL_RAILS_NETADDR_H

#include "rails/netif.h"

#include <stddef.h>
#include <sys/socket.h>

/* Family 4 or 6 and a prefix length that fits it. Peer tables come from
 * the network, so selection checks this before trusting an address. */
int mrail_netaddr_valid(const struct mrail_netif_addr *a);

/* Same family and address (prefix lengths ignored). */
int mrail_netaddr_equal(const struct mrail_netif_addr *a,
			const struct mrail_netif_addr *b);

/* Order: IPv4 before IPv6, then numerically (memcmp-like result). */
int mrail_netaddr_cmp(const struct mrail_netif_addr *a,
		      const struct mrail_netif_addr *b);

/* The first `bits` bits of a and b are equal (same family required). */
int mrail_netaddr_prefix_equal(const struct mrail_netif_addr *a,
			       const struct mrail_netif_addr *b,
			       unsigned bits);

/* 127/8 and ::1. */
int mrail_netaddr_is_loopback(const struct mrail_netif_addr *a);
/* The same for a socket address (not AF_INET or AF_INET6: 0). */
int mrail_sockaddr_is_loopback(const struct sockaddr *sa);

/*
 * Private IPv4: RFC 1918 (10/8, 172.16/12, 192.168/16) and the IPv4
 * link-local 169.254/16 (RFC 3927, never routed; Open MPI's default
 * private list has it too). IPv6 is never private: the thesis (table 3.1,
 * section 3.2) classes every IPv6 address with the public ones.
 */
int mrail_netaddr_is_private(const struct mrail_netif_addr *a);

/* IPv6 link-local fe80::/10: unreachable without a scope id. */
int mrail_netaddr_is_v6_linklocal(const struct mrail_netif_addr *a);

/* Never a connection endpoint: 0/8, multicast and reserved IPv4 (224/3,
 * broadcast included); IPv6 unspecified, multicast, IPv4-mapped and
 * link-local. */
int mrail_netaddr_is_unusable(const struct mrail_netif_addr *a);

/*
 * Parse "10.0.0.1", "2001:db8::1", or with a "/len" suffix. Returns 1 for
 * an address without suffix, 2 with one (out->prefix_len set), 0 when s is
 * no address (then it may be an interface name), -1 when s has a '/' but is
 * no valid network.
 */
int mrail_netaddr_parse(const char *s, struct mrail_netif_addr *out);

/* "10.0.0.1" (without prefix); "?" for an invalid family. */
void mrail_netaddr_ntop(const struct mrail_netif_addr *a, char *buf,
			size_t len);

/* snprintf at buf + *used, advancing *used; output is cut (never
 * overflowed) when buf is full, and always NUL-terminated if len > 0. */
void mrail_rails_appendf(char *buf, size_t len, size_t *used,
			 const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
