#include "rails/netaddr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mrail_netaddr_valid(const struct mrail_netif_addr *a)
{
	return (a->family == 4 && a->prefix_len <= 32) ||
	       (a->family == 6 && a->prefix_len <= 128);
}

/* Only the bytes of the family count: bytes 4..15 of an IPv4 address from
 * a peer need not be zero. */
static size_t addr_bytes(const struct mrail_netif_addr *a)
{
	return a->family == 4 ? 4 : 16;
}

int mrail_netaddr_equal(const struct mrail_netif_addr *a,
			const struct mrail_netif_addr *b)
{
	return a->family == b->family &&
	       !memcmp(a->addr, b->addr, addr_bytes(a));
}

int mrail_netaddr_cmp(const struct mrail_netif_addr *a,
		      const struct mrail_netif_addr *b)
{
	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	return memcmp(a->addr, b->addr, addr_bytes(a));
}

int mrail_netaddr_prefix_equal(const struct mrail_netif_addr *a,
			       const struct mrail_netif_addr *b,
			       unsigned bits)
{
	if (a->family != b->family)
		return 0;
	if (bits > 128)
		bits = 128;
	unsigned whole = bits / 8, rest = bits % 8;
	if (memcmp(a->addr, b->addr, whole))
		return 0;
	if (!rest)
		return 1;
	uint8_t mask = (uint8_t)(0xffu << (8 - rest));
	return ((a->addr[whole] ^ b->addr[whole]) & mask) == 0;
}

static const uint8_t v6_loopback[16] = {[15] = 1};
static const uint8_t v6_any[16];

int mrail_netaddr_is_loopback(const struct mrail_netif_addr *a)
{
	if (a->family == 4)
		return a->addr[0] == 127;
	return a->family == 6 && !memcmp(a->addr, v6_loopback, 16);
}

int mrail_sockaddr_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr)
			>> 24) == 127;
	return sa->sa_family == AF_INET6 &&
	       IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

int mrail_netaddr_is_private(const struct mrail_netif_addr *a)
{
	const uint8_t *b = a->addr;
	if (a->family != 4)
		return 0;
	return b[0] == 10 || (b[0] == 172 && (b[1] & 0xf0) == 16) ||
	       (b[0] == 192 && b[1] == 168) || (b[0] == 169 && b[1] == 254);
}

int mrail_netaddr_is_v6_linklocal(const struct mrail_netif_addr *a)
{
	return a->family == 6 && a->addr[0] == 0xfe &&
	       (a->addr[1] & 0xc0) == 0x80;
}

static int v6_mapped(const uint8_t *b)
{
	static const uint8_t pre[12] = {[10] = 0xff, [11] = 0xff};
	return !memcmp(b, pre, 12);
}

int mrail_netaddr_is_unusable(const struct mrail_netif_addr *a)
{
	const uint8_t *b = a->addr;
	if (a->family == 4)
		return b[0] == 0 || b[0] >= 224;
	return !memcmp(b, v6_any, 16) || b[0] == 0xff || v6_mapped(b) ||
	       mrail_netaddr_is_v6_linklocal(a);
}

/* Address text (no suffix) into out; 1 on success. */
static int parse_plain(const char *s, struct mrail_netif_addr *out)
{
	memset(out, 0, sizeof *out);
	if (inet_pton(AF_INET, s, out->addr) == 1) {
		out->family = 4;
		out->prefix_len = 32;
		return 1;
	}
	if (inet_pton(AF_INET6, s, out->addr) == 1) {
		out->family = 6;
		out->prefix_len = 128;
		return 1;
	}
	return 0;
}

int mrail_netaddr_parse(const char *s, struct mrail_netif_addr *out)
{
	const char *slash = strchr(s, '/');
	char host[INET6_ADDRSTRLEN];

	if (!slash)
		return parse_plain(s, out);
	size_t hl = (size_t)(slash - s);
	if (hl == 0 || hl >= sizeof host)
		return -1;
	memcpy(host, s, hl);
	host[hl] = '\0';
	if (!parse_plain(host, out))
		return -1;
	/* Digits only: strtoul alone would take "+8" or " 8". */
	const char *p = slash + 1;
	if (*p < '0' || *p > '9' || strlen(p) > 3 || p[strspn(p, "0123456789")])
		return -1;
	unsigned long len = strtoul(p, NULL, 10);
	if (len > (out->family == 4 ? 32u : 128u))
		return -1;
	out->prefix_len = (uint8_t)len;
	return 2;
}

void mrail_netaddr_ntop(const struct mrail_netif_addr *a, char *buf,
			size_t len)
{
	int af = a->family == 4 ? AF_INET : a->family == 6 ? AF_INET6 : -1;
	char tmp[INET6_ADDRSTRLEN];
	if (af < 0 || !inet_ntop(af, a->addr, tmp, sizeof tmp))
		snprintf(tmp, sizeof tmp, "?");
	snprintf(buf, len, "%s", tmp);
}

void mrail_rails_appendf(char *buf, size_t len, size_t *used,
			 const char *fmt, ...)
{
	va_list ap;
	if (*used >= len)
		return;
	va_start(ap, fmt);
	int k = vsnprintf(buf + *used, len - *used, fmt, ap);
	va_end(ap);
	if (k < 0)
		return;
	*used = (size_t)k >= len - *used ? len : *used + (size_t)k;
}
