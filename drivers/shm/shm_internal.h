/*
 * Shared-memory driver internals, shared by shm.c (instance, rails,
 * progress), shm_conn.c (listeners, connection set-up over a Unix socket,
 * teardown), shm_ring.c (the single-producer/single-consumer byte rings),
 * shm_send.c (frames into the ring), shm_recv.c (frame parser) and
 * shm_rma.c (cross-memory attach get/put). The endpoint registry, send
 * records and completion list are drivers/common's (dc.h).
 * docs/driver-shm.md is the reference.
 */
#ifndef MRAIL_DRIVERS_SHM_INTERNAL_H
#define MRAIL_DRIVERS_SHM_INTERNAL_H

#include "drivers/common/dc.h"
#include "drivers/common/dc_le.h"
#include "drivers/driver.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* ---- wire and segment formats (docs/driver-shm.md) --------------------- */

/*
 * Frames on a ring, version 2 (docs/driver-shm.md, "Frames"). Every frame
 * starts at a 64-byte-aligned ring position (zero bytes before it) with
 * one 64-bit little-endian word, stored last with release semantics:
 *   bits 0-7 'M', 8-11 version, 12 BODY (a u64 body_len follows the word),
 *   13 WHOLE (the whole frame is in the ring already), 16-39 head_len,
 *   40-63 stamp (the frame's position / 64, low 24 bits, xor 0xa5a5a5).
 * Then the head (8-aligned) and the body. The stamp tells a frame written
 * for this position from what an earlier lap left there, so the consumer
 * polls the word itself: a small frame and its signal share one cache
 * line, one transfer between the cores instead of two (tail, then data).
 */
#define SHM_FRAME_VERSION 2u
#define SHM_FRAME_ALIGN 64
#define SHM_W_MAGIC 0x4dULL
#define SHM_W_BODY (1ULL << 12)
#define SHM_W_WHOLE (1ULL << 13)
#define SHM_W_HEAD_MAX 0xffffffULL

static inline uint64_t shm_frame_stamp(uint64_t pos)
{
	return ((pos >> 6) ^ 0xa5a5a5) & 0xffffff;
}

static inline uint64_t shm_frame_word(uint64_t pos, uint32_t head_len,
				      int body, int whole)
{
	return SHM_W_MAGIC | (uint64_t)SHM_FRAME_VERSION << 8 |
	       (body ? SHM_W_BODY : 0) | (whole ? SHM_W_WHOLE : 0) |
	       ((uint64_t)head_len & SHM_W_HEAD_MAX) << 16 |
	       shm_frame_stamp(pos) << 40;
}

/* Bytes of the frame header: the word, and body_len when BODY is set. */
static inline uint32_t shm_frame_hdr_len(uint64_t word)
{
	return word & SHM_W_BODY ? 16 : 8;
}

static inline uint64_t shm_pad64(uint64_t n)
{
	return (n + SHM_FRAME_ALIGN - 1) & ~(uint64_t)(SHM_FRAME_ALIGN - 1);
}

/* Segment: a header line, the control lines of both rings, then the two
 * rings (ring 0 carries connector -> acceptor). */
#define SHM_SEG_MAGIC 0x4753524dU /* "MRSG" */
#define SHM_SEG_VERSION 2u
#define SHM_LINE 64
#define SHM_RING_OFFSET 4096

/* Socket messages of the set-up (u32 magic, u32 version, u32 a, u32 b). */
#define SHM_HELLO_MAGIC 0x4853524dU   /* "MRSH": ring size, segment size */
#define SHM_WELCOME_MAGIC 0x5753524dU /* "MRSW": status */
#define SHM_CTL_LEN 16

/* Address blob: 'M' 'R' 'S' 'A', version, name length, abstract socket
 * name (without the leading NUL). */
#define SHM_BLOB_VERSION 1u
#define SHM_BLOB_HDR_LEN 6
#define SHM_SOCK_NAME_MAX 48

/* Remote key: version u32, pad u32, u64 addr, u64 len, u64 key. */
#define SHM_RKEY_VERSION 1u
#define SHM_RKEY_LEN 32

/* ---- capabilities ------------------------------------------------------ */

/* Heads as large as TCP's: the engine uses the smallest of its drivers. */
#define SHM_MAX_HEAD (((size_t)1 << 20) + 4096)
#define SHM_MAX_BODY ((uint64_t)1 << 48)
#define SHM_MAX_BODY_IOV 64
#define SHM_EAGER_MAX_HINT 65536
#define SHM_MAX_RMA ((uint64_t)1 << 30)
#define SHM_RING_DEFAULT ((uint32_t)256 << 10)
#define SHM_RING_MIN ((uint32_t)4 << 10)
#define SHM_RING_MAX ((uint32_t)64 << 20)
#define SHM_NAME_LEN 80
/* Progress calls between two looks at the sockets and doorbells while
 * the rings carry the traffic (every call while a connection is being
 * made, and right after a sleep). */
#define SHM_EPOLL_EVERY 1024
#define SHM_EPOLL_BATCH 64

#define shm_put_le32 dc_put_le32
#define shm_put_le64 dc_put_le64
#define shm_get_le32 dc_get_le32
#define shm_get_le64 dc_get_le64

/* ---- shm_ring.c: one direction of a connection -------------------------- */

/* Control of one ring: producer, consumer and doorbell on lines of their
 * own, so the two sides never write the same cache line. */
struct shm_ring_ctl {
	_Alignas(SHM_LINE) _Atomic uint64_t tail; /* written by the producer */
	_Alignas(SHM_LINE) _Atomic uint64_t head; /* written by the consumer */
	_Alignas(SHM_LINE) _Atomic uint32_t armed; /* consumer asks a wake-up */
	_Alignas(SHM_LINE) _Atomic uint32_t want_space; /* producer asks one */
};

struct shm_seg_hdr {
	_Alignas(SHM_LINE) uint32_t magic, version, ring_size, pad;
	struct shm_ring_ctl ctl[2];
};

/* This process's view of one ring (positions are byte counts since the
 * start, never wrapped; the offset in data is pos & mask). */
struct shm_ring {
	struct shm_ring_ctl *ctl;
	uint8_t *data;
	uint64_t size, mask;
	uint64_t pos;    /* producer: tail; consumer: head (local copy) */
	uint64_t peer;   /* the other side's last seen position */
	uint64_t freed;  /* consumer: the head last given back (<= pos) */
};

void shm_ring_init(struct shm_ring *r, struct shm_ring_ctl *ctl, uint8_t *data,
		   uint64_t size);
/* Producer: bytes free now (reloads the consumer's head when short). */
uint64_t shm_ring_space(struct shm_ring *r, uint64_t want);
/* Producer: copy len bytes at the local tail (no publish). */
void shm_ring_write(struct shm_ring *r, const void *src, uint64_t len);
/* Producer: make written bytes visible; true if the consumer wants a
 * doorbell rung (it is disarmed then). */
bool shm_ring_publish(struct shm_ring *r);
/* Consumer: bytes readable (UINT64_MAX if the producer's tail is
 * impossible: a corrupt ring). */
uint64_t shm_ring_avail(struct shm_ring *r);
/* Consumer: pointer to the byte at head+off and how many follow it
 * contiguously (before the ring wraps). */
const uint8_t *shm_ring_peek(const struct shm_ring *r, uint64_t off,
			     uint64_t *contig);
void shm_ring_copy_out(const struct shm_ring *r, uint64_t off, void *dst,
		       uint64_t len);
/* Consumer: len bytes read; the producer gets them back at the next
 * shm_ring_release. */
void shm_ring_consume(struct shm_ring *r, uint64_t len);
/* Consumer: give the space consumed so far back to the producer. */
void shm_ring_release(struct shm_ring *r);
/* Consumer: ask the producer for a doorbell; false if bytes arrived
 * meanwhile (then do not sleep). */
bool shm_ring_arm(struct shm_ring *r);
/* Producer: store a frame's first word at ring position at, after the
 * rest of what it publishes with it (release). */
void shm_ring_put_word(struct shm_ring *r, uint64_t at, uint64_t word);
/* Consumer: the word at ring position at (acquire), 8-aligned. Inline:
 * every polling pass reads one per connection. */
static inline uint64_t shm_ring_get_word(const struct shm_ring *r,
					 uint64_t at)
{
	return atomic_load_explicit(
		(_Atomic uint64_t *)(r->data + (at & r->mask)),
		memory_order_acquire);
}
/* Consumer: reload the producer's tail (when polling words only); false
 * if it is outside the ring (corrupt). */
bool shm_ring_refresh(struct shm_ring *r);
/* Consumer: the head a release would give back (shm_ring_release): the
 * position, or the start of the line whose word slot it is inside. */
static inline uint64_t shm_ring_head_due(const struct shm_ring *r)
{
	uint64_t in_line = r->pos & (SHM_FRAME_ALIGN - 1);
	return in_line && in_line < 8 ? r->pos - in_line : r->pos;
}
/* Consumer: the producer has published at least up to pos. */
static inline void shm_ring_seen(struct shm_ring *r, uint64_t pos)
{
	if (r->peer < pos)
		r->peer = pos;
}
/* Producer with bytes left over: ask the consumer to ring our doorbell
 * when it frees space; true if space came meanwhile (write on). */
bool shm_ring_want_space(struct shm_ring *r);
/* Consumer, after consuming: true if the producer asked for a doorbell
 * (it is disarmed then). */
bool shm_ring_space_wanted(struct shm_ring *r);

/* ---- objects ----------------------------------------------------------- */

/* An eventfd in the epoll set besides the endpoints' sockets: a
 * connection's doorbell, or the driver's own wake-up (ep NULL). */
struct shm_bell {
	struct dc_pollable poll; /* kind DC_OBJ_OTHER */
	struct mrail_drv_ep *ep;
};

/* A get or put waiting for its rma_done (progress only). A get is queued
 * to run (pending) at the end of the progress pass or call that issued
 * it, with the gets queued beside it for the same peer in one
 * process_vm_readv: a system call costs 2-3 µs on a KVM guest, as much
 * as copying 64 KiB (docs/driver-shm.md). */
struct shm_rma_done {
	struct shm_rma_done *next;
	struct mrail_drv_ep *ep;
	void *ctx;
	int status;
	bool pending;
	void *laddr;
	uint64_t raddr;
	size_t len;
};

enum shm_rx_state { SHM_RX_HDR, SHM_RX_HEAD, SHM_RX_BODY };

/* drivers/common's endpoint (first: its socket is the set-up socket,
 * then the peer's liveness) and the shm parts. */
struct mrail_drv_ep {
	struct dc_ep dc;
	bool accepting;   /* accepted socket, waiting for HELLO */
	bool connector;   /* we sent HELLO (our tx is ring 0) */
	bool in_rx;       /* the parser is running (no re-entry) */
	struct shm_bell bell;  /* our doorbell, fd -1 before */
	int peer_bell;         /* the peer's doorbell, -1 before */
	pid_t peer_pid;

	void *seg;
	size_t seg_len;
	struct shm_ring tx, rx;

	/* receive parser */
	enum shm_rx_state rx_state;
	uint32_t rx_hdr_len; /* 8, or 16 with a body length */
	uint32_t rx_head_len;
	uint64_t rx_body_len, rx_got;
	uint8_t *head_buf; /* a split head gathered (head_cap bytes) */
	size_t head_cap;
	void *rx_cookie;
	struct iovec rx_dst[SHM_MAX_BODY_IOV];
	int rx_dst_cnt, rx_dst_idx;
	size_t rx_dst_off;
	uint64_t rx_unpublished; /* 1 + the line last logged as not yet ours */
};

struct shm_params {
	uint32_t ring;     /* bytes per direction, a power of two */
	int cma;           /* -1 auto, 0 off, 1 on */
};

struct mrail_drv {
	struct dc_drv dc;
	struct shm_params par;
	bool cma; /* process_vm_readv/writev work here: get/put offered */
	struct shm_bell wake; /* work flagged outside progress */
	unsigned tick;
	bool armed;      /* trywait armed the doorbells: a sleep came */
	bool connecting; /* an endpoint is not connected yet */
	struct shm_rma_done *rma_head, *rma_tail, *rma_free;
	unsigned rma_pending; /* gets queued, not yet run */
	/* Our pid in the high half of every key, read once: getpid() is a
	 * system call (glibc caches nothing), 2.4-2.9 µs on a KVM guest, and
	 * a registration per rendezvous side paid it (docs/driver-shm.md). */
	uint64_t key_salt;
};

static inline struct mrail_drv_ep *shm_ep(struct dc_ep *dc)
{
	return (struct mrail_drv_ep *)dc;
}

/* ---- shm.c ------------------------------------------------------------- */
int shm_params_parse(const char *s, struct shm_params *p);
extern const struct dc_hooks shm_hooks;

/* ---- shm_conn.c -------------------------------------------------------- */
int shm_listen(struct mrail_drv *drv, const char *local, void *addr,
	       size_t *addr_len, char *name, size_t name_len);
int shm_connect(struct mrail_drv *drv, const char *local, const void *addr,
		size_t addr_len, void *ep_ctx, struct mrail_drv_ep **out);
/* A set-up message (u32 magic, version, a, b) with nfd descriptors: 0 or
 * -errno. */
int shm_ctl_send(int sock, uint32_t magic, uint32_t a, uint32_t b,
		 const int *fds, int nfd);
/* dc hooks */
struct dc_ep *shm_ep_accept(struct dc_drv *drv, struct dc_listener *l, int fd);
void shm_ep_events(struct dc_ep *ep, uint32_t events);
uint32_t shm_ep_wanted_events(const struct dc_ep *ep);
void shm_ep_attend(struct dc_ep *ep);
void shm_ep_closing(struct dc_ep *ep);
void shm_ep_stop(struct dc_ep *ep);
void shm_ep_free(struct dc_ep *ep);
void shm_bell_events(struct dc_drv *drv, struct dc_pollable *obj,
		     uint32_t events);
int shm_bell_watch(struct mrail_drv *drv, struct shm_bell *b);
void shm_bell_unwatch(struct mrail_drv *drv, struct shm_bell *b);

/* ---- shm_send.c -------------------------------------------------------- */
int shm_send(struct mrail_drv_ep *ep, const void *head, size_t head_len,
	     const struct iovec *body, int body_cnt, void *send_ctx);
/* Move queued bytes into the ring; returns frames that left. */
int shm_inject(struct mrail_drv_ep *ep, const struct iovec *head, int cnt);
int shm_flush(struct mrail_drv_ep *ep);
/* Write the peer's doorbell. */
void shm_ring_bell(struct mrail_drv_ep *ep);

/* ---- shm_recv.c -------------------------------------------------------- */
/* Deliver what the ring holds; returns frames delivered. */
int shm_rx(struct mrail_drv_ep *ep);
/*
 * Nothing to read and no space to give back, seen from the next frame's
 * word alone: exactly when shm_rx would find no frame (next_frame: no
 * stamp, nothing published past it) and release nothing. Inline, for the
 * polling loop: with several peers most rings are empty on most passes,
 * and a full shm_rx on each was about 70 instructions per ring and pass
 * (4 ranks of one host, docs/driver-shm.md).
 */
static inline bool shm_rx_idle(const struct mrail_drv_ep *ep)
{
	if (ep->rx_state != SHM_RX_HDR ||
	    ep->rx.freed != shm_ring_head_due(&ep->rx))
		return false;
	uint64_t at = shm_pad64(ep->rx.pos);
	uint64_t w = shm_ring_get_word(&ep->rx, at);
	return (w >> 40) != shm_frame_stamp(at) && ep->rx.peer < at + 8;
}
/* Now and then: reload the tail, for what polling the frame words cannot
 * see (bytes published that are no frame, a tail outside the ring). */
void shm_rx_audit(struct mrail_drv_ep *ep);
/* Give consumed space back (shm_ring_release) and ring a producer that
 * waits for it. */
void shm_rx_release(struct mrail_drv_ep *ep);

/* ---- shm_rma.c --------------------------------------------------------- */
extern const struct mrail_drv_rma_ops shm_rma_ops;
/* May we read and write peers' memory? Decided once at open. */
bool shm_cma_usable(int want);
int shm_rma_completions_now(struct mrail_drv *drv);
/* Queued gets run, then finished reads and writes reported (progress). */
static inline int shm_rma_completions(struct mrail_drv *drv)
{
	return drv->rma_head ? shm_rma_completions_now(drv) : 0;
}
/* Queued gets run (end of a progress pass or of a get issued outside). */
void shm_rma_run_pending(struct mrail_drv *drv);
/* dc hooks: ep's finished operations fail (after ep_error) or vanish. */
void shm_rma_fail_of(struct dc_ep *ep, int status);
void shm_rma_drop_of(struct dc_ep *ep);
void shm_rma_fini(struct mrail_drv *drv);

#endif
