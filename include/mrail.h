/*
 * libmrail — drive all the NICs ("rails") of a host as one.
 *
 * Public API. Everything here is prefixed mrail_ / MRAIL_; nothing else is
 * exported by libmrail.so.
 *
 * Model
 * -----
 * An engine owns the local rails (driver endpoints) and one "gate" per remote
 * process (peer). Messages are tagged and non-blocking: mrail_isend() puts a
 * message on its peer's send queue and returns at once; mrail_irecv() posts a
 * receive. Requests complete through mrail_test()/mrail_wait*(), which also
 * make progress. A message's payload may travel as several chunks over
 * several rails and is reassembled in place in the receive buffer.
 *
 * Matching (MPI semantics)
 * ------------------------
 * A receive (src, tag, mask) matches a message from peer P with tag T when
 * (src == MRAIL_ANY_PEER || src == P) and (T & mask) == (tag & mask).
 * Messages from one peer are matched in the order they were sent
 * (non-overtaking), whatever rails they used. A message that arrives before a
 * matching receive is posted is buffered (unexpected) and matched later.
 * A receive buffer smaller than the message completes with
 * MRAIL_ERR_TRUNCATE; bytes beyond the buffer are never written.
 * Messages may be 0 bytes up to SIZE_MAX bytes (at least 4 GiB - 1 is tested).
 *
 * Threads (docs/threads.md)
 * -------
 * The thread level is chosen at creation (cfg.thread_level or
 * MRAIL_THREAD_LEVEL) and read back with mrail_thread_level():
 *   MRAIL_THREAD_MULTIPLE (default): every function of an engine may be
 *     called from any thread, also concurrently: calls are serialized by
 *     one lock per engine (thread-safe, not concurrent).
 *   MRAIL_THREAD_SERIALIZED: several threads may call, never two at once;
 *     the application orders the calls (its own lock, a barrier...).
 *   MRAIL_THREAD_SINGLE: only the thread that created the engine calls it;
 *     no progress thread (creation fails with MRAIL_ERR_CONFIG if one is
 *     asked for).
 * Debug builds abort with a message naming the rule when a call breaks the
 * level. With MRAIL_PROGRESS_THREAD=1 (or cfg.progress_thread; thread levels
 * serialized and multiple) a background thread makes progress, so messages
 * move while the application computes without calling into the library;
 * it does not count as an application thread. Different engines are
 * independent. mrail_engine_destroy() must not race with other calls on
 * the same engine.
 *
 * Errors
 * ------
 * Functions return MRAIL_OK (0) or a negative MRAIL_ERR_* code;
 * mrail_strerror() names it. Details (which variable, which peer, which
 * connection) go to the log (stderr), controlled by MRAIL_LOG_LEVEL.
 */
#ifndef MRAIL_H
#define MRAIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define MRAIL_API __attribute__((visibility("default")))
#else
#define MRAIL_API
#endif

#define MRAIL_VERSION_MAJOR 0
#define MRAIL_VERSION_MINOR 1

/* ---- error codes ------------------------------------------------------ */
enum mrail_error {
	MRAIL_OK = 0,
	MRAIL_ERR_INVALID = -1,      /* invalid argument or request state */
	MRAIL_ERR_NOMEM = -2,        /* out of memory */
	MRAIL_ERR_TRUNCATE = -3,     /* message longer than the receive buffer */
	MRAIL_ERR_PEER = -4,         /* peer unreachable or died */
	MRAIL_ERR_CANCELED = -5,     /* receive canceled */
	MRAIL_ERR_CONFIG = -6,       /* bad configuration value (see log) */
	MRAIL_ERR_BOOTSTRAP = -7,    /* address exchange failed */
	MRAIL_ERR_NOT_FOUND = -8,    /* unknown driver, strategy, rail, peer */
	MRAIL_ERR_AGAIN = -9,        /* not complete yet */
	MRAIL_ERR_BUSY = -10,        /* cannot cancel: already matched */
	MRAIL_ERR_TIMEOUT = -11,     /* time limit reached */
	MRAIL_ERR_IO = -12,          /* system call failed (see log) */
	MRAIL_ERR_PEER_CLOSED = -13, /* peer closed its engine */
	MRAIL_ERR_AUTH = -14,        /* job key mismatch */
	MRAIL_ERR_PROTO = -15,       /* malformed data from the network */
};

/* Static, never NULL. */
MRAIL_API const char *mrail_strerror(int err);

/* ---- configuration ---------------------------------------------------- */
/* 3: unexpected_max, unexpected_peer_max, connect_mode appended */
#define MRAIL_CONFIG_VERSION 3
#define MRAIL_JOB_KEY_BYTES 16
#define MRAIL_EAGER_MAX_AUTO ((size_t)-1)

enum mrail_log_level {
	MRAIL_LOG_ERROR = 0,
	MRAIL_LOG_WARN = 1,
	MRAIL_LOG_INFO = 2,
	MRAIL_LOG_DEBUG = 3,
	MRAIL_LOG_TRACE = 4,
};

/* How the application's threads use an engine (MPI_THREAD_* analogues;
 * an MPI binding maps MPI_THREAD_FUNNELED to SERIALIZED). Ordered: a level
 * allows everything the lower ones do. */
enum mrail_thread_level {
	MRAIL_THREAD_SINGLE = 0,     /* only the creating thread calls */
	MRAIL_THREAD_SERIALIZED = 1, /* any thread, never two at once */
	MRAIL_THREAD_MULTIPLE = 2,   /* any thread, concurrently */
};

/*
 * Engine configuration. Always fill it with mrail_config_init() first (the
 * struct may grow; `version` tells the library which fields exist), then
 * change fields. Each field's environment variable is applied by
 * mrail_config_init(); a malformed value makes it fail with
 * MRAIL_ERR_CONFIG and a log line naming the variable.
 * Strings are copied by mrail_engine_create().
 */
struct mrail_config {
	unsigned version;          /* MRAIL_CONFIG_VERSION */
	const char *drivers;       /* MRAIL_DRIVERS: comma list of driver
	                              instances, default "tcp"; e.g. "tcp,fake":
	                              a peer's rails may come from several */
	const char *rails;         /* MRAIL_RAILS: comma list of interface names
	                              or addresses that rails to other hosts may
	                              use (NULL = every interface that is up);
	                              address selection pairs them with the
	                              peer's (docs/address-selection.md).
	                              "driver:name" entries name a driver's own
	                              rails ("tcp:eth1,fake:fake0"); plain names
	                              apply to IP drivers (tcp) */
	const char *rails_exclude; /* MRAIL_RAILS_EXCLUDE: interfaces or
	                              addresses never to use */
	const char *driver_params; /* MRAIL_DRIVER_PARAMS: per-driver knobs,
	                              "driver:key=value,...;driver:...", e.g.
	                              "tcp:loopback_rails=3,sockbuf=4m"; each
	                              driver documents its keys
	                              (docs/driver-*.md) and rejects unknown
	                              ones */
	const char *strategy;      /* MRAIL_STRATEGY: name[:key=value,...],
	                              default "split" */
	int log_level;             /* MRAIL_LOG_LEVEL: error|warn|info|debug|trace
	                              or 0..4, default warn */
	const char *profile_dir;   /* MRAIL_PROFILE_DIR: rail profiles (sampler) */
	size_t eager_max;          /* MRAIL_EAGER_MAX: bytes; larger messages use
	                              rendezvous (max 1 MiB). Default
	                              MRAIL_EAGER_MAX_AUTO: each rail's profile
	                              decides (its derived threshold), else
	                              32768 */
	int progress_thread;       /* MRAIL_PROGRESS_THREAD: 0|1 */
	int bootstrap;             /* MRAIL_BOOTSTRAP: auto (-1), 0 = standalone
	                              (peers added with mrail_peer_add), 1 = must
	                              be launched (mrail-run) */
	double connect_timeout;    /* MRAIL_CONNECT_TIMEOUT: seconds (default 30) */
	double finalize_timeout;   /* MRAIL_FINALIZE_TIMEOUT: seconds (default 5) */
	int inband_sampling;       /* MRAIL_INBAND_SAMPLING: 0|1 (default 1):
	                              rails without a profile are measured
	                              briefly at wire-up (bootstrapped jobs) */
	int has_job_key;           /* set when MRAIL_JOB_KEY (32 hex digits) was
	                              given; every data connection must then prove
	                              it knows the key */
	uint8_t job_key[MRAIL_JOB_KEY_BYTES];
	/* Called for every rail as it comes up and goes down, from the first
	 * connection on (set here rather than with mrail_set_rail_hooks() to
	 * see the rails a bootstrapped mrail_engine_create() connects). */
	const struct mrail_rail_hooks *rail_hooks;
	void *rail_hooks_ctx;
	int rdv_protocol;          /* MRAIL_RDV: how rendezvous payload moves on
	                              rails with RDMA: MRAIL_RDV_AUTO (default:
	                              read by the receiver when the sender's
	                              buffer is contiguous, else written by the
	                              sender when the receiver's is, else sent),
	                              _GET, _PUT, or _SEND (never RDMA) */
	int thread_level;          /* MRAIL_THREAD_LEVEL: single|serialized|
	                              multiple (enum mrail_thread_level, default
	                              multiple) */
	/* Eager data buffered for receives not yet posted is bounded: peers
	 * send eagerly only within credit this engine grants, else
	 * rendezvous (docs/flow-control.md). 0: no eager payload at all. */
	size_t unexpected_max;     /* MRAIL_UNEXPECTED_MAX: bytes over all
	                              peers (default 64 MiB) */
	size_t unexpected_peer_max; /* MRAIL_UNEXPECTED_PEER_MAX: bytes per
	                              peer (default 4 MiB) */
	int connect_mode;          /* MRAIL_CONNECT: auto|eager|lazy (enum
	                              mrail_connect_mode, default auto: eager up
	                              to MRAIL_CONNECT_EAGER_RANKS ranks, lazy
	                              above; docs/scale.md) */
};
/* When a bootstrapped engine connects its rails to a peer: all at
 * creation (eager) or at the first message either side sends (lazy). */
enum mrail_connect_mode {
	MRAIL_CONNECT_AUTO = 0, MRAIL_CONNECT_EAGER = 1, MRAIL_CONNECT_LAZY = 2,
};
#define MRAIL_CONNECT_EAGER_RANKS 32
enum mrail_rdv_protocol {
	MRAIL_RDV_AUTO = 0, MRAIL_RDV_GET = 1, MRAIL_RDV_PUT = 2,
	MRAIL_RDV_SEND = 3,
};

MRAIL_API int mrail_config_init(struct mrail_config *cfg);

/* ---- engine ----------------------------------------------------------- */
typedef struct mrail_engine mrail_engine_t;
typedef struct mrail_request mrail_request_t;
typedef uint32_t mrail_peer_t;

#define MRAIL_ANY_PEER ((mrail_peer_t)UINT32_MAX)
#define MRAIL_TAG_MASK_ALL (~(uint64_t)0)

/*
 * Create an engine. cfg may be NULL (defaults + environment).
 * When launched by mrail-run (or, later, a PMIx launcher) and cfg->bootstrap
 * is not 0, the engine exchanges addresses with the whole job and connects to
 * every rank: peer r is rank r (the process itself included, as peer
 * mrail_rank()). Otherwise the engine is standalone: add peers with
 * mrail_peer_add().
 */
MRAIL_API int mrail_engine_create(const struct mrail_config *cfg,
				  mrail_engine_t **engine);

/*
 * Flush queued sends (bounded by finalize_timeout), tell every peer this
 * engine closes, and free everything. Requests not yet collected (pending,
 * complete but not tested, callbacks not yet run) and messages taken by
 * mrail_improbe() but not received are freed; their handles become
 * invalid, and buffers are no longer touched once it returns.
 */
MRAIL_API int mrail_engine_destroy(mrail_engine_t *engine);

/* The engine's thread level (enum mrail_thread_level), as created: what an
 * MPI binding answers in MPI_Init_thread's `provided`.
 * MRAIL_ERR_INVALID for NULL. */
MRAIL_API int mrail_thread_level(const mrail_engine_t *engine);

/* Rank and job size when bootstrapped; 0 and 1 when standalone. */
MRAIL_API uint32_t mrail_rank(const mrail_engine_t *engine);
MRAIL_API uint32_t mrail_size(const mrail_engine_t *engine);

/* ---- peers ------------------------------------------------------------ */
/*
 * This engine's address blob (opaque, at most MRAIL_ADDR_MAX bytes): give it
 * to peers out of band. *len holds the buffer size on entry, the blob size on
 * return (MRAIL_ERR_INVALID with the needed size if too small).
 */
#define MRAIL_ADDR_MAX 16384
MRAIL_API int mrail_address(mrail_engine_t *engine, void *buf, size_t *len);

/*
 * Add a peer from its address blob and start connecting its rails
 * (non-blocking: sends queue until the rails are up). Both sides must add
 * each other. Adding the engine's own address yields a self peer.
 */
MRAIL_API int mrail_peer_add(mrail_engine_t *engine, const void *addr,
			     size_t len, mrail_peer_t *peer);

/*
 * For a standalone engine that a job names (an MPI binding): this
 * process's rank in the job and the job's size, then each peer's rank as
 * it is added. Log lines, traces (MRAIL_TRACE, docs/trace.md) and state
 * dumps then name processes by their ranks ("rank 3") instead of by the
 * order peers were added in ("peer 3"), so that the files of a job's
 * processes can be set side by side. Peer ids (mrail_peer_t) stay the
 * order of adding. mrail_set_job_rank() must come before the first peer;
 * rank < size. MRAIL_ERR_INVALID on a bootstrapped engine (it knows).
 */
MRAIL_API int mrail_set_job_rank(mrail_engine_t *engine, uint32_t rank,
				 uint32_t size);
MRAIL_API int mrail_peer_add_ranked(mrail_engine_t *engine, const void *addr,
				    size_t len, uint32_t job_rank,
				    mrail_peer_t *peer);

/* Number of peers (bootstrapped: the job size). */
MRAIL_API uint32_t mrail_peer_count(const mrail_engine_t *engine);

/* ---- messages --------------------------------------------------------- */
/*
 * mrail_status_t is frozen: users embed it and pass arrays of it to
 * mrail_wait_all(), so its size and layout never change within major
 * version 0. New per-request information comes through new calls.
 */
typedef struct mrail_status {
	mrail_peer_t source; /* sender */
	uint64_t tag;        /* sender's tag */
	size_t length;       /* bytes received (sent, for a send request) */
	int error;           /* MRAIL_OK or MRAIL_ERR_* */
	/* A receive: the sender's length, above `length` when truncated
	 * (libfabric's olen needs it); 0 on other requests. */
	size_t msg_length;
} mrail_status_t;

/*
 * Post a send. The buffer (and the memory behind the iovec; the iovec array
 * itself is copied) must stay untouched until the request completes.
 */
MRAIL_API int mrail_isend(mrail_engine_t *engine, mrail_peer_t dest,
			  const void *buf, size_t len, uint64_t tag,
			  mrail_request_t **req);
MRAIL_API int mrail_isendv(mrail_engine_t *engine, mrail_peer_t dest,
			   const struct iovec *iov, int iovcnt, uint64_t tag,
			   mrail_request_t **req);

/* Post a receive; src may be MRAIL_ANY_PEER. */
MRAIL_API int mrail_irecv(mrail_engine_t *engine, mrail_peer_t src,
			  void *buf, size_t len, uint64_t tag, uint64_t mask,
			  mrail_request_t **req);
MRAIL_API int mrail_irecvv(mrail_engine_t *engine, mrail_peer_t src,
			   const struct iovec *iov, int iovcnt, uint64_t tag,
			   uint64_t mask, mrail_request_t **req);

/*
 * Completion. A request is *complete* when its status is final and no
 * driver operation still reads or writes its buffer (after a failure too:
 * the engine closes the connections that still use the buffer first), so
 * the buffer may be freed or unmapped as soon as completion is reported.
 * status.length is honest on failure: bytes delivered (receive) or
 * acknowledged by the peer (send), possibly 0.
 * When a request is complete, test/wait fill *status (may be
 * NULL), release the request, and the handle becomes invalid. They return
 * MRAIL_OK once the request completed (check status->error for its
 * outcome); mrail_test() returns MRAIL_ERR_AGAIN while it is pending.
 * wait_all/wait_any skip NULL entries and set completed entries to NULL;
 * wait_all returns the first error of any request (MRAIL_OK if none);
 * wait_any returns MRAIL_ERR_INVALID when every entry is NULL.
 */
MRAIL_API int mrail_test(mrail_engine_t *engine, mrail_request_t *req,
			 mrail_status_t *status);
MRAIL_API int mrail_wait(mrail_engine_t *engine, mrail_request_t *req,
			 mrail_status_t *status);
MRAIL_API int mrail_wait_all(mrail_engine_t *engine, size_t count,
			     mrail_request_t **reqs, mrail_status_t *statuses);
MRAIL_API int mrail_wait_any(mrail_engine_t *engine, size_t count,
			     mrail_request_t **reqs, size_t *index,
			     mrail_status_t *status);

/*
 * Cancel a posted receive that has not been matched yet: it completes with
 * MRAIL_ERR_CANCELED (collect it with test/wait, or its callback reports
 * it). MRAIL_ERR_BUSY if already matched (it completes as received, with
 * its data), MRAIL_ERR_INVALID for a send request. The decision is atomic
 * with matching: exactly one of the two outcomes, never both. With a
 * callback, call it only while the callback has not returned (the engine
 * releases the request after it): e.g. hold the lock the callback takes
 * to mark your own request complete, and check that it is not.
 */
MRAIL_API int mrail_cancel(mrail_engine_t *engine, mrail_request_t *req);

/*
 * Make progress and run the completion callbacks that are due (see
 * mrail_req_args); returns the number of events handled, callbacks run
 * included (>= 0), or an error.
 */
MRAIL_API int mrail_progress(mrail_engine_t *engine);

/*
 * Sleeping in an event loop (libfabric's FI_WAIT_FD, a runtime's epoll):
 * mrail_wait_fd() gives a descriptor (owned by the engine, valid until
 * mrail_engine_destroy) that becomes readable when progress may have work:
 * a driver has data, or one of the engine's timers (failure detection,
 * reconnection) is due. Before sleeping on it call mrail_wait_prepare():
 * MRAIL_OK means nothing is left to do until the descriptor wakes, so
 * poll()/epoll_wait() on it without a timeout is safe; MRAIL_ERR_AGAIN
 * means progress found work (completions may be due: test them, then
 * prepare again). After a wake-up, call mrail_progress() (or test/wait);
 * the descriptor is drained by the next prepare. An idle engine (no
 * request, no connection being made) wakes about once a second, a busy
 * one at its timer period (5 ms).
 */
MRAIL_API int mrail_wait_fd(mrail_engine_t *engine, int *fd);
MRAIL_API int mrail_wait_prepare(mrail_engine_t *engine);

/* ---- probes (MPI_Iprobe, MPI_Improbe / MPI_Imrecv) -------------------- */
typedef struct mrail_message mrail_message_t;

/*
 * Make progress, then look for the first unexpected message (arrived,
 * matched by no receive) that a receive (src, tag, mask) would match. *flag
 * is 1 and *status (may be NULL) says its source, tag and full length
 * (status.error MRAIL_OK), else *flag is 0. The message stays queued.
 */
MRAIL_API int mrail_iprobe(mrail_engine_t *engine, mrail_peer_t src,
			   uint64_t tag, uint64_t mask, int *flag,
			   mrail_status_t *status);

/*
 * Like mrail_iprobe, but a message found is also taken out of the queue:
 * no other receive or probe can match it; *msg is its handle, to be given
 * to exactly one mrail_imrecv*() (matched messages left unreceived are
 * freed by mrail_engine_destroy). *msg is NULL when *flag is 0.
 */
MRAIL_API int mrail_improbe(mrail_engine_t *engine, mrail_peer_t src,
			    uint64_t tag, uint64_t mask, int *flag,
			    mrail_message_t **msg, mrail_status_t *status);

/*
 * Receive a message returned by mrail_improbe() (eager, rendezvous or from
 * this process itself) into buf / the iovec; truncation as for irecv. msg
 * is consumed on success; after MRAIL_ERR_INVALID (also: a handle not
 * from improbe or already received) or MRAIL_ERR_NOMEM it is untouched.
 */
MRAIL_API int mrail_imrecv(mrail_engine_t *engine, void *buf, size_t len,
			   mrail_message_t *msg, mrail_request_t **req);
MRAIL_API int mrail_imrecvv(mrail_engine_t *engine, const struct iovec *iov,
			    int iovcnt, mrail_message_t *msg,
			    mrail_request_t **req);

/* ---- extended posting: callbacks, caller storage, synchronous sends ---- */
/*
 * Completion callback. Called once per request (not at all for a send
 * that MRAIL_REQ_IMMEDIATE completed inside its post), from mrail_progress(),
 * mrail_test() or mrail_wait*() (whichever thread calls them; never from
 * isend/irecv/imrecv/cancel/probe, except for a receive posted with
 * MRAIL_REQ_IMMEDIATE that completed inside its post, nor from the
 * progress thread), with the
 * engine lock NOT held: it may post, probe, cancel and progress on the same
 * engine (callbacks then due run later or in a nested call, each once).
 * `status` is valid during the call only. Unless MRAIL_REQ_KEEP was given
 * the engine releases the request once the callback returns: the handle
 * must not be used after that, and never given to test/wait; caller
 * storage may be reused as soon as the callback has returned. With
 * MRAIL_REQ_KEEP the request becomes collectable by test/wait (which
 * report it complete only after its callback returned).
 * Callbacks of requests completed while no thread calls those functions
 * wait until one does.
 */
typedef void (*mrail_request_cb_t)(mrail_request_t *req,
				   const mrail_status_t *status, void *ctx);

/* 2 added `data` (MRAIL_REQ_DATA); version 1 structs are still taken. */
#define MRAIL_REQ_ARGS_VERSION 2

enum mrail_req_flags {
	/* Send: complete only once the receiver matched the message
	 * (MPI_Ssend). Invalid for receives. */
	MRAIL_REQ_SYNC = 1u << 0,
	/* With a callback: keep the request after it; collect it with
	 * test/wait. */
	MRAIL_REQ_KEEP = 1u << 1,
	/* Send (args version >= 2): carry `data`, 64 bits the receiver
	 * reads with mrail_request_data() or a probe's *_data call, outside
	 * the payload (libfabric's remote CQ data). Invalid for receives. */
	MRAIL_REQ_DATA = 1u << 2,
	/* Send: the caller waits for this send now (a blocking send, as
	 * MPI_Send), so its engine progresses until it completes. Between
	 * processes of one host the receiver may then hand the sender half
	 * of a large payload to copy, both copying at once
	 * (docs/driver-shm.md, "Sharing the copy"). Without it (and without
	 * a progress thread) the receiver copies alone and never waits for
	 * the sender to call in. Invalid for receives. */
	MRAIL_REQ_WAITING = 1u << 3,
	/* Send: when the send completes within the call (an eager message
	 * whose data is already in a packet, or one to a posted receive of
	 * this process), return MRAIL_OK with *req set to NULL: the buffer
	 * is the caller's again, no callback is called and there is no
	 * request to test, wait for or release (caller storage is free at
	 * once). Otherwise *req is a request as without the flag. A blocking
	 * send (MPI_Send) then needs no progress call at all for a small
	 * message, as UCX's immediate completion (ucp_tag_send_nbx
	 * returning NULL) and libfabric's fi_inject allow.
	 * Receive with a callback: when the receive completes within the
	 * call (irecv matching a message already here, imrecv), its
	 * callback runs before the call returns, with the engine lock
	 * released, and *req is NULL unless MRAIL_REQ_KEEP (then the
	 * request is collectable as after any callback). *req is written
	 * before the callback runs. Without a callback it has no effect. */
	MRAIL_REQ_IMMEDIATE = 1u << 4,
};

/*
 * Options for mrail_isend_x / mrail_irecv_x / mrail_imrecv_x. Initialize
 * with MRAIL_REQ_ARGS_INIT (the struct may grow; `version` tells which
 * fields exist), then set fields. NULL args means all defaults.
 */
struct mrail_req_args {
	unsigned version;           /* MRAIL_REQ_ARGS_VERSION */
	unsigned flags;             /* MRAIL_REQ_* */
	/* Caller-provided request memory: mrail_request_size() bytes,
	 * aligned like max_align_t, untouched by the caller until the
	 * request is released (test/wait returned it, or its callback
	 * returned). NULL: the engine allocates. With contiguous buffers no
	 * memory is allocated per message on this path (except to buffer
	 * unexpected messages). */
	void *storage;
	mrail_request_cb_t cb;      /* NULL: no callback */
	void *cb_ctx;
	/* An iovec instead of buf/len (which must then be NULL/0); the
	 * array is copied (allocated if iovcnt > 1). */
	const struct iovec *iov;
	int iovcnt;
	uint64_t data;              /* v2: sent with MRAIL_REQ_DATA */
};
#define MRAIL_REQ_ARGS_INIT                                                \
	{ MRAIL_REQ_ARGS_VERSION, 0, NULL, NULL, NULL, NULL, 0, 0 }

/* Bytes of request storage for mrail_req_args.storage. */
MRAIL_API size_t mrail_request_size(void);

MRAIL_API int mrail_isend_x(mrail_engine_t *engine, mrail_peer_t dest,
			    const void *buf, size_t len, uint64_t tag,
			    const struct mrail_req_args *args,
			    mrail_request_t **req);
MRAIL_API int mrail_irecv_x(mrail_engine_t *engine, mrail_peer_t src,
			    void *buf, size_t len, uint64_t tag, uint64_t mask,
			    const struct mrail_req_args *args,
			    mrail_request_t **req);
MRAIL_API int mrail_imrecv_x(mrail_engine_t *engine, void *buf, size_t len,
			     mrail_message_t *msg,
			     const struct mrail_req_args *args,
			     mrail_request_t **req);

/* Synchronous send (MPI_Issend): mrail_isend_x with MRAIL_REQ_SYNC. */
MRAIL_API int mrail_issend(mrail_engine_t *engine, mrail_peer_t dest,
			   const void *buf, size_t len, uint64_t tag,
			   mrail_request_t **req);

/*
 * Remote data of a receive: 1 and *data if the matched message was sent
 * with MRAIL_REQ_DATA, else 0 (also for sends and receives not yet
 * matched). Valid while the request is: in its callback, or until
 * test/wait hands back a MRAIL_REQ_KEEP request.
 */
MRAIL_API int mrail_request_data(const mrail_request_t *req, uint64_t *data);

/* The same for a message handle from mrail_improbe (before its imrecv). */
MRAIL_API int mrail_message_data(const mrail_message_t *msg, uint64_t *data);

/*
 * mrail_iprobe that also reports the message's remote data: *has_data 1
 * and *data when it carries some (both may be NULL; untouched when
 * nothing is found).
 */
MRAIL_API int mrail_iprobe_data(mrail_engine_t *engine, mrail_peer_t src,
				uint64_t tag, uint64_t mask, int *flag,
				mrail_status_t *status, int *has_data,
				uint64_t *data);

/*
 * Attach a callback to a request posted without one (at most once). If the
 * request is already complete, the callback runs at the next progress
 * call. MRAIL_ERR_INVALID if it already has one.
 */
MRAIL_API int mrail_request_set_callback(mrail_request_t *req,
					 mrail_request_cb_t cb, void *ctx);

/* ---- rails and counters ----------------------------------------------- */
struct mrail_rail_stats {
	char driver[16];        /* "tcp", ... */
	char local[64];         /* local endpoint, e.g. "127.0.0.1:40123" */
	char remote[64];        /* peer endpoint */
	int up;                 /* connected and healthy */
	uint64_t tx_bytes, rx_bytes;       /* payload bytes (user data) */
	uint64_t tx_msgs, rx_msgs;         /* messages whose first byte used
	                                      this rail (eager or rendezvous) */
	uint64_t tx_chunks, rx_chunks;     /* rendezvous payload frames (a
	                                      chunk may travel as several:
	                                      docs/pacing.md) */
	uint64_t tx_packets, rx_packets;   /* eager/control packets */
	uint64_t tx_wire_bytes, rx_wire_bytes; /* everything, headers included */
	double tx_busy_seconds;  /* time with packets or chunks posted on this
	                            rail and not yet handed to the NIC/kernel */
	double rx_busy_seconds;  /* time with rendezvous chunks this host
	                            requested on this rail not yet arrived */
	double time_scale;       /* measured / predicted duration of recent
	                            chunks received on it (1: none measured);
	                            multiplies the predictions strategies see */
	uint64_t rma_reads;      /* rendezvous chunks this host read from the
	                            peer by RDMA on this rail */
	uint64_t rma_writes;     /* chunks this host wrote to the peer by RDMA */
	/* Failover (docs/failover.md). */
	uint64_t failures;       /* times this rail went down */
	uint64_t reconnects;     /* times it came back up after a failure */
	uint64_t retx_bytes;     /* bytes moved again on other rails because
	                            this rail failed: replayed packets and
	                            re-requested payload */
	double up_seconds;       /* time up (since first up) */
	double down_seconds;     /* time down after a failure */
};

/* What a rail is: chosen at wire-up (loopback for processes of the same
 * host, address selection between hosts). */
struct mrail_rail_info {
	char driver[16];
	char local_if[16];      /* interface name ("lo" for loopback rails) */
	char remote_if[16];     /* the peer's interface */
	char local_addr[64];    /* "10.0.0.1:40123" once connected */
	char remote_addr[64];
	int conn_type;          /* 0 loopback; 1 private IPv4 same network;
	                           2 public same network; 3 public routed;
	                           4 private fallback (docs/address-selection.md) */
	uint64_t speed_mbps;    /* local link speed, 0 if unknown */
	int up;
	char model[16];         /* where the transfer-time model comes from:
	                           "profile" (mrail-sample), "nominal" (link
	                           speed) or "default" (1 GB/s, 10 us) */
	double latency;         /* model: seconds for the smallest message */
	double bandwidth;       /* model: bytes/s for large messages */
	uint64_t threshold;     /* rendezvous threshold from the profile, 0 if
	                           none */
	char state[16];         /* "connecting", "up", "down" (failed, its
	                           traffic moved to the other rails, being
	                           reconnected), "closed" */
};
MRAIL_API int mrail_rail_info(mrail_engine_t *engine, mrail_peer_t peer,
			      int rail, struct mrail_rail_info *info);

/* ---- offload of eager copies (docs/offload.md) ------------------------- */
#define MRAIL_OFFLOAD_WORKERS_MAX 16
struct mrail_offload_info {
	unsigned workers;        /* 0: offload is off (no idle core, none,
	                            thread level single) */
	unsigned running;        /* 1 once the workers started: at the first
	                            message worth sending in parts */
	int cpus[MRAIL_OFFLOAD_WORKERS_MAX]; /* PU (OS index) of each worker */
	double t_o_spinning;     /* handoff cost T_O (s) to a spinning worker */
	double t_o_asleep;       /* T_O (s) to a sleeping worker */
	double spin;             /* s a worker spins before it sleeps */
	uint64_t messages;       /* eager messages sent in parts */
	uint64_t parts;
	uint64_t declined;       /* looked at, the strategy's eager_offload
	                            said whole (equation (1) said no) */
	double lock_wait;        /* s workers waited for the engine lock */
	uint64_t lock_takes;
	uint64_t vetoed;         /* sent whole because of what sending in
	                            parts measured for that size (docs/
	                            offload.md, "Measured guard"): the
	                            strategy, told that cost, said whole, or
	                            its plan was vetoed */
	uint64_t parks;          /* times the workers were stopped for having
	                            had nothing to do */
};
MRAIL_API int mrail_offload_info(mrail_engine_t *engine,
				 struct mrail_offload_info *info);

/* ---- per-connection hooks --------------------------------------------- */
/*
 * For layers that attach state to each connection (the SDN tagger
 * registers a TCP rail's socket and 4-tuple with the network; an offload
 * layer keeps per-rail queues). Hooks run with the engine lock held, from
 * inside whichever call brought the rail up or down: they must not call
 * the engine.
 */
struct sockaddr; /* <sys/socket.h> */
struct mrail_rail_conn {
	mrail_peer_t peer;
	int rail;                 /* index among the peer's rails */
	const char *driver;       /* "tcp", "fake", ... */
	int fd;                   /* the connection's socket, -1 if none */
	const struct sockaddr *local;  /* NULL unless an IP connection */
	const struct sockaddr *remote;
	unsigned addr_len;        /* bytes of each address (a socklen_t) */
};
struct mrail_rail_hooks {
	/* The rail is up; returns the state kept with it (may be NULL). */
	void *(*rail_up)(void *ctx, const struct mrail_rail_conn *conn);
	/* The rail is about to be closed (its connection still open). */
	void (*rail_down)(void *ctx, const struct mrail_rail_conn *conn,
			  void *state);
	/* Optional: a message starts leaving on a rail (its eager record,
	 * its rendezvous request, or one of its payload chunks is about to be
	 * posted); state is what rail_up returned for that rail (NULL without
	 * rail_up). With aggregation, a packet reports its first message.
	 * Called for every message from whichever thread posts it: keep it
	 * cheap (the SDN tagger retags the socket only when the tag changes). */
	void (*msg_tx)(void *ctx, void *state, uint64_t tag);
};
/* Replace the hooks (NULL: none); rail_up runs at once for rails already
 * up, rail_down for them with the old hooks first. */
MRAIL_API int mrail_set_rail_hooks(mrail_engine_t *engine,
				   const struct mrail_rail_hooks *hooks,
				   void *ctx);
/* The connection behind a rail and the state its rail_up hook returned. */
MRAIL_API int mrail_rail_conn(mrail_engine_t *engine, mrail_peer_t peer,
			      int rail, struct mrail_rail_conn *conn,
			      void **state);

/*
 * In-band sampling with one peer, for engines created without a bootstrap
 * (MPI bindings): rails without a profile get a model measured over the
 * real path (each rail alone, four sizes, tens of ms per rail) instead of
 * the link's nominal speed. Collective between the two: both call it at a
 * moment no application message exists, one with first = 1, the other
 * with first = 0. Waits until the peer is connected. Rails of this
 * process on the same local interface share the model. A no-op with
 * MRAIL_INBAND_SAMPLING=0 or when both sides have profiles.
 * MRAIL_ERR_NOT_FOUND (no such peer), MRAIL_ERR_PEER (connection failed).
 */
MRAIL_API int mrail_sample_peer(mrail_engine_t *engine, mrail_peer_t peer,
				int first);

/* Number of rails to a peer (0 for the self peer). */
MRAIL_API int mrail_rail_count(const mrail_engine_t *engine, mrail_peer_t peer);
MRAIL_API int mrail_rail_stats(mrail_engine_t *engine, mrail_peer_t peer,
			       int rail, struct mrail_rail_stats *stats);

/*
 * What the engine waits on, written as text to fd: per peer its rails
 * (state, backlog, packets not yet acknowledged, when the peer was last
 * heard), its send queue, its rendezvous requests in flight and its flow
 * control. For people diagnosing a stall: the format may change. Safe
 * from any thread (it takes the engine's lock like every call).
 */
MRAIL_API int mrail_engine_dump(mrail_engine_t *engine, int fd);

#ifdef __cplusplus
}
#endif
#endif /* MRAIL_H */
