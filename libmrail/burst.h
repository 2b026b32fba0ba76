/*
 * Bursts of sends to one peer on rails where every send is a system call
 * (burst.c, docs/bursts.md): the engine holds the second and later
 * messages of a burst posted back to back and sends them as one packet at
 * the next progress pass, when the application has been seen to come back
 * to the engine quickly after posting.
 */
#ifndef MRAIL_LIBMRAIL_BURST_H
#define MRAIL_LIBMRAIL_BURST_H

#include <stddef.h>
#include <stdint.h>

struct mrail_engine;
struct gate;
struct rail;

/* MRAIL_SEND_HOLD: 1 (default) or 0 (every message leaves when posted). */
int burst_config(struct mrail_engine *e);

/* At post time, `rail` would take a packet of `bytes` bytes of queued
 * records that hold the whole queue (`all`): keep them queued instead? */
int burst_hold(struct mrail_engine *e, struct gate *g, const struct rail *rail,
	       size_t bytes, size_t room, int all);

/* A packet left on `rail` at post time. */
void burst_sent(struct mrail_engine *e, struct gate *g, const struct rail *rail);

/* Start of a progress pass: how soon the application came back. */
void burst_progress(struct mrail_engine *e);

#endif
