/*
 * netlab-stream: one TCP stream, for netlab's rate measurement and
 * connectivity checks (no iperf3 needed).
 *
 *   netlab-stream recv [-b ADDR] [-p PORT] [-c CPU] [-t SECS]
 *   netlab-stream send -a ADDR [-p PORT] [-s SECS | -n BYTES] [-c CPU]
 *                      [-b SRCADDR] [-t SECS]
 *
 * recv listens (port 0 = any), prints "listening PORT" at once, accepts
 * one connection, reads until EOF, answers the sender with what it
 * counted and exits. The rate is the receiver's: bytes / (time of the last
 * read - time of the first read), so neither connection set-up nor the
 * bytes still sitting in the sender's socket buffer count.
 * send connects, writes 64 KiB blocks for -s seconds (default 2) or -n
 * bytes, shuts down its side, waits for the receiver's count and prints
 *
 *   rate_mbit=941.3 bytes=235307008 seconds=2.000 local=10.77.10.1 remote=10.77.10.2
 *
 * (1 Mbit = 10^6 bit). -c pins the process to one CPU; -t is an overall
 * time limit (default: 30 s for recv, the send time + 10 s for send; 0 =
 * none). Exit status 0 on success, 1 on any error, 2 on a usage error.
 */
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BLOCK (64 * 1024)
#define RBUF (256 * 1024)

static const char *mode = "?";

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "netlab-stream %s: ", mode);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: netlab-stream recv [-b ADDR] [-p PORT] [-c CPU] [-t SECS]\n"
		"       netlab-stream send -a ADDR [-p PORT] [-s SECS | -n BYTES]"
		" [-c CPU] [-b SRCADDR] [-t SECS]\n");
	exit(2);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void on_alarm(int sig)
{
	static const char msg[] = "netlab-stream: time limit reached\n";

	(void)sig;
	if (write(2, msg, sizeof msg - 1) < 0) {
		/* nothing more to do */
	}
	_exit(1);
}

static void pin(long cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	if (cpu >= CPU_SETSIZE)
		die("bad CPU %ld", cpu);
	CPU_ZERO(&set);
	CPU_SET((int)cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set))
		die("pin to CPU %ld: %s", cpu, strerror(errno));
}

static long num(const char *s, const char *what, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "netlab-stream: bad %s '%s'\n", what, s);
		exit(2);
	}
	return v;
}

static double dnum(const char *s, const char *what)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0) || v > 86400) {
		fprintf(stderr, "netlab-stream: bad %s '%s'\n", what, s);
		exit(2);
	}
	return v;
}

/* Resolves a numeric address (IPv4, IPv6, IPv6 with %scope) and port. */
static struct addrinfo *resolve(const char *addr, long port, int passive)
{
	struct addrinfo hints, *res;
	char ps[16];
	int rc;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
	snprintf(ps, sizeof ps, "%ld", port);
	rc = getaddrinfo(addr, ps, &hints, &res);
	if (rc)
		die("address '%s': %s", addr ? addr : "(any)", gai_strerror(rc));
	return res;
}

static void addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	if (getnameinfo(sa, sa->sa_family == AF_INET6 ?
			sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in),
			buf, (socklen_t)len, NULL, 0, NI_NUMERICHOST))
		snprintf(buf, len, "?");
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("write: %s", w < 0 ? strerror(errno) : "short write");
		p += w;
		n -= (size_t)w;
	}
}

static int do_recv(const char *bind_addr, long port, double limit)
{
	struct addrinfo *ai = resolve(bind_addr, port, 1), *use;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	unsigned long long bytes = 0;
	double t_first = 0, t_last = 0;
	char peer[INET6_ADDRSTRLEN + 16], reply[128];
	char *buf;
	int one = 1, lfd, fd;

	/* Without an address: listen on IPv6 (and IPv4-mapped) if possible. */
	use = ai;
	if (!bind_addr)
		for (struct addrinfo *p = ai; p; p = p->ai_next)
			if (p->ai_family == AF_INET6) {
				use = p;
				break;
			}
	lfd = socket(use->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		die("socket: %s", strerror(errno));
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(lfd, use->ai_addr, use->ai_addrlen))
		die("bind %s port %ld: %s", bind_addr ? bind_addr : "(any)", port,
		    strerror(errno));
	freeaddrinfo(ai);
	if (listen(lfd, 1))
		die("listen: %s", strerror(errno));
	if (getsockname(lfd, (struct sockaddr *)&ss, &sl))
		die("getsockname: %s", strerror(errno));
	printf("listening %u\n", ntohs(ss.ss_family == AF_INET6 ?
		((struct sockaddr_in6 *)&ss)->sin6_port :
		((struct sockaddr_in *)&ss)->sin_port));
	fflush(stdout);
	if (limit > 0)
		alarm((unsigned)(limit + 0.999));

	sl = sizeof ss;
	do
		fd = accept(lfd, (struct sockaddr *)&ss, &sl);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		die("accept: %s", strerror(errno));
	close(lfd);
	addr_str((struct sockaddr *)&ss, peer, sizeof peer);

	buf = malloc(RBUF);
	if (!buf)
		die("out of memory");
	for (;;) {
		ssize_t r = read(fd, buf, RBUF);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("read from %s: %s", peer, strerror(errno));
		if (r == 0)
			break;
		t_last = now();
		if (!bytes)
			t_first = t_last;
		bytes += (unsigned long long)r;
	}
	free(buf);
	snprintf(reply, sizeof reply, "bytes=%llu seconds=%.6f\n", bytes,
		 t_last - t_first);
	write_all(fd, reply, strlen(reply));
	close(fd);
	printf("received %llu bytes from %s in %.3f s: %.1f Mbit/s\n", bytes, peer,
	       t_last - t_first,
	       t_last > t_first ? (double)bytes * 8e-6 / (t_last - t_first) : 0.0);
	return 0;
}

static int do_send(const char *addr, const char *src, long port, double secs,
		   long long nbytes)
{
	struct addrinfo *ai = resolve(addr, port, 0);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	unsigned long long sent = 0, rbytes = 0;
	double t0, rsecs = 0;
	char local[INET6_ADDRSTRLEN + 16], remote[INET6_ADDRSTRLEN + 16];
	char reply[256];
	size_t rl = 0;
	char *buf;
	int fd;

	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	if (src) {
		struct addrinfo *sa = resolve(src, 0, 1);

		if (bind(fd, sa->ai_addr, sa->ai_addrlen))
			die("bind %s: %s", src, strerror(errno));
		freeaddrinfo(sa);
	}
	while (connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		if (errno != EINTR)
			die("connect to %s port %ld: %s", addr, port, strerror(errno));
	}
	freeaddrinfo(ai);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		addr_str((struct sockaddr *)&ss, local, sizeof local);
	else
		snprintf(local, sizeof local, "?");
	snprintf(remote, sizeof remote, "%s", addr);

	buf = malloc(BLOCK);
	if (!buf)
		die("out of memory");
	for (size_t i = 0; i < BLOCK; i++)
		buf[i] = (char)(i * 131u + 7u);
	t0 = now();
	for (;;) {
		size_t n = BLOCK;
		ssize_t w;

		if (nbytes >= 0) {
			if (sent >= (unsigned long long)nbytes)
				break;
			if ((unsigned long long)nbytes - sent < n)
				n = (size_t)((unsigned long long)nbytes - sent);
		} else if (now() - t0 >= secs) {
			break;
		}
		w = write(fd, buf, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			die("write to %s: %s", addr, strerror(errno));
		sent += (unsigned long long)w;
	}
	free(buf);
	if (shutdown(fd, SHUT_WR))
		die("shutdown: %s", strerror(errno));
	for (;;) {
		ssize_t r = read(fd, reply + rl, sizeof reply - 1 - rl);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("read the receiver's count: %s", strerror(errno));
		if (r == 0 || (rl += (size_t)r) == sizeof reply - 1)
			break;
	}
	reply[rl] = 0;
	close(fd);
	if (sscanf(reply, "bytes=%llu seconds=%lf", &rbytes, &rsecs) != 2)
		die("no count from the receiver (got '%s')", reply);
	if (rbytes != sent)
		die("sent %llu bytes but the receiver counted %llu", sent, rbytes);
	printf("rate_mbit=%.1f bytes=%llu seconds=%.3f local=%s remote=%s\n",
	       rsecs > 0 ? (double)rbytes * 8e-6 / rsecs : 0.0, rbytes, rsecs,
	       local, remote);
	return 0;
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *bind_addr = NULL;
	long port = -1, cpu = -1;
	double secs = 2, limit = -1;
	long long nbytes = -1;
	int opt, is_send;

	if (argc < 2)
		usage();
	mode = argv[1];
	if (!strcmp(mode, "send"))
		is_send = 1;
	else if (!strcmp(mode, "recv"))
		is_send = 0;
	else
		usage();
	optind = 2;
	while ((opt = getopt(argc, argv, "a:b:p:c:s:n:t:h")) != -1) {
		switch (opt) {
		case 'a': addr = optarg; break;
		case 'b': bind_addr = optarg; break;
		case 'p': port = num(optarg, "port", 0, 65535); break;
		case 'c': cpu = num(optarg, "CPU", 0, CPU_SETSIZE - 1); break;
		case 's': secs = dnum(optarg, "seconds"); break;
		case 'n': nbytes = num(optarg, "byte count", 1, LONG_MAX); break;
		case 't': limit = (double)num(optarg, "time limit", 0, 86400); break;
		default: usage();
		}
	}
	if (optind != argc)
		usage();
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, on_alarm);
	pin(cpu);
	if (!is_send) {
		if (addr)
			usage();
		return do_recv(bind_addr, port < 0 ? 0 : port, limit < 0 ? 30 : limit);
	}
	if (!addr || port <= 0) {
		fprintf(stderr, "netlab-stream send: -a ADDR and -p PORT are needed\n");
		exit(2);
	}
	if (limit < 0)
		limit = (nbytes >= 0 ? 20 : secs + 10);
	if (limit > 0)
		alarm((unsigned)(limit + 0.999));
	return do_send(addr, bind_addr, port, secs, nbytes);
}
