/*
 * The mrail-run KVS protocol's frame parsers (bootstrap/kvs/kvs_proto.c,
 * docs/bootstrap.md), shared by the service (frames from ranks) and the
 * client (frames from the service): header, AUTH, PUT, GET_MANY requests
 * and VALUES replies, and MRAIL_KVS_ADDR.
 * Input: one byte choosing the parser, then its bytes.
 */
#include "fuzz.h"
#include "bootstrap/kvs/kvs_proto.h"

#include <string.h>

static void header(const uint8_t *p, size_t n)
{
	uint8_t raw[MRAIL_KVS_HEADER_BYTES] = {0};
	struct mrail_kvs_header h;
	const char *why = NULL;
	memcpy(raw, p, n < sizeof raw ? n : sizeof raw);
	if (mrail_kvs_header_decode(raw, &h, &why) == 0) {
		FUZZ_CHECK(h.length <= MRAIL_KVS_FRAME_MAX);
		FUZZ_CHECK(strcmp(mrail_kvs_type_name(h.type), "unknown"));
		uint8_t again[MRAIL_KVS_HEADER_BYTES];
		mrail_kvs_header_encode(again, h.type, h.length);
		again[2] = h.version;
		FUZZ_CHECK(!memcmp(raw, again, sizeof raw));
	} else {
		FUZZ_CHECK(why != NULL);
	}
}

static void put(const uint8_t *p, size_t n)
{
	const uint8_t *key, *val;
	size_t klen, vlen;
	const char *why;
	if (mrail_kvs_parse_put(p, n, &key, &klen, &val, &vlen, &why) == 0) {
		FUZZ_CHECK(klen >= 1 && klen <= MRAIL_BOOTSTRAP_KEY_MAX);
		FUZZ_CHECK(vlen <= MRAIL_BOOTSTRAP_VALUE_MAX);
		FUZZ_CHECK(key >= p && val + vlen == p + n);
		FUZZ_CHECK(!memchr(key, '\0', klen));
		fuzz_touch(val, vlen);
	}
}

static void auth(const uint8_t *p, size_t n)
{
	struct mrail_kvs_auth a;
	const char *why;
	uint8_t out[MRAIL_KVS_AUTH_BYTES];
	if (mrail_kvs_parse_auth(p, n, &a, &why) == 0) {
		mrail_kvs_auth_encode(&a, out);
		FUZZ_CHECK(n == sizeof out && !memcmp(out, p, n));
	}
}

static void addr(const uint8_t *p, size_t n)
{
	char *s = fuzz_strndup(p, n);
	char host[64], port[8];
	if (mrail_kvs_addr_split(s, host, sizeof host, port, sizeof port) ==
	    0) {
		FUZZ_CHECK(host[0] && strlen(host) < sizeof host);
		unsigned long v = strtoul(port, NULL, 10);
		FUZZ_CHECK(v >= 1 && v <= 65535);
	}
	free(s);
}

static void get_many(const uint8_t *p, size_t n)
{
	struct mrail_kvs_iter it;
	const char *why = NULL;
	uint32_t count;
	if (mrail_kvs_parse_get_many(p, n, &count, &it, &why) < 0) {
		FUZZ_CHECK(why != NULL);
		return;
	}
	FUZZ_CHECK(count >= 1 && count <= MRAIL_KVS_BATCH_KEYS_MAX);
	const uint8_t *key;
	size_t klen;
	uint32_t seen = 0;
	while (mrail_kvs_next_key(&it, &key, &klen)) {
		FUZZ_CHECK(klen >= 1 && klen <= MRAIL_BOOTSTRAP_KEY_MAX);
		FUZZ_CHECK(key >= p && key + klen <= p + n);
		FUZZ_CHECK(!memchr(key, '\0', klen));
		seen++;
	}
	FUZZ_CHECK(seen == count);
}

static void values(const uint8_t *p, size_t n)
{
	struct mrail_kvs_iter it;
	const char *why = NULL;
	uint32_t count;
	if (mrail_kvs_parse_values(p, n, &count, &it, &why) < 0) {
		FUZZ_CHECK(why != NULL);
		return;
	}
	const uint8_t *val;
	size_t vlen;
	int found;
	uint32_t seen = 0;
	while (mrail_kvs_next_value(&it, &found, &val, &vlen)) {
		FUZZ_CHECK(vlen <= MRAIL_BOOTSTRAP_VALUE_MAX);
		FUZZ_CHECK(found || vlen == 0);
		FUZZ_CHECK(val >= p && val + vlen <= p + n);
		fuzz_touch(val, vlen);
		seen++;
	}
	FUZZ_CHECK(seen == count);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t n = size - 1;
	uint8_t *p = malloc(n ? n : 1); /* exact size: over-reads are caught */
	if (!p)
		return 0;
	memcpy(p, data + 1, n);
	switch (data[0] % 6) {
	case 0: header(p, n); break;
	case 1: put(p, n); break;
	case 2: auth(p, n); break;
	case 3: addr(p, n); break;
	case 4: get_many(p, n); break;
	default: values(p, n); break;
	}
	free(p);
	return 0;
}
