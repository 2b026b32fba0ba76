/*
 * TCP driver addresses: local address resolution, the peer-facing address
 * blob, printable names and interface speed.
 *
 * Address blob, version 1 (all multi-byte fields fixed-endian so blobs can
 * cross machines):
 *   0  'T' 'C' 'P' <version = 1>
 *   4  u8 family: 4 or 6
 *   5  u8 reserved (0)
 *   6  u16 port, big-endian (network order)
 *   8  u32 IPv6 scope id, little-endian (0 for IPv4)
 *  12  address: 4 bytes (IPv4) or 16 bytes (IPv6)
 */
#include "drivers/tcp/tcp_internal.h"
#include "rails/netaddr.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TCP_BLOB_VERSION 1
#define TCP_BLOB_FIXED_LEN 12

static void any_addr(int family, struct sockaddr_storage *ss, socklen_t *len)
{
	memset(ss, 0, sizeof *ss);
	if (family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_any;
		*len = sizeof *s6;
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
		s4->sin_family = AF_INET;
		s4->sin_addr.s_addr = htonl(INADDR_ANY);
		*len = sizeof *s4;
	}
}

static int numeric_addr(const char *text, struct sockaddr_storage *ss,
			socklen_t *len)
{
	struct addrinfo hints = {
		.ai_flags = AI_NUMERICHOST | AI_PASSIVE,
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
	};
	struct addrinfo *res = NULL;

	if (getaddrinfo(text, NULL, &hints, &res) != 0 || !res)
		return -1;
	memset(ss, 0, sizeof *ss);
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static bool family_acceptable(int family, int want)
{
	if (family != AF_INET && family != AF_INET6)
		return false;
	return want == AF_UNSPEC || family == want;
}

/* Interface names are accepted too, as MRAIL_RAILS may list them. */
static int interface_addr(const char *ifname, int want_family,
			  struct sockaddr_storage *ss, socklen_t *len)
{
	struct ifaddrs *list, *it, *pick = NULL;

	if (getifaddrs(&list) < 0)
		return -1;
	for (it = list; it; it = it->ifa_next) {
		if (!it->ifa_addr || strcmp(it->ifa_name, ifname) != 0)
			continue;
		int family = it->ifa_addr->sa_family;
		if (!family_acceptable(family, want_family))
			continue;
		/* With no family wish, IPv4 wins: it needs no scope. */
		if (!pick || (family == AF_INET &&
			      pick->ifa_addr->sa_family != AF_INET))
			pick = it;
	}
	if (pick) {
		*len = pick->ifa_addr->sa_family == AF_INET
			       ? sizeof(struct sockaddr_in)
			       : sizeof(struct sockaddr_in6);
		memset(ss, 0, sizeof *ss);
		memcpy(ss, pick->ifa_addr, *len);
	}
	freeifaddrs(list);
	return pick ? 0 : -1;
}

int tcp_local_addr(const char *local, int want_family,
		   struct sockaddr_storage *ss, socklen_t *len)
{
	if (!local || !*local) {
		any_addr(want_family, ss, len);
		return 0;
	}
	if (numeric_addr(local, ss, len) == 0)
		return 0;
	if (interface_addr(local, want_family, ss, len) == 0)
		return 0;
	mrail_error("tcp: local address '%s' is neither an IP address nor an "
		    "interface with an %s address",
		    local,
		    want_family == AF_INET6	 ? "IPv6"
		    : want_family == AF_INET ? "IPv4"
					     : "IP");
	return MRAIL_ERR_INVALID;
}

int tcp_blob_encode(const struct sockaddr_storage *ss, void *blob,
		    size_t *blob_len)
{
	uint8_t *b = blob;
	size_t need = ss->ss_family == AF_INET6 ? TCP_BLOB_V6_LEN
						: TCP_BLOB_V4_LEN;
	if (*blob_len < need) {
		mrail_error("tcp: address buffer of %zu bytes too small "
			    "(need %zu)",
			    *blob_len, need);
		*blob_len = need;
		return MRAIL_ERR_INVALID;
	}
	memset(b, 0, need);
	memcpy(b, "TCP", 3);
	b[3] = TCP_BLOB_VERSION;
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)ss;
		b[4] = 6;
		memcpy(b + 6, &s6->sin6_port, 2); /* already big-endian */
		tcp_put_le32(b + 8, s6->sin6_scope_id);
		memcpy(b + 12, &s6->sin6_addr, 16);
	} else {
		const struct sockaddr_in *s4 = (const void *)ss;
		b[4] = 4;
		memcpy(b + 6, &s4->sin_port, 2);
		memcpy(b + 12, &s4->sin_addr, 4);
	}
	*blob_len = need;
	return 0;
}

int tcp_blob_decode(const void *blob, size_t blob_len,
		    struct sockaddr_storage *ss, socklen_t *len)
{
	const uint8_t *b = blob;
	uint16_t port_be;

	if (!blob || blob_len < TCP_BLOB_FIXED_LEN) {
		mrail_error("tcp: peer address of %zu bytes is too short for a "
			    "tcp address",
			    blob_len);
		return MRAIL_ERR_INVALID;
	}
	if (memcmp(b, "TCP", 3) != 0) {
		mrail_error("tcp: peer address is not a tcp driver address");
		return MRAIL_ERR_INVALID;
	}
	if (b[3] != TCP_BLOB_VERSION) {
		mrail_error("tcp: peer address has version %u, this driver "
			    "understands version %u",
			    b[3], TCP_BLOB_VERSION);
		return MRAIL_ERR_INVALID;
	}
	memcpy(&port_be, b + 6, 2);
	if (port_be == 0) {
		mrail_error("tcp: peer address has port 0");
		return MRAIL_ERR_INVALID;
	}
	memset(ss, 0, sizeof *ss);
	if (b[4] == 4 && blob_len == TCP_BLOB_V4_LEN) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
		s4->sin_family = AF_INET;
		s4->sin_port = port_be;
		memcpy(&s4->sin_addr, b + 12, 4);
		*len = sizeof *s4;
		return 0;
	}
	if (b[4] == 6 && blob_len == TCP_BLOB_V6_LEN) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = port_be;
		s6->sin6_scope_id = tcp_get_le32(b + 8);
		memcpy(&s6->sin6_addr, b + 12, 16);
		*len = sizeof *s6;
		return 0;
	}
	mrail_error("tcp: peer address has family %u and length %zu (expected "
		    "4 with %d bytes or 6 with %d bytes)",
		    b[4], blob_len, TCP_BLOB_V4_LEN, TCP_BLOB_V6_LEN);
	return MRAIL_ERR_INVALID;
}

void tcp_sockaddr_name(const struct sockaddr_storage *ss, char *name,
		       size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	char scope[IF_NAMESIZE + 1] = "";

	if (!name || len == 0)
		return;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)ss;
		inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof ip);
		snprintf(name, len, "%s:%u", ip, ntohs(s4->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)ss;
		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof ip);
		if (s6->sin6_scope_id) {
			scope[0] = '%';
			if (!if_indextoname(s6->sin6_scope_id, scope + 1))
				snprintf(scope, sizeof scope, "%%%u",
					 (unsigned)s6->sin6_scope_id);
		}
		snprintf(name, len, "[%s%s]:%u", ip, scope,
			 ntohs(s6->sin6_port));
	} else {
		snprintf(name, len, "?");
	}
}

void tcp_fd_names(int fd, char *local, size_t llen, char *remote,
		  size_t rlen)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;

	if (local && llen) {
		memset(&ss, 0, sizeof ss);
		if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
			tcp_sockaddr_name(&ss, local, llen);
		else
			snprintf(local, llen, "?");
	}
	sl = sizeof ss;
	if (remote && rlen) {
		memset(&ss, 0, sizeof ss);
		if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
			tcp_sockaddr_name(&ss, remote, rlen);
		else
			snprintf(remote, rlen, "?");
	}
}

static bool same_ip(const struct sockaddr *a, const struct sockaddr_storage *b)
{
	if (a->sa_family != b->ss_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		       &((const struct sockaddr_in6 *)b)->sin6_addr,
		       sizeof(struct in6_addr));
}

static double interface_speed(const char *ifname)
{
	char path[64 + IF_NAMESIZE];
	long mbits = -1;
	FILE *f;

	snprintf(path, sizeof path, "/sys/class/net/%s/speed", ifname);
	f = fopen(path, "r");
	if (!f)
		return 0;
	/* Virtual and down links report -1 or fail the read: unknown. */
	if (fscanf(f, "%ld", &mbits) != 1)
		mbits = -1;
	fclose(f);
	return mbits > 0 ? (double)mbits * 1e6 / 8 : 0;
}

double tcp_addr_bandwidth(const struct sockaddr_storage *ss)
{
	struct ifaddrs *list, *it;
	double bw = 0;

	/* lo has no speed in sysfs; and the interface dump this saves was
	 * 5 % of all the CPU of a 1024-rank start on one host. */
	if (mrail_sockaddr_is_loopback((const struct sockaddr *)ss))
		return 0;
	if (getifaddrs(&list) < 0)
		return 0;
	for (it = list; it; it = it->ifa_next) {
		if (it->ifa_addr && same_ip(it->ifa_addr, ss)) {
			bw = interface_speed(it->ifa_name);
			break;
		}
	}
	freeifaddrs(list);
	return bw;
}
