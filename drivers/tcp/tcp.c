/*
 * TCP driver: instance, listeners, connection set-up and teardown, and the
 * progress loop. Sending is in tcp_send.c, receiving in tcp_recv.c,
 * addresses in tcp_addr.c; docs/driver-tcp.md describes the wire format.
 *
 * Lifetime rule that makes re-entrant upcalls safe: ep_close() called while
 * progress() runs only marks the endpoint closed and parks it on
 * drv->zombies; the memory is freed when the outermost progress() returns,
 * so code that made an upcall may still look at ep->state afterwards.
 */
#include "drivers/tcp/tcp_internal.h"
#include "util/log.h"
#include "util/params.h"
#include "util/size.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

/* ---- endpoint bookkeeping ---------------------------------------------- */

static struct mrail_drv_ep *ep_new(struct mrail_drv *drv, int fd,
				   enum tcp_ep_state state, void *ctx)
{
	struct mrail_drv_ep *ep = calloc(1, sizeof *ep);
	if (!ep)
		return NULL;
	ep->poll.kind = TCP_OBJ_EP;
	ep->poll.fd = fd;
	ep->drv = drv;
	ep->ctx = ctx;
	ep->state = state;
	ep->next = drv->eps;
	if (drv->eps)
		drv->eps->prev = ep;
	drv->eps = ep;
	return ep;
}

static void ep_unlink(struct mrail_drv_ep *ep)
{
	struct mrail_drv *drv = ep->drv;

	if (ep->prev)
		ep->prev->next = ep->next;
	else
		drv->eps = ep->next;
	if (ep->next)
		ep->next->prev = ep->prev;
	ep->prev = ep->next = NULL;
}

static void ep_forget_attention(struct mrail_drv_ep *ep)
{
	struct mrail_drv_ep **pp = &ep->drv->attention;

	if (!ep->needs_attention)
		return;
	while (*pp && *pp != ep)
		pp = &(*pp)->attention_next;
	if (*pp)
		*pp = ep->attention_next;
	ep->needs_attention = false;
	ep->attention_next = NULL;
}

static void ep_free(struct mrail_drv_ep *ep)
{
	tcp_rx_free(ep);
	free(ep);
}

void tcp_ep_need_attention(struct mrail_drv_ep *ep)
{
	if (ep->needs_attention)
		return;
	ep->needs_attention = true;
	ep->attention_next = ep->drv->attention;
	ep->drv->attention = ep;
}

static uint32_t ep_wanted_events(const struct mrail_drv_ep *ep)
{
	switch (ep->state) {
	case TCP_EP_CONNECTING:
		return ep->early_connect_errno ? 0 : EPOLLOUT;
	case TCP_EP_CONNECTED:
		return EPOLLIN | (ep->sq_head ? EPOLLOUT : 0);
	default:
		return 0;
	}
}

/*
 * Only touches epoll when the wanted set changes (a send queue appears or
 * drains), so the latency path of send/recv makes no epoll_ctl call.
 */
void tcp_ep_update_events(struct mrail_drv_ep *ep)
{
	uint32_t want = ep_wanted_events(ep);
	struct epoll_event ev = {.events = want, .data.ptr = ep};
	int op;

	if (want == ep->ev_mask)
		return;
	op = !ep->ev_mask ? EPOLL_CTL_ADD : !want ? EPOLL_CTL_DEL
						  : EPOLL_CTL_MOD;
	if (epoll_ctl(ep->drv->epfd, op, ep->poll.fd, &ev) < 0) {
		int err = errno;
		mrail_error("tcp: epoll_ctl on connection %s -> %s: %s",
			    ep->local_name, ep->remote_name, strerror(err));
		/* Without epoll the connection would hang: fail it. */
		if (want && ep->state == TCP_EP_CONNECTING) {
			ep->early_connect_errno = err;
			tcp_ep_need_attention(ep);
		} else if (want && ep->state == TCP_EP_CONNECTED) {
			ep->send_errno = err;
			tcp_ep_need_attention(ep);
		}
		if (op != EPOLL_CTL_DEL)
			return;
	}
	ep->ev_mask = want;
}

void tcp_ep_fail(struct mrail_drv_ep *ep, int status, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	if (ep->state != TCP_EP_CONNECTED)
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	if (status == MRAIL_ERR_PROTO)
		mrail_warn("tcp: %s", why);
	else
		mrail_info("tcp: %s", why);

	ep->state = TCP_EP_FAILED;
	tcp_ep_update_events(ep); /* stop reading and writing */
	/* Frames that did leave are reported before the error. */
	tcp_report_done_of(ep);
	if (ep->state == TCP_EP_CLOSED)
		return;
	ep->drv->base.up->ep_error(ep->ctx, status, why);
	if (ep->state == TCP_EP_CLOSED)
		return;
	tcp_sendq_fail(ep, status);
}

static void ep_flush_or_fail(struct mrail_drv_ep *ep)
{
	int rc = tcp_flush(ep);
	if (rc < 0)
		tcp_ep_fail(ep, MRAIL_ERR_PEER, "send to %s failed: %s",
			    ep->remote_name, strerror(-rc));
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
		return 0;
	}
	if (!strcmp(key, "sockbuf")) {
		if (mrail_parse_size(val, &v) || v > (1u << 30))
			return -1;
		drv->sockbuf = (int)v;
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
	drv->user_timeout_ms = 0;
	/* On by default: a host whose links all died while it only waits
	 * for data (rendezvous chunks requested, nothing unacknowledged)
	 * has neither the engine's send watchdog nor TCP's user timeout to
	 * notice it; unanswered probes reset the connection in ~4 s. Idle
	 * healthy connections pay one empty segment per second. */
	drv->keepalive = TCP_DEFAULT_KEEPALIVE;
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
				    "sockbuf, user_timeout_ms, keepalive)", key);
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
	drv->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (drv->epfd < 0) {
		mrail_error("tcp: epoll_create1: %s", strerror(errno));
		free(drv);
		return MRAIL_ERR_IO;
	}
	mrail_drv_base_init(&drv->base, &mrail_tcp_driver_ops, args);
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
		out[n].scope = MRAIL_DRV_SCOPE_HOST;
		out[n].numa_node = -1;
	}
	return n;
}

static void tcp_ep_query(struct mrail_drv_ep *ep, struct mrail_drv_ep_info *info)
{
	socklen_t len = sizeof info->local;
	memset(info, 0, sizeof *info);
	info->fd = ep ? ep->poll.fd : -1;
	if (info->fd < 0)
		return;
	if (getsockname(info->fd, (struct sockaddr *)&info->local, &len))
		info->local.ss_family = 0;
	len = sizeof info->remote;
	if (getpeername(info->fd, (struct sockaddr *)&info->remote, &len))
		info->remote.ss_family = 0;
}

static void tcp_ep_close(struct mrail_drv_ep *ep);

static void free_zombies(struct mrail_drv *drv)
{
	while (drv->zombies) {
		struct mrail_drv_ep *ep = drv->zombies;
		drv->zombies = ep->next;
		ep_free(ep);
	}
}

static void tcp_close(struct mrail_drv *drv)
{
	struct mrail_drv_ep *ep, *next;

	if (!drv)
		return;
	for (ep = drv->eps; ep; ep = next) {
		next = ep->next;
		tcp_ep_close(ep);
	}
	free_zombies(drv);
	for (int i = 0; i < drv->nlisteners; i++) {
		close(drv->listeners[i]->poll.fd);
		free(drv->listeners[i]);
	}
	free(drv->listeners);
	tcp_send_pool_free(drv);
	close(drv->epfd);
	free(drv);
}

static void tcp_query_caps(struct mrail_drv *drv, struct mrail_drv_caps *caps)
{
	double bw = 0;

	/* Caps are per instance: report the slowest interface we know. */
	for (int i = 0; drv && i < drv->nlisteners; i++) {
		double b = drv->listeners[i]->bandwidth;
		if (b > 0 && (bw == 0 || b < bw))
			bw = b;
	}
	memset(caps, 0, sizeof *caps);
	caps->max_head = TCP_MAX_HEAD;
	caps->max_body = TCP_MAX_BODY;
	caps->max_body_iov = TCP_MAX_BODY_IOV;
	caps->eager_max_hint = TCP_EAGER_MAX_HINT;
	caps->flags = MRAIL_DRV_CAP_RECV_INTO_USER | MRAIL_DRV_CAP_IP;
	caps->nominal_bandwidth = bw;
	caps->nominal_latency = 0;
}

static int tcp_wait_fd(struct mrail_drv *drv)
{
	return drv->epfd;
}

/* ---- listeners --------------------------------------------------------- */

static int add_listener(struct mrail_drv *drv, struct tcp_listener *l)
{
	struct tcp_listener **grown;
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = l};

	grown = realloc(drv->listeners,
			(size_t)(drv->nlisteners + 1) * sizeof *grown);
	if (!grown)
		return MRAIL_ERR_NOMEM;
	drv->listeners = grown;
	if (epoll_ctl(drv->epfd, EPOLL_CTL_ADD, l->poll.fd, &ev) < 0) {
		mrail_error("tcp: epoll_ctl for listener %s: %s", l->name,
			    strerror(errno));
		return MRAIL_ERR_IO;
	}
	drv->listeners[drv->nlisteners] = l;
	return drv->nlisteners++;
}

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
	l->poll.kind = TCP_OBJ_LISTENER;
	l->poll.fd = fd;
	tcp_sockaddr_name(&ss, l->name, sizeof l->name);
	l->bandwidth = tcp_addr_bandwidth(&ss);
	rc = tcp_blob_encode(&ss, addr, addr_len);
	if (rc == 0)
		rc = add_listener(drv, l);
	if (rc < 0) {
		close(fd);
		free(l);
		return rc;
	}
	if (name && name_len)
		snprintf(name, name_len, "%s", l->name);
	mrail_debug("tcp: listening on %s", l->name);
	return rc;
}

static void accept_one(struct mrail_drv *drv, int fd)
{
	struct mrail_drv_ep *ep;
	void *ctx;

	tune_socket(drv, fd);
	ep = ep_new(drv, fd, TCP_EP_CONNECTED, NULL);
	if (!ep) {
		mrail_error("tcp: out of memory accepting a connection");
		close(fd);
		return;
	}
	tcp_fd_names(fd, ep->local_name, sizeof ep->local_name,
		     ep->remote_name, sizeof ep->remote_name);
	tcp_ep_update_events(ep);
	mrail_debug("tcp: accepted %s on %s", ep->remote_name,
		    ep->local_name);
	ctx = drv->base.up->accepted(drv->base.engine_ctx, ep);
	if (ep->state == TCP_EP_CLOSED)
		return;
	if (!ctx) {
		tcp_ep_close(ep);
		return;
	}
	ep->ctx = ctx;
}

static int listener_accept(struct mrail_drv *drv, struct tcp_listener *l)
{
	int n = 0;

	while (n < TCP_ACCEPT_BUDGET) {
		int fd = accept4(l->poll.fd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			/* EMFILE and friends repeat on every progress
			 * call while the connection waits: log once. */
			if (errno != EAGAIN && errno != l->accept_errno)
				mrail_warn("tcp: accept on %s: %s", l->name,
					   strerror(errno));
			if (errno != EAGAIN)
				l->accept_errno = errno;
			break;
		}
		l->accept_errno = 0;
		accept_one(drv, fd);
		n++;
	}
	return n;
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
	ep = ep_new(drv, fd, TCP_EP_CONNECTING, ep_ctx);
	if (!ep) {
		close(fd);
		return MRAIL_ERR_NOMEM;
	}
	snprintf(ep->remote_name, sizeof ep->remote_name, "%s", remote_name);
	if (connect(fd, (struct sockaddr *)&remote, rl) < 0 &&
	    errno != EINPROGRESS && errno != EINTR) {
		/* Reported by the next progress: upcalls never come from
		 * inside connect. */
		ep->early_connect_errno = errno;
		tcp_ep_need_attention(ep);
	}
	tcp_fd_names(fd, ep->local_name, sizeof ep->local_name, NULL, 0);
	tcp_ep_update_events(ep);
	*out = ep;
	return 0;
}

static int connect_result(struct mrail_drv_ep *ep, uint32_t events)
{
	int err = 0;
	socklen_t el = sizeof err;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;

	if (ep->early_connect_errno)
		return ep->early_connect_errno;
	if (getsockopt(ep->poll.fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
		return errno;
	if (err)
		return err;
	/* An error event without a pending error: make sure we are up. */
	if (!(events & EPOLLOUT) &&
	    getpeername(ep->poll.fd, (struct sockaddr *)&ss, &sl) < 0)
		return ENOTCONN;
	return 0;
}

static void connect_failed(struct mrail_drv_ep *ep, int err)
{
	mrail_warn("tcp: connect from %s to %s failed: %s", ep->local_name,
		   ep->remote_name, strerror(err));
	ep->state = TCP_EP_FAILED;
	tcp_ep_update_events(ep);
	ep->drv->base.up->connected(ep->ctx, MRAIL_ERR_PEER);
	if (ep->state == TCP_EP_CLOSED)
		return;
	tcp_sendq_fail(ep, MRAIL_ERR_PEER);
}

static void finish_connect(struct mrail_drv_ep *ep, uint32_t events)
{
	int err = connect_result(ep, events);

	if (err) {
		connect_failed(ep, err);
		return;
	}
	ep->state = TCP_EP_CONNECTED;
	tcp_fd_names(ep->poll.fd, ep->local_name, sizeof ep->local_name, NULL,
		     0);
	mrail_debug("tcp: connected %s -> %s", ep->local_name,
		    ep->remote_name);
	ep->drv->base.up->connected(ep->ctx, 0);
	if (ep->state != TCP_EP_CONNECTED)
		return;
	tcp_ep_update_events(ep);
	if (ep->sq_head)
		ep_flush_or_fail(ep);
}

/* ---- endpoint operations ----------------------------------------------- */

static void tcp_ep_set_ctx(struct mrail_drv_ep *ep, void *ep_ctx)
{
	if (ep)
		ep->ctx = ep_ctx;
}

static void tcp_ep_names(struct mrail_drv_ep *ep, char *local, size_t llen,
			 char *remote, size_t rlen)
{
	if (local && llen)
		snprintf(local, llen, "%s", ep ? ep->local_name : "?");
	if (remote && rlen)
		snprintf(remote, rlen, "%s", ep ? ep->remote_name : "?");
}

static void tcp_ep_close(struct mrail_drv_ep *ep)
{
	struct mrail_drv *drv;

	if (!ep || ep->state == TCP_EP_CLOSED)
		return;
	drv = ep->drv;
	ep->state = TCP_EP_CLOSED;
	/* Explicit removal: a forked child may share the socket, and then
	 * close() alone would leave it registered. */
	tcp_ep_update_events(ep);
	close(ep->poll.fd);
	ep->poll.fd = -1;
	tcp_sendq_drop(ep);
	tcp_drop_done_of(ep);
	ep_forget_attention(ep);
	ep_unlink(ep);
	if (drv->progress_depth > 0) {
		ep->next = drv->zombies;
		drv->zombies = ep;
	} else {
		ep_free(ep);
	}
}

/* ---- progress ---------------------------------------------------------- */

static void ep_handle_events(struct mrail_drv_ep *ep, uint32_t events)
{
	if (ep->state == TCP_EP_CONNECTING) {
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
static int handle_attention(struct mrail_drv *drv)
{
	int n = 0;

	while (drv->attention) {
		struct mrail_drv_ep *ep = drv->attention;
		drv->attention = ep->attention_next;
		ep->attention_next = NULL;
		ep->needs_attention = false;
		if (ep->state == TCP_EP_CONNECTING)
			finish_connect(ep, 0);
		else if (ep->state == TCP_EP_CONNECTED && ep->send_errno)
			tcp_ep_fail(ep, MRAIL_ERR_PEER,
				    "send to %s failed: %s", ep->remote_name,
				    strerror(ep->send_errno));
		n++;
	}
	return n;
}

static int handle_epoll(struct mrail_drv *drv)
{
	struct epoll_event evs[TCP_EPOLL_BATCH];
	int nev = epoll_wait(drv->epfd, evs, TCP_EPOLL_BATCH, 0);

	if (nev < 0) {
		if (errno != EINTR)
			mrail_error("tcp: epoll_wait: %s", strerror(errno));
		return 0;
	}
	for (int i = 0; i < nev; i++) {
		struct tcp_pollable *obj = evs[i].data.ptr;
		if (obj->kind == TCP_OBJ_LISTENER)
			listener_accept(drv, (struct tcp_listener *)obj);
		else
			ep_handle_events((struct mrail_drv_ep *)obj,
					 evs[i].events);
	}
	return nev;
}

static int tcp_progress(struct mrail_drv *drv)
{
	int n;

	/* An upcall that calls progress again would parse a receive buffer
	 * that the outer call is in the middle of: refuse. */
	if (!drv || drv->progress_depth > 0)
		return 0;
	drv->progress_depth++;
	n = drv->attention ? handle_attention(drv) : 0;
	n += handle_epoll(drv);
	n += tcp_run_completions(drv);
	drv->progress_depth--;
	free_zombies(drv);
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
	.ep_set_ctx = tcp_ep_set_ctx,
	.send = tcp_send,
	.ep_backlog = tcp_ep_backlog,
	.progress = tcp_progress,
	.wait_fd = tcp_wait_fd,
	.ep_names = tcp_ep_names,
	.ep_close = tcp_ep_close,
	.list_rails = tcp_list_rails,
	.ep_query = tcp_ep_query,
};
