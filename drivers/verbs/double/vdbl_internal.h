/*
 * The verbs test double (a fake HCA): internals shared by vdbl.c
 * (devices, contexts, PDs, MRs, CQs, completion channels, the shared
 * segment) and vdbl_qp.c (QP state machine, work request execution).
 * docs/driver-verbs.md describes what it models.
 *
 * Every process that opens a double device owns one POSIX shared memory
 * segment "/mrail-vdbl.<pid>" holding its QPs (state, receive queue),
 * CQ rings and MR table, all under one process-shared robust mutex.
 * A work request is executed by the posting process at post time: it
 * maps the target's segment (found from the GID, which encodes the pid),
 * checks what an HCA would, moves the data with process_vm_readv/writev,
 * and pushes completions into both sides' CQs. A completion channel is
 * an abstract AF_UNIX datagram socket the posting side writes to.
 */
#ifndef MRAIL_DRIVERS_VERBS_DOUBLE_INTERNAL_H
#define MRAIL_DRIVERS_VERBS_DOUBLE_INTERNAL_H

#include "drivers/verbs/verbs_api.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define VDBL_MAGIC 0x4c424456u /* "VDBL" */
#define VDBL_VERSION 1u
#define VDBL_MAX_DEV 4
#define VDBL_MAX_PORT 2
#define VDBL_MAX_QP 512 /* slot = qpn % VDBL_MAX_QP */
#define VDBL_QP_SLOT_BITS 9
#define VDBL_RQ_MAX 256
#define VDBL_MAX_SGE 4
#define VDBL_MAX_CQ 16
#define VDBL_CQ_MAX 16384
#define VDBL_MAX_MR 16384 /* slot = key % VDBL_MAX_MR */
#define VDBL_MR_SLOT_BITS 14
#define VDBL_MAX_INLINE 256
#define VDBL_MAX_MSG ((uint64_t)1 << 30)
#define VDBL_GRH 40

struct vdbl_sge {
	uint64_t addr;
	uint32_t len, lkey;
};

struct vdbl_rwr {
	uint64_t wr_id;
	uint32_t num_sge, pad;
	struct vdbl_sge sge[VDBL_MAX_SGE];
};

struct vdbl_sqp {
	uint32_t used;
	uint32_t qpn;
	uint32_t type;  /* IBV_QPT_RC, IBV_QPT_UD */
	uint32_t state; /* enum ibv_qp_state */
	uint32_t dev, port;
	uint32_t qkey;
	uint32_t access; /* qp_access_flags */
	int32_t send_cq, recv_cq;
	uint32_t max_recv_wr, max_inline;
	uint8_t rgid[16]; /* RC: the connected QP (from RTR) */
	uint32_t rqpn;
	uint32_t rq_head, rq_count;
	struct vdbl_rwr rq[VDBL_RQ_MAX];
};

struct vdbl_swc {
	uint64_t wr_id;
	uint32_t status, opcode, byte_len, qp_num, src_qp, wc_flags;
};

struct vdbl_scq {
	uint32_t used, size, head, count, armed;
	int32_t channel; /* -1: none */
	struct vdbl_swc ring[VDBL_CQ_MAX];
};

struct vdbl_smr {
	uint32_t used, key, access, pad;
	uint64_t addr, len;
};

struct vdbl_shm {
	uint32_t magic, version;
	uint32_t pid, nonce;
	pthread_mutex_t lock;
	uint32_t qp_gen, mr_gen;
	struct vdbl_sqp qp[VDBL_MAX_QP];
	struct vdbl_scq cq[VDBL_MAX_CQ];
	struct vdbl_smr mr[VDBL_MAX_MR];
};

struct vdbl_conf {
	int devices, ports;
	int speed, width; /* ibv_port_attr codes */
	int near;         /* device near the process, -1: all */
	int64_t fail_after; /* RC work requests before a forced error */
	int64_t fail_min;   /* only RDMA requests of this many bytes count
			       (0: every RC request) */
	int fail_status;    /* enum ibv_wc_status of the forced error */
	int fail_rank;      /* only in this MRAIL_RANK, -1: any */
};

/* Process-local objects wrap the libibverbs structs. */
struct vdbl_device {
	struct ibv_device dev;
	int index;
};
struct vdbl_ctx {
	struct ibv_context ctx;
	struct vdbl_device *d;
};
struct vdbl_cq {
	struct ibv_cq cq;
	int slot;
};
struct vdbl_ch {
	struct ibv_comp_channel ch;
	int id;
};
struct vdbl_qp {
	struct ibv_qp qp;
	int slot;
};
struct vdbl_ah {
	struct ibv_ah ah;
	union ibv_gid dgid;
};

struct vdbl_global {
	pthread_mutex_t mu; /* this process's tables below */
	pid_t pid;          /* owner (a forked child starts afresh) */
	int opens;
	struct vdbl_conf conf;
	bool fail_here;
	int64_t rc_posted;
	struct vdbl_shm *shm;
	char shm_name[64];
	struct vdbl_device devs[VDBL_MAX_DEV];
	struct vdbl_cq *cqs[VDBL_MAX_CQ];
	int next_channel;
};

extern struct vdbl_global vdbl_g;

void vdbl_lock(struct vdbl_shm *s);
void vdbl_unlock(struct vdbl_shm *s);
/* The segment of the process a GID names (ours included); NULL if it is
 * gone. */
struct vdbl_shm *vdbl_peer(const uint8_t gid[16]);
void vdbl_gid(int dev, int port, uint8_t gid[16]);
/* Push a completion into cq slot of segment s (locked); returns the
 * channel to notify or -1. */
int vdbl_push_wc(struct vdbl_shm *s, int cq, const struct vdbl_swc *wc);
void vdbl_notify(const struct vdbl_shm *s, int channel);
bool vdbl_mr_ok(const struct vdbl_shm *s, uint32_t key, uint64_t addr,
		uint64_t len, uint32_t access);

/* vdbl_qp.c */
struct ibv_qp *vdbl_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a);
int vdbl_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask);
int vdbl_destroy_qp(struct ibv_qp *qp);
int vdbl_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad);
int vdbl_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad);
/* Move a QP (segment locked) to ERR, flushing its receive queue. */
int vdbl_qp_to_err(struct vdbl_shm *s, struct vdbl_sqp *q);

#endif
