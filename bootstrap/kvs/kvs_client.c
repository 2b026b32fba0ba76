/*
 * The "kvs" bootstrap: a rank's side of mrail-run's key-value service.
 * Blocking and single-threaded (the engine serializes calls), but every wait
 * is bounded by MRAIL_BOOTSTRAP_TIMEOUT so a hung or dead launcher cannot
 * hang a rank forever; a launcher that dies closes the socket, which is
 * noticed at once.
 */
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "bootstrap/kvs/kvs_proto.h"
#include "mrail.h"
#include "util/auth.h"
#include "util/clock.h"
#include "util/log.h"

#define DEFAULT_TIMEOUT 60.0
/* Connection refused is retried this long: the listener exists before any
 * rank starts, so a longer refusal means the launcher is gone. */
#define CONNECT_RETRY_SECONDS 5.0

struct mrail_bootstrap {
	int fd;
	uint32_t rank, size;
	uint32_t local_rank, local_size;
	uint8_t key[MRAIL_AUTH_KEY_BYTES];
	double timeout; /* seconds per operation; INFINITY = no limit */
	bool broken;    /* a failed exchange left the stream out of step */
	char addr[128]; /* MRAIL_KVS_ADDR, for log lines */
	int protocol;   /* the service's version; 0 until asked */
	uint8_t *payload; /* MRAIL_KVS_FRAME_MAX bytes: the reply read last */
};

/* ---- environment ------------------------------------------------------ */

static int env_u32(const char *name, uint32_t min, uint32_t max,
		   uint32_t *out)
{
	const char *v = getenv(name);
	char *end;

	if (!v) {
		mrail_error("kvs bootstrap: %s is not set (is this process "
			    "started by mrail-run?)", name);
		return MRAIL_ERR_BOOTSTRAP;
	}
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (errno || end == v || *end || v[0] == '-' || x < min || x > max) {
		mrail_error("kvs bootstrap: %s='%s' is not an integer in "
			    "%u..%u", name, v, min, max);
		return MRAIL_ERR_BOOTSTRAP;
	}
	*out = (uint32_t)x;
	return MRAIL_OK;
}

static int read_environment(struct mrail_bootstrap *bs)
{
	const char *v;
	int rc;

	if ((rc = env_u32("MRAIL_SIZE", 1, UINT32_MAX, &bs->size)) ||
	    (rc = env_u32("MRAIL_RANK", 0, bs->size - 1, &bs->rank)))
		return rc;
	/* mrail-run sets both; without them every rank is on this host. */
	bs->local_rank = bs->rank;
	bs->local_size = bs->size;
	if ((getenv("MRAIL_LOCAL_SIZE") || getenv("MRAIL_LOCAL_RANK")) &&
	    ((rc = env_u32("MRAIL_LOCAL_SIZE", 1, bs->size, &bs->local_size)) ||
	     (rc = env_u32("MRAIL_LOCAL_RANK", 0, bs->local_size - 1,
			   &bs->local_rank))))
		return rc;
	v = getenv("MRAIL_JOB_KEY");
	if (!v || mrail_auth_key_parse(v, bs->key) < 0) {
		/* Never echo a key: a near-miss may still be mostly secret. */
		mrail_error("kvs bootstrap: MRAIL_JOB_KEY is %s (expected 32 "
			    "hex digits)", v ? "malformed" : "not set");
		return MRAIL_ERR_BOOTSTRAP;
	}
	v = getenv("MRAIL_KVS_ADDR");
	char host[NI_MAXHOST], port[8];
	if (!v || strlen(v) >= sizeof bs->addr ||
	    mrail_kvs_addr_split(v, host, sizeof host, port, sizeof port) < 0) {
		mrail_error("kvs bootstrap: MRAIL_KVS_ADDR='%s' is not "
			    "HOST:PORT or [IPV6]:PORT", v ? v : "(unset)");
		return MRAIL_ERR_BOOTSTRAP;
	}
	snprintf(bs->addr, sizeof bs->addr, "%s", v);
	bs->timeout = DEFAULT_TIMEOUT;
	v = getenv("MRAIL_BOOTSTRAP_TIMEOUT");
	if (v) {
		char *end;
		double t = strtod(v, &end);
		if (end == v || *end || !(t >= 0) || isinf(t)) {
			mrail_error("kvs bootstrap: MRAIL_BOOTSTRAP_TIMEOUT='%s' "
				    "is not a number of seconds (0 = no limit)",
				    v);
			return MRAIL_ERR_BOOTSTRAP;
		}
		bs->timeout = t > 0 ? t : INFINITY;
	}
	return MRAIL_OK;
}

/* ---- bounded blocking I/O -------------------------------------------- */

static double deadline_of(const struct mrail_bootstrap *bs)
{
	return mrail_now() + bs->timeout;
}

/* Wait for `events` on fd until the deadline; EINTR just recomputes. */
static int wait_fd(int fd, short events, double deadline)
{
	for (;;) {
		double left = deadline - mrail_now();
		if (left <= 0)
			return MRAIL_ERR_TIMEOUT;
		int ms = isinf(left) || left > 3600 ? 3600 * 1000
						     : (int)(left * 1000) + 1;
		struct pollfd p = {.fd = fd, .events = events};
		int n = poll(&p, 1, ms);
		if (n > 0)
			return MRAIL_OK;
		if (n < 0 && errno != EINTR)
			return MRAIL_ERR_IO;
	}
}

static int fail(struct mrail_bootstrap *bs, int rc, const char *what)
{
	bs->broken = true;
	if (rc == MRAIL_ERR_TIMEOUT)
		mrail_error("kvs bootstrap: rank %u: no answer from mrail-run "
			    "(%s) within %g s while %s", bs->rank, bs->addr,
			    bs->timeout, what);
	else if (rc == MRAIL_ERR_BOOTSTRAP)
		mrail_error("kvs bootstrap: rank %u: lost the connection to "
			    "mrail-run (%s) while %s", bs->rank, bs->addr,
			    what);
	else if (rc == MRAIL_ERR_IO)
		mrail_error("kvs bootstrap: rank %u: I/O error talking to %s "
			    "while %s: %s", bs->rank, bs->addr, what,
			    strerror(errno));
	return rc;
}

static int send_all(struct mrail_bootstrap *bs, const uint8_t *p, size_t len,
		    double deadline)
{
	while (len > 0) {
		ssize_t n = send(bs->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int rc = wait_fd(bs->fd, POLLOUT, deadline);
			if (rc)
				return rc;
			continue;
		}
		return MRAIL_ERR_BOOTSTRAP;
	}
	return MRAIL_OK;
}

static int recv_all(struct mrail_bootstrap *bs, uint8_t *p, size_t len,
		    double deadline)
{
	while (len > 0) {
		ssize_t n = recv(bs->fd, p, len, MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return MRAIL_ERR_BOOTSTRAP; /* launcher closed */
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			int rc = wait_fd(bs->fd, POLLIN, deadline);
			if (rc)
				return rc;
			continue;
		}
		return MRAIL_ERR_BOOTSTRAP;
	}
	return MRAIL_OK;
}

static int send_frame(struct mrail_bootstrap *bs, uint8_t type,
		      const struct iovec *iov, int n, double deadline)
{
	struct mrail_kvs_buf b = {0};
	int rc = MRAIL_ERR_NOMEM;

	if (mrail_kvs_buf_frame(&b, type, iov, n) == 0)
		rc = send_all(bs, b.data, b.len, deadline);
	mrail_kvs_buf_free(&b);
	return rc;
}

/* Receive one frame into bs->payload; its type and length in *hdr. */
static int recv_frame_into(struct mrail_bootstrap *bs,
			   struct mrail_kvs_header *hdr, double deadline)
{
	uint8_t raw[MRAIL_KVS_HEADER_BYTES];
	const char *why;
	int rc = recv_all(bs, raw, sizeof raw, deadline);

	if (rc)
		return rc;
	if (mrail_kvs_header_decode(raw, hdr, &why) < 0) {
		mrail_error("kvs bootstrap: rank %u: malformed message from "
			    "%s: %s", bs->rank, bs->addr, why);
		bs->broken = true;
		return MRAIL_ERR_PROTO;
	}
	return recv_all(bs, bs->payload, hdr->length, deadline);
}

/* Log a REJECT/ERROR reason carried in the payload. */
static void log_reason(struct mrail_bootstrap *bs, const char *what,
		       const struct mrail_kvs_header *hdr)
{
	mrail_error("kvs bootstrap: rank %u: mrail-run (%s) %s: %.*s",
		    bs->rank, bs->addr, what, (int)hdr->length,
		    (const char *)bs->payload);
}

static int unexpected(struct mrail_bootstrap *bs,
		      const struct mrail_kvs_header *hdr, const char *what)
{
	bs->broken = true;
	if (hdr->type == MRAIL_KVS_REJECT) {
		log_reason(bs, "dropped the connection", hdr);
		return MRAIL_ERR_BOOTSTRAP;
	}
	mrail_error("kvs bootstrap: rank %u: unexpected %s from %s while %s",
		    bs->rank, mrail_kvs_type_name(hdr->type), bs->addr, what);
	return MRAIL_ERR_PROTO;
}

/* ---- connection and handshake ---------------------------------------- */

static int connect_once(const struct addrinfo *ai, double deadline, int *err)
{
	int fd = socket(ai->ai_family,
			ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			ai->ai_protocol);
	if (fd < 0) {
		*err = errno;
		return -1;
	}
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
		return fd;
	if (errno == EINPROGRESS || errno == EINTR) {
		int rc = wait_fd(fd, POLLOUT, deadline);
		socklen_t len = sizeof *err;
		if (rc == MRAIL_ERR_TIMEOUT) {
			*err = ETIMEDOUT;
		} else if (rc == MRAIL_OK &&
			   getsockopt(fd, SOL_SOCKET, SO_ERROR, err, &len) == 0) {
			if (*err == 0)
				return fd;
		} else {
			*err = errno;
		}
	} else {
		*err = errno;
	}
	close(fd);
	return -1;
}

static int kvs_connect(struct mrail_bootstrap *bs)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICSERV};
	struct addrinfo *res;
	char host[NI_MAXHOST], port[8];
	double deadline = deadline_of(bs);
	double retry_until = mrail_now() + CONNECT_RETRY_SECONDS;
	long backoff_ms = 10;
	int err = 0;

	mrail_kvs_addr_split(bs->addr, host, sizeof host, port, sizeof port);
	int rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0) {
		mrail_error("kvs bootstrap: MRAIL_KVS_ADDR='%s': cannot "
			    "resolve '%s': %s", bs->addr, host,
			    gai_strerror(rc));
		return MRAIL_ERR_BOOTSTRAP;
	}
	for (;;) {
		for (const struct addrinfo *ai = res; ai; ai = ai->ai_next) {
			bs->fd = connect_once(ai, deadline, &err);
			if (bs->fd >= 0)
				break;
		}
		if (bs->fd >= 0 || err != ECONNREFUSED ||
		    mrail_now() >= retry_until || mrail_now() >= deadline)
			break;
		struct timespec ts = {0, backoff_ms * 1000000L};
		nanosleep(&ts, NULL);
		if (backoff_ms < 200)
			backoff_ms *= 2;
	}
	freeaddrinfo(res);
	if (bs->fd < 0) {
		mrail_error("kvs bootstrap: rank %u: cannot connect to mrail-run "
			    "at MRAIL_KVS_ADDR=%s: %s", bs->rank, bs->addr,
			    strerror(err));
		return MRAIL_ERR_BOOTSTRAP;
	}
	return MRAIL_OK;
}

static int authenticate(struct mrail_bootstrap *bs)
{
	struct mrail_kvs_header hdr;
	struct mrail_kvs_auth auth = {.rank = bs->rank};
	uint8_t wire[MRAIL_KVS_AUTH_BYTES], expect[MRAIL_AUTH_MAC_BYTES];
	double deadline = deadline_of(bs);
	int rc;

	if ((rc = recv_frame_into(bs, &hdr, deadline)))
		return fail(bs, rc, "waiting for the KVS greeting");
	if (hdr.type != MRAIL_KVS_HELLO)
		return unexpected(bs, &hdr, "waiting for the KVS greeting");
	if (mrail_auth_random(auth.nonce, sizeof auth.nonce) < 0) {
		mrail_error("kvs bootstrap: getrandom failed");
		return MRAIL_ERR_IO;
	}
	mrail_kvs_client_proof(bs->key, bs->payload, bs->rank, auth.mac);
	mrail_kvs_auth_encode(&auth, wire);
	struct iovec iov = {.iov_base = wire, .iov_len = sizeof wire};
	if ((rc = send_frame(bs, MRAIL_KVS_AUTH, &iov, 1, deadline)) ||
	    (rc = recv_frame_into(bs, &hdr, deadline)))
		return fail(bs, rc, "authenticating");
	if (hdr.type == MRAIL_KVS_REJECT) {
		log_reason(bs, "rejected this rank", &hdr);
		return MRAIL_ERR_AUTH;
	}
	if (hdr.type != MRAIL_KVS_AUTH_OK)
		return unexpected(bs, &hdr, "authenticating");
	/* Mutual: a process squatting on the port cannot pose as mrail-run. */
	mrail_kvs_server_proof(bs->key, auth.nonce, bs->rank, expect);
	if (!mrail_auth_mac_equal(expect, bs->payload)) {
		mrail_error("kvs bootstrap: rank %u: the service at %s does not "
			    "know the job key (not this job's mrail-run)",
			    bs->rank, bs->addr);
		return MRAIL_ERR_AUTH;
	}
	return MRAIL_OK;
}

/* ---- the ops ---------------------------------------------------------- */

static int kvs_detect(void)
{
	return getenv("MRAIL_KVS_ADDR") != NULL;
}

static void kvs_fini(struct mrail_bootstrap *bs)
{
	if (!bs)
		return;
	if (bs->fd >= 0)
		close(bs->fd);
	free(bs->payload);
	free(bs);
}

static int kvs_init(struct mrail_bootstrap **out)
{
	struct mrail_bootstrap *bs = calloc(1, sizeof *bs);
	int rc;

	*out = NULL;
	if (!bs)
		return MRAIL_ERR_NOMEM;
	bs->fd = -1;
	if (!(bs->payload = malloc(MRAIL_KVS_FRAME_MAX))) {
		free(bs);
		return MRAIL_ERR_NOMEM;
	}
	if ((rc = read_environment(bs)) || (rc = kvs_connect(bs)) ||
	    (rc = authenticate(bs))) {
		kvs_fini(bs);
		return rc;
	}
	mrail_debug("kvs bootstrap: rank %u of %u connected to %s", bs->rank,
		    bs->size, bs->addr);
	*out = bs;
	return MRAIL_OK;
}

static uint32_t kvs_rank(struct mrail_bootstrap *bs)
{
	return bs->rank;
}

static uint32_t kvs_size(struct mrail_bootstrap *bs)
{
	return bs->size;
}

static uint32_t kvs_local_rank(struct mrail_bootstrap *bs)
{
	return bs->local_rank;
}

static uint32_t kvs_local_size(struct mrail_bootstrap *bs)
{
	return bs->local_size;
}

/* After a failed exchange the stream may be mid-frame: refuse to guess. */
static int check_usable(struct mrail_bootstrap *bs)
{
	if (!bs->broken)
		return MRAIL_OK;
	mrail_error("kvs bootstrap: rank %u: the connection to mrail-run "
		    "failed earlier", bs->rank);
	return MRAIL_ERR_BOOTSTRAP;
}

static int check_key(struct mrail_bootstrap *bs, const char *key,
		     size_t *key_len)
{
	int rc = check_usable(bs);

	if (rc)
		return rc;
	if (!key || !*key ||
	    (*key_len = strnlen(key, MRAIL_BOOTSTRAP_KEY_MAX + 1)) >
		    MRAIL_BOOTSTRAP_KEY_MAX) {
		mrail_error("kvs bootstrap: key must be 1..%d bytes",
			    MRAIL_BOOTSTRAP_KEY_MAX);
		return MRAIL_ERR_INVALID;
	}
	return MRAIL_OK;
}

/* Send one request and receive its reply (one outstanding at a time). */
static int exchange(struct mrail_bootstrap *bs, uint8_t type,
		    const struct iovec *iov, int n,
		    struct mrail_kvs_header *reply, const char *what)
{
	double deadline = deadline_of(bs);
	int rc = send_frame(bs, type, iov, n, deadline);

	if (!rc)
		rc = recv_frame_into(bs, reply, deadline);
	if (rc && rc != MRAIL_ERR_PROTO)
		return fail(bs, rc, what);
	return rc;
}

static int kvs_put(struct mrail_bootstrap *bs, const char *key,
		   const void *val, size_t len)
{
	struct mrail_kvs_header reply;
	size_t key_len;
	int rc = check_key(bs, key, &key_len);

	if (rc)
		return rc;
	if (len > MRAIL_BOOTSTRAP_VALUE_MAX || (len && !val)) {
		mrail_error("kvs bootstrap: value for '%s' must be at most %d "
			    "bytes (got %zu)", key, MRAIL_BOOTSTRAP_VALUE_MAX,
			    len);
		return MRAIL_ERR_INVALID;
	}
	uint8_t klen[2] = {(uint8_t)(key_len >> 8), (uint8_t)key_len};
	struct iovec iov[3] = {{klen, 2},
			       {(void *)key, key_len},
			       {(void *)val, len}};
	if ((rc = exchange(bs, MRAIL_KVS_PUT, iov, len ? 3 : 2, &reply,
			   "publishing a key")))
		return rc;
	if (reply.type == MRAIL_KVS_OK)
		return MRAIL_OK;
	if (reply.type == MRAIL_KVS_ERROR) {
		log_reason(bs, "refused the PUT", &reply);
		return MRAIL_ERR_NOMEM;
	}
	return unexpected(bs, &reply, "publishing a key");
}

static int kvs_fence(struct mrail_bootstrap *bs)
{
	struct mrail_kvs_header reply;
	int rc;

	if ((rc = check_usable(bs)))
		return rc;
	if ((rc = exchange(bs, MRAIL_KVS_FENCE, NULL, 0, &reply,
			   "waiting in a fence for all ranks")))
		return rc;
	if (reply.type != MRAIL_KVS_OK)
		return unexpected(bs, &reply, "waiting in a fence");
	return MRAIL_OK;
}

/* The fence's request, then idle() until its answer is readable. */
static int kvs_fence_idle(struct mrail_bootstrap *bs,
			  void (*idle)(void *arg, int fd), void *arg)
{
	static const char what[] = "waiting in a fence for all ranks";
	struct mrail_kvs_header reply;
	double deadline = deadline_of(bs);
	int rc;

	if ((rc = check_usable(bs)))
		return rc;
	if ((rc = send_frame(bs, MRAIL_KVS_FENCE, NULL, 0, deadline)))
		return fail(bs, rc, what);
	for (;;) {
		struct pollfd p = {.fd = bs->fd, .events = POLLIN};
		int n = poll(&p, 1, 0);
		if (n > 0)
			break;
		if (n < 0 && errno != EINTR)
			return fail(bs, MRAIL_ERR_IO, what);
		if (mrail_now() >= deadline)
			return fail(bs, MRAIL_ERR_TIMEOUT, what);
		idle(arg, bs->fd);
	}
	/* The answer has begun: the rest of it follows at once. */
	if ((rc = recv_frame_into(bs, &reply, deadline)))
		return rc == MRAIL_ERR_PROTO ? rc : fail(bs, rc, what);
	if (reply.type != MRAIL_KVS_OK)
		return unexpected(bs, &reply, "waiting in a fence");
	return MRAIL_OK;
}

static int kvs_get(struct mrail_bootstrap *bs, const char *key, void *val,
		   size_t *len)
{
	struct mrail_kvs_header reply;
	size_t key_len;
	int rc = check_key(bs, key, &key_len);

	if (rc)
		return rc;
	if (!len || (*len && !val))
		return MRAIL_ERR_INVALID;
	struct iovec iov = {(void *)key, key_len};
	if ((rc = exchange(bs, MRAIL_KVS_GET, &iov, 1, &reply,
			   "reading a key")))
		return rc;
	if (reply.type == MRAIL_KVS_NOT_FOUND)
		return MRAIL_ERR_NOT_FOUND;
	if (reply.type != MRAIL_KVS_VALUE)
		return unexpected(bs, &reply, "reading a key");
	size_t cap = *len;
	*len = reply.length;
	if (reply.length > cap) {
		/* Like a short receive: fill the buffer, report the size. */
		if (cap)
			memcpy(val, bs->payload, cap);
		return MRAIL_ERR_TRUNCATE;
	}
	if (reply.length)
		memcpy(val, bs->payload, reply.length);
	return MRAIL_OK;
}

/* Whether the service speaks GET_MANY (a version-1 mrail-run does not). */
static int service_protocol(struct mrail_bootstrap *bs)
{
	char v[8];
	size_t len = sizeof v - 1;

	if (bs->protocol)
		return bs->protocol;
	int rc = kvs_get(bs, MRAIL_KVS_PROTOCOL_KEY, v, &len);
	if (rc == MRAIL_ERR_NOT_FOUND || rc == MRAIL_ERR_TRUNCATE) {
		bs->protocol = 1;
		return 1;
	}
	if (rc)
		return rc;
	v[len] = '\0';
	bs->protocol = atoi(v) >= 2 ? 2 : 1;
	return bs->protocol;
}

/* Copy one answer out like kvs_get() does (truncation included). */
static int take_value(const uint8_t *val, size_t vlen, int found, void *dst,
		      size_t *len)
{
	size_t cap = *len;
	if (!found)
		return MRAIL_ERR_NOT_FOUND;
	*len = vlen;
	if (vlen > cap) {
		if (cap)
			memcpy(dst, val, cap);
		return MRAIL_ERR_TRUNCATE;
	}
	if (vlen)
		memcpy(dst, val, vlen);
	return MRAIL_OK;
}

/* GET_MANY of keys[0..n) (as many as fit one request); the answered
 * count in *done. */
static int get_batch(struct mrail_bootstrap *bs, uint32_t n,
		     const char *const *keys, void *const *vals, size_t *lens,
		     int *rcs, uint32_t *done)
{
	struct mrail_kvs_header reply;
	struct mrail_kvs_iter it;
	const char *why;
	uint8_t *req = malloc(MRAIL_KVS_PAYLOAD_MAX);
	size_t off = 2;
	uint32_t k = 0, count = 0;
	int rc;

	if (!req)
		return MRAIL_ERR_NOMEM;
	for (; k < n && k < MRAIL_KVS_BATCH_KEYS_MAX; k++) {
		size_t klen = strlen(keys[k]);
		if (off + 1 + klen > MRAIL_KVS_PAYLOAD_MAX)
			break;
		req[off] = (uint8_t)klen;
		memcpy(req + off + 1, keys[k], klen);
		off += 1 + klen;
	}
	req[0] = (uint8_t)(k >> 8);
	req[1] = (uint8_t)k;
	struct iovec iov = {req, off};
	rc = exchange(bs, MRAIL_KVS_GET_MANY, &iov, 1, &reply,
		      "reading keys");
	free(req);
	if (rc)
		return rc;
	if (reply.type != MRAIL_KVS_VALUES)
		return unexpected(bs, &reply, "reading keys");
	if (mrail_kvs_parse_values(bs->payload, reply.length, &count, &it,
				   &why) < 0 || count > k) {
		mrail_error("kvs bootstrap: rank %u: malformed VALUES from %s: "
			    "%s", bs->rank, bs->addr,
			    count > k ? "more answers than keys" : why);
		bs->broken = true;
		return MRAIL_ERR_PROTO;
	}
	const uint8_t *val;
	size_t vlen;
	int found;
	for (uint32_t i = 0; mrail_kvs_next_value(&it, &found, &val, &vlen);
	     i++)
		rcs[i] = take_value(val, vlen, found, vals[i], &lens[i]);
	*done = count;
	return MRAIL_OK;
}

static int kvs_get_many(struct mrail_bootstrap *bs, uint32_t n,
			const char *const *keys, void *const *vals,
			size_t *lens, int *rcs)
{
	size_t key_len;
	int rc;

	for (uint32_t i = 0; i < n; i++)
		if ((rc = check_key(bs, keys[i], &key_len)))
			return rc;
		else if (lens[i] && !vals[i])
			return MRAIL_ERR_INVALID;
	rc = service_protocol(bs);
	if (rc < 0)
		return rc;
	if (rc < 2) {
		for (uint32_t i = 0; i < n; i++) {
			rcs[i] = kvs_get(bs, keys[i], vals[i], &lens[i]);
			if (rcs[i] != MRAIL_OK && rcs[i] != MRAIL_ERR_NOT_FOUND &&
			    rcs[i] != MRAIL_ERR_TRUNCATE)
				return rcs[i];
		}
		return MRAIL_OK;
	}
	for (uint32_t i = 0, done = 0; i < n; i += done)
		if ((rc = get_batch(bs, n - i, keys + i, vals + i, lens + i,
				    rcs + i, &done)))
			return rc;
	return MRAIL_OK;
}

const struct mrail_bootstrap_ops mrail_kvs_bootstrap_ops = {
	.name = "kvs",
	.detect = kvs_detect,
	.init = kvs_init,
	.fini = kvs_fini,
	.rank = kvs_rank,
	.size = kvs_size,
	.put = kvs_put,
	.fence = kvs_fence,
	.fence_idle = kvs_fence_idle,
	.get = kvs_get,
	.get_many = kvs_get_many,
	.local_rank = kvs_local_rank,
	.local_size = kvs_local_size,
};
