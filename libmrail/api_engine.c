/*
 * Public calls on the engine as a whole: create, destroy, identity, peers,
 * rails and their hooks. Like every api*.c file, these are the only
 * functions that take the engine lock (docs/threads.md); what they call
 * under it asserts it.
 */
#include "libmrail/engine.h"
#include "util/clock.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>

/* Fixed before mrail_engine_create() returns: read without the lock. */
MRAIL_API uint32_t mrail_rank(const mrail_engine_t *e)
{
	return e ? e->rank : 0;
}

MRAIL_API uint32_t mrail_size(const mrail_engine_t *e)
{
	return e ? e->size : 0;
}

MRAIL_API int mrail_thread_level(const mrail_engine_t *e)
{
	return e ? (int)e->thread_level : MRAIL_ERR_INVALID;
}

MRAIL_API int mrail_engine_create(const struct mrail_config *cfg,
				  mrail_engine_t **out)
{
	struct mrail_config defaults;
	int rc;

	if (!out)
		return MRAIL_ERR_INVALID;
	*out = NULL;
	if (!cfg) {
		if ((rc = mrail_config_init(&defaults)))
			return rc;
		cfg = &defaults;
	}
	struct mrail_engine *e = engine_alloc();
	if (!e)
		return MRAIL_ERR_NOMEM;
	engine_lock(e);
	rc = engine_init(e, cfg);
	engine_unlock(e);
	if (rc) {
		engine_free(e);
		return rc;
	}
	threads_engine_ready(e);
	*out = e;
	return MRAIL_OK;
}

MRAIL_API int mrail_engine_destroy(mrail_engine_t *e)
{
	if (!e)
		return MRAIL_ERR_INVALID;
	engine_lock(e);
	progress_thread_ask_stop(e);
	/* No new offload from here (the close flushes the queues itself). */
	struct offload *o = e->offload;
	e->offload = NULL;
	engine_unlock(e);
	progress_thread_join(e);
	/* Workers post what they hold (taking the lock), then exit. */
	offload_stop(o);
	offload_free(o);
	engine_lock(e);
	engine_close(e);
	engine_unlock(e);
	engine_free(e);
	return MRAIL_OK;
}

MRAIL_API int mrail_address(mrail_engine_t *e, void *buf, size_t *len)
{
	if (!e || !buf || !len)
		return MRAIL_ERR_INVALID;
	engine_lock(e);
	int rc = address_encode(e, buf, len);
	engine_unlock(e);
	return rc;
}

MRAIL_API int mrail_peer_add(mrail_engine_t *e, const void *addr, size_t len,
			     mrail_peer_t *peer)
{
	if (!e || !addr || !peer)
		return MRAIL_ERR_INVALID;
	engine_lock(e);
	int rc = gate_add(e, addr, len, GATE_NO_JOB_RANK, peer);
	engine_unlock(e);
	return rc;
}

MRAIL_API int mrail_peer_add_ranked(mrail_engine_t *e, const void *addr,
				    size_t len, uint32_t job_rank,
				    mrail_peer_t *peer)
{
	if (!e || !addr || !peer || job_rank == GATE_NO_JOB_RANK)
		return MRAIL_ERR_INVALID;
	engine_lock(e);
	int rc = e->bootstrapped ? MRAIL_ERR_INVALID
				 : gate_add(e, addr, len, job_rank, peer);
	engine_unlock(e);
	return rc;
}

/* The trace's header names the rank, so it must not be written yet: the
 * first traced event comes after the first peer. */
MRAIL_API int mrail_set_job_rank(mrail_engine_t *e, uint32_t rank,
				 uint32_t size)
{
	if (!e || rank >= size)
		return MRAIL_ERR_INVALID;
	engine_lock(e);
	int rc = MRAIL_OK;
	if (e->bootstrapped || e->ngates || e->trace_headed) {
		rc = MRAIL_ERR_INVALID;
	} else {
		char prefix[32];
		e->job_rank = rank;
		e->job_size = size;
		snprintf(prefix, sizeof prefix, "rank %u", rank);
		mrail_log_set_prefix(prefix);
	}
	engine_unlock(e);
	return rc;
}

/* The lock is taken through a cast: mrail_peer_add() may grow e->gates
 * meanwhile, and the lock is not part of the engine's logical state. */
MRAIL_API uint32_t mrail_peer_count(const mrail_engine_t *e)
{
	if (!e)
		return 0;
	engine_lock((struct mrail_engine *)e);
	uint32_t n = e->ngates;
	engine_unlock((struct mrail_engine *)e);
	return n;
}

MRAIL_API int mrail_rail_count(const mrail_engine_t *e, mrail_peer_t peer)
{
	if (!e)
		return MRAIL_ERR_INVALID;
	engine_lock((struct mrail_engine *)e);
	struct gate *g = peer < e->ngates ? e->gates[peer] : NULL;
	int n = g ? (int)g->nrails : MRAIL_ERR_NOT_FOUND;
	engine_unlock((struct mrail_engine *)e);
	return n;
}

MRAIL_API int mrail_rail_info(mrail_engine_t *e, mrail_peer_t peer, int rail,
			      struct mrail_rail_info *info)
{
	if (!e || !info)
		return MRAIL_ERR_INVALID;
	engine_lock(e);
	int rc = gate_rail_info(e, peer, rail, info);
	engine_unlock(e);
	return rc;
}

MRAIL_API int mrail_rail_stats(mrail_engine_t *e, mrail_peer_t peer, int rail,
			       struct mrail_rail_stats *st)
{
	if (!e || !st)
		return MRAIL_ERR_INVALID;
	engine_lock(e);
	int rc = gate_rail_stats(e, peer, rail, st);
	engine_unlock(e);
	return rc;
}

MRAIL_API int mrail_engine_dump(mrail_engine_t *e, int fd)
{
	if (!e || fd < 0)
		return MRAIL_ERR_INVALID;
	engine_lock(e);
	engine_dump(e, fd);
	engine_unlock(e);
	return MRAIL_OK;
}

MRAIL_API int mrail_set_rail_hooks(mrail_engine_t *e,
				   const struct mrail_rail_hooks *hooks,
				   void *ctx)
{
	if (!e)
		return MRAIL_ERR_INVALID;
	engine_lock(e);
	hooks_set(e, hooks, ctx);
	engine_unlock(e);
	return MRAIL_OK;
}

MRAIL_API int mrail_rail_conn(mrail_engine_t *e, mrail_peer_t peer, int rail,
			      struct mrail_rail_conn *conn, void **state)
{
	if (!e || !conn)
		return MRAIL_ERR_INVALID;
	engine_lock(e);
	int rc = hooks_rail_conn(e, peer, rail, conn, state);
	engine_unlock(e);
	return rc;
}

MRAIL_API int mrail_offload_info(mrail_engine_t *e,
				 struct mrail_offload_info *info)
{
	if (!e || !info)
		return MRAIL_ERR_INVALID;
	engine_lock(e);
	offload_get_info(e->offload, info);
	engine_unlock(e);
	return MRAIL_OK;
}

/* Engines without a bootstrap (an MPI binding exchanges the addresses):
 * the caller pairs the processes and calls this on both sides at a
 * moment no application message can exist. */
MRAIL_API int mrail_sample_peer(mrail_engine_t *e, mrail_peer_t peer,
				int first)
{
	if (!e)
		return MRAIL_ERR_INVALID;
	engine_lock(e);
	struct gate *g = gate_get(e, peer);
	int rc = MRAIL_OK;
	if (!g)
		rc = MRAIL_ERR_NOT_FOUND;
	else
		gate_first_use(e, g); /* lazy: this side connects too */
	/* Not lazy, the side that does not connect waits, idle, for the
	 * peer's connection: bounded by the connect timeout. */
	double until = mrail_now() + e->cfg.connect_timeout;
	while (!rc && (g->state == GATE_CONNECTING ||
		       (g->state == GATE_IDLE && mrail_now() < until))) {
		if (engine_progress(e) == 0) {
			engine_unlock(e);
			engine_idle_sleep(e, 1);
			engine_lock(e);
		}
		handshake_expire(e);
	}
	if (!rc && g->state != GATE_UP)
		rc = MRAIL_ERR_PEER;
	if (!rc && e->cfg.inband_sampling)
		inband_sample_gate(e, g, first);
	engine_unlock(e);
	return rc;
}
