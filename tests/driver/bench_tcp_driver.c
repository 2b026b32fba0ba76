/*
 * TCP driver versus raw TCP on loopback, two busy-polling threads, no
 * engine: 8-byte ping-pong latency, and streaming bandwidth with windows
 * of 16 messages plus a 1-byte ack (the pattern of bench/mrail-bench), for
 * several message sizes. Raw sockets get the driver's socket options
 * (TCP_NODELAY, 4 MiB buffers). Interleaved rounds, best of each: load
 * from other processes only ever makes a round slower.
 * Usage: bench-tcp-driver [scale]   (prints; never fails on speed)
 */
#include "drivers/driver.h"
#include "util/clock.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

extern const struct mrail_drv_ops mrail_tcp_driver_ops;
static const struct mrail_drv_ops *ops = &mrail_tcp_driver_ops;

#define DIE(...)                                                           \
	do {                                                               \
		fprintf(stderr, __VA_ARGS__);                              \
		fputc('\n', stderr);                                       \
		exit(1);                                                   \
	} while (0)

#define WINDOW 16
#define MAX_SIZE ((size_t)16 << 20)
#define ROUNDS 4
static const size_t sizes[] = {(size_t)64 << 10, (size_t)256 << 10,
			       (size_t)1 << 20, MAX_SIZE};
#define NSIZES (int)(sizeof sizes / sizeof sizes[0])
static int lat_iters = 20000;
static double bw_bytes = 128.0 * (1 << 20); /* per measurement */

static int bw_iters(size_t size)
{
	int n = (int)(bw_bytes / ((double)size * WINDOW));
	return n < 2 ? 2 : n;
}

/* One test run: latency, then bandwidth for each size. */
struct result {
	double lat_us;
	double bw[NSIZES]; /* bytes/s */
};

/* ---- raw TCP ----------------------------------------------------------- */

static void raw_pair(int fds[2])
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t sl = sizeof sin;
	int one = 1, buf = 4 << 20, l = socket(AF_INET, SOCK_STREAM, 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(l, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
	if (bind(l, (struct sockaddr *)&sin, sizeof sin) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&sin, &sl))
		DIE("raw listen: %s", strerror(errno));
	fds[0] = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
	setsockopt(fds[0], SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
	if (connect(fds[0], (struct sockaddr *)&sin, sizeof sin))
		DIE("raw connect: %s", strerror(errno));
	fds[1] = accept(l, NULL, NULL);
	close(l);
	for (int i = 0; i < 2; i++) {
		setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		setsockopt(fds[i], SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
	}
}

static void raw_recv_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			DIE("raw recv: %s", n ? strerror(errno) : "EOF");
		}
	}
}

static void raw_send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
		} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
			DIE("raw send: %s", strerror(errno));
		}
	}
}

static void *raw_pong(void *arg)
{
	int fd = *(int *)arg;
	char msg[8], *buf = malloc(MAX_SIZE);

	for (int i = 0; i < lat_iters; i++) {
		raw_recv_all(fd, msg, sizeof msg);
		raw_send_all(fd, msg, sizeof msg);
	}
	for (int s = 0; s < NSIZES; s++)
		for (int i = 0; i < bw_iters(sizes[s]); i++) {
			for (int w = 0; w < WINDOW; w++)
				raw_recv_all(fd, buf, sizes[s]);
			raw_send_all(fd, "k", 1);
		}
	free(buf);
	return NULL;
}

static void raw_bench(struct result *res)
{
	int fds[2];
	pthread_t th;
	char msg[8] = "ping!!!", ack;
	char *buf = calloc(1, MAX_SIZE);
	double t0;

	raw_pair(fds);
	pthread_create(&th, NULL, raw_pong, &fds[1]);
	t0 = mrail_now();
	for (int i = 0; i < lat_iters; i++) {
		raw_send_all(fds[0], msg, sizeof msg);
		raw_recv_all(fds[0], msg, sizeof msg);
	}
	res->lat_us = (mrail_now() - t0) / lat_iters / 2 * 1e6;
	for (int s = 0; s < NSIZES; s++) {
		int iters = bw_iters(sizes[s]);
		t0 = mrail_now();
		for (int i = 0; i < iters; i++) {
			for (int w = 0; w < WINDOW; w++)
				raw_send_all(fds[0], buf, sizes[s]);
			raw_recv_all(fds[0], &ack, 1);
		}
		res->bw[s] = (double)sizes[s] * WINDOW * iters /
			     (mrail_now() - t0);
	}
	pthread_join(th, NULL);
	close(fds[0]);
	close(fds[1]);
	free(buf);
}

/* ---- driver ------------------------------------------------------------ */

struct dpeer {
	struct mrail_drv *drv;
	struct mrail_drv_ep *ep;
	uint64_t frames, bodies;
	char *buf;
	bool echo;
	int connected;
};

static void *d_accepted(void *engine_ctx, struct mrail_drv_ep *ep)
{
	struct dpeer *p = engine_ctx;
	p->ep = ep;
	return p;
}

static void d_connected(void *ctx, int status)
{
	struct dpeer *p = ctx;
	if (status)
		DIE("connect failed");
	p->connected = 1;
}

static void d_recv_frame(void *ctx, const void *head, size_t len)
{
	struct dpeer *p = ctx;
	p->frames++;
	if (p->echo && ops->send(p->ep, head, len, NULL, 0, NULL))
		DIE("echo send failed");
}

static void *d_recv_body(void *ctx, const void *head, size_t len,
			 uint64_t body_len, struct iovec *dst, int *cnt)
{
	struct dpeer *p = ctx;
	(void)head, (void)len;
	dst[0] = (struct iovec){p->buf, (size_t)body_len};
	*cnt = 1;
	return p;
}

static void d_recv_body_done(void *ctx, void *cookie)
{
	struct dpeer *p = ctx;
	(void)cookie;
	if (++p->bodies % WINDOW == 0 &&
	    ops->send(p->ep, "k", 1, NULL, 0, NULL))
		DIE("ack send failed");
}

static void d_send_done(void *ctx, void *send_ctx, int status)
{
	(void)ctx, (void)send_ctx;
	if (status)
		DIE("send_done %d", status);
}

static void d_ep_error(void *ctx, int status, const char *why)
{
	(void)ctx;
	DIE("ep_error %d: %s", status, why);
}

static const struct mrail_drv_upcalls d_up = {
	d_accepted, d_connected, d_recv_frame, d_recv_body,
	d_recv_body_done, d_send_done, d_ep_error, NULL,
};

static atomic_int pong_stop;

static void *d_pong(void *arg)
{
	struct dpeer *p = arg;
	while (!atomic_load_explicit(&pong_stop, memory_order_relaxed))
		ops->progress(p->drv);
	return NULL;
}

static void wait_frames(struct dpeer *p, uint64_t n)
{
	while (p->frames < n)
		ops->progress(p->drv);
}

static void driver_bench(struct result *res)
{
	static const char head[16] = "data frame head";
	struct dpeer a = {.echo = true}, b = {0};
	struct mrail_drv_open_args aa = {&d_up, &a, ""}, ba = {&d_up, &b, ""};
	char blob[64], msg[8] = "ping!!!";
	size_t blen = sizeof blob;
	char *buf = calloc(1, MAX_SIZE);
	uint64_t acks;
	pthread_t th;
	double t0;

	a.buf = calloc(1, MAX_SIZE);
	if (ops->open(&aa, &a.drv) || ops->open(&ba, &b.drv) ||
	    ops->listen(a.drv, "127.0.0.1", blob, &blen, NULL, 0) < 0 ||
	    ops->connect(b.drv, "127.0.0.1", blob, blen, &b, &b.ep))
		DIE("driver setup failed");
	while (!b.connected || !a.ep) {
		ops->progress(a.drv);
		ops->progress(b.drv);
	}
	atomic_store(&pong_stop, 0);
	pthread_create(&th, NULL, d_pong, &a);

	t0 = mrail_now();
	for (int i = 0; i < lat_iters; i++) {
		if (ops->send(b.ep, msg, sizeof msg, NULL, 0, NULL))
			DIE("send failed");
		wait_frames(&b, (uint64_t)i + 1);
	}
	res->lat_us = (mrail_now() - t0) / lat_iters / 2 * 1e6;

	acks = (uint64_t)lat_iters;
	for (int s = 0; s < NSIZES; s++) {
		struct iovec iov = {buf, sizes[s]};
		int iters = bw_iters(sizes[s]);
		t0 = mrail_now();
		for (int i = 0; i < iters; i++) {
			for (int w = 0; w < WINDOW; w++)
				if (ops->send(b.ep, head, sizeof head, &iov, 1,
					      NULL))
					DIE("send failed");
			wait_frames(&b, ++acks);
		}
		res->bw[s] = (double)sizes[s] * WINDOW * iters /
			     (mrail_now() - t0);
	}

	atomic_store(&pong_stop, 1);
	pthread_join(th, NULL);
	ops->close(b.drv);
	ops->close(a.drv);
	free(buf);
	free(a.buf);
}

static void keep_best(struct result *best, const struct result *r)
{
	if (best->lat_us == 0 || r->lat_us < best->lat_us)
		best->lat_us = r->lat_us;
	for (int s = 0; s < NSIZES; s++)
		if (r->bw[s] > best->bw[s])
			best->bw[s] = r->bw[s];
}

int main(int argc, char **argv)
{
	struct result raw = {0}, drv = {0}, r;

	if (argc > 1) {
		double scale = atof(argv[1]);
		lat_iters = (int)(lat_iters * scale) + 1;
		bw_bytes *= scale;
	}
	for (int round = 0; round < ROUNDS; round++) {
		raw_bench(&r);
		keep_best(&raw, &r);
		driver_bench(&r);
		keep_best(&drv, &r);
	}
	printf("best of %d rounds, loopback, two busy-polling threads\n",
	       ROUNDS);
	printf("8-byte one-way latency: raw %.2f us, driver %.2f us "
	       "(%+.2f us)\n",
	       raw.lat_us, drv.lat_us, drv.lat_us - raw.lat_us);
	printf("bandwidth, windows of %d messages + ack:\n", WINDOW);
	for (int s = 0; s < NSIZES; s++)
		printf("  %8zu B: raw %7.0f MB/s, driver %7.0f MB/s (%.0f%%)\n",
		       sizes[s], raw.bw[s] / 1e6, drv.bw[s] / 1e6,
		       100 * drv.bw[s] / raw.bw[s]);
	return 0;
}
