#include "tests/driver/harness.h"

#include "util/clock.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int h_in_progress, h_in_send;

#define H_MAX_SIDES 8
static struct side *sides[H_MAX_SIDES];

/* ---- patterns ---------------------------------------------------------- */

/* Position-dependent so a shifted, reordered or misplaced byte shows. */
uint8_t h_pat(uint64_t seed, uint64_t off)
{
	return (uint8_t)(off * 7 + (off >> 8) * 13 + (off >> 16) * 17 +
			 (off >> 24) * 19 + (off >> 32) * 23 + seed * 31 +
			 (seed >> 8) * 37 + 1);
}

void h_fill(uint8_t *p, size_t len, uint64_t seed, uint64_t off)
{
	for (size_t i = 0; i < len; i++)
		p[i] = h_pat(seed, off + i);
}

size_t h_verify(const uint8_t *p, size_t len, uint64_t seed, uint64_t off)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != h_pat(seed, off + i))
			return i;
	return SIZE_MAX;
}

uint64_t h_rand(void)
{
	static uint64_t x = 0x9e3779b97f4a7c15ull;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

/* Size of the next of `remaining` pieces: roughly even, jittered, some
 * empty; the last piece takes the rest. */
uint64_t h_split(uint64_t left, int remaining, bool empty)
{
	uint64_t take;

	if (remaining <= 1)
		return left;
	if (empty)
		return 0;
	take = left / (uint64_t)remaining;
	if (take > 1 && (h_rand() & 1))
		take -= h_rand() % (take / 2 + 1);
	return take;
}

void *h_sink_body(struct tep *t, const uint8_t *head, size_t len,
		  uint64_t body_len, struct iovec *dst, int *cnt)
{
	static uint8_t sink[4 << 20];
	(void)t;
	(void)head;
	(void)len;
	CHECK(body_len <= sizeof sink);
	dst[0] = (struct iovec){sink, body_len};
	*cnt = 1;
	return sink;
}

bool h_sink_body_done(struct tep *t, void *cookie)
{
	(void)t;
	(void)cookie;
	return true;
}

void h_close(struct tep *t)
{
	ops->ep_close(t->ep);
	t->closed = true;
}

/* ---- upcalls ----------------------------------------------------------- */

static void check_live(struct tep *t, const char *what)
{
	CHECKF(h_in_progress, "%s: %s upcall outside progress", t->label,
	       what);
	CHECKF(!h_in_send, "%s: %s upcall from inside send", t->label, what);
	CHECKF(!t->closed, "%s: %s upcall after ep_close", t->label, what);
	CHECKF(!t->errors, "%s: %s upcall after ep_error (%s)", t->label, what,
	       t->why);
}

static void *up_accepted(void *engine_ctx, struct mrail_drv_ep *ep)
{
	struct side *s = engine_ctx;
	struct tep *t;

	CHECK(h_in_progress && !h_in_send);
	if (s->refuse) {
		s->refused++;
		return NULL;
	}
	CHECK(s->naccepted < H_MAX_ACCEPT);
	char label[sizeof t->label];
	snprintf(label, sizeof label, "%s.acc%d", s->name, s->naccepted);
	t = &s->acc[s->naccepted];
	memcpy(t->label, label, sizeof label);
	s->naccepted++;
	t->side = s;
	t->ep = ep;
	if (s->on_accept)
		s->on_accept(s, t);
	return t;
}

static void up_connected(void *ctx, int status)
{
	struct tep *t = ctx;
	check_live(t, "connected");
	CHECKF(!t->connected, "%s: second connected upcall", t->label);
	t->connected = 1;
	t->connect_status = status;
}

static void check_head(struct tep *t, const uint8_t *head, size_t len,
		       uint64_t body_len)
{
	struct h_head hh;

	CHECKF(len >= sizeof hh, "%s: head of %zu bytes", t->label, len);
	memcpy(&hh, head, sizeof hh);
	CHECKF(hh.magic == H_HEAD_MAGIC, "%s: bad head magic", t->label);
	CHECKF(hh.seq == t->rx_next_seq,
	       "%s: frame %llu arrived, expected %llu", t->label,
	       (unsigned long long)hh.seq,
	       (unsigned long long)t->rx_next_seq);
	CHECKF(hh.head_len == len, "%s: frame %llu head %zu, sent %u",
	       t->label, (unsigned long long)hh.seq, len, hh.head_len);
	CHECKF(hh.body_len == body_len,
	       "%s: frame %llu body %llu, sent %llu", t->label,
	       (unsigned long long)hh.seq, (unsigned long long)body_len,
	       (unsigned long long)hh.body_len);
	size_t bad = h_verify(head + sizeof hh, len - sizeof hh, hh.seq,
			      sizeof hh);
	CHECKF(bad == SIZE_MAX, "%s: frame %llu head byte %zu wrong", t->label,
	       (unsigned long long)hh.seq, bad + sizeof hh);
	t->rx_next_seq++;
}

static void up_recv_frame(void *ctx, const void *head, size_t len)
{
	struct tep *t = ctx;
	check_live(t, "recv_frame");
	t->frames++;
	if (t->on_frame && t->on_frame(t, head, len))
		return;
	check_head(t, head, len, 0);
}

struct rx_body {
	uint64_t seq, len;
	int cnt;
	struct iovec piece[];
};

/* Scatter the body over separately allocated pieces (ASan sees any
 * overrun), with empty entries mixed in. */
static void *default_body(struct tep *t, const uint8_t *head, size_t len,
			  uint64_t body_len, struct iovec *dst, int *cnt)
{
	struct h_head hh;
	int pieces;
	uint64_t left = body_len;
	struct rx_body *rb;

	check_head(t, head, len, body_len);
	memcpy(&hh, head, sizeof hh);
	pieces = t->rx_pieces > 0 ? t->rx_pieces : 1 + (int)(hh.seq % 6);
	if (pieces > *cnt)
		pieces = *cnt;
	rb = calloc(1, sizeof *rb + (size_t)pieces * sizeof rb->piece[0]);
	CHECK(rb);
	rb->seq = hh.seq;
	rb->len = body_len;
	rb->cnt = pieces;
	for (int i = 0; i < pieces; i++) {
		uint64_t take = h_split(left, pieces - i, i % 5 == 3);
		rb->piece[i].iov_len = take;
		rb->piece[i].iov_base = malloc(take ? take : 1);
		CHECK(rb->piece[i].iov_base);
		left -= take;
		dst[i] = rb->piece[i];
	}
	*cnt = pieces;
	return rb;
}

static void *up_recv_body(void *ctx, const void *head, size_t len,
			  uint64_t body_len, struct iovec *dst, int *cnt)
{
	struct tep *t = ctx;
	check_live(t, "recv_body");
	CHECKF(*cnt >= 64, "%s: dst capacity %d", t->label, *cnt);
	t->bodies_started++;
	if (t->on_body)
		return t->on_body(t, head, len, body_len, dst, cnt);
	return default_body(t, head, len, body_len, dst, cnt);
}

static void up_recv_body_done(void *ctx, void *cookie)
{
	struct tep *t = ctx;
	struct rx_body *rb = cookie;
	uint64_t off = 0;

	check_live(t, "recv_body_done");
	t->bodies_done++;
	if (t->on_body_done && t->on_body_done(t, cookie))
		return;
	for (int i = 0; i < rb->cnt; i++) {
		size_t bad = h_verify(rb->piece[i].iov_base,
				      rb->piece[i].iov_len, rb->seq * 7 + 1,
				      off);
		CHECKF(bad == SIZE_MAX,
		       "%s: frame %llu body byte %llu wrong (piece %d)",
		       t->label, (unsigned long long)rb->seq,
		       (unsigned long long)(off + bad), i);
		off += rb->piece[i].iov_len;
		free(rb->piece[i].iov_base);
	}
	CHECK(off == rb->len);
	t->rx_bytes += rb->len;
	free(rb);
}

struct tx_rec {
	uint64_t seq;
	uint8_t *head;
	uint8_t *body;
};

static void up_send_done(void *ctx, void *send_ctx, int status)
{
	struct tep *t = ctx;

	CHECKF(h_in_progress && !h_in_send, "%s: send_done outside progress",
	       t->label);
	CHECKF(!t->closed, "%s: send_done after ep_close", t->label);
	CHECKF(status == 0 || status < 0, "bad status");
	CHECKF(!(t->errors && status == 0),
	       "%s: send_done(0) after ep_error", t->label);
	if (status == 0) {
		t->send_ok++;
	} else {
		t->send_err++;
		t->last_send_err = status;
	}
	if (t->on_send_done && t->on_send_done(t, send_ctx, status))
		return;
	struct tx_rec *r = send_ctx;
	while (t->inj_head < t->inj_tail &&
	       t->injected[t->inj_head % 1024] == t->tx_done_seq) {
		t->inj_head++;
		t->tx_done_seq++;
	}
	CHECKF(r->seq == t->tx_done_seq,
	       "%s: send_done for frame %llu, expected %llu", t->label,
	       (unsigned long long)r->seq,
	       (unsigned long long)t->tx_done_seq);
	t->tx_done_seq++;
	t->tx_outstanding--;
	free(r->head);
	free(r->body);
	free(r);
}

static void up_ep_error(void *ctx, int status, const char *why)
{
	struct tep *t = ctx;
	check_live(t, "ep_error");
	CHECK(status < 0);
	CHECK(why && *why);
	t->errors++;
	t->error_status = status;
	snprintf(t->why, sizeof t->why, "%s", why);
	if (t->on_error)
		t->on_error(t);
}

static void up_rma_done(void *ctx, void *op_ctx, int status)
{
	struct tep *t = ctx;

	CHECKF(h_in_progress && !h_in_send, "%s: rma_done outside progress",
	       t->label);
	CHECKF(!t->closed, "%s: rma_done after ep_close", t->label);
	CHECKF(!(t->errors && status == 0), "%s: rma_done(0) after ep_error",
	       t->label);
	if (status == 0) {
		t->rma_ok++;
	} else {
		t->rma_err++;
		t->last_rma_err = status;
	}
	CHECKF(t->on_rma_done, "%s: unexpected rma_done", t->label);
	t->on_rma_done(t, op_ctx, status);
}

static const struct mrail_drv_upcalls upcalls = {
	.accepted = up_accepted,
	.connected = up_connected,
	.recv_frame = up_recv_frame,
	.recv_body = up_recv_body,
	.recv_body_done = up_recv_body_done,
	.send_done = up_send_done,
	.ep_error = up_ep_error,
	.rma_done = up_rma_done,
};

/* ---- sides ------------------------------------------------------------- */

void h_tep_init(struct tep *t, const char *label)
{
	memset(t, 0, sizeof *t);
	snprintf(t->label, sizeof t->label, "%s", label);
}

struct side *h_side_open(const char *name)
{
	return h_side_open_params(name, "", NULL);
}

void h_forget_sides(void)
{
	for (int i = 0; i < H_MAX_SIDES; i++)
		sides[i] = NULL;
}

struct side *h_side_open_params(const char *name, const char *params,
				int *rc)
{
	struct side *s = calloc(1, sizeof *s);
	struct mrail_drv_open_args args = {.upcalls = &upcalls,
					   .engine_ctx = s,
					   .params = params};
	int r;

	CHECK(s);
	snprintf(s->name, sizeof s->name, "%s", name);
	r = ops->open(&args, &s->drv);
	if (rc)
		*rc = r;
	if (r != 0 && rc) {
		free(s);
		return NULL;
	}
	CHECKF(r == 0, "open(%s) failed: %d", params, r);
	for (int i = 0; i < H_MAX_SIDES; i++)
		if (!sides[i]) {
			sides[i] = s;
			return s;
		}
	FAIL("too many sides");
}

void h_side_close(struct side *s)
{
	for (int i = 0; i < H_MAX_SIDES; i++)
		if (sides[i] == s)
			sides[i] = NULL;
	ops->close(s->drv);
	free(s);
}

bool h_side_listen(struct side *s, const char *local)
{
	s->blob_len = sizeof s->blob;
	int rc = ops->listen(s->drv, local, s->blob, &s->blob_len, s->lname,
			     sizeof s->lname);
	return rc >= 0;
}

int h_progress(struct side *s)
{
	h_in_progress++;
	int n = ops->progress(s->drv);
	h_in_progress--;
	CHECK(n >= 0);
	return n;
}

void h_progress_all(void)
{
	for (int i = 0; i < H_MAX_SIDES; i++)
		if (sides[i])
			h_progress(sides[i]);
}

struct tep *h_connect_pair(struct side *from, struct tep *t, const char *local,
			   struct side *to)
{
	int before = to->naccepted;

	t->side = from;
	CHECK(ops->connect(from->drv, local, to->blob, to->blob_len, t,
			   &t->ep) == 0);
	CHECK(t->ep);
	WAIT_FOR(t->connected && to->naccepted > before, 10);
	CHECKF(t->connect_status == 0, "connect status %d", t->connect_status);
	return &to->acc[before];
}

int h_send(struct tep *t, const void *head, size_t hlen,
	   const struct iovec *body, int cnt, void *send_ctx)
{
	h_in_send++;
	int rc = ops->send(t->ep, head, hlen, body, cnt, send_ctx);
	h_in_send--;
	return rc;
}

int h_post(struct tep *t, size_t head_len, uint64_t body_len, int pieces)
{
	struct tx_rec *r = calloc(1, sizeof *r);
	struct iovec iov[1024];
	struct h_head hh = {.seq = t->tx_next_seq,
			    .body_len = body_len,
			    .head_len = (uint32_t)head_len,
			    .magic = H_HEAD_MAGIC};
	uint64_t left = body_len;
	int rc;

	CHECK(r && head_len >= sizeof hh && pieces >= 0 && pieces <= 1024);
	CHECK(body_len == 0 || pieces > 0);
	r->seq = t->tx_next_seq;
	r->head = malloc(head_len);
	CHECK(r->head);
	memcpy(r->head, &hh, sizeof hh);
	h_fill(r->head + sizeof hh, head_len - sizeof hh, hh.seq, sizeof hh);
	if (body_len) {
		r->body = malloc(body_len);
		CHECK(r->body);
		h_fill(r->body, body_len, hh.seq * 7 + 1, 0);
	}
	for (int i = 0; i < pieces; i++) {
		uint64_t take = h_split(left, pieces - i, i % 4 == 2);
		iov[i].iov_base = r->body + (body_len - left);
		iov[i].iov_len = take;
		left -= take;
	}
	rc = h_send(t, r->head, head_len, iov, body_len ? pieces : 0, r);
	if (rc != 0) {
		free(r->head);
		free(r->body);
		free(r);
		return rc;
	}
	t->tx_next_seq++;
	t->tx_outstanding++;
	return 0;
}

int h_inject(struct tep *t, size_t head_len, int pieces)
{
	struct h_head hh = {.seq = t->tx_next_seq,
			    .head_len = (uint32_t)head_len,
			    .magic = H_HEAD_MAGIC};
	struct iovec iov[8];
	uint8_t *head = malloc(head_len);
	size_t left = head_len;

	CHECK(head && head_len >= sizeof hh && pieces >= 1 && pieces <= 8);
	CHECK(t->inj_tail - t->inj_head < 1024);
	memcpy(head, &hh, sizeof hh);
	h_fill(head + sizeof hh, head_len - sizeof hh, hh.seq, sizeof hh);
	for (int i = 0; i < pieces; i++) {
		size_t take = h_split(left, pieces - i, i % 4 == 2);
		iov[i].iov_base = head + (head_len - left);
		iov[i].iov_len = take;
		left -= take;
	}
	h_in_send++;
	int rc = ops->inject(t->ep, iov, pieces);
	h_in_send--;
	free(head); /* the driver copied it, or took nothing */
	if (rc == 1) {
		t->injected[t->inj_tail++ % 1024] = t->tx_next_seq;
		t->tx_next_seq++;
	}
	return rc;
}

/* ---- raw sockets ------------------------------------------------------- */

int h_raw_connect(const struct side *to)
{
	/* Blob v1: "TCP" 1, family, 0, port (BE), scope, address. */
	const uint8_t *b = (const uint8_t *)to->blob;
	struct sockaddr_in sin = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	CHECK(fd >= 0 && to->blob_len == 16 && b[4] == 4);
	memcpy(&sin.sin_port, b + 6, 2);
	memcpy(&sin.sin_addr, b + 12, 4);
	CHECK(connect(fd, (struct sockaddr *)&sin, sizeof sin) == 0);
	return fd;
}

void h_raw_write(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		CHECKF(n > 0, "raw send: %s", strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

void h_raw_write_progress(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	double t0 = mrail_now();

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			CHECKF(errno == EAGAIN, "raw send: %s", strerror(errno));
			CHECK(mrail_now() - t0 < 10);
			h_progress_all();
			continue;
		}
		p += n;
		len -= (size_t)n;
	}
}

void h_frame_header(uint8_t h[16], uint32_t magic, uint32_t head_len,
		    uint64_t body_len)
{
	for (int i = 0; i < 4; i++) {
		h[i] = (uint8_t)(magic >> (8 * i));
		h[4 + i] = (uint8_t)(head_len >> (8 * i));
	}
	for (int i = 0; i < 8; i++)
		h[8 + i] = (uint8_t)(body_len >> (8 * i));
}
