/*
 * Engine internals shared by the files of libmrail/. Every function here
 * expects the engine lock to be held unless it says otherwise.
 *
 * Path of one message (read the files in this order):
 *   send.c      isend: the request joins its gate's send queue; the
 *               strategy picks an idle rail; eager messages are packed
 *               (aggregated) into a packet, large ones become an RTS record.
 *   rail.c      packets and chunks posted on a rail's driver endpoint.
 *   recv.c      a packet arrives: records are put back in send order per
 *               gate, then matched against posted receives or kept as
 *               unexpected.
 *   rdv.c       a matched RTS: the strategy splits the payload into chunks
 *               (rail, offset, length); RTR per chunk; the sender answers
 *               with DATA frames whose body lands in the user buffer.
 *   request.c   completion, test/wait.
 */
#ifndef MRAIL_ENGINE_H
#define MRAIL_ENGINE_H

#include <pthread.h>
#include <stdint.h>

#include "mrail.h"
#include "drivers/driver.h"
#include "strategies/strategy.h"
#include "util/auth.h"
#include "util/list.h"
#include "libmrail/wire.h"
#include "rails/netif.h"
#include "util/iov.h"

#include <stdio.h>

#define MRAIL_IOV_MAX 1024
#define MRAIL_MAX_DRIVERS 8
#define MRAIL_EAGER_MAX_LIMIT (1u << 20)
#define MRAIL_EAGER_MAX_DEFAULT 32768

/* ---- requests --------------------------------------------------------- */
enum req_kind { REQ_SEND = 1, REQ_RECV = 2 };

enum req_phase {
	REQ_QUEUED,       /* send: on the gate's send queue */
	REQ_POSTED,       /* recv: on the posted queue, unmatched */
	REQ_RDV_WAIT_RTR, /* send: RTS sent, waiting for the receiver */
	REQ_RDV_ACTIVE,   /* payload chunks moving */
	REQ_SELF_WAIT,    /* send to self, parked until matched */
	REQ_SYNC_WAIT,    /* sync eager send: sent, waiting for SYNC_ACK */
	REQ_DONE,
};

/* Request flags (public MRAIL_REQ_* in the low bits). */
#define REQF_SYNC MRAIL_REQ_SYNC
#define REQF_KEEP MRAIL_REQ_KEEP
#define REQF_STORAGE (1u << 8) /* caller's memory: never free()d */

/*
 * Lifetime. A request is *complete* (phase REQ_DONE) once its status is
 * final AND no driver operation references it (outstanding == 0): a
 * failure while chunks are posted or arriving first closes those rails
 * (gate_fail) or waits for them (request_fail defers). It is *released*
 * when the user gives it back (test/wait, or after its callback unless
 * MRAIL_REQ_KEEP); only then is it freed. Every live request is on
 * e->requests, so engine destroy frees what the user never collected.
 */
struct mrail_request {
	struct mrail_list link; /* in the list of its phase; e->cbq once
	                           complete with a callback due */
	struct mrail_list all_link; /* e->requests */
	struct mrail_engine *engine;
	unsigned flags;         /* REQF_* */
	mrail_request_cb_t cb;
	void *cb_ctx;
	int cb_pending;         /* complete, callback not yet returned */
	int failing;            /* failed; completes when outstanding is 0 */
	uint64_t sync_id;       /* recv: SYNC_ACK owed to the sender (0: none) */
	struct mrail_list gate_link; /* rdv requests of a gate (failure) */
	int kind;
	int phase;
	mrail_status_t status;
	struct gate *gate;      /* send: destination; recv: source when
	                           matched (NULL while posted from any) */
	mrail_peer_t peer;      /* as posted (recv: may be MRAIL_ANY_PEER) */
	uint64_t tag, mask;
	struct iovec *iov;
	int iovcnt;
	struct iovec iov1;      /* storage for contiguous buffers */
	size_t len;             /* total buffer length */
	uint64_t seq;           /* send: gate sequence number */
	uint64_t id;            /* rendezvous handle (0 if none) */
	uint64_t remote_id;     /* recv: sender's send_id */
	uint64_t expected;      /* rdv: payload bytes that will move */
	uint64_t done_bytes;    /* rdv: payload bytes moved so far */
	int outstanding;        /* driver operations still referencing us */
	int error;              /* first error seen (completion status) */
	struct rdv_rma *rma;    /* one-sided rendezvous state, or NULL */
};

/* A remote key: where a peer's registered buffer is (libmrail/rma.c). */
struct rma_key {
	uint64_t id;            /* send_id or recv_id it was sent with */
	uint64_t rails;         /* bit i: valid on rail i of the gate */
	uint64_t addr;          /* byte 0 of the message */
	uint16_t len;
	uint8_t key[MRAIL_WIRE_RKEY_MAX];
};

struct mrail_regcache_entry;
/* One-sided rendezvous state of a request (rma.c). */
struct rdv_rma {
	/* Sender: its buffer registered with each RDMA driver instance. */
	struct mrail_regcache_entry *regs[MRAIL_MAX_DRIVERS];
	/* Receiver: the sender's keys from before its RTS. */
	unsigned nkeys;
	struct rma_key keys[MRAIL_MAX_DRIVERS];
	uint64_t read_bytes;    /* receiver: payload it read by RDMA */
	uint64_t fin_bytes;     /* sender: payload the receiver read */
	struct rail *fin_rail;  /* receiver: where GET_FIN goes */
};

/* ---- rails ------------------------------------------------------------ */
enum rail_state {
	RAIL_CONNECTING,  /* connect posted, HELLO queued */
	RAIL_WAIT_HELLO,  /* accepted, HELLO not yet received */
	RAIL_WAIT_ACK,    /* connected, HELLO sent, waiting for the ACK */
	RAIL_UP,
	RAIL_CLOSED,
};

/* Something posted on a rail whose completion we must see. */
enum send_op_kind { OP_PACKET, OP_DATA, OP_GET, OP_PUT };

/* An RDMA-written chunk: PUT_FIN follows when all its puts are done. */
struct rma_chunk {
	uint64_t recv_id, offset, len;
	unsigned ops_left;
	int status;
};
struct send_op {
	struct mrail_list link; /* rail->posted, or the free list */
	int kind;
	struct rail *rail;
	struct mrail_request *req; /* OP_DATA: the send it serves */
	uint64_t bytes;            /* payload bytes carried */
	size_t cap, len;           /* OP_PACKET buffer */
	uint8_t *buf;
	int has_busy;              /* OP_PACKET: holds a BUSY record */
	struct mrail_regcache_entry *reg;       /* OP_GET/OP_PUT: local registration */
	struct rma_chunk *chunk;   /* OP_PUT: the chunk it belongs to */
};

/* A rendezvous chunk this host asked for on a rail (libmrail/busy.c). */
struct rx_expect {
	uint64_t bytes, left;
	double posted;            /* when its RTR left */
	double due;               /* predicted arrival of its last byte */
	int shared;               /* other traffic on the NICs meanwhile */
};

struct rail {
	struct mrail_list link;   /* engine->handshaking while unbound */
	struct mrail_engine *engine;
	struct gate *gate;        /* NULL until authenticated */
	unsigned index;           /* within the gate */
	int state;
	struct local_rail *local; /* the listener/driver it belongs to */
	struct mrail_drv_ep *ep;
	double deadline;          /* handshake must finish before */
	uint8_t hello_nonce[MRAIL_AUTH_NONCE_BYTES];
	uint64_t peer_uuid;       /* accepted: from an authenticated HELLO */
	unsigned hello_nrails;    /* accepted: rails the peer planned */
	int authenticated;        /* accepted: HELLO checked, gate unknown */
	size_t eager_max;
	double bandwidth, latency; /* the model strategies see */
	uint64_t threshold;       /* profile's rendezvous threshold, 0: none */
	const char *model_source; /* "profile", "in-band", "nominal", "default" */
	struct mrail_rail_model *model; /* predictions strategies use */
	struct mrail_list posted; /* send_ops not completed */
	uint64_t rx_len;          /* body being received (one at a time) */
	struct mrail_request *rx_req; /* whose buffer that body goes to */
	int bye_in, bye_out;      /* BYE received / sent on this rail */
	struct mrail_rail_stats stats;
	/* Busy-until accounting (libmrail/busy.c). */
	double time_scale;        /* measured / predicted chunk durations */
	struct rx_expect *rx_q;   /* ring of chunks requested, in order */
	unsigned rx_head, rx_count, rx_cap;
	double rx_last_done;      /* when the previous chunk completed */
	double rx_busy_since;     /* rx_count became non-zero */
	unsigned tx_ops;          /* posted send_ops not completed */
	double tx_busy_since;
	double remote_tx_free_at; /* sender's queue on this rail empties */
	/* RKEY records read in the current packet, for the RTS or RTR that
	 * follows them (rma.c). */
	unsigned rx_nkeys;
	struct rma_key rx_keys[MRAIL_MAX_DRIVERS];
	void *hook_state;         /* what the rail_up hook returned */
	int hooked;               /* rail_up hook ran, rail_down not yet */
	double tx_own_free_at;    /* what this rail queued on its NIC left */
};

/*
 * A driver instance. An engine holds one per name in MRAIL_DRIVERS; its
 * rails may serve one gate together with rails of other instances.
 */
struct drv_instance {
	struct mrail_engine *engine; /* the upcalls' engine_ctx is &this */
	const struct mrail_drv_ops *ops;
	struct mrail_drv *drv;
	struct mrail_drv_caps caps;
	unsigned index;              /* in engine->drivers */
	char params[256];            /* this driver's MRAIL_DRIVER_PARAMS */
	struct mrail_regcache *regcache; /* RDMA drivers (mem.c) */
	char rails[256];             /* its "driver:name" MRAIL_RAILS entries,
	                                names only, comma-separated */
};

/*
 * A local endpoint: one driver listener. Either a rail the driver lists
 * itself (loopback rails, HCA ports, fabric domains: netif < 0) or one
 * address of one interface chosen for rails to other hosts (IP drivers).
 */
struct local_rail {
	const struct mrail_drv_ops *ops;
	struct mrail_drv *drv;
	struct mrail_drv_caps caps;
	struct drv_instance *di;
	int netif;                /* index in engine->netifs, -1: listed */
	unsigned addr;            /* which address of that interface, or the
	                             rail's index among its driver's listed */
	int scope;                /* listed: enum mrail_drv_rail_scope */
	char rail_name[MRAIL_DRV_RAIL_NAME_MAX];
	char fabric[MRAIL_DRV_FABRIC_MAX];
	char ifname[16];          /* listed: its interface, or its name */
	char local[64];           /* address we bind/connect from */
	char name[64];            /* printable listener address */
	uint8_t addr_blob[256];   /* listener address blob (driver's) */
	size_t addr_len;
	/* Predicted moments this NIC is free, over all gates (busy.c). */
	double tx_free_at;        /* what this host queued has left */
	double rx_free_at;        /* requested chunks have all arrived */
	unsigned rx_pending;      /* requested chunks not yet arrived */
};

/* ---- gates (peers) ---------------------------------------------------- */
enum gate_state { GATE_CONNECTING, GATE_UP, GATE_CLOSED, GATE_FAILED };

/* What address selection decided for one rail of a gate. */
struct rail_plan {
	unsigned local_ep;        /* index in engine->local */
	uint8_t remote_blob[256]; /* the peer's listener for this rail */
	size_t remote_len;
	char local_if[16], remote_if[16];
	int conn_type;            /* 0 loopback, else enum mrail_conn_type */
};

struct gate {
	struct mrail_list sched_link; /* engine->sched_gates if queued */
	int scheduled;
	mrail_peer_t id;
	uint64_t uuid;
	int self;
	int state;
	int error;                /* why it failed */
	int bye_received;
	char name[32];            /* "rank 3" / "peer 3" for logs */
	unsigned nrails;          /* rails to this peer */
	unsigned rails_up;
	struct rail *rails[MRAIL_MAX_RAILS];
	struct rail_plan *plan;    /* nrails entries */
	struct mrail_list sendq;   /* sends not yet started, in seq order */
	struct mrail_list rdv;     /* rendezvous requests in flight */
	uint64_t next_send_seq;
	uint64_t next_recv_seq;
	struct mrail_list ooo;     /* records that arrived early, by seq */
	size_t eager_max;          /* min over rails */
	double deadline;           /* rails must be up before */
	void *strategy_peer;       /* the strategy's per-peer state */
};

/* A message that arrived before its receive was posted. */
enum unexp_kind { UNEXP_EAGER, UNEXP_RTS, UNEXP_SELF };
struct unexpected {
	struct mrail_list link;
	int kind;
	struct gate *gate;
	uint64_t seq;             /* for the out-of-order list */
	uint64_t tag;
	uint64_t len;             /* message length */
	uint64_t send_id;         /* RTS; EAGER: sender's id if it waits for
	                             a SYNC_ACK (synchronous send), else 0 */
	struct rdv_rma *rma;      /* RTS: the sender's keys, or NULL */
	struct mrail_request *self_send; /* UNEXP_SELF */
	uint8_t data[];           /* UNEXP_EAGER payload */
};

/* ---- the engine ------------------------------------------------------- */
struct handle_slot {
	struct mrail_request *req;
	uint32_t gen;
};

struct mrail_engine {
	pthread_mutex_t lock;
	struct mrail_config cfg;
	char *cfg_strings[6];

	uint64_t uuid;
	uint32_t rank, size;
	int bootstrapped;

	uint64_t host_id;              /* same host <=> same id (netns too) */
	int eager_auto;                /* profiles may set the threshold */
	unsigned nlocal;               /* endpoints: loopback ones first */
	struct local_rail local[MRAIL_MAX_RAILS];
	unsigned nnetif;               /* interfaces for other hosts */
	struct mrail_netif *netifs;
	unsigned ndup;                 /* addresses held by several hosts */
	struct mrail_netif_addr *dups;
	unsigned ndrv;                 /* driver instances */
	struct drv_instance drivers[MRAIL_MAX_DRIVERS];
	size_t max_head;               /* smallest over the instances */
	int rdv_protocol;              /* enum rdv_protocol (MRAIL_RDV) */

	const struct mrail_strategy_ops *strategy;
	void *strategy_state;
	void *strategy_dl;             /* dlopen handle of a plugin, or NULL */

	uint32_t ngates, gates_cap;
	struct gate **gates;
	struct mrail_list handshaking; /* accepted rails before HELLO */
	struct mrail_list sched_gates; /* gates with queued sends */

	struct mrail_list posted;      /* posted receives, in order */
	struct mrail_list unexpected;  /* unexpected messages, in order */
	struct mrail_list probed;      /* taken by improbe, not yet received */
	struct mrail_list requests;    /* every live request (all_link) */
	struct mrail_list cbq;         /* complete, callback due (link) */

	struct handle_slot *handles;   /* rendezvous ids */
	uint32_t handles_cap, handles_free_hint;

	struct mrail_list free_ops;    /* recycled packet send_ops */
	size_t packet_cap;

	int progress_thread_running;
	int progress_thread_stop;
	pthread_t progress_thread;
	int wake_fd;

	uint64_t progress_calls;

	/* Layers above attach state to each connection (mrail_set_rail_hooks). */
	struct mrail_rail_hooks hooks;
	void *hooks_ctx;
	/* libmrail/threads.c. The level is fixed before any other thread can
	 * see the engine; the thread ids are TLS addresses (0: none) read
	 * by other threads only through atomics (debug lock checks). */
	int thread_level;              /* enum mrail_thread_level */
	uintptr_t lock_owner;          /* thread holding e->lock */
	uintptr_t creator;             /* thread that created the engine */
	uintptr_t progress_owner;      /* the progress thread */
};

/* threads.c (docs/threads.md) */
void engine_lock(struct mrail_engine *e);
void engine_unlock(struct mrail_engine *e);
/*
 * Debug builds (MRAIL_DEBUG_LOCKS, set by meson for buildtypes debug and
 * debugoptimized) abort with file:line when the calling thread does not
 * hold e's lock: put it first in every internal entry point that needs it.
 */
#ifdef MRAIL_DEBUG_LOCKS
#define ENGINE_ASSERT_LOCKED(e) engine_assert_locked((e), __FILE__, __LINE__)
void engine_assert_locked(const struct mrail_engine *e, const char *file,
			  int line);
#else
#define ENGINE_ASSERT_LOCKED(e) ((void)(e))
#endif
/* Validate and record cfg.thread_level (during engine_init). */
int threads_init(struct mrail_engine *e);
/* Called first by the progress thread: it is not an application thread. */
void threads_progress_thread(struct mrail_engine *e);

/* engine.c: life cycle (the API takes the lock around init and close) */
struct mrail_engine *engine_alloc(void);
int engine_init(struct mrail_engine *e, const struct mrail_config *cfg);
/* Flush, say BYE, wait for the peers' BYEs (bounded by finalize_timeout). */
void engine_close(struct mrail_engine *e);
/* Lock not held; no other thread may use e any more. */
void engine_free(struct mrail_engine *e);

/* config.c */
int config_copy_strings(struct mrail_engine *e, const struct mrail_config *c);
void config_free_strings(struct mrail_engine *e);

/* A buffer given to isend/irecv: contiguous (iov NULL) or an iovec. */
static inline int buffer_args_valid(const struct iovec *iov, int iovcnt,
				    const void *buf, size_t len)
{
	if (iov)
		return iovcnt >= 0 && iovcnt <= MRAIL_IOV_MAX;
	return iovcnt == 0 && (len == 0 || buf);
}

/* request.c */
struct mrail_request *request_new(struct mrail_engine *e, int kind,
				  const struct iovec *iov, int iovcnt,
				  const void *buf, size_t len);
/* With caller storage and options (args already validated). */
struct mrail_request *request_new_x(struct mrail_engine *e, int kind,
				    const struct iovec *iov, int iovcnt,
				    const void *buf, size_t len,
				    const struct mrail_req_args *args);
/* Checks args for a send (is_send) or receive; sets the iovec to use. */
int request_args_check(const struct mrail_req_args *args, int is_send,
		       const struct iovec **iov, int *iovcnt, const void *buf,
		       size_t len);
/* Only when r->outstanding == 0 (use request_fail otherwise). */
void request_complete(struct mrail_engine *e, struct mrail_request *r,
		      int error);
/* Fail r: completes now if no driver operation references it, else when
 * the last one settles (rdv_data_sent, rdv_on_data_done). */
void request_fail(struct mrail_engine *e, struct mrail_request *r,
		  int error);
void request_free(struct mrail_engine *e, struct mrail_request *r);
void requests_init(struct mrail_engine *e);
/* Engine destroy: frees every request, unexpected and probed message. */
void requests_fini(struct mrail_engine *e);
/* Complete and its callback (if any) returned: test/wait may report it. */
int request_collectable(const struct mrail_request *r);
/* The user takes the status back; complete implies no driver reference
 * (outstanding == 0), so the request goes at once. */
void request_finish(struct mrail_engine *e, struct mrail_request *r,
		    mrail_status_t *st);
int request_cancel(struct mrail_engine *e, struct mrail_request *r);
int request_set_callback(struct mrail_engine *e, struct mrail_request *r,
			 mrail_request_cb_t cb, void *ctx);
/* Runs due callbacks; lock NOT held. Returns how many ran. */
int request_run_callbacks(struct mrail_engine *e);
uint64_t handle_assign(struct mrail_engine *e, struct mrail_request *r);
struct mrail_request *handle_lookup(struct mrail_engine *e, uint64_t id);
void handle_release(struct mrail_engine *e, struct mrail_request *r);

/* drivers.c: driver instances */
int drivers_open(struct mrail_engine *e);
void drivers_close(struct mrail_engine *e);
int drivers_progress(struct mrail_engine *e);
/* Fills fds (up to max) with the instances' wait fds; returns how many. */
unsigned drivers_wait_fds(struct mrail_engine *e, int *fds, unsigned max);
struct drv_instance *drivers_find(struct mrail_engine *e, const char *name);

/* hooks.c: per-connection hooks of the layer above */
void hooks_rail_up(struct mrail_engine *e, struct rail *r);
void hooks_rail_down(struct mrail_engine *e, struct rail *r);
/* mrail_set_rail_hooks(): down on every rail, replace, up again. */
void hooks_set(struct mrail_engine *e, const struct mrail_rail_hooks *hooks,
	       void *ctx);
int hooks_rail_conn(struct mrail_engine *e, mrail_peer_t peer, int rail,
		    struct mrail_rail_conn *conn, void **state);

/* address.c: the address blob (docs/wire.md) */
struct remote_ep {
	int netif;                 /* -1: a rail the driver listed */
	unsigned addr;             /* address index, or listed rail index */
	int scope;                 /* listed: enum mrail_drv_rail_scope */
	char name[MRAIL_DRV_RAIL_NAME_MAX];
	char fabric[MRAIL_DRV_FABRIC_MAX];
	char ifname[16];
	char driver[16];
	uint8_t blob[256];
	size_t len;
};
struct peer_address {
	uint64_t uuid, host_id;
	unsigned nnetif, nep;      /* nep: every endpoint, listed ones last */
	struct mrail_netif *netif; /* nnetif */
	struct remote_ep *ep;      /* nep */
};
int address_encode(struct mrail_engine *e, void *buf, size_t *len);
int address_parse(const void *blob, size_t len, struct peer_address *pa,
		  const char **why);
void address_free(struct peer_address *pa);

/* endpoints.c */
int endpoints_open(struct mrail_engine *e);
uint64_t endpoints_host_identity(void);

/* pairing.c: which rails a gate gets */
int gate_plan_rails(struct mrail_engine *e, struct gate *g,
		    const struct peer_address *pa, char *why, size_t whylen);
int engine_find_dups(struct mrail_engine *e, const struct peer_address *pas,
		     unsigned n);

/* gate.c */
int gate_add(struct mrail_engine *e, const void *addr, size_t len,
	     mrail_peer_t *out);
struct gate *gate_get(struct mrail_engine *e, mrail_peer_t id);
void gate_fail(struct mrail_engine *e, struct gate *g, int error,
	       const char *why);
void gate_free(struct mrail_engine *e, struct gate *g);
int gate_rail_info(struct mrail_engine *e, mrail_peer_t peer, int rail,
		   struct mrail_rail_info *info);
int gate_rail_stats(struct mrail_engine *e, mrail_peer_t peer, int rail,
		    struct mrail_rail_stats *st);

/* handshake.c */
extern const struct mrail_drv_upcalls engine_upcalls;
int handshake_send_hello(struct mrail_engine *e, struct rail *r);
void handshake_on_frame(struct mrail_engine *e, struct rail *r,
			const void *head, size_t len);
void handshake_expire(struct mrail_engine *e);
void rail_up(struct mrail_engine *e, struct rail *r);
void rail_update_names(struct rail *r);

/* model.c, inband.c */
struct mrail_rail_model;
void rail_load_model(struct mrail_engine *e, struct rail *r);
/* Replace r's model (takes ownership; NULL: nominal from its figures). */
void rail_set_model(struct rail *r, struct mrail_rail_model *m,
		    const char *source);
void inband_sample(struct mrail_engine *e);

/* rail.c */
struct rail *rail_new(struct mrail_engine *e, struct local_rail *l);
void rail_close(struct mrail_engine *e, struct rail *r);
void rail_op_done(struct mrail_engine *e, struct send_op *op, int status);
struct send_op *packet_get(struct mrail_engine *e);
void packet_put(struct mrail_engine *e, struct send_op *op);
int rail_post_packet(struct mrail_engine *e, struct rail *r,
		     struct send_op *op);
int rail_post_data(struct mrail_engine *e, struct rail *r,
		   struct mrail_request *req, uint64_t recv_id,
		   uint64_t offset, uint64_t len);
int rail_is_idle(const struct rail *r);
/* Views of a gate's rails for a decision about sending (eager packets) or
 * receiving (a rendezvous payload): busy_until differs. */
enum view_dir { VIEW_SEND, VIEW_RECV };

/* libmrail/busy.c: busy-until accounting. */
void busy_rail_init(struct rail *r);
void busy_rail_close(struct rail *r);
void busy_rx_expect(struct rail *r, uint64_t bytes);
void busy_rx_arrived(struct rail *r, uint64_t bytes);
/* A plan left this rail out: its time scale fades towards 1. */
void busy_scale_fade(struct rail *r);
void busy_tx_post(struct rail *r, uint64_t charge_bytes);
void busy_tx_done(struct rail *r);
void busy_tx_reserve(struct gate *g, uint64_t bytes);
double busy_tx_left(const struct rail *r, double now);
/* busy_tx_left minus this rail's own share: what other peers queued. */
double busy_tx_others(const struct rail *r, double now);
void busy_remote_tx(struct gate *g, const uint32_t *us, unsigned n);
double busy_until(const struct rail *r, enum view_dir dir, double now);
/* The rail's counters, busy periods still open counted up to now. */
void rail_read_stats(const struct rail *r, struct mrail_rail_stats *st);
unsigned gate_rail_views(struct gate *g, struct mrail_rail_view *views,
			 enum view_dir dir);

/* send.c */
/* A new send request to dest, queued (or sent to self); *out on success. */
int send_start(struct mrail_engine *e, mrail_peer_t dest,
	       const struct iovec *iov, int iovcnt, const void *buf, size_t len,
	       uint64_t tag, const struct mrail_req_args *args,
	       struct mrail_request **out);
int send_post(struct mrail_engine *e, struct gate *g, struct mrail_request *r);
void gate_schedule(struct mrail_engine *e, struct gate *g);
void schedule_pending(struct mrail_engine *e);

/* recv.c */
/* A new receive request, matched at once or posted; *out on success. */
int recv_start(struct mrail_engine *e, mrail_peer_t src,
	       const struct iovec *iov, int iovcnt, void *buf, size_t len,
	       uint64_t tag, uint64_t mask, const struct mrail_req_args *args,
	       struct mrail_request **out);
void recv_on_packet(struct mrail_engine *e, struct rail *r, const void *head,
		    size_t len);
int recv_post(struct mrail_engine *e, struct mrail_request *r);
void recv_arrived(struct mrail_engine *e, struct gate *g, struct unexpected *u);
void recv_deliver_eager(struct mrail_engine *e, struct mrail_request *r,
			struct gate *g, uint64_t tag, const void *data,
			uint64_t len);
int match(const struct mrail_request *r, const struct gate *g, uint64_t tag);
void recv_fail_gate(struct mrail_engine *e, struct gate *g, int error);
/* Frees an unexpected message never delivered (and its remote keys). */
void unexpected_free(struct unexpected *u);

/* mem.c: memory registration through the instance's cache; an entry's
 * handle is the driver's struct mrail_drv_mr. */
struct mrail_regcache_entry;
int mem_init(struct drv_instance *di);
int mem_reg_get(struct drv_instance *di, const void *addr, size_t len,
		struct mrail_regcache_entry **out);
void mem_reg_put(struct drv_instance *di, struct mrail_regcache_entry *reg);
void mem_fini(struct drv_instance *di);

/* rma.c: one-sided rendezvous */
enum rdv_protocol { RDV_AUTO, RDV_GET, RDV_PUT, RDV_SEND };
int rma_parse_protocol(const char *s);
size_t rma_rts_room(const struct mrail_engine *e, const struct gate *g);
int rma_put_send_keys(struct mrail_engine *e, struct gate *g,
		      struct mrail_request *r, struct send_op *op);
int rma_on_rkey(struct rail *rail, const struct mrail_wire_rec *rec,
		const char **why);
struct rdv_rma *rma_take_keys(struct rail *rail, uint64_t send_id);
void rma_rail_keys_clear(struct rail *rail);
int rma_chunk_can_get(const struct mrail_request *r, const struct gate *g,
		      unsigned rail_index);
int rma_chunk_can_put(struct mrail_engine *e, const struct mrail_request *r,
		      const struct gate *g, unsigned rail_index);
int rma_start_get(struct mrail_engine *e, struct rail *rail,
		  struct mrail_request *r, uint64_t offset, uint64_t len);
int rma_put_recv_key(struct mrail_engine *e, struct rail *rail,
		     struct mrail_request *r, struct send_op *op);
void rma_on_rtr_put(struct mrail_engine *e, struct rail *rail,
		    struct mrail_request *s, const struct mrail_wire_rtr *rtr);
void rma_on_get_fin(struct mrail_engine *e, struct rail *rail,
		    const struct mrail_wire_get_fin *f);
void rma_on_put_fin(struct mrail_engine *e, struct rail *rail,
		    const struct mrail_wire_put_fin *f);
void rma_op_done(struct mrail_engine *e, struct send_op *op, int status);
/* A receive's operation settled: complete it (telling the sender what it
 * read by RDMA) if nothing else is due. */
void rma_recv_settled(struct mrail_engine *e, struct mrail_request *r);
void rma_recv_finish(struct mrail_engine *e, struct mrail_request *r);
void rma_request_release(struct mrail_engine *e, struct mrail_request *r);

/* rdv.c */
/* rma: the sender's remote keys (ownership passes to r), or NULL. */
void rdv_recv_start(struct mrail_engine *e, struct mrail_request *r,
		    struct gate *g, uint64_t tag, uint64_t msg_len,
		    uint64_t send_id, struct rdv_rma *rma);
void rdv_on_rtr(struct mrail_engine *e, struct rail *r,
		const struct mrail_wire_rtr *rtr);
void *rdv_on_data(struct mrail_engine *e, struct rail *r, const void *head,
		  size_t hlen, uint64_t body_len, struct iovec *dst,
		  int *dst_cnt);
void rdv_on_data_done(struct mrail_engine *e, struct rail *r, void *cookie);
void rdv_data_sent(struct mrail_engine *e, struct send_op *op, int status);
/* r's connection is closed: the body it was receiving never completes. */
void rdv_rail_closed(struct mrail_engine *e, struct rail *r);
/* Does r have operations that reference a request's buffer? */
int rdv_rail_busy(const struct rail *r);

/* sync.c: synchronous sends (SYNC_ACK) */
void sync_ack_send(struct mrail_engine *e, struct gate *g, uint64_t send_id);
void sync_on_ack(struct mrail_engine *e, struct rail *r, uint64_t send_id);

/* recv.c (used by probe.c) */
/* Hand unexpected message u (off every list) to receive r. */
void recv_take(struct mrail_engine *e, struct mrail_request *r,
	       struct unexpected *u);

/* probe.c */
/* Progress, then look for a match; *flag = 1 if found (msg: take it). */
int probe_run(struct mrail_engine *e, mrail_peer_t src, uint64_t tag,
	      uint64_t mask, int *flag, mrail_message_t **msg,
	      mrail_status_t *st);
/* Receive a message improbe took; MRAIL_ERR_INVALID if msg is not one. */
int probe_imrecv(struct mrail_engine *e, const struct iovec *iov, int iovcnt,
		 void *buf, size_t len, mrail_message_t *msg,
		 const struct mrail_req_args *args, struct mrail_request **out);

/* self.c */
int self_send(struct mrail_engine *e, struct gate *g, struct mrail_request *r);
void self_match(struct mrail_engine *e, struct mrail_request *recv,
		struct unexpected *u);

/* progress.c */
int engine_progress(struct mrail_engine *e);
int progress_thread_start(struct mrail_engine *e);
/* Stopping: ask under the lock, then join without it. */
void progress_thread_ask_stop(struct mrail_engine *e);
void progress_thread_join(struct mrail_engine *e);
void engine_idle_wait(struct mrail_engine *e, int timeout_ms);

#endif
