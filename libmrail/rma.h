/*
 * One-sided rendezvous (rma.c): remote keys, the RDMA state of a request,
 * RDMA-written chunks, and the MRAIL_RDV protocol choice.
 */
#ifndef MRAIL_LIBMRAIL_RMA_H
#define MRAIL_LIBMRAIL_RMA_H

#include <stddef.h>
#include <stdint.h>

#include "mrail.h"
#include "libmrail/drivers.h"
#include "libmrail/wire.h"

struct mrail_engine;
struct mrail_request;
struct gate;
struct rail;
struct send_op;
struct mrail_regcache_entry;

/* A remote key: where a peer's registered buffer is (libmrail/rma.c). */
struct rma_key {
	uint64_t id;            /* send_id or recv_id it was sent with */
	uint64_t rails;         /* bit i: valid on rail i of the gate */
	uint64_t addr;          /* byte 0 of the message */
	uint16_t len;
	uint8_t key[MRAIL_WIRE_RKEY_MAX];
};

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
	int sender_attentive;   /* receiver: its RTS said ATTENTIVE */
};

/* An RDMA-written chunk: PUT_FIN follows when all its puts are done. */
struct rma_chunk {
	uint64_t recv_id, offset, len;
	unsigned ops_left;
	int status;
};

/* rma.c: one-sided rendezvous */
/* The public MRAIL_RDV_* values (cfg.rdv_protocol), by internal names. */
enum rdv_protocol {
	RDV_AUTO = MRAIL_RDV_AUTO,
	RDV_GET = MRAIL_RDV_GET,
	RDV_PUT = MRAIL_RDV_PUT,
	RDV_SEND = MRAIL_RDV_SEND,
};
/* Its position in "auto", "get", "put", "send" (MRAIL_RDV), or -1. */
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

#endif
