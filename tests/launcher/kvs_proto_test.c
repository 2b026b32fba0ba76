/* Unit checks of the KVS framing, payload parsers and store (no sockets). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/kvs/kvs_proto.h"
#include "bootstrap/kvs/kvs_store.h"

static int failures;

#define EXPECT(cond)                                                      \
	do {                                                              \
		if (!(cond)) {                                            \
			fprintf(stderr, "%s:%d: failed: %s\n", __FILE__,  \
				__LINE__, #cond);                         \
			failures++;                                       \
		}                                                         \
	} while (0)

static int decode(uint8_t type, uint32_t len)
{
	uint8_t raw[MRAIL_KVS_HEADER_BYTES];
	struct mrail_kvs_header h;
	const char *why = NULL;
	mrail_kvs_header_encode(raw, type, len);
	int rc = mrail_kvs_header_decode(raw, &h, &why);
	if (rc == 0 && (h.type != type || h.length != len))
		return -2;
	return rc;
}

static void test_headers(void)
{
	uint8_t raw[MRAIL_KVS_HEADER_BYTES];
	struct mrail_kvs_header h;
	const char *why = NULL;

	EXPECT(decode(MRAIL_KVS_HELLO, 16) == 0);
	EXPECT(decode(MRAIL_KVS_HELLO, 15) == -1);
	EXPECT(decode(MRAIL_KVS_AUTH, MRAIL_KVS_AUTH_BYTES) == 0);
	EXPECT(decode(MRAIL_KVS_AUTH, MRAIL_KVS_AUTH_BYTES + 1) == -1);
	EXPECT(decode(MRAIL_KVS_PUT, MRAIL_KVS_PAYLOAD_MAX) == 0);
	EXPECT(decode(MRAIL_KVS_PUT, MRAIL_KVS_PAYLOAD_MAX + 1) == -1);
	EXPECT(decode(MRAIL_KVS_PUT, 0xffffffffu) == -1);
	EXPECT(decode(MRAIL_KVS_PUT, 2) == -1);
	EXPECT(decode(MRAIL_KVS_GET, 0) == -1);
	EXPECT(decode(MRAIL_KVS_GET, MRAIL_BOOTSTRAP_KEY_MAX) == 0);
	EXPECT(decode(MRAIL_KVS_GET, MRAIL_BOOTSTRAP_KEY_MAX + 1) == -1);
	EXPECT(decode(MRAIL_KVS_FENCE, 0) == 0);
	EXPECT(decode(MRAIL_KVS_FENCE, 1) == -1);
	EXPECT(decode(MRAIL_KVS_VALUE, MRAIL_BOOTSTRAP_VALUE_MAX) == 0);
	EXPECT(decode(MRAIL_KVS_VALUE, MRAIL_BOOTSTRAP_VALUE_MAX + 1) == -1);
	EXPECT(decode(0x7f, 0) == -1);
	EXPECT(decode(0, 0) == -1);

	mrail_kvs_header_encode(raw, MRAIL_KVS_FENCE, 0);
	raw[0] = 'G';
	EXPECT(mrail_kvs_header_decode(raw, &h, &why) == -1 &&
	       strstr(why, "magic"));
	mrail_kvs_header_encode(raw, MRAIL_KVS_FENCE, 0);
	raw[2] = MRAIL_KVS_VERSION + 1;
	EXPECT(mrail_kvs_header_decode(raw, &h, &why) == -1 &&
	       strstr(why, "version"));
	raw[2] = 0;
	EXPECT(mrail_kvs_header_decode(raw, &h, &why) == -1);
	/* A version-1 type in a version-2 frame is fine, not the reverse. */
	raw[2] = 2;
	EXPECT(mrail_kvs_header_decode(raw, &h, &why) == 0 && h.version == 2);
	mrail_kvs_header_encode(raw, MRAIL_KVS_FENCE, 0);
	EXPECT(raw[2] == 1);
	mrail_kvs_header_encode(raw, MRAIL_KVS_GET_MANY, 4);
	EXPECT(raw[2] == 2 && mrail_kvs_header_decode(raw, &h, &why) == 0);
	raw[2] = 1;
	EXPECT(mrail_kvs_header_decode(raw, &h, &why) == -1 &&
	       strstr(why, "newer"));
	EXPECT(decode(MRAIL_KVS_GET_MANY, 3) == -1);
	EXPECT(decode(MRAIL_KVS_GET_MANY, MRAIL_KVS_PAYLOAD_MAX) == 0);
	EXPECT(decode(MRAIL_KVS_GET_MANY, MRAIL_KVS_PAYLOAD_MAX + 1) == -1);
	EXPECT(decode(MRAIL_KVS_VALUES, MRAIL_KVS_VALUES_MAX) == 0);
	EXPECT(decode(MRAIL_KVS_VALUES, MRAIL_KVS_VALUES_MAX + 1) == -1);
	EXPECT(decode(MRAIL_KVS_VALUES, 6) == -1);
}

static void test_batch_parsers(void)
{
	struct mrail_kvs_iter it;
	const char *why;
	const uint8_t *k;
	size_t kl;
	uint32_t n;
	uint8_t g[] = {0, 2, 1, 'a', 3, 'b', 'c', 'd'};
	EXPECT(mrail_kvs_parse_get_many(g, sizeof g, &n, &it, &why) == 0 &&
	       n == 2);
	EXPECT(mrail_kvs_next_key(&it, &k, &kl) == 1 && kl == 1 && *k == 'a');
	EXPECT(mrail_kvs_next_key(&it, &k, &kl) == 1 && kl == 3 &&
	       !memcmp(k, "bcd", 3));
	EXPECT(mrail_kvs_next_key(&it, &k, &kl) == 0);
	EXPECT(mrail_kvs_parse_get_many(g, sizeof g - 1, &n, &it, &why) == -1);
	g[1] = 3; /* more keys announced than present */
	EXPECT(mrail_kvs_parse_get_many(g, sizeof g, &n, &it, &why) == -1);
	g[1] = 1; /* trailing bytes */
	EXPECT(mrail_kvs_parse_get_many(g, sizeof g, &n, &it, &why) == -1);
	g[1] = 0; /* no keys */
	EXPECT(mrail_kvs_parse_get_many(g, 2, &n, &it, &why) == -1);
	uint8_t z[] = {0, 1, 2, 'a', '\0'};
	EXPECT(mrail_kvs_parse_get_many(z, sizeof z, &n, &it, &why) == -1 &&
	       strstr(why, "NUL"));

	uint8_t v[] = {0, 3, 1, 0, 0, 0, 2, 'x', 'y', 0, 0, 0, 0, 0,
		       1, 0, 0, 0, 0};
	const uint8_t *val;
	size_t vl;
	int found;
	EXPECT(mrail_kvs_parse_values(v, sizeof v, &n, &it, &why) == 0 &&
	       n == 3);
	EXPECT(mrail_kvs_next_value(&it, &found, &val, &vl) == 1 && found &&
	       vl == 2 && !memcmp(val, "xy", 2));
	EXPECT(mrail_kvs_next_value(&it, &found, &val, &vl) == 1 && !found &&
	       vl == 0);
	EXPECT(mrail_kvs_next_value(&it, &found, &val, &vl) == 1 && found &&
	       vl == 0);
	EXPECT(mrail_kvs_next_value(&it, &found, &val, &vl) == 0);
	EXPECT(mrail_kvs_parse_values(v, sizeof v - 1, &n, &it, &why) == -1);
	v[9] = 2; /* bad found flag */
	EXPECT(mrail_kvs_parse_values(v, sizeof v, &n, &it, &why) == -1);
	v[9] = 0;
	v[13] = 1; /* a length on a missing key */
	EXPECT(mrail_kvs_parse_values(v, sizeof v, &n, &it, &why) == -1);
	v[13] = 0;
	v[6] = 200; /* value past the message */
	EXPECT(mrail_kvs_parse_values(v, sizeof v, &n, &it, &why) == -1);
}

static void test_put_parser(void)
{
	const uint8_t *key, *val;
	size_t klen, vlen;
	const char *why;
	uint8_t p[16] = {0, 3, 'a', 'b', 'c', 'x', 'y'};

	EXPECT(mrail_kvs_parse_put(p, 7, &key, &klen, &val, &vlen, &why) == 0);
	EXPECT(klen == 3 && !memcmp(key, "abc", 3) && vlen == 2 &&
	       !memcmp(val, "xy", 2));
	EXPECT(mrail_kvs_parse_put(p, 5, &key, &klen, &val, &vlen, &why) == 0 &&
	       vlen == 0);
	EXPECT(mrail_kvs_parse_put(p, 4, &key, &klen, &val, &vlen, &why) == -1);
	p[1] = 0;
	EXPECT(mrail_kvs_parse_put(p, 7, &key, &klen, &val, &vlen, &why) == -1);
	p[0] = 1; /* 256 > KEY_MAX */
	EXPECT(mrail_kvs_parse_put(p, 7, &key, &klen, &val, &vlen, &why) == -1);
	uint8_t q[] = {0, 2, 'a', '\0', 'v'};
	EXPECT(mrail_kvs_parse_put(q, 5, &key, &klen, &val, &vlen, &why) == -1);
}

static void test_addr_split(void)
{
	char h[64], p[8];
	EXPECT(mrail_kvs_addr_split("127.0.0.1:4000", h, sizeof h, p,
				    sizeof p) == 0 &&
	       !strcmp(h, "127.0.0.1") && !strcmp(p, "4000"));
	EXPECT(mrail_kvs_addr_split("[::1]:65535", h, sizeof h, p, sizeof p) ==
		       0 && !strcmp(h, "::1") && !strcmp(p, "65535"));
	EXPECT(mrail_kvs_addr_split("node1:9", h, sizeof h, p, sizeof p) == 0);
	const char *bad[] = {"::1:5", "host:", "host:0", "host:65536", ":80",
			     "[::1]", "[::1]5", "a:b", "nocolon", "", "[]:5",
			     "h:123456"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		EXPECT(mrail_kvs_addr_split(bad[i], h, sizeof h, p, sizeof p) ==
		       -1);
}

static void test_proofs(void)
{
	uint8_t key[16] = {1, 2, 3}, nonce[16] = {9}, a[16], b[16], c[16];
	mrail_kvs_client_proof(key, nonce, 3, a);
	mrail_kvs_server_proof(key, nonce, 3, b);
	EXPECT(!mrail_auth_mac_equal(a, b)); /* roles differ */
	mrail_kvs_client_proof(key, nonce, 4, c);
	EXPECT(!mrail_auth_mac_equal(a, c)); /* the rank is covered */
	mrail_kvs_client_proof(key, nonce, 3, c);
	EXPECT(mrail_auth_mac_equal(a, c));
}

static void test_store(void)
{
	struct mrail_kvs_store *s = mrail_kvs_store_create(1000);
	const uint8_t *v;
	size_t len;

	EXPECT(mrail_kvs_store_put(s, (const uint8_t *)"k", 1,
				   (const uint8_t *)"one", 3) == 0);
	EXPECT(mrail_kvs_store_get(s, (const uint8_t *)"k", 1, &v, &len) == 0);
	mrail_kvs_store_commit(s);
	EXPECT(mrail_kvs_store_get(s, (const uint8_t *)"k", 1, &v, &len) == 1 &&
	       len == 3 && !memcmp(v, "one", 3));
	EXPECT(mrail_kvs_store_put(s, (const uint8_t *)"k", 1,
				   (const uint8_t *)"two!", 4) == 0);
	EXPECT(mrail_kvs_store_get(s, (const uint8_t *)"k", 1, &v, &len) == 1 &&
	       len == 3); /* still the old one */
	mrail_kvs_store_commit(s);
	EXPECT(mrail_kvs_store_get(s, (const uint8_t *)"k", 1, &v, &len) == 1 &&
	       len == 4 && !memcmp(v, "two!", 4));
	EXPECT(mrail_kvs_store_put(s, (const uint8_t *)"e", 1, NULL, 0) == 0);
	mrail_kvs_store_commit(s);
	EXPECT(mrail_kvs_store_get(s, (const uint8_t *)"e", 1, &v, &len) == 1 &&
	       len == 0);
	static uint8_t big[2000];
	EXPECT(mrail_kvs_store_put(s, (const uint8_t *)"b", 1, big, 2000) ==
	       MRAIL_KVS_STORE_FULL);
	size_t before = mrail_kvs_store_bytes(s);
	/* Many keys: the table grows and the cap still holds. */
	char key[16];
	int stored = 0;
	for (int i = 0; i < 1000; i++) {
		snprintf(key, sizeof key, "key%d", i);
		if (mrail_kvs_store_put(s, (const uint8_t *)key, strlen(key),
					(const uint8_t *)"v", 1) == 0)
			stored++;
	}
	EXPECT(stored > 0 && stored < 1000);
	EXPECT(mrail_kvs_store_bytes(s) <= 1000 && mrail_kvs_store_bytes(s) >
	       before);
	mrail_kvs_store_commit(s);
	EXPECT(mrail_kvs_store_get(s, (const uint8_t *)"key0", 4, &v, &len));
	mrail_kvs_store_destroy(s);

	/* Growth past the initial bucket count keeps every key reachable. */
	s = mrail_kvs_store_create((size_t)1 << 24);
	for (int i = 0; i < 5000; i++) {
		snprintf(key, sizeof key, "key%d", i);
		EXPECT(mrail_kvs_store_put(s, (const uint8_t *)key, strlen(key),
					   (const uint8_t *)key,
					   strlen(key)) == 0);
	}
	mrail_kvs_store_commit(s);
	for (int i = 0; i < 5000; i++) {
		snprintf(key, sizeof key, "key%d", i);
		EXPECT(mrail_kvs_store_get(s, (const uint8_t *)key, strlen(key),
					   &v, &len) == 1 &&
		       len == strlen(key) && !memcmp(v, key, len));
	}
	mrail_kvs_store_destroy(s);
}

static void test_buf(void)
{
	struct mrail_kvs_buf b = {0};
	static uint8_t big[MRAIL_KVS_PAYLOAD_MAX + 1];
	struct iovec iov = {big, sizeof big};
	EXPECT(mrail_kvs_buf_frame(&b, MRAIL_KVS_PUT, &iov, 1) == -1);
	iov.iov_len = MRAIL_KVS_PAYLOAD_MAX;
	EXPECT(mrail_kvs_buf_frame(&b, MRAIL_KVS_PUT, &iov, 1) == 0);
	EXPECT(b.len == MRAIL_KVS_HEADER_BYTES + MRAIL_KVS_PAYLOAD_MAX);
	EXPECT(mrail_kvs_buf_frame(&b, MRAIL_KVS_FENCE, NULL, 0) == 0);
	EXPECT(b.len == 2 * MRAIL_KVS_HEADER_BYTES + MRAIL_KVS_PAYLOAD_MAX);
	mrail_kvs_buf_free(&b);
}

int main(void)
{
	test_headers();
	test_put_parser();
	test_batch_parsers();
	test_addr_split();
	test_proofs();
	test_store();
	test_buf();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("kvs proto/store: all checks passed\n");
	return 0;
}
