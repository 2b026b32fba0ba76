/* Progress: drivers, deferred scheduling, timeouts, the progress thread. */
#include "libmrail/engine.h"
#include "util/clock.h"
#include "util/log.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <stdlib.h>
#include <unistd.h>

/* Copies were taken by their receivers: sends waiting for room get it
 * (send.c), here where no list of the engine is being walked. */
static void detach_pending(struct mrail_engine *e)
{
	uint32_t n;
	struct gate **gates = gate_active(e, &n);
	int all = e->detach_starved; /* room under the engine's cap */
	e->detach_retry = e->detach_starved = 0;
	for (uint32_t i = 0; i < n; i++)
		if (gates[i] && (gates[i]->detach_retry ||
				 (all && !mrail_list_empty(&gates[i]->rdv))))
			send_detach_waiting(e, gates[i]);
}

/* Idle passes between two looks at the timers' clock (engine_progress). */
#define IDLE_CLOCK_PASSES 8

int engine_progress(struct mrail_engine *e)
{
	ENGINE_ASSERT_LOCKED(e);
	uint64_t pass = ++e->progress_calls;
	engine_clock_tick(e);
	burst_progress(e);
	if (e->wait_offload) { /* a sleep on mrail_wait_fd ended */
		offload_sleep_end(e->offload);
		e->wait_offload = 0;
	}
	int events = drivers_progress(e, pass);
	if (!mrail_list_empty(&e->pulls_done))
		pulls_finish(e);
	if (e->detach_retry)
		detach_pending(e);
	if (!mrail_list_empty(&e->sched_gates))
		schedule_pending(e);
	if ((pass & 1023) == 0)
		handshake_expire(e);
	/* Timers read the clock: every IDLE_CLOCK_PASSES-th idle pass (or
	 * at once after a sleep), every 64th busy one, or when this pass
	 * read it anyway. Reading it on every idle pass was a third of a
	 * polling MPI rank's samples (clock_gettime, 36 ns on a KVM guest),
	 * and 2 % of an 8 B ping-pong's time (docs/driver-shm.md). The
	 * timers' period is 5 ms; 8 idle passes of a polling caller are
	 * microseconds. (The coarse clock was tried for
	 * this check and taken back: the progress-thread test failed under
	 * TSan with it, though on a machine so loaded that it also failed
	 * without it, once in four; docs/mpi-ompi.md "budget".) */
	int timers = e->now_valid ||
		     (events ? (pass & 63) == 0
			     : ++e->idle_unclocked >= IDLE_CLOCK_PASSES);
	if (timers && engine_now(e) >= e->failover_next_tick) {
		failover_tick(e);
		packet_trim(e);
	}
	/* Held chunks wait for the kernel to send what it has (pace.c). */
	if (e->pace_held)
		pace_tick(e, engine_now(e));
	return events;
}

static void idle_wait(struct mrail_engine *e, int extra_fd, int timeout_ms,
		      bool unlock)
{
	ENGINE_ASSERT_LOCKED(e);
	if (drivers_trywait(e))
		return;
	struct pollfd p[MRAIL_MAX_DRIVERS + 2];
	int fds[MRAIL_MAX_DRIVERS];
	unsigned n = drivers_wait_fds(e, fds, MRAIL_MAX_DRIVERS);
	for (unsigned i = 0; i < n; i++)
		p[i] = (struct pollfd){fds[i], POLLIN, 0};
	if (extra_fd >= 0)
		p[n++] = (struct pollfd){extra_fd, POLLIN, 0};
	/* Offload workers complete sends without any fd becoming ready. */
	struct offload *o = e->offload;
	int ofd = o ? offload_sleep_begin(o) : -1;
	if (ofd >= 0)
		p[n++] = (struct pollfd){ofd, POLLIN, 0};
	if (unlock)
		engine_unlock(e);
	if (n > 0)
		poll(p, n, timeout_ms);
	if (ofd >= 0)
		offload_sleep_end(o);
	if (unlock)
		engine_lock(e);
	/* Under the lock again: another thread may progress meanwhile. */
	e->idle_unclocked = UINT_MAX / 2; /* slept: timers are due */
}

void engine_idle_wait(struct mrail_engine *e, int timeout_ms)
{
	idle_wait(e, -1, timeout_ms, false);
}

void engine_idle_wait_fd(struct mrail_engine *e, int extra_fd, int timeout_ms)
{
	idle_wait(e, extra_fd, timeout_ms, false);
}

void engine_idle_sleep(struct mrail_engine *e, int timeout_ms)
{
	engine_lock(e);
	idle_wait(e, -1, timeout_ms, true);
	engine_unlock(e);
}

void engine_set_idle_wait(struct mrail_engine *e, uint32_t local_ranks)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	e->idle_wait_max_ms = 1;
	/* Only where nothing but a socket completes our requests: another
	 * engine thread (progress thread, offload workers) does not wake
	 * the waiting one, which then notices at the end of its sleep. */
	if (cores > 0 && local_ranks > 4 * (uint32_t)cores &&
	    !e->cfg.progress_thread && !getenv("MRAIL_OFFLOAD_CORES"))
		e->idle_wait_max_ms = 32;
}

static void *progress_main(void *arg)
{
	struct mrail_engine *e = arg;
	struct pollfd p[MRAIL_MAX_DRIVERS + 1];
	int fds[MRAIL_MAX_DRIVERS];
	unsigned n = drivers_wait_fds(e, fds, MRAIL_MAX_DRIVERS);
	p[0] = (struct pollfd){e->wake_fd, POLLIN, 0};
	for (unsigned i = 0; i < n; i++)
		p[i + 1] = (struct pollfd){fds[i], POLLIN, 0};
	threads_progress_thread(e);
	/* This loop takes the engine lock itself, as only api*.c and
	 * callback running otherwise do: the thread enters the engine on
	 * its own, like an application thread calling the API. */
	for (;;) {
		engine_lock(e);
		int stop = e->progress_thread_stop;
		int events = stop ? 0 : engine_progress(e);
		if (!stop && events == 0 && drivers_trywait(e))
			events = 1;
		engine_unlock(e);
		if (stop)
			break;
		/* Only sleep once quiet: completions of sends that left
		 * inside send() do not wake the fd. The lock is released
		 * between rounds so application threads get in. */
		if (events > 0)
			continue;
		/* Sleep in the kernel until a socket is ready; the timeout
		 * bounds how late handshake deadlines are noticed. */
		poll(p, n + 1, 100);
	}
	return NULL;
}

int progress_thread_start(struct mrail_engine *e)
{
	e->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (e->wake_fd < 0) {
		mrail_error("progress thread: eventfd: %s", strerror(errno));
		return MRAIL_ERR_IO;
	}
	int rc = pthread_create(&e->progress_thread, NULL, progress_main, e);
	if (rc) {
		mrail_error("progress thread: pthread_create: %s", strerror(rc));
		close(e->wake_fd);
		e->wake_fd = -1;
		return MRAIL_ERR_IO;
	}
	e->progress_thread_running = 1;
	return MRAIL_OK;
}

void progress_thread_ask_stop(struct mrail_engine *e)
{
	ENGINE_ASSERT_LOCKED(e);
	if (e->progress_thread_running)
		e->progress_thread_stop = 1;
}

void progress_thread_join(struct mrail_engine *e)
{
	uint64_t one = 1;
	if (!e->progress_thread_running)
		return;
	if (write(e->wake_fd, &one, sizeof one) < 0)
		mrail_debug("progress thread wake-up: %s", strerror(errno));
	pthread_join(e->progress_thread, NULL);
	close(e->wake_fd);
	e->wake_fd = -1;
	e->progress_thread_running = 0;
}
