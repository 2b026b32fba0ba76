/*
 * The tcp driver's receive path (drivers/tcp/tcp_recv.c: frame header
 * checks, the receive buffer, bodies scattered into engine memory) fed a
 * byte stream from a raw socket, as any process reaching a rail's
 * listener can. A fresh driver instance per input.
 *
 * Input: byte 0: bit 0 raw (the rest is the stream as is) or framed (the
 * rest is records "head_len u8, body_len u16 LE, bytes" made into valid
 * frames, so the fuzzer reaches bodies and buffer growth; bit 1 flips one
 * header byte of each framed record to mix in bad frames); bits 2-7: how
 * many pieces the engine scatters each body into and where writes split.
 */
#include "fuzz.h"
#include "drivers/driver.h"
#include "drivers/tcp/tcp_internal.h"
#include "mrail.h"
#include "util/clock.h"
#include "util/log.h"

#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define BODY_CAP (1u << 20)

struct ctx {
	struct mrail_drv_ep *ep;
	int accepted, failed, in_body;
	unsigned pieces;
	uint64_t frames, bodies;
	uint8_t *body;
};

static void *up_accepted(void *engine_ctx, struct mrail_drv_ep *ep)
{
	struct ctx *c = engine_ctx;
	FUZZ_CHECK(!c->accepted);
	c->accepted = 1;
	c->ep = ep;
	return c;
}

static void up_connected(void *ep_ctx, int status)
{
	(void)ep_ctx;
	(void)status;
	FUZZ_CHECK(!"connected upcall on an accepted endpoint");
}

static void up_recv_frame(void *ep_ctx, const void *head, size_t head_len)
{
	struct ctx *c = ep_ctx;
	FUZZ_CHECK(!c->failed && !c->in_body);
	FUZZ_CHECK(head_len <= TCP_MAX_HEAD);
	fuzz_touch(head, head_len);
	c->frames++;
}

static void *up_recv_body(void *ep_ctx, const void *head, size_t head_len,
			  uint64_t body_len, struct iovec *dst, int *dst_cnt)
{
	struct ctx *c = ep_ctx;
	FUZZ_CHECK(!c->failed && !c->in_body);
	fuzz_touch(head, head_len);
	if (body_len > BODY_CAP)
		return NULL; /* the engine refuses what it did not ask for */
	int n = (int)(c->pieces % 4) + 1;
	if (n > *dst_cnt)
		n = *dst_cnt;
	if ((uint64_t)n > body_len)
		n = body_len ? (int)body_len : 1;
	/* n pieces of body_len bytes, the first ones short. */
	size_t off = 0;
	for (int i = 0; i < n; i++) {
		size_t len = i == n - 1 ? body_len - off : (body_len - off) / 3;
		dst[i] = (struct iovec){c->body + off, len};
		off += len;
	}
	*dst_cnt = n;
	c->in_body = 1;
	return c;
}

static void up_recv_body_done(void *ep_ctx, void *cookie)
{
	struct ctx *c = ep_ctx;
	FUZZ_CHECK(cookie == c && c->in_body && !c->failed);
	c->in_body = 0;
	c->bodies++;
}

static void up_send_done(void *ep_ctx, void *send_ctx, int status)
{
	(void)ep_ctx;
	(void)send_ctx;
	(void)status;
}

static void up_ep_error(void *ep_ctx, int status, const char *why)
{
	struct ctx *c = ep_ctx;
	FUZZ_CHECK(!c->failed && status < 0 && why && *why);
	c->failed = 1;
	c->in_body = 0;
}

static const struct mrail_drv_upcalls upcalls = {
	.accepted = up_accepted,
	.connected = up_connected,
	.recv_frame = up_recv_frame,
	.recv_body = up_recv_body,
	.recv_body_done = up_recv_body_done,
	.send_done = up_send_done,
	.ep_error = up_ep_error,
};

static uint8_t *stream;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	mrail_log_level = MRAIL_LOG_TRACE;
	return 0;
}

/* Turn framed records into a stream of valid (or one-byte-broken) frames. */
static size_t build(const uint8_t *p, size_t n, int flip, uint8_t *out,
		    size_t cap)
{
	size_t o = 0;
	while (n >= 3) {
		size_t hl = p[0], bl = (size_t)p[1] | (size_t)p[2] << 8;
		p += 3;
		n -= 3;
		if (hl + bl > n)
			bl = n > hl ? n - hl : 0, hl = hl < n ? hl : n;
		if (o + 16 + hl + bl > cap)
			break;
		tcp_put_le32(out + o, TCP_WIRE_MAGIC | TCP_WIRE_VERSION << 24);
		tcp_put_le32(out + o + 4, (uint32_t)hl);
		tcp_put_le64(out + o + 8, bl);
		if (flip && hl)
			out[o + p[0] % 16] ^= p[hl - 1] | 1;
		memcpy(out + o + 16, p, hl + bl);
		o += 16 + hl + bl;
		p += hl + bl;
		n -= hl + bl;
	}
	return o;
}

static int ops_progress(struct mrail_drv *drv)
{
	return mrail_driver_find("tcp")->progress(drv);
}

static void progress_until(struct mrail_drv *drv, struct ctx *c, int idle)
{
	double t0 = mrail_now();
	int quiet = 0;
	while (quiet < idle && !c->failed) {
		quiet = ops_progress(drv) ? 0 : quiet + 1;
		FUZZ_CHECK(mrail_now() - t0 < 10); /* a hang is a bug */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct mrail_drv_ops *ops = mrail_driver_find("tcp");
	struct ctx c = {.pieces = size ? data[0] >> 2 : 0};
	struct mrail_drv_open_args args = {&upcalls, &c, ""};
	struct mrail_drv *drv;
	uint8_t blob[64];
	size_t blob_len = sizeof blob;
	char name[64];
	struct sockaddr_storage ss;
	socklen_t sl;

	if (size < 1)
		return 0;
	if (!stream && !(stream = malloc(BODY_CAP * 2)))
		abort();
	c.body = stream + BODY_CAP;
	FUZZ_CHECK(ops->open(&args, &drv) == MRAIL_OK);
	FUZZ_CHECK(ops->listen(drv, "127.0.0.1", blob, &blob_len, name,
			       sizeof name) >= 0);
	FUZZ_CHECK(tcp_blob_decode(blob, blob_len, &ss, &sl) == MRAIL_OK);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	FUZZ_CHECK(fd >= 0);
	if (connect(fd, (struct sockaddr *)&ss, sl) < 0) {
		/* The host, not the driver (ports exhausted by a busy host). */
		close(fd);
		ops->close(drv);
		return 0;
	}
	progress_until(drv, &c, 50);
	FUZZ_CHECK(c.accepted);

	const uint8_t *p = data + 1;
	size_t n = size - 1;
	if (!(data[0] & 1)) {
		n = build(p, n, data[0] & 2, stream, BODY_CAP);
		p = stream;
	}
	/* Two writes split where the input says, progress in between. */
	size_t cut = n ? (n * (data[0] >> 2)) / 63 : 0;
	if (cut && send(fd, p, cut, MSG_NOSIGNAL) > 0)
		progress_until(drv, &c, 3);
	if (n > cut && !c.failed && send(fd, p + cut, n - cut, MSG_NOSIGNAL) > 0)
		progress_until(drv, &c, 3);
	/* The peer leaves: the driver must report it, and never hang. */
	shutdown(fd, SHUT_WR);
	progress_until(drv, &c, 1000000000);
	FUZZ_CHECK(c.failed);
	fuzz_close_abort(fd);
	ops->ep_close(c.ep);
	ops->close(drv);
	return 0;
}
