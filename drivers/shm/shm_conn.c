/*
 * Connection set-up and teardown of the shm driver. A listener is an
 * abstract Unix socket (no file: nothing is left behind by a killed
 * process). The connecting side creates the segment as an anonymous
 * memfd holding both rings, and passes it with its doorbell eventfd in a
 * HELLO; the accepting side maps it and answers WELCOME with its own
 * doorbell. The segment has no name anywhere: when both processes are
 * gone (killed or not) the kernel frees it, so no stale segment of a dead
 * job can exist to be cleaned up. The socket stays open for the life of
 * the connection: its hang-up is how each side learns that the other
 * died or closed.
 */
#include "drivers/shm/shm_internal.h"
#include "mrail.h"
#include "util/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static atomic_uint name_counter;

static int watch(struct mrail_drv *drv, struct shm_pollable *p)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = p};

	if (epoll_ctl(drv->epfd, EPOLL_CTL_ADD, p->fd, &ev) < 0) {
		mrail_error("shm: epoll_ctl: %s", strerror(errno));
		return MRAIL_ERR_IO;
	}
	return 0;
}

static socklen_t sun_of(const char *name, size_t len, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof *sa);
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path + 1, name, len); /* abstract: leading NUL */
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
}

/* ---- listen ------------------------------------------------------------ */

int shm_listen(struct mrail_drv *drv, const char *local, void *addr,
	       size_t *addr_len, char *name, size_t name_len)
{
	struct shm_listener *l, **grown;
	struct sockaddr_un sa;
	size_t nlen;
	int rc;

	(void)local; /* one kind of address: this host */
	l = calloc(1, sizeof *l);
	grown = realloc(drv->listeners,
			(size_t)(drv->nlisteners + 1) * sizeof *grown);
	if (!l || !grown) {
		free(l);
		return MRAIL_ERR_NOMEM;
	}
	drv->listeners = grown;
	/* Random part: processes of other pid namespaces may share our pid
	 * and our network namespace (where abstract names live). */
	uint32_t salt = 0;
	if (getrandom(&salt, sizeof salt, GRND_NONBLOCK) != sizeof salt)
		salt = (uint32_t)(uintptr_t)l ^ (uint32_t)getpid() << 16;
	snprintf(l->name, sizeof l->name, "mrail-shm-%d-%u-%08x", (int)getpid(),
		 atomic_fetch_add(&name_counter, 1), salt);
	nlen = strlen(l->name);
	if (*addr_len < SHM_BLOB_HDR_LEN + nlen) {
		free(l);
		return MRAIL_ERR_INVALID;
	}
	l->poll = (struct shm_pollable){SHM_OBJ_LISTENER, -1, l};
	l->poll.fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK |
				     SOCK_CLOEXEC, 0);
	if (l->poll.fd < 0 ||
	    bind(l->poll.fd, (struct sockaddr *)&sa, sun_of(l->name, nlen, &sa)) ||
	    listen(l->poll.fd, 4096)) {
		mrail_error("shm: listening on @%s: %s", l->name,
			    strerror(errno));
		if (l->poll.fd >= 0)
			close(l->poll.fd);
		free(l);
		return MRAIL_ERR_IO;
	}
	if ((rc = watch(drv, &l->poll))) {
		close(l->poll.fd);
		free(l);
		return rc;
	}
	uint8_t *b = addr;
	memcpy(b, "MRSA", 4);
	b[4] = SHM_BLOB_VERSION;
	b[5] = (uint8_t)nlen;
	memcpy(b + SHM_BLOB_HDR_LEN, l->name, nlen);
	*addr_len = SHM_BLOB_HDR_LEN + nlen;
	if (name && name_len)
		snprintf(name, name_len, "shm:@%s", l->name);
	drv->listeners[drv->nlisteners] = l;
	return drv->nlisteners++;
}

void shm_close_listeners(struct mrail_drv *drv)
{
	for (int i = 0; i < drv->nlisteners; i++) {
		close(drv->listeners[i]->poll.fd);
		free(drv->listeners[i]);
	}
	free(drv->listeners);
	drv->listeners = NULL;
	drv->nlisteners = 0;
}

/* ---- socket messages with descriptors ---------------------------------- */

static int ctl_send(int sock, uint32_t magic, uint32_t a, uint32_t b,
		    const int *fds, int nfd)
{
	uint8_t msg[SHM_CTL_LEN];
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {msg, sizeof msg};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	shm_put_le32(msg, magic);
	shm_put_le32(msg + 4, SHM_SEG_VERSION);
	shm_put_le32(msg + 8, a);
	shm_put_le32(msg + 12, b);
	if (nfd > 0) {
		memset(&u, 0, sizeof u);
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE((size_t)nfd * sizeof(int));
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)nfd * sizeof(int));
		memcpy(CMSG_DATA(c), fds, (size_t)nfd * sizeof(int));
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof msg ? 0
								       : -errno;
}

/* Receive one control message: its length (0 at end of stream), or
 * -errno; descriptors into fds (unused ones -1). */
static ssize_t ctl_recv(int sock, uint8_t *msg, size_t cap, int *fds, int nfd)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {msg, cap};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	ssize_t n;

	for (int i = 0; i < nfd; i++)
		fds[i] = -1;
	n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c;
	     c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		int got[4];
		if (k > 4)
			k = 4;
		memcpy(got, CMSG_DATA(c), (size_t)k * sizeof(int));
		for (int i = 0; i < k; i++) {
			if (i < nfd)
				fds[i] = got[i];
			else
				close(got[i]); /* not ours to keep */
		}
	}
	if (mh.msg_flags & MSG_TRUNC)
		return -EMSGSIZE;
	return n;
}

/* ---- the segment ------------------------------------------------------- */

static size_t seg_size(uint32_t ring)
{
	return SHM_RING_OFFSET + 2 * (size_t)ring;
}

static void map_rings(struct mrail_drv_ep *ep, uint32_t ring)
{
	struct shm_seg_hdr *h = ep->seg;
	uint8_t *base = (uint8_t *)ep->seg + SHM_RING_OFFSET;
	int t = ep->connector ? 0 : 1;

	shm_ring_init(&ep->tx, &h->ctl[t], base + (size_t)t * ring, ring);
	shm_ring_init(&ep->rx, &h->ctl[1 - t], base + (size_t)(1 - t) * ring,
		      ring);
}

static int new_bell(struct mrail_drv_ep *ep)
{
	ep->bell.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ep->bell.fd < 0) {
		mrail_error("shm: eventfd: %s", strerror(errno));
		return MRAIL_ERR_IO;
	}
	return watch(ep->drv, &ep->bell);
}

static void peer_names(struct mrail_drv_ep *ep, const char *lname)
{
	struct ucred cr;
	socklen_t len = sizeof cr;

	if (getsockopt(ep->sock.fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0)
		ep->peer_pid = cr.pid;
	snprintf(ep->local_name, sizeof ep->local_name, "shm:pid %d",
		 (int)getpid());
	snprintf(ep->remote_name, sizeof ep->remote_name, "shm:pid %d%s%s",
		 (int)ep->peer_pid, lname ? " @" : "", lname ? lname : "");
}

/* ---- connect ----------------------------------------------------------- */

static int make_segment(struct mrail_drv_ep *ep, uint32_t ring, int *memfd)
{
	size_t len = seg_size(ring);
	int fd = memfd_create("mrail-shm", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, (off_t)len) < 0) {
		mrail_error("shm: creating a %zu-byte segment: %s", len,
			    strerror(errno));
		if (fd >= 0)
			close(fd);
		return MRAIL_ERR_IO;
	}
	ep->seg = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ep->seg == MAP_FAILED) {
		ep->seg = NULL;
		mrail_error("shm: mapping the segment: %s", strerror(errno));
		close(fd);
		return MRAIL_ERR_NOMEM;
	}
	ep->seg_len = len;
	struct shm_seg_hdr *h = ep->seg;
	h->magic = SHM_SEG_MAGIC;
	h->version = SHM_SEG_VERSION;
	h->ring_size = ring;
	map_rings(ep, ring);
	*memfd = fd;
	return 0;
}

int shm_connect(struct mrail_drv *drv, const char *local, const void *addr,
		size_t addr_len, void *ep_ctx, struct mrail_drv_ep **out)
{
	const uint8_t *b = addr;
	struct sockaddr_un sa;
	char name[SHM_SOCK_NAME_MAX + 1];
	int memfd = -1, rc;

	(void)local;
	if (addr_len < SHM_BLOB_HDR_LEN || memcmp(b, "MRSA", 4) ||
	    b[4] != SHM_BLOB_VERSION || b[5] == 0 ||
	    b[5] > SHM_SOCK_NAME_MAX ||
	    addr_len != (size_t)SHM_BLOB_HDR_LEN + b[5]) {
		mrail_error("shm: malformed address blob (%zu bytes; want "
			    "'MRSA', version %u, a socket name)", addr_len,
			    SHM_BLOB_VERSION);
		return MRAIL_ERR_INVALID;
	}
	memcpy(name, b + SHM_BLOB_HDR_LEN, b[5]);
	name[b[5]] = '\0';

	struct mrail_drv_ep *ep = shm_ep_new(drv, SHM_EP_CONNECTING, ep_ctx);
	if (!ep)
		return MRAIL_ERR_NOMEM;
	ep->connector = true;
	ep->sock.fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK |
				      SOCK_CLOEXEC, 0);
	if (ep->sock.fd < 0) {
		rc = MRAIL_ERR_IO;
		goto fail;
	}
	snprintf(ep->remote_name, sizeof ep->remote_name, "shm:@%s", name);
	snprintf(ep->local_name, sizeof ep->local_name, "shm:pid %d",
		 (int)getpid());
	if (connect(ep->sock.fd, (struct sockaddr *)&sa,
		    sun_of(name, strlen(name), &sa)) < 0) {
		/* Reported from progress, like a refused TCP connect. */
		ep->connect_err = errno;
		shm_ep_need_attention(ep);
		*out = ep;
		return MRAIL_OK;
	}
	peer_names(ep, name);
	if ((rc = make_segment(ep, drv->par.ring, &memfd)) ||
	    (rc = new_bell(ep)) || (rc = watch(drv, &ep->sock)))
		goto fail;
	int fds[2] = {memfd, ep->bell.fd};
	int err = ctl_send(ep->sock.fd, SHM_HELLO_MAGIC, drv->par.ring,
			   (uint32_t)ep->seg_len, fds, 2);
	close(memfd);
	memfd = -1;
	if (err) {
		ep->connect_err = -err;
		shm_ep_need_attention(ep);
	}
	*out = ep;
	return MRAIL_OK;
fail:
	if (memfd >= 0)
		close(memfd);
	shm_ep_unmap(ep);
	shm_ep_release(ep);
	return rc;
}

/* ---- the set-up messages ----------------------------------------------- */

static void accept_one(struct mrail_drv *drv, struct shm_listener *l)
{
	int fd = accept4(l->poll.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0) {
		if (errno != EAGAIN && errno != EINTR)
			mrail_warn("shm: accept on @%s: %s", l->name,
				   strerror(errno));
		return;
	}
	struct mrail_drv_ep *ep = shm_ep_new(drv, SHM_EP_ACCEPTING, NULL);
	if (!ep) {
		close(fd);
		return;
	}
	ep->sock.fd = fd;
	peer_names(ep, NULL);
	snprintf(ep->local_name, sizeof ep->local_name, "shm:@%s", l->name);
	if (watch(drv, &ep->sock)) {
		shm_ep_unmap(ep);
		shm_ep_release(ep);
	}
}

/* Drop a connection the engine never saw. */
static void drop_quietly(struct mrail_drv_ep *ep, const char *why)
{
	mrail_warn("shm: connection from %s dropped: %s", ep->remote_name, why);
	shm_ep_unmap(ep);
	ep->state = SHM_EP_CLOSED;
	shm_ep_release(ep);
}

static void on_hello(struct mrail_drv_ep *ep)
{
	struct mrail_drv *drv = ep->drv;
	uint8_t msg[SHM_CTL_LEN + 1];
	int fds[2];
	ssize_t n = ctl_recv(ep->sock.fd, msg, sizeof msg, fds, 2);
	char why[160];

	if (n == -EAGAIN)
		return;
	if (n != SHM_CTL_LEN || shm_get_le32(msg) != SHM_HELLO_MAGIC ||
	    fds[0] < 0 || fds[1] < 0) {
		snprintf(why, sizeof why, "its HELLO is malformed (%zd bytes, "
			 "%s descriptors)", n, fds[0] < 0 || fds[1] < 0
			 ? "missing" : "with");
		goto bad;
	}
	uint32_t ver = shm_get_le32(msg + 4), ring = shm_get_le32(msg + 8);
	uint32_t len = shm_get_le32(msg + 12);
	if (ver != SHM_SEG_VERSION) {
		snprintf(why, sizeof why, "segment version %u, we speak %u",
			 ver, SHM_SEG_VERSION);
		goto bad;
	}
	if (ring < SHM_RING_MIN || ring > SHM_RING_MAX || (ring & (ring - 1)) ||
	    len != seg_size(ring)) {
		snprintf(why, sizeof why, "bad ring size %u or segment size %u",
			 ring, len);
		goto bad;
	}
	struct stat_len { off_t size; } st;
	st.size = lseek(fds[0], 0, SEEK_END);
	if (st.size < (off_t)len) {
		snprintf(why, sizeof why, "its segment has %lld bytes, not %u",
			 (long long)st.size, len);
		goto bad;
	}
	ep->seg = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	close(fds[0]);
	fds[0] = -1;
	if (ep->seg == MAP_FAILED) {
		ep->seg = NULL;
		snprintf(why, sizeof why, "mapping its segment: %s",
			 strerror(errno));
		goto bad;
	}
	ep->seg_len = len;
	const struct shm_seg_hdr *h = ep->seg;
	if (h->magic != SHM_SEG_MAGIC || h->ring_size != ring) {
		snprintf(why, sizeof why, "its segment header is wrong");
		goto bad;
	}
	map_rings(ep, ring);
	ep->peer_bell = fds[1];
	fds[1] = -1;
	if (new_bell(ep)) {
		snprintf(why, sizeof why, "no doorbell");
		goto bad;
	}
	int err = ctl_send(ep->sock.fd, SHM_WELCOME_MAGIC, 0, 0, &ep->bell.fd, 1);
	if (err) {
		snprintf(why, sizeof why, "sending WELCOME: %s", strerror(-err));
		goto bad;
	}
	ep->state = SHM_EP_CONNECTED;
	ep->ctx = drv->base.up->accepted(drv->base.engine_ctx, ep);
	if (ep->state == SHM_EP_CONNECTED && !ep->ctx) {
		shm_ep_unmap(ep);
		ep->state = SHM_EP_CLOSED;
		shm_ep_release(ep);
	}
	return;
bad:
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	drop_quietly(ep, why);
}

static void on_welcome(struct mrail_drv_ep *ep)
{
	uint8_t msg[SHM_CTL_LEN + 1];
	int fd;
	ssize_t n = ctl_recv(ep->sock.fd, msg, sizeof msg, &fd, 1);

	if (n == -EAGAIN)
		return;
	if (n == 0 || n == -ECONNRESET) {
		ep->state = SHM_EP_FAILED;
		ep->drv->base.up->connected(ep->ctx, MRAIL_ERR_PEER);
		return;
	}
	if (n != SHM_CTL_LEN || shm_get_le32(msg) != SHM_WELCOME_MAGIC ||
	    shm_get_le32(msg + 4) != SHM_SEG_VERSION || fd < 0) {
		if (fd >= 0)
			close(fd);
		mrail_warn("shm: malformed WELCOME from %s (%zd bytes)",
			   ep->remote_name, n);
		ep->state = SHM_EP_FAILED;
		ep->drv->base.up->connected(ep->ctx, MRAIL_ERR_PROTO);
		return;
	}
	ep->peer_bell = fd;
	ep->state = SHM_EP_CONNECTED;
	ep->drv->base.up->connected(ep->ctx, 0);
	if (ep->state == SHM_EP_CONNECTED && ep->sq_head)
		shm_flush(ep);
}

/* The socket of a connected endpoint: only its end is expected. */
static void on_sock_connected(struct mrail_drv_ep *ep, uint32_t events)
{
	uint8_t b[SHM_CTL_LEN];
	int fd;
	ssize_t n = (events & EPOLLIN) ? ctl_recv(ep->sock.fd, b, sizeof b,
						  &fd, 1) : 0;

	if (n == -EAGAIN && !(events & (EPOLLHUP | EPOLLERR)))
		return;
	if (n > 0) {
		if (fd >= 0)
			close(fd);
		shm_ep_fail(ep, MRAIL_ERR_PROTO, "shm: %s sent %zd bytes on "
			    "its set-up socket after set-up", ep->remote_name,
			    n);
		return;
	}
	/* What the peer put in the ring before it went is still data. */
	shm_rx(ep);
	shm_ep_fail(ep, MRAIL_ERR_PEER, "shm: peer %s closed the connection "
		    "or died", ep->remote_name);
}

int shm_handle_event(struct mrail_drv *drv, struct shm_pollable *p,
		     uint32_t events)
{
	struct mrail_drv_ep *ep = p->obj;

	switch (p->kind) {
	case SHM_OBJ_LISTENER:
		accept_one(drv, p->obj);
		return 1;
	case SHM_OBJ_BELL: {
		uint64_t v;
		if (read(p->fd, &v, sizeof v) < 0 && errno != EAGAIN)
			mrail_debug("shm: doorbell read: %s", strerror(errno));
		return 0; /* the rings are polled anyway */
	}
	case SHM_OBJ_SOCK:
		break;
	}
	switch (ep->state) {
	case SHM_EP_ACCEPTING:
		on_hello(ep);
		return 1;
	case SHM_EP_CONNECTING:
		on_welcome(ep);
		return 1;
	case SHM_EP_CONNECTED:
		on_sock_connected(ep, events);
		return 1;
	default:
		return 0;
	}
}

int shm_handle_attention(struct mrail_drv *drv)
{
	int n = 0;

	while (drv->attention) {
		struct mrail_drv_ep *ep = drv->attention;
		drv->attention = ep->attention_next;
		ep->attention_next = NULL;
		ep->needs_attention = false;
		if (ep->state != SHM_EP_CONNECTING || !ep->connect_err)
			continue;
		mrail_info("shm: connecting to %s: %s", ep->remote_name,
			   strerror(ep->connect_err));
		ep->state = SHM_EP_FAILED;
		drv->base.up->connected(ep->ctx, MRAIL_ERR_PEER);
		n++;
	}
	return n;
}

/* ---- failure and close ------------------------------------------------- */

void shm_ep_fail(struct mrail_drv_ep *ep, int status, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	if (ep->state != SHM_EP_CONNECTED)
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	if (status == MRAIL_ERR_PROTO)
		mrail_warn("%s", why);
	else
		mrail_info("%s", why);
	ep->state = SHM_EP_FAILED;
	/* The peer must see the failure too. */
	shutdown(ep->sock.fd, SHUT_RDWR);
	if (ep->sock.fd >= 0)
		epoll_ctl(ep->drv->epfd, EPOLL_CTL_DEL, ep->sock.fd, NULL);
	shm_report_done_of(ep);
	if (ep->state == SHM_EP_CLOSED)
		return;
	ep->drv->base.up->ep_error(ep->ctx, status, why);
	if (ep->state == SHM_EP_CLOSED)
		return;
	shm_sendq_fail(ep, status);
}

void shm_ep_unmap(struct mrail_drv_ep *ep)
{
	/* Leave the epoll set explicitly: the peer holds a duplicate of
	 * our doorbell, which would keep it in the set after close. */
	if (ep->sock.fd >= 0) {
		epoll_ctl(ep->drv->epfd, EPOLL_CTL_DEL, ep->sock.fd, NULL);
		close(ep->sock.fd);
	}
	if (ep->bell.fd >= 0) {
		epoll_ctl(ep->drv->epfd, EPOLL_CTL_DEL, ep->bell.fd, NULL);
		close(ep->bell.fd);
	}
	if (ep->peer_bell >= 0)
		close(ep->peer_bell);
	ep->sock.fd = ep->bell.fd = ep->peer_bell = -1;
	if (ep->seg)
		munmap(ep->seg, ep->seg_len);
	ep->seg = NULL;
}

void shm_ep_close(struct mrail_drv_ep *ep)
{
	shm_drop_of(ep);
	shm_ep_unmap(ep);
	ep->state = SHM_EP_CLOSED;
	shm_ep_release(ep);
}
