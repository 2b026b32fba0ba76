/*
 * The engine's descriptor for event loops (mrail_wait_fd, docs/api.md):
 * one epoll set holding the drivers' wait descriptors, a timerfd for the
 * engine's own timers, and the offload workers' completion descriptor
 * once someone sleeps with offload running. Readable means "call
 * progress": the drivers' descriptors say data came, the timer that a
 * timeout may be due (failure detection, reconnection, handshakes).
 */
#include "libmrail/engine.h"
#include "util/log.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

/* An engine with nothing in flight needs its timers only to reconnect
 * failed rails and to notice a peer gone: once a second is enough. */
#define WAIT_IDLE_PERIOD 1.0

static int add(int epfd, int fd)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

int wait_fd_get(struct mrail_engine *e, int *fd)
{
	ENGINE_ASSERT_LOCKED(e);
	if (e->wait_epfd >= 0) {
		*fd = e->wait_epfd;
		return MRAIL_OK;
	}
	int fds[MRAIL_MAX_DRIVERS];
	unsigned n = drivers_wait_fds(e, fds, MRAIL_MAX_DRIVERS);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	int bad = ep < 0 || tfd < 0 || add(ep, tfd);
	for (unsigned i = 0; i < n && !bad; i++)
		bad = add(ep, fds[i]);
	if (bad) {
		mrail_error("mrail_wait_fd: %s", strerror(errno));
		if (ep >= 0)
			close(ep);
		if (tfd >= 0)
			close(tfd);
		return MRAIL_ERR_IO;
	}
	e->wait_epfd = ep;
	e->wait_tfd = tfd;
	*fd = ep;
	return MRAIL_OK;
}

/* Something a timer watches: requests in flight, connections being
 * made, chunks held for a NIC. */
static int timers_busy(struct mrail_engine *e)
{
	if (!mrail_list_empty(&e->requests) || !mrail_list_empty(&e->handshaking) ||
	    e->pace_held)
		return 1;
	for (uint32_t i = 0; i < e->ngates; i++) {
		const struct gate *g = e->gates[i];
		if (g && g->state == GATE_CONNECTING)
			return 1;
	}
	return 0;
}

int wait_arm(struct mrail_engine *e)
{
	ENGINE_ASSERT_LOCKED(e);
	uint64_t n;
	if (drivers_trywait(e))
		return MRAIL_ERR_AGAIN;
	/* What woke the last sleep is spent. */
	if (read(e->wait_tfd, &n, sizeof n) < 0 && errno != EAGAIN)
		mrail_debug("mrail_wait_prepare: timer: %s", strerror(errno));
	double now = mrail_now();
	e->idle_unclocked = UINT_MAX / 2; /* after the sleep: timers due */
	double t = timers_busy(e) ? e->failover_next_tick - now
				  : WAIT_IDLE_PERIOD;
	if (t < 1e-3)
		t = 1e-3;
	struct itimerspec its = {
		.it_value = {(time_t)t, (long)((t - (double)(time_t)t) * 1e9)}};
	if (timerfd_settime(e->wait_tfd, 0, &its, NULL)) {
		mrail_error("mrail_wait_prepare: timerfd_settime: %s",
			    strerror(errno));
		return MRAIL_ERR_IO;
	}
	/* Offload workers complete sends without any driver descriptor
	 * waking: they signal theirs while someone sleeps. */
	struct offload *o = e->offload;
	if (o && !e->wait_offload) {
		int ofd = offload_sleep_begin(o);
		if (ofd >= 0) {
			e->wait_offload = 1;
			if (!e->wait_ofd && add(e->wait_epfd, ofd) == 0)
				e->wait_ofd = 1;
		}
	}
	return MRAIL_OK;
}

void wait_fd_close(struct mrail_engine *e)
{
	if (e->wait_offload && e->offload)
		offload_sleep_end(e->offload);
	e->wait_offload = 0;
	if (e->wait_epfd >= 0)
		close(e->wait_epfd);
	if (e->wait_tfd >= 0)
		close(e->wait_tfd);
	e->wait_epfd = e->wait_tfd = -1;
}
