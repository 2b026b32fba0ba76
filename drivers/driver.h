/*
 * The driver interface: what the engine needs from a network (TCP sockets,
 * InfiniBand verbs, libfabric). A driver moves frames between endpoints and
 * knows nothing of tags, matching or strategies.
 *
 * A frame is a "head" (engine headers and eager data, at most
 * caps.max_head bytes, always delivered to the engine in a driver buffer)
 * optionally followed by a "body" (rendezvous payload) that the receiving
 * engine directs into memory of its choice (the user's buffer), so payload
 * is never copied on the way in when the driver has
 * MRAIL_DRV_CAP_RECV_INTO_USER.
 *
 * Threading: a driver instance is only called with the engine lock held;
 * upcalls are made only from inside ops->progress() (never from send or
 * connect), so the engine may call ops again from an upcall.
 *
 * Adding a driver: one folder drivers/<name>/ exporting one
 * `const struct mrail_drv_ops mrail_<name>_driver_ops`, plus one line in
 * drivers/registry.c.
 */
#ifndef MRAIL_DRIVER_H
#define MRAIL_DRIVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define MRAIL_DRV_ABI_VERSION 4

struct mrail_drv;    /* one driver instance (an engine may hold several) */
struct mrail_drv_ep; /* one connection (a rail, or a pending connection) */
struct mrail_drv_mr; /* one memory registration (RMA drivers) */

enum mrail_drv_cap_flags {
	MRAIL_DRV_CAP_RECV_INTO_USER = 1u << 0, /* body lands in engine iov */
	MRAIL_DRV_CAP_RDMA_WRITE = 1u << 1,
	MRAIL_DRV_CAP_RDMA_READ = 1u << 2,
	MRAIL_DRV_CAP_NEEDS_REG = 1u << 3, /* memory registration required */
	/* Rails to other hosts come from the engine's interface discovery
	 * and address selection (listen() takes an IP address). Drivers
	 * without it list their own rails (list_rails). */
	MRAIL_DRV_CAP_IP = 1u << 4,
	/* Every send() costs a system call (sockets): the engine may hold
	 * messages posted back to back to one peer and send them as one
	 * frame at its next progress pass (docs/bursts.md). */
	MRAIL_DRV_CAP_SEND_SYSCALL = 1u << 5,
	/* get and put are copies made by the calling process's CPU inside
	 * the call (cross-memory attach), not by a NIC: the engine may
	 * share one transfer's copying between both ends, the receiver
	 * reading a part while the sender writes the rest
	 * (docs/driver-shm.md, "Sharing the copy"). */
	MRAIL_DRV_CAP_RMA_CPU = 1u << 6,
	/* mr_reg pins nothing and costs an allocation (a range and a key):
	 * the engine registers per use instead of caching, because keeping
	 * registrations means watching the address space (userfaultfd), and
	 * a window of distinct buffers past the cache's limits paid that on
	 * every message (docs/regcache.md, "Drivers that do not cache"). */
	MRAIL_DRV_CAP_REG_CHEAP = 1u << 7,
};

struct mrail_drv_caps {
	size_t max_head;       /* largest head a frame may carry */
	uint64_t max_body;     /* largest body of one frame */
	int max_body_iov;      /* most iovec entries for a body (send or recv) */
	size_t eager_max_hint; /* sensible eager/rendezvous switch */
	unsigned flags;        /* MRAIL_DRV_CAP_* */
	double nominal_bandwidth; /* bytes/s, 0 if unknown */
	double nominal_latency;   /* seconds, 0 if unknown */
	uint64_t max_rma;         /* largest single get/put (RDMA caps) */
};

/*
 * A rail the driver offers by itself (list_rails): a loopback connection,
 * an HCA port, a libfabric domain. Peers pair their rails of one driver
 * whose `fabric` strings are equal, in listing order.
 */
enum mrail_drv_rail_scope {
	MRAIL_DRV_SCOPE_HOST = 1,   /* reaches processes of this host only */
	MRAIL_DRV_SCOPE_FABRIC = 2, /* reaches hosts with the same fabric */
};
#define MRAIL_DRV_RAIL_NAME_MAX 32
#define MRAIL_DRV_FABRIC_MAX 48
struct mrail_drv_rail_desc {
	char name[MRAIL_DRV_RAIL_NAME_MAX];     /* "lo1", "mlx5_0:1" */
	char ifname[16];                        /* interface it uses ("lo"),
	                                           "" = the rail's name */
	char fabric[MRAIL_DRV_FABRIC_MAX];      /* who can pair with it */
	int scope;                              /* enum mrail_drv_rail_scope */
	char listen[64];                        /* passed to listen() */
	int numa_node;                          /* -1 if unknown */
	double nominal_bandwidth, nominal_latency; /* 0: the driver's caps */
};

/* What a connection is, for layers above that attach state to it (the SDN
 * tagger registers a TCP connection's 4-tuple and socket). */
struct mrail_drv_ep_info {
	int fd;                         /* socket, or -1 */
	struct sockaddr_storage local;  /* ss_family 0 when not IP */
	struct sockaddr_storage remote;
};

/* Calls from the driver into the engine (only from ops->progress). */
struct mrail_drv_upcalls {
	/*
	 * A peer connected to one of our listeners. Return the context to
	 * associate with the new endpoint, or NULL to refuse (the driver then
	 * closes it). The engine authenticates the peer on its first frame.
	 */
	void *(*accepted)(void *engine_ctx, struct mrail_drv_ep *ep);
	/* An outgoing connect finished: status 0 or a negative MRAIL_ERR_*
	 * (MRAIL_ERR_PEER_CLOSED: refused, nobody listens there). */
	void (*connected)(void *ep_ctx, int status);
	/* A frame without body arrived; head is valid during the call only. */
	void (*recv_frame)(void *ep_ctx, const void *head, size_t head_len);
	/*
	 * A frame with a body of body_len bytes arrived. The engine fills
	 * dst[0..*dst_cnt) (capacity given in *dst_cnt on entry, at least
	 * caps.max_body_iov) with where the body goes, exactly body_len
	 * bytes in total, and returns a cookie passed to recv_body_done when
	 * the body is in place. Returning NULL rejects the frame: the driver
	 * drops the connection (ep_error follows).
	 */
	void *(*recv_body)(void *ep_ctx, const void *head, size_t head_len,
			   uint64_t body_len, struct iovec *dst, int *dst_cnt);
	/* Not called if the connection fails or closes mid-body: the
	 * engine must not tie resources to the cookie alone. */
	void (*recv_body_done)(void *ep_ctx, void *cookie);
	/* A posted send left (the memory it referenced may be reused). */
	void (*send_done)(void *ep_ctx, void *send_ctx, int status);
	/*
	 * The connection failed or the peer closed it (status
	 * MRAIL_ERR_PEER_CLOSED if the peer's end closed or reset it, which
	 * with every rail so and reconnection refused makes the engine fail
	 * the peer at once; MRAIL_ERR_PEER for a link error or a timeout;
	 * MRAIL_ERR_PROTO, ...). After this upcall the driver
	 * makes no further upcalls for ep except send_done (with an error)
	 * for sends still pending; the engine then calls ops->ep_close.
	 */
	void (*ep_error)(void *ep_ctx, int status, const char *why);
	/* A get or put finished (status 0 or a negative MRAIL_ERR_*). Like
	 * send_done: after ep_error only with an error, after ep_close never.
	 * Local memory of the op is no longer accessed once it is called. */
	void (*rma_done)(void *ep_ctx, void *op_ctx, int status);
};

struct mrail_drv_open_args {
	const struct mrail_drv_upcalls *upcalls;
	void *engine_ctx;   /* passed to upcalls->accepted */
	const char *params; /* "key=value,..." for this driver (from
	                       MRAIL_DRIVER_PARAMS), "" if none; unknown or
	                       malformed keys fail open() naming the key */
};

/*
 * Common head of every driver instance: drivers embed it as the first
 * member of their struct mrail_drv, so the engine and shared helpers can
 * reach the upcalls and the instance name without knowing the driver.
 */
struct mrail_drv_base {
	const struct mrail_drv_ops *ops;
	const struct mrail_drv_upcalls *up;
	void *engine_ctx;
};

static inline void mrail_drv_base_init(struct mrail_drv_base *b,
				       const struct mrail_drv_ops *ops,
				       const struct mrail_drv_open_args *args)
{
	b->ops = ops;
	b->up = args->upcalls;
	b->engine_ctx = args->engine_ctx;
}

/*
 * Memory registration and one-sided operations: present (non-NULL) exactly
 * when caps.flags has MRAIL_DRV_CAP_RDMA_READ or MRAIL_DRV_CAP_RDMA_WRITE.
 * The engine registers through its registration cache (libmrail/regcache.c)
 * and keeps a registration alive while any operation uses it.
 */
enum mrail_drv_access {
	MRAIL_DRV_ACCESS_LOCAL = 1u << 0,
	MRAIL_DRV_ACCESS_REMOTE_READ = 1u << 1,
	MRAIL_DRV_ACCESS_REMOTE_WRITE = 1u << 2,
};
#define MRAIL_DRV_RKEY_MAX 48 /* bytes of a packed remote key */

struct mrail_drv_rma_ops {
	int (*mr_reg)(struct mrail_drv *drv, void *addr, size_t len,
		      unsigned access, struct mrail_drv_mr **mr);
	void (*mr_dereg)(struct mrail_drv_mr *mr);
	/* What a peer needs to reach mr: at most MRAIL_DRV_RKEY_MAX bytes
	 * written to rkey, the length in *rkey_len. Addresses in get/put are
	 * the registering process's virtual addresses. */
	int (*mr_pack)(struct mrail_drv_mr *mr, void *rkey, size_t *rkey_len);
	/* Read len (<= caps.max_rma) bytes at the peer's raddr, inside the
	 * registration rkey names, into local memory at laddr (inside lmr).
	 * Completion: upcalls->rma_done(ep_ctx, op_ctx, status), from
	 * progress only. -MRAIL_ERR_AGAIN is never returned: the driver
	 * queues what it cannot post yet. */
	int (*get)(struct mrail_drv_ep *ep, void *laddr, size_t len,
		   struct mrail_drv_mr *lmr, uint64_t raddr, const void *rkey,
		   size_t rkey_len, void *op_ctx);
	/* Write local [laddr, laddr+len) to the peer's raddr. */
	int (*put)(struct mrail_drv_ep *ep, const void *laddr, size_t len,
		   struct mrail_drv_mr *lmr, uint64_t raddr, const void *rkey,
		   size_t rkey_len, void *op_ctx);
};

struct mrail_drv_ops {
	const char *name;
	unsigned abi_version; /* MRAIL_DRV_ABI_VERSION */

	int (*open)(const struct mrail_drv_open_args *args,
		    struct mrail_drv **drv);
	void (*close)(struct mrail_drv *drv); /* closes every endpoint */
	void (*query_caps)(struct mrail_drv *drv, struct mrail_drv_caps *caps);

	/*
	 * Start listening on a local address ("127.0.0.1", an interface IP;
	 * NULL = any). Writes the peer-facing address blob into addr
	 * (capacity *addr_len, set to the length used) and a printable form
	 * into name. Returns a listener index >= 0 or a negative error.
	 */
	int (*listen)(struct mrail_drv *drv, const char *local, void *addr,
		      size_t *addr_len, char *name, size_t name_len);

	/*
	 * Connect (non-blocking) from local address `local` (NULL = any) to a
	 * peer's listener address blob. upcalls->connected reports the end.
	 * Frames may be sent right away; they leave once connected.
	 */
	int (*connect)(struct mrail_drv *drv, const char *local,
		       const void *addr, size_t addr_len, void *ep_ctx,
		       struct mrail_drv_ep **ep);

	/* Change the context upcalls get for ep (after authentication). */
	void (*ep_set_ctx)(struct mrail_drv_ep *ep, void *ep_ctx);

	/*
	 * Post a frame. head (<= max_head) and the body memory must stay
	 * valid until send_done(send_ctx); the body iovec array itself is
	 * copied. Frames on one endpoint leave in posting order.
	 */
	int (*send)(struct mrail_drv_ep *ep, const void *head, size_t head_len,
		    const struct iovec *body, int body_cnt, void *send_ctx);

	/*
	 * Optional, as libfabric's fi_inject: write one frame without a body
	 * whose head is head[0..cnt) laid end to end, now or not at all.
	 * Returns 1 when the frame left (the memory may be reused at once;
	 * no send_done comes for it), 0 when it cannot leave without being
	 * queued (nothing was done: post it with send), or a negative error.
	 * Posting order holds: a driver takes an injection only when nothing
	 * given to it earlier on ep still waits. Offered only by drivers
	 * whose connections lose a frame they took when the peer process
	 * dies and for no other reason (same-host memory): the engine keeps
	 * no copy of an injected frame for failover, and fails the peer if
	 * one is found lost (docs/failover.md). NULL: not offered.
	 */
	int (*inject)(struct mrail_drv_ep *ep, const struct iovec *head,
		      int cnt);

	/* Bytes posted on ep but not yet handed to the network. */
	uint64_t (*ep_backlog)(struct mrail_drv_ep *ep);

	/* Make progress, run upcalls. Returns events handled (>= 0). It may
	 * return 0 while work waits on a source it skips on some passes
	 * (tcp reads one or two sockets directly and its epoll set every
	 * fifth pass; shm its sockets every 1024th): wait_fd is readable
	 * then, so an engine about to sleep wakes at once. */
	int (*progress)(struct mrail_drv *drv);

	/* An fd that becomes readable when progress() has work (for blocking
	 * waits and the progress thread), or -1. Completions of sends that
	 * left inside send() do not wake it: call progress() until it
	 * returns 0 before blocking on this fd. */
	int (*wait_fd)(struct mrail_drv *drv);

	/*
	 * Called by the engine just before it sleeps on wait_fd (after a
	 * progress() that returned 0), as libfabric's fi_trywait: arm
	 * whatever makes wait_fd readable for new work (a shared-memory
	 * doorbell), so that polling never pays for wake-ups. Returns 0 when
	 * sleeping is safe, MRAIL_ERR_AGAIN when work arrived meanwhile (the
	 * engine progresses instead). NULL: wait_fd needs no arming.
	 */
	int (*trywait)(struct mrail_drv *drv);

	/* Printable local and remote addresses of an endpoint. */
	void (*ep_names)(struct mrail_drv_ep *ep, char *local, size_t llen,
			 char *remote, size_t rlen);

	/*
	 * Close an endpoint now, without blocking (the engine flushes first
	 * by progressing until ep_backlog() is 0). Sends and RMA operations
	 * still pending are dropped without upcall; when it returns the
	 * driver no longer reads or writes any memory they referenced; no
	 * upcall for ep afterwards.
	 */
	void (*ep_close)(struct mrail_drv_ep *ep);

	/*
	 * Rails this driver offers by itself (loopback rails, HCA ports,
	 * fabric domains): up to max descriptions; returns how many, or a
	 * negative error. NULL: none (an IP driver whose rails all come
	 * from address selection).
	 */
	int (*list_rails)(struct mrail_drv *drv, struct mrail_drv_rail_desc *out,
			  int max);

	/* What ep is (socket, addresses); NULL if the driver cannot say. */
	void (*ep_query)(struct mrail_drv_ep *ep, struct mrail_drv_ep_info *info);

	/*
	 * Milliseconds since the transport last heard anything from the
	 * peer's side of ep at the link level (a TCP ACK or segment, even
	 * one the peer's kernel sent while its process computes), or -1 if
	 * the driver cannot tell. The engine's ack-based liveness rule
	 * (docs/failover.md) fails a rail only when this is -1 or at least
	 * the rail timeout: a peer process that does not progress is not a
	 * dead link. A link that cannot die while ep is open (same host)
	 * returns 0. NULL: same as -1. Called from the engine's tick,
	 * outside progress; must not block.
	 */
	int (*ep_link_quiet_ms)(struct mrail_drv_ep *ep);

	/* NULL unless the driver has RDMA capabilities. */
	const struct mrail_drv_rma_ops *rma;
};

/* drivers/registry.c */
const struct mrail_drv_ops *mrail_driver_find(const char *name);
const struct mrail_drv_ops *mrail_driver_find_n(const char *name, size_t n);
/* Comma-separated names of the built-in drivers (for error messages). */
const char *mrail_driver_names(void);
/* Why a driver libmrail knows of is left out of this build ("libmrail
 * was configured without libfabric ..."), or NULL (built in, or unknown). */
const char *mrail_driver_absent_why(const char *name);

#endif
