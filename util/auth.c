#include "util/auth.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

static uint64_t load64_le(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static void store64_le(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

#define SIPROUND                                                          \
	do {                                                              \
		v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32); \
		v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                    \
		v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                    \
		v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32); \
	} while (0)

void mrail_auth_mac(const uint8_t key[MRAIL_AUTH_KEY_BYTES], const void *msg,
		    size_t len, uint8_t mac[MRAIL_AUTH_MAC_BYTES])
{
	const uint8_t *in = msg;
	uint64_t k0 = load64_le(key), k1 = load64_le(key + 8);
	uint64_t v0 = 0x736f6d6570736575ULL ^ k0;
	uint64_t v1 = 0x646f72616e646f6dULL ^ k1 ^ 0xee;
	uint64_t v2 = 0x6c7967656e657261ULL ^ k0;
	uint64_t v3 = 0x7465646279746573ULL ^ k1;
	uint64_t b = (uint64_t)len << 56, m;
	size_t full = len - (len % 8);

	for (size_t i = 0; i < full; i += 8) {
		m = load64_le(in + i);
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	for (size_t i = 0; i < len % 8; i++)
		b |= (uint64_t)in[full + i] << (8 * i);
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xee;
	for (int i = 0; i < 4; i++)
		SIPROUND;
	store64_le(mac, v0 ^ v1 ^ v2 ^ v3);
	v1 ^= 0xdd;
	for (int i = 0; i < 4; i++)
		SIPROUND;
	store64_le(mac + 8, v0 ^ v1 ^ v2 ^ v3);
}

int mrail_auth_mac_equal(const uint8_t a[MRAIL_AUTH_MAC_BYTES],
			 const uint8_t b[MRAIL_AUTH_MAC_BYTES])
{
	uint8_t diff = 0;
	for (int i = 0; i < MRAIL_AUTH_MAC_BYTES; i++)
		diff |= a[i] ^ b[i];
	return diff == 0;
}

int mrail_auth_random(void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = getrandom(p, len, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int mrail_auth_key_parse(const char *hex, uint8_t key[MRAIL_AUTH_KEY_BYTES])
{
	if (!hex || strlen(hex) != 2 * MRAIL_AUTH_KEY_BYTES)
		return -1;
	for (int i = 0; i < MRAIL_AUTH_KEY_BYTES; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		key[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

void mrail_auth_key_format(const uint8_t key[MRAIL_AUTH_KEY_BYTES],
			   char hex[2 * MRAIL_AUTH_KEY_BYTES + 1])
{
	static const char digits[] = "0123456789abcdef";
	for (int i = 0; i < MRAIL_AUTH_KEY_BYTES; i++) {
		hex[2 * i] = digits[key[i] >> 4];
		hex[2 * i + 1] = digits[key[i] & 15];
	}
	hex[2 * MRAIL_AUTH_KEY_BYTES] = '\0';
}
