/*
 * Single-producer/single-consumer byte rings in the shared segment. Each
 * side keeps its own position locally and publishes it with one release
 * store (the consumer in batches: shm_ring_release); the other side's
 * position is reloaded only when the cached one
 * says the ring is full (producer) or empty (consumer), so a steady
 * stream costs one shared-line transfer per batch, not per byte.
 *
 * Doorbell: a consumer about to sleep (the driver's trywait) sets
 * `armed`; a producer that publishes while it is set clears it and rings
 * the consumer's eventfd. Both sides order their store before their load
 * with a full fence (Dekker): either the producer sees `armed`, or the
 * consumer sees the new tail when it re-checks after arming. The same
 * pair of flags, the other way round (`want_space`), wakes a producer
 * that is waiting for the consumer to free space.
 */
#include "drivers/shm/shm_internal.h"

#include <string.h>

void shm_ring_init(struct shm_ring *r, struct shm_ring_ctl *ctl, uint8_t *data,
		   uint64_t size)
{
	r->ctl = ctl;
	r->data = data;
	r->size = size;
	r->mask = size - 1;
	r->pos = 0;
	r->peer = 0;
	r->freed = 0;
}

uint64_t shm_ring_space(struct shm_ring *r, uint64_t want)
{
	uint64_t space = r->size - (r->pos - r->peer);

	if (space < want) {
		r->peer = atomic_load_explicit(&r->ctl->head,
					       memory_order_acquire);
		/* A head ahead of our tail is corruption: offer nothing. */
		if (r->peer > r->pos || r->pos - r->peer > r->size)
			return 0;
		space = r->size - (r->pos - r->peer);
	}
	return space;
}

void shm_ring_write(struct shm_ring *r, const void *src, uint64_t len)
{
	uint64_t off = r->pos & r->mask;
	uint64_t first = r->size - off;

	if (first > len)
		first = len;
	memcpy(r->data + off, src, first);
	if (len > first)
		memcpy(r->data, (const uint8_t *)src + first, len - first);
	r->pos += len;
}

bool shm_ring_publish(struct shm_ring *r)
{
	atomic_store_explicit(&r->ctl->tail, r->pos, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(&r->ctl->armed, memory_order_relaxed))
		return false;
	return atomic_exchange_explicit(&r->ctl->armed, 0,
					memory_order_relaxed) != 0;
}

/* The consumer may be ahead of the tail it reads: it takes a whole
 * frame on its stamped word, stored before the tail (shm_ring_seen). So a
 * tail behind our position says nothing new; only a tail more than a
 * ring ahead of it is corrupt. */
static bool load_tail(struct shm_ring *r)
{
	uint64_t t = atomic_load_explicit(&r->ctl->tail, memory_order_acquire);
	if (t > r->pos && t - r->pos > r->size)
		return false;
	if (t > r->peer)
		r->peer = t;
	return true;
}

uint64_t shm_ring_avail(struct shm_ring *r)
{
	if (r->peer == r->pos && !load_tail(r))
		return UINT64_MAX;
	return r->peer - r->pos;
}

const uint8_t *shm_ring_peek(const struct shm_ring *r, uint64_t off,
			     uint64_t *contig)
{
	uint64_t at = (r->pos + off) & r->mask;

	*contig = r->size - at;
	return r->data + at;
}

void shm_ring_copy_out(const struct shm_ring *r, uint64_t off, void *dst,
		       uint64_t len)
{
	uint64_t contig;
	const uint8_t *p = shm_ring_peek(r, off, &contig);

	if (contig > len)
		contig = len;
	memcpy(dst, p, contig);
	if (len > contig)
		memcpy((uint8_t *)dst + contig, r->data, len - contig);
}

void shm_ring_consume(struct shm_ring *r, uint64_t len)
{
	r->pos += len;
}

/*
 * The word slot of every line consumed is cleared before the head gives
 * the space back (its release orders the clearing before the producer's
 * next writes there). So a line start the consumer polls holds zero or a
 * word stored this lap, never an earlier lap's payload that might look
 * like one: random payload matches a stamp once in 2^24 boundaries.
 *
 * A slot is cleared once consumed whole, and the head never stops inside
 * one's first 8 bytes: it is given back only to the slot's start then.
 * A head at pos inside a slot would let the producer write the next
 * lap's first bytes there, and the clearing of the slot a later release
 * owes would zero them: 1-7 bytes of another frame's head or body, lost
 * without a trace. A body copied as far as the tail stops anywhere; the
 * producer then needs a whole lap before that release to be hit, which
 * a full ring and a consumer delayed (preempted) between its last look
 * at the tail and its release allow.
 *
 * Called when the ring is found empty, not per frame: the clearing
 * store, to a line the producer shares, would hold up (stores leave in
 * order) the answer the frame made us send; clearing per frame cost
 * 0.05-0.1 us of latency.
 */
void shm_ring_release(struct shm_ring *r)
{
	uint64_t head = shm_ring_head_due(r);

	if (head == r->freed)
		return;
	/* freed is a line start or past its word: that slot was cleared. */
	uint64_t at = shm_pad64(r->freed);
	for (; at + 8 <= head; at += SHM_FRAME_ALIGN)
		atomic_store_explicit(
			(_Atomic uint64_t *)(r->data + (at & r->mask)), 0,
			memory_order_relaxed);
	r->freed = head;
	atomic_store_explicit(&r->ctl->head, head, memory_order_release);
}

bool shm_ring_arm(struct shm_ring *r)
{
	atomic_store_explicit(&r->ctl->armed, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	/* A corrupt tail: not quiet; progress reports it. */
	return load_tail(r) && r->peer == r->pos;
}

void shm_ring_put_word(struct shm_ring *r, uint64_t at, uint64_t word)
{
	atomic_store_explicit((_Atomic uint64_t *)(r->data + (at & r->mask)),
			      word, memory_order_release);
}

bool shm_ring_refresh(struct shm_ring *r)
{
	return load_tail(r);
}

bool shm_ring_want_space(struct shm_ring *r)
{
	atomic_store_explicit(&r->ctl->want_space, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	/* shm_ring_space() reloads and checks the head itself. */
	return atomic_load_explicit(&r->ctl->head, memory_order_acquire) !=
	       r->peer;
}

bool shm_ring_space_wanted(struct shm_ring *r)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(&r->ctl->want_space, memory_order_relaxed))
		return false;
	return atomic_exchange_explicit(&r->ctl->want_space, 0,
					memory_order_relaxed) != 0;
}
