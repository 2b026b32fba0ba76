/*
 * Offload of eager copies to worker threads on idle cores (issue 13,
 * docs/offload.md). One folder, one job per file:
 *   topo.c    hwloc: cores, NUMA nodes, the cpuset near a NIC
 *   cores.c   which cores this process may use (binding, local ranks,
 *             MRAIL_OFFLOAD_CORES)
 *   worker.c  pinned workers, their rings, T_O calibration, the job
 *   submit.c  send side: asks the strategy (eager_offload: the paper's
 *             equation (1), strategies/eager_offload.c), hands parts out
 *   guard.c   measured feedback: vetoes sizes where parts came out slower
 *   reasm.c   receiver: EAGER_PART records into the matched receive's
 *             buffer, or staged back into whole messages
 * Called from send.c (offload_try), recv.c (reasm_*), engine.c /
 * api_engine.c (life cycle, info).
 */
#ifndef MRAIL_LIBMRAIL_OFFLOAD_H
#define MRAIL_LIBMRAIL_OFFLOAD_H

#include <hwloc.h>
#include <pthread.h>
#include <stdint.h>

#include "mrail.h"
#include "mrail/strategy.h"
#include "util/list.h"

struct mrail_engine;
struct mrail_request;
struct gate;
struct rail;
struct send_op;
struct mrail_wire_rec;

#define OFFLOAD_MAX_WORKERS 16
#define OFFLOAD_RING 64 /* jobs per worker ring (power of two) */
#define OFFLOAD_PARK_AFTER 1024 /* eager messages without a part sent */

/* ---- topo.c ----------------------------------------------------------- */
struct offload_topo {
	hwloc_topology_t topo;
	unsigned ncores;
	unsigned nnuma;
};
/* Loads the machine's topology (or HWLOC_XMLFILE's). */
int offload_topo_load(struct offload_topo *t);
void offload_topo_free(struct offload_topo *t);
/* Cores whose PUs are near interface `ifname` (hwloc OS device of type
 * network, or an OpenFabrics device of that name): bit i = core i. Whole
 * machine when hwloc does not know the interface (veth, loopback).
 * *known: 1 if the device was found. */
uint64_t offload_topo_near(const struct offload_topo *t, const char *ifname,
			   int *known);
/* Cores that share a PU with the process binding (bit i = core i). */
uint64_t offload_topo_bound(const struct offload_topo *t);
/* First PU (OS index) of core i, -1 if none. */
int offload_topo_core_pu(const struct offload_topo *t, unsigned core);

/* ---- cores.c ---------------------------------------------------------- */
/* MRAIL_OFFLOAD_CORES: "auto" (default), "none", or a list of core
 * indices ("2,3", "4-7"). Returns MRAIL_ERR_CONFIG (logged) when bad. */
#define OFFLOAD_CORES_AUTO ((uint64_t)-1)
int offload_parse_cores(const char *s, unsigned ncores, uint64_t *mask);
/* The cores this rank's workers get: auto = not in the binding, not one
 * of the local_size cores the ranks run on, shared round robin among the
 * local ranks; a list is taken as it is, by every rank. */
uint64_t offload_choose_cores(uint64_t requested, unsigned ncores,
			      uint64_t bound, int bound_all,
			      unsigned local_rank, unsigned local_size);

/* ---- guard.c ---------------------------------------------------------- */
#define OFFLOAD_GUARD_CLASSES 40 /* power-of-two size classes */
struct offload_guard {
	double whole[OFFLOAD_GUARD_CLASSES];  /* EWMA s, sent whole */
	double parts[OFFLOAD_GUARD_CLASSES];  /* EWMA s, in parts (+ copy) */
	uint32_t nwhole[OFFLOAD_GUARD_CLASSES], nparts[OFFLOAD_GUARD_CLASSES];
	uint32_t since_probe[OFFLOAD_GUARD_CLASSES];
	uint64_t vetoed, probes;
	unsigned tick;                        /* whole samples taken 1 in 16 */
	int parked;                           /* workers parked: no probes */
	double copy_bw;                       /* bytes/s, measured at start */
};
void guard_init(struct offload_guard *g);
/* After the strategy chose parts: wire_gain = predicted time whole minus
 * predicted slowest part without T_O, t_single = predicted time whole.
 * 1: offload, 2: offload as a probe of a vetoed size class, 0: measured
 * not worth it (or whole still to be sampled). */
int guard_allows(struct offload_guard *g, uint64_t len, double wire_gain,
		 double t_single);
/* Before asking the strategy: the handoff cost to tell it for len bytes
 * (t_single: predicted time whole). t_o while the class is sampled; once
 * judged, what parts measured costing beyond whole plus the margin, if
 * more, so the strategy declines what guard_allows would veto; but one
 * message in GUARD_PROBE_EVERY (*probe = 1, not when parked) gets t_o. */
double guard_handoff(struct offload_guard *g, uint64_t len, double t_o,
		     double t_single, int *probe);
/* The strategy declined a message it was told the measured cost for. */
void guard_note_declined(struct offload_guard *g);
/* What it cost to hand len bytes to the drivers, whole or in parts. */
/* 1: time this whole message (guard_note_whole). */
int guard_wants_whole(struct offload_guard *g, uint64_t len);
void guard_note_whole(struct offload_guard *g, uint64_t len, double s);
void guard_note_parts(struct offload_guard *g, uint64_t len, double s);

/* ---- worker.c --------------------------------------------------------- */
struct offload_job {
	struct mrail_request *req;   /* NULL: calibration */
	struct rail *rail;
	struct send_op *op;
	uint8_t *payload;            /* where the part's bytes go in op */
	uint64_t offset, len;
	double t_push;
};

struct offload_worker {
	struct offload *o;
	pthread_t thread;
	int started;
	int cpu;                       /* OS index of its PU */
	unsigned core;
	struct offload_job ring[OFFLOAD_RING];
	unsigned head, tail;           /* atomics: producer / worker */
	int sleeping;                  /* atomic */
	int stop;                      /* atomic */
	pthread_mutex_t m;
	pthread_cond_t c;
	double last_done;              /* atomic (as bits): when it idled */
	double calib_sample;           /* calibration: push -> start */
	int calib_done;                /* atomic */
};

struct offload {
	struct mrail_engine *e;
	unsigned nworkers;
	struct offload_worker w[OFFLOAD_MAX_WORKERS];
	uint64_t near[MRAIL_MAX_RAILS];  /* unused slots: 0 */
	double t_o_hot, t_o_cold;        /* seconds */
	double spin;                     /* seconds a worker spins */
	int force;                       /* MRAIL_OFFLOAD_FORCE=1 */
	int running;                     /* workers started (offload_run) */
	int failed;                      /* they could not be: off */
	int done_fd;                     /* eventfd: a worker completed a
	                                    request while someone slept */
	int sleepers;                    /* atomic: threads in idle waits */
	unsigned unused;                 /* offload_try calls since a part
	                                    left other than as a probe */
	unsigned min_chunks;             /* 2 */
	/* Statistics (engine lock). */
	uint64_t msgs, parts, declined, parks;
	uint64_t bad_plans;              /* strategy plans refused */
	struct offload_guard guard;      /* guard.c */
	double lock_wait;                /* total s workers waited for it */
	uint64_t lock_takes;
};

/* engine.c: NULL *out when offload steps aside (no core, single level). */
int offload_start(struct mrail_engine *e, struct offload **out);
/* Starts the workers and calibrates T_O (engine lock held: calibration
 * does not take it). Until then the plan uses typical T_O figures. */
int offload_run(struct offload *o);
/* The engine's idle wait: the fd to poll beside the drivers' (-1:
 * none), then the end of the sleep. */
int offload_sleep_begin(struct offload *o);
void offload_sleep_end(struct offload *o);
/* Engine lock held, every worker idle: stops them until offload_run. */
void offload_park(struct offload *o);
/* Lock NOT held: the remaining jobs are posted, then workers exit.
 * Idempotent. */
void offload_stop(struct offload *o);
void offload_free(struct offload *o);
/* Workers idle now (no job queued or running): bit i = worker i. */
uint64_t offload_idle_workers(struct offload *o);
/* Engine lock held; hands the job to worker w. */
void offload_push(struct offload *o, unsigned w, const struct offload_job *j);
/* The predicted handoff cost to worker w now. */
double offload_t_o(struct offload *o, unsigned w);

/* What mrail_offload_info() reports (o may be NULL: off). */
void offload_get_info(const struct offload *o, struct mrail_offload_info *i);

/* send.c: the head of g's queue (eager, not synchronous) goes out in
 * parts from workers. 1 if it did, 0 if it stays for a normal packet. */
int offload_try(struct mrail_engine *e, struct gate *g,
		struct mrail_request *r);

/* ---- reasm.c ---------------------------------------------------------- */
struct partial {
	struct mrail_list link;  /* gate->parts */
	uint64_t seq, tag, len, got;
	/* Matched at its first part: the parts land in its buffer. NULL:
	 * staged in data[] until whole (its bytes held as credit). */
	struct mrail_request *req;
	unsigned nranges;
	uint64_t ranges[MRAIL_MAX_RAILS][2];
	uint8_t data[];
};
/* The message of seq being put together, or NULL. */
struct partial *reasm_find(struct gate *g, uint64_t seq);
/* The first part of a message arrived (rec): its entry, staged unless
 * req (matched) takes it; NULL when out of memory. */
struct partial *reasm_new(struct gate *g, const struct mrail_wire_rec *rec,
			  struct mrail_request *req);
/* A part of p arrived: checked, then copied to the receive (what fits)
 * or the staging buffer. MRAIL_ERR_PROTO with *why when malformed. */
int reasm_add(struct partial *p, const struct mrail_wire_rec *rec,
	      const char **why);
/* The gate failed: matched receives fail with error, staged bytes are
 * released, everything is freed. */
void reasm_fail_gate(struct mrail_engine *e, struct gate *g, int error);
/* The gate goes away (engine destroy): frees what is left. */
void reasm_free_gate(struct gate *g);

#endif
