/*
 * Fake driver internals, shared by fake.c (instance, connections,
 * progress), fake_params.c, fake_frame.c (two-sided frames) and fake_rma.c
 * (registrations, get/put). docs/driver-fake.md is the reference.
 */
#ifndef MRAIL_DRIVERS_FAKE_INTERNAL_H
#define MRAIL_DRIVERS_FAKE_INTERNAL_H

#include "drivers/common/dc.h"
#include "drivers/common/dc_le.h"
#include "drivers/driver.h"
#include "drivers/fake/fake.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* ---- frame format (version 1) ------------------------------------------ */

/* Bytes 'M' 'R' 'F' <version> as a little-endian u32, then u32 head_len,
 * u64 body_len; then head, then body: one seqpacket message. */
#define FAKE_FRAME_MAGIC 0x0046524dU
#define FAKE_FRAME_MAGIC_MASK 0x00ffffffU
#define FAKE_FRAME_VERSION 1u
#define FAKE_FRAME_HDR_LEN 16

/* Address blob (version 1): 'M' 'R' 'F' 'A', version, rail, name length,
 * then the abstract socket name without its leading NUL. */
#define FAKE_BLOB_VERSION 1u
#define FAKE_BLOB_HDR_LEN DC_BLOB_HDR_LEN
#define FAKE_SOCK_NAME_MAX 48

/* Remote key (version 1), FAKE_RKEY_LEN bytes, little-endian. */
#define FAKE_RKEY_VERSION 1u
#define FAKE_RKEY_LEN 48

/* ---- capabilities ------------------------------------------------------ */

/* Head and body together fit one seqpacket message in a 4 MiB buffer. */
#define FAKE_MAX_HEAD (((size_t)256 << 10) + 4096)
#define FAKE_MAX_BODY ((uint64_t)128 << 10)
#define FAKE_MAX_BODY_IOV 64
#define FAKE_EAGER_MAX_HINT 32768
#define FAKE_MAX_RMA ((uint64_t)1 << 30)
#define FAKE_SOCKBUF (4 * 1024 * 1024)
#define FAKE_MAX_RAILS 16
/* Registration table slots (fixed: peers hold its address). */
#define FAKE_MR_SLOTS 16384
/* Deregistered handles kept to catch their reuse (then freed). */
#define FAKE_MR_QUARANTINE 4096
#define FAKE_NAME_LEN DC_NAME_LEN

/* Little-endian wire fields (drivers/common/dc_le.h). */
#define fake_put_le32 dc_put_le32
#define fake_put_le64 dc_put_le64
#define fake_get_le32 dc_get_le32
#define fake_get_le64 dc_get_le64

/* ---- knobs ------------------------------------------------------------- */

struct fake_params {
	int rails;
	double lat[FAKE_MAX_RAILS]; /* seconds */
	double bw[FAKE_MAX_RAILS];  /* bytes/s, 0 = unlimited */
	int64_t fail_rma_after;     /* -1 = never */
	int64_t drop_after;         /* -1 = never */
	int fail_rail;              /* -1 = every rail */
	int64_t faults;             /* at most this many faults; -1 = no cap */
	int64_t stall_after;        /* -1 = never */
	double outage_at, outage;   /* s after open; outage 0 = none */
	int inject;                 /* 1: offer inject (tests its loss) */
};

/* Parse "key=value,..."; logs and returns MRAIL_ERR_CONFIG naming the key
 * on anything malformed or unknown. */
int fake_params_parse(const char *s, struct fake_params *p);

/* ---- objects ----------------------------------------------------------- */

struct fake_listener {
	struct dc_listener dc; /* first: registered in the epoll set */
	int rail;
};

/* Frames are struct dc_send records (drivers/common): hdr holds the frame
 * header, due the time the link model lets it go. */

enum fake_rma_kind { FAKE_GET, FAKE_PUT };

struct fake_rma {
	struct fake_rma *next;
	struct mrail_drv_ep *ep;
	enum fake_rma_kind kind;
	void *op_ctx;
	double due;
	void *laddr;
	size_t len;
	struct mrail_drv_mr *lmr;
	uint64_t raddr;
	uint8_t rkey[FAKE_RKEY_LEN];
	size_t rkey_len;
	int status; /* injected or set by execution */
};

/* A table slot as it lies in the registering process's memory (read by
 * peers with process_vm_readv; layout documented in driver-fake.md). */
struct fake_mr_slot {
	uint64_t key;
	uint64_t addr;
	uint64_t len;
	uint32_t access;
	uint32_t valid;
};

#define FAKE_MR_MAGIC 0x6d724d52u
#define FAKE_MR_DEAD 0xdeadd00du
struct mrail_drv_mr {
	uint32_t magic; /* FAKE_MR_MAGIC while registered */
	uint32_t slot;
	struct mrail_drv *drv;
	uint64_t key;
	void *addr;
	size_t len;
	unsigned access;
	struct mrail_drv_mr *next; /* quarantine */
};

struct mrail_drv_ep {
	struct dc_ep dc; /* first: state, names, send queue (drivers/common) */
	int rail;
	pid_t peer_pid;
	bool drop_injected;  /* drop_after fired on this endpoint */
	bool stalled;        /* stall_after fired: frames stay queued */
	bool want_out;       /* a due frame met a full socket */

	struct sockaddr_un_blob {
		char path[FAKE_SOCK_NAME_MAX + 1];
		size_t len;
	} remote_addr;

	uint8_t *head_buf; /* FAKE_MAX_HEAD bytes, allocated on first frame */
};

struct mrail_drv {
	struct dc_drv dc; /* first: upcalls, endpoints, epoll set */
	struct fake_params par;
	struct dc_pollable timer;
	double timer_due; /* armed for this time, 0 if not armed */

	/* Modelled links: each rail's outgoing direction is busy until. */
	double link_busy[FAKE_MAX_RAILS];

	/* RMA: operations waiting for their due time, in posting order. */
	struct fake_rma *rma_head, *rma_tail;
	struct fake_mr_slot *mr_table; /* FAKE_MR_SLOTS, mmap'ed */
	uint32_t *mr_free;             /* free slot stack */
	struct mrail_drv_mr **mr_live; /* handle of each used slot */
	uint32_t mr_free_cnt;
	struct mrail_drv_mr *quarantine, *quarantine_tail;
	unsigned quarantine_cnt;
	uint64_t rma_posted; /* gets and puts on fault-affected rails */
	uint64_t frames_posted_faulty; /* frames on drop-affected rails */
	double opened_at;              /* mrail_now() at open (outage) */

	struct mrail_fake_counters cnt;
};

static inline struct mrail_drv *fake_drv(const struct mrail_drv_ep *ep)
{
	return (struct mrail_drv *)ep->dc.drv;
}

/* Is rail inside the outage window now (fake.c)? */
bool fake_rail_out(const struct mrail_drv *drv, int rail);

/* ---- fake.c ------------------------------------------------------------ */
/* Report a broken connection (progress only). With failed_sends_first,
 * queued frames get their error send_done before ep_error. */
#define fake_ep_fail(ep, status, failed_sends_first, ...) \
	dc_ep_fail(&(ep)->dc, status, failed_sends_first, __VA_ARGS__)
/* Make wait_fd readable at time `due` (or sooner if already armed so). */
void fake_timer_want(struct mrail_drv *drv, double due);
bool fake_rail_faulty(const struct mrail_drv *drv, int rail);
/* When an item of `bytes` posted now on `rail` completes (link model). */
double fake_link_due(struct mrail_drv *drv, int rail, uint64_t bytes);

/* ---- fake_frame.c ------------------------------------------------------ */
int fake_send(struct mrail_drv_ep *ep, const void *head, size_t head_len,
	      const struct iovec *body, int body_cnt, void *send_ctx);
int fake_inject(struct mrail_drv_ep *ep, const struct iovec *head, int cnt);
/* Write due frames; 0 or -errno. Sets *next_due to the earliest frame
 * still waiting for its time (unchanged if none). */
int fake_flush(struct mrail_drv_ep *ep, double now, double *next_due);
void fake_rx_process(struct mrail_drv_ep *ep);

/* ---- fake_rma.c -------------------------------------------------------- */
extern const struct mrail_drv_rma_ops fake_rma_ops;
int fake_rma_init(struct mrail_drv *drv);
void fake_rma_fini(struct mrail_drv *drv);
/* Run due operations; sets *next_due for those still waiting. */
int fake_rma_progress(struct mrail_drv *drv, double now, double *next_due);
/* Pending operations of ep complete with status (after its ep_error). */
void fake_rma_fail_of(struct mrail_drv_ep *ep, int status);
void fake_rma_drop_of(struct mrail_drv_ep *ep);
/* Check once at open that we may read peers' memory; 0 or an error. */
int fake_rma_check_permission(void);

#endif
