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

static socklen_t sun_of(const char *name, size_t len, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof *sa);
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path + 1, name, len); /* abstract: leading NUL */
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
}

/* ---- doorbells in the epoll set ---------------------------------------- */

int shm_bell_watch(struct mrail_drv *drv, struct shm_bell *b)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = b};

	b->poll.kind = DC_OBJ_OTHER;
	if (epoll_ctl(drv->dc.epfd, EPOLL_CTL_ADD, b->poll.fd, &ev) < 0) {
		mrail_error("shm: epoll_ctl for a doorbell: %s",
			    strerror(errno));
		return MRAIL_ERR_IO;
	}
	return 0;
}

/* Leave the epoll set explicitly: the peer holds a duplicate of our
 * doorbell, which would keep it in the set after close. */
void shm_bell_unwatch(struct mrail_drv *drv, struct shm_bell *b)
{
	if (b->poll.fd < 0)
		return;
	epoll_ctl(drv->dc.epfd, EPOLL_CTL_DEL, b->poll.fd, NULL);
	close(b->poll.fd);
	b->poll.fd = -1;
}

void shm_bell_events(struct dc_drv *drv, struct dc_pollable *obj,
		     uint32_t events)
{
	uint64_t v;

	(void)drv;
	(void)events;
	/* The rings are polled anyway: only drain. */
	if (read(obj->fd, &v, sizeof v) < 0 && errno != EAGAIN)
		mrail_debug("shm: doorbell read: %s", strerror(errno));
}

/* ---- listen ------------------------------------------------------------ */

int shm_listen(struct mrail_drv *drv, const char *local, void *addr,
	       size_t *addr_len, char *name, size_t name_len)
{
	struct dc_listener *l;
	struct sockaddr_un sa;
	char sock[SHM_SOCK_NAME_MAX + 1];
	size_t nlen;
	int rc;

	(void)local; /* one kind of address: this host */
	/* Random part: processes of other pid namespaces may share our pid
	 * and our network namespace (where abstract names live). */
	uint32_t salt = 0;
	if (getrandom(&salt, sizeof salt, GRND_NONBLOCK) != sizeof salt)
		salt = (uint32_t)(uintptr_t)&salt ^ (uint32_t)getpid() << 16;
	snprintf(sock, sizeof sock, "mrail-shm-%d-%u-%08x", (int)getpid(),
		 atomic_fetch_add(&name_counter, 1), salt);
	nlen = strlen(sock);
	if (*addr_len < SHM_BLOB_HDR_LEN + nlen) {
		*addr_len = SHM_BLOB_HDR_LEN + nlen;
		return MRAIL_ERR_INVALID;
	}
	if (!(l = calloc(1, sizeof *l)))
		return MRAIL_ERR_NOMEM;
	snprintf(l->name, sizeof l->name, "@%s", sock);
	l->poll.fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK |
				     SOCK_CLOEXEC, 0);
	if (l->poll.fd < 0 ||
	    bind(l->poll.fd, (struct sockaddr *)&sa, sun_of(sock, nlen, &sa)) ||
	    listen(l->poll.fd, 4096)) {
		mrail_error("shm: listening on %s: %s", l->name,
			    strerror(errno));
		if (l->poll.fd >= 0)
			close(l->poll.fd);
		free(l);
		return MRAIL_ERR_IO;
	}
	if ((rc = dc_listener_add(&drv->dc, l)) < 0) {
		close(l->poll.fd);
		free(l);
		return rc;
	}
	uint8_t *b = addr;
	memcpy(b, "MRSA", 4);
	b[4] = SHM_BLOB_VERSION;
	b[5] = (uint8_t)nlen;
	memcpy(b + SHM_BLOB_HDR_LEN, sock, nlen);
	*addr_len = SHM_BLOB_HDR_LEN + nlen;
	if (name && name_len)
		snprintf(name, name_len, "shm:%s", l->name);
	return rc;
}

/* ---- socket messages with descriptors ---------------------------------- */

int shm_ctl_send(int sock, uint32_t magic, uint32_t a, uint32_t b,
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
	ep->bell.poll.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ep->bell.poll.fd < 0) {
		mrail_error("shm: eventfd: %s", strerror(errno));
		return MRAIL_ERR_IO;
	}
	return shm_bell_watch((struct mrail_drv *)ep->dc.drv, &ep->bell);
}

static void peer_pid_of(struct mrail_drv_ep *ep)
{
	struct ucred cr;
	socklen_t len = sizeof cr;

	if (getsockopt(ep->dc.poll.fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0)
		ep->peer_pid = cr.pid;
}

static struct mrail_drv_ep *ep_alloc(struct mrail_drv *drv, int fd,
				     void *ctx)
{
	struct mrail_drv_ep *ep = calloc(1, sizeof *ep);

	if (!ep)
		return NULL;
	ep->bell = (struct shm_bell){{DC_OBJ_OTHER, -1}, ep};
	ep->peer_bell = -1;
	dc_ep_add(&drv->dc, &ep->dc, fd, DC_EP_CONNECTING, ctx);
	return ep;
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
	int memfd = -1, rc, fd;

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

	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		mrail_error("shm: socket: %s", strerror(errno));
		return MRAIL_ERR_IO;
	}
	struct mrail_drv_ep *ep = ep_alloc(drv, fd, ep_ctx);
	if (!ep) {
		close(fd);
		return MRAIL_ERR_NOMEM;
	}
	ep->connector = true;
	snprintf(ep->dc.remote_name, sizeof ep->dc.remote_name, "shm:@%s",
		 name);
	snprintf(ep->dc.local_name, sizeof ep->dc.local_name, "shm:pid %d",
		 (int)getpid());
	*out = ep;
	if (connect(fd, (struct sockaddr *)&sa,
		    sun_of(name, strlen(name), &sa)) < 0) {
		/* Reported from progress, like a refused TCP connect. */
		ep->dc.connect_errno = errno;
		dc_ep_need_attention(&ep->dc);
		return MRAIL_OK;
	}
	peer_pid_of(ep);
	snprintf(ep->dc.remote_name, sizeof ep->dc.remote_name,
		 "shm:pid %d @%s", (int)ep->peer_pid, name);
	if ((rc = make_segment(ep, drv->par.ring, &memfd)) ||
	    (rc = new_bell(ep))) {
		if (memfd >= 0)
			close(memfd);
		dc_ep_close(&ep->dc);
		*out = NULL;
		return rc;
	}
	dc_ep_update_events(&ep->dc);
	int fds[2] = {memfd, ep->bell.poll.fd};
	int err = shm_ctl_send(fd, SHM_HELLO_MAGIC, drv->par.ring,
			   (uint32_t)ep->seg_len, fds, 2);
	close(memfd);
	if (err) {
		ep->dc.connect_errno = -err;
		dc_ep_need_attention(&ep->dc);
	}
	return MRAIL_OK;
}

/* ---- the set-up messages ----------------------------------------------- */

/* The engine hears of an accepted connection once its HELLO is in. */
struct dc_ep *shm_ep_accept(struct dc_drv *dc, struct dc_listener *l, int fd)
{
	struct mrail_drv_ep *ep = ep_alloc((struct mrail_drv *)dc, fd, NULL);

	if (!ep) {
		close(fd);
		return NULL;
	}
	ep->accepting = true;
	peer_pid_of(ep);
	snprintf(ep->dc.local_name, sizeof ep->dc.local_name, "shm:%.64s",
		 l->name);
	snprintf(ep->dc.remote_name, sizeof ep->dc.remote_name, "shm:pid %d",
		 (int)ep->peer_pid);
	dc_ep_update_events(&ep->dc);
	return NULL; /* not yet: dc_ep_accepted after the HELLO */
}

/* Drop a connection the engine never saw. */
static void drop_quietly(struct mrail_drv_ep *ep, const char *why)
{
	mrail_warn("shm: connection from %s dropped: %s", ep->dc.remote_name,
		   why);
	dc_ep_close(&ep->dc);
}

static void on_hello(struct mrail_drv_ep *ep)
{
	uint8_t msg[SHM_CTL_LEN + 1];
	int fds[2];
	ssize_t n = ctl_recv(ep->dc.poll.fd, msg, sizeof msg, fds, 2);
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
	off_t size = lseek(fds[0], 0, SEEK_END);
	if (size < (off_t)len) {
		snprintf(why, sizeof why, "its segment has %lld bytes, not %u",
			 (long long)size, len);
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
	int err = shm_ctl_send(ep->dc.poll.fd, SHM_WELCOME_MAGIC, 0, 0,
			   &ep->bell.poll.fd, 1);
	if (err) {
		snprintf(why, sizeof why, "sending WELCOME: %s", strerror(-err));
		goto bad;
	}
	ep->accepting = false;
	ep->dc.state = DC_EP_CONNECTED;
	dc_ep_accepted(&ep->dc);
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
	ssize_t n = ctl_recv(ep->dc.poll.fd, msg, sizeof msg, &fd, 1);

	if (n == -EAGAIN)
		return;
	if (n == 0 || n == -ECONNRESET) {
		dc_ep_connect_failed(&ep->dc, ECONNRESET);
		return;
	}
	if (n != SHM_CTL_LEN || shm_get_le32(msg) != SHM_WELCOME_MAGIC ||
	    shm_get_le32(msg + 4) != SHM_SEG_VERSION || fd < 0) {
		if (fd >= 0)
			close(fd);
		mrail_warn("shm: malformed WELCOME from %s (%zd bytes)",
			   ep->dc.remote_name, n);
		dc_ep_connect_failed(&ep->dc, EPROTO);
		return;
	}
	ep->peer_bell = fd;
	ep->dc.state = DC_EP_CONNECTED;
	ep->dc.drv->base.up->connected(ep->dc.ctx, 0);
	if (ep->dc.state == DC_EP_CONNECTED && ep->dc.sq_head)
		shm_flush(ep);
}

/* The socket of a connected endpoint: only its end is expected. */
static void on_sock_connected(struct mrail_drv_ep *ep, uint32_t events)
{
	uint8_t b[SHM_CTL_LEN];
	int fd;
	ssize_t n = (events & EPOLLIN) ? ctl_recv(ep->dc.poll.fd, b, sizeof b,
						  &fd, 1) : 0;

	if (n == -EAGAIN && !(events & (EPOLLHUP | EPOLLERR)))
		return;
	if (n > 0) {
		if (fd >= 0)
			close(fd);
		dc_ep_fail(&ep->dc, MRAIL_ERR_PROTO, false, "%s sent %zd "
			   "bytes on its set-up socket after set-up",
			   ep->dc.remote_name, n);
		return;
	}
	/* What the peer put in the ring before it went is still data. */
	shm_rx(ep);
	/* Same host, no link in between: a hang-up means the peer's process
	 * closed the connection or is gone, never a failing path. Reported
	 * as tcp reports a reset (MRAIL_ERR_PEER_CLOSED), so the engine fails
	 * the peer at once instead of waiting out the rail timeout. */
	dc_ep_fail(&ep->dc, MRAIL_ERR_PEER_CLOSED, false, "peer %s closed "
		   "the connection or died", ep->dc.remote_name);
}

void shm_ep_events(struct dc_ep *dc, uint32_t events)
{
	struct mrail_drv_ep *ep = shm_ep(dc);

	if (dc->state == DC_EP_CONNECTING)
		ep->accepting ? on_hello(ep) : on_welcome(ep);
	else if (dc->state == DC_EP_CONNECTED)
		on_sock_connected(ep, events);
}

uint32_t shm_ep_wanted_events(const struct dc_ep *dc)
{
	return dc->state == DC_EP_CONNECTING || dc->state == DC_EP_CONNECTED
	       ? EPOLLIN : 0;
}

void shm_ep_attend(struct dc_ep *dc)
{
	if (dc->state == DC_EP_CONNECTING && dc->connect_errno)
		dc_ep_connect_failed(dc, dc->connect_errno);
}

/* ---- failure and close ------------------------------------------------- */

/* The peer must see the failure too. */
void shm_ep_stop(struct dc_ep *dc)
{
	if (dc->poll.fd >= 0)
		shutdown(dc->poll.fd, SHUT_RDWR);
}

void shm_ep_closing(struct dc_ep *dc)
{
	shm_bell_unwatch((struct mrail_drv *)dc->drv, &shm_ep(dc)->bell);
}

void shm_ep_free(struct dc_ep *dc)
{
	struct mrail_drv_ep *ep = shm_ep(dc);

	shm_bell_unwatch((struct mrail_drv *)dc->drv, &ep->bell);
	if (ep->peer_bell >= 0)
		close(ep->peer_bell);
	if (ep->seg)
		munmap(ep->seg, ep->seg_len);
	free(ep->head_buf);
	free(ep);
}
