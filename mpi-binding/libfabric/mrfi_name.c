/*
 * Endpoint names. MPI libraries keep a peer's name in FI_NAME_MAX (64)
 * bytes, and an engine's address blob is hundreds, so fi_getname returns
 * a short name that says where to fetch the blob: a small TCP service per
 * endpoint (one thread, answers while the application computes) and a
 * random token that proves the right process answered. The asking side
 * sends its own blob too, and the service adds it to the engine: a peer
 * that only receives learns who sends to it, as libfabric's RDM model
 * (any peer may send) and libmrail's (both sides add each other) need.
 * Format and exchange: docs/provider.md "Endpoint names".
 */
#include "mrfi.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#define NAME_VERSION 1
#define NAME_HDR 24
#define NAME_ADDRS_MAX ((FI_NAME_MAX - NAME_HDR) / 4)
#define REPLY_HDR 8
#define IO_TIMEOUT_MS 10000
#define CONNECT_TIMEOUT_MS 3000
/* In place of a blob length: "sample the rails with me" (then the
 * asker's engine uuid, 8 bytes; the answer is 1 byte). */
#define SAMPLE_REQUEST 0xFFFFFFFFu

struct mrfi_name_srv {
	struct mrfi_ep *ep;
	int lfd;
	int stop[2];
	pthread_t thread;
	uint64_t token;
	unsigned char *blob;
	size_t blob_len;
};

static int io_all(int fd, void *buf, size_t len, int wr)
{
	unsigned char *p = buf;
	while (len) {
		struct pollfd pfd = { fd, wr ? POLLOUT : POLLIN, 0 };
		int r = poll(&pfd, 1, IO_TIMEOUT_MS);
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			return -1;
		}
		ssize_t n = wr ? send(fd, p, len, MSG_NOSIGNAL)
			       : recv(fd, p, len, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A peer that added us asks to sample the rails with it, leading
 * (mrfi_sample.c): answer 1 and take the other side of the exchange, or 0
 * when this endpoint is sampling already (never wait: two endpoints
 * asking each other would deadlock) or does not know the peer. */
static void serve_sample(struct mrfi_name_srv *s, int fd)
{
	uint64_t uuid;
	mrail_peer_t peer;
	if (io_all(fd, &uuid, sizeof uuid, 0))
		return;
	int ok = mrfi_ep_peer_by_uuid(s->ep, uuid, &peer) == 0 &&
		 mrfi_sample_try_begin(s->ep);
	unsigned char yes = (unsigned char)ok;
	if (io_all(fd, &yes, 1, 1)) {
		if (ok)
			mrfi_sample_end(s->ep, 0);
		return;
	}
	if (ok)
		mrfi_sample_end(s->ep, mrfi_sample_with(s->ep, peer, 0));
}

static void serve_one(struct mrfi_name_srv *s, int fd)
{
	uint64_t token;
	uint32_t cl;
	if (io_all(fd, &token, sizeof token, 0) || token != s->token)
		return; /* not our name: close without a word */
	if (io_all(fd, &cl, sizeof cl, 0))
		return;
	cl = ntohl(cl);
	if (cl == SAMPLE_REQUEST) {
		serve_sample(s, fd);
		return;
	}
	if (cl > MRAIL_ADDR_MAX) {
		FI_WARN(&mrfi_prov, FI_LOG_EP_CTRL, "name service: a peer "
			"sent an address blob of %u bytes\n", cl);
		return;
	}
	unsigned char *cb = cl ? malloc(cl) : NULL;
	if (cl && (!cb || io_all(fd, cb, cl, 0))) {
		free(cb);
		return;
	}
	unsigned char hdr[REPLY_HDR] = { NAME_VERSION, 'M', 'R', 'B' };
	uint32_t n = htonl((uint32_t)s->blob_len);
	memcpy(hdr + 4, &n, 4);
	if (io_all(fd, hdr, sizeof hdr, 1) == 0)
		(void)io_all(fd, s->blob, s->blob_len, 1);
	if (cb) {
		mrail_peer_t p;
		(void)mrfi_ep_peer_by_blob(s->ep, cb, cl, &p); /* logs */
		free(cb);
	}
}

static void *srv_main(void *arg)
{
	struct mrfi_name_srv *s = arg;
	for (;;) {
		struct pollfd p[2] = { { s->lfd, POLLIN, 0 },
				       { s->stop[0], POLLIN, 0 } };
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		serve_one(s, fd);
		close(fd);
	}
	return NULL;
}

/* This host's IPv4 addresses peers may reach, loopback last (a peer on
 * the same host, or in a namespace without routes to the others). */
static int local_addrs(uint32_t *out, int max)
{
	struct ifaddrs *ifa = NULL;
	int n = 0;
	if (getifaddrs(&ifa) == 0) {
		for (struct ifaddrs *i = ifa; i && n < max - 1; i = i->ifa_next) {
			if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
			    !(i->ifa_flags & IFF_UP) ||
			    (i->ifa_flags & IFF_LOOPBACK))
				continue;
			out[n++] = ((struct sockaddr_in *)i->ifa_addr)
					   ->sin_addr.s_addr;
		}
		freeifaddrs(ifa);
	}
	out[n++] = htonl(INADDR_LOOPBACK);
	return n;
}

int mrfi_name_srv_start(struct mrfi_ep *ep, struct mrfi_name_srv **srv,
			unsigned char *name, size_t *name_len)
{
	mrail_engine_t *engine = ep->engine;
	struct mrfi_name_srv *s = calloc(1, sizeof *s);
	if (!s)
		return -FI_ENOMEM;
	s->ep = ep;
	s->lfd = -1;
	s->stop[0] = s->stop[1] = -1;
	s->blob_len = MRAIL_ADDR_MAX;
	s->blob = malloc(s->blob_len);
	int rc = -FI_ENOMEM;
	if (!s->blob)
		goto fail;
	rc = mrfi_err(mrail_address(engine, s->blob, &s->blob_len));
	if (rc)
		goto fail;
	if (getrandom(&s->token, sizeof s->token, 0) != sizeof s->token) {
		rc = -FI_EIO;
		goto fail;
	}
	rc = -FI_EIO;
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof sa;
	if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&sa, sizeof sa) ||
	    listen(s->lfd, 128) ||
	    getsockname(s->lfd, (struct sockaddr *)&sa, &sl) ||
	    pipe2(s->stop, O_CLOEXEC)) {
		FI_WARN(&mrfi_prov, FI_LOG_EP_CTRL,
			"name service: socket/bind/listen: %s\n",
			strerror(errno));
		goto fail;
	}
	uint32_t addrs[NAME_ADDRS_MAX];
	int n = local_addrs(addrs, NAME_ADDRS_MAX);
	memset(name, 0, FI_NAME_MAX);
	name[0] = NAME_VERSION;
	memcpy(name + 1, "MRF", 3);
	name[4] = (unsigned char)n;
	memcpy(name + 6, &sa.sin_port, 2);
	memcpy(name + 8, &s->token, 8);
	/* 16..23 reserved (0) */
	memcpy(name + NAME_HDR, addrs, (size_t)n * 4);
	/* Always FI_NAME_MAX bytes: applications pack names of one length
	 * into arrays for fi_av_insert. */
	*name_len = FI_NAME_MAX;
	if (pthread_create(&s->thread, NULL, srv_main, s)) {
		rc = -FI_EAGAIN;
		goto fail;
	}
	*srv = s;
	return 0;
fail:
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->stop[0] >= 0) {
		close(s->stop[0]);
		close(s->stop[1]);
	}
	free(s->blob);
	free(s);
	return rc;
}

void mrfi_name_srv_stop(struct mrfi_name_srv *s)
{
	if (!s)
		return;
	char c = 1;
	if (write(s->stop[1], &c, 1) != 1)
		FI_WARN(&mrfi_prov, FI_LOG_EP_CTRL, "name service: stop\n");
	pthread_join(s->thread, NULL);
	close(s->lfd);
	close(s->stop[0]);
	close(s->stop[1]);
	free(s->blob);
	free(s);
}

static int connect_to(uint32_t addr, uint16_t port_n)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = port_n };
	sa.sin_addr.s_addr = addr;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) && errno != EINPROGRESS)
		goto fail;
	struct pollfd p = { fd, POLLOUT, 0 };
	int err = 0;
	socklen_t el = sizeof err;
	if (poll(&p, 1, CONNECT_TIMEOUT_MS) != 1 ||
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) || err)
		goto fail;
	return fd;
fail:
	close(fd);
	return -1;
}

/* Fetch the engine blob behind a name; every address is tried in turn
 * and only the process that holds the token answers. */
int mrfi_name_resolve(const void *name, size_t len, const unsigned char *own,
		      size_t own_len, unsigned char **blob, size_t *blob_len)
{
	const unsigned char *b = name;
	if (len < NAME_HDR || memcmp(b + 1, "MRF", 3)) {
		FI_WARN(&mrfi_prov, FI_LOG_AV, "fi_av_insert: not an mrail "
			"endpoint name (%zu bytes)\n", len);
		return -FI_EINVAL;
	}
	if (b[0] != NAME_VERSION) {
		FI_WARN(&mrfi_prov, FI_LOG_AV, "fi_av_insert: endpoint name "
			"version %u, this provider reads %u\n", b[0],
			NAME_VERSION);
		return -FI_EINVAL;
	}
	unsigned n = b[4];
	if (n == 0 || n > NAME_ADDRS_MAX || len < NAME_HDR + n * 4) {
		FI_WARN(&mrfi_prov, FI_LOG_AV, "fi_av_insert: endpoint name "
			"truncated (%zu bytes, %u addresses)\n", len, n);
		return -FI_EINVAL;
	}
	uint16_t port;
	uint64_t token;
	memcpy(&port, b + 6, 2);
	memcpy(&token, b + 8, 8);
	for (unsigned i = 0; i < n; i++) {
		uint32_t a;
		memcpy(&a, b + NAME_HDR + i * 4, 4);
		int fd = connect_to(a, port);
		if (fd < 0)
			continue;
		unsigned char hdr[REPLY_HDR];
		uint32_t bl;
		uint32_t ol = htonl((uint32_t)own_len);
		if (io_all(fd, &token, sizeof token, 1) ||
		    io_all(fd, &ol, sizeof ol, 1) ||
		    (own_len && io_all(fd, (void *)own, own_len, 1)) ||
		    io_all(fd, hdr, sizeof hdr, 0) ||
		    memcmp(hdr, "\x01MRB", 4)) {
			close(fd);
			continue; /* someone else's service, or gone */
		}
		memcpy(&bl, hdr + 4, 4);
		bl = ntohl(bl);
		if (bl == 0 || bl > MRAIL_ADDR_MAX) {
			close(fd);
			FI_WARN(&mrfi_prov, FI_LOG_AV, "fi_av_insert: peer "
				"sent an address blob of %u bytes\n", bl);
			return -FI_EINVAL;
		}
		unsigned char *out = malloc(bl);
		if (!out) {
			close(fd);
			return -FI_ENOMEM;
		}
		int r = io_all(fd, out, bl, 0);
		close(fd);
		if (r) {
			free(out);
			continue;
		}
		*blob = out;
		*blob_len = bl;
		return 0;
	}
	char s[INET_ADDRSTRLEN] = "?";
	uint32_t a0;
	memcpy(&a0, b + NAME_HDR, 4);
	inet_ntop(AF_INET, &a0, s, sizeof s);
	FI_WARN(&mrfi_prov, FI_LOG_AV, "fi_av_insert: no answer from the "
		"endpoint's name service (%u addresses, first %s port %u): "
		"peer not running or unreachable\n", n, s, ntohs(port));
	return -FI_EHOSTUNREACH;
}

/* Ask the endpoint behind `name` to sample the rails with us, we
 * leading; 1 when it agreed (it then waits for our first message). */
int mrfi_name_ask_sample(const unsigned char *name, uint64_t own_uuid)
{
	unsigned n = name[4];
	uint16_t port;
	uint64_t token;
	if (n == 0 || n > NAME_ADDRS_MAX)
		return 0;
	memcpy(&port, name + 6, 2);
	memcpy(&token, name + 8, 8);
	uint32_t req = htonl(SAMPLE_REQUEST);
	for (unsigned i = 0; i < n; i++) {
		uint32_t a;
		unsigned char yes = 0;
		memcpy(&a, name + NAME_HDR + i * 4, 4);
		int fd = connect_to(a, port);
		if (fd < 0)
			continue;
		int r = io_all(fd, &token, sizeof token, 1) ||
			io_all(fd, &req, sizeof req, 1) ||
			io_all(fd, &own_uuid, sizeof own_uuid, 1) ||
			io_all(fd, &yes, 1, 0);
		close(fd);
		if (!r)
			return yes == 1;
	}
	return 0;
}
