/*
 * Gates (gate.c): one per peer, with its rails, its send queue in
 * sequence order and its receive order. The send queue is scheduled onto
 * rails by send.c.
 */
#ifndef MRAIL_LIBMRAIL_GATE_H
#define MRAIL_LIBMRAIL_GATE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "mrail.h"
#include "strategies/strategy.h"
#include "util/list.h"

struct mrail_engine;
struct mrail_request;
struct rail;

/* GATE_IDLE: planned, no connection yet (lazy connection: the first
 * message either side sends connects it, docs/scale.md). */
enum gate_state { GATE_IDLE, GATE_CONNECTING, GATE_UP, GATE_CLOSED,
		  GATE_FAILED };

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
	enum gate_state state;
	int in_active;            /* listed in engine->active */
	int error;                /* why it failed */
	int bye_received;
	uint32_t job_rank;        /* how the job names it (mrail_peer_add_ranked;
	                             bootstrapped: its rank; else its id) */
	char name[32];            /* "rank 3" / "peer 3" for logs */
	unsigned nrails;          /* rails to this peer */
	unsigned rails_up;
	struct rail *rails[MRAIL_MAX_RAILS];
	struct rail_plan *plan;    /* nrails entries */
	struct mrail_list sendq;   /* sends not yet started, in seq order */
	struct mrail_list rdv;     /* rendezvous requests in flight */
	uint64_t next_send_seq;
	uint64_t next_recv_seq;
	uint64_t detached_bytes; /* held copies of completed sends (send.c) */
	int detach_retry;        /* a copy was taken: room for more (send.c) */
	uint64_t burst_pass;     /* progress pass of the last packet sent at
	                            post time on a system-call rail (burst.c) */
	struct mrail_list ooo;     /* records that arrived early, by seq */
	struct mrail_list pull_wait; /* buffered RTS to pull (pull.c) */
	unsigned pulls;            /* pulls under way */
	struct mrail_list parts;   /* offloaded eager messages in parts */
	size_t eager_max;          /* min over rails */
	double deadline;           /* rails must be up before (set when
	                              connecting starts) */
	void *strategy_peer;       /* the strategy's per-peer state */
	/* Failover (failover.c). */
	double all_down_since;     /* every rail down since (0: not) */
	unsigned replay_next;      /* rotates the rails failover uses */
	struct mrail_list dead_rails; /* replaced rail objects (link) */
	struct mrail_list owed;    /* notices built while every rail was
	                              down (send_op link): failover.c */
	/* credits.c: eager flow control (docs/flow-control.md) */
	uint64_t cr_tx;            /* eager bytes we may still send it */
	uint64_t cr_granted;       /* eager bytes it may still send us */
	uint64_t cr_held;          /* its eager bytes held unexpected */
	uint64_t cr_grants;        /* CREDIT records we sent it */
};

/* gate.c */
/* job_rank: the peer's rank in the job, GATE_NO_JOB_RANK when the caller
 * does not name it (the gate is then "peer <id>"). */
#define GATE_NO_JOB_RANK UINT32_MAX
int gate_add(struct mrail_engine *e, const void *addr, size_t len,
	     uint32_t job_rank, mrail_peer_t *out);
/* The same from an address already parsed (bootstrap: parsed once for
 * the whole job's duplicate check). */
struct peer_address;
int gate_add_parsed(struct mrail_engine *e, const struct peer_address *pa,
		    uint32_t job_rank, mrail_peer_t *out);
struct gate *gate_get(struct mrail_engine *e, mrail_peer_t id);
/* The gate of the engine with this uuid, or NULL (constant time: HELLOs
 * and peer adds of a 1024-rank job were quadratic). */
struct gate *gate_find_uuid(struct mrail_engine *e, uint64_t uuid);
void gate_fail(struct mrail_engine *e, struct gate *g, int error,
	       const char *why);
void gate_free(struct mrail_engine *e, struct gate *g);
/* Connect the rails of this gate now (an idle gate; else nothing to do).
 * A failure fails the gate, not the call. */
void gate_connect_now(struct mrail_engine *e, struct gate *g);
/* g started connecting: the timers visit it from now on. */
void gate_set_active(struct mrail_engine *e, struct gate *g);
/* The gates the timers visit, pruned of those that closed or failed;
 * *n set to their count. */
struct gate **gate_active(struct mrail_engine *e, uint32_t *n);
/* A message is queued on g: with lazy connection, connect it now. (With
 * eager connection the engine with the larger uuid connects; the other
 * waits for it.) */
void gate_first_use(struct mrail_engine *e, struct gate *g);
int gate_rail_info(struct mrail_engine *e, mrail_peer_t peer, int rail,
		   struct mrail_rail_info *info);
int gate_rail_stats(struct mrail_engine *e, mrail_peer_t peer, int rail,
		    struct mrail_rail_stats *st);

/* send.c */
/* A new send request to dest, queued (or sent to self); *out on success. */
int send_start(struct mrail_engine *e, mrail_peer_t dest,
	       const struct iovec *iov, int iovcnt, const void *buf, size_t len,
	       uint64_t tag, const struct mrail_req_args *args,
	       struct mrail_request **out);
/* An immediate eager send straight into a packet, no request (send.c):
 * 1 if taken (*rc its result), 0 for send_start. */
int send_direct(struct mrail_engine *e, mrail_peer_t dest,
		const struct iovec *iov, int iovcnt, const void *buf,
		size_t len, uint64_t tag, const struct mrail_req_args *args,
		int *rc);
int send_post(struct mrail_engine *e, struct gate *g, struct mrail_request *r);
void gate_schedule(struct mrail_engine *e, struct gate *g);
void schedule_pending(struct mrail_engine *e);
/* Copy sends that wait as a plain RTS, room permitting (progress). */
void send_detach_waiting(struct mrail_engine *e, struct gate *g);

#endif
