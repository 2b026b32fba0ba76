/*
 * Requests (request.c): one send or receive from isend/irecv/imrecv to
 * test/wait. Phases, flags, lifetime (complete vs released), rendezvous
 * handles that name a request on the wire, and callbacks.
 */
#ifndef MRAIL_LIBMRAIL_REQUEST_H
#define MRAIL_LIBMRAIL_REQUEST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "mrail.h"
#include "util/list.h"

struct mrail_engine;
struct gate;
struct rdv_rma;
struct rdv_range;

#define MRAIL_IOV_MAX 1024

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
/* Send: carries `data`; receive: the matched message carried `data`. */
#define REQF_DATA MRAIL_REQ_DATA
#define REQF_WAITING MRAIL_REQ_WAITING
#define REQF_IMMEDIATE MRAIL_REQ_IMMEDIATE
#define REQF_STORAGE (1u << 8) /* caller's memory: never free()d */
#define REQF_DETACHED (1u << 9) /* engine's copy of a completed send */
#define REQF_PULL (1u << 10) /* pulls a buffered payload early (pull.c) */
/* Memory a detached copy holds: its request and its payload. Counted
 * whole, so that many small copies are capped as surely as a few large
 * ones. */
#define REQ_DETACHED_CHARGE(r) (sizeof(*(r)) + (r)->len)

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
	enum req_kind kind;
	enum req_phase phase;
	mrail_status_t status;
	struct gate *gate;      /* send: destination; recv: source when
	                           matched (NULL while posted from any) */
	mrail_peer_t peer;      /* as posted (recv: may be MRAIL_ANY_PEER) */
	uint64_t tag, mask;
	uint64_t data;          /* REQF_DATA: remote data sent or received */
	struct iovec *iov;
	int iovcnt;
	struct iovec iov1;      /* storage for contiguous buffers */
	size_t len;             /* total buffer length */
	uint64_t seq;           /* send: gate sequence number */
	uint64_t id;            /* rendezvous handle (0 if none) */
	uint64_t remote_id;     /* recv: sender's send_id */
	uint64_t expected;      /* rdv: payload bytes that will move */
	uint64_t done_bytes;    /* rdv: payload bytes moved so far */
	uint64_t pace_ticket;   /* send: its place in the NICs' order (pace.c) */
	uint64_t pace_asked;    /* send: payload bytes the receiver asked for */
	int outstanding;        /* driver operations still referencing us */
	int error;              /* first error seen (completion status) */
	struct rdv_rma *rma;    /* one-sided rendezvous state, or NULL */
	/* Failover (failover_rdv.c). */
	int rdone;              /* send: the receiver has every byte */
	struct rdv_range *ranges; /* recv: byte ranges asked for */
	unsigned nranges, ranges_cap;
};

/* A buffer given to isend/irecv: contiguous (iov NULL) or an iovec. */
static inline int buffer_args_valid(const struct iovec *iov, int iovcnt,
				    const void *buf, size_t len)
{
	if (iov)
		return iovcnt >= 0 && iovcnt <= MRAIL_IOV_MAX;
	return iovcnt == 0 && (len == 0 || buf);
}

/* request.c */
struct mrail_request *request_new(struct mrail_engine *e,
				  enum req_kind kind,
				  const struct iovec *iov, int iovcnt,
				  const void *buf, size_t len);
/* With caller storage and options (args already validated). */
struct mrail_request *request_new_x(struct mrail_engine *e,
				    enum req_kind kind,
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
/* isend of a send with MRAIL_REQ_IMMEDIATE: 1 (and released, callback
 * dropped) if it completed inside the post, else 0. */
int request_release_immediate(struct mrail_engine *e,
			      struct mrail_request *r);
/* A receive posted with MRAIL_REQ_IMMEDIATE: complete inside its post,
 * its callback due (lock held). */
int request_due_now(struct mrail_request *r);
/* Runs that callback now, alone: called with the lock held, returns with
 * it released (released around the callback too). */
void request_run_callback_now(struct mrail_engine *e, struct mrail_request *r);
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
/* `to` answers to from's id from now on (from has none). */
void handle_rebind(struct mrail_engine *e, struct mrail_request *from,
		   struct mrail_request *to);

#endif
