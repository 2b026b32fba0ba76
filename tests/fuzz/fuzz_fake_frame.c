/*
 * The fake driver's receive path (drivers/fake/fake_frame.c: message
 * length, frame header checks, bodies scattered into engine memory) fed
 * seqpacket messages from a raw AF_UNIX socket, and its address blob
 * decoding (through connect). A fresh driver instance per input.
 *
 * Input: byte 0: bit 0 raw messages (else framed: valid headers built
 * around the fuzzed head and body), bit 1 the rest is an address blob to
 * connect to, bit 2 framed messages get one header byte flipped, bits 2-7
 * how many pieces the engine scatters each body into. Then records "len
 * u16 LE, bytes", one message each.
 */
#include "fuzz.h"
#include "drivers/driver.h"
#include "drivers/fake/fake_internal.h"
#include "mrail.h"
#include "util/clock.h"
#include "util/log.h"

#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
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
	FUZZ_CHECK(head_len <= FAKE_MAX_HEAD);
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

/*
 * Records "len u16 LE, bytes" are messages. Raw: the bytes as they are.
 * Framed: bytes "head_len u8, body_len u16 LE, rest" become a valid frame
 * (flip: with one header byte changed).
 */
static void send_messages(int fd, const uint8_t *p, size_t n, int framed,
			  int flip, struct mrail_drv *drv, struct ctx *c);

static int ops_progress(struct mrail_drv *drv)
{
	return mrail_driver_find("fake")->progress(drv);
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

static void send_messages(int fd, const uint8_t *p, size_t n, int framed,
			  int flip, struct mrail_drv *drv, struct ctx *c)
{
	while (n >= 2 && !c->failed) {
		size_t len = (size_t)p[0] | (size_t)p[1] << 8;
		p += 2;
		n -= 2;
		if (len > n)
			len = n;
		size_t m = len;
		if (framed && len >= 3) {
			size_t hl = p[0], bl = (size_t)p[1] | (size_t)p[2] << 8;
			size_t avail = len - 3;
			hl = hl < avail ? hl : avail;
			bl = bl < avail - hl ? bl : avail - hl;
			fake_put_le32(stream, FAKE_FRAME_MAGIC |
						      FAKE_FRAME_VERSION << 24);
			fake_put_le32(stream + 4, (uint32_t)hl);
			fake_put_le64(stream + 8, bl);
			memcpy(stream + FAKE_FRAME_HDR_LEN, p + 3, hl + bl);
			if (flip && hl)
				stream[p[3] % FAKE_FRAME_HDR_LEN] ^= p[2] | 1;
			m = FAKE_FRAME_HDR_LEN + hl + bl;
		} else {
			memcpy(stream, p, len);
		}
		if (send(fd, stream, m, MSG_NOSIGNAL) < 0)
			break;
		progress_until(drv, c, 3);
		p += len;
		n -= len;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct mrail_drv_ops *ops = mrail_driver_find("fake");
	struct ctx c = {.pieces = size ? data[0] >> 2 : 0};
	struct mrail_drv_open_args args = {&upcalls, &c, ""};
	struct mrail_drv *drv;
	uint8_t blob[64];
	size_t blob_len = sizeof blob;
	char name[64];

	if (size < 1)
		return 0;
	if (!stream && !(stream = malloc(BODY_CAP * 2)))
		abort();
	c.body = stream + BODY_CAP;
	FUZZ_CHECK(ops->open(&args, &drv) == MRAIL_OK);
	if (data[0] & 2) {
		/* The input as a peer's address blob (blob_decode). */
		struct mrail_drv_ep *ep = NULL;
		struct ctx other = {0};
		if (ops->connect(drv, NULL, data + 1, size - 1, &other, &ep) ==
		    MRAIL_OK)
			ops->ep_close(ep);
		ops->close(drv);
		return 0;
	}
	FUZZ_CHECK(ops->listen(drv, "fake0", blob, &blob_len, name,
			       sizeof name) >= 0);
	FUZZ_CHECK(blob_len > FAKE_BLOB_HDR_LEN &&
		   blob_len == FAKE_BLOB_HDR_LEN + (size_t)blob[6]);
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	memcpy(sun.sun_path + 1, blob + FAKE_BLOB_HDR_LEN, blob[6]);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	FUZZ_CHECK(fd >= 0 &&
		   connect(fd, (struct sockaddr *)&sun,
			   (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				       1 + blob[6])) == 0);
	progress_until(drv, &c, 50);
	FUZZ_CHECK(c.accepted);
	send_messages(fd, data + 1, size - 1, !(data[0] & 1), data[0] & 4, drv,
		      &c);
	/* The peer leaves: the driver must report it, and never hang. */
	close(fd);
	progress_until(drv, &c, 1000000000);
	FUZZ_CHECK(c.failed);
	ops->ep_close(c.ep);
	ops->close(drv);
	return 0;
}
