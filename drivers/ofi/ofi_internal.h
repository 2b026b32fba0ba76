/*
 * libfabric driver internals, shared by ofi.c (instance, connections,
 * progress), ofi_rails.c (params, fi_getinfo, rail set-up), ofi_frame.c
 * (frames: send queue, heads, bodies) and ofi_rma.c (registrations,
 * get/put). docs/driver-ofi.md is the reference.
 */
#ifndef MRAIL_DRIVERS_OFI_INTERNAL_H
#define MRAIL_DRIVERS_OFI_INTERNAL_H

#include "drivers/common/dc.h"
#include "drivers/common/dc_le.h"
#include "drivers/driver.h"

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#define OFI_FI_VERSION FI_VERSION(1, 9)

/* libfabric's entry points, loaded at first open (ofi_lib.c). */
struct ofi_lib {
	int (*getinfo)(uint32_t version, const char *node, const char *service,
		       uint64_t flags, const struct fi_info *hints,
		       struct fi_info **info);
	void (*freeinfo)(struct fi_info *info);
	struct fi_info *(*dupinfo)(const struct fi_info *info);
	int (*fabric)(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		      void *context);
	const char *(*strerror)(int errnum);
};
extern struct ofi_lib ofi_lib;
/* MRAIL_OK, or MRAIL_ERR_NOT_FOUND (logged) when libfabric is missing. */
int ofi_lib_load(void);
#define fi_getinfo ofi_lib.getinfo
#define fi_freeinfo ofi_lib.freeinfo
#define fi_dupinfo ofi_lib.dupinfo
#define fi_fabric ofi_lib.fabric
#define fi_strerror ofi_lib.strerror
#undef fi_allocinfo
#define fi_allocinfo() ofi_lib.dupinfo(NULL)

/* ---- wire (version 1, little-endian, docs/driver-ofi.md) --------------- */

/* Every message a rail endpoint receives into a head buffer starts with a
 * 32-byte driver header: 'M' 'R' 'O' <version>, type, source rail, 2
 * reserved, u32 dst_id, u32 src_id, u32 payload length, u32 body
 * sequence, u64 body length. */
#define OFI_MAGIC 0x004f524dU
#define OFI_MAGIC_MASK 0x00ffffffU
#define OFI_VERSION 1u
#define OFI_HDR_LEN 32

enum ofi_msg_type {
	OFI_HELLO = 1,  /* payload: u32 pid, then the sender's address */
	OFI_ACCEPT = 2, /* payload: u32 pid */
	OFI_REFUSE = 3,
	OFI_FRAME = 4, /* payload: the engine's head; body follows */
	OFI_CLOSE = 5,
	OFI_PING = 6,
};

/* Tags: 4 kind bits, then for bodies the receiver's connection id (28
 * bits) and the body's sequence number on that connection (32 bits). */
#define OFI_TAG_KIND_SHIFT 60
#define OFI_TAG_HEAD ((uint64_t)1 << OFI_TAG_KIND_SHIFT)
#define OFI_TAG_BODY ((uint64_t)2 << OFI_TAG_KIND_SHIFT)
#define OFI_TAG_HEAD_IGNORE (((uint64_t)1 << OFI_TAG_KIND_SHIFT) - 1)
#define OFI_ID_MAX ((1u << 28) - 1)

static inline uint64_t ofi_body_tag(uint32_t dst_id, uint32_t seq)
{
	return OFI_TAG_BODY | (uint64_t)dst_id << 32 | seq;
}

/* Address blob (version 1): 'M' 'R' 'O' 'A', version, rail, address
 * length, then the rail endpoint's fi_getname() bytes. */
#define OFI_BLOB_VERSION 1u
#define OFI_BLOB_HDR_LEN DC_BLOB_HDR_LEN
#define OFI_ADDR_MAX 56 /* the harness keeps 64-byte blobs */

/* Remote key (version 1): version, key count n (1 = one key for every
 * rail), 6 reserved, u64 base address, then n u64 keys by rail index. */
#define OFI_RKEY_VERSION 1u
#define OFI_RKEY_HDR 16
#define OFI_RKEY_MAX_KEYS ((MRAIL_DRV_RKEY_MAX - OFI_RKEY_HDR) / 8)

/* ---- capabilities ------------------------------------------------------ */

#define OFI_MAX_HEAD ((size_t)64 << 10)
#define OFI_MAX_BODY ((uint64_t)16 << 20)
#define OFI_MAX_BODY_IOV 16
/* Receive iovec capacity offered to the engine: more entries than the
 * provider takes are served through a bounce buffer. */
#define OFI_RX_IOV_CAP 64
#define OFI_EAGER_MAX_HINT 16384
#define OFI_MAX_RMA ((uint64_t)1 << 30)
#define OFI_MAX_RAILS 8
#define OFI_RX_BUFS 64
#define OFI_CQ_BATCH 32
#define OFI_PING_INTERVAL 0.5 /* seconds of silence before a ping */

/* Little-endian wire fields (drivers/common/dc_le.h). */
#define ofi_put_le32 dc_put_le32
#define ofi_put_le64 dc_put_le64
#define ofi_get_le32 dc_get_le32
#define ofi_get_le64 dc_get_le64

struct ofi_hdr {
	uint8_t type, src_rail;
	uint32_t dst_id, src_id, len, seq;
	uint64_t body_len;
};
void ofi_hdr_write(uint8_t *p, const struct ofi_hdr *h);

/* ---- knobs ------------------------------------------------------------- */

enum ofi_shm_mode { OFI_SHM_AUTO, OFI_SHM_YES, OFI_SHM_NO };

struct ofi_params {
	char provider[64];  /* "tcp;ofi_rxm" ('+' accepted for ';') */
	char domains[256];  /* comma-separated domain names, "" = all */
	int rx_bufs;
	bool provider_given; /* by the user (params or environment) */
	/* An extra shm rail for peers on this host (docs/driver-ofi.md):
	 * auto = when the provider is the default one. */
	enum ofi_shm_mode shm;
	/* wait=poll: completion queues without a wait object (FI_WAIT_NONE),
	 * as fi_pingpong opens them: no eventfd signalled per completion,
	 * no trywait; the engine never sleeps on this driver (a core per
	 * process spins). wait=fd (default): idle processes sleep. */
	bool wait_poll;
};
int ofi_params_parse(const char *s, struct ofi_params *p);

/* ---- operations (every posted libfabric call has one) ------------------ */

enum ofi_op_kind { OFI_OP_RX_HEAD, OFI_OP_TX, OFI_OP_RX_BODY, OFI_OP_RMA };

struct ofi_op {
	struct fi_context2 fctx; /* first: providers with FI_CONTEXT(2) */
	enum ofi_op_kind kind;
	struct mrail_drv_ep *ep; /* NULL: rail-owned, or orphan (ep closed) */
	struct ofi_rail *rail;
	bool orphan;             /* freed by its completion (drv->orphans) */
	struct ofi_op *orphan_next;
	void *owner;             /* the record to free */
};

/* A head buffer posted on a rail. */
struct ofi_rx {
	struct ofi_op op;
	uint8_t *buf;
};

/* One frame (or driver message) to send: header + head in `buf`, then
 * an optional body sent as a second tagged message. */
struct ofi_send {
	struct ofi_op op;
	struct ofi_send *next;
	void *send_ctx;
	bool internal;      /* driver message: no send_done */
	bool done;          /* every posted message completed */
	int pending;        /* posted messages not completed */
	int posted;         /* 0 none, 1 head, 2 head and body */
	int status;
	uint64_t bytes;     /* for backlog */
	uint64_t body_len;
	uint32_t body_tag_seq;
	size_t buf_len;
	struct fid_mr *mr[OFI_MAX_BODY_IOV + 1]; /* FI_MR_LOCAL */
	void *desc[OFI_MAX_BODY_IOV + 1];
	int iov_cnt;
	struct iovec iov[OFI_MAX_BODY_IOV];
	uint8_t *buf;
	struct ofi_op body_op; /* completion of the body message */
};

/* A head that arrived early (before a lower-numbered one) or while a
 * body of the same connection was being received: kept (copied, sorted by
 * number) until its turn, so frames reach the engine in order. */
struct ofi_held {
	struct ofi_held *next;
	struct ofi_hdr h;
	size_t len;
	uint8_t data[];
};

struct ofi_rma_op {
	struct ofi_op op;
	struct ofi_rma_op *next; /* queued (EAGAIN) */
	bool is_put;
	void *op_ctx;
	void *laddr;
	size_t len;
	void *desc;
	uint64_t raddr;
	uint64_t key;
	bool posted;
};

struct ofi_body_rx {
	struct ofi_op op;
	bool posted, post_again;
	uint32_t seq;
	struct iovec iov[OFI_RX_IOV_CAP];
	int cnt;
	uint64_t len;
	void *cookie;
	uint8_t *bounce; /* more entries than the provider takes */
	struct fid_mr *mr[OFI_RX_IOV_CAP];
	void *desc[OFI_RX_IOV_CAP];
};

/* ---- rails, connections, instance -------------------------------------- */

struct ofi_peer {
	struct ofi_peer *next;
	uint8_t addr[OFI_ADDR_MAX];
	size_t len;
	fi_addr_t fa;
};

struct ofi_rail {
	struct mrail_drv *drv;
	int index;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	int cq_fd; /* -1: the CQ has no wait fd */
	bool up;   /* endpoint enabled and head buffers posted */
	bool mr_local, virt_addr, prov_key, mr_endpoint, rma;
	bool directed; /* FI_DIRECTED_RECV: body receives name their peer */
	size_t inject_size;
	size_t rx_iov_limit;
	uint8_t addr[OFI_ADDR_MAX];
	size_t addr_len;
	char name[MRAIL_DRV_RAIL_NAME_MAX];
	char fabric_name[MRAIL_DRV_FABRIC_MAX];
	char printable[96];
	int scope;
	struct ofi_rx *rx;
	int nrx;
	uint8_t *rx_mem;
	struct fid_mr *rx_mr;
	struct ofi_rx **rx_repost; /* head buffers -FI_EAGAIN refused */
	int nrepost;
	struct ofi_peer *peers;
};

struct mrail_drv_ep {
	struct dc_ep dc; /* first: state, ctx, names, backlog (drivers/common) */
	struct ofi_rail *rail;
	uint32_t id, peer_id;
	int peer_rail;
	pid_t peer_pid;
	fi_addr_t peer;

	struct ofi_send *sq_head, *sq_tail; /* not fully posted, in order */
	struct ofi_send *if_head, *if_tail; /* posted, reported in order */
	/* Frames (and CLOSE) are numbered per connection when posted:
	 * completions of one connection may come out of order (a large
	 * head travels by rendezvous), the receiver restores it. Bodies
	 * have their own count, which names their tag. */
	uint32_t tx_seq, rx_seq, tx_body_seq, rx_body_seq;
	int inflight_ops; /* messages and RMA posted, not completed */

	struct ofi_body_rx *body; /* the body receive in progress */
	struct ofi_held *held_head, *held_tail;

	struct ofi_rma_op *rq_head, *rq_tail; /* RMA refused with EAGAIN */
	struct ofi_rma_op *rma_inflight;

	bool tx_hold;      /* accepting: nothing leaves before ACCEPT */
	bool fail_pending; /* ep_error to report from progress */
	int fail_status;
	char fail_why[160];

	double last_heard, last_sent;
};

struct mrail_drv {
	struct dc_drv dc; /* first: upcalls, endpoints */
	struct ofi_params par;
	struct ofi_rail rails[OFI_MAX_RAILS];
	int nrails;
	int epfd;    /* CQ wait fds, the timer and the kick eventfd */
	int kickfd;  /* eventfd: progress has work without a CQ event */
	int timerfd; /* pings */
	bool busy_poll; /* a CQ without wait fd: wait_fd always readable */
	uint32_t next_id;
	/* Progress rounds in a row that found nothing. While the engine
	 * keeps finding work it polls again at once: no eventfd write or
	 * read, no epoll drain, no fi_trywait (4 system calls a round, half
	 * of the small-message latency over tcp;ofi_rxm). Past
	 * OFI_ARM_AFTER idle rounds (the engine spins 64 before it sleeps)
	 * the wait fds are drained and armed before every round. */
	unsigned idle_rounds;
	struct ofi_op *orphans; /* ops of closed connections still posted */
	uint64_t mr_next_key;
	double last_ping_scan;
};

struct mrail_drv_mr {
	struct mrail_drv *drv;
	void *addr;
	size_t len;
	struct fid_mr *mr[OFI_MAX_RAILS];
};

static inline struct mrail_drv *ofi_drv(const struct mrail_drv_ep *ep)
{
	return (struct mrail_drv *)ep->dc.drv;
}

/* ---- ofi.c ------------------------------------------------------------- */
extern const struct mrail_drv_ops mrail_ofi_driver_ops;
/* Mark ep failed; ep_error (and failed completions) come from progress. */
void ofi_ep_fail(struct mrail_drv_ep *ep, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Make wait_fd readable: progress has work that no CQ event announces.
 * Skipped while progress runs busy (idle_rounds below OFI_ARM_AFTER): the
 * next round finds the work anyway, and a round that goes idle arms. */
void ofi_kick(struct mrail_drv *drv);
enum { OFI_ARM_AFTER = 16 };
struct mrail_drv_ep *ofi_ep_by_id(struct ofi_rail *r, uint32_t id);
/* HELLO / ACCEPT / REFUSE / CLOSE / PING handling (from progress). */
void ofi_handle_control(struct ofi_rail *r, const struct ofi_hdr *h,
			const uint8_t *payload);
const char *ofi_strerror(int fi_rc);
/* ep closed with op still posted: its completion frees it. */
void ofi_orphan(struct mrail_drv *drv, struct ofi_op *op);
/* op completed: if an orphan, unlist and free it and return true. */
bool ofi_orphan_done(struct mrail_drv *drv, struct ofi_op *op);

/* ---- ofi_rails.c ------------------------------------------------------- */
int ofi_rails_discover(struct mrail_drv *drv);
/* Create the rail's endpoint and post its head buffers (once). */
int ofi_rail_up(struct ofi_rail *r);
void ofi_rail_fini(struct ofi_rail *r);
/* fi_addr of a peer address on r (inserted once). */
int ofi_rail_peer(struct ofi_rail *r, const void *addr, size_t len,
		  fi_addr_t *fa);
/* Post one head buffer; queues it when the provider says -FI_EAGAIN. */
void ofi_rx_post(struct ofi_rail *r, struct ofi_rx *rx);
void ofi_rx_repost_pending(struct ofi_rail *r);

/* ---- ofi_frame.c ------------------------------------------------------- */
int ofi_send(struct mrail_drv_ep *ep, const void *head, size_t head_len,
	     const struct iovec *body, int body_cnt, void *send_ctx);
/* A driver message (control) on ep's queue, ahead of nothing. */
int ofi_send_internal(struct mrail_drv_ep *ep, const struct ofi_hdr *h,
		      const void *payload, size_t len);
/* A control message outside any connection (REFUSE, CLOSE): fire and
 * forget. */
void ofi_send_loose(struct ofi_rail *r, fi_addr_t to, const struct ofi_hdr *h,
		    const void *payload, size_t len);
uint64_t ofi_ep_backlog(struct mrail_drv_ep *ep);
/* Post what the queue holds, in order, until the provider says EAGAIN. */
void ofi_sq_flush(struct mrail_drv_ep *ep);
void ofi_tx_complete(struct ofi_op *op, int status);
void ofi_rx_head_complete(struct ofi_rx *rx, size_t len);
void ofi_rx_body_complete(struct mrail_drv_ep *ep, size_t len, int status);
/* Retry a body receive refused with EAGAIN. */
void ofi_body_repost(struct mrail_drv_ep *ep);
/* send_done for completed sends, in posting order (progress only). */
int ofi_run_done(struct mrail_drv *drv);
/* Queued and in-flight sends of ep: failed (send_done with status) or
 * dropped silently (ep_close). */
void ofi_sends_fail(struct mrail_drv_ep *ep, int status);
void ofi_sends_drop(struct mrail_drv_ep *ep);
void ofi_rx_drop(struct mrail_drv_ep *ep);
/* Deliver kept heads whose turn came (after connecting). */
void ofi_run_held(struct mrail_drv_ep *ep);
void ofi_mr_local_release(struct fid_mr **mr, int n);
int ofi_mr_local(struct ofi_rail *r, const struct iovec *iov, int cnt,
		 uint64_t access, struct fid_mr **mr, void **desc);

/* ---- ofi_rma.c --------------------------------------------------------- */
extern const struct mrail_drv_rma_ops ofi_rma_ops;
void ofi_rma_complete(struct ofi_rma_op *op, int status);
void ofi_rma_flush(struct mrail_drv_ep *ep);
void ofi_rma_fail(struct mrail_drv_ep *ep, int status);
void ofi_rma_drop(struct mrail_drv_ep *ep);

#endif
