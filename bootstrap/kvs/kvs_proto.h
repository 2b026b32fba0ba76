/*
 * The KVS wire protocol spoken between mrail-run's key-value service and the
 * ranks (docs/bootstrap.md is the normative description). Shared by the
 * client (libmrail) and the server (mrail-run) so both check frames against
 * the same limits.
 *
 * Every frame: 8-byte header, then `length` payload bytes.
 *   0  u8  'M'    1  u8  'K'    2  u8  version    3  u8  type
 *   4  u32 payload length, big-endian
 */
#ifndef MRAIL_KVS_PROTO_H
#define MRAIL_KVS_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "bootstrap/bootstrap.h"
#include "util/auth.h"

/* Highest protocol version spoken. A frame carries the version that
 * introduced its type (1, or 2 for GET_MANY/VALUES), so version-1 peers
 * never see a frame they cannot read; docs/bootstrap.md. */
#define MRAIL_KVS_VERSION 2
/* GET of this key answers the service's protocol version as decimal text
 * (a version-1 service answers NOT_FOUND): how a client learns whether it
 * may send GET_MANY without a round trip per key afterwards. */
#define MRAIL_KVS_PROTOCOL_KEY "mrail.kvs.protocol"
#define MRAIL_KVS_MAGIC0 'M'
#define MRAIL_KVS_MAGIC1 'K'
#define MRAIL_KVS_HEADER_BYTES 8
/* Longest REJECT/ERROR reason text. */
#define MRAIL_KVS_REASON_MAX 256
/* Largest payload of any frame: a PUT of the longest key and value. */
#define MRAIL_KVS_PAYLOAD_MAX \
	(2 + MRAIL_BOOTSTRAP_KEY_MAX + MRAIL_BOOTSTRAP_VALUE_MAX)
/* GET_MANY: at most this many keys per request. */
#define MRAIL_KVS_BATCH_KEYS_MAX 4096
/* VALUES: the service answers a prefix of the keys whose payload fits in
 * this many bytes (at least one key: one value always fits). */
#define MRAIL_KVS_VALUES_MAX (1u << 20)
/* Largest payload of any frame type. */
#define MRAIL_KVS_FRAME_MAX MRAIL_KVS_VALUES_MAX
/* AUTH payload: rank, client nonce, MAC. */
#define MRAIL_KVS_AUTH_BYTES (4 + MRAIL_AUTH_NONCE_BYTES + MRAIL_AUTH_MAC_BYTES)

enum mrail_kvs_type {
	/* handshake */
	MRAIL_KVS_HELLO = 0x01,     /* S->C  nonce[16] */
	MRAIL_KVS_AUTH = 0x02,      /* C->S  rank u32, nonce[16], mac[16] */
	MRAIL_KVS_AUTH_OK = 0x03,   /* S->C  mac[16] (server's proof) */
	MRAIL_KVS_REJECT = 0x04,    /* S->C  reason text; then close */
	/* requests (C->S), one outstanding at a time */
	MRAIL_KVS_PUT = 0x10,       /* key_len u16, key, value */
	MRAIL_KVS_FENCE = 0x11,     /* empty */
	MRAIL_KVS_GET = 0x12,       /* key */
	MRAIL_KVS_GET_MANY = 0x13,  /* v2: count u16, count x (len u8, key) */
	/* replies (S->C) */
	MRAIL_KVS_OK = 0x20,        /* empty: PUT stored, FENCE complete */
	MRAIL_KVS_VALUE = 0x21,     /* value: GET found */
	MRAIL_KVS_NOT_FOUND = 0x22, /* empty: GET missed */
	MRAIL_KVS_ERROR = 0x23,     /* reason text: request refused */
	MRAIL_KVS_VALUES = 0x24,    /* v2: count u16, count x (found u8,
	                               len u32, value) for the first count
	                               keys of the GET_MANY */
};

struct mrail_kvs_header {
	uint8_t version;
	uint8_t type;
	uint32_t length;
};

/* Static name of a frame type ("PUT", ...; "unknown" otherwise). */
const char *mrail_kvs_type_name(uint8_t type);

/* The version a frame of this type carries (the one that introduced it). */
uint8_t mrail_kvs_type_version(uint8_t type);

void mrail_kvs_header_encode(uint8_t out[MRAIL_KVS_HEADER_BYTES],
			     uint8_t type, uint32_t length);

/*
 * Decode and check a header: magic, version, a known type and a payload
 * length allowed for that type. 0, or -1 with *why set to a static reason
 * suitable for a log line ("bad magic", ...).
 */
int mrail_kvs_header_decode(const uint8_t in[MRAIL_KVS_HEADER_BYTES],
			    struct mrail_kvs_header *hdr, const char **why);

/* A growable byte buffer frames are queued in. */
struct mrail_kvs_buf {
	uint8_t *data;
	size_t len;  /* bytes held */
	size_t off;  /* bytes already consumed from the front */
	size_t cap;
};

/* Append one frame whose payload is the concatenation of iov[0..n).
 * 0, or -1 if out of memory or the payload is too long for a frame. */
int mrail_kvs_buf_frame(struct mrail_kvs_buf *b, uint8_t type,
			const struct iovec *iov, int n);
/* The same with a payload limit other than MRAIL_KVS_PAYLOAD_MAX (VALUES). */
int mrail_kvs_buf_frame_max(struct mrail_kvs_buf *b, uint8_t type,
			    const struct iovec *iov, int n, size_t max);
/* Drop consumed bytes once everything was consumed (cheap reuse). */
void mrail_kvs_buf_compact(struct mrail_kvs_buf *b);
void mrail_kvs_buf_free(struct mrail_kvs_buf *b);

/* Payload parsers: 0, or -1 with *why set when the payload is malformed. */
struct mrail_kvs_auth {
	uint32_t rank;
	uint8_t nonce[MRAIL_AUTH_NONCE_BYTES];
	uint8_t mac[MRAIL_AUTH_MAC_BYTES];
};
int mrail_kvs_parse_auth(const uint8_t *p, size_t len,
			 struct mrail_kvs_auth *auth, const char **why);
int mrail_kvs_parse_put(const uint8_t *p, size_t len, const uint8_t **key,
			size_t *key_len, const uint8_t **val, size_t *val_len,
			const char **why);
/*
 * GET_MANY and VALUES payloads: the parse functions check the whole
 * payload (every entry in bounds, nothing left over), then the iterator
 * walks the entries and cannot fail.
 */
struct mrail_kvs_iter {
	const uint8_t *p;
	size_t left;
	uint32_t count; /* entries not yet returned */
};
int mrail_kvs_parse_get_many(const uint8_t *p, size_t len, uint32_t *count,
			     struct mrail_kvs_iter *it, const char **why);
int mrail_kvs_next_key(struct mrail_kvs_iter *it, const uint8_t **key,
		       size_t *key_len);
int mrail_kvs_parse_values(const uint8_t *p, size_t len, uint32_t *count,
			   struct mrail_kvs_iter *it, const char **why);
int mrail_kvs_next_value(struct mrail_kvs_iter *it, int *found,
			 const uint8_t **val, size_t *val_len);
/* Bytes one VALUES entry of a value of len bytes takes. */
#define MRAIL_KVS_VALUE_ENTRY_BYTES(len) (5 + (size_t)(len))

void mrail_kvs_auth_encode(const struct mrail_kvs_auth *auth,
			   uint8_t out[MRAIL_KVS_AUTH_BYTES]);

/*
 * The proofs of knowing the job key. The client MACs the server's nonce, the
 * server MACs the client's; the role strings differ so neither proof can be
 * replayed as the other.
 */
void mrail_kvs_client_proof(const uint8_t key[MRAIL_AUTH_KEY_BYTES],
			    const uint8_t server_nonce[MRAIL_AUTH_NONCE_BYTES],
			    uint32_t rank, uint8_t mac[MRAIL_AUTH_MAC_BYTES]);
void mrail_kvs_server_proof(const uint8_t key[MRAIL_AUTH_KEY_BYTES],
			    const uint8_t client_nonce[MRAIL_AUTH_NONCE_BYTES],
			    uint32_t rank, uint8_t mac[MRAIL_AUTH_MAC_BYTES]);

/*
 * Split "host:port" or "[v6-host]:port" (the MRAIL_KVS_ADDR format).
 * 0, or -1 if malformed (empty host, missing/invalid port 1..65535).
 */
int mrail_kvs_addr_split(const char *addr, char *host, size_t host_len,
			 char *port, size_t port_len);

#endif
