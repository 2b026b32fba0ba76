/*
 * The engine object and everything libmrail/ shares: every internal
 * header (one per object: request.h, gate.h, rail.h, busy.h, drivers.h,
 * address.h, recv.h, rdv.h, rma.h, threads.h) comes in through this one.
 * Every function declared in them expects the engine lock to be held
 * unless it says otherwise; only api*.c take it (threads.h).
 *
 * Path of one message (read the files in this order; docs/architecture.md
 * has the whole map):
 *   api_msg.c   isend/irecv: arguments checked, lock taken.
 *   send.c      the request joins its gate's send queue; the strategy
 *               picks an idle rail; eager messages are packed
 *               (aggregated) into a packet, large ones become an RTS record.
 *   rail.c      packets and chunks posted on a rail's driver endpoint.
 *   recv.c      a packet arrives: records are put back in send order per
 *               gate, then matched against posted receives or kept as
 *               unexpected.
 *   rdv.c       a matched RTS: the strategy splits the payload into chunks
 *               (rail, offset, length); RTR per chunk; the sender answers
 *               with DATA frames whose body lands in the user buffer.
 *   rma.c       the same chunks read or written by RDMA on rails that can.
 *   request.c   completion; api_completion.c: test/wait.
 */
#ifndef MRAIL_ENGINE_H
#define MRAIL_ENGINE_H

#include <pthread.h>
#include <stdint.h>

#include "mrail.h"
#include "drivers/driver.h"
#include "strategies/strategy.h"
#include "util/auth.h"
#include "util/list.h"
#include "libmrail/wire.h"
#include "rails/netif.h"
#include "util/clock.h"
#include "util/iov.h"

/* Each object in its own header. */
#include "libmrail/threads.h"
#include "libmrail/request.h"
#include "libmrail/drivers.h"
#include "libmrail/rma.h"
#include "libmrail/rail.h"
#include "libmrail/busy.h"
#include "libmrail/pace.h"
#include "libmrail/burst.h"
#include "libmrail/trace.h"
#include "libmrail/address.h"
#include "libmrail/gate.h"
#include "libmrail/recv.h"
#include "libmrail/credits.h"
#include "libmrail/rdv.h"
#include "libmrail/failover.h"
#include "libmrail/offload/offload.h"

#include <stdio.h>

/*
 * A switch over an engine state (request phase, rail or gate state, op or
 * message kind, rendezvous protocol) names every value, so adding one
 * shows every place to decide. As a pragma because libmrail/ shares one
 * build target with the other folders: this covers every file that
 * includes engine.h.
 */
#pragma GCC diagnostic error "-Wswitch-enum"

#define MRAIL_EAGER_MAX_LIMIT (1u << 20)
#define MRAIL_EAGER_MAX_DEFAULT 32768

/* ---- the engine ------------------------------------------------------- */
struct handle_slot {
	struct mrail_request *req;
	uint32_t gen;
};

struct mrail_engine {
	pthread_mutex_t lock;
	struct mrail_config cfg;
	char *cfg_strings[6];

	uint64_t uuid;
	uint32_t rank, size;
	/* How the job names this process (logs, traces, dumps): rank and
	 * size when bootstrapped, else what the binding gave with
	 * mrail_set_job_rank() (0 of 1 by default). */
	uint32_t job_rank, job_size;
	int bootstrapped;
	int lazy_connect;              /* gates connect at first use */
	int idle_wait_max_ms;          /* longest wait sleep (progress.c) */
	/* In-band models by local interface (inband.c): rails that come up
	 * later (lazy connection) take them too. */
	int inband_role;               /* enum inband_role */
	int inband_serve_last;         /* rank 0, odd size: sample the last */
	unsigned ninband;
	struct inband_model {
		char local_if[16];
		double latency, bandwidth;
	} inband[MRAIL_MAX_RAILS];

	uint64_t host_id;              /* same host <=> same id (netns too) */
	uint32_t host_peers;           /* peers added with our host_id */
	long host_cores;               /* CPUs online on this host */
	int eager_auto;                /* profiles may set the threshold */
	unsigned nlocal;               /* endpoints: loopback ones first */
	struct local_rail local[MRAIL_MAX_RAILS];
	unsigned nnetif;               /* interfaces for other hosts */
	struct mrail_netif *netifs;
	unsigned ndup;                 /* addresses held by several hosts */
	struct mrail_netif_addr *dups;
	unsigned ndrv;                 /* driver instances */
	struct drv_instance drivers[MRAIL_MAX_DRIVERS];
	/* The instances a plan uses, polled on every pass (drivers.c). */
	unsigned nplanned;
	struct drv_instance *planned[MRAIL_MAX_DRIVERS];
	size_t max_head;               /* smallest over the instances */
	enum rdv_protocol rdv_protocol; /* MRAIL_RDV */

	const struct mrail_strategy_ops *strategy;
	void *strategy_state;
	void *strategy_dl;             /* dlopen handle of a plugin, or NULL */

	uint32_t ngates, gates_cap;
	struct gate **gates;
	/* Gates connecting or up (not self): the ones the timers visit. A
	 * lazily connected job has thousands of idle gates that have none
	 * to run; visiting them all every tick was O(ranks) per wakeup. */
	struct gate **active;
	uint32_t nactive, active_cap;
	int active_overflow;           /* could not grow it: visit all */
	struct gate **by_uuid;         /* open addressing, cap a power of 2 */
	uint32_t by_uuid_cap;
	struct mrail_list handshaking; /* accepted rails before HELLO */
	struct mrail_list sched_gates; /* gates with queued sends */

	struct mrail_list posted;      /* posted receives, in order */
	struct mrail_list unexpected;  /* unexpected messages, in order */
	struct mrail_list probed;      /* taken by improbe, not yet received */
	/* pull.c: finished pulls (request link), and messages a receive
	 * took while their pull was under way (unexpected link). */
	struct mrail_list pulls_done, pulls_taken;
	/* Freed small unexpected records, kept for the next (recv.c). */
	struct mrail_list unexp_cache;
	unsigned unexp_cached;
	void *pull_bufs;               /* recycled pull buffers (pull.c) */
	unsigned pulls;                /* pulls under way */
	unsigned pull_bufs_kept;
	struct mrail_list requests;    /* every live request (all_link) */
	struct mrail_list cbq;         /* complete, callback due (link) */

	struct handle_slot *handles;   /* rendezvous ids */
	uint32_t handles_cap, handles_free_hint;

	struct mrail_list free_ops;    /* recycled packet send_ops */
	unsigned nfree_ops;            /* at most FREE_OPS_MAX (rail.c) */
	size_t packet_cap;

	int progress_thread_running;
	int progress_thread_stop;
	pthread_t progress_thread;
	int wake_fd;

	/* wait.c: mrail_wait_fd's epoll set and its timer (-1 until asked
	 * for); wait_offload: the offload workers were told someone sleeps
	 * (ended by the next progress pass); wait_ofd: their descriptor is
	 * in the set. */
	int wait_epfd, wait_tfd;
	int wait_offload, wait_ofd;

	uint64_t progress_calls;
	double rail_timeout;           /* MRAIL_RAIL_TIMEOUT (failover.c) */
	double failover_next_tick;

	/* Layers above attach state to each connection (mrail_set_rail_hooks). */
	struct mrail_rail_hooks hooks;
	void *hooks_ctx;
	/* libmrail/threads.c. The level is fixed before any other thread can
	 * see the engine; the thread ids are TLS addresses (0: none) read
	 * by other threads only through atomics (debug lock checks). */
	enum mrail_thread_level thread_level;
	uintptr_t lock_owner;          /* thread holding e->lock */
	int lock_elided;               /* release builds: no mutex taken
	                                  (threads_engine_ready) */
	uintptr_t creator;             /* thread that created the engine */
	uintptr_t progress_owner;      /* the progress thread */
	uintptr_t engine_threads[ENGINE_THREADS_MAX]; /* offload workers */

	/* credits.c: sums over the gates of cr_granted and cr_held */
	uint64_t cr_granted, cr_held;
	/* credits.c: the per-gate window, for cr_window_gates gates (a
	 * division per packet otherwise) */
	uint64_t cr_window;
	uint32_t cr_window_gates;
	/* send.c: payload bytes of standard sends completed for their caller
	 * while still waiting here as an RTS (capped by unexpected_max) */
	uint64_t detached_bytes;
	int detach_retry;              /* some gate's detach_retry is set */
	int detach_starved;            /* a send found the engine's cap full */

	/* The engine's clock (engine_now): read at most once per progress
	 * pass and per posting call, when first needed, instead of once per
	 * use on the per-message path (four to five clock_gettime per small
	 * message, 36 ns each on a KVM guest). Under the lock. */
	double now;
	int now_valid;
	/* progress.c: idle passes since the clock was last read. An idle
	 * pass looks at the timers only every IDLE_CLOCK_PASSES-th time. */
	unsigned idle_unclocked;

	/* pace.c: MRAIL_PACE; chunks held on all NICs; the order sends were
	 * first answered in, and those still being answered. */
	int pace;
	unsigned pace_held;
	uint64_t pace_ticket;
	struct pace_pending pace_pending[PACE_PENDING_MAX];
	unsigned pace_npending;
	/* burst.c: MRAIL_SEND_HOLD; quick returns after a post in a row,
	 * and when the last post on a system-call rail was made. */
	int burst_hold;
	unsigned burst_quick;
	int burst_post_pending;
	double burst_post_at;
	/* trace.c: MRAIL_TRACE's file, NULL: off. */
	FILE *trace;
	int trace_headed;              /* its header line is written */

	/* libmrail/offload/: NULL when offload stepped aside. */
	struct offload *offload;
};

/* engine.c: life cycle (the API takes the lock around init and close) */
struct mrail_engine *engine_alloc(void);
int engine_init(struct mrail_engine *e, const struct mrail_config *cfg);
/* Flush, say BYE, wait for the peers' BYEs (bounded by finalize_timeout). */
void engine_close(struct mrail_engine *e);
/* Lock not held; no other thread may use e any more. */
void engine_free(struct mrail_engine *e);

/* config.c */
int config_copy_strings(struct mrail_engine *e, const struct mrail_config *c);
/* An on/off variable (1/yes/on/true, 0/no/off/false): *out untouched if
 * unset; MRAIL_ERR_CONFIG naming `expect` if malformed. */
int config_env_switch(const char *var, const char *expect, int *out);
void config_free_strings(struct mrail_engine *e);

/* progress.c */
int engine_progress(struct mrail_engine *e);
int progress_thread_start(struct mrail_engine *e);
/* Stopping: ask under the lock, then join without it. */
void progress_thread_ask_stop(struct mrail_engine *e);
void progress_thread_join(struct mrail_engine *e);
/* Sleep until a driver has something or timeout_ms passes; lock held
 * (kept during the sleep). Returns at once when a driver's trywait finds
 * work. */
void engine_idle_wait(struct mrail_engine *e, int timeout_ms);
/* The same, also woken by extra_fd readable (-1: none). */
void engine_idle_wait_fd(struct mrail_engine *e, int extra_fd, int timeout_ms);
/* The same for API calls, lock not held: taken to arm the drivers,
 * released for the sleep so that other threads get in. */
void engine_idle_sleep(struct mrail_engine *e, int timeout_ms);
/* How long a waiting call may sleep between progress rounds: 1 ms, more
 * when this host runs more ranks than it has cores (docs/scale.md). */
void engine_set_idle_wait(struct mrail_engine *e, uint32_t local_ranks);

/* dump.c: mrail_engine_dump's text (lock held). */
void engine_dump(struct mrail_engine *e, int fd);

/* wait.c: the descriptor of mrail_wait_fd (created on first use), arming
 * it and the drivers before a sleep (MRAIL_OK: sleep; MRAIL_ERR_AGAIN: a
 * driver has work; the caller made the quiet progress passes), closing
 * it with the engine. */
int wait_fd_get(struct mrail_engine *e, int *fd);
int wait_arm(struct mrail_engine *e);
void wait_fd_close(struct mrail_engine *e);

/*
 * The engine's clock for the per-message paths (busy-until, rail views,
 * watchdog stamps): read when first needed in a progress pass or a
 * posting call, then the same until the next (microseconds old at most).
 * Deadlines that must hold across a wait (connect, finalize) read
 * mrail_now() themselves.
 */
static inline double engine_now(struct mrail_engine *e)
{
	if (!e->now_valid) {
		e->now = mrail_now();
		e->now_valid = 1;
		e->idle_unclocked = 0;
	}
	return e->now;
}

/* The same for a rail; rails made alone (tests/unit/test_busy.c) have no
 * engine and read the clock. */
static inline double rail_now(const struct rail *r)
{
	return r->engine ? engine_now(r->engine) : mrail_now();
}

/* A new pass or call: the next engine_now() reads the clock again. */
static inline void engine_clock_tick(struct mrail_engine *e)
{
	e->now_valid = 0;
}

#endif
