/*
 * Verbs driver internals, shared by verbs.c (instance, devices,
 * connections, progress), verbs_rails.c (rails and their nominal model),
 * verbs_conn.c (the UD connection handshake) and verbs_data.c (frames
 * over RC SENDs with credits, get/put). docs/driver-verbs.md is the
 * reference for every format.
 */
#ifndef MRAIL_DRIVERS_VERBS_INTERNAL_H
#define MRAIL_DRIVERS_VERBS_INTERNAL_H

#include "drivers/common/dc.h"
#include "drivers/common/dc_le.h"
#include "drivers/driver.h"
#include "drivers/verbs/verbs_api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* ---- sizes ------------------------------------------------------------- */
#define VB_BUF 32768       /* one eager buffer = one RC message */
#define VB_HDR 16          /* message header (docs: RC messages) */
#define VB_RECV_DEPTH 64   /* receives posted per RC QP = initial credits */
#define VB_SEND_BUFS 64    /* bounce buffers per connection */
#define VB_CREDIT_RESERVE 2 /* credits only credit messages may use */
#define VB_CREDIT_THRESH 16 /* return credits explicitly from this many */
#define VB_RMA_DEPTH 64    /* RDMA work requests in flight per QP */
#define VB_INLINE 128      /* asked for; what the QP grants is used */
#define VB_MAX_HEAD (VB_BUF - VB_HDR)
#define VB_MAX_BODY ((uint64_t)1 << 20)
#define VB_MAX_BODY_IOV 64
#define VB_EAGER_MAX_HINT 16384
#define VB_MAX_RMA ((uint64_t)1 << 30)
#define VB_UD_DEPTH 64
#define VB_UD_BUF 256 /* 40-byte GRH + a handshake message */
#define VB_UD_SEND 16 /* UD send slots per port */
#define VB_CQ_SIZE 16384
#define VB_MAX_DEV 7  /* per-device rkeys must fit MRAIL_DRV_RKEY_MAX */
#define VB_MAX_RAILS 16
#define VB_QKEY 0x4d52564bu
#define VB_RETX 0.2        /* seconds between connection requests */
#define VB_CONNECT_TRIES 50

/* RC message types */
enum { VB_MSG_FRAME = 1, VB_MSG_CONT = 2, VB_MSG_CREDIT = 3, VB_MSG_RTU = 4 };
#define VB_MSG_VERSION 1
/* UD handshake */
enum { VB_CM_REQ = 1, VB_CM_REP = 2, VB_CM_DISC = 3, VB_CM_REJ = 4 };
#define VB_CM_VERSION 1
#define VB_CM_LEN 60
#define VB_BLOB_VERSION 1
#define VB_BLOB_LEN 32
#define VB_RKEY_VERSION 1

/* Little-endian wire fields (drivers/common/dc_le.h). */
#define vb_put32 dc_put_le32
#define vb_put64 dc_put_le64
#define vb_get32 dc_get_le32
#define vb_get64 dc_get_le64

/* ---- objects ----------------------------------------------------------- */

/* What a completion's wr_id points to. */
enum vb_wr_kind { VB_WR_RECV, VB_WR_SEND, VB_WR_RMA, VB_WR_UD_RECV,
		  VB_WR_UD_SEND };
struct vb_wr {
	enum vb_wr_kind kind;
	int idx;
	struct mrail_drv_ep *ep; /* RC kinds */
	struct vb_port *port;    /* UD kinds */
	struct vb_frame *frame;  /* VB_WR_SEND of frame data */
};

struct vb_dev {
	struct mrail_drv *drv;
	int index;
	struct ibv_device *ibdev;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	char name[32];
	bool near;
};

struct vb_port {
	struct vb_dev *dev;
	uint8_t num;
	char name[MRAIL_DRV_RAIL_NAME_MAX];
	char fabric[MRAIL_DRV_FABRIC_MAX];
	struct ibv_port_attr attr;
	union ibv_gid gid;
	bool eth;
	double bw;
	/* the listener: a UD QP */
	struct ibv_qp *ud;
	struct ibv_mr *ud_mr;
	uint8_t *ud_buf; /* VB_UD_DEPTH receive + VB_UD_SEND send slots */
	struct vb_wr ud_wr[VB_UD_DEPTH + VB_UD_SEND];
	int ud_send_next;
	int ud_send_busy;
};

struct vb_frame {
	struct vb_frame *next;
	void *send_ctx;
	const uint8_t *head;
	size_t head_len;
	uint64_t body_len;
	uint64_t body_sent; /* bytes copied into messages */
	bool head_sent;
	int inflight; /* messages posted, not completed */
	int body_cnt;
	struct iovec body[];
};

struct vb_rma {
	struct vb_wr wr; /* first: completions give &wr */
	struct vb_rma *next;
	bool read;
	void *op_ctx;
	void *laddr;
	size_t len;
	uint32_t lkey, rkey;
	uint64_t raddr;
	bool posted;
};

/* States are drivers/common's: DC_EP_CONNECTING (REQ sent, waiting for
 * REP), DC_EP_CONNECTED, DC_EP_FAILED, DC_EP_CLOSED (kept while work
 * requests are outstanding: dc_hooks.ep_busy). */
struct mrail_drv_ep {
	struct dc_ep dc; /* first: state, ctx, names, backlog (drivers/common) */
	struct vb_port *port;
	bool established; /* may send: REP seen, or first message seen */
	bool accepted;

	struct ibv_qp *qp;
	uint32_t psn;
	uint32_t req_id;
	/* the peer */
	union ibv_gid rgid;
	uint16_t rlid;
	uint32_t rqpn, rud_qpn, rpsn;
	uint8_t rdev; /* index of its device in its rkeys */
	uint8_t mtu;
	struct ibv_ah *ah; /* to the peer's UD listener */
	double next_retx;
	int tries;

	/* buffers: VB_RECV_DEPTH receive then VB_SEND_BUFS send */
	uint8_t *buf;
	struct ibv_mr *mr;
	struct vb_wr rwr[VB_RECV_DEPTH];
	struct vb_wr swr[VB_SEND_BUFS];
	int sfree[VB_SEND_BUFS];
	int nsfree;
	uint32_t max_inline;

	int credits;   /* receives the peer has posted for us */
	int to_return; /* receives we reposted since we last said so */
	int sq_out;    /* send work requests outstanding */
	int sq_max;
	int posted;    /* all work requests outstanding (zombie lifetime) */

	struct vb_frame *fq_head, *fq_tail; /* in posting order */
	struct vb_frame *fq_post; /* first frame not wholly posted */
	/* failed or dropped work whose requests are still outstanding:
	 * freed with the endpoint */
	struct vb_frame *dead_frames;
	struct vb_rma *dead_rma;
	int post_err; /* a post failed outside progress (errno) */
	bool flushed; /* a work request was flushed: the QP is in error */
	struct vb_rma *rma_head, *rma_tail; /* in posting order */

	/* a body arriving over several messages */
	bool rx_body;
	void *rx_cookie;
	struct iovec rx_iov[VB_MAX_BODY_IOV];
	int rx_cnt, rx_i;
	size_t rx_off;
	uint64_t rx_left;
};

struct mrail_drv {
	struct dc_drv dc; /* first: upcalls, endpoints */
	const struct mrail_verbs_api *api;
	int epfd;
	int timerfd;
	double timer_due;
	struct vb_dev devs[VB_MAX_DEV];
	int ndev;
	struct vb_port ports[VB_MAX_RAILS];
	int nports;
	uint32_t next_req_id;
	int gid_index; /* GID table entry of every port (RoCE v2: often 1 or 3) */
};

static inline struct mrail_drv *vb_drv(const struct mrail_drv_ep *ep)
{
	return (struct mrail_drv *)ep->dc.drv;
}

/* ---- verbs.c ----------------------------------------------------------- */
/* Fail ep (progress only): ep_error, then errors for its pending work.
 * tell_peer: send the peer a DISC through its listener. */
void vb_ep_fail(struct mrail_drv_ep *ep, int status, bool tell_peer,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void vb_timer_want(struct mrail_drv *drv, double due);
struct mrail_drv_ep *vb_ep_by_qpn(struct mrail_drv *drv, struct vb_dev *dev,
				  uint32_t qpn);
/* RC QP to RTR and RTS towards the peer recorded in ep. */
int vb_qp_connect(struct mrail_drv_ep *ep);
int vb_ep_setup(struct mrail_drv_ep *ep); /* QP (INIT), buffers, receives */
void vb_ep_destroy(struct mrail_drv_ep *ep);
/* Register a set-up endpoint with drivers/common. */
void vb_ep_add(struct mrail_drv *drv, struct mrail_drv_ep *ep,
	       enum dc_ep_state state, void *ctx);

/* ---- verbs_rails.c ----------------------------------------------------- */
/* Active ports of d become rails (name, fabric, nominal bandwidth). */
void vb_add_ports(struct mrail_drv *drv, struct vb_dev *d, int nports);
/* Which devices are near the process's CPUs (list: the device list the
 * devices were opened from, in drv->devs order). */
void vb_locality(struct mrail_drv *drv, struct ibv_device **list);
/* Rails of near devices first, stable otherwise. */
void vb_order_ports(struct mrail_drv *drv);
int vb_list_rails(struct mrail_drv *drv, struct mrail_drv_rail_desc *out,
		  int max);

/* ---- verbs_conn.c ------------------------------------------------------ */
int vb_listener_open(struct vb_port *p);
void vb_listener_close(struct vb_port *p);
void vb_cm_send(struct vb_port *p, struct ibv_ah *ah, uint32_t ud_qpn,
		int type, const struct mrail_drv_ep *ep, uint32_t target);
void vb_cm_recv(struct vb_port *p, const uint8_t *buf, uint32_t len);
void vb_ud_completion(struct vb_port *p, const struct ibv_wc *wc);
struct ibv_ah *vb_ah_create(struct vb_port *p, const union ibv_gid *gid,
			    uint16_t lid);
/* Connection requests to resend; returns the earliest next time. */
double vb_cm_retransmit(struct mrail_drv *drv, double now);

/* ---- verbs_data.c ------------------------------------------------------ */
int vb_send(struct mrail_drv_ep *ep, const void *head, size_t head_len,
	    const struct iovec *body, int body_cnt, void *send_ctx);
int vb_post_recv(struct mrail_drv_ep *ep, int idx);
/* Post what credits and queue room allow (frames, credits, RMA). */
void vb_ep_push(struct mrail_drv_ep *ep);
void vb_rc_completion(struct mrail_drv_ep *ep, struct vb_wr *w,
		      const struct ibv_wc *wc);
/* After ep_error: pending sends and RMA complete with status. */
void vb_ep_fail_pending(struct mrail_drv_ep *ep, int status);
void vb_ep_drop_pending(struct mrail_drv_ep *ep);
/* Frames and operations kept for outstanding work requests. */
void vb_ep_free_dead(struct mrail_drv_ep *ep);
int vb_send_rtu(struct mrail_drv_ep *ep);
extern const struct mrail_drv_rma_ops vb_rma_ops;

#endif
