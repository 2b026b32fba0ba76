/*
 * In-band sampling at wire-up: rails with no profile get a quick model
 * from a few ping-pongs with one partner (rank r with rank r^1; in a job
 * of odd size the last rank, which has none, with rank 0 after rank 0's
 * first round: else it would plan with nominal figures), each rail
 * alone (the pin strategy), over the real engine path, while no user
 * message can exist yet (engine creation is collective and ends with a
 * fence). Bounded: four sizes up to 256 KiB, 5 to 9 repetitions each —
 * tens of milliseconds per rail. The model then serves every rail of this
 * process on the same local interface. MRAIL_INBAND_SAMPLING=0 disables
 * it (rails keep their nominal model).
 */
#include "libmrail/engine.h"
#include "bootstrap/bootstrap.h"
#include "sampler/predict.h"
#include "sampler/profile.h"
#include "util/clock.h"
#include "util/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define INBAND_TAG 0xFFFFFFFFFFFF5A4DULL /* never seen by the application */

static const uint64_t inband_sizes[] = {8, 4096, 65536, 262144};
#define NSIZES (sizeof inband_sizes / sizeof *inband_sizes)

/* Spin briefly, then sleep in the kernel until a rail's socket is ready.
 * A pure spin let partners on one core (oversubscribed, or both pinned to
 * one CPU) each wait for a time slice: 2-4 ms latencies, 22 MB/s for a
 * 1000 Mbit/s rail under taskset -c 0. Yielding the core instead fixed
 * that but not CPU hogs: each yield handed a hog a whole scheduler tick,
 * and every 64 KiB and 256 KiB time came out a multiple of ~2-4 ms (3 968
 * and 8 001 us on a 118 MB/s rail under 3 hogs: 49 MB/s, and 3-13 GB/s
 * where the two sizes rounded alike). A sleeper woken by its socket
 * preempts a hog at once; the spin keeps small round trips off the
 * wake-up path. Drivers with no fd to sleep on (drivers_trywait) keep
 * spinning. */
#define INBAND_SPIN_S 50e-6

static int wait_done(struct mrail_engine *e, struct mrail_request *r)
{
	double idle_since = 0;
	while (r->phase != REQ_DONE) {
		if (engine_progress(e) > 0) {
			idle_since = 0;
			continue;
		}
		double now = mrail_now();
		if (idle_since == 0)
			idle_since = now;
		else if (now - idle_since > INBAND_SPIN_S)
			engine_idle_wait(e, 1);
	}
	int rc = r->status.error;
	request_free(e, r);
	return rc;
}

static int xfer(struct mrail_engine *e, struct gate *g, int send, void *buf,
		size_t len)
{
	struct mrail_request *r = request_new(e, send ? REQ_SEND : REQ_RECV,
					      NULL, 0, buf, len);
	if (!r)
		return MRAIL_ERR_NOMEM;
	r->tag = INBAND_TAG;
	r->mask = MRAIL_TAG_MASK_ALL;
	r->peer = g->id;
	if (send) {
		r->gate = g;
		send_post(e, g, r);
	} else {
		recv_post(e, r);
	}
	return wait_done(e, r);
}

/* Shortest one-way time of `reps` ping-pongs of len bytes. The minimum,
 * not the median: on a loaded machine preemption only ever adds time, and
 * medians there gave models off by 10x, the two sides of one rail
 * disagreeing and rails inverted (mpirun jobs at load 20-60, 2 cores,
 * docs/mpi-ompi.md); a minimum is the path's own figure, alike on both
 * sides. */
static int pingpong(struct mrail_engine *e, struct gate *g, int first,
		    void *buf, size_t len, unsigned reps, double *oneway)
{
	double t[16];
	int rc = MRAIL_OK;
	for (unsigned i = 0; i < reps + 1 && rc == MRAIL_OK; i++) {
		double t0 = mrail_now();
		rc = xfer(e, g, first, buf, len);
		if (rc == MRAIL_OK)
			rc = xfer(e, g, !first, buf, len);
		if (i > 0) /* the first is a warm-up */
			t[i - 1] = (mrail_now() - t0) / 2;
	}
	if (rc != MRAIL_OK)
		return rc;
	double best = t[0];
	for (unsigned i = 1; i < reps; i++)
		if (t[i] < best)
			best = t[i];
	*oneway = best;
	return MRAIL_OK;
}

/* Measure rail `rail` of gate g; fills a profile of the path in use. */
static int sample_rail(struct mrail_engine *e, struct gate *g, unsigned rail,
		       struct mrail_profile *p, void *buf, int first)
{
	const struct mrail_strategy_ops *saved = e->strategy;
	void *saved_state = e->strategy_state;
	const struct mrail_strategy_ops *pin = mrail_strategy_find("pin");
	char arg[16];
	void *state;
	int rc;

	snprintf(arg, sizeof arg, "rail=%u", rail);
	if (!pin || (rc = pin->init(arg, &state)))
		return MRAIL_ERR_NOT_FOUND;
	e->strategy = pin;
	e->strategy_state = state;
	memset(p, 0, sizeof *p);
	snprintf(p->id.driver, sizeof p->id.driver, "%s",
		 g->rails[rail]->stats.driver);
	snprintf(p->id.local, sizeof p->id.local, "%s", g->plan[rail].local_if);
	snprintf(p->id.peer, sizeof p->id.peer, "%s", g->plan[rail].remote_if);
	snprintf(p->tool, sizeof p->tool, "libmrail in-band");
	snprintf(p->statistic, sizeof p->statistic, "minimum of 5 to 9");
	mrail_profile_set_now(p);
	rc = MRAIL_OK;
	for (unsigned i = 0; i < NSIZES && rc == MRAIL_OK; i++) {
		double t = NAN;
		/* Fewer repetitions as sizes grow: a fixed count, the same
		 * on both sides, keeps the partners in step. */
		unsigned reps = i < 2 ? 9 : 5;
		rc = pingpong(e, g, first, buf, inband_sizes[i], reps, &t);
		mrail_debug("%s rail %u: in-band %llu B one-way %.1f us",
			    g->name, rail, (unsigned long long)inband_sizes[i],
			    1e6 * t);
		p->samples[i].size = inband_sizes[i];
		p->samples[i].eager = inband_sizes[i] <= g->eager_max ? t : NAN;
		p->samples[i].rdv = inband_sizes[i] <= g->eager_max ? NAN : t;
	}
	p->nsamples = NSIZES;
	pin->fini(state);
	e->strategy = saved;
	e->strategy_state = saved_state;
	return rc;
}

static void remember(struct mrail_engine *e, const char *local_if,
		     double latency, double bandwidth)
{
	unsigned i = 0;
	while (i < e->ninband && strcmp(e->inband[i].local_if, local_if))
		i++;
	if (i == MRAIL_MAX_RAILS)
		return;
	snprintf(e->inband[i].local_if, sizeof e->inband[i].local_if, "%s",
		 local_if);
	e->inband[i].latency = latency;
	e->inband[i].bandwidth = bandwidth;
	if (i == e->ninband)
		e->ninband++;
}

static void apply_figures(struct mrail_engine *e, const char *local_if,
			  double latency, double bandwidth)
{
	remember(e, local_if, latency, bandwidth);
	for (uint32_t k = 0; k < e->ngates; k++) {
		struct gate *o = e->gates[k];
		for (unsigned j = 0; j < o->nrails; j++) {
			struct rail *x = o->rails[j];
			if (!x || x->state != RAIL_UP || !x->model_source ||
			    !o->plan || strcmp(o->plan[j].local_if, local_if) ||
			    !strcmp(x->model_source, "profile"))
				continue;
			struct mrail_rail_model *copy;
			/* Each rail owns its model: a nominal one with the
			 * measured figures is enough to share. */
			x->bandwidth = bandwidth;
			x->latency = latency;
			if (mrail_model_from_nominal(x->bandwidth, x->latency,
						     &copy))
				copy = NULL;
			rail_set_model(x, copy, "in-band");
		}
	}
}

/* The bandwidth the rail's model gets: its samples' tail slope, bounded
 * by their widest span (mrail_model_bandwidth_checked): these few
 * repetitions ran while other processes may hold the cores. */
static double inband_bandwidth(const char *gate, unsigned rail,
			       const struct mrail_rail_model *m)
{
	double tail = mrail_model_bandwidth(m);
	double b = mrail_model_bandwidth_checked(m);
	if (b < tail)
		mrail_info("%s rail %u: in-band samples' last segment says "
			   "%.0f MB/s, their whole span much less: %.0f MB/s "
			   "kept", gate, rail, tail / 1e6, b / 1e6);
	return b;
}

void inband_model_for(struct mrail_engine *e, struct rail *r)
{
	if (!r->gate || !r->gate->plan || !r->model_source ||
	    !strcmp(r->model_source, "profile"))
		return;
	for (unsigned i = 0; i < e->ninband; i++) {
		struct mrail_rail_model *m;
		if (strcmp(e->inband[i].local_if,
			   r->gate->plan[r->index].local_if))
			continue;
		r->bandwidth = e->inband[i].bandwidth;
		r->latency = e->inband[i].latency;
		if (mrail_model_from_nominal(r->bandwidth, r->latency, &m))
			m = NULL;
		rail_set_model(r, m, "in-band");
		return;
	}
}

/* first: this side sends first (the partners must disagree). */
void inband_sample_gate(struct mrail_engine *e, struct gate *g, int first)
{
	double t0 = mrail_now();

	if (g && g->state == GATE_IDLE) { /* lazy: connect for this */
		gate_connect_now(e, g);
		while (g->state == GATE_CONNECTING) {
			if (engine_progress(e) == 0)
				engine_idle_wait(e, 1);
			handshake_expire(e);
		}
	}
	if (!g || g->state != GATE_UP)
		return;
	/* Sample if either side lacks a profile for one of its rails, and
	 * both could get the memory: they must decide alike, so they tell
	 * each other (2 = cannot). */
	struct mrail_profile *p = malloc(sizeof *p);
	void *buf = calloc(1, inband_sizes[NSIZES - 1]);
	uint8_t need = 0, other = 0;
	for (unsigned i = 0; i < g->nrails; i++)
		if (g->rails[i] && g->rails[i]->model_source &&
		    strcmp(g->rails[i]->model_source, "profile"))
			need = 1;
	if (!p || !buf)
		need = 2;
	if (xfer(e, g, first, first ? &need : &other, 1) ||
	    xfer(e, g, !first, first ? &other : &need, 1) ||
	    (!need && !other) || need == 2 || other == 2) {
		free(p);
		free(buf);
		return;
	}
	/* Every rail of the gate is up (wire-up waited for it), on both
	 * sides: both run the same exchanges in the same order. */
	for (unsigned i = 0; i < g->nrails; i++) {
		struct mrail_rail_model *m;
		int rc = sample_rail(e, g, i, p, buf, first);
		if (rc != MRAIL_OK) { /* the rail failed: so did the peer's */
			mrail_warn("in-band sampling of rail %u failed: %s", i,
				   mrail_strerror(rc));
			break;
		}
		/* A model this side cannot build must not stop the partner's
		 * next rail: keep going in step. */
		if ((rc = mrail_model_from_profile(p, &m))) {
			mrail_warn("rail %u: no in-band model (%s)", i,
				   mrail_strerror(rc));
			continue;
		}
		double bw = inband_bandwidth(g->name, i, m);
		apply_figures(e, g->plan[i].local_if, mrail_model_latency(m),
			      bw);
		mrail_info("%s rail %u (%s): in-band model %.1f us, %.0f MB/s",
			   g->name, i, g->plan[i].local_if,
			   1e6 * mrail_model_latency(m), bw / 1e6);
		mrail_model_free(m);
	}
	free(p);
	free(buf);
	mrail_debug("in-band sampling with %s took %.0f ms", g->name,
		    1e3 * (mrail_now() - t0));
}

static void sample_with(struct mrail_engine *e, uint32_t partner)
{
	if (partner < e->size)
		inband_sample_gate(e, e->gates[partner], e->rank < partner);
}

/*
 * Lazy connection exists for jobs too big to connect every pair, where
 * every rank sampling with its partner would cost seconds of CPU at
 * creation for rails that are the same for every rank of a host (the
 * loopback ones). There one pair per host samples and publishes; the
 * others take its figures. Partners on different hosts still sample.
 */
/* The first pair (2k, 2k+1) with both ranks on host `host`. */
static uint32_t host_pair(const struct peer_address *pas, uint32_t size,
			  uint64_t host)
{
	for (uint32_t l = 0; l + 1 < size; l += 2)
		if (pas[l].host_id == host && pas[l + 1].host_id == host)
			return l;
	return UINT32_MAX;
}

/* What rank r does; the odd size's last rank samples with rank 0. */
static int role_of(const struct peer_address *pas, uint32_t size, uint32_t r)
{
	uint32_t p = (r ^ 1) < size ? r ^ 1 : 0;
	uint32_t leader = host_pair(pas, size, pas[r].host_id);
	if (pas[p].host_id != pas[r].host_id || leader == UINT32_MAX)
		return INBAND_PAIR;
	return r / 2 == leader / 2 ? INBAND_PUBLISH : INBAND_FETCH;
}

void inband_plan(struct mrail_engine *e, const struct peer_address *pas)
{
	uint32_t last = e->size - 1;
	e->inband_role = INBAND_PAIR;
	e->inband_serve_last = e->size % 2 == 1 && e->rank == 0;
	if (e->size < 2)
		return;
	/* Eager: every pair samples; lazy: one pair per host for its
	 * loopback rails. */
	e->inband_role = e->lazy_connect ? role_of(pas, e->size, e->rank)
					 : INBAND_PAIR;
	int last_role = e->lazy_connect ? role_of(pas, e->size, last)
					: INBAND_PAIR;
	/* Oversubscribed (engine_set_idle_wait): a ping-pong on this host
	 * measured 60 ms "latency" among 1024 ranks on 2 cores (and 24 ranks
	 * sampling at once took a minute under ASan), and the host's ranks
	 * would use it. Both ranks of a same-host pair see the same host, so
	 * they decide alike; pairs across hosts still sample. */
	uint32_t p = (e->rank ^ 1) < e->size ? e->rank ^ 1 : 0;
	if (e->idle_wait_max_ms > 1 && pas[p].host_id == e->host_id) {
		e->inband_role = INBAND_NONE;
		mrail_info("in-band sampling skipped: more ranks than cores "
			   "on this host; nominal models");
	}
	if (e->idle_wait_max_ms > 1 && pas[last].host_id == e->host_id)
		last_role = INBAND_NONE;
	if (e->inband_serve_last)
		e->inband_serve_last = last_role == INBAND_PAIR;
}

/* The published figures: "mrail-inband 1\n" then one line per interface
 * "<local_if> <latency s> <bandwidth B/s>\n" (docs/scale.md). */
static void inband_key(struct mrail_engine *e, char *key, size_t len)
{
	snprintf(key, len, "mrail.inband.h%016llx",
		 (unsigned long long)e->host_id);
}

static void publish(struct mrail_engine *e,
		    const struct mrail_bootstrap_ops *bo,
		    struct mrail_bootstrap *bs)
{
	char val[MRAIL_MAX_RAILS * 64 + 32], key[64];
	size_t n = (size_t)snprintf(val, sizeof val, "mrail-inband 1\n");
	for (unsigned i = 0; i < e->ninband && n < sizeof val; i++)
		n += (size_t)snprintf(val + n, sizeof val - n, "%s %.9g %.9g\n",
				      e->inband[i].local_if,
				      e->inband[i].latency,
				      e->inband[i].bandwidth);
	if (n >= sizeof val)
		return;
	inband_key(e, key, sizeof key);
	if (bo->put(bs, key, val, n))
		mrail_warn("in-band models not published: others of this "
			   "host use nominal figures");
}

void inband_sample(struct mrail_engine *e, const struct mrail_bootstrap_ops *bo,
		   struct mrail_bootstrap *bs)
{
	if (!e->cfg.inband_sampling || e->size < 2 ||
	    e->inband_role == INBAND_FETCH || e->inband_role == INBAND_NONE)
		return;
	uint32_t last = e->size - 1;
	if ((e->rank ^ 1) < e->size)
		sample_with(e, e->rank ^ 1);
	/* Odd size: the last rank has no r^1; rank 0 serves it second. */
	if (e->inband_serve_last)
		sample_with(e, last);
	else if (e->size % 2 == 1 && e->rank == last)
		sample_with(e, 0);
	if (e->inband_role == INBAND_PUBLISH && (e->rank & 1) == 0 &&
	    e->ninband > 0)
		publish(e, bo, bs);
}

void inband_fetch(struct mrail_engine *e, const struct mrail_bootstrap_ops *bo,
		  struct mrail_bootstrap *bs)
{
	char val[MRAIL_MAX_RAILS * 64 + 32], key[64];
	size_t len = sizeof val - 1;

	if (!e->cfg.inband_sampling || e->inband_role != INBAND_FETCH)
		return;
	inband_key(e, key, sizeof key);
	if (bo->get(bs, key, val, &len) != MRAIL_OK) {
		mrail_debug("no in-band models published for this host");
		return;
	}
	val[len] = '\0';
	char *line = val, *nl;
	if (strncmp(line, "mrail-inband 1\n", 15)) {
		mrail_warn("in-band models of this host: unknown format; "
			   "nominal figures used");
		return;
	}
	for (line += 15; (nl = strchr(line, '\n')); line = nl + 1) {
		char ifname[16];
		double lat, bw;
		*nl = '\0';
		if (sscanf(line, "%15s %lf %lf", ifname, &lat, &bw) != 3 ||
		    !(lat > 0 && lat < 1) || !(bw > 0 && bw < 1e13)) {
			mrail_warn("in-band models of this host: bad line "
				   "'%.40s' ignored", line);
			continue;
		}
		apply_figures(e, ifname, lat, bw);
	}
}
