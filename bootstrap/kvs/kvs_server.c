#include "bootstrap/kvs/kvs_server.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap/kvs/kvs_proto.h"
#include "bootstrap/kvs/kvs_store.h"
#include "mrail.h"
#include "util/clock.h"
#include "util/log.h"

/* Connections allowed in the handshake beyond one per rank (every rank may
 * connect at once); more are refused at once so strays cannot exhaust
 * descriptors. */
#define EXTRA_UNAUTHENTICATED 64
/* Stop reading a client's requests while this much output waits for it. */
#define OUT_HIGH_WATER (1u << 20)
/* Frames handled per connection per wakeup, so one busy rank cannot starve
 * the others (epoll is level-triggered: the rest comes next round). */
#define FRAMES_PER_WAKEUP 16

struct conn {
	struct conn *prev, *next;
	int fd;             /* -1 once closed (freed at the end of dispatch) */
	char peer[80];      /* "127.0.0.1:5555" */
	bool authed;
	uint32_t rank;
	double deadline;    /* authentication deadline */
	uint8_t nonce[MRAIL_AUTH_NONCE_BYTES];
	uint8_t hdr_bytes[MRAIL_KVS_HEADER_BYTES];
	size_t hdr_got;
	bool have_hdr;
	struct mrail_kvs_header hdr;
	uint8_t *payload;
	size_t payload_got, payload_cap;
	struct mrail_kvs_buf out;
	uint32_t events;    /* current epoll interest */
};

struct mrail_kvs_server {
	int epfd, lfd;
	bool accept_paused; /* out of descriptors: retry after a close */
	char address[80];
	uint32_t size;
	uint8_t key[MRAIL_AUTH_KEY_BYTES];
	double auth_timeout;
	struct mrail_kvs_store *store;
	size_t store_max;
	struct conn *conns;     /* live connections */
	struct conn *closed;    /* closed during this dispatch, freed after */
	unsigned unauthenticated;
	unsigned max_unauthenticated;
	bool job_ending;         /* disconnects are expected: log quietly */
	struct conn **rank_conn; /* [size] authenticated connection per rank */
	bool *in_fence;          /* [size] */
	uint32_t fence_count;
	uint64_t fences_done;
	uint64_t requests, gets, get_manys; /* round trips served, for logs */
};

static char listener_tag; /* epoll data of the listening socket */

/* ---- connection bookkeeping ------------------------------------------ */

static bool wants_input(const struct mrail_kvs_server *s, const struct conn *c)
{
	/* A rank in a fence gets its reply before its next request is read,
	 * which keeps replies in request order. */
	if (c->authed && s->in_fence[c->rank])
		return false;
	return c->out.len - c->out.off < OUT_HIGH_WATER;
}

static void update_interest(struct mrail_kvs_server *s, struct conn *c)
{
	uint32_t ev = EPOLLRDHUP;
	if (wants_input(s, c))
		ev |= EPOLLIN;
	if (c->out.len > c->out.off)
		ev |= EPOLLOUT;
	if (ev == c->events)
		return;
	struct epoll_event e = {.events = ev, .data.ptr = c};
	if (epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &e) == 0)
		c->events = ev;
}

static void resume_accept(struct mrail_kvs_server *s)
{
	if (!s->accept_paused)
		return;
	struct epoll_event e = {.events = EPOLLIN, .data.ptr = &listener_tag};
	if (epoll_ctl(s->epfd, EPOLL_CTL_MOD, s->lfd, &e) == 0)
		s->accept_paused = false;
}

static void conn_close(struct mrail_kvs_server *s, struct conn *c)
{
	if (c->fd < 0)
		return;
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	if (c->authed) {
		if (s->rank_conn[c->rank] == c)
			s->rank_conn[c->rank] = NULL;
		if (s->in_fence[c->rank]) {
			s->in_fence[c->rank] = false;
			s->fence_count--;
		}
	} else {
		s->unauthenticated--;
	}
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->next = s->closed;
	s->closed = c;
	resume_accept(s);
}

static void conn_free(struct conn *c)
{
	free(c->payload);
	mrail_kvs_buf_free(&c->out);
	free(c);
}

static void conn_flush(struct mrail_kvs_server *s, struct conn *c)
{
	while (c->fd >= 0 && c->out.off < c->out.len) {
		ssize_t n = send(c->fd, c->out.data + c->out.off,
				 c->out.len - c->out.off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			if (c->authed)
				mrail_log(s->job_ending ? MRAIL_LOG_DEBUG
							: MRAIL_LOG_WARN,
					  "KVS: lost rank %u (%s): %s", c->rank,
					  c->peer, strerror(errno));
			conn_close(s, c);
			return;
		}
		c->out.off += (size_t)n;
	}
	mrail_kvs_buf_compact(&c->out);
	update_interest(s, c);
}

static void conn_send(struct mrail_kvs_server *s, struct conn *c,
		      uint8_t type, const void *p, size_t len)
{
	struct iovec iov = {.iov_base = (void *)p, .iov_len = len};
	if (c->fd < 0)
		return;
	if (mrail_kvs_buf_frame(&c->out, type, &iov, len ? 1 : 0) < 0) {
		mrail_error("KVS: out of memory replying to %s", c->peer);
		conn_close(s, c);
		return;
	}
	conn_flush(s, c);
}

/*
 * Refuse a connection: one log line naming the peer and the reason, a
 * best-effort REJECT so an honest client can report it, then close. The
 * REJECT is written once without waiting: a peer we distrust gets no buffer.
 */
static void __attribute__((format(printf, 3, 4)))
reject(struct mrail_kvs_server *s, struct conn *c, const char *fmt, ...)
{
	char reason[MRAIL_KVS_REASON_MAX];
	uint8_t frame[MRAIL_KVS_HEADER_BYTES + MRAIL_KVS_REASON_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof reason, fmt, ap);
	va_end(ap);
	if (c->authed)
		mrail_warn("KVS: dropped rank %u (%s): %s", c->rank, c->peer,
			   reason);
	else
		mrail_warn("KVS: rejected connection from %s: %s", c->peer,
			   reason);
	size_t len = strlen(reason);
	mrail_kvs_header_encode(frame, MRAIL_KVS_REJECT, (uint32_t)len);
	memcpy(frame + MRAIL_KVS_HEADER_BYTES, reason, len);
	if (send(c->fd, frame, MRAIL_KVS_HEADER_BYTES + len,
		 MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* best effort: the peer may be gone already */
	}
	conn_close(s, c);
}

/* ---- requests --------------------------------------------------------- */

static void on_eof(struct mrail_kvs_server *s, struct conn *c);

/* 1 if the peer has closed and nothing it sent is left unread. */
static bool conn_is_gone(const struct conn *c)
{
	char byte;
	ssize_t n = recv(c->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
			  errno != EINTR);
}

static void handle_auth(struct mrail_kvs_server *s, struct conn *c,
			const uint8_t *p, size_t len)
{
	struct mrail_kvs_auth auth;
	uint8_t expect[MRAIL_AUTH_MAC_BYTES], mac[MRAIL_AUTH_MAC_BYTES];
	const char *why;

	if (mrail_kvs_parse_auth(p, len, &auth, &why) < 0) {
		reject(s, c, "%s", why);
		return;
	}
	/* The MAC covers the rank: check it before trusting the rank. */
	mrail_kvs_client_proof(s->key, c->nonce, auth.rank, expect);
	if (!mrail_auth_mac_equal(expect, auth.mac)) {
		reject(s, c, "bad job key");
		return;
	}
	if (auth.rank >= s->size) {
		reject(s, c, "rank %u out of range (job size %u)", auth.rank,
		       s->size);
		return;
	}
	struct conn *old = s->rank_conn[auth.rank];
	if (old && conn_is_gone(old)) {
		/* A rank reconnecting right after closing: its EOF may simply
		 * not have been handled yet in this round. */
		on_eof(s, old);
		old = NULL;
	}
	if (old) {
		reject(s, c, "rank %u is already connected from %s", auth.rank,
		       old->peer);
		return;
	}
	c->authed = true;
	c->rank = auth.rank;
	s->unauthenticated--;
	s->rank_conn[auth.rank] = c;
	mrail_debug("KVS: rank %u connected from %s", c->rank, c->peer);
	mrail_kvs_server_proof(s->key, auth.nonce, auth.rank, mac);
	conn_send(s, c, MRAIL_KVS_AUTH_OK, mac, sizeof mac);
}

static void handle_put(struct mrail_kvs_server *s, struct conn *c,
		       const uint8_t *p, size_t len)
{
	const uint8_t *key, *val;
	size_t key_len, val_len;
	const char *why;

	if (mrail_kvs_parse_put(p, len, &key, &key_len, &val, &val_len,
				&why) < 0) {
		reject(s, c, "%s", why);
		return;
	}
	int rc = mrail_kvs_store_put(s->store, key, key_len, val, val_len);
	if (rc == MRAIL_KVS_STORE_OK) {
		conn_send(s, c, MRAIL_KVS_OK, NULL, 0);
		return;
	}
	char reason[MRAIL_KVS_REASON_MAX];
	if (rc == MRAIL_KVS_STORE_FULL)
		snprintf(reason, sizeof reason,
			 "KVS full: storing %zu more bytes would exceed the "
			 "%zu-byte cap", val_len + key_len, s->store_max);
	else
		snprintf(reason, sizeof reason, "KVS out of memory");
	mrail_warn("KVS: refused PUT of rank %u: %s", c->rank, reason);
	conn_send(s, c, MRAIL_KVS_ERROR, reason, strlen(reason));
}

static void handle_get(struct mrail_kvs_server *s, struct conn *c,
		       const uint8_t *key, size_t key_len)
{
	const uint8_t *val;
	size_t len;
	char version[8];

	if (key_len == strlen(MRAIL_KVS_PROTOCOL_KEY) &&
	    !memcmp(key, MRAIL_KVS_PROTOCOL_KEY, key_len)) {
		snprintf(version, sizeof version, "%d", MRAIL_KVS_VERSION);
		conn_send(s, c, MRAIL_KVS_VALUE, version, strlen(version));
		return;
	}
	if (mrail_kvs_store_get(s->store, key, key_len, &val, &len))
		conn_send(s, c, MRAIL_KVS_VALUE, val, len);
	else
		conn_send(s, c, MRAIL_KVS_NOT_FOUND, NULL, 0);
}

/*
 * One VALUES frame answering the longest prefix of the keys that fits in
 * MRAIL_KVS_VALUES_MAX; the client asks again for the rest.
 */
static void handle_get_many(struct mrail_kvs_server *s, struct conn *c,
			    const uint8_t *p, size_t len)
{
	struct mrail_kvs_iter it;
	const char *why;
	uint32_t count, n = 0;

	if (mrail_kvs_parse_get_many(p, len, &count, &it, &why) < 0) {
		reject(s, c, "%s", why);
		return;
	}
	uint8_t *ent = malloc((size_t)count * MRAIL_KVS_VALUE_ENTRY_BYTES(0));
	struct iovec *iov = malloc((1 + 2 * (size_t)count) * sizeof *iov);
	uint8_t head[2];
	if (!ent || !iov) {
		free(ent);
		free(iov);
		mrail_error("KVS: out of memory replying to %s", c->peer);
		conn_close(s, c);
		return;
	}
	size_t total = sizeof head, niov = 1;
	const uint8_t *key;
	size_t klen;
	while (mrail_kvs_next_key(&it, &key, &klen)) {
		const uint8_t *val = NULL;
		size_t vlen = 0;
		int found = !!mrail_kvs_store_get(s->store, key, klen, &val,
						  &vlen);
		if (!found)
			vlen = 0;
		if (n && total + MRAIL_KVS_VALUE_ENTRY_BYTES(vlen) >
				 MRAIL_KVS_VALUES_MAX)
			break;
		uint8_t *e = ent + (size_t)n * MRAIL_KVS_VALUE_ENTRY_BYTES(0);
		e[0] = (uint8_t)found;
		e[1] = (uint8_t)(vlen >> 24);
		e[2] = (uint8_t)(vlen >> 16);
		e[3] = (uint8_t)(vlen >> 8);
		e[4] = (uint8_t)vlen;
		iov[niov++] = (struct iovec){e, MRAIL_KVS_VALUE_ENTRY_BYTES(0)};
		if (vlen)
			iov[niov++] = (struct iovec){(void *)val, vlen};
		total += MRAIL_KVS_VALUE_ENTRY_BYTES(vlen);
		n++;
	}
	head[0] = (uint8_t)(n >> 8);
	head[1] = (uint8_t)n;
	iov[0] = (struct iovec){head, sizeof head};
	if (c->fd >= 0 &&
	    mrail_kvs_buf_frame_max(&c->out, MRAIL_KVS_VALUES, iov, (int)niov,
				    MRAIL_KVS_VALUES_MAX) < 0) {
		mrail_error("KVS: out of memory replying to %s", c->peer);
		conn_close(s, c);
	} else {
		conn_flush(s, c);
	}
	free(ent);
	free(iov);
}

static void complete_fence(struct mrail_kvs_server *s)
{
	mrail_kvs_store_commit(s->store);
	s->fences_done++;
	mrail_debug("KVS: fence %llu complete (%u ranks, %zu bytes stored)",
		    (unsigned long long)s->fences_done, s->size,
		    mrail_kvs_store_bytes(s->store));
	s->fence_count = 0;
	for (uint32_t r = 0; r < s->size; r++) {
		if (!s->in_fence[r])
			continue;
		s->in_fence[r] = false;
		/* conn_close() clears in_fence, so the rank is connected. */
		conn_send(s, s->rank_conn[r], MRAIL_KVS_OK, NULL, 0);
	}
}

static void handle_fence(struct mrail_kvs_server *s, struct conn *c)
{
	s->in_fence[c->rank] = true;
	s->fence_count++;
	update_interest(s, c);
	if (s->fence_count == s->size)
		complete_fence(s);
}

static void handle_frame(struct mrail_kvs_server *s, struct conn *c,
			 uint8_t type, const uint8_t *p, size_t len)
{
	if (!c->authed) {
		if (type == MRAIL_KVS_AUTH)
			handle_auth(s, c, p, len);
		else
			reject(s, c, "%s before authentication",
			       mrail_kvs_type_name(type));
		return;
	}
	s->requests++;
	s->gets += type == MRAIL_KVS_GET;
	s->get_manys += type == MRAIL_KVS_GET_MANY;
	switch (type) {
	case MRAIL_KVS_PUT:
		handle_put(s, c, p, len);
		break;
	case MRAIL_KVS_GET:
		handle_get(s, c, p, len);
		break;
	case MRAIL_KVS_GET_MANY:
		handle_get_many(s, c, p, len);
		break;
	case MRAIL_KVS_FENCE:
		handle_fence(s, c);
		break;
	default:
		reject(s, c, "unexpected %s from a client",
		       mrail_kvs_type_name(type));
		break;
	}
}

/* ---- input ------------------------------------------------------------ */

static void on_eof(struct mrail_kvs_server *s, struct conn *c)
{
	bool partial = c->hdr_got > 0 || c->have_hdr;

	if (!c->authed) {
		if (partial)
			mrail_warn("KVS: rejected connection from %s: closed "
				   "in the middle of a message", c->peer);
		else
			mrail_info("KVS: connection from %s closed before "
				   "authenticating", c->peer);
	} else if (partial) {
		mrail_warn("KVS: rank %u (%s) closed in the middle of a "
			   "message", c->rank, c->peer);
	} else if (s->in_fence[c->rank] && !s->job_ending) {
		mrail_warn("KVS: rank %u (%s) disconnected inside a fence; "
			   "the fence cannot complete until it reconnects",
			   c->rank, c->peer);
	} else {
		mrail_debug("KVS: rank %u (%s) disconnected", c->rank,
			    c->peer);
	}
	conn_close(s, c);
}

/* Read one step of the current frame: 1 progress, 0 would block, -1 gone. */
static int read_step(struct mrail_kvs_server *s, struct conn *c)
{
	uint8_t *dst;
	size_t want;

	if (!c->have_hdr) {
		dst = c->hdr_bytes + c->hdr_got;
		want = MRAIL_KVS_HEADER_BYTES - c->hdr_got;
	} else {
		dst = c->payload + c->payload_got;
		want = c->hdr.length - c->payload_got;
	}
	ssize_t n = recv(c->fd, dst, want, MSG_DONTWAIT);
	if (n < 0) {
		if (errno == EINTR)
			return 1;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		if (c->authed)
			mrail_log(s->job_ending ? MRAIL_LOG_DEBUG
						: MRAIL_LOG_WARN,
				  "KVS: lost rank %u (%s): %s", c->rank,
				  c->peer, strerror(errno));
		else
			mrail_info("KVS: connection from %s failed: %s",
				   c->peer, strerror(errno));
		conn_close(s, c);
		return -1;
	}
	if (n == 0) {
		on_eof(s, c);
		return -1;
	}
	if (!c->have_hdr)
		c->hdr_got += (size_t)n;
	else
		c->payload_got += (size_t)n;
	return 1;
}

/* Once the header is complete: validate it before any allocation. */
static int start_payload(struct mrail_kvs_server *s, struct conn *c)
{
	const char *why;

	if (mrail_kvs_header_decode(c->hdr_bytes, &c->hdr, &why) < 0) {
		reject(s, c, "%s", why);
		return -1;
	}
	if (!c->authed && c->hdr.type != MRAIL_KVS_AUTH) {
		reject(s, c, "%s before authentication",
		       mrail_kvs_type_name(c->hdr.type));
		return -1;
	}
	if (c->hdr.length > c->payload_cap) {
		uint8_t *p = realloc(c->payload, c->hdr.length);
		if (!p) {
			mrail_error("KVS: out of memory reading from %s",
				    c->peer);
			conn_close(s, c);
			return -1;
		}
		c->payload = p;
		c->payload_cap = c->hdr.length;
	}
	c->have_hdr = true;
	c->payload_got = 0;
	return 0;
}

static void conn_read(struct mrail_kvs_server *s, struct conn *c)
{
	int frames = 0;

	while (c->fd >= 0 && frames < FRAMES_PER_WAKEUP && wants_input(s, c)) {
		if (!c->have_hdr && c->hdr_got == MRAIL_KVS_HEADER_BYTES) {
			if (start_payload(s, c) < 0)
				return;
		}
		if (c->have_hdr && c->payload_got == c->hdr.length) {
			c->have_hdr = false;
			c->hdr_got = 0;
			frames++;
			handle_frame(s, c, c->hdr.type, c->payload,
				     c->hdr.length);
			continue;
		}
		if (read_step(s, c) <= 0)
			return;
	}
	if (c->fd >= 0)
		update_interest(s, c);
}

/* ---- accepting -------------------------------------------------------- */

static void format_peer(const struct sockaddr *sa, socklen_t len, char *out,
			size_t out_len)
{
	char host[INET6_ADDRSTRLEN + 8], serv[8];
	if (getnameinfo(sa, len, host, sizeof host, serv, sizeof serv,
			NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
		snprintf(out, out_len, "(unknown)");
		return;
	}
	if (sa->sa_family == AF_INET6)
		snprintf(out, out_len, "[%s]:%s", host, serv);
	else
		snprintf(out, out_len, "%s:%s", host, serv);
}

static void accept_one(struct mrail_kvs_server *s, int fd,
		       const struct sockaddr *sa, socklen_t salen)
{
	char peer[80];
	struct conn *c;

	format_peer(sa, salen, peer, sizeof peer);
	if (s->unauthenticated >= s->max_unauthenticated) {
		mrail_warn("KVS: rejected connection from %s: %u connections "
			   "are already authenticating", peer,
			   s->unauthenticated);
		close(fd);
		return;
	}
	c = calloc(1, sizeof *c);
	if (!c || mrail_auth_random(c->nonce, sizeof c->nonce) < 0) {
		mrail_error("KVS: cannot set up connection from %s", peer);
		free(c);
		close(fd);
		return;
	}
	c->fd = fd;
	memcpy(c->peer, peer, sizeof peer);
	c->deadline = mrail_now() + s->auth_timeout;
	c->events = EPOLLIN | EPOLLRDHUP;
	struct epoll_event e = {.events = c->events, .data.ptr = c};
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &e) < 0) {
		mrail_error("KVS: epoll_ctl for %s: %s", peer, strerror(errno));
		free(c);
		close(fd);
		return;
	}
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->unauthenticated++;
	conn_send(s, c, MRAIL_KVS_HELLO, c->nonce, sizeof c->nonce);
}

static void accept_all(struct mrail_kvs_server *s)
{
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof ss;
		int fd = accept4(s->lfd, (struct sockaddr *)&ss, &len,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			accept_one(s, fd, (struct sockaddr *)&ss, len);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
		    errno == ENOMEM) {
			/* Level-triggered epoll would spin: pause accepting
			 * until a connection closes. */
			mrail_warn("KVS: cannot accept connections: %s",
				   strerror(errno));
			struct epoll_event e = {.events = 0,
						.data.ptr = &listener_tag};
			if (epoll_ctl(s->epfd, EPOLL_CTL_MOD, s->lfd, &e) == 0)
				s->accept_paused = true;
		}
		return;
	}
}

/* ---- the service ------------------------------------------------------ */

static void expire_handshakes(struct mrail_kvs_server *s)
{
	double now = mrail_now();
	struct conn *c = s->conns, *next;
	for (; c; c = next) {
		next = c->next;
		if (!c->authed && now >= c->deadline)
			reject(s, c, "no authentication within %g s",
			       s->auth_timeout);
	}
}

void mrail_kvs_server_dispatch(struct mrail_kvs_server *s)
{
	struct epoll_event ev[64];
	int n = epoll_wait(s->epfd, ev, 64, 0);

	for (int i = 0; i < n; i++) {
		if (ev[i].data.ptr == &listener_tag) {
			accept_all(s);
			continue;
		}
		struct conn *c = ev[i].data.ptr;
		if (c->fd < 0)
			continue; /* closed earlier in this round */
		if (ev[i].events & EPOLLOUT)
			conn_flush(s, c);
		if (c->fd < 0)
			continue;
		if (ev[i].events & EPOLLIN)
			conn_read(s, c);
		else if (ev[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
			on_eof(s, c); /* gone while we were not reading */
	}
	expire_handshakes(s);
	while (s->closed) {
		struct conn *c = s->closed;
		s->closed = c->next;
		conn_free(c);
	}
}

int mrail_kvs_server_timeout_ms(const struct mrail_kvs_server *s)
{
	double first = -1, now = mrail_now();
	for (const struct conn *c = s->conns; c; c = c->next)
		if (!c->authed && (first < 0 || c->deadline < first))
			first = c->deadline;
	if (first < 0)
		return -1;
	if (first <= now)
		return 0;
	return (int)((first - now) * 1000.0) + 1;
}

void mrail_kvs_server_job_ending(struct mrail_kvs_server *s)
{
	s->job_ending = true;
}

int mrail_kvs_server_fd(const struct mrail_kvs_server *s)
{
	return s->epfd;
}

const char *mrail_kvs_server_address(const struct mrail_kvs_server *s)
{
	return s->address;
}

/* The address ranks should dial: a wildcard bind is reached via loopback. */
static void advertised_address(const struct sockaddr_storage *ss, char *out,
			       size_t out_len)
{
	char host[INET6_ADDRSTRLEN + 8];
	unsigned port;

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)ss;
		port = ntohs(a->sin6_port);
		if (IN6_IS_ADDR_UNSPECIFIED(&a->sin6_addr))
			snprintf(host, sizeof host, "::1");
		else
			getnameinfo((const void *)a, sizeof *a, host,
				    sizeof host, NULL, 0, NI_NUMERICHOST);
		snprintf(out, out_len, "[%s]:%u", host, port);
	} else {
		const struct sockaddr_in *a = (const void *)ss;
		port = ntohs(a->sin_port);
		if (a->sin_addr.s_addr == htonl(INADDR_ANY))
			snprintf(host, sizeof host, "127.0.0.1");
		else
			getnameinfo((const void *)a, sizeof *a, host,
				    sizeof host, NULL, 0, NI_NUMERICHOST);
		snprintf(out, out_len, "%s:%u", host, port);
	}
}

static int listen_on(struct mrail_kvs_server *s, const char *bind_addr)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct addrinfo *res, *ai;
	char host[NI_MAXHOST];
	int err = 0;

	/* Accept the bracketed form users copy from MRAIL_KVS_ADDR. */
	size_t blen = strlen(bind_addr);
	if (bind_addr[0] == '[' && blen > 2 && bind_addr[blen - 1] == ']' &&
	    blen - 2 < sizeof host) {
		memcpy(host, bind_addr + 1, blen - 2);
		host[blen - 2] = '\0';
	} else {
		snprintf(host, sizeof host, "%s", bind_addr);
	}
	int rc = getaddrinfo(host, "0", &hints, &res);
	if (rc != 0) {
		mrail_error("KVS: cannot resolve bind address '%s': %s",
			    bind_addr, gai_strerror(rc));
		return MRAIL_ERR_CONFIG;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family,
				ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
				ai->ai_protocol);
		if (fd < 0) {
			err = errno;
			continue;
		}
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
		    listen(fd, SOMAXCONN) == 0) {
			struct sockaddr_storage ss;
			socklen_t len = sizeof ss;
			if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0) {
				advertised_address(&ss, s->address,
						   sizeof s->address);
				s->lfd = fd;
				break;
			}
		}
		err = errno;
		close(fd);
	}
	freeaddrinfo(res);
	if (s->lfd < 0) {
		mrail_error("KVS: cannot listen on '%s': %s", bind_addr,
			    strerror(err));
		return MRAIL_ERR_IO;
	}
	return MRAIL_OK;
}

int mrail_kvs_server_create(const struct mrail_kvs_server_config *cfg,
			    struct mrail_kvs_server **out)
{
	struct mrail_kvs_server *s = calloc(1, sizeof *s);
	int rc = MRAIL_ERR_NOMEM;

	*out = NULL;
	if (!s)
		return MRAIL_ERR_NOMEM;
	s->epfd = s->lfd = -1;
	s->size = cfg->size;
	memcpy(s->key, cfg->key, sizeof s->key);
	s->auth_timeout = cfg->auth_timeout;
	s->max_unauthenticated = cfg->size + EXTRA_UNAUTHENTICATED;
	s->store_max = cfg->store_max;
	s->store = mrail_kvs_store_create(cfg->store_max);
	s->rank_conn = calloc(cfg->size, sizeof *s->rank_conn);
	s->in_fence = calloc(cfg->size, sizeof *s->in_fence);
	if (!s->store || !s->rank_conn || !s->in_fence)
		goto fail;
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0) {
		mrail_error("KVS: epoll_create1: %s", strerror(errno));
		rc = MRAIL_ERR_IO;
		goto fail;
	}
	rc = listen_on(s, cfg->bind ? cfg->bind : "127.0.0.1");
	if (rc != MRAIL_OK)
		goto fail;
	struct epoll_event e = {.events = EPOLLIN, .data.ptr = &listener_tag};
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->lfd, &e) < 0) {
		mrail_error("KVS: epoll_ctl: %s", strerror(errno));
		rc = MRAIL_ERR_IO;
		goto fail;
	}
	*out = s;
	return MRAIL_OK;
fail:
	mrail_kvs_server_destroy(s);
	return rc;
}

void mrail_kvs_server_destroy(struct mrail_kvs_server *s)
{
	if (!s)
		return;
	if (s->requests)
		mrail_info("KVS: served %llu requests (%llu GET, %llu GET_MANY, "
			   "%llu fences)", (unsigned long long)s->requests,
			   (unsigned long long)s->gets,
			   (unsigned long long)s->get_manys,
			   (unsigned long long)s->fences_done);
	while (s->conns)
		conn_close(s, s->conns);
	while (s->closed) {
		struct conn *c = s->closed;
		s->closed = c->next;
		conn_free(c);
	}
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->epfd >= 0)
		close(s->epfd);
	mrail_kvs_store_destroy(s->store);
	free(s->rank_conn);
	free(s->in_fence);
	free(s);
}
