/*
 * The libfabric provider `mrail` (docs/provider.md): internals shared by
 * its files. One libmrail engine per endpoint; the fabric, domain, address
 * vector and completion queue objects are thin bookkeeping around it.
 */
#ifndef MRFI_H
#define MRFI_H

#include <mrail.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_prov.h>
#include <rdma/providers/fi_log.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define MRFI_NAME "mrail"
#define MRFI_PROV_VERSION FI_VERSION(0, 1)
#define MRFI_FI_VERSION FI_VERSION(1, 17)

/* Untagged messages travel as engine messages with this tag; tagged ones
 * keep the application's 64 bits (Open MPI's ofi MTL uses bit 63 for its
 * protocol, so no bit can be taken from them). The one overlap (a tagged
 * message with tag ~0, a tagged receive whose unmasked bits are all 1s)
 * is documented in docs/provider.md. */
#define MRFI_MSG_TAG (~(uint64_t)0)

/* Bytes of remote CQ data carried (domain_attr.cq_data_size). */
#define MRFI_CQ_DATA_SIZE 8

extern struct fi_provider mrfi_prov;

struct mrfi_fabric {
	struct fid_fabric fabric;
};

struct mrfi_domain {
	struct fid_domain domain;
	struct mrfi_fabric *fab;
	uint64_t mr_key;
	pthread_mutex_t lock;
};

struct mrfi_ep;

/* An address vector: inserted names in order (fi_addr = index, for
 * FI_AV_MAP too: a map's addresses are the provider's to choose) and the
 * engine blob each one was resolved to. */
struct mrfi_av_entry {
	unsigned char *blob;
	size_t blob_len;
	unsigned char name[FI_NAME_MAX];
	size_t name_len;
	int removed;
};

#define MRFI_AV_EPS 8

struct mrfi_av {
	struct fid_av av;
	struct mrfi_domain *dom;
	enum fi_av_type type;
	pthread_mutex_t lock;
	struct mrfi_av_entry *ent;
	size_t n, cap;
	struct mrfi_ep *eps[MRFI_AV_EPS];
	int neps;
};

/* One completion, success or error. */
struct mrfi_cqe {
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	int err;         /* 0 or a positive FI_E* */
	int prov_errno;  /* the engine's MRAIL_ERR_* */
	size_t olen;     /* bytes that did not fit (truncation) */
};

#define MRFI_CQ_EPS 8

struct mrfi_cq {
	struct fid_cq cq;
	struct mrfi_domain *dom;
	enum fi_cq_format format;
	pthread_mutex_t lock;
	struct mrfi_cqe *q;       /* ring */
	size_t head, count, cap;
	struct mrfi_ep *eps[MRFI_CQ_EPS];
	int neps;
	int signaled;
	/* FI_WAIT_FD (mrfi_cq.c): epfd holds the bound engines' wait
	 * descriptors (mrail_wait_fd) and efd, an eventfd written when an
	 * entry arrives while armed (fi_trywait said "sleep") or on
	 * fi_cq_signal; -1 without a wait object. */
	int epfd, efd;
	int armed;
};

#define MRFI_CNTR_EPS 8

/* A completion counter (mrfi_cntr.c). */
struct mrfi_cntr {
	struct fid_cntr cntr;
	struct mrfi_domain *dom;
	_Atomic uint64_t val, err;
	pthread_mutex_t lock;     /* eps */
	struct mrfi_ep *eps[MRFI_CNTR_EPS];
	int neps;
};

/* The kinds of operation a counter can be bound to (fi_ep_bind flags). */
enum mrfi_cntr_kind {
	MRFI_CNTR_SEND, MRFI_CNTR_RECV, MRFI_CNTR_READ, MRFI_CNTR_WRITE,
	MRFI_CNTR_RREAD, MRFI_CNTR_RWRITE, MRFI_CNTR_KINDS
};

struct mrfi_mrecv;

/* A posted operation: what its completion must report. */
struct mrfi_op {
	struct mrfi_ep *ep;
	void *context;
	uint64_t flags;     /* FI_SEND|FI_RECV|FI_TAGGED|FI_MSG... for the CQ */
	void *buf;
	size_t len;
	int report;         /* write a completion (selective completion) */
	int discard;        /* FI_DISCARD: truncation is the point */
	mrail_request_t *req;
	struct mrfi_op *prev, *next; /* pending receives, for fi_cancel */
	int pending;
	struct mrfi_mrecv *multi;    /* a message of an FI_MULTI_RECV buffer */
};

struct mrfi_ep {
	struct fid_ep ep;
	struct mrfi_domain *dom;
	struct fi_info *info;
	uint64_t caps;
	mrail_engine_t *engine;
	struct mrfi_av *av;
	struct mrfi_cq *tx_cq, *rx_cq;
	uint64_t tx_flags, rx_flags;  /* FI_SELECTIVE_COMPLETION from bind */
	struct mrfi_cntr *cntr[MRFI_CNTR_KINDS]; /* bound counters or NULL */
	uint64_t tx_op_flags, rx_op_flags;
	int enabled;
	pthread_mutex_t lock;         /* pending list, peer maps */
	struct mrfi_op *pending;      /* posted receives not yet complete */
	/* fi_addr -> engine peer and back (peers this engine added). */
	mrail_peer_t *peer_of;        /* by fi_addr; MRAIL_ANY_PEER = none */
	size_t npeer_of;
	fi_addr_t *addr_of;           /* by engine peer */
	size_t naddr_of;
	/* Engines this endpoint added, by engine uuid (address blob bytes
	 * 8..15): a peer may be added by its own request to our name
	 * service before (or without) our fi_av_insert of it. */
	struct mrfi_known { uint64_t uuid; mrail_peer_t peer; } *known;
	size_t nknown, capknown;
	struct mrfi_name_srv *srv;
	unsigned char name[FI_NAME_MAX];
	size_t name_len;
	int sampled;                  /* the job's insert was seen (mrfi_sample.c) */
	int sampling;                 /* a sampling session runs (atomic) */
	int sampled_ok;               /* one session succeeded */
	unsigned seed;                /* pauses between sampling requests */
	/* FI_MULTI_RECV buffers (mrfi_multi.c), oldest first, and a message
	 * claimed for them that waits for the next buffer. */
	pthread_mutex_t mr_lock;
	struct mrfi_mrecv *mr_head, *mr_tail;
	mrail_message_t *mr_msg;
	size_t mr_msg_len;
	size_t min_multi_recv;        /* FI_OPT_MIN_MULTI_RECV */
};

/* mrfi_info.c */
int mrfi_getinfo(uint32_t version, const char *node, const char *service,
		 uint64_t flags, const struct fi_info *hints,
		 struct fi_info **info);

/* mrfi_domain.c */
int mrfi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		     void *context);

/* mrfi_eq.c */
int mrfi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		 struct fid_eq **eq, void *context);

/* mrfi_av.c */
int mrfi_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		 struct fid_av **av, void *context);
int mrfi_av_attach(struct mrfi_av *av, struct mrfi_ep *ep);
void mrfi_av_detach(struct mrfi_av *av, struct mrfi_ep *ep);
int mrfi_av_blob(struct mrfi_av *av, fi_addr_t addr, unsigned char **blob,
		 size_t *len);
/* Add AV entry `addr` to the endpoint's engine (no-op if done). */
int mrfi_ep_add_peer(struct mrfi_ep *ep, fi_addr_t addr);

/* mrfi_sample.c: in-band sampling when an insert lists the job (names:
 * count names of FI_NAME_MAX bytes; addrs: what each became). */
void mrfi_sample_rails(struct mrfi_av *av, const unsigned char *names,
		       size_t count, const fi_addr_t *addrs);
/* One session at a time per endpoint: try_begin never waits. */
int mrfi_sample_try_begin(struct mrfi_ep *ep);
void mrfi_sample_end(struct mrfi_ep *ep, int ok);
/* mrail_sample_peer, logged; 1 on success. */
int mrfi_sample_with(struct mrfi_ep *ep, mrail_peer_t peer, int first);

/* mrfi_cq.c */
int mrfi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		 struct fid_cq **cq, void *context);
int mrfi_cq_attach(struct mrfi_cq *cq, struct mrfi_ep *ep);
void mrfi_cq_detach(struct mrfi_cq *cq, struct mrfi_ep *ep);
int mrfi_cq_push(struct mrfi_cq *cq, const struct mrfi_cqe *e);
/* fi_trywait for one CQ: 0 when its owner may sleep on its descriptor. */
int mrfi_cq_trywait(struct mrfi_cq *cq);
/* The fabric's trywait (mrfi_prov.c calls it for each fid). */
int mrfi_trywait(struct fid_fabric *fabric, struct fid **fids, int count);

/* mrfi_cntr.c */
int mrfi_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		   struct fid_cntr **cntr, void *context);
int mrfi_cntr_attach(struct mrfi_cntr *c, struct mrfi_ep *ep);
void mrfi_cntr_detach(struct mrfi_cntr *c, struct mrfi_ep *ep);
/* One completion (error: a failed one) of an operation; c may be NULL. */
void mrfi_cntr_inc(struct mrfi_cntr *c, int error);

/* mrfi_ep.c */
/* Drive the endpoint's engine and its multi-recv buffers. */
void mrfi_ep_progress(struct mrfi_ep *ep);
int mrfi_ep_open(struct fid_domain *domain, struct fi_info *info,
		 struct fid_ep **ep, void *context);
fi_addr_t mrfi_ep_addr_of(struct mrfi_ep *ep, mrail_peer_t peer);
int mrfi_ep_peer_of(struct mrfi_ep *ep, fi_addr_t addr, mrail_peer_t *peer);
/* The engine peer of an address blob, added now if new. */
int mrfi_ep_peer_by_blob(struct mrfi_ep *ep, const unsigned char *blob,
			 size_t len, mrail_peer_t *peer);
int mrfi_ep_peer_by_uuid(struct mrfi_ep *ep, uint64_t uuid,
			 mrail_peer_t *peer);
/* The engine's uuid (address blob bytes 8..15). */
uint64_t mrfi_ep_uuid(struct mrfi_ep *ep);
/* This endpoint's engine blob (malloc'd). */
int mrfi_ep_blob(struct mrfi_ep *ep, unsigned char **blob, size_t *len);
int mrfi_err(int mrail_err);

/* mrfi_xfer.c */
extern struct fi_ops_tagged mrfi_tagged_ops;
extern struct fi_ops_msg mrfi_msg_ops;
ssize_t mrfi_cancel(struct mrfi_ep *ep, void *context);
struct mrfi_op *mrfi_op_new(struct mrfi_ep *ep, size_t extra);
/* Pending (fi_cancel finds it, close frees it). */
void mrfi_op_link(struct mrfi_ep *ep, struct mrfi_op *o);
void mrfi_op_done(mrail_request_t *req, const mrail_status_t *st, void *ctx);

/* mrfi_multi.c: FI_MULTI_RECV buffers. */
int mrfi_multi_post(struct mrfi_ep *ep, const struct iovec *iov, size_t count,
		    void *context, int report);
void mrfi_multi_progress(struct mrfi_ep *ep);
void mrfi_multi_piece_done(struct mrfi_mrecv *m);
/* At close, after the engine: drops buffers and their messages' ops. */
void mrfi_multi_free_all(struct mrfi_ep *ep);
void mrfi_multi_drop_piece(struct mrfi_mrecv *m);

/* mrfi_name.c: the short endpoint name and the service behind it. */
struct mrfi_name_srv;
int mrfi_name_srv_start(struct mrfi_ep *ep, struct mrfi_name_srv **srv,
			unsigned char *name, size_t *name_len);
void mrfi_name_srv_stop(struct mrfi_name_srv *srv);
int mrfi_name_resolve(const void *name, size_t len, const unsigned char *own,
		      size_t own_len, unsigned char **blob, size_t *blob_len);
int mrfi_name_ask_sample(const unsigned char *name, uint64_t own_uuid);

/* mrfi_noops.c: -FI_ENOSYS for every slot not offered. */
int mrfi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int mrfi_no_control(struct fid *fid, int command, void *arg);
int mrfi_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		     void **ops, void *context);
int mrfi_no_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		       struct fid_pep **pep, void *context);
int mrfi_no_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		    struct fid_eq **eq, void *context);
int mrfi_no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		      struct fid_wait **waitset);
int mrfi_no_scalable_ep(struct fid_domain *domain, struct fi_info *info,
			struct fid_ep **sep, void *context);
int mrfi_no_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		      struct fid_poll **pollset);
int mrfi_no_stx_context(struct fid_domain *domain, struct fi_tx_attr *attr,
			struct fid_stx **stx, void *context);
int mrfi_no_srx_context(struct fid_domain *domain, struct fi_rx_attr *attr,
			struct fid_ep **rx_ep, void *context);
int mrfi_no_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
			 enum fi_op op, struct fi_atomic_attr *attr,
			 uint64_t flags);
int mrfi_no_query_collective(struct fid_domain *domain,
			     enum fi_collective_op coll,
			     struct fi_collective_attr *attr, uint64_t flags);
int mrfi_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		   struct fid_ep **tx_ep, void *context);
int mrfi_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		   struct fid_ep **rx_ep, void *context);
int mrfi_no_setname(fid_t fid, void *addr, size_t addrlen);
int mrfi_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen);
int mrfi_no_connect(struct fid_ep *ep, const void *addr, const void *param,
		    size_t paramlen);
int mrfi_no_listen(struct fid_pep *pep);
int mrfi_no_accept(struct fid_ep *ep, const void *param, size_t paramlen);
int mrfi_no_reject(struct fid_pep *pep, fid_t handle, const void *param,
		   size_t paramlen);
int mrfi_no_shutdown(struct fid_ep *ep, uint64_t flags);
int mrfi_no_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		 struct fid_mc **mc, void *context);
int mrfi_no_insertsvc(struct fid_av *av, const char *node, const char *service,
		      fi_addr_t *fi_addr, uint64_t flags, void *context);
int mrfi_no_insertsym(struct fid_av *av, const char *node, size_t nodecnt,
		      const char *service, size_t svccnt, fi_addr_t *fi_addr,
		      uint64_t flags, void *context);
int mrfi_no_av_set(struct fid_av *av, struct fi_av_set_attr *attr,
		   struct fid_av_set **av_set, void *context);

#endif
