/*
 * Two-sided rendezvous (rdv.c): a matched RTS is split into chunks, one
 * RTR per chunk, answered by DATA frames whose body lands in the user
 * buffer. rma.c replaces RTR/DATA per rail on drivers with RDMA.
 */
#ifndef MRAIL_LIBMRAIL_RDV_H
#define MRAIL_LIBMRAIL_RDV_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "libmrail/wire.h"

struct mrail_engine;
struct mrail_request;
struct gate;
struct rail;
struct send_op;
struct rdv_rma;

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

#endif
