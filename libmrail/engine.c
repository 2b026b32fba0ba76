/* Engine life cycle: configuration, local rails, bootstrap wire-up, close. */
#include "libmrail/engine.h"
#include "bootstrap/bootstrap.h"
#include "util/clock.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int select_strategy(struct mrail_engine *e)
{
	char name[64];
	const char *spec = e->cfg.strategy;
	size_t n = strcspn(spec, ":");
	if (n == 0 || n >= sizeof name) {
		mrail_error("invalid MRAIL_STRATEGY='%s' (known: %s)", spec,
			    mrail_strategy_names());
		return MRAIL_ERR_CONFIG;
	}
	memcpy(name, spec, n);
	name[n] = '\0';
	e->strategy = mrail_strategy_find(name);
	if (!e->strategy) {
		/* Not built in: a plugin from MRAIL_STRATEGY_PATH. */
		int rc = mrail_strategy_load(name, getenv("MRAIL_STRATEGY_PATH"),
					     &e->strategy, &e->strategy_dl);
		if (rc)
			return rc;
	}
	return e->strategy->init(spec[n] ? spec + n + 1 : "",
				 &e->strategy_state);
}

static int gates_ready(struct mrail_engine *e, int *failed)
{
	int ready = 1;
	*failed = 0;
	for (uint32_t i = 0; i < e->ngates; i++) {
		switch (e->gates[i]->state) {
		case GATE_IDLE: /* lazy: connects at first use */
			if (!e->lazy_connect)
				ready = 0;
			break;
		case GATE_CONNECTING:
			ready = 0;
			break;
		case GATE_UP:
			break;
		case GATE_CLOSED:
		case GATE_FAILED:
			*failed = 1;
			break;
		}
	}
	return ready || *failed;
}

/* Most address blobs are a few hundred bytes: one slab of this much per
 * rank first, a full-size buffer only for those that do not fit. At 1024
 * ranks a full MRAIL_ADDR_MAX each was 16 MiB touched per process. */
#define ADDR_SLOT 1024

/* Every rank's address blob, parsed (the caller frees them with
 * free_addresses: *slab, and the full-size ones outside it). One batched
 * get: with mrail-run's KVS a round trip per rank was the wire-up's cost. */
static int fetch_addresses(struct mrail_engine *e,
			   const struct mrail_bootstrap_ops *bo,
			   struct mrail_bootstrap *bs, uint8_t **blobs,
			   size_t *lens, struct peer_address *pas,
			   uint8_t **slab_out)
{
	char (*keys)[24] = calloc(e->size, sizeof *keys);
	const char **kp = calloc(e->size, sizeof *kp);
	int *rcs = calloc(e->size, sizeof *rcs), rc = MRAIL_OK;
	uint8_t *slab = malloc((size_t)e->size * ADDR_SLOT);
	*slab_out = slab;
	for (uint32_t r = 0; r < e->size && kp && keys && rcs && slab; r++) {
		lens[r] = ADDR_SLOT;
		blobs[r] = slab + (size_t)r * ADDR_SLOT;
		snprintf(keys[r], sizeof keys[r], "mrail.addr.%u", r);
		kp[r] = keys[r];
	}
	if (!keys || !kp || !rcs || !slab)
		rc = MRAIL_ERR_NOMEM;
	if (!rc)
		rc = mrail_bootstrap_get_many(bo, bs, e->size, kp,
					      (void *const *)blobs, lens, rcs);
	for (uint32_t r = 0; r < e->size && !rc; r++) {
		if (rcs[r] != MRAIL_ERR_TRUNCATE)
			continue;
		lens[r] = MRAIL_ADDR_MAX;
		if (!(blobs[r] = malloc(MRAIL_ADDR_MAX)))
			rc = MRAIL_ERR_NOMEM;
		else
			rcs[r] = bo->get(bs, kp[r], blobs[r], &lens[r]);
	}
	for (uint32_t r = 0; r < e->size && !rc; r++) {
		const char *why = NULL;
		if ((rc = rcs[r])) {
			mrail_error("bootstrap: no address for rank %u: %s", r,
				    mrail_strerror(rc));
		} else if (address_parse(blobs[r], lens[r], &pas[r], &why)) {
			mrail_error("bootstrap: rank %u's address: %s", r, why);
			rc = MRAIL_ERR_BOOTSTRAP;
		}
	}
	free(keys);
	free(kp);
	free(rcs);
	return rc;
}

static void free_addresses(uint8_t **blobs, uint32_t n, uint8_t *slab)
{
	uintptr_t lo = (uintptr_t)slab, hi = lo + (uintptr_t)n * ADDR_SLOT;
	for (uint32_t r = 0; blobs && slab && r < n; r++)
		if (blobs[r] && ((uintptr_t)blobs[r] < lo ||
				 (uintptr_t)blobs[r] >= hi))
			free(blobs[r]);
	free(slab);
}

static int bootstrap_exchange(struct mrail_engine *e,
			      const struct mrail_bootstrap_ops *bo,
			      struct mrail_bootstrap *bs)
{
	uint8_t blob[MRAIL_ADDR_MAX];
	char key[64];
	size_t len = sizeof blob;
	int rc;

	snprintf(key, sizeof key, "mrail.addr.%u", e->rank);
	rc = address_encode(e, blob, &len);
	if (!rc)
		rc = bo->put(bs, key, blob, len);
	/* Launchers other than mrail-run (PMIx) give no job key: rank 0
	 * makes one and the job's private key-value space carries it, so
	 * data connections are still authenticated. */
	int make_key = !e->cfg.has_job_key;
	if (!rc && make_key && e->rank == 0) {
		if (mrail_auth_random(e->cfg.job_key, sizeof e->cfg.job_key))
			rc = MRAIL_ERR_IO;
		else
			rc = bo->put(bs, "mrail.jobkey", e->cfg.job_key,
				     sizeof e->cfg.job_key);
	}
	double t0 = mrail_now();
	if (!rc)
		rc = bo->fence(bs);
	double t1 = mrail_now();
	if (!rc && make_key) {
		size_t klen = sizeof e->cfg.job_key;
		rc = bo->get(bs, "mrail.jobkey", e->cfg.job_key, &klen);
		if (!rc && klen != sizeof e->cfg.job_key)
			rc = MRAIL_ERR_BOOTSTRAP;
		e->cfg.has_job_key = rc == MRAIL_OK;
	}
	if (rc)
		return rc;

	uint8_t **blobs = calloc(e->size, sizeof *blobs);
	size_t *lens = calloc(e->size, sizeof *lens);
	struct peer_address *pas = calloc(e->size, sizeof *pas);
	uint8_t *slab = NULL;
	if (!blobs || !lens || !pas)
		rc = MRAIL_ERR_NOMEM;
	if (!rc)
		rc = fetch_addresses(e, bo, bs, blobs, lens, pas, &slab);
	double t2 = mrail_now();
	/* Collisions are a property of the whole job, not of one pair. */
	if (!rc)
		rc = engine_find_dups(e, pas, e->size);
	if (!rc)
		inband_plan(e, pas);
	for (uint32_t r = 0; r < e->size && !rc; r++) {
		mrail_peer_t id;
		rc = gate_add_parsed(e, &pas[r], r, &id);
	}
	mrail_debug("exchange: fence %.3f s, addresses %.3f s, gates %.3f s",
		    t1 - t0, t2 - t1, mrail_now() - t2);
	for (uint32_t r = 0; pas && r < e->size; r++)
		address_free(&pas[r]);
	free_addresses(blobs, e->size, slab);
	free(blobs);
	free(lens);
	free(pas);
	return rc;
}

/*
 * The final fence's wait: progress, so that a peer still finishing its
 * own creation gets what it waits for from this rank (acknowledgements of
 * its last in-band sends, the handshake of a rail reconnecting after a
 * failure) instead of waiting for a rank that waits for it. Sleeps on the
 * rails and the fence's fd: long when no gate is active (nothing but a
 * socket event can need us), the usual idle wait otherwise (timers).
 */
static void fence_idle(void *arg, int fd)
{
	struct mrail_engine *e = arg;
	if (engine_progress(e) > 0)
		return;
	handshake_expire(e);
	uint32_t nactive;
	gate_active(e, &nactive);
	engine_idle_wait_fd(e, fd, nactive ? e->idle_wait_max_ms : 100);
}

static int final_fence(struct mrail_engine *e,
		       const struct mrail_bootstrap_ops *bo,
		       struct mrail_bootstrap *bs)
{
	return bo->fence_idle ? bo->fence_idle(bs, fence_idle, e)
			      : bo->fence(bs);
}

static int bootstrap_wireup(struct mrail_engine *e,
			    const struct mrail_bootstrap_ops *bo)
{
	struct mrail_bootstrap *bs;
	char prefix[32];
	int rc, failed;

	if ((rc = bo->init(&bs)) != MRAIL_OK)
		return rc;
	e->rank = bo->rank(bs);
	e->size = bo->size(bs);
	e->job_rank = e->rank;
	e->job_size = e->size;
	if (e->cfg.connect_mode == MRAIL_CONNECT_AUTO)
		e->lazy_connect = e->size > MRAIL_CONNECT_EAGER_RANKS;
	e->bootstrapped = 1;
	engine_set_idle_wait(e, bo->local_size ? bo->local_size(bs) : 1);
	snprintf(prefix, sizeof prefix, "rank %u", e->rank);
	mrail_log_set_prefix(prefix);
	double t0 = mrail_now();
	rc = bootstrap_exchange(e, bo, bs);
	double t1 = mrail_now();
	if (rc) {
		bo->fini(bs);
		return rc == MRAIL_ERR_NOMEM ? rc : MRAIL_ERR_BOOTSTRAP;
	}
	while (!gates_ready(e, &failed)) {
		/* Ranks often outnumber cores here: sleep when idle. */
		if (engine_progress(e) == 0)
			engine_idle_wait(e, 1);
		handshake_expire(e);
	}
	if (failed) {
		bo->fini(bs);
		mrail_error("wire-up failed: not every peer could be reached");
		return MRAIL_ERR_PEER;
	}
	double t2 = mrail_now();
	inband_sample(e, bo, bs);
	double t3 = mrail_now();
	/* Creation is collective: return only when every rank is connected,
	 * so that a rank that creates and at once destroys an engine cannot
	 * close it under a peer still wiring up. */
	rc = final_fence(e, bo, bs);
	double t4 = mrail_now();
	if (!rc)
		inband_fetch(e, bo, bs);
	bo->fini(bs);
	/* Where creation spends its time (docs/scale.md, bench/scale.sh). */
	mrail_debug("wire-up: exchange %.3f s, connect %.3f s, in-band %.3f s, "
		    "final fence %.3f s, in-band models %.3f s (%s connection)",
		    t1 - t0, t2 - t1, t3 - t2, t4 - t3, mrail_now() - t4,
		    e->lazy_connect ? "lazy" : "eager");
	if (rc) {
		mrail_error("bootstrap: final fence failed: %s", mrail_strerror(rc));
		return MRAIL_ERR_BOOTSTRAP;
	}
	mrail_info("connected to %u ranks", e->size);
	return MRAIL_OK;
}

int engine_init(struct mrail_engine *e, const struct mrail_config *cfg)
{
	int rc;

	ENGINE_ASSERT_LOCKED(e);

	if (cfg->version != MRAIL_CONFIG_VERSION) {
		mrail_error("struct mrail_config version %u, expected %u: "
			    "initialize it with mrail_config_init()",
			    cfg->version, MRAIL_CONFIG_VERSION);
		return MRAIL_ERR_CONFIG;
	}
	if ((rc = config_copy_strings(e, cfg)) || (rc = threads_init(e)))
		return rc;
	if (cfg->rdv_protocol < MRAIL_RDV_AUTO ||
	    cfg->rdv_protocol > MRAIL_RDV_SEND) {
		mrail_error("invalid rdv_protocol %d (MRAIL_RDV)",
			    cfg->rdv_protocol);
		return MRAIL_ERR_CONFIG;
	}
	e->rdv_protocol = cfg->rdv_protocol;
	if ((rc = failover_init(e)) || (rc = pace_config(e)) ||
	    (rc = burst_config(e)))
		return rc;
	if (cfg->connect_mode < MRAIL_CONNECT_AUTO ||
	    cfg->connect_mode > MRAIL_CONNECT_LAZY) {
		mrail_error("invalid connect_mode %d (MRAIL_CONNECT)",
			    cfg->connect_mode);
		return MRAIL_ERR_CONFIG;
	}
	e->lazy_connect = cfg->connect_mode == MRAIL_CONNECT_LAZY;
	if (cfg->rail_hooks)
		e->hooks = *cfg->rail_hooks;
	e->hooks_ctx = cfg->rail_hooks_ctx;
	if (!e->cfg.drivers || !e->cfg.strategy) {
		mrail_error("mrail_config: drivers and strategy must be set");
		return MRAIL_ERR_CONFIG;
	}
	if (e->cfg.eager_max == MRAIL_EAGER_MAX_AUTO) {
		e->eager_auto = 1;
		e->cfg.eager_max = MRAIL_EAGER_MAX_DEFAULT;
	}
	if (e->cfg.eager_max > MRAIL_EAGER_MAX_LIMIT) {
		mrail_error("invalid eager_max=%zu (MRAIL_EAGER_MAX): at most %u",
			    e->cfg.eager_max, MRAIL_EAGER_MAX_LIMIT);
		return MRAIL_ERR_CONFIG;
	}
	if (!(e->cfg.connect_timeout > 0) || !(e->cfg.finalize_timeout > 0)) {
		mrail_error("connect_timeout and finalize_timeout must be > 0");
		return MRAIL_ERR_CONFIG;
	}
	if (e->cfg.log_level >= MRAIL_LOG_ERROR &&
	    e->cfg.log_level <= MRAIL_LOG_TRACE)
		mrail_log_level = e->cfg.log_level;
	if ((rc = select_strategy(e)) || (rc = drivers_open(e)))
		return rc;
	if (e->cfg.eager_max > e->max_head / 2)
		e->cfg.eager_max = e->max_head / 2;
	/* Packets hold the largest eager message of any rail: a driver's
	 * hint may raise its rails' switch above the default (rail_new). */
	size_t eager_top = e->cfg.eager_max;
	if (e->eager_auto) {
		size_t hint = drivers_eager_hint_max(e);
		if (hint > MRAIL_EAGER_MAX_LIMIT)
			hint = MRAIL_EAGER_MAX_LIMIT;
		if (hint > e->max_head / 2)
			hint = e->max_head / 2;
		if (hint > eager_top)
			eager_top = hint;
	}
	e->packet_cap = sizeof(struct mrail_wire_imm) +
			mrail_wire_eager_size(eager_top) +
			sizeof(struct mrail_wire_pkt_hdr);
	if (e->packet_cap < 65536)
		e->packet_cap = 65536;
	if (e->packet_cap > e->max_head)
		e->packet_cap = e->max_head;
	e->host_id = endpoints_host_identity();
	e->host_cores = sysconf(_SC_NPROCESSORS_ONLN);
	if ((rc = endpoints_open(e)))
		return rc;
	do {
		if (mrail_auth_random(&e->uuid, sizeof e->uuid))
			return MRAIL_ERR_IO;
	} while (e->uuid == 0);

	const struct mrail_bootstrap_ops *bo = mrail_bootstrap_detect();
	if (e->cfg.bootstrap == 1 && !bo) {
		mrail_error("MRAIL_BOOTSTRAP=1 but this process was not started "
			    "by a launcher (run it with mrail-run)");
		return MRAIL_ERR_BOOTSTRAP;
	}
	if (bo && e->cfg.bootstrap != 0) {
		if ((rc = bootstrap_wireup(e, bo)))
			return rc;
	} else {
		e->rank = 0;
		e->size = 1;
		e->job_rank = 0;
		e->job_size = 1;
	}
	if ((rc = trace_open(e)))
		return rc;
	/* Workers last: they post on rails that exist by now. */
	if ((rc = offload_start(e, &e->offload)))
		return rc;
	if (e->cfg.progress_thread && (rc = progress_thread_start(e)))
		return rc;
	return MRAIL_OK;
}

struct mrail_engine *engine_alloc(void)
{
	struct mrail_engine *e = calloc(1, sizeof *e);
	if (!e)
		return NULL;
	pthread_mutex_init(&e->lock, NULL);
	engine_clock_tick(e);
	mrail_list_init(&e->handshaking);
	mrail_list_init(&e->sched_gates);
	mrail_list_init(&e->posted);
	mrail_list_init(&e->unexpected);
	mrail_list_init(&e->free_ops);
	requests_init(e);
	e->wake_fd = -1;
	e->wait_epfd = e->wait_tfd = -1;
	e->idle_wait_max_ms = 1;
	return e;
}

/* ---- destroy ---------------------------------------------------------- */

static int sends_flushed(struct mrail_engine *e)
{
	uint32_t n;
	/* Sends completed for their caller but still waiting here for the
	 * receiver to take them (send.c, detach_if_rts). */
	if (e->detached_bytes)
		return 0;
	struct gate **gates = gate_active(e, &n); /* connecting or up */
	for (uint32_t i = 0; i < n; i++) {
		struct gate *g = gates[i];
		/* Connecting (lazy connection): its messages still leave. */
		if ((g->state == GATE_UP || g->state == GATE_CONNECTING) &&
		    !mrail_list_empty(&g->sendq))
			return 0;
		for (unsigned j = 0; j < g->nrails; j++) {
			struct rail *r = g->rails[j];
			if (r && r->ep && r->state == RAIL_UP &&
			    r->local->ops->ep_backlog(r->ep))
				return 0;
		}
	}
	return 1;
}

static int peers_closed(struct mrail_engine *e)
{
	uint32_t n;
	struct gate **gates = gate_active(e, &n); /* connecting or up */
	for (uint32_t i = 0; i < n; i++) {
		struct gate *g = gates[i];
		if (!g->self && g->state == GATE_UP) /* we said BYE to it */
			return 0;
	}
	return 1;
}

static void send_byes(struct mrail_engine *e)
{
	for (uint32_t i = 0; i < e->ngates; i++) {
		struct gate *g = e->gates[i];
		if (g->state != GATE_UP && g->state != GATE_CLOSED)
			continue;
		for (unsigned j = 0; j < g->nrails; j++) {
			struct rail *r = g->rails[j];
			struct send_op *op;
			if (!r || !r->ep || r->state != RAIL_UP || r->bye_out ||
			    !(op = packet_get(e)))
				continue;
			op->len += mrail_wire_put_bye(op->buf + op->len);
			if (rail_post_packet(e, r, op))
				packet_put(e, op);
			else
				r->bye_out = 1;
		}
	}
}

/*
 * Close politely: flush what is queued, tell every peer (BYE on each rail,
 * after everything else we sent on it), then wait for the peers' BYEs so
 * that no connection is torn down with data still in flight.
 */
void engine_close(struct mrail_engine *e)
{
	ENGINE_ASSERT_LOCKED(e);
	double deadline = mrail_now() + e->cfg.finalize_timeout;

	while (!sends_flushed(e) && mrail_now() < deadline)
		if (engine_progress(e) == 0)
			engine_idle_wait(e, 1);
	if (!sends_flushed(e))
		mrail_warn("engine closing with sends still queued after %.1f s",
			   e->cfg.finalize_timeout);
	if (e->detached_bytes)
		mrail_error("engine closing with %llu bytes (requests included) "
			    "of completed small sends that no receive took within %.1f s "
			    "(MRAIL_FINALIZE_TIMEOUT): they are lost",
			    (unsigned long long)e->detached_bytes,
			    e->cfg.finalize_timeout);
	send_byes(e);
	while ((!peers_closed(e) || !sends_flushed(e)) && mrail_now() < deadline) {
		if (engine_progress(e) == 0)
			engine_idle_wait(e, 1);
		/* Lazy connection: a peer may connect to us only now. */
		if (e->lazy_connect)
			send_byes(e);
	}
	for (uint32_t i = 0; i < e->ngates; i++)
		if (e->gates[i]->state == GATE_UP && !e->gates[i]->self)
			mrail_debug("%s did not close its engine within %.1f s",
				    e->gates[i]->name, e->cfg.finalize_timeout);
}

void engine_free(struct mrail_engine *e)
{
	struct mrail_list *pos, *tmp;

	/* Creation failed after the workers started. */
	offload_stop(e->offload);
	offload_free(e->offload);
	e->offload = NULL;
	for (uint32_t i = 0; i < e->ngates; i++)
		gate_free(e, e->gates[i]);
	free(e->gates);
	free(e->active);
	free(e->by_uuid);
	mrail_list_foreach_safe(pos, tmp, &e->handshaking) {
		struct rail *r = mrail_list_entry(pos, struct rail, link);
		mrail_list_remove(pos);
		rail_close(e, r);
		free(r);
	}
	requests_fini(e);
	wait_fd_close(e);
	trace_close(e);
	drivers_close(e);
	if (e->strategy && e->strategy_state)
		e->strategy->fini(e->strategy_state);
	mrail_strategy_unload(e->strategy_dl); /* after fini: its code */
	mrail_list_foreach_safe(pos, tmp, &e->free_ops) {
		struct send_op *op = mrail_list_entry(pos, struct send_op, link);
		mrail_list_remove(pos);
		free(op->buf);
		free(op);
	}
	free(e->handles);
	free(e->netifs);
	free(e->dups);
	config_free_strings(e);
	pthread_mutex_destroy(&e->lock);
	free(e);
}
