/*
 * Rails (rail.c): one connection to a peer on one local endpoint, the
 * operations posted on it (send_op), and the local endpoints themselves
 * (local_rail). Also their handshake (handshake.c), performance model
 * (model.c, inband.c) and the per-connection hooks of the layer above
 * (hooks.c).
 */
#ifndef MRAIL_LIBMRAIL_RAIL_H
#define MRAIL_LIBMRAIL_RAIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "mrail.h"
#include "libmrail/drivers.h"
#include "libmrail/rma.h"
#include "util/auth.h"
#include "util/list.h"

#include <sys/uio.h>

struct mrail_engine;
struct mrail_request;
struct gate;
struct rx_expect;
struct mrail_rail_model;

enum rail_state {
	RAIL_CONNECTING,  /* connect posted, HELLO queued */
	RAIL_WAIT_HELLO,  /* accepted, HELLO not yet received */
	RAIL_WAIT_ACK,    /* connected, HELLO sent, waiting for the ACK */
	RAIL_UP,
	RAIL_DOWN,        /* failed; its gate lives on the other rails while
	                     it is reconnected (failover.c) */
	RAIL_CLOSED,
};

/* Something posted on a rail whose completion we must see. */
enum send_op_kind { OP_PACKET, OP_DATA, OP_GET, OP_PUT };

struct send_op {
	struct mrail_list link; /* rail->posted, or the free list */
	enum send_op_kind kind;
	struct rail *rail;
	struct mrail_request *req; /* OP_DATA: the send it serves */
	uint64_t bytes;            /* payload bytes carried */
	size_t cap, len;           /* OP_PACKET buffer */
	uint8_t *buf;
	int has_busy;              /* OP_PACKET: holds a BUSY record */
	struct mrail_regcache_entry *reg;       /* OP_GET/OP_PUT: local registration */
	struct rma_chunk *chunk;   /* OP_PUT: the chunk it belongs to */
	/* OP_PACKET, counted (failover.c): kept on rail->retained until the
	 * peer acknowledges it, to be replayed if the rail fails first. */
	uint32_t pseq;
	int in_flight, retained;
	double sent_at;            /* its send completed (0: not yet) */
	int no_count;              /* standalone ACK: neither numbered nor kept */
	uint64_t offset;           /* OP_GET, OP_DATA: where in the message */
	struct mrail_list rlink;
	/* OP_DATA (pace.c): held on its NIC's queue (link) before going to
	 * the driver, with a copy of its body's iovec; or handed to it. */
	uint64_t recv_id;
	int held, handed;
	int held_cnt;
	struct iovec *held_iov;
};

struct rail {
	struct mrail_list link;   /* engine->handshaking while unbound */
	struct mrail_engine *engine;
	struct gate *gate;        /* NULL until authenticated */
	unsigned index;           /* within the gate */
	enum rail_state state;
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
	uint64_t rx_off;          /* ... and its offset in the message */
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
	/* Failover (failover.c, docs/failover.md). Per connection: */
	uint32_t tx_pseq;         /* counted packets posted */
	uint32_t rx_pseq;         /* counted packets processed */
	uint32_t ack_sent;        /* rx_pseq last acknowledged to the peer */
	uint32_t peer_acked;      /* the peer processed ours up to this */
	uint32_t unkept_pseq;     /* last counted packet injected, not kept */
	struct mrail_list retained; /* our counted packets not acked, by pseq */
	uint32_t epoch;           /* connections of this rail that came up */
	double tx_last_move;      /* last send completion (or first post) */
	/* Liveness (failover.c): watched at each timer pass, not per frame. */
	uint64_t rx_seen;         /* rx_activity() at the last pass */
	double rx_last;           /* the pass that saw it change */
	double probe_at;          /* a probe was sent (0: none since rx) */
	/* Per failure: */
	double down_since, up_since;
	double retry_at, backoff; /* connecting side: next attempt */
	int down_told;            /* RAIL_DOWN sent (on rail down_told - 1) */
	uint32_t down_told_epoch; /* ... on that rail's connection number */
	int down_heard;           /* the peer's RAIL_DOWN received */
	int settled;              /* both: may reconnect */
	int fail_pending;         /* a completion failed: fails at next tick */
	int reconnecting;         /* this connection replaces a failed one */
	unsigned pace_held;       /* its chunks waiting on its NIC (pace.c) */
	uint64_t pace_inflight;   /* payload bytes handed to the driver and
	                             not completed (pace.c: bounded) */
	int peer_closed;          /* failed by the peer's end closing (EOF,
	                             reset, reconnection refused), not by a
	                             timeout: the peer process may be gone */
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
	/* Pacing (pace.c): chunks waiting for the NIC, in arrival order;
	 * DATA ops handed to the driver and not completed, all of one rail
	 * (pace_rail) unless a stalled one was overtaken. */
	struct mrail_list pace_q;
	unsigned pace_ops;
	struct rail *pace_rail;
	double pace_moved_at;     /* its last completion or backlog change */
	uint64_t pace_driver_backlog; /* pace_rail's driver backlog then */
	uint64_t pace_backlog;    /* ... and its kernel's unsent bytes */
	int pace_releasing;
};

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
/* g's eager/rendezvous switch from its rails that are up: the smallest
 * of theirs, or lower where the strategy's eager_max says so (model.c). */
void gate_update_eager_max(struct mrail_engine *e, struct gate *g);
/* Replace r's model (takes ownership; NULL: nominal from its figures). */
void rail_set_model(struct rail *r, struct mrail_rail_model *m,
		    const char *source);
/* Who samples (inband.c; docs/scale.md): with lazy connection, one pair
 * of ranks per host measures the loopback rails for all its ranks. */
enum inband_role {
	INBAND_PAIR,     /* with our partner, as every rank in eager mode */
	INBAND_PUBLISH,  /* the host's pair: sample, then publish the models */
	INBAND_FETCH,    /* take the models the host's pair published */
	INBAND_NONE,     /* this host runs more ranks than cores: timings
	                    would measure the scheduler, not the rails */
};
struct peer_address;
struct mrail_bootstrap_ops;
struct mrail_bootstrap;
void inband_plan(struct mrail_engine *e, const struct peer_address *pas);
/* Before the final fence: sample; publish (INBAND_PUBLISH). */
void inband_sample(struct mrail_engine *e, const struct mrail_bootstrap_ops *bo,
		   struct mrail_bootstrap *bs);
/* After it: the published models (INBAND_FETCH). */
void inband_fetch(struct mrail_engine *e, const struct mrail_bootstrap_ops *bo,
		  struct mrail_bootstrap *bs);
/* A rail just up without a profile: the in-band model of its interface. */
void inband_model_for(struct mrail_engine *e, struct rail *r);
/* Sample g's rails with its peer now (lazy gates connect first); first:
 * this side sends first, the peer's call says the opposite. */
void inband_sample_gate(struct mrail_engine *e, struct gate *g, int first);

/* rail.c */
struct rail *rail_new(struct mrail_engine *e, struct local_rail *l);
void rail_close(struct mrail_engine *e, struct rail *r);
/* Connection closed, what was posted on it settled; r->state = to. */
void rail_disconnect(struct mrail_engine *e, struct rail *r,
		     enum rail_state to);
void rail_op_done(struct mrail_engine *e, struct send_op *op, int status);
struct send_op *packet_get(struct mrail_engine *e);
void packet_put(struct mrail_engine *e, struct send_op *op);
/* Frees half the recycled packets beyond the lasting bound (timer pass). */
void packet_trim(struct mrail_engine *e);
int rail_post_packet(struct mrail_engine *e, struct rail *r,
		     struct send_op *op);
/* A packet as pieces v[0..cnt): v[0] starts with the packet header; v
 * has room for one more entry. Injected where the driver can, else
 * copied into a packet and posted. */
#define RAIL_PIECES_MAX 8
int rail_post_pieces(struct mrail_engine *e, struct rail *r, struct iovec *v,
		     int cnt);
int rail_post_data(struct mrail_engine *e, struct rail *r,
		   struct mrail_request *req, uint64_t recv_id,
		   uint64_t offset, uint64_t len);
int rail_is_idle(const struct rail *r);
/* May a packet go to r's driver, which has backlog bytes not yet sent?
 * Yes when they are only payload that pacing let it hold (at most a
 * share, pace.c): the packet then waits behind that little, not behind
 * the rest of the chunk, which stays in the engine until it has left.
 * (Only idle rails take packets: the messages of a gate whose rails are
 * stuck wait in its queue, aggregated.) */
static inline int rail_takes_packets(const struct rail *r, uint64_t backlog)
{
	return backlog <= r->pace_inflight;
}

/* hooks.c: per-connection hooks of the layer above */
void hooks_rail_up(struct mrail_engine *e, struct rail *r);
void hooks_rail_down(struct mrail_engine *e, struct rail *r);
/* A message with this tag starts leaving on r (the msg_tx hook). */
void hooks_msg_tx(struct mrail_engine *e, struct rail *r, uint64_t tag);
/* mrail_set_rail_hooks(): down on every rail, replace, up again. */
void hooks_set(struct mrail_engine *e, const struct mrail_rail_hooks *hooks,
	       void *ctx);
int hooks_rail_conn(struct mrail_engine *e, mrail_peer_t peer, int rail,
		    struct mrail_rail_conn *conn, void **state);

#endif
