/*
 * drivers/common ("dc"): the base the drivers share, as libfabric's
 * prov/util and UCX's uct/base are for theirs. It owns what every driver of
 * drivers/driver.h needs and would otherwise copy:
 *
 *  - the endpoint registry (dc_ep.c): endpoint states, the attention list
 *    (failures seen outside progress, reported by the next progress), and
 *    deferred freeing of endpoints closed during progress (zombies), which
 *    is what makes re-entrant upcalls safe;
 *  - ordered send records (dc_send.c): the per-endpoint send queue in
 *    posting order, ep_backlog, and the completion list behind send_done,
 *    with the close and failure rules of driver.h (frames that left are
 *    reported before ep_error, queued ones fail after it, nothing after
 *    ep_close);
 *  - the socket part (dc_sock.c) for drivers over file descriptors: one
 *    epoll set, listeners and their accept loop, event masks that change
 *    only when the wanted set changes, non-blocking connect results.
 *
 * A driver embeds struct dc_drv as the first member of its struct mrail_drv
 * and struct dc_ep as the first member of its struct mrail_drv_ep, and
 * gives one const struct dc_hooks. The common layer calls the driver only
 * through those hooks. docs/extending.md shows a new driver on it.
 */
#ifndef MRAIL_DRIVERS_COMMON_DC_H
#define MRAIL_DRIVERS_COMMON_DC_H

#include "drivers/driver.h"
#include "util/list.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#define DC_NAME_LEN 160
/* Room for a driver's frame header in a send record. */
#define DC_SEND_HDR_MAX 16

/* ---- objects in the epoll set ------------------------------------------ */

enum dc_obj_kind { DC_OBJ_LISTENER, DC_OBJ_EP, DC_OBJ_OTHER };

/* First member of every object registered in epoll (epoll data.ptr). */
struct dc_pollable {
	enum dc_obj_kind kind;
	int fd;
};

/* First member of a driver's listener; allocated with malloc (freed by
 * dc_drv_fini). */
struct dc_listener {
	struct dc_pollable poll;
	char name[DC_NAME_LEN];
	int accept_errno; /* last accept failure, logged once */
};

/* ---- endpoints --------------------------------------------------------- */

enum dc_ep_state {
	DC_EP_CONNECTING,
	DC_EP_CONNECTED,
	DC_EP_FAILED, /* error reported; waits for ep_close */
	DC_EP_CLOSED, /* ep_close called; memory freed at a safe point */
};

struct dc_send;
struct dc_drv;

/* First member of a driver's struct mrail_drv_ep. */
struct dc_ep {
	struct dc_pollable poll; /* fd -1 when the driver has none */
	struct dc_drv *drv;
	void *ctx; /* the engine's, passed to upcalls */
	enum dc_ep_state state;
	uint32_t ev_mask; /* epoll events registered, 0 if none */
	/* drv->eps; an endpoint closed during progress stays listed (state
	 * DC_EP_CLOSED, so walks may go on past it) until progress ends. */
	struct mrail_list link;
	struct dc_ep *zombie_next;

	/* Failures seen outside progress, reported by the next progress. */
	bool needs_attention;
	struct dc_ep *attention_next;
	int connect_errno; /* connect failed before progress could say */
	int send_errno;    /* a write failed outside progress */

	/* Frames not fully handed over, in posting order. */
	struct dc_send *sq_head, *sq_tail;
	uint64_t backlog;

	char local_name[DC_NAME_LEN];
	char remote_name[DC_NAME_LEN];
};

/*
 * What the common layer asks of a driver. Only `name` and `ep_free` are
 * required; socket drivers give the event hooks.
 */
struct dc_hooks {
	const char *name; /* log prefix ("tcp") */
	/* Free the driver's part of a closed endpoint and the endpoint. */
	void (*ep_free)(struct dc_ep *ep);
	/* ep_close was called, ep is still in its state: tell the peer. */
	void (*ep_closing)(struct dc_ep *ep);
	/* A closed endpoint the hardware may still reference (verbs work
	 * requests outstanding): kept, and freed by a later progress once
	 * this says false (or at dc_drv_fini). NULL: never busy. */
	bool (*ep_busy)(const struct dc_ep *ep);
	/* Handle what dc_ep_need_attention flagged (from progress). */
	void (*ep_attend)(struct dc_ep *ep);
	/* Work flagged outside progress needs a progress call: make
	 * wait_fd readable. NULL when the flag alone suffices. */
	void (*wake)(struct dc_drv *drv);
	/* ep failed: stop traffic beyond the epoll set (shutdown). */
	void (*ep_stop)(struct dc_ep *ep);
	/* ep's operations other than frames (RMA): fail them with status
	 * (after ep_error) or drop them without upcall (ep_close). */
	void (*ep_fail_ops)(struct dc_ep *ep, int status);
	void (*ep_drop_ops)(struct dc_ep *ep);

	/* Socket drivers (dc_sock.c). The epoll events ep wants now. */
	uint32_t (*ep_wanted_events)(const struct dc_ep *ep);
	void (*ep_events)(struct dc_ep *ep, uint32_t events);
	/* A connection a listener accepted: make its endpoint
	 * (dc_ep_add, state DC_EP_CONNECTED) or close fd and return NULL. */
	struct dc_ep *(*ep_accept)(struct dc_drv *drv, struct dc_listener *l,
				   int fd);
	/* Events of a DC_OBJ_OTHER object (a timer). */
	void (*other_events)(struct dc_drv *drv, struct dc_pollable *obj,
			     uint32_t events);
};

/* First member of a driver's struct mrail_drv. */
#define DC_CONNECT_ERRS 16

struct dc_drv {
	struct mrail_drv_base base; /* first: the engine's view */
	const struct dc_hooks *hooks;
	int epfd; /* -1 unless dc_epoll_open */

	struct dc_listener **listeners;
	int nlisteners;

	struct mrail_list eps;
	struct dc_ep *zombies; /* closed during progress, freed after */
	struct dc_ep *attention;
	int progress_depth;

	/* Sends that left (or failed), waiting for their send_done. */
	struct dc_send *done_head, *done_tail;
	unsigned done_count;
	struct dc_send *send_pool;
	int send_pool_cnt;

	/* Connects failing, by local -> remote and errno: the engine
	 * reconnects a failed rail with back-off, and one that keeps
	 * failing the same way logs once (docs/failover.md). */
	struct dc_connect_err {
		char from[DC_NAME_LEN], to[DC_NAME_LEN];
		int err;
	} connect_errs[DC_CONNECT_ERRS];
	unsigned connect_errs_next;
};

#define dc_ep_of(mrail_ep) ((struct dc_ep *)(mrail_ep))
#define dc_drv_of(mrail_drv) ((struct dc_drv *)(mrail_drv))
/* Walk the endpoints (closed ones too: check state). An upcall may close
 * any endpoint during the walk: closed ones stay listed until progress
 * returns. */
#define dc_foreach_ep(pos, tmp, drv) \
	mrail_list_foreach_safe(pos, tmp, &(drv)->eps)
#define dc_ep_entry(node) mrail_container_of(node, struct dc_ep, link)

/* ---- dc_ep.c ----------------------------------------------------------- */
void dc_drv_init(struct dc_drv *drv, const struct dc_hooks *hooks,
		 const struct mrail_drv_ops *ops,
		 const struct mrail_drv_open_args *args);
/* Closes every endpoint and listener and frees the common parts (not drv
 * itself). */
void dc_drv_fini(struct dc_drv *drv);
/* Register a driver-allocated (zeroed) endpoint. */
void dc_ep_add(struct dc_drv *drv, struct dc_ep *ep, int fd,
	       enum dc_ep_state state, void *ctx);
void dc_ep_need_attention(struct dc_ep *ep);
/* Hand a fresh accepted endpoint to the engine (progress only). */
void dc_ep_accepted(struct dc_ep *ep);
/* Report a broken connection (progress only; connected endpoints):
 * frames that left get send_done first, then ep_error, then queued frames
 * fail (before ep_error too with sends_first). */
void dc_ep_fail(struct dc_ep *ep, int status, bool sends_first,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* A connect failed with errno err: connected(MRAIL_ERR_PEER), queued
 * frames and operations fail. */
/* connected(error) upcall: MRAIL_ERR_PEER_CLOSED if refused (nobody
 * listens: the peer process is gone), else MRAIL_ERR_PEER; warns once
 * per (local, remote, errno), debug for the same failure again. */
void dc_ep_connect_failed(struct dc_ep *ep, int err);
/* The connect succeeded (call before local_name gets its port): "works
 * again" if it had been failing. */
void dc_ep_connect_ok(struct dc_ep *ep);
void dc_ep_close(struct dc_ep *ep);
/* Progress bracket: false when progress is already running (an upcall
 * re-entered it), then do nothing. leave frees endpoints closed inside.
 * Inline, as the checks below: an idle progress pass over shm made ten
 * calls that found nothing to do, a quarter of its instructions. */
static inline bool dc_progress_enter(struct dc_drv *drv)
{
	if (!drv || drv->progress_depth > 0)
		return false;
	drv->progress_depth++;
	return true;
}
void dc_free_idle_zombies(struct dc_drv *drv);
static inline void dc_progress_leave(struct dc_drv *drv)
{
	drv->progress_depth--;
	if (drv->zombies)
		dc_free_idle_zombies(drv);
}
/* Run ep_attend for every flagged endpoint; returns how many. */
int dc_attend(struct dc_drv *drv);

/* Ready-made ops (driver.h) for drivers whose endpoints start with dc_ep. */
void dc_op_ep_set_ctx(struct mrail_drv_ep *ep, void *ep_ctx);
void dc_op_ep_names(struct mrail_drv_ep *ep, char *local, size_t llen,
		    char *remote, size_t rlen);
uint64_t dc_op_ep_backlog(struct mrail_drv_ep *ep);
void dc_op_ep_close(struct mrail_drv_ep *ep);

/* ---- dc_send.c --------------------------------------------------------- */

/*
 * One posted frame: iov[0] the driver's header (hdr), iov[1] the head,
 * then the body entries. Stream drivers advance the entries in place as
 * bytes leave (dc_sendq_consume).
 */
struct dc_send {
	struct dc_send *next;
	struct dc_ep *ep;
	void *send_ctx;
	uint64_t left;     /* bytes not yet handed over (backlog share) */
	uint64_t body_len;
	double due;        /* may leave at this time (link models), 0: now */
	int status;        /* reported by send_done */
	int iov_pos;       /* first entry with bytes not handed over */
	int iov_cnt;
	int iov_cap;
	uint8_t hdr[DC_SEND_HDR_MAX];
	struct iovec iov[];
};

/* What a driver's frames may carry (its caps). */
struct dc_frame_limits {
	size_t max_head;
	int max_iov;
	uint64_t max_body;
	size_t hdr_len; /* the driver's frame header, in rec->hdr */
};

/*
 * The start of every send (driver.h `send`): ep open (MRAIL_ERR_INVALID)
 * and not failed (MRAIL_ERR_PEER), the frame within limits (logged), then
 * a record for [lim->hdr_len bytes of rec->hdr, which the caller fills,
 * head, body] in *out. 0 or a negative MRAIL_ERR_*.
 */
int dc_send_begin(struct dc_ep *ep, const struct dc_frame_limits *lim,
		  const void *head, size_t head_len, const struct iovec *body,
		  int body_cnt, void *send_ctx, struct dc_send **out);
/*
 * A driver that can hand a frame over whole inside send (nothing queued
 * before it, room for all of it) skips the queue: dc_send_check does
 * dc_send_begin's checks and gives the body's length; dc_send_record a
 * record that only carries the completion (get it before the frame
 * leaves: it may fail), then dc_done_push(rec, 0) once it has.
 */
int dc_send_check(struct dc_ep *ep, const struct dc_frame_limits *lim,
		  const void *head, size_t head_len, const struct iovec *body,
		  int body_cnt, uint64_t *body_len);
struct dc_send *dc_send_record(struct dc_ep *ep, void *send_ctx);
void dc_send_free(struct dc_drv *drv, struct dc_send *rec);
/* The record left (status 0) or failed: send_done from progress. */
void dc_done_push(struct dc_send *rec, int status);
/* send_done for ep's finished sends now (before its ep_error). */
void dc_report_done_of(struct dc_ep *ep);
void dc_drop_done_of(struct dc_ep *ep);
/* send_done for what is listed now; returns how many. */
int dc_run_completions_now(struct dc_drv *drv);
static inline int dc_run_completions(struct dc_drv *drv)
{
	return drv->done_count ? dc_run_completions_now(drv) : 0;
}

void dc_sendq_push(struct dc_ep *ep, struct dc_send *rec);
struct dc_send *dc_sendq_pop(struct dc_ep *ep);
/* Queued frames move to the completion list with status. */
void dc_sendq_fail(struct dc_ep *ep, int status);
void dc_sendq_drop(struct dc_ep *ep);
/* Streams: n bytes of the queue's head left; whole frames complete. */
void dc_sendq_consume(struct dc_ep *ep, uint64_t n);
void dc_send_advance(struct dc_send *rec, uint64_t n);
/* Streams: the queue's unsent entries, up to max, into g; *bytes total. */
int dc_sendq_gather(const struct dc_ep *ep, struct iovec *g, int max,
		    uint64_t *bytes);

/* ---- dc_blob.c --------------------------------------------------------- */
#define DC_BLOB_HDR_LEN 7
struct dc_blob_format {
	char magic[4];            /* "MRFA" */
	uint8_t version;
	int max_payload;          /* at most 255 */
	int max_rails;
	const char *a_driver;     /* "a fake" (error messages) */
	const char *payload_what; /* "name" */
};
/* [magic, version, rail, len, payload] into addr (capacity *addr_len,
 * set to the length used); too small a buffer: MRAIL_ERR_INVALID, with
 * the size needed in *addr_len. */
int dc_blob_encode(const struct dc_drv *drv, const struct dc_blob_format *f,
		   int rail, const void *payload, size_t len, void *addr,
		   size_t *addr_len);
/* A peer's blob checked field by field (logged); payload points into
 * addr. */
int dc_blob_decode(const struct dc_drv *drv, const struct dc_blob_format *f,
		   const void *addr, size_t len, int *rail,
		   const uint8_t **payload, size_t *payload_len);

/* ---- dc_sock.c --------------------------------------------------------- */
int dc_epoll_open(struct dc_drv *drv);
/* Bring ep's epoll registration to hooks->ep_wanted_events (only calls
 * epoll_ctl when that changes). A failure flags ep for attention. */
void dc_ep_update_events(struct dc_ep *ep);
/* Register a listening socket's listener; its index, or an error. */
int dc_listener_add(struct dc_drv *drv, struct dc_listener *l);
/* Wait 0 s on the epoll set and dispatch; returns events handled. */
int dc_epoll_dispatch(struct dc_drv *drv);
/* 0 when a non-blocking connect on fd finished well, else an errno. */
int dc_sock_connect_result(int fd, uint32_t events);
/* sendmsg without blocking or SIGPIPE: bytes written or -errno. */
ssize_t dc_sock_writev(int fd, struct iovec *iov, int cnt);

#endif
