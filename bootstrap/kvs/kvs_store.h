/*
 * The key-value table behind mrail-run's KVS. A PUT is staged and becomes
 * visible only when the fence it precedes completes (commit), so every rank
 * sees the same snapshot between two fences whatever the arrival order.
 * Memory is capped: keys, values and a per-entry overhead count against
 * max_bytes, so a faulty rank cannot exhaust the launcher.
 */
#ifndef MRAIL_KVS_STORE_H
#define MRAIL_KVS_STORE_H

#include <stddef.h>
#include <stdint.h>

struct mrail_kvs_store;

struct mrail_kvs_store *mrail_kvs_store_create(size_t max_bytes);
void mrail_kvs_store_destroy(struct mrail_kvs_store *s);

enum {
	MRAIL_KVS_STORE_OK = 0,
	MRAIL_KVS_STORE_NOMEM = -1,
	MRAIL_KVS_STORE_FULL = -2,
};
/* Stage key=value for the next commit (a later PUT of the key wins). */
int mrail_kvs_store_put(struct mrail_kvs_store *s, const uint8_t *key,
			size_t key_len, const uint8_t *val, size_t val_len);
/* A committed value: 1 with val and len set (valid until the next commit),
 * or 0 if the key was never committed. */
int mrail_kvs_store_get(const struct mrail_kvs_store *s, const uint8_t *key,
			size_t key_len, const uint8_t **val, size_t *len);
/* Make every staged value visible (a fence completed). */
void mrail_kvs_store_commit(struct mrail_kvs_store *s);
/* Bytes accounted against max_bytes. */
size_t mrail_kvs_store_bytes(const struct mrail_kvs_store *s);

#endif
