/*
 * TCP driver: instance, listeners, connection set-up and teardown, and the
 * progress loop. Sending is in tcp_send.c, receiving in tcp_recv.c,
 * addresses in tcp_addr.c; docs/driver-tcp.md describes the wire format.
 *
 * Endpoint lifetime, the send queue and completions, epoll and listeners
 * are drivers/common's; this file gives them the TCP parts through
 * tcp_hooks.
 */
#include "drivers/tcp/tcp_internal.h"
#include "util/log.h"
#include "util/params.h"
#include "util/rail_timeout.h"
#include "util/size.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

/* Linux 6.15 (include/uapi/linux/tcp.h); glibc 2.36 does not name it. */
#ifndef TCP_RTO_MAX_MS
#define TCP_RTO_MAX_MS 44
#endif

/* ---- endpoint bookkeeping ---------------------------------------------- */

static void tcp_attend(struct dc_ep *dc);
static void tcp_ep_events(struct dc_ep *dc, uint32_t events);
static struct dc_ep *tcp_accept(struct dc_drv *dc, struct dc_listener *l,
				int fd);

static struct mrail_drv_ep *ep_new(struct mrail_drv *drv, int fd,
				   enum dc_ep_state state, void *ctx)
{
	struct mrail_drv_ep *ep = calloc(1, sizeof *ep);
	if (!ep)
		return NULL;
	dc_ep_add(&drv->dc, &ep->dc, fd, state, ctx);
	drv->neps++;
	return ep;
}

static void ep_free(struct dc_ep *dc)
{
	struct mrail_drv_ep *ep = (struct mrail_drv_ep *)dc;

	tcp_drv(ep)->neps--;
	tcp_rx_free(ep);
	free(ep);
}

static uint32_t ep_wanted_events(const struct dc_ep *ep)
{
	switch (ep->state) {
	case DC_EP_CONNECTING:
		return ep->connect_errno ? 0 : EPOLLOUT;
	case DC_EP_CONNECTED:
		return EPOLLIN | (ep->sq_head ? EPOLLOUT : 0);
	default:
		return 0;
	}
}

static const struct dc_hooks tcp_hooks = {
	.name = "tcp",
	.ep_free = ep_free,
	.ep_attend = tcp_attend,
	.ep_wanted_events = ep_wanted_events,
	.ep_events = tcp_ep_events,
	.ep_accept = tcp_accept,
};

static void ep_flush_or_fail(struct mrail_drv_ep *ep)
{
	int rc = tcp_flush(ep);
	if (rc < 0)
		tcp_ep_fail(ep, tcp_closed_status(-rc), "send to %s failed: %s",
			    ep->dc.remote_name, strerror(-rc));
}

/* ---- socket set-up ----------------------------------------------------- */

static void tune_socket(const struct mrail_drv *drv, int fd)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
		mrail_debug("tcp: TCP_NODELAY: %s", strerror(errno));
	/* Link failure detection (docs/failover.md): data unacknowledged
	 * for user_timeout_ms, or keepalive probes unanswered, reset the
	 * connection, and the engine moves its traffic to other rails. */
	if (drv->user_timeout_ms > 0 &&
	    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &drv->user_timeout_ms,
		       sizeof drv->user_timeout_ms) < 0)
		mrail_debug("tcp: TCP_USER_TIMEOUT: %s", strerror(errno));
	/* A link that comes back is only seen at the next retransmission,
	 * and backoff spaces those up to 120 s apart: after a few 1 s flaps
	 * a rail sat idle for 6-12 s with its data stuck while the engine,
	 * seeing no timeout, kept it (docs/failover.md, "Finding a dead
	 * rail", rounds six to nine). Capped, the connection retries every
	 * rto_max_ms while down: one segment each time. */
	if (drv->rto_max_ms > 0 &&
	    setsockopt(fd, IPPROTO_TCP, TCP_RTO_MAX_MS, &drv->rto_max_ms,
		       sizeof drv->rto_max_ms) < 0)
		mrail_debug("tcp: TCP_RTO_MAX_MS: %s", strerror(errno));
	if (drv->keepalive > 0) {
		int cnt = 3;
		if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one) < 0 ||
		    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &drv->keepalive,
			       sizeof drv->keepalive) < 0 ||
		    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &drv->keepalive,
			       sizeof drv->keepalive) < 0 ||
		    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt) < 0)
			mrail_debug("tcp: keepalive: %s", strerror(errno));
	}
	/* Whatever the socket holds unsent is ahead of the next frame: with
	 * 4 MiB buffers an RTR or a small message posted behind a payload
	 * chunk waited for up to the whole buffer to drain (35 ms at 1
	 * Gbit/s; docs/pacing.md, "Answers behind payload"). The rest of
	 * the payload waits in the engine, which bounds what a driver holds
	 * (pace.c). Sent bytes not yet acknowledged are not limited. */
	if (drv->notsent_lowat > 0 &&
	    setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &drv->notsent_lowat,
		       sizeof drv->notsent_lowat) < 0)
		mrail_debug("tcp: TCP_NOTSENT_LOWAT: %s", strerror(errno));
	if (drv->sockbuf <= 0)
		return;
	/* Best effort: the kernel caps these at net.core.[rw]mem_max. */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &drv->sockbuf,
		       sizeof drv->sockbuf) < 0)
		mrail_debug("tcp: SO_SNDBUF %d: %s", drv->sockbuf,
			    strerror(errno));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &drv->sockbuf,
		       sizeof drv->sockbuf) < 0)
		mrail_debug("tcp: SO_RCVBUF %d: %s", drv->sockbuf,
			    strerror(errno));
}

static int new_socket(const struct mrail_drv *drv, int family)
{
	int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		mrail_error("tcp: socket(): %s", strerror(errno));
		return -1;
	}
	/* Buffer sizes must be set before connect/listen to size the
	 * window scale; accepted sockets inherit the listener's. */
	tune_socket(drv, fd);
	return fd;
}

/*
 * Parameters (docs/driver-tcp.md): MRAIL_DRIVER_PARAMS "tcp:" section,
 * else the MRAIL_TCP_* variables. loopback_rails: rails between processes
 * of this host (1..32, default 1); sockbuf: SO_SNDBUF/SO_RCVBUF bytes
 * (k/m suffix), 0 = kernel autotuning.
 */
static int param_value(const char *key, const char *val, struct mrail_drv *drv)
{
	uint64_t v;
	if (!strcmp(key, "loopback_rails")) {
		char *end;
		errno = 0;
		unsigned long n = strtoul(val, &end, 10);
		if (errno || end == val || *end || n < 1 || n > 32)
			return -1;
		drv->loopback_rails = (unsigned)n;
		drv->loopback_asked = true;
		return 0;
	}
	if (!strcmp(key, "sockbuf")) {
		if (mrail_parse_size(val, &v) || v > (1u << 30))
			return -1;
		drv->sockbuf = (int)v;
		return 0;
	}
	if (!strcmp(key, "notsent_lowat")) {
		if (mrail_parse_size(val, &v) || v > (1u << 30))
			return -1;
		drv->notsent_lowat = (int)v;
		return 0;
	}
	if (!strcmp(key, "rto_max_ms")) {
		char *end;
		errno = 0;
		unsigned long n = strtoul(val, &end, 10);
		/* The kernel's range (1 s .. 120 s), or 0 for its default. */
		if (errno || end == val || *end ||
		    (n != 0 && (n < 1000 || n > 120000)))
			return -1;
		drv->rto_max_ms = (int)n;
		return 0;
	}
	if (!strcmp(key, "user_timeout_ms") || !strcmp(key, "keepalive")) {
		char *end;
		errno = 0;
		unsigned long n = strtoul(val, &end, 10);
		if (errno || end == val || *end || n > 3600000 ||
		    (key[0] == 'k' && n > 32767))
			return -1;
		if (key[0] == 'u')
			drv->user_timeout_ms = (int)n;
		else
			drv->keepalive = (int)n;
		return 0;
	}
	return -2;
}

/* The kernel must give up on a dead link when the engine does
 * (docs/failover.md): without it a connection with data queued retries
 * for ~15 min and keepalive never probes it. A bad MRAIL_RAIL_TIMEOUT
 * fails the engine (failover_init); here it only means the default. */
static int default_user_timeout_ms(void)
{
	double t;
	if (mrail_rail_timeout_env(&t))
		t = MRAIL_RAIL_TIMEOUT_DEFAULT;
	return (int)(t * 1000 + 0.5);
}

static int tcp_params(const char *params, struct mrail_drv *drv)
{
	static const char *const env[][2] = {
		{"MRAIL_TCP_LOOPBACK_RAILS", "loopback_rails"},
		{"MRAIL_TCP_SOCKBUF", "sockbuf"},
	};
	char key[32], val[64];
	const char *pos = params;
	int rc;

	drv->loopback_rails = 1;
	drv->sockbuf = TCP_DEFAULT_SOCKBUF;
	drv->user_timeout_ms = default_user_timeout_ms();
	/* On by default: a host whose links all died while it only waits
	 * for data (rendezvous chunks requested, nothing unacknowledged)
	 * has neither the engine's send watchdog nor TCP's user timeout to
	 * notice it; unanswered probes reset the connection in ~4 s. Idle
	 * healthy connections pay one empty segment per second. */
	drv->keepalive = TCP_DEFAULT_KEEPALIVE;
	drv->rto_max_ms = TCP_DEFAULT_RTO_MAX_MS;
	drv->notsent_lowat = TCP_DEFAULT_NOTSENT_LOWAT;
	for (size_t i = 0; i < sizeof env / sizeof env[0]; i++) {
		const char *s = getenv(env[i][0]);
		if (s && param_value(env[i][1], s, drv)) {
			mrail_error("invalid %s='%s': %s", env[i][0], s,
				    i == 0 ? "1..32 rails"
					   : "bytes up to 1g (k/m suffix), 0 = "
					     "kernel default");
			return MRAIL_ERR_CONFIG;
		}
	}
	while ((rc = mrail_params_next(&pos, key, sizeof key, val,
				       sizeof val)) != 0) {
		if (rc > 0)
			rc = param_value(key, val, drv);
		if (rc == -2) {
			mrail_error("invalid MRAIL_DRIVER_PARAMS: tcp has no "
				    "parameter '%s' (known: loopback_rails, "
				    "sockbuf, user_timeout_ms, keepalive, "
				    "rto_max_ms, notsent_lowat)", key);
			return MRAIL_ERR_CONFIG;
		}
		if (rc < 0) {
			mrail_error("invalid MRAIL_DRIVER_PARAMS tcp section "
				    "'%s': near '%s'", params, key);
			return MRAIL_ERR_CONFIG;
		}
	}
	return MRAIL_OK;
}

/* ---- instance ---------------------------------------------------------- */

static int tcp_open(const struct mrail_drv_open_args *args,
		    struct mrail_drv **out)
{
	struct mrail_drv *drv;

	if (!args || !args->upcalls || !out)
		return MRAIL_ERR_INVALID;
	drv = calloc(1, sizeof *drv);
	if (!drv)
		return MRAIL_ERR_NOMEM;
	if (tcp_params(args->params, drv)) {
		free(drv);
		return MRAIL_ERR_CONFIG;
	}
	dc_drv_init(&drv->dc, &tcp_hooks, &mrail_tcp_driver_ops, args);
	if (dc_epoll_open(&drv->dc) < 0) {
		free(drv);
		return MRAIL_ERR_IO;
	}
	*out = drv;
	return 0;
}

/* Loopback rails for processes of this host; interfaces come from the
 * engine's address selection (MRAIL_DRV_CAP_IP). */
static int tcp_list_rails(struct mrail_drv *drv,
			  struct mrail_drv_rail_desc *out, int max)
{
	int n = 0;
	for (unsigned i = 0; i < drv->loopback_rails && n < max; i++, n++) {
		memset(&out[n], 0, sizeof out[n]);
		snprintf(out[n].name, sizeof out[n].name, "lo%u", i);
		snprintf(out[n].listen, sizeof out[n].listen, "127.0.0.1");
		snprintf(out[n].ifname, sizeof out[n].ifname, "lo");
		/* Pairing drops loopback rails the user did not ask for
		 * where shm joins the two processes (libmrail/pairing.c). */
		if (drv->loopback_asked)
			snprintf(out[n].fabric, sizeof out[n].fabric, "asked");
		out[n].scope = MRAIL_DRV_SCOPE_HOST;
		out[n].numa_node = -1;
	}
	return n;
}

static void tcp_ep_query(struct mrail_drv_ep *ep, struct mrail_drv_ep_info *info)
{
	socklen_t len = sizeof info->local;
	memset(info, 0, sizeof *info);
	info->fd = ep ? ep->dc.poll.fd : -1;
	if (info->fd < 0)
		return;
	if (getsockname(info->fd, (struct sockaddr *)&info->local, &len))
		info->local.ss_family = 0;
	len = sizeof info->remote;
	if (getpeername(info->fd, (struct sockaddr *)&info->remote, &len))
		info->remote.ss_family = 0;
}

/* The kernel's view of the peer (linux/tcp.h): last_ack_recv is the
 * time since an ACK came in, duplicates included (keepalive and
 * zero-window probes are answered by the peer's kernel, whatever its
 * process does); last_data_recv since a segment with data. Either
 * shows the link and the peer's host are alive. */
static int tcp_ep_link_quiet_ms(struct mrail_drv_ep *ep)
{
	struct tcp_info ti;
	socklen_t len = sizeof ti;
	if (!ep || ep->dc.poll.fd < 0 || ep->dc.state != DC_EP_CONNECTED)
		return -1;
	memset(&ti, 0, sizeof ti);
	if (getsockopt(ep->dc.poll.fd, IPPROTO_TCP, TCP_INFO, &ti, &len) ||
	    len < offsetof(struct tcp_info, tcpi_last_ack_recv) +
			  sizeof ti.tcpi_last_ack_recv)
		return -1;
	uint32_t q = ti.tcpi_last_ack_recv < ti.tcpi_last_data_recv
			     ? ti.tcpi_last_ack_recv : ti.tcpi_last_data_recv;
	return q > INT32_MAX ? INT32_MAX : (int)q;
}

static void tcp_close(struct mrail_drv *drv)
{
	if (!drv)
		return;
	dc_drv_fini(&drv->dc);
	free(drv->rbuf_spare);
	free(drv);
}

static void tcp_query_caps(struct mrail_drv *drv, struct mrail_drv_caps *caps)
{
	double bw = 0;

	/* Caps are per instance: report the slowest interface we know. */
	for (int i = 0; drv && i < drv->dc.nlisteners; i++) {
		double b =
			((struct tcp_listener *)drv->dc.listeners[i])->bandwidth;
		if (b > 0 && (bw == 0 || b < bw))
			bw = b;
	}
	memset(caps, 0, sizeof *caps);
	caps->max_head = TCP_MAX_HEAD;
	caps->max_body = TCP_MAX_BODY;
	caps->max_body_iov = TCP_MAX_BODY_IOV;
	caps->eager_max_hint = TCP_EAGER_MAX_HINT;
	caps->flags = MRAIL_DRV_CAP_RECV_INTO_USER | MRAIL_DRV_CAP_IP |
		      MRAIL_DRV_CAP_SEND_SYSCALL;
	caps->nominal_bandwidth = bw;
	caps->nominal_latency = 0;
}

static int tcp_wait_fd(struct mrail_drv *drv)
{
	return drv->dc.epfd;
}

/* ---- listeners --------------------------------------------------------- */

static int bind_listening_socket(struct mrail_drv *drv,
				 struct sockaddr_storage *ss, socklen_t *sl)
{
	char want[TCP_NAME_LEN];
	int fd = new_socket(drv, ss->ss_family);

	if (fd < 0)
		return MRAIL_ERR_IO;
	tcp_sockaddr_name(ss, want, sizeof want);
	if (bind(fd, (struct sockaddr *)ss, *sl) < 0 ||
	    listen(fd, SOMAXCONN) < 0) {
		mrail_error("tcp: cannot listen on %s: %s", want,
			    strerror(errno));
		close(fd);
		return MRAIL_ERR_IO;
	}
	*sl = sizeof *ss;
	if (getsockname(fd, (struct sockaddr *)ss, sl) < 0) {
		mrail_error("tcp: getsockname on listener %s: %s", want,
			    strerror(errno));
		close(fd);
		return MRAIL_ERR_IO;
	}
	return fd;
}

static int tcp_listen(struct mrail_drv *drv, const char *local, void *addr,
		      size_t *addr_len, char *name, size_t name_len)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	struct tcp_listener *l;
	int rc, fd;

	if (!drv || !addr || !addr_len)
		return MRAIL_ERR_INVALID;
	rc = tcp_local_addr(local, AF_UNSPEC, &ss, &sl);
	if (rc < 0)
		return rc;
	if (*addr_len < (ss.ss_family == AF_INET6 ? TCP_BLOB_V6_LEN
						  : TCP_BLOB_V4_LEN))
		return tcp_blob_encode(&ss, addr, addr_len); /* logs, sizes */
	fd = bind_listening_socket(drv, &ss, &sl);
	if (fd < 0)
		return fd;
	l = calloc(1, sizeof *l);
	if (!l) {
		close(fd);
		return MRAIL_ERR_NOMEM;
	}
	l->dc.poll.fd = fd;
	tcp_sockaddr_name(&ss, l->dc.name, sizeof l->dc.name);
	l->bandwidth = tcp_addr_bandwidth(&ss);
	rc = tcp_blob_encode(&ss, addr, addr_len);
	if (rc == 0)
		rc = dc_listener_add(&drv->dc, &l->dc);
	if (rc < 0) {
		close(fd);
		free(l);
		return rc;
	}
	if (name && name_len)
		snprintf(name, name_len, "%s", l->dc.name);
	mrail_debug("tcp: listening on %s", l->dc.name);
	return rc;
}

static struct dc_ep *tcp_accept(struct dc_drv *dc, struct dc_listener *l,
				int fd)
{
	struct mrail_drv *drv = (struct mrail_drv *)dc;
	struct mrail_drv_ep *ep;

	(void)l;
	tune_socket(drv, fd);
	ep = ep_new(drv, fd, DC_EP_CONNECTED, NULL);
	if (!ep) {
		mrail_error("tcp: out of memory accepting a connection");
		close(fd);
		return NULL;
	}
	tcp_fd_names(fd, ep->dc.local_name, sizeof ep->dc.local_name,
		     ep->dc.remote_name, sizeof ep->dc.remote_name);
	dc_ep_update_events(&ep->dc);
	mrail_debug("tcp: accepted %s on %s", ep->dc.remote_name,
		    ep->dc.local_name);
	return &ep->dc;
}

/* ---- outgoing connections ---------------------------------------------- */

/* A link-local peer address only means something on one of our links:
 * use the scope of the local address we bound, not the peer's. */
static void adopt_local_scope(struct sockaddr_storage *remote,
			      const struct sockaddr_storage *local)
{
	struct sockaddr_in6 *r6 = (struct sockaddr_in6 *)remote;
	const struct sockaddr_in6 *l6 = (const struct sockaddr_in6 *)local;

	if (remote->ss_family == AF_INET6 && local->ss_family == AF_INET6 &&
	    IN6_IS_ADDR_LINKLOCAL(&r6->sin6_addr) && l6->sin6_scope_id)
		r6->sin6_scope_id = l6->sin6_scope_id;
}

static int bind_local_side(int fd, const char *local,
			   struct sockaddr_storage *remote,
			   const char *remote_name)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	char name[TCP_NAME_LEN];
	int family = remote->ss_family;
	int rc = tcp_local_addr(local, family, &ss, &sl);

	if (rc < 0)
		return rc;
	if (ss.ss_family != family) {
		mrail_error("tcp: local address '%s' and peer %s are of "
			    "different IP families",
			    local, remote_name);
		return MRAIL_ERR_INVALID;
	}
	/* The port is picked at connect time, per destination: a bind to
	 * port 0 searched every bound port (quadratic in the connections
	 * of a host: most of the CPU of 64 ranks x 4 rails, docs/scale.md). */
	int one = 1;
	(void)setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one,
			 sizeof one);
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0) {
		tcp_sockaddr_name(&ss, name, sizeof name);
		mrail_error("tcp: cannot bind %s to connect to %s: %s", name,
			    remote_name, strerror(errno));
		return MRAIL_ERR_IO;
	}
	adopt_local_scope(remote, &ss);
	return 0;
}

static int tcp_connect(struct mrail_drv *drv, const char *local,
		       const void *addr, size_t addr_len, void *ep_ctx,
		       struct mrail_drv_ep **out)
{
	struct sockaddr_storage remote;
	socklen_t rl;
	char remote_name[TCP_NAME_LEN];
	struct mrail_drv_ep *ep;
	int fd, rc;

	if (!drv || !out)
		return MRAIL_ERR_INVALID;
	rc = tcp_blob_decode(addr, addr_len, &remote, &rl);
	if (rc < 0)
		return rc;
	tcp_sockaddr_name(&remote, remote_name, sizeof remote_name);
	fd = new_socket(drv, remote.ss_family);
	if (fd < 0)
		return MRAIL_ERR_IO;
	if (local && *local) {
		rc = bind_local_side(fd, local, &remote, remote_name);
		if (rc < 0) {
			close(fd);
			return rc;
		}
	}
	ep = ep_new(drv, fd, DC_EP_CONNECTING, ep_ctx);
	if (!ep) {
		close(fd);
		return MRAIL_ERR_NOMEM;
	}
	snprintf(ep->dc.remote_name, sizeof ep->dc.remote_name, "%s",
		 remote_name);
	if (connect(fd, (struct sockaddr *)&remote, rl) < 0 &&
	    errno != EINPROGRESS && errno != EINTR) {
		/* Reported by the next progress: upcalls never come from
		 * inside connect. */
		ep->dc.connect_errno = errno;
		dc_ep_need_attention(&ep->dc);
	}
	tcp_fd_names(fd, ep->dc.local_name, sizeof ep->dc.local_name, NULL, 0);
	dc_ep_update_events(&ep->dc);
	*out = ep;
	return 0;
}

static void finish_connect(struct mrail_drv_ep *ep, uint32_t events)
{
	int err = ep->dc.connect_errno;

	if (!err)
		err = dc_sock_connect_result(ep->dc.poll.fd, events);
	if (err) {
		dc_ep_connect_failed(&ep->dc, err);
		return;
	}
	ep->dc.state = DC_EP_CONNECTED;
	dc_ep_connect_ok(&ep->dc); /* before the name gets its port */
	tcp_fd_names(ep->dc.poll.fd, ep->dc.local_name,
		     sizeof ep->dc.local_name, NULL, 0);
	mrail_debug("tcp: connected %s -> %s", ep->dc.local_name,
		    ep->dc.remote_name);
	ep->dc.drv->base.up->connected(ep->dc.ctx, 0);
	if (ep->dc.state != DC_EP_CONNECTED)
		return;
	dc_ep_update_events(&ep->dc);
	if (ep->dc.sq_head)
		ep_flush_or_fail(ep);
}

/* ---- progress ---------------------------------------------------------- */

static void tcp_ep_events(struct dc_ep *dc, uint32_t events)
{
	struct mrail_drv_ep *ep = (struct mrail_drv_ep *)dc;

	if (dc->state == DC_EP_CONNECTING) {
		finish_connect(ep, events);
		return;
	}
	if (!tcp_ep_usable(ep))
		return;
	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
		tcp_rx_process(ep);
	if ((events & EPOLLOUT) && tcp_ep_usable(ep))
		ep_flush_or_fail(ep);
}

/* Failures noticed outside progress (in connect or send). */
static void tcp_attend(struct dc_ep *dc)
{
	if (dc->state == DC_EP_CONNECTING)
		finish_connect((struct mrail_drv_ep *)dc, 0);
	else if (dc->state == DC_EP_CONNECTED && dc->send_errno)
		dc_ep_fail(dc, tcp_closed_status(dc->send_errno), false,
			   "send to %s failed: %s",
			   dc->remote_name, strerror(dc->send_errno));
}

/* Whether every endpoint of the instance (at most TCP_DIRECT_MAX) is
 * connected with nothing queued, so that reading each directly misses
 * nothing but a listener's accept (no EPOLLOUT is wanted). */
static bool direct_ok(struct mrail_drv *drv)
{
	if (drv->neps == 0 || drv->neps > TCP_DIRECT_MAX)
		return false;
	struct mrail_list *l;
	for (l = drv->dc.eps.next; l != &drv->dc.eps; l = l->next) {
		struct dc_ep *ep = mrail_list_entry(l, struct dc_ep, link);
		if (ep->state != DC_EP_CONNECTED || ep->sq_head)
			return false;
	}
	return true;
}

static int direct_reads(struct mrail_drv *drv)
{
	int n = 0;
	struct mrail_list *l;
	/* Endpoints that upcalls close stay listed until progress ends
	 * (dc.h), so the walk may go on past them. */
	for (l = drv->dc.eps.next; l != &drv->dc.eps; l = l->next) {
		struct mrail_drv_ep *ep =
			mrail_list_entry(l, struct mrail_drv_ep, dc.link);
		if (tcp_ep_usable(ep) && tcp_rx_process(ep))
			n++;
	}
	return n;
}

static int tcp_progress(struct mrail_drv *drv)
{
	int n;

	/* An upcall that calls progress again would parse a receive buffer
	 * that the outer call is in the middle of: refuse. */
	if (!drv || !dc_progress_enter(&drv->dc))
		return 0;
	n = drv->dc.attention ? dc_attend(&drv->dc) : 0;
	/* With one or two connections, reading them directly finds a frame
	 * a system call sooner than epoll_wait + recv; epoll still runs
	 * every TCP_EPOLL_EVERY-th pass, for the listener. */
	if (direct_ok(drv) && ++drv->epoll_skips < TCP_EPOLL_EVERY) {
		n += direct_reads(drv);
	} else {
		drv->epoll_skips = 0;
		n += dc_epoll_dispatch(&drv->dc);
	}
	n += dc_run_completions(&drv->dc);
	dc_progress_leave(&drv->dc);
	return n;
}

const struct mrail_drv_ops mrail_tcp_driver_ops = {
	.name = "tcp",
	.abi_version = MRAIL_DRV_ABI_VERSION,
	.open = tcp_open,
	.close = tcp_close,
	.query_caps = tcp_query_caps,
	.listen = tcp_listen,
	.connect = tcp_connect,
	.ep_set_ctx = dc_op_ep_set_ctx,
	.send = tcp_send,
	.ep_backlog = dc_op_ep_backlog,
	.progress = tcp_progress,
	.wait_fd = tcp_wait_fd,
	.ep_names = dc_op_ep_names,
	.ep_close = dc_op_ep_close,
	.list_rails = tcp_list_rails,
	.ep_query = tcp_ep_query,
	.ep_link_quiet_ms = tcp_ep_link_quiet_ms,
};
