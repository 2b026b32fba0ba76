/*
 * Job-key authentication shared by the bootstrap service and data
 * connections: a keyed MAC (SipHash-2-4, 128-bit output) over a message that
 * carries a fresh random nonce. The key never travels on the wire.
 */
#ifndef MRAIL_UTIL_AUTH_H
#define MRAIL_UTIL_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define MRAIL_AUTH_KEY_BYTES 16
#define MRAIL_AUTH_MAC_BYTES 16
#define MRAIL_AUTH_NONCE_BYTES 16

/* SipHash-2-4 with 128-bit output (reference algorithm, little-endian). */
void mrail_auth_mac(const uint8_t key[MRAIL_AUTH_KEY_BYTES], const void *msg,
		    size_t len, uint8_t mac[MRAIL_AUTH_MAC_BYTES]);
/* Constant-time comparison: 1 if equal. */
int mrail_auth_mac_equal(const uint8_t a[MRAIL_AUTH_MAC_BYTES],
			 const uint8_t b[MRAIL_AUTH_MAC_BYTES]);
/* Fill with random bytes from getrandom(2); 0 or -errno. */
int mrail_auth_random(void *buf, size_t len);
/* 32 hex digits <-> key; parse returns 0 or -1 (wrong length/digit). */
int mrail_auth_key_parse(const char *hex, uint8_t key[MRAIL_AUTH_KEY_BYTES]);
void mrail_auth_key_format(const uint8_t key[MRAIL_AUTH_KEY_BYTES],
			   char hex[2 * MRAIL_AUTH_KEY_BYTES + 1]);

#endif
