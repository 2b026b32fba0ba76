/*
 * Offload workers: one thread pinned per chosen core, each fed by a
 * single-producer ring (the producer is whoever holds the engine lock, so
 * there is one at a time) and waiting spin-then-sleep. A job copies one
 * part of an eager message into its packet outside the lock, then takes
 * the engine lock only around the driver post: drivers are not
 * thread-safe (docs/threads.md), and a per-rail submission path would
 * have to be added to every driver. What the lock costs is measured
 * (lock_wait, mrail_offload_info()).
 *
 * This file takes the engine lock itself (like the progress thread): a
 * worker enters the engine on its own. tests/unit/check_libmrail.sh
 * knows it.
 */
#include "libmrail/engine.h"
#include "util/clock.h"
#include "util/iov.h"
#include "util/log.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define SPIN_DEFAULT 20e-6   /* seconds a worker spins before sleeping */
#define CALIB_HOT 64
#define CALIB_COLD 16
#define T_O_HOT_GUESS 3e-6   /* before calibration (docs/offload.md) */
#define T_O_COLD_GUESS 8e-6

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static void store_time(double *at, double v)
{
	__atomic_store(at, &v, __ATOMIC_RELEASE);
}

static double load_time(double *at)
{
	double v;
	__atomic_load(at, &v, __ATOMIC_ACQUIRE);
	return v;
}

/* Settles one part of r (lock held): the send completes with its last. */
static void part_settled(struct mrail_engine *e, struct mrail_request *r,
			 int rc, double t_start)
{
	if (rc != MRAIL_OK)
		request_fail(e, r, rc);
	if (--r->outstanding > 0)
		return;
	if (r->failing) {
		request_complete(e, r, r->error);
		return;
	}
	if (e->offload)
		guard_note_parts(&e->offload->guard, r->len,
				 mrail_now() - t_start);
	r->status.length = r->len;
	request_complete(e, r, MRAIL_OK);
	/* A waiter asleep in the drivers' fds would otherwise see this
	 * completion only at its poll timeout. */
	struct offload *o = e->offload;
	uint64_t one = 1;
	if (o && o->done_fd >= 0 &&
	    __atomic_load_n(&o->sleepers, __ATOMIC_SEQ_CST) &&
	    write(o->done_fd, &one, sizeof one) < 0)
		mrail_debug("offload: waking a waiter: %s", strerror(errno));
}

int offload_sleep_begin(struct offload *o)
{
	if (o->done_fd < 0)
		return -1;
	__atomic_add_fetch(&o->sleepers, 1, __ATOMIC_SEQ_CST);
	return o->done_fd;
}

void offload_sleep_end(struct offload *o)
{
	uint64_t n;
	__atomic_sub_fetch(&o->sleepers, 1, __ATOMIC_SEQ_CST);
	if (read(o->done_fd, &n, sizeof n) < 0 && errno != EAGAIN)
		mrail_debug("offload: draining wake-ups: %s", strerror(errno));
}

static void run_part(struct offload *o, struct offload_job *j)
{
	struct mrail_engine *e = o->e;
	struct mrail_request *r = j->req;
	/* The copy, in parallel with the other parts: the request and its
	 * buffer are the application's until the send completes, and the
	 * packet is this job's until it is posted. */
	mrail_iov_to_buf(j->payload, r->iov, r->iovcnt, j->offset, j->len);
	double t0 = mrail_now();
	engine_lock(e);
	o->lock_wait += mrail_now() - t0;
	o->lock_takes++;
	struct gate *g = r->gate;
	struct rail *rail = j->rail;
	int rc;
	if (g->state == GATE_UP && rail->state == RAIL_UP) {
		hooks_msg_tx(e, rail, r->tag);
		rc = rail_post_packet(e, rail, j->op);
		if (rc == MRAIL_OK)
			rail->stats.tx_bytes += j->len;
		else
			gate_fail(e, g, rc, "posting an offloaded eager part "
				  "failed");
	} else {
		rc = g->error ? g->error : MRAIL_ERR_PEER;
	}
	if (rc != MRAIL_OK)
		packet_put(e, j->op);
	part_settled(e, r, rc, j->t_push);
	engine_unlock(e);
}

/* Calibration: when the worker saw the job (no engine lock: the creator
 * holds it during init); an uncontended mutex stands for its cost. */
static void run_calib(struct offload_worker *w, struct offload_job *j)
{
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	w->calib_sample = mrail_now() - j->t_push;
	__atomic_store_n(&w->calib_done, 1, __ATOMIC_RELEASE);
}

static void *worker_main(void *arg)
{
	struct offload_worker *w = arg;
	struct offload *o = w->o;
	threads_engine_thread(o->e, (unsigned)(w - o->w));
	if (w->cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(w->cpu, &set);
		if (pthread_setaffinity_np(pthread_self(), sizeof set, &set))
			mrail_debug("offload: worker %u not pinned to cpu %d",
				    (unsigned)(w - o->w), w->cpu);
	}
	unsigned tail = 0;
	for (;;) {
		if (__atomic_load_n(&w->head, __ATOMIC_ACQUIRE) != tail) {
			struct offload_job *j = &w->ring[tail % OFFLOAD_RING];
			if (j->req)
				run_part(o, j);
			else
				run_calib(w, j);
			store_time(&w->last_done, mrail_now());
			__atomic_store_n(&w->tail, ++tail, __ATOMIC_RELEASE);
			continue;
		}
		/* Stop only with an empty ring: queued parts still go out. */
		if (__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE))
			break;
		double t0 = mrail_now();
		int got = 0;
		while (!got && mrail_now() - t0 < o->spin) {
			for (int k = 0; k < 64 && !got; k++) {
				got = __atomic_load_n(&w->head,
						      __ATOMIC_ACQUIRE) != tail;
				cpu_relax();
			}
		}
		if (got)
			continue;
		pthread_mutex_lock(&w->m);
		/* Dekker with offload_push: flag, then look at the ring. */
		__atomic_store_n(&w->sleeping, 1, __ATOMIC_SEQ_CST);
		while (__atomic_load_n(&w->head, __ATOMIC_SEQ_CST) == tail &&
		       !__atomic_load_n(&w->stop, __ATOMIC_SEQ_CST))
			pthread_cond_wait(&w->c, &w->m);
		__atomic_store_n(&w->sleeping, 0, __ATOMIC_SEQ_CST);
		pthread_mutex_unlock(&w->m);
	}
	return NULL;
}

static void wake(struct offload_worker *w)
{
	if (!__atomic_load_n(&w->sleeping, __ATOMIC_SEQ_CST))
		return;
	pthread_mutex_lock(&w->m);
	pthread_cond_signal(&w->c);
	pthread_mutex_unlock(&w->m);
}

void offload_push(struct offload *o, unsigned wi, const struct offload_job *j)
{
	struct offload_worker *w = &o->w[wi];
	unsigned head = __atomic_load_n(&w->head, __ATOMIC_RELAXED);
	w->ring[head % OFFLOAD_RING] = *j;
	__atomic_store_n(&w->head, head + 1, __ATOMIC_SEQ_CST);
	wake(w);
}

uint64_t offload_idle_workers(struct offload *o)
{
	uint64_t m = 0;
	for (unsigned i = 0; i < o->nworkers; i++)
		if (__atomic_load_n(&o->w[i].tail, __ATOMIC_ACQUIRE) ==
		    __atomic_load_n(&o->w[i].head, __ATOMIC_RELAXED))
			m |= (uint64_t)1 << i;
	return m;
}

double offload_t_o(struct offload *o, unsigned wi)
{
	struct offload_worker *w = &o->w[wi];
	if (__atomic_load_n(&w->sleeping, __ATOMIC_RELAXED) ||
	    mrail_now() - load_time(&w->last_done) > o->spin)
		return o->t_o_cold;
	return o->t_o_hot;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* One handoff to worker w, measured push -> start. */
static double calib_one(struct offload *o, unsigned wi, int cold)
{
	struct offload_worker *w = &o->w[wi];
	/* Cold: the worker has gone to sleep (bounded: 100 ms). */
	double t0 = mrail_now();
	while (cold && !__atomic_load_n(&w->sleeping, __ATOMIC_ACQUIRE) &&
	       mrail_now() - t0 < 0.1)
		sched_yield();
	__atomic_store_n(&w->calib_done, 0, __ATOMIC_RELAXED);
	struct offload_job j = {.t_push = mrail_now()};
	offload_push(o, wi, &j);
	while (!__atomic_load_n(&w->calib_done, __ATOMIC_ACQUIRE))
		sched_yield();
	/* The worker is done with the job once tail moves. */
	while (offload_idle_workers(o) != ((uint64_t)1 << o->nworkers) - 1)
		sched_yield();
	return w->calib_sample;
}

static void calibrate(struct offload *o)
{
	double hot[CALIB_HOT * OFFLOAD_MAX_WORKERS];
	double cold[CALIB_COLD * OFFLOAD_MAX_WORKERS];
	unsigned nh = 0, nc = 0;
	for (unsigned i = 0; i < o->nworkers; i++) {
		for (unsigned k = 0; k < CALIB_HOT; k++)
			hot[nh++] = calib_one(o, i, 0);
		for (unsigned k = 0; k < CALIB_COLD; k++)
			cold[nc++] = calib_one(o, i, 1);
	}
	qsort(hot, nh, sizeof *hot, cmp_double);
	qsort(cold, nc, sizeof *cold, cmp_double);
	o->t_o_hot = hot[nh / 2];
	o->t_o_cold = cold[nc / 2];
}

static int env_flag(const char *var, int *out)
{
	const char *s = getenv(var);
	if (!s)
		return MRAIL_OK;
	if (strcmp(s, "0") && strcmp(s, "1")) {
		mrail_error("invalid %s='%s': expected 0 or 1", var, s);
		return MRAIL_ERR_CONFIG;
	}
	*out = s[0] == '1';
	return MRAIL_OK;
}

static unsigned env_local(const char *var, unsigned dflt)
{
	const char *s = getenv(var);
	char *end;
	if (!s || !*s)
		return dflt;
	unsigned long v = strtoul(s, &end, 10);
	return *end || v > 1u << 20 ? dflt : (unsigned)v;
}

int offload_start(struct mrail_engine *e, struct offload **out)
{
	uint64_t req;
	int force = 0, rc;
	struct offload_topo t;

	*out = NULL;
	if ((rc = env_flag("MRAIL_OFFLOAD_FORCE", &force)))
		return rc;
	/* Off unless asked for: below break-even the model still offloads
	 * some sizes (4 KiB 22 % slower here, docs/offload.md), so "auto"
	 * is opt-in until measured latency feeds the decision. */
	const char *asked = getenv("MRAIL_OFFLOAD_CORES");
	if (!asked || !strcmp(asked, "none"))
		return MRAIL_OK;
	if ((rc = offload_topo_load(&t))) {
		/* No topology: cannot tell idle cores, so no offload. */
		const char *s = getenv("MRAIL_OFFLOAD_CORES");
		if (s && strcmp(s, "none") && strcmp(s, "auto"))
			mrail_warn("offload: MRAIL_OFFLOAD_CORES ignored "
				   "without a topology");
		return MRAIL_OK;
	}
	rc = offload_parse_cores(getenv("MRAIL_OFFLOAD_CORES"), t.ncores, &req);
	if (rc || req == 0 || e->thread_level == MRAIL_THREAD_SINGLE) {
		if (!rc && req && e->thread_level == MRAIL_THREAD_SINGLE)
			mrail_debug("offload: off at thread level single");
		offload_topo_free(&t);
		return rc;
	}
	uint64_t all = t.ncores >= 64 ? ~(uint64_t)0
				      : ((uint64_t)1 << t.ncores) - 1;
	uint64_t bound = offload_topo_bound(&t);
	uint64_t mine = offload_choose_cores(
		req, t.ncores, bound, bound == all,
		env_local("MRAIL_LOCAL_RANK", 0),
		env_local("MRAIL_LOCAL_SIZE", 1));
	if (!mine) {
		mrail_debug("offload: no idle core for this rank; off");
		offload_topo_free(&t);
		return MRAIL_OK;
	}
	struct offload *o = calloc(1, sizeof *o);
	if (!o) {
		offload_topo_free(&t);
		return MRAIL_ERR_NOMEM;
	}
	o->e = e;
	o->spin = SPIN_DEFAULT;
	o->done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	o->force = force;
	unsigned core_of[OFFLOAD_MAX_WORKERS];
	for (unsigned c = 0; c < 64 && o->nworkers < OFFLOAD_MAX_WORKERS; c++)
		if (mine & ((uint64_t)1 << c)) {
			struct offload_worker *w = &o->w[o->nworkers];
			core_of[o->nworkers++] = c;
			w->o = o;
			w->core = c;
			w->cpu = offload_topo_core_pu(&t, c);
		}
	/* Which workers sit near each local rail's NIC. */
	for (unsigned i = 0; i < e->nlocal && i < MRAIL_MAX_RAILS; i++) {
		int known;
		uint64_t near = offload_topo_near(&t, e->local[i].ifname,
						  &known);
		for (unsigned k = 0; k < o->nworkers; k++)
			if (near & ((uint64_t)1 << core_of[k]))
				o->near[i] |= (uint64_t)1 << k;
	}
	offload_topo_free(&t);
	for (unsigned i = 0; i < o->nworkers; i++) {
		pthread_mutex_init(&o->w[i].m, NULL);
		pthread_cond_init(&o->w[i].c, NULL);
	}
	/* Until the workers run (offload_run), plan with typical figures. */
	o->t_o_hot = T_O_HOT_GUESS;
	o->t_o_cold = T_O_COLD_GUESS;
	guard_init(&o->guard);
	mrail_debug("offload: %u worker(s) chosen; they start at the first "
		    "message worth sending in parts", o->nworkers);
	*out = o;
	return MRAIL_OK;
}

/*
 * Workers start only when the strategy first wants them: a process with
 * a second thread pays for it on every call even while that thread
 * sleeps (glibc leaves its single-thread fast paths: measured +3 % on an
 * 8 us ping-pong here), so a job whose messages never gain from offload
 * should not have them.
 */
int offload_run(struct offload *o)
{
	if (o->running)
		return MRAIL_OK;
	for (unsigned i = 0; i < o->nworkers; i++) {
		struct offload_worker *w = &o->w[i];
		if (pthread_create(&w->thread, NULL, worker_main, w)) {
			mrail_warn("offload: cannot start worker %u; off", i);
			offload_stop(o);
			o->failed = 1;
			return MRAIL_ERR_NOMEM;
		}
		w->started = 1;
	}
	o->running = 1;
	calibrate(o);
	mrail_info("offload: %u worker(s) started, T_O %.2f us (spinning) "
		   "%.2f us (asleep)", o->nworkers, o->t_o_hot * 1e6,
		   o->t_o_cold * 1e6);
	return MRAIL_OK;
}

void offload_park(struct offload *o)
{
	if (!o->running)
		return;
	/* Idle workers never take the engine lock, so joining them while
	 * holding it is safe. */
	offload_stop(o);
	for (unsigned i = 0; i < o->nworkers; i++) {
		struct offload_worker *w = &o->w[i];
		/* A restarted worker reads its ring from 0. */
		__atomic_store_n(&w->head, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&w->tail, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&w->stop, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&w->sleeping, 0, __ATOMIC_RELAXED);
		store_time(&w->last_done, 0);
	}
	o->running = 0;
	o->unused = 0;
	o->parks++;
	o->guard.parked = 1;
	mrail_info("offload: workers parked: no size gained from offload in "
		   "the last %u eager messages", OFFLOAD_PARK_AFTER);
}

void offload_stop(struct offload *o)
{
	if (!o)
		return;
	for (unsigned i = 0; i < o->nworkers; i++) {
		struct offload_worker *w = &o->w[i];
		if (!w->started)
			continue;
		pthread_mutex_lock(&w->m);
		__atomic_store_n(&w->stop, 1, __ATOMIC_SEQ_CST);
		pthread_cond_signal(&w->c);
		pthread_mutex_unlock(&w->m);
		pthread_join(w->thread, NULL);
		w->started = 0;
	}
}

void offload_free(struct offload *o)
{
	if (!o)
		return;
	for (unsigned i = 0; i < o->nworkers; i++) {
		pthread_mutex_destroy(&o->w[i].m);
		pthread_cond_destroy(&o->w[i].c);
	}
	if (o->done_fd >= 0)
		close(o->done_fd);
	free(o);
}

void offload_get_info(const struct offload *o, struct mrail_offload_info *i)
{
	memset(i, 0, sizeof *i);
	if (!o)
		return;
	i->workers = o->nworkers;
	i->running = (unsigned)o->running;
	for (unsigned k = 0; k < o->nworkers; k++)
		i->cpus[k] = o->w[k].cpu;
	i->t_o_spinning = o->t_o_hot;
	i->t_o_asleep = o->t_o_cold;
	i->spin = o->spin;
	i->messages = o->msgs;
	i->parts = o->parts;
	i->declined = o->declined;
	i->vetoed = o->guard.vetoed;
	i->parks = o->parks;
	i->lock_wait = o->lock_wait;
	i->lock_takes = o->lock_takes;
}
