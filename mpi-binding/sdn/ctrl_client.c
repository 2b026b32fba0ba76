/* Controller client, protocol version 1 (docs/sdn-controller.md). */
#include "ctrl_client.h"

#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PROTO_TAG "MRSDN/1"

struct mrail_sdn_ctrl {
	int fd;
	int timeout_ms;
	uint64_t seq; /* last request sent */
	char *out;    /* one request line being built */
	size_t out_len, out_cap;
	char in[MRAIL_SDN_CTRL_MAX_REPLY + 1];
	size_t in_len;
	char err[256];
};

static int fail(struct mrail_sdn_ctrl *c, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct mrail_sdn_ctrl *c, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	return rc;
}

const char *mrail_sdn_ctrl_error(const struct mrail_sdn_ctrl *c)
{
	return c->err;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* "host:port" or "[v6]:port" into host and port; 0 or -EINVAL. */
static int split_hostport(const char *hp, char *host, size_t hlen,
			  char *port, size_t plen)
{
	const char *colon, *h = hp;
	size_t n;

	if (hp[0] == '[') {
		const char *close = strchr(hp, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		h = hp + 1;
		n = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(hp, ':');
		if (!colon)
			return -EINVAL;
		n = (size_t)(colon - hp);
	}
	if (n == 0 || n >= hlen || strlen(colon + 1) == 0 ||
	    strlen(colon + 1) >= plen)
		return -EINVAL;
	memcpy(host, h, n);
	host[n] = '\0';
	strcpy(port, colon + 1);
	for (const char *p = port; *p; p++)
		if (*p < '0' || *p > '9')
			return -EINVAL;
	return 0;
}

static int connect_timeout(int fd, const struct sockaddr *sa, socklen_t len,
			   int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	int soerr = 0;
	socklen_t sl = sizeof(soerr);
	int r;

	if (connect(fd, sa, len) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return -errno;
	do
		r = poll(&pfd, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return -ETIMEDOUT;
	if (r < 0)
		return -errno;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
		return -errno;
	return soerr ? -soerr : 0;
}

int mrail_sdn_ctrl_connect(const char *hostport, int timeout_ms,
			   struct mrail_sdn_ctrl **out, char *err,
			   size_t errlen)
{
	char host[256], port[16];
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	struct mrail_sdn_ctrl *c;
	int rc = -EHOSTUNREACH, one = 1;

	*out = NULL;
	if (!hostport ||
	    split_hostport(hostport, host, sizeof(host), port, sizeof(port))) {
		snprintf(err, errlen,
			 "SDN controller address '%s' is not host:port",
			 hostport ? hostport : "(null)");
		return -EINVAL;
	}
	if (timeout_ms <= 0)
		timeout_ms = 5000;
	int gai = getaddrinfo(host, port, &hints, &res);
	if (gai) {
		snprintf(err, errlen, "SDN controller %s: %s", hostport,
			 gai_strerror(gai));
		return -EHOSTUNREACH;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		freeaddrinfo(res);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	c->fd = -1;
	c->timeout_ms = timeout_ms;
	for (ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family,
				ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
				ai->ai_protocol);
		if (fd < 0) {
			rc = -errno;
			continue;
		}
		rc = connect_timeout(fd, ai->ai_addr, ai->ai_addrlen,
				     timeout_ms);
		if (rc == 0) {
			c->fd = fd;
			break;
		}
		close(fd);
	}
	freeaddrinfo(res);
	if (c->fd < 0) {
		snprintf(err, errlen, "SDN controller %s: connect: %s",
			 hostport, strerror(-rc));
		free(c);
		return rc;
	}
	/* Requests are small and the caller waits on them. */
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	*out = c;
	return 0;
}

int mrail_sdn_ctrl_adopt(int fd, int timeout_ms, struct mrail_sdn_ctrl **out)
{
	struct mrail_sdn_ctrl *c = calloc(1, sizeof(*c));
	*out = NULL;
	if (!c)
		return -ENOMEM;
	c->fd = fd;
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : 5000;
	*out = c;
	return 0;
}

void mrail_sdn_ctrl_close(struct mrail_sdn_ctrl *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	free(c->out);
	free(c);
}

static int out_reserve(struct mrail_sdn_ctrl *c, size_t more)
{
	size_t need = c->out_len + more + 1;

	if (need > MRAIL_SDN_CTRL_MAX_LINE)
		return fail(c, -E2BIG,
			    "SDN request longer than %u bytes (too many pairs)",
			    MRAIL_SDN_CTRL_MAX_LINE);
	if (need <= c->out_cap)
		return 0;
	size_t cap = c->out_cap ? c->out_cap : 256;
	while (cap < need)
		cap *= 2;
	char *p = realloc(c->out, cap);
	if (!p)
		return fail(c, -ENOMEM, "out of memory");
	c->out = p;
	c->out_cap = cap;
	return 0;
}

static int outf(struct mrail_sdn_ctrl *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int outf(struct mrail_sdn_ctrl *c, const char *fmt, ...)
{
	va_list ap;
	int n, rc;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return fail(c, -EINVAL, "format error");
	rc = out_reserve(c, (size_t)n);
	if (rc)
		return rc;
	va_start(ap, fmt);
	vsnprintf(c->out + c->out_len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	c->out_len += (size_t)n;
	return 0;
}

/* Values travel as single tokens: no spaces, '=' is fine after the key. */
static int check_token(struct mrail_sdn_ctrl *c, const char *what,
		       const char *v)
{
	if (!v || !*v)
		return fail(c, -EINVAL, "SDN %s is empty", what);
	for (const unsigned char *p = (const unsigned char *)v; *p; p++)
		if (*p <= ' ' || *p >= 0x7f)
			return fail(c, -EINVAL,
				    "SDN %s '%s' has a space or a non-ASCII "
				    "byte", what, v);
	return 0;
}

static int send_all(struct mrail_sdn_ctrl *c, const char *buf, size_t len)
{
	int64_t deadline = now_ms() + c->timeout_ms;

	while (len) {
		ssize_t w = send(c->fd, buf, len, MSG_NOSIGNAL);
		if (w > 0) {
			buf += w;
			len -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return fail(c, -errno, "SDN controller: send: %s",
				    strerror(errno));
		int left = (int)(deadline - now_ms());
		struct pollfd pfd = { .fd = c->fd, .events = POLLOUT };
		if (left <= 0 || poll(&pfd, 1, left) == 0)
			return fail(c, -ETIMEDOUT,
				    "SDN controller: send timed out after %d ms",
				    c->timeout_ms);
	}
	return 0;
}

/*
 * Parse one reply line in place. 0 and *seq and *ack set (ack: 1 ACK, 0 NACK
 * with its reason in c->err), or -EPROTO naming what is wrong.
 */
static int parse_reply(struct mrail_sdn_ctrl *c, char *line, uint64_t *seq,
		       int *ack)
{
	char *p = line, *end;

	if (strncmp(p, PROTO_TAG " ", sizeof(PROTO_TAG)) != 0)
		return fail(c, -EPROTO,
			    "SDN controller reply is not protocol version %d: "
			    "'%.60s'", MRAIL_SDN_CTRL_PROTO, line);
	p += sizeof(PROTO_TAG);
	if (strncmp(p, "ACK seq=", 8) == 0) {
		*ack = 1;
		p += 8;
	} else if (strncmp(p, "NACK seq=", 9) == 0) {
		*ack = 0;
		p += 9;
	} else {
		return fail(c, -EPROTO, "SDN controller: unknown reply '%.60s'",
			    line);
	}
	if (*p < '0' || *p > '9')
		return fail(c, -EPROTO, "SDN controller: bad seq in '%.60s'",
			    line);
	errno = 0;
	*seq = strtoull(p, &end, 10);
	if (errno || (*end != '\0' && *end != ' '))
		return fail(c, -EPROTO, "SDN controller: bad seq in '%.60s'",
			    line);
	if (!*ack) {
		const char *r = strstr(end, "reason=");
		fail(c, -EREMOTEIO, "SDN controller refused request %" PRIu64
		     ": %s", *seq, r ? r + 7 : "(no reason)");
	} else if (*end != '\0') {
		return fail(c, -EPROTO, "SDN controller: trailing bytes in "
			    "'%.60s'", line);
	}
	return 0;
}

/* Wait for the reply to request `want`; replies to earlier requests
 * (sent without waiting) are consumed on the way. */
static int await_reply(struct mrail_sdn_ctrl *c, uint64_t want,
		       int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;

	for (;;) {
		char *nl = memchr(c->in, '\n', c->in_len);
		if (nl) {
			uint64_t seq = 0;
			int ack = 0, rc;

			*nl = '\0';
			if (nl > c->in && nl[-1] == '\r')
				nl[-1] = '\0';
			rc = parse_reply(c, c->in, &seq, &ack);
			size_t used = (size_t)(nl - c->in) + 1;
			memmove(c->in, nl + 1, c->in_len - used);
			c->in_len -= used;
			if (rc)
				return rc;
			if (seq > c->seq)
				return fail(c, -EPROTO, "SDN controller "
					    "answered request %" PRIu64
					    " never sent", seq);
			if (seq == want)
				return ack ? 0 : -EREMOTEIO;
			continue; /* an earlier request's reply */
		}
		if (c->in_len >= MRAIL_SDN_CTRL_MAX_REPLY)
			return fail(c, -EPROTO, "SDN controller reply longer "
				    "than %u bytes", MRAIL_SDN_CTRL_MAX_REPLY);
		int left = timeout_ms == 0 ? 0 : (int)(deadline - now_ms());
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		int r = poll(&pfd, 1, left < 0 ? 0 : left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0) {
			if (want == 0)
				return 0;
			return fail(c, -ETIMEDOUT, "SDN controller did not "
				    "answer request %" PRIu64 " within %d ms",
				    want, timeout_ms);
		}
		ssize_t n = recv(c->fd, c->in + c->in_len,
				 MRAIL_SDN_CTRL_MAX_REPLY - c->in_len, 0);
		if (n == 0)
			return fail(c, -ECONNRESET,
				    "SDN controller closed the connection");
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return fail(c, -errno, "SDN controller: recv: %s",
				    strerror(errno));
		}
		if (memchr(c->in + c->in_len, '\0', (size_t)n))
			return fail(c, -EPROTO,
				    "SDN controller sent a NUL byte");
		c->in_len += (size_t)n;
	}
}

static int request(struct mrail_sdn_ctrl *c, int wait)
{
	int rc = outf(c, "\n");

	if (rc)
		return rc;
	rc = send_all(c, c->out, c->out_len);
	c->out_len = 0;
	if (rc)
		return rc;
	/* Replies to requests nobody waits for are read here, so they never
	 * fill the socket. */
	return wait ? await_reply(c, c->seq, c->timeout_ms)
		    : await_reply(c, 0, 0);
}

int mrail_sdn_ctrl_hello(struct mrail_sdn_ctrl *c, const char *job,
			 unsigned rank, unsigned size, const char *host,
			 const char *rails)
{
	int rc;

	if ((rc = check_token(c, "job", job)) ||
	    (rc = check_token(c, "host", host)) ||
	    (rc = check_token(c, "rails", rails)))
		return rc;
	if (rank >= size)
		return fail(c, -EINVAL, "SDN HELLO: rank %u of %u", rank, size);
	c->out_len = 0;
	rc = outf(c, PROTO_TAG " HELLO seq=%" PRIu64 " job=%s rank=%u size=%u "
		  "host=%s rails=%s", ++c->seq, job, rank, size, host, rails);
	return rc ? rc : request(c, 1);
}

/* The canonical text: "comm=C prim=P pairs=s-d,s-d,...". */
static int pattern_text(struct mrail_sdn_ctrl *c, unsigned comm,
			const char *prim, const struct mrail_sdn_pair *pairs,
			size_t n)
{
	int rc = outf(c, "comm=%u prim=%s pairs=", comm, prim);

	for (size_t i = 0; !rc && i < n; i++)
		rc = outf(c, "%s%" PRIu32 "-%" PRIu32, i ? "," : "",
			  pairs[i].src, pairs[i].dst);
	return rc;
}

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

uint64_t mrail_sdn_ctrl_pattern_key(unsigned comm, const char *prim,
				    const struct mrail_sdn_pair *pairs,
				    size_t n)
{
	/* FNV-1a streamed over the same text pattern_text builds. */
	uint64_t h = 0xcbf29ce484222325ull;
	char buf[64];
	int len;

#define FEED(str, l)                                                       \
	for (int i_ = 0; i_ < (l); i_++) {                                 \
		h ^= (unsigned char)(str)[i_];                             \
		h *= 0x100000001b3ull;                                     \
	}
	len = snprintf(buf, sizeof(buf), "comm=%u prim=", comm);
	FEED(buf, len);
	FEED(prim, (int)strlen(prim));
	FEED(" pairs=", 7);
	for (size_t i = 0; i < n; i++) {
		len = snprintf(buf, sizeof(buf), "%s%" PRIu32 "-%" PRIu32,
			       i ? "," : "", pairs[i].src, pairs[i].dst);
		FEED(buf, len);
	}
#undef FEED
	return h;
}

int mrail_sdn_ctrl_pattern(struct mrail_sdn_ctrl *c, const char *job,
			   unsigned comm, const char *prim, unsigned root,
			   const struct mrail_sdn_pair *pairs, size_t n,
			   int wait)
{
	int rc;

	if ((rc = check_token(c, "job", job)) ||
	    (rc = check_token(c, "primitive", prim)))
		return rc;
	if (n == 0)
		return fail(c, -EINVAL, "SDN PATTERN without pairs");
	c->out_len = 0;
	if ((rc = outf(c, PROTO_TAG " PATTERN seq=%" PRIu64
		       " job=%s root=%u key=0000000000000000 ",
		       ++c->seq, job, root)))
		return rc;
	size_t key_at = c->out_len - 17, text_at = c->out_len;
	if ((rc = pattern_text(c, comm, prim, pairs, n)))
		return rc;
	char key[17];
	snprintf(key, sizeof(key), "%016" PRIx64,
		 fnv1a(c->out + text_at, c->out_len - text_at));
	memcpy(c->out + key_at, key, 16);
	return request(c, wait);
}

int mrail_sdn_ctrl_wait(struct mrail_sdn_ctrl *c, const char *job,
			uint64_t key)
{
	int rc;

	if ((rc = check_token(c, "job", job)))
		return rc;
	c->out_len = 0;
	rc = outf(c, PROTO_TAG " WAIT seq=%" PRIu64 " job=%s key=%016" PRIx64,
		  ++c->seq, job, key);
	return rc ? rc : request(c, 1);
}

int mrail_sdn_ctrl_local_rails(char *buf, size_t len)
{
	struct ifaddrs *ifa, *i;
	size_t used = 0;
	int s, rc = 0;

	if (len == 0)
		return -ENOSPC;
	buf[0] = '\0';
	if (getifaddrs(&ifa) < 0)
		return -errno;
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	for (i = ifa; i && rc == 0; i = i->ifa_next) {
		struct ifreq ifr = { 0 };
		char ip[INET_ADDRSTRLEN];
		const unsigned char *m;

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
		    !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK) ||
		    strlen(i->ifa_name) >= IFNAMSIZ)
			continue;
		strcpy(ifr.ifr_name, i->ifa_name);
		if (s < 0 || ioctl(s, SIOCGIFHWADDR, &ifr) < 0)
			continue;
		m = (const unsigned char *)ifr.ifr_hwaddr.sa_data;
		inet_ntop(AF_INET,
			  &((struct sockaddr_in *)i->ifa_addr)->sin_addr, ip,
			  sizeof(ip));
		int n = snprintf(buf + used, len - used,
				 "%s%s/%s/%02x:%02x:%02x:%02x:%02x:%02x",
				 used ? "," : "", i->ifa_name, ip, m[0], m[1],
				 m[2], m[3], m[4], m[5]);
		if (n < 0 || (size_t)n >= len - used)
			rc = -ENOSPC;
		else
			used += (size_t)n;
	}
	if (s >= 0)
		close(s);
	freeifaddrs(ifa);
	return rc;
}
