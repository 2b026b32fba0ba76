/*
 * TCP driver versus raw TCP on loopback, two busy-polling threads:
 * 8-byte ping-pong latency and 16 MiB transfer bandwidth.
 * Usage: bench-tcp-driver [iterations-scale]   (prints, never fails on speed)
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

#define BW_SIZE ((size_t)16 << 20)
static int lat_iters = 20000, bw_iters = 30;

/* ---- raw TCP ----------------------------------------------------------- */

static void raw_pair(int fds[2])
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t sl = sizeof sin;
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(l, (struct sockaddr *)&sin, sizeof sin) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&sin, &sl))
		DIE("raw listen: %s", strerror(errno));
	fds[0] = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(fds[0], (struct sockaddr *)&sin, sizeof sin))
		DIE("raw connect: %s", strerror(errno));
	fds[1] = accept(l, NULL, NULL);
	close(l);
	for (int i = 0; i < 2; i++)
		setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
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
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno != EINTR)
			DIE("raw send: %s", strerror(errno));
		if (n > 0) {
			p += n;
			len -= (size_t)n;
		}
	}
}

struct raw_peer {
	int fd;
	char *buf;
};

static void *raw_pong(void *arg)
{
	struct raw_peer *p = arg;
	char msg[8];
	for (int i = 0; i < lat_iters; i++) {
		raw_recv_all(p->fd, msg, sizeof msg);
		raw_send_all(p->fd, msg, sizeof msg);
	}
	for (int i = 0; i < bw_iters; i++) {
		raw_recv_all(p->fd, p->buf, BW_SIZE);
		raw_send_all(p->fd, "k", 1);
	}
	return NULL;
}

static void raw_bench(double *lat_us, double *bw)
{
	int fds[2];
	struct raw_peer peer;
	pthread_t th;
	char msg[8] = "ping!!!", ack;
	char *buf = calloc(1, BW_SIZE);
	double t0;

	raw_pair(fds);
	peer.fd = fds[1];
	peer.buf = calloc(1, BW_SIZE);
	pthread_create(&th, NULL, raw_pong, &peer);
	t0 = mrail_now();
	for (int i = 0; i < lat_iters; i++) {
		raw_send_all(fds[0], msg, sizeof msg);
		raw_recv_all(fds[0], msg, sizeof msg);
	}
	*lat_us = (mrail_now() - t0) / lat_iters / 2 * 1e6;
	t0 = mrail_now();
	for (int i = 0; i < bw_iters; i++) {
		raw_send_all(fds[0], buf, BW_SIZE);
		raw_recv_all(fds[0], &ack, 1);
	}
	*bw = (double)BW_SIZE * bw_iters / (mrail_now() - t0);
	pthread_join(th, NULL);
	close(fds[0]);
	close(fds[1]);
	free(buf);
	free(peer.buf);
}

/* ---- driver ------------------------------------------------------------ */

struct dpeer {
	struct mrail_drv *drv;
	struct mrail_drv_ep *ep;
	uint64_t frames, bodies;
	char *buf;
	int chunks; /* bandwidth: frames per 16 MiB */
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
	uint64_t off;
	(void)len;
	memcpy(&off, head, sizeof off);
	dst[0] = (struct iovec){p->buf + off, (size_t)body_len};
	*cnt = 1;
	return p;
}

static void d_recv_body_done(void *ctx, void *cookie)
{
	struct dpeer *p = ctx;
	(void)cookie;
	/* Acknowledge each complete 16 MiB transfer. */
	if (++p->bodies % (uint64_t)p->chunks == 0 &&
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
	d_recv_body_done, d_send_done, d_ep_error,
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

static void driver_bench(int chunks, double *lat_us, double *bw)
{
	struct dpeer a = {.echo = true, .chunks = chunks};
	struct dpeer b = {.chunks = chunks};
	struct mrail_drv_open_args aa = {&d_up, &a}, ba = {&d_up, &b};
	char blob[64];
	size_t blen = sizeof blob;
	char msg[8] = "ping!!!";
	char *buf = calloc(1, BW_SIZE);
	size_t chunk = BW_SIZE / (size_t)chunks;
	pthread_t th;
	double t0;

	a.buf = calloc(1, BW_SIZE);
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
	*lat_us = (mrail_now() - t0) / lat_iters / 2 * 1e6;

	t0 = mrail_now();
	for (int i = 0; i < bw_iters; i++) {
		for (int c = 0; c < chunks; c++) {
			uint64_t off = (uint64_t)c * chunk;
			struct iovec iov = {buf + off, chunk};
			/* The head must live until send_done: keep it in
			 * a buffer that outlives the wait below. */
			static uint64_t heads[1024];
			heads[c] = off;
			if (ops->send(b.ep, &heads[c], sizeof heads[c], &iov,
				      1, NULL))
				DIE("send failed");
		}
		wait_frames(&b, (uint64_t)lat_iters + (uint64_t)i + 1);
	}
	*bw = (double)BW_SIZE * bw_iters / (mrail_now() - t0);

	atomic_store(&pong_stop, 1);
	pthread_join(th, NULL);
	ops->close(b.drv);
	ops->close(a.drv);
	free(buf);
	free(a.buf);
}

static void keep_best(double *lat, double *bw, double l, double b)
{
	if (*lat == 0 || l < *lat)
		*lat = l;
	if (b > *bw)
		*bw = b;
}

int main(int argc, char **argv)
{
	/* Interleaved rounds, best of each: other load on the host only
	 * ever makes a round slower. */
	const int rounds = 7;
	double rl = 0, rb = 0, dl = 0, db = 0, dl2 = 0, db2 = 0, l, b;

	if (argc > 1) {
		double scale = atof(argv[1]);
		lat_iters = (int)(lat_iters * scale) + 1;
		bw_iters = (int)(bw_iters * scale) + 1;
	}
	for (int r = 0; r < rounds; r++) {
		raw_bench(&l, &b);
		keep_best(&rl, &rb, l, b);
		driver_bench(1, &l, &b);
		keep_best(&dl, &db, l, b);
		driver_bench(16, &l, &b);
		keep_best(&dl2, &db2, l, b);
	}
	printf("best of %d rounds, loopback, two busy-polling threads\n",
	       rounds);
	printf("raw tcp:            %6.2f us one-way, %7.0f MB/s (16 MiB)\n",
	       rl, rb / 1e6);
	printf("driver, 1 frame:    %6.2f us one-way, %7.0f MB/s (%.0f%%)\n",
	       dl, db / 1e6, 100 * db / rb);
	printf("driver, 16 x 1 MiB: %6.2f us one-way, %7.0f MB/s (%.0f%%)\n",
	       dl2, db2 / 1e6, 100 * db2 / rb);
	printf("latency overhead:   %+.2f us\n", (dl < dl2 ? dl : dl2) - rl);
	return 0;
}
