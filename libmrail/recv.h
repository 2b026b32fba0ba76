/*
 * Receiving (recv.c): posted receives, matching, unexpected messages and
 * the per-gate reordering of records; probes (probe.c), sends to self
 * (self.c) and synchronous-send acknowledgements (sync.c).
 */
#ifndef MRAIL_LIBMRAIL_RECV_H
#define MRAIL_LIBMRAIL_RECV_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "mrail.h"
#include "util/list.h"

struct mrail_engine;
struct mrail_request;
struct gate;
struct rail;
struct rdv_rma;

/* A message that arrived before its receive was posted. */
enum unexp_kind { UNEXP_EAGER, UNEXP_RTS, UNEXP_SELF };
struct unexpected {
	struct mrail_list link;
	enum unexp_kind kind;
	struct gate *gate;
	uint64_t seq;             /* for the out-of-order list */
	uint64_t tag;
	uint64_t len;             /* message length */
	int has_imm;              /* the sender attached remote data */
	uint64_t imm;             /* (MRAIL_REQ_DATA) */
	uint64_t send_id;         /* RTS; EAGER: sender's id if it waits for
	                             a SYNC_ACK (synchronous send), else 0 */
	struct rdv_rma *rma;      /* RTS: the sender's keys, or NULL */
	struct mrail_request *self_send; /* UNEXP_SELF */
	/* pull.c: an RTS whose sender is done (MRAIL_WIRE_RTS_BUFFERED) may
	 * have its payload pulled before a receive matches it. */
	int buffered;
	struct mrail_list plink;  /* not pulled yet: in g->pull_wait */
	struct mrail_request *pull;   /* pulling it now */
	struct mrail_request *waiter; /* the receive that took it meanwhile */
	uint8_t *pulled;          /* its payload once pulled (UNEXP_EAGER) */
	int small;                /* data[] holds UNEXP_SMALL bytes: kept for
	                             reuse when freed (recv.c) */
	uint8_t data[];           /* UNEXP_EAGER payload (not pulled) */
};

/* An UNEXP_EAGER message's payload. */
static inline const uint8_t *unexpected_payload(const struct unexpected *u)
{
	return u->pulled ? u->pulled : u->data;
}

/* pull.c */
/* u (buffered RTS, just listed as unexpected) may be pulled. */
void pull_candidate(struct mrail_engine *e, struct gate *g,
		    struct unexpected *u);
/* g's room may have grown: pull what fits. */
void pull_more(struct mrail_engine *e, struct gate *g);
/* Receive r takes u whose pull is under way: r completes with it.
 * Returns 0 if u is not being pulled. */
int pull_take(struct mrail_engine *e, struct mrail_request *r,
	      struct unexpected *u);
/* Pulls that finished (e->pulls_done): their messages become eager. */
void pulls_finish(struct mrail_engine *e);
/* A pulled payload's buffer: back to the engine's few, or freed (the
 * latter without the engine, at its end). */
void pull_buf_put(struct mrail_engine *e, uint8_t *data);
void pull_buf_free(uint8_t *data);
void pull_bufs_fini(struct mrail_engine *e);

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
void unexpected_free(struct mrail_engine *e, struct unexpected *u);
/* The records kept for reuse go (engine destroy). */
void unexpected_cache_fini(struct mrail_engine *e);

/* sync.c: synchronous sends (SYNC_ACK) */
void sync_ack_send(struct mrail_engine *e, struct gate *g, uint64_t send_id);
void sync_on_ack(struct mrail_engine *e, struct rail *r, uint64_t send_id);

/* recv.c (used by probe.c) */
/* Hand unexpected message u (off every list) to receive r. */
void recv_take(struct mrail_engine *e, struct mrail_request *r,
	       struct unexpected *u);

/* probe.c */
/* Progress, then look for a match; *flag = 1 if found (msg: take it;
 * has_data/data, may be NULL: its remote data). */
int probe_run(struct mrail_engine *e, mrail_peer_t src, uint64_t tag,
	      uint64_t mask, int *flag, mrail_message_t **msg,
	      mrail_status_t *st, int *has_data, uint64_t *data);
/* Receive a message improbe took; MRAIL_ERR_INVALID if msg is not one. */
int probe_imrecv(struct mrail_engine *e, const struct iovec *iov, int iovcnt,
		 void *buf, size_t len, mrail_message_t *msg,
		 const struct mrail_req_args *args, struct mrail_request **out);

/* self.c */
int self_send(struct mrail_engine *e, struct gate *g, struct mrail_request *r);
void self_match(struct mrail_engine *e, struct mrail_request *recv,
		struct unexpected *u);

#endif
