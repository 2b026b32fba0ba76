/*
 * Fake driver: a real transport between processes of one host for tests
 * (AF_UNIX seqpacket frames, process_vm_readv/writev for get/put), with a
 * latency/bandwidth model and fault injection. This file holds the
 * instance, rails, listeners, connection set-up and teardown, the link
 * model and the progress loop; frames are in fake_frame.c, RMA in
 * fake_rma.c, knobs in fake_params.c. See docs/driver-fake.md.
 *
 * Lifetime rule (as in the TCP driver): ep_close() during progress parks
 * the endpoint on drv->zombies, freed when the outermost progress returns,
 * so code that made an upcall may still look at ep->dc.state afterwards.
 */
#include "drivers/fake/fake_internal.h"
#include "util/clock.h"
#include "util/log.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

static atomic_uint name_counter;

/* ---- endpoint bookkeeping ---------------------------------------------- */

static void fake_attend(struct dc_ep *dc);
static void fake_ep_events(struct dc_ep *dc, uint32_t events);
static void fake_timer_events(struct dc_drv *dc, struct dc_pollable *obj,
			      uint32_t events);
static struct dc_ep *fake_accept(struct dc_drv *dc, struct dc_listener *l,
				 int fd);

/* Address blob "MRFA": the listener's abstract socket name without its
 * leading NUL (docs/driver-fake.md). */
static const struct dc_blob_format blob_format = {
	.magic = "MRFA", .version = FAKE_BLOB_VERSION,
	.max_payload = FAKE_SOCK_NAME_MAX, .max_rails = FAKE_MAX_RAILS,
	.a_driver = "a fake", .payload_what = "name"};

static struct mrail_drv_ep *ep_new(struct mrail_drv *drv, int fd, int rail,
				   enum dc_ep_state state, void *ctx)
{
	struct mrail_drv_ep *ep = calloc(1, sizeof *ep);
	if (!ep)
		return NULL;
	ep->rail = rail;
	dc_ep_add(&drv->dc, &ep->dc, fd, state, ctx);
	return ep;
}

static void ep_free(struct dc_ep *dc)
{
	struct mrail_drv_ep *ep = (struct mrail_drv_ep *)dc;

	free(ep->head_buf);
	free(ep);
}

/* Attention is handled by progress: make wait_fd say so. */
static void wake(struct dc_drv *dc)
{
	fake_timer_want((struct mrail_drv *)dc, mrail_now());
}

static uint32_t ep_wanted_events(const struct dc_ep *dc)
{
	const struct mrail_drv_ep *ep = (const struct mrail_drv_ep *)dc;

	if (dc->state != DC_EP_CONNECTED)
		return 0;
	return EPOLLIN | (ep->want_out ? EPOLLOUT : 0);
}

/* The peer must see the failure too (and we stop reading). */
static void ep_stop(struct dc_ep *dc)
{
	shutdown(dc->poll.fd, SHUT_RDWR);
}

static void ep_fail_ops(struct dc_ep *dc, int status)
{
	fake_rma_fail_of((struct mrail_drv_ep *)dc, status);
}

static void ep_drop_ops(struct dc_ep *dc)
{
	fake_rma_drop_of((struct mrail_drv_ep *)dc);
}

static const struct dc_hooks fake_hooks = {
	.name = "fake",
	.ep_free = ep_free,
	.ep_attend = fake_attend,
	.wake = wake,
	.ep_stop = ep_stop,
	.ep_fail_ops = ep_fail_ops,
	.ep_drop_ops = ep_drop_ops,
	.ep_wanted_events = ep_wanted_events,
	.ep_events = fake_ep_events,
	.ep_accept = fake_accept,
	.other_events = fake_timer_events,
};

/* ---- timer: wakes wait_fd when delayed work falls due ------------------ */

void fake_timer_want(struct mrail_drv *drv, double due)
{
	struct itimerspec its = {0};

	if (drv->timer_due > 0 && drv->timer_due <= due)
		return;
	if (due < 1e-9)
		due = 1e-9; /* 0 would disarm */
	its.it_value.tv_sec = (time_t)due;
	its.it_value.tv_nsec = (long)((due - (double)its.it_value.tv_sec) * 1e9);
	if (timerfd_settime(drv->timer.fd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		mrail_error("fake: timerfd_settime: %s", strerror(errno));
	drv->timer_due = due;
}

static void timer_disarm(struct mrail_drv *drv)
{
	struct itimerspec its = {0};

	if (drv->timer_due == 0)
		return;
	timerfd_settime(drv->timer.fd, TFD_TIMER_ABSTIME, &its, NULL);
	drv->timer_due = 0;
}

/* ---- link model -------------------------------------------------------- */

bool fake_rail_faulty(const struct mrail_drv *drv, int rail)
{
	return drv->par.fail_rail < 0 || drv->par.fail_rail == rail;
}

bool fake_rail_out(const struct mrail_drv *drv, int rail)
{
	if (drv->par.outage <= 0 || !fake_rail_faulty(drv, rail))
		return false;
	double t = mrail_now() - drv->opened_at;
	return t >= drv->par.outage_at && t < drv->par.outage_at +
						      drv->par.outage;
}

double fake_link_due(struct mrail_drv *drv, int rail, uint64_t bytes)
{
	double bw = drv->par.bw[rail], lat = drv->par.lat[rail];
	double now, start;

	if (bw <= 0 && lat <= 0)
		return 0; /* no model: as soon as possible */
	now = mrail_now();
	start = drv->link_busy[rail] > now ? drv->link_busy[rail] : now;
	drv->link_busy[rail] = start + (bw > 0 ? (double)bytes / bw : 0);
	return drv->link_busy[rail] + lat;
}

/* ---- instance ---------------------------------------------------------- */

static int fake_open(const struct mrail_drv_open_args *args,
		     struct mrail_drv **out)
{
	struct mrail_drv *drv;
	struct epoll_event ev;
	const char *params;
	int rc;

	if (!args || !args->upcalls || !out)
		return MRAIL_ERR_INVALID;
	drv = calloc(1, sizeof *drv);
	if (!drv)
		return MRAIL_ERR_NOMEM;
	params = args->params && *args->params ? args->params
					       : getenv("MRAIL_FAKE_PARAMS");
	rc = fake_params_parse(params, &drv->par);
	drv->opened_at = mrail_now();
	if (rc == 0)
		rc = fake_rma_check_permission();
	if (rc < 0) {
		free(drv);
		return rc;
	}
	dc_drv_init(&drv->dc, &fake_hooks, &mrail_fake_driver_ops, args);
	drv->timer.kind = DC_OBJ_OTHER;
	drv->timer.fd = timerfd_create(CLOCK_MONOTONIC,
				       TFD_NONBLOCK | TFD_CLOEXEC);
	ev.events = EPOLLIN;
	ev.data.ptr = &drv->timer;
	if (dc_epoll_open(&drv->dc) < 0) {
		rc = MRAIL_ERR_IO;
	} else if (drv->timer.fd < 0 ||
		   epoll_ctl(drv->dc.epfd, EPOLL_CTL_ADD, drv->timer.fd, &ev) <
			   0) {
		mrail_error("fake: timerfd set-up: %s", strerror(errno));
		rc = MRAIL_ERR_IO;
	} else {
		rc = fake_rma_init(drv);
	}
	if (rc < 0) {
		dc_drv_fini(&drv->dc);
		if (drv->timer.fd >= 0)
			close(drv->timer.fd);
		free(drv);
		return rc;
	}
	*out = drv;
	return 0;
}

static void fake_close(struct mrail_drv *drv)
{
	if (!drv)
		return;
	dc_drv_fini(&drv->dc);
	fake_rma_fini(drv);
	close(drv->timer.fd);
	free(drv);
}

static void fake_query_caps(struct mrail_drv *drv, struct mrail_drv_caps *caps)
{
	double bw = 0, lat = 0;

	/* Per instance: the slowest rail's figures. */
	for (int i = 0; drv && i < drv->par.rails; i++) {
		if (drv->par.bw[i] > 0 && (bw == 0 || drv->par.bw[i] < bw))
			bw = drv->par.bw[i];
		if (drv->par.lat[i] > lat)
			lat = drv->par.lat[i];
	}
	memset(caps, 0, sizeof *caps);
	caps->max_head = FAKE_MAX_HEAD;
	caps->max_body = FAKE_MAX_BODY;
	caps->max_body_iov = FAKE_MAX_BODY_IOV;
	caps->eager_max_hint = FAKE_EAGER_MAX_HINT;
	caps->flags = MRAIL_DRV_CAP_RECV_INTO_USER | MRAIL_DRV_CAP_RDMA_READ |
		      MRAIL_DRV_CAP_RDMA_WRITE | MRAIL_DRV_CAP_NEEDS_REG;
	caps->nominal_bandwidth = bw;
	caps->nominal_latency = lat;
	caps->max_rma = FAKE_MAX_RMA;
}

static int fake_list_rails(struct mrail_drv *drv,
			   struct mrail_drv_rail_desc *out, int max)
{
	int n = 0;

	if (!drv || (max > 0 && !out))
		return MRAIL_ERR_INVALID;
	for (; n < drv->par.rails && n < max; n++) {
		struct mrail_drv_rail_desc *d = &out[n];
		memset(d, 0, sizeof *d);
		snprintf(d->name, sizeof d->name, "fake%d", n);
		snprintf(d->fabric, sizeof d->fabric, "fake");
		snprintf(d->listen, sizeof d->listen, "fake%d", n);
		d->scope = MRAIL_DRV_SCOPE_HOST;
		d->numa_node = -1;
		d->nominal_bandwidth = drv->par.bw[n];
		d->nominal_latency = drv->par.lat[n];
	}
	return n;
}

static int fake_wait_fd(struct mrail_drv *drv)
{
	return drv ? drv->dc.epfd : -1;
}

void mrail_fake_counters(struct mrail_drv *drv, struct mrail_fake_counters *out)
{
	if (drv && out)
		*out = drv->cnt;
}

/* ---- sockets and addresses --------------------------------------------- */

/*
 * The largest frame must fit one message: the kernel refuses messages
 * above the send buffer (less 32 bytes), and net.core.wmem_max caps what
 * we may ask for. Its default (208 KiB, doubled by the kernel) is enough.
 */
static int size_socket(int fd)
{
	const int need = (int)(FAKE_FRAME_HDR_LEN + FAKE_MAX_HEAD +
			       FAKE_MAX_BODY + 32);
	int size = FAKE_SOCKBUF, got = 0;
	socklen_t len = sizeof got;

	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
	if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &got, &len) == 0 &&
	    got < need) {
		mrail_error("fake: socket send buffer is %d bytes, a frame "
			    "needs %d (raise net.core.wmem_max)",
			    got, need);
		return -1;
	}
	return 0;
}

static int new_socket(void)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC,
			0);

	if (fd < 0) {
		mrail_error("fake: socket(AF_UNIX, SOCK_SEQPACKET): %s",
			    strerror(errno));
		return -1;
	}
	if (size_socket(fd) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static socklen_t abstract_addr(struct sockaddr_un *sun, const char *name,
			       size_t len)
{
	memset(sun, 0, sizeof *sun);
	sun->sun_family = AF_UNIX;
	memcpy(sun->sun_path + 1, name, len);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
}

static int rail_of(const struct mrail_drv *drv, const char *local)
{
	int r;
	char *end;

	if (!local || !*local)
		return 0;
	if (strncmp(local, "fake", 4) != 0)
		return -1;
	r = (int)strtol(local + 4, &end, 10);
	if (end == local + 4 || *end || r < 0 || r >= drv->par.rails)
		return -1;
	return r;
}

static pid_t peer_pid_of(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof cred;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return 0;
	return cred.pid;
}

/* ---- listeners --------------------------------------------------------- */

static int fake_listen(struct mrail_drv *drv, const char *local, void *addr,
		       size_t *addr_len, char *name, size_t name_len)
{
	struct sockaddr_un sun;
	struct fake_listener *l;
	char path[FAKE_SOCK_NAME_MAX + 1];
	int rail, fd, plen, rc;

	if (!drv || !addr || !addr_len)
		return MRAIL_ERR_INVALID;
	rail = rail_of(drv, local);
	if (rail < 0) {
		mrail_error("fake: cannot listen on '%s': not a rail of this "
			    "instance (fake0..fake%d)",
			    local, drv->par.rails - 1);
		return MRAIL_ERR_NOT_FOUND;
	}
	plen = snprintf(path, sizeof path, "mrail-fake.%d.%d.%u", (int)getpid(),
			rail, atomic_fetch_add(&name_counter, 1));
	if (*addr_len < DC_BLOB_HDR_LEN + (size_t)plen)
		return dc_blob_encode(&drv->dc, &blob_format, rail, path,
				      (size_t)plen, addr, addr_len); /* sizes */
	fd = new_socket();
	if (fd < 0)
		return MRAIL_ERR_IO;
	if (bind(fd, (struct sockaddr *)&sun,
		 abstract_addr(&sun, path, (size_t)plen)) < 0 ||
	    listen(fd, SOMAXCONN) < 0) {
		mrail_error("fake: cannot listen on @%s: %s", path,
			    strerror(errno));
		close(fd);
		return MRAIL_ERR_IO;
	}
	l = calloc(1, sizeof *l);
	if (!l) {
		close(fd);
		return MRAIL_ERR_NOMEM;
	}
	l->dc.poll.fd = fd;
	l->rail = rail;
	snprintf(l->dc.name, sizeof l->dc.name, "fake%d@%s", rail, path);
	rc = dc_listener_add(&drv->dc, &l->dc);
	if (rc < 0) {
		free(l);
		close(fd);
		return rc;
	}

	dc_blob_encode(&drv->dc, &blob_format, rail, path, (size_t)plen, addr,
		       addr_len); /* fits: checked above */
	if (name && name_len)
		snprintf(name, name_len, "%s", l->dc.name);
	mrail_debug("fake: listening on %s", l->dc.name);
	return rc;
}

static struct dc_ep *fake_accept(struct dc_drv *dc, struct dc_listener *dl,
				 int fd)
{
	struct fake_listener *l = (struct fake_listener *)dl;
	struct mrail_drv_ep *ep;

	if (size_socket(fd) < 0) {
		close(fd);
		return NULL;
	}
	ep = ep_new((struct mrail_drv *)dc, fd, l->rail, DC_EP_CONNECTED, NULL);
	if (!ep) {
		mrail_error("fake: out of memory accepting a connection");
		close(fd);
		return NULL;
	}
	ep->peer_pid = peer_pid_of(fd);
	snprintf(ep->dc.local_name, sizeof ep->dc.local_name, "%s", l->dc.name);
	snprintf(ep->dc.remote_name, sizeof ep->dc.remote_name, "pid %d",
		 (int)ep->peer_pid);
	dc_ep_update_events(&ep->dc);
	return &ep->dc;
}

/* ---- outgoing connections ---------------------------------------------- */

static int blob_decode(struct mrail_drv *drv, const void *addr, size_t len,
		       int *rail, struct sockaddr_un_blob *out)
{
	const uint8_t *name;
	size_t name_len;
	int rc = dc_blob_decode(&drv->dc, &blob_format, addr, len, rail, &name,
				&name_len);

	if (rc < 0)
		return rc;
	memcpy(out->path, name, name_len);
	out->path[name_len] = 0;
	out->len = name_len;
	return 0;
}

/* Try connect(); errors (and a full backlog) are handled by progress. */
static void try_connect(struct mrail_drv_ep *ep)
{
	struct sockaddr_un sun;
	socklen_t sl = abstract_addr(&sun, ep->remote_addr.path,
				     ep->remote_addr.len);

	if (connect(ep->dc.poll.fd, (struct sockaddr *)&sun, sl) == 0)
		ep->dc.connect_errno = 0;
	else
		ep->dc.connect_errno = errno == EINTR ? EAGAIN : errno;
	dc_ep_need_attention(&ep->dc);
}

static int fake_connect(struct mrail_drv *drv, const char *local,
			const void *addr, size_t addr_len, void *ep_ctx,
			struct mrail_drv_ep **out)
{
	struct sockaddr_un_blob remote;
	struct mrail_drv_ep *ep;
	int rail, blob_rail, fd, rc;

	if (!drv || !out)
		return MRAIL_ERR_INVALID;
	rc = blob_decode(drv, addr, addr_len, &blob_rail, &remote);
	if (rc < 0)
		return rc;
	/* The modelled link is our rail: the local one if named. */
	rail = local && *local ? rail_of(drv, local)
			       : (blob_rail < drv->par.rails ? blob_rail : 0);
	if (rail < 0) {
		mrail_error("fake: cannot connect from '%s': not a rail of "
			    "this instance (fake0..fake%d)",
			    local, drv->par.rails - 1);
		return MRAIL_ERR_NOT_FOUND;
	}
	/* A link that is down: no route, as connect(2) says it. */
	if (fake_rail_out(drv, rail)) {
		mrail_debug("fake: connect on rail %d refused: outage", rail);
		return MRAIL_ERR_IO;
	}
	fd = new_socket();
	if (fd < 0)
		return MRAIL_ERR_IO;
	ep = ep_new(drv, fd, rail, DC_EP_CONNECTING, ep_ctx);
	if (!ep) {
		close(fd);
		return MRAIL_ERR_NOMEM;
	}
	ep->remote_addr = remote;
	snprintf(ep->dc.local_name, sizeof ep->dc.local_name, "fake%d@pid %d", rail,
		 (int)getpid());
	snprintf(ep->dc.remote_name, sizeof ep->dc.remote_name, "@%s", remote.path);
	try_connect(ep);
	*out = ep;
	return 0;
}

static void finish_connect(struct mrail_drv_ep *ep)
{
	struct mrail_drv *drv = fake_drv(ep);

	if (ep->dc.connect_errno == EAGAIN) {
		/* The listener's backlog is full: progress retries (not
		 * from here, which would loop inside this progress call). */
		fake_timer_want(drv, mrail_now() + 1e-3);
		return;
	}
	if (ep->dc.connect_errno) {
		dc_ep_connect_failed(&ep->dc, ep->dc.connect_errno);
		return;
	}
	ep->dc.state = DC_EP_CONNECTED;
	ep->peer_pid = peer_pid_of(ep->dc.poll.fd);
	mrail_debug("fake: connected %s -> %s (pid %d)", ep->dc.local_name,
		    ep->dc.remote_name, (int)ep->peer_pid);
	dc_ep_update_events(&ep->dc);
	drv->dc.base.up->connected(ep->dc.ctx, 0);
}

/* ---- endpoint operations ----------------------------------------------- */

static void fake_ep_query(struct mrail_drv_ep *ep,
			  struct mrail_drv_ep_info *info)
{
	if (!info)
		return;
	memset(info, 0, sizeof *info); /* ss_family 0: not IP */
	info->fd = ep && ep->dc.state != DC_EP_CLOSED ? ep->dc.poll.fd : -1;
}

/* ---- progress ---------------------------------------------------------- */

static void flush_or_fail(struct mrail_drv_ep *ep, double now, double *next)
{
	int rc = fake_flush(ep, now, next);

	if (rc < 0)
		fake_ep_fail(ep, MRAIL_ERR_PEER, false, "send to %s failed: %s",
			     ep->dc.remote_name, strerror(-rc));
}

static void fake_attend(struct dc_ep *dc)
{
	struct mrail_drv_ep *ep = (struct mrail_drv_ep *)dc;

	if (dc->state == DC_EP_CONNECTING)
		finish_connect(ep);
	else if (dc->state == DC_EP_CONNECTED && ep->drop_injected)
		fake_ep_fail(ep, MRAIL_ERR_IO, true,
			     "fault injected: connection to %s dropped "
			     "after %lld frames (drop_after)",
			     dc->remote_name,
			     (long long)fake_drv(ep)->par.drop_after);
	else if (dc->state == DC_EP_CONNECTED && dc->send_errno)
		fake_ep_fail(ep, MRAIL_ERR_PEER, false, "send to %s failed: %s",
			     dc->remote_name, strerror(dc->send_errno));
}

static void fake_timer_events(struct dc_drv *dc, struct dc_pollable *obj,
			      uint32_t events)
{
	uint64_t ticks;

	(void)events;
	if (read(obj->fd, &ticks, sizeof ticks) < 0 && errno != EAGAIN)
		mrail_debug("fake: timerfd read: %s", strerror(errno));
	((struct mrail_drv *)dc)->timer_due = 0;
}

static void fake_ep_events(struct dc_ep *dc, uint32_t events)
{
	struct mrail_drv_ep *ep = (struct mrail_drv_ep *)dc;

	if (dc->state != DC_EP_CONNECTED)
		return;
	if (events & EPOLLOUT)
		ep->want_out = false; /* flushed below */
	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
		fake_rx_process(ep);
}

/* Due frames of every endpoint; returns the earliest waiting time. */
static double flush_all(struct mrail_drv *drv, double now)
{
	double next = INFINITY;
	struct mrail_list *pos, *tmp;

	dc_foreach_ep(pos, tmp, &drv->dc) {
		struct mrail_drv_ep *ep =
			(struct mrail_drv_ep *)dc_ep_entry(pos);
		if (ep->dc.state == DC_EP_CONNECTED && ep->dc.sq_head &&
		    !ep->want_out)
			flush_or_fail(ep, now, &next);
		else if (ep->dc.state == DC_EP_CONNECTING &&
			 ep->dc.connect_errno == EAGAIN && !ep->dc.needs_attention)
			try_connect(ep); /* answered by the next progress */
	}
	return next;
}

static int fake_progress(struct mrail_drv *drv)
{
	double now, next, rma_next = INFINITY;
	int n;

	/* An upcall that calls progress again would re-enter a receive in
	 * the middle of a frame: refuse. */
	if (!drv || !dc_progress_enter(&drv->dc))
		return 0;
	n = drv->dc.attention ? dc_attend(&drv->dc) : 0;
	n += dc_epoll_dispatch(&drv->dc);
	now = mrail_now();
	next = flush_all(drv, now);
	n += fake_rma_progress(drv, now, &rma_next);
	n += dc_run_completions(&drv->dc);
	if (rma_next < next)
		next = rma_next;
	if (drv->dc.attention || drv->dc.done_count)
		next = now; /* more to do at once */
	if (isinf(next))
		timer_disarm(drv);
	else if (drv->timer_due == 0 || next < drv->timer_due)
		fake_timer_want(drv, next);
	dc_progress_leave(&drv->dc);
	return n;
}

const struct mrail_drv_ops mrail_fake_driver_ops = {
	.name = "fake",
	.abi_version = MRAIL_DRV_ABI_VERSION,
	.open = fake_open,
	.close = fake_close,
	.query_caps = fake_query_caps,
	.listen = fake_listen,
	.connect = fake_connect,
	.ep_set_ctx = dc_op_ep_set_ctx,
	.send = fake_send,
	.inject = fake_inject,
	.ep_backlog = dc_op_ep_backlog,
	.progress = fake_progress,
	.wait_fd = fake_wait_fd,
	.ep_names = dc_op_ep_names,
	.ep_close = dc_op_ep_close,
	.list_rails = fake_list_rails,
	.ep_query = fake_ep_query,
	.rma = &fake_rma_ops,
};
