#include "bootstrap/kvs/kvs_proto.h"

#include <stdlib.h>
#include <string.h>

#define CLIENT_ROLE "mrail-kvs-v1 client"
#define SERVER_ROLE "mrail-kvs-v1 server"

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

const char *mrail_kvs_type_name(uint8_t type)
{
	switch (type) {
	case MRAIL_KVS_HELLO: return "HELLO";
	case MRAIL_KVS_AUTH: return "AUTH";
	case MRAIL_KVS_AUTH_OK: return "AUTH_OK";
	case MRAIL_KVS_REJECT: return "REJECT";
	case MRAIL_KVS_PUT: return "PUT";
	case MRAIL_KVS_FENCE: return "FENCE";
	case MRAIL_KVS_GET: return "GET";
	case MRAIL_KVS_OK: return "OK";
	case MRAIL_KVS_VALUE: return "VALUE";
	case MRAIL_KVS_NOT_FOUND: return "NOT_FOUND";
	case MRAIL_KVS_ERROR: return "ERROR";
	case MRAIL_KVS_GET_MANY: return "GET_MANY";
	case MRAIL_KVS_VALUES: return "VALUES";
	default: return "unknown";
	}
}

uint8_t mrail_kvs_type_version(uint8_t type)
{
	return type == MRAIL_KVS_GET_MANY || type == MRAIL_KVS_VALUES ? 2 : 1;
}

void mrail_kvs_header_encode(uint8_t out[MRAIL_KVS_HEADER_BYTES],
			     uint8_t type, uint32_t length)
{
	out[0] = MRAIL_KVS_MAGIC0;
	out[1] = MRAIL_KVS_MAGIC1;
	out[2] = mrail_kvs_type_version(type);
	out[3] = type;
	put_be32(out + 4, length);
}

/* Allowed payload lengths per type; min > max marks an unknown type. */
static void length_bounds(uint8_t type, uint32_t *min, uint32_t *max)
{
	*min = 0;
	*max = 0;
	switch (type) {
	case MRAIL_KVS_HELLO:
		*min = *max = MRAIL_AUTH_NONCE_BYTES;
		break;
	case MRAIL_KVS_AUTH:
		*min = *max = MRAIL_KVS_AUTH_BYTES;
		break;
	case MRAIL_KVS_AUTH_OK:
		*min = *max = MRAIL_AUTH_MAC_BYTES;
		break;
	case MRAIL_KVS_REJECT:
	case MRAIL_KVS_ERROR:
		*max = MRAIL_KVS_REASON_MAX;
		break;
	case MRAIL_KVS_PUT:
		*min = 2 + 1;
		*max = MRAIL_KVS_PAYLOAD_MAX;
		break;
	case MRAIL_KVS_GET:
		*min = 1;
		*max = MRAIL_BOOTSTRAP_KEY_MAX;
		break;
	case MRAIL_KVS_VALUE:
		*max = MRAIL_BOOTSTRAP_VALUE_MAX;
		break;
	case MRAIL_KVS_GET_MANY:
		*min = 2 + 2;
		*max = MRAIL_KVS_PAYLOAD_MAX;
		break;
	case MRAIL_KVS_VALUES:
		*min = 2 + MRAIL_KVS_VALUE_ENTRY_BYTES(0);
		*max = MRAIL_KVS_VALUES_MAX;
		break;
	case MRAIL_KVS_FENCE:
	case MRAIL_KVS_OK:
	case MRAIL_KVS_NOT_FOUND:
		break;
	default:
		*min = 1;
		break;
	}
}

int mrail_kvs_header_decode(const uint8_t in[MRAIL_KVS_HEADER_BYTES],
			    struct mrail_kvs_header *hdr, const char **why)
{
	uint32_t min, max;

	if (in[0] != MRAIL_KVS_MAGIC0 || in[1] != MRAIL_KVS_MAGIC1) {
		*why = "bad magic (not an mrail KVS client)";
		return -1;
	}
	if (in[2] < 1 || in[2] > MRAIL_KVS_VERSION) {
		*why = "unsupported protocol version";
		return -1;
	}
	hdr->version = in[2];
	hdr->type = in[3];
	hdr->length = get_be32(in + 4);
	length_bounds(hdr->type, &min, &max);
	if (min > max) {
		*why = "unknown message type";
		return -1;
	}
	if (hdr->version < mrail_kvs_type_version(hdr->type)) {
		*why = "message type newer than the frame's version";
		return -1;
	}
	if (hdr->length < min || hdr->length > max) {
		*why = "message length out of bounds";
		return -1;
	}
	return 0;
}

static int buf_reserve(struct mrail_kvs_buf *b, size_t extra)
{
	if (b->cap - b->len >= extra)
		return 0;
	if (b->off > 0) {
		memmove(b->data, b->data + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
		if (b->cap - b->len >= extra)
			return 0;
	}
	size_t cap = b->cap ? b->cap : 256;
	while (cap - b->len < extra)
		cap *= 2;
	uint8_t *data = realloc(b->data, cap);
	if (!data)
		return -1;
	b->data = data;
	b->cap = cap;
	return 0;
}

int mrail_kvs_buf_frame(struct mrail_kvs_buf *b, uint8_t type,
			const struct iovec *iov, int n)
{
	return mrail_kvs_buf_frame_max(b, type, iov, n, MRAIL_KVS_PAYLOAD_MAX);
}

int mrail_kvs_buf_frame_max(struct mrail_kvs_buf *b, uint8_t type,
			    const struct iovec *iov, int n, size_t max)
{
	size_t payload = 0;

	for (int i = 0; i < n; i++)
		payload += iov[i].iov_len;
	if (payload > max)
		return -1;
	if (buf_reserve(b, MRAIL_KVS_HEADER_BYTES + payload) < 0)
		return -1;
	mrail_kvs_header_encode(b->data + b->len, type, (uint32_t)payload);
	b->len += MRAIL_KVS_HEADER_BYTES;
	for (int i = 0; i < n; i++) {
		if (iov[i].iov_len)
			memcpy(b->data + b->len, iov[i].iov_base,
			       iov[i].iov_len);
		b->len += iov[i].iov_len;
	}
	return 0;
}

void mrail_kvs_buf_compact(struct mrail_kvs_buf *b)
{
	if (b->off == b->len)
		b->off = b->len = 0;
}

void mrail_kvs_buf_free(struct mrail_kvs_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof *b);
}

int mrail_kvs_parse_auth(const uint8_t *p, size_t len,
			 struct mrail_kvs_auth *auth, const char **why)
{
	if (len != MRAIL_KVS_AUTH_BYTES) {
		*why = "AUTH of the wrong length";
		return -1;
	}
	auth->rank = get_be32(p);
	memcpy(auth->nonce, p + 4, MRAIL_AUTH_NONCE_BYTES);
	memcpy(auth->mac, p + 4 + MRAIL_AUTH_NONCE_BYTES, MRAIL_AUTH_MAC_BYTES);
	return 0;
}

void mrail_kvs_auth_encode(const struct mrail_kvs_auth *auth,
			   uint8_t out[MRAIL_KVS_AUTH_BYTES])
{
	put_be32(out, auth->rank);
	memcpy(out + 4, auth->nonce, MRAIL_AUTH_NONCE_BYTES);
	memcpy(out + 4 + MRAIL_AUTH_NONCE_BYTES, auth->mac,
	       MRAIL_AUTH_MAC_BYTES);
}

int mrail_kvs_parse_put(const uint8_t *p, size_t len, const uint8_t **key,
			size_t *key_len, const uint8_t **val, size_t *val_len,
			const char **why)
{
	if (len < 2) {
		*why = "PUT without a key length";
		return -1;
	}
	size_t klen = (size_t)p[0] << 8 | p[1];
	if (klen == 0 || klen > MRAIL_BOOTSTRAP_KEY_MAX) {
		*why = "PUT key length out of bounds";
		return -1;
	}
	if (klen > len - 2) {
		*why = "PUT key longer than the message";
		return -1;
	}
	if (len - 2 - klen > MRAIL_BOOTSTRAP_VALUE_MAX) {
		*why = "PUT value too long";
		return -1;
	}
	if (memchr(p + 2, '\0', klen)) {
		*why = "PUT key contains a NUL byte";
		return -1;
	}
	*key = p + 2;
	*key_len = klen;
	*val = p + 2 + klen;
	*val_len = len - 2 - klen;
	return 0;
}

int mrail_kvs_parse_get_many(const uint8_t *p, size_t len, uint32_t *count,
			     struct mrail_kvs_iter *it, const char **why)
{
	if (len < 2) {
		*why = "GET_MANY without a key count";
		return -1;
	}
	uint32_t n = (uint32_t)p[0] << 8 | p[1];
	if (n == 0 || n > MRAIL_KVS_BATCH_KEYS_MAX) {
		*why = "GET_MANY key count out of bounds";
		return -1;
	}
	size_t off = 2;
	for (uint32_t i = 0; i < n; i++) {
		if (off >= len) {
			*why = "GET_MANY shorter than its key count";
			return -1;
		}
		size_t klen = p[off];
		if (klen == 0 || klen > len - off - 1) {
			*why = "GET_MANY key empty or past the message";
			return -1;
		}
		if (memchr(p + off + 1, '\0', klen)) {
			*why = "GET_MANY key contains a NUL byte";
			return -1;
		}
		off += 1 + klen;
	}
	if (off != len) {
		*why = "trailing bytes after the GET_MANY keys";
		return -1;
	}
	*count = n;
	*it = (struct mrail_kvs_iter){p + 2, len - 2, n};
	return 0;
}

int mrail_kvs_next_key(struct mrail_kvs_iter *it, const uint8_t **key,
		       size_t *key_len)
{
	if (!it->count)
		return 0;
	*key_len = it->p[0];
	*key = it->p + 1;
	it->p += 1 + *key_len;
	it->left -= 1 + *key_len;
	it->count--;
	return 1;
}

int mrail_kvs_parse_values(const uint8_t *p, size_t len, uint32_t *count,
			   struct mrail_kvs_iter *it, const char **why)
{
	if (len < 2) {
		*why = "VALUES without a count";
		return -1;
	}
	uint32_t n = (uint32_t)p[0] << 8 | p[1];
	if (n == 0 || n > MRAIL_KVS_BATCH_KEYS_MAX) {
		*why = "VALUES count out of bounds";
		return -1;
	}
	size_t off = 2;
	for (uint32_t i = 0; i < n; i++) {
		if (len - off < MRAIL_KVS_VALUE_ENTRY_BYTES(0)) {
			*why = "VALUES shorter than its count";
			return -1;
		}
		uint8_t found = p[off];
		uint32_t vlen = get_be32(p + off + 1);
		if (found > 1 || (!found && vlen) ||
		    vlen > MRAIL_BOOTSTRAP_VALUE_MAX) {
			*why = "VALUES entry with a bad flag or length";
			return -1;
		}
		if (vlen > len - off - MRAIL_KVS_VALUE_ENTRY_BYTES(0)) {
			*why = "VALUES entry runs past the message";
			return -1;
		}
		off += MRAIL_KVS_VALUE_ENTRY_BYTES(vlen);
	}
	if (off != len) {
		*why = "trailing bytes after the VALUES entries";
		return -1;
	}
	*count = n;
	*it = (struct mrail_kvs_iter){p + 2, len - 2, n};
	return 0;
}

int mrail_kvs_next_value(struct mrail_kvs_iter *it, int *found,
			 const uint8_t **val, size_t *val_len)
{
	if (!it->count)
		return 0;
	*found = it->p[0];
	*val_len = get_be32(it->p + 1);
	*val = it->p + MRAIL_KVS_VALUE_ENTRY_BYTES(0);
	it->p += MRAIL_KVS_VALUE_ENTRY_BYTES(*val_len);
	it->left -= MRAIL_KVS_VALUE_ENTRY_BYTES(*val_len);
	it->count--;
	return 1;
}

static void proof(const uint8_t key[MRAIL_AUTH_KEY_BYTES],
		  const uint8_t nonce[MRAIL_AUTH_NONCE_BYTES], uint32_t rank,
		  const char *role, uint8_t mac[MRAIL_AUTH_MAC_BYTES])
{
	uint8_t msg[MRAIL_AUTH_NONCE_BYTES + 4 + 32];
	size_t role_len = strlen(role);

	memcpy(msg, nonce, MRAIL_AUTH_NONCE_BYTES);
	put_be32(msg + MRAIL_AUTH_NONCE_BYTES, rank);
	memcpy(msg + MRAIL_AUTH_NONCE_BYTES + 4, role, role_len);
	mrail_auth_mac(key, msg, MRAIL_AUTH_NONCE_BYTES + 4 + role_len, mac);
}

void mrail_kvs_client_proof(const uint8_t key[MRAIL_AUTH_KEY_BYTES],
			    const uint8_t server_nonce[MRAIL_AUTH_NONCE_BYTES],
			    uint32_t rank, uint8_t mac[MRAIL_AUTH_MAC_BYTES])
{
	proof(key, server_nonce, rank, CLIENT_ROLE, mac);
}

void mrail_kvs_server_proof(const uint8_t key[MRAIL_AUTH_KEY_BYTES],
			    const uint8_t client_nonce[MRAIL_AUTH_NONCE_BYTES],
			    uint32_t rank, uint8_t mac[MRAIL_AUTH_MAC_BYTES])
{
	proof(key, client_nonce, rank, SERVER_ROLE, mac);
}

int mrail_kvs_addr_split(const char *addr, char *host, size_t host_len,
			 char *port, size_t port_len)
{
	const char *h, *colon;
	size_t hlen;

	if (!addr)
		return -1;
	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');
		if (!close || close[1] != ':')
			return -1;
		h = addr + 1;
		hlen = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon || strchr(addr, ':') != colon)
			return -1; /* bare IPv6 must be bracketed */
		h = addr;
		hlen = (size_t)(colon - addr);
	}
	if (hlen == 0 || hlen >= host_len)
		return -1;
	const char *p = colon + 1;
	size_t plen = strlen(p);
	if (plen == 0 || plen > 5 || plen >= port_len)
		return -1;
	unsigned long v = 0;
	for (size_t i = 0; i < plen; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + (unsigned long)(p[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -1;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	memcpy(port, p, plen + 1);
	return 0;
}
