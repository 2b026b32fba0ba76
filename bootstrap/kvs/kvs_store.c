#include "bootstrap/kvs/kvs_store.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Charged per key on top of its bytes: bounds the entry count too. */
#define ENTRY_OVERHEAD 64

struct blob {
	uint8_t *data; /* NULL for an empty value */
	size_t len;
	bool set;
};

struct entry {
	struct entry *next;         /* hash chain */
	struct entry *next_pending; /* staged since the last commit */
	struct blob visible, staged;
	size_t key_len;
	uint8_t key[];
};

struct mrail_kvs_store {
	struct entry **buckets;
	size_t nbuckets; /* power of two */
	size_t nentries;
	struct entry *pending;
	size_t bytes, max_bytes;
};

static uint64_t hash_key(const uint8_t *key, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
	for (size_t i = 0; i < len; i++) {
		h ^= key[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

struct mrail_kvs_store *mrail_kvs_store_create(size_t max_bytes)
{
	struct mrail_kvs_store *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->nbuckets = 64;
	s->buckets = calloc(s->nbuckets, sizeof *s->buckets);
	if (!s->buckets) {
		free(s);
		return NULL;
	}
	s->max_bytes = max_bytes;
	return s;
}

void mrail_kvs_store_destroy(struct mrail_kvs_store *s)
{
	if (!s)
		return;
	for (size_t b = 0; b < s->nbuckets; b++) {
		struct entry *e = s->buckets[b], *next;
		for (; e; e = next) {
			next = e->next;
			free(e->visible.data);
			free(e->staged.data);
			free(e);
		}
	}
	free(s->buckets);
	free(s);
}

static struct entry *lookup(const struct mrail_kvs_store *s,
			    const uint8_t *key, size_t key_len)
{
	struct entry *e = s->buckets[hash_key(key, key_len) & (s->nbuckets - 1)];
	for (; e; e = e->next)
		if (e->key_len == key_len && !memcmp(e->key, key, key_len))
			return e;
	return NULL;
}

/* Double the table when it gets crowded; failure just keeps chains longer. */
static void maybe_grow(struct mrail_kvs_store *s)
{
	if (s->nentries < s->nbuckets)
		return;
	size_t n = s->nbuckets * 2;
	struct entry **nb = calloc(n, sizeof *nb);
	if (!nb)
		return;
	for (size_t b = 0; b < s->nbuckets; b++) {
		struct entry *e = s->buckets[b], *next;
		for (; e; e = next) {
			next = e->next;
			size_t i = hash_key(e->key, e->key_len) & (n - 1);
			e->next = nb[i];
			nb[i] = e;
		}
	}
	free(s->buckets);
	s->buckets = nb;
	s->nbuckets = n;
}

int mrail_kvs_store_put(struct mrail_kvs_store *s, const uint8_t *key,
			size_t key_len, const uint8_t *val, size_t val_len)
{
	struct entry *e = lookup(s, key, key_len);
	size_t old = e ? e->staged.len : 0;
	size_t add = val_len + (e ? 0 : key_len + ENTRY_OVERHEAD);

	if (s->bytes - old + add > s->max_bytes)
		return MRAIL_KVS_STORE_FULL;
	uint8_t *copy = NULL;
	if (val_len) {
		copy = malloc(val_len);
		if (!copy)
			return MRAIL_KVS_STORE_NOMEM;
		memcpy(copy, val, val_len);
	}
	if (!e) {
		e = calloc(1, sizeof *e + key_len);
		if (!e) {
			free(copy);
			return MRAIL_KVS_STORE_NOMEM;
		}
		memcpy(e->key, key, key_len);
		e->key_len = key_len;
		size_t i = hash_key(key, key_len) & (s->nbuckets - 1);
		e->next = s->buckets[i];
		s->buckets[i] = e;
		s->nentries++;
		maybe_grow(s);
	}
	if (!e->staged.set) {
		e->next_pending = s->pending;
		s->pending = e;
	}
	free(e->staged.data);
	e->staged = (struct blob){.data = copy, .len = val_len, .set = true};
	s->bytes = s->bytes - old + add;
	return MRAIL_KVS_STORE_OK;
}

int mrail_kvs_store_get(const struct mrail_kvs_store *s, const uint8_t *key,
			size_t key_len, const uint8_t **val, size_t *len)
{
	const struct entry *e = lookup(s, key, key_len);
	if (!e || !e->visible.set)
		return 0;
	*val = e->visible.data;
	*len = e->visible.len;
	return 1;
}

void mrail_kvs_store_commit(struct mrail_kvs_store *s)
{
	struct entry *e = s->pending, *next;
	for (; e; e = next) {
		next = e->next_pending;
		s->bytes -= e->visible.len;
		free(e->visible.data);
		e->visible = e->staged;
		e->staged = (struct blob){0};
		e->next_pending = NULL;
	}
	s->pending = NULL;
}

size_t mrail_kvs_store_bytes(const struct mrail_kvs_store *s)
{
	return s->bytes;
}
