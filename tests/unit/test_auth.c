/* SipHash-2-4-128 against the reference vectors; key parsing. */
#include "../check.h"
#include "util/auth.h"

#include <string.h>

static const struct { int len; uint8_t mac[16]; } vectors[] = {
	{0, {0xa3, 0x81, 0x7f, 0x04, 0xba, 0x25, 0xa8, 0xe6, 0x6d, 0xf6, 0x72,
	     0x14, 0xc7, 0x55, 0x02, 0x93}},
	{1, {0xda, 0x87, 0xc1, 0xd8, 0x6b, 0x99, 0xaf, 0x44, 0x34, 0x76, 0x59,
	     0x11, 0x9b, 0x22, 0xfc, 0x45}},
	{7, {0xa1, 0xf1, 0xeb, 0xbe, 0xd8, 0xdb, 0xc1, 0x53, 0xc0, 0xb8, 0x4a,
	     0xa6, 0x1f, 0xf0, 0x82, 0x39}},
	{8, {0x3b, 0x62, 0xa9, 0xba, 0x62, 0x58, 0xf5, 0x61, 0x0f, 0x83, 0xe2,
	     0x64, 0xf3, 0x14, 0x97, 0xb4}},
	{15, {0x54, 0x93, 0xe9, 0x99, 0x33, 0xb0, 0xa8, 0x11, 0x7e, 0x08, 0xec,
	      0x0f, 0x97, 0xcf, 0xc3, 0xd9}},
};

int main(void)
{
	uint8_t key[16], msg[64], mac[16];
	for (int i = 0; i < 16; i++)
		key[i] = (uint8_t)i;
	for (int i = 0; i < 64; i++)
		msg[i] = (uint8_t)i;
	for (size_t v = 0; v < sizeof vectors / sizeof *vectors; v++) {
		mrail_auth_mac(key, msg, (size_t)vectors[v].len, mac);
		CHECK(!memcmp(mac, vectors[v].mac, 16));
		CHECK(mrail_auth_mac_equal(mac, vectors[v].mac));
		mac[15] ^= 1;
		CHECK(!mrail_auth_mac_equal(mac, vectors[v].mac));
	}
	char hex[33];
	uint8_t back[16];
	mrail_auth_key_format(key, hex);
	CHECK(!strcmp(hex, "000102030405060708090a0b0c0d0e0f"));
	CHECK(mrail_auth_key_parse(hex, back) == 0 && !memcmp(back, key, 16));
	CHECK(mrail_auth_key_parse("000102", back) == -1);
	CHECK(mrail_auth_key_parse("zz0102030405060708090a0b0c0d0e0f", back) == -1);
	uint8_t r1[16] = {0}, r2[16] = {0};
	CHECK(mrail_auth_random(r1, 16) == 0 && mrail_auth_random(r2, 16) == 0);
	CHECK(memcmp(r1, r2, 16) != 0);
	puts("test_auth: ok");
	return 0;
}
