/*
 * Chunk trace (trace.c, docs/trace.md): when each rendezvous chunk was
 * planned (with the plan's predicted start and end), queued by pacing,
 * handed to the driver, completed by it, and when its last byte arrived.
 * Enabled by MRAIL_TRACE=PREFIX; off, every call site costs one branch on
 * e->trace.
 */
#ifndef MRAIL_LIBMRAIL_TRACE_H
#define MRAIL_LIBMRAIL_TRACE_H

#include <stdint.h>
#include <stdio.h>

struct mrail_engine;
struct rail;
struct gate;
struct send_op;
struct mrail_rail_view;
struct mrail_chunk;

/* What happened to a chunk (the tool reads the names). */
enum trace_event {
	TRACE_QUEUE,  /* sender: held back by pacing (pace.c) */
	TRACE_POST,   /* sender: handed to the driver */
	TRACE_SENT,   /* sender: the driver completed it */
	TRACE_ARRIVE, /* receiver: its last byte arrived */
};

/* engine_init, after the bootstrap: opens PREFIX.<pid>.<n> if asked. */
int trace_open(struct mrail_engine *e);
void trace_close(struct mrail_engine *e);

/* Receiver: the plan for a rendezvous payload of `total` bytes, with each
 * chunk's predicted start and end from the views it was made on. */
void trace_plan_(struct mrail_engine *e, struct gate *g, uint64_t recv_id,
		 uint64_t total, const struct mrail_rail_view *views,
		 unsigned nviews, const struct mrail_chunk *chunks, int cnt);
#define trace_plan(e, ...)                                   \
	do {                                                 \
		if ((e)->trace)                              \
			trace_plan_((e), __VA_ARGS__);        \
	} while (0)

/* Sender side of a DATA op. */
void trace_op_(struct mrail_engine *e, enum trace_event ev,
	       const struct send_op *op);
#define trace_op(e, ev, op)                                  \
	do {                                                 \
		if ((e)->trace)                              \
			trace_op_((e), (ev), (op));           \
	} while (0)

/* Receiver: a requested chunk of `bytes` on r completed; `due` was its
 * predicted arrival (busy.c). */
void trace_arrive_(struct mrail_engine *e, const struct rail *r,
		   uint64_t bytes, double due);
#define trace_arrive(e, r, bytes, due)                       \
	do {                                                 \
		if ((e)->trace)                              \
			trace_arrive_((e), (r), (bytes), (due));  \
	} while (0)

#endif
