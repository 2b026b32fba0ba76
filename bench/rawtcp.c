/*
 * rawtcp: raw TCP baseline (same interface, same polling, same pattern as
 * the engine measurements).
 */
#include "rawtcp.h"
#include "bench_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define ACCEPT_TIMEOUT_NS (30ull * 1000000000ull)

int raw_endpoint_host(const char *ep, char *host, size_t cap)
{
	const char *start = ep, *end;
	unsigned char tmp[sizeof(struct in6_addr)];
	int family = AF_INET;

	if (*ep == '[') {
		start = ep + 1;
		end = strchr(start, ']');
		family = AF_INET6;
	} else {
		end = strrchr(ep, ':');
		if (end && memchr(ep, ':', (size_t)(end - ep)))
			return -1; /* bare IPv6 with port: ambiguous */
	}
	if (!end || (size_t)(end - start) >= cap)
		return -1;
	memcpy(host, start, (size_t)(end - start));
	host[end - start] = '\0';
	return inet_pton(family, host, tmp) == 1 ? 0 : -1;
}

static void set_int(int fd, int level, int opt, int val, const char *name)
{
	if (setsockopt(fd, level, opt, &val, sizeof val))
		bench_die_errno("raw TCP: setsockopt(%s, %d)", name, val);
}

static void set_bufs(int fd, long sockbuf)
{
	/* As the TCP driver does: the kernel caps the values at
	 * net.core.[wr]mem_max (and doubles them). */
	if (sockbuf <= 0)
		return;
	set_int(fd, SOL_SOCKET, SO_SNDBUF, (int)sockbuf, "SO_SNDBUF");
	set_int(fd, SOL_SOCKET, SO_RCVBUF, (int)sockbuf, "SO_RCVBUF");
}

static struct addrinfo *resolve(const char *host, const char *port, int passive)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV |
			    (passive ? AI_PASSIVE : 0),
	}, *ai;
	int rc = getaddrinfo(host, port, &hints, &ai);
	if (rc)
		bench_die("raw TCP: address '%s' port %s: %s", host, port,
			  gai_strerror(rc));
	return ai;
}

static void default_addr(struct raw_ctx *r, const char *addr)
{
	struct mrail_rail_stats st;
	int n;

	if (addr) {
		snprintf(r->addr, sizeof r->addr, "%s", addr);
		return;
	}
	snprintf(r->addr, sizeof r->addr, "127.0.0.1");
	n = mrail_rail_count(r->sync->e, r->sync->peer);
	if (n < 0)
		bench_die("mrail_rail_count(peer %u) failed: %s (%d)",
			  r->sync->peer, mrail_strerror(n), n);
	if (n == 0)
		return;
	MRAIL_CHECK(mrail_rail_stats(r->sync->e, r->sync->peer, 0, &st));
	if (raw_endpoint_host(st.local, r->addr, sizeof r->addr)) {
		fprintf(stderr, "mrail-bench: rail 0 endpoint '%s' is not a numeric "
			"IP address; raw TCP baseline uses 127.0.0.1\n", st.local);
		snprintf(r->addr, sizeof r->addr, "127.0.0.1");
	}
}

static int listen_and_announce(struct raw_ctx *r, long sockbuf)
{
	struct addrinfo *ai = resolve(r->addr, "0", 1);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	char host[INET6_ADDRSTRLEN + 1], port[NI_MAXSERV], msg[128];
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		bench_die_errno("raw TCP: socket");
	set_int(fd, SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR");
	set_bufs(fd, sockbuf); /* inherited by the accepted socket */
	if (bind(fd, ai->ai_addr, ai->ai_addrlen))
		bench_die_errno("raw TCP: bind to %s", r->addr);
	freeaddrinfo(ai);
	if (listen(fd, 1))
		bench_die_errno("raw TCP: listen");
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) ||
	    getnameinfo((struct sockaddr *)&ss, sl, host, sizeof host, port,
			sizeof port, NI_NUMERICHOST | NI_NUMERICSERV))
		bench_die_errno("raw TCP: getsockname");
	snprintf(msg, sizeof msg, "%s %s", host, port);
	eng_send(r->sync, msg, strlen(msg) + 1, BENCH_TAG_SETUP);
	return fd;
}

/* Accept without blocking the engine: rank 1 learns the port through it. */
static int accept_polling(struct raw_ctx *r, int lfd)
{
	uint64_t start = bench_now_ns();
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0)
			return fd;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			bench_die_errno("raw TCP: accept");
		int rc = mrail_progress(r->sync->e);
		if (rc < 0)
			bench_die("mrail_progress failed: %s (%d)",
				  mrail_strerror(rc), rc);
		if (bench_now_ns() - start > ACCEPT_TIMEOUT_NS)
			bench_die("raw TCP: rank 1 did not connect within 30 s");
	}
}

static int connect_announced(struct raw_ctx *r, long sockbuf)
{
	char msg[128], host[64], port[16];
	size_t n = eng_recv(r->sync, msg, sizeof msg - 1, BENCH_TAG_SETUP);
	struct addrinfo *ai;
	int fd;

	msg[n] = '\0';
	if (sscanf(msg, "%63s %15s", host, port) != 2)
		bench_die("raw TCP: bad setup message '%s'", msg);
	snprintf(r->addr, sizeof r->addr, "%s", host);
	ai = resolve(host, port, 0);
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		bench_die_errno("raw TCP: socket");
	set_bufs(fd, sockbuf);
	set_int(fd, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY");
	if (connect(fd, ai->ai_addr, ai->ai_addrlen))
		bench_die_errno("raw TCP: connect to %s port %s", host, port);
	freeaddrinfo(ai);
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK))
		bench_die_errno("raw TCP: O_NONBLOCK");
	return fd;
}

void raw_setup(struct raw_ctx *r, struct eng_ctx *sync, const char *addr,
	       long sockbuf)
{
	socklen_t sl = sizeof(int);

	memset(r, 0, sizeof *r);
	r->rank = sync->rank;
	r->sync = sync;
	if (r->rank == 0) {
		default_addr(r, addr);
		int lfd = listen_and_announce(r, sockbuf);
		r->fd = accept_polling(r, lfd);
		close(lfd);
	} else {
		r->fd = connect_announced(r, sockbuf);
	}
	set_int(r->fd, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY");
	if (getsockopt(r->fd, SOL_SOCKET, SO_SNDBUF, &r->sndbuf, &sl) ||
	    getsockopt(r->fd, SOL_SOCKET, SO_RCVBUF, &r->rcvbuf, &sl))
		bench_die_errno("raw TCP: getsockopt(SO_SNDBUF/SO_RCVBUF)");
	eng_barrier(sync);
}

void raw_close(struct raw_ctx *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

static void send_all(int fd, const unsigned char *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
		} else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
			   errno != EINTR) {
			bench_die_errno("raw TCP: send");
		}
	}
}

static void recv_all(int fd, unsigned char *p, size_t len)
{
	while (len) {
		ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
		} else if (n == 0) {
			bench_die("raw TCP: peer closed the connection");
		} else if (errno != EAGAIN && errno != EWOULDBLOCK &&
			   errno != EINTR) {
			bench_die_errno("raw TCP: recv");
		}
	}
}

static void verify(const void *buf, size_t len, uint64_t seed,
		   const char *what, int i)
{
	size_t bad;
	if (bench_verify(buf, len, seed, &bad))
		bench_die("--check: %s %d of %zu bytes: wrong data at offset %zu",
			  what, i, len, bad);
}

void raw_lat(struct raw_ctx *r, const struct bench_bufs *b,
	     const struct bench_xfer *x)
{
	const int n = x->warmup + x->iters;

	eng_barrier(r->sync);
	if (r->rank == 0) {
		unsigned char *s = bench_bufs_slot(b, b->tx, x->size, 0);
		unsigned char *d = bench_bufs_slot(b, b->rx, x->size, 0);
		for (int i = 0; i < n; i++) {
			if (x->check)
				bench_fill(s, x->size, bench_seed_lat(x, i));
			uint64_t t0 = bench_now_ns();
			send_all(r->fd, s, x->size);
			recv_all(r->fd, d, x->size);
			uint64_t t1 = bench_now_ns();
			if (x->check)
				verify(d, x->size, bench_seed_lat(x, i), "raw pong", i);
			if (i >= x->warmup)
				x->samples[i - x->warmup] = (double)(t1 - t0) / 2e3;
		}
	} else {
		for (int i = 0; i < n; i++) {
			unsigned char *cur = bench_bufs_slot(b, b->rx, x->size, i % 2);
			recv_all(r->fd, cur, x->size);
			if (x->check)
				verify(cur, x->size, bench_seed_lat(x, i), "raw ping", i);
			send_all(r->fd, cur, x->size);
		}
	}
}

double raw_bw(struct raw_ctx *r, const struct bench_bufs *b,
	      const struct bench_xfer *x)
{
	const int n = x->warm_win + x->nwin;
	unsigned char ack = 1;
	uint64_t t0 = 0;

	eng_barrier(r->sync);
	if (r->rank == 0) {
		for (int w = 0; w < n; w++) {
			if (w == x->warm_win)
				t0 = bench_now_ns();
			for (int j = 0; j < x->window; j++) {
				unsigned char *s =
				bench_bufs_slot(b, b->tx, x->size, j % x->slots);
				if (x->check)
					bench_fill(s, x->size, bench_seed_bw(x, w, j));
				send_all(r->fd, s, x->size);
			}
			recv_all(r->fd, &ack, 1);
		}
		return (double)(bench_now_ns() - t0) / 1e9;
	}
	for (int w = 0; w < n; w++) {
		for (int j = 0; j < x->window; j++) {
			unsigned char *d = bench_bufs_slot(b, b->rx, x->size, j % x->slots);
			recv_all(r->fd, d, x->size);
			if (x->check)
				verify(d, x->size, bench_seed_bw(x, w, j),
				       "raw stream message", w * x->window + j);
		}
		send_all(r->fd, &ack, 1);
	}
	return 0;
}
