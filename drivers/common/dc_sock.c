/*
 * drivers/common: the socket part, for drivers whose connections are file
 * descriptors: one epoll set per instance (its fd is wait_fd), listeners
 * and their accept loop, and per-endpoint event masks.
 */
#include "drivers/common/dc.h"
#include "util/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

/* Connections accepted per listener per progress call (fairness). */
#define DC_ACCEPT_BUDGET 16
#define DC_EPOLL_BATCH 64

int dc_epoll_open(struct dc_drv *drv)
{
	drv->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (drv->epfd < 0) {
		mrail_error("%s: epoll_create1: %s", drv->hooks->name,
			    strerror(errno));
		return MRAIL_ERR_IO;
	}
	return 0;
}

/*
 * Only touches epoll when the wanted set changes (a send queue appears or
 * drains), so the latency path of send/recv makes no epoll_ctl call.
 */
void dc_ep_update_events(struct dc_ep *ep)
{
	const struct dc_hooks *h = ep->drv->hooks;
	uint32_t want;
	struct epoll_event ev = {.data.ptr = ep};
	int op;

	if (!h->ep_wanted_events)
		return;
	want = ep->state == DC_EP_CLOSED ? 0 : h->ep_wanted_events(ep);
	if (want == ep->ev_mask)
		return;
	ev.events = want;
	op = !ep->ev_mask ? EPOLL_CTL_ADD : !want ? EPOLL_CTL_DEL
						  : EPOLL_CTL_MOD;
	if (epoll_ctl(ep->drv->epfd, op, ep->poll.fd, &ev) < 0) {
		int err = errno;
		mrail_error("%s: epoll_ctl on connection %s -> %s: %s", h->name,
			    ep->local_name, ep->remote_name, strerror(err));
		/* Without epoll the connection would hang: fail it. */
		if (want && ep->state == DC_EP_CONNECTING) {
			ep->connect_errno = err;
			dc_ep_need_attention(ep);
		} else if (want && ep->state == DC_EP_CONNECTED) {
			ep->send_errno = err;
			dc_ep_need_attention(ep);
		}
		if (op != EPOLL_CTL_DEL)
			return;
	}
	ep->ev_mask = want;
}

int dc_listener_add(struct dc_drv *drv, struct dc_listener *l)
{
	struct dc_listener **grown;
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = l};

	grown = realloc(drv->listeners,
			(size_t)(drv->nlisteners + 1) * sizeof *grown);
	if (!grown)
		return MRAIL_ERR_NOMEM;
	drv->listeners = grown;
	l->poll.kind = DC_OBJ_LISTENER;
	if (epoll_ctl(drv->epfd, EPOLL_CTL_ADD, l->poll.fd, &ev) < 0) {
		mrail_error("%s: epoll_ctl for listener %s: %s",
			    drv->hooks->name, l->name, strerror(errno));
		return MRAIL_ERR_IO;
	}
	drv->listeners[drv->nlisteners] = l;
	return drv->nlisteners++;
}

static int listener_accept(struct dc_drv *drv, struct dc_listener *l)
{
	int n = 0;

	while (n < DC_ACCEPT_BUDGET) {
		int fd = accept4(l->poll.fd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			/* EMFILE and friends repeat on every progress
			 * call while the connection waits: log once. */
			if (errno != EAGAIN && errno != l->accept_errno)
				mrail_warn("%s: accept on %s: %s",
					   drv->hooks->name, l->name,
					   strerror(errno));
			if (errno != EAGAIN)
				l->accept_errno = errno;
			break;
		}
		l->accept_errno = 0;
		struct dc_ep *ep = drv->hooks->ep_accept(drv, l, fd);
		if (ep)
			dc_ep_accepted(ep);
		n++;
	}
	return n;
}

int dc_epoll_dispatch(struct dc_drv *drv)
{
	struct epoll_event evs[DC_EPOLL_BATCH];
	int nev = epoll_wait(drv->epfd, evs, DC_EPOLL_BATCH, 0);

	if (nev < 0) {
		if (errno != EINTR)
			mrail_error("%s: epoll_wait: %s", drv->hooks->name,
				    strerror(errno));
		return 0;
	}
	for (int i = 0; i < nev; i++) {
		struct dc_pollable *obj = evs[i].data.ptr;
		if (obj->kind == DC_OBJ_LISTENER)
			listener_accept(drv, (struct dc_listener *)obj);
		else if (obj->kind == DC_OBJ_EP)
			drv->hooks->ep_events((struct dc_ep *)obj,
					      evs[i].events);
		else
			drv->hooks->other_events(drv, obj, evs[i].events);
	}
	return nev;
}

int dc_sock_connect_result(int fd, uint32_t events)
{
	int err = 0;
	socklen_t el = sizeof err;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
		return errno;
	if (err)
		return err;
	/* An error event without a pending error: make sure we are up. */
	if (!(events & EPOLLOUT) &&
	    getpeername(fd, (struct sockaddr *)&ss, &sl) < 0)
		return ENOTCONN;
	return 0;
}

ssize_t dc_sock_writev(int fd, struct iovec *iov, int cnt)
{
	struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)cnt};

	for (;;) {
		/* MSG_NOSIGNAL: a dead peer must give EPIPE, not SIGPIPE. */
		ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n >= 0)
			return n;
		if (errno != EINTR)
			return -errno;
	}
}
