/*
 * The engine's receive path with live state: a real engine (tcp driver,
 * loopback, bootstrap off) gets a peer whose rails this harness opens
 * itself over raw sockets. It authenticates with a correct HELLO (the job
 * key is known here), then sends the fuzzed packets: records of every type
 * reach recv_on_packet, matching, rendezvous, SYNC and RMA record handling
 * and gate failure, against receives and sends the input posts first.
 *
 * Input: byte 0 flags: bit 0 post a 64 KiB receive (any tag), bit 1 a
 * 256 KiB send to the peer (its RTS comes to us: fuzzed RTRs can pull
 * data), bit 2 a synchronous 100-byte send, bit 3 raw packets (no packet
 * header added), bit 4 a bad HELLO MAC, bit 5 keep the connection open
 * when the engine is destroyed (at once). Then records "head_len u16 LE, body_len
 * u16 LE, bytes": one tcp frame each, sent on rail (head_len >> 15).
 */
#include "fuzz.h"
#include "drivers/tcp/tcp_internal.h"
#include "libmrail/wire.h"
#include "mrail.h"
#include "util/auth.h"
#include "util/log.h"

#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define KEY_HEX "000102030405060708090a0b0c0d0e0f"
#define MAX_RAILS 4

static uint8_t job_key[MRAIL_AUTH_KEY_BYTES];
static uint8_t *sendbuf, *recvbuf, *frame;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	setenv("MRAIL_BOOTSTRAP", "0", 1);
	setenv("MRAIL_DRIVERS", "tcp", 1);
	setenv("MRAIL_JOB_KEY", KEY_HEX, 1);
	setenv("MRAIL_RAILS", "lo", 1);
	setenv("MRAIL_FINALIZE_TIMEOUT", "0.05", 1);
	setenv("MRAIL_CONNECT_TIMEOUT", "5", 1);
	setenv("MRAIL_INBAND_SAMPLING", "0", 1);
	setenv("MRAIL_PROFILE_DIR", "/nonexistent-mrail-fuzz", 1);
	setenv("MRAIL_LOG_LEVEL", "trace", 1);
	mrail_auth_key_parse(KEY_HEX, job_key);
	sendbuf = calloc(1, 256 << 10);
	recvbuf = calloc(1, 64 << 10);
	frame = malloc(16 + 65536 + 65536 + 8);
	if (!sendbuf || !recvbuf || !frame)
		abort();
	return 0;
}

/* The loopback tcp listener in the engine's address blob. */
static int find_listener(const uint8_t *blob, size_t len, uint16_t *port)
{
	for (size_t i = 0; i + 16 <= len; i++)
		if (!memcmp(blob + i, "TCP\x01\x04\x00", 6) &&
		    !memcmp(blob + i + 12, "\x7f\x00\x00\x01", 4)) {
			memcpy(port, blob + i + 6, 2); /* network order */
			return 0;
		}
	return -1;
}

static void send_frame(int fd, const void *head, size_t hl, const void *body,
		       size_t bl)
{
	tcp_put_le32(frame, TCP_WIRE_MAGIC | TCP_WIRE_VERSION << 24);
	tcp_put_le32(frame + 4, (uint32_t)hl);
	tcp_put_le64(frame + 8, bl);
	memcpy(frame + 16, head, hl);
	if (bl)
		memcpy(frame + 16 + hl, body, bl);
	if (send(fd, frame, 16 + hl + bl, MSG_NOSIGNAL) < 0) {
		/* the engine dropped us: fine */
	}
}

static void drain(int *fds, unsigned n)
{
	uint8_t junk[65536];
	for (unsigned i = 0; i < n; i++)
		while (fds[i] >= 0 &&
		       recv(fds[i], junk, sizeof junk, MSG_DONTWAIT) > 0)
			;
}

static void progress(mrail_engine_t *e, int *fds, unsigned n, int rounds)
{
	for (int i = 0; i < rounds; i++) {
		mrail_progress(e);
		drain(fds, n);
	}
}

/*
 * Engine creation costs ~100 ms (interface discovery): one engine serves
 * ENGINE_INPUTS inputs, each with a peer of its own (a fresh uuid), then
 * is destroyed, so destroy paths are fuzzed too. A crash found this way
 * reproduces on its own input (run the harness on that one file).
 */
#define ENGINE_INPUTS 64
static mrail_engine_t *engine;
static unsigned engine_uses;
static uint64_t next_uuid;
static uint8_t blob[MRAIL_ADDR_MAX];
static size_t blen;
static uint16_t port;

static void engine_get(void)
{
	if (engine && engine_uses < ENGINE_INPUTS)
		return;
	if (engine)
		mrail_engine_destroy(engine);
	blen = sizeof blob;
	FUZZ_CHECK(mrail_engine_create(NULL, &engine) == MRAIL_OK);
	FUZZ_CHECK(mrail_address(engine, blob, &blen) == MRAIL_OK);
	FUZZ_CHECK(find_listener(blob, blen, &port) == 0);
	memcpy(&next_uuid, blob + 8, 8);
	engine_uses = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	mrail_engine_t *e;
	mrail_peer_t peer;
	int fds[MAX_RAILS];
	mrail_request_t *req[3] = {NULL, NULL, NULL};

	if (size < 1)
		return 0;
	uint8_t flags = data[0];
	engine_get();
	e = engine;
	uint64_t uuid;
	memcpy(&uuid, blob + 8, 8);
	/* The peer: the engine's own blob under a larger uuid, so the
	 * engine waits for the peer's connections instead of dialling. */
	uint64_t peer_uuid = ++next_uuid;
	if (peer_uuid <= uuid) { /* wrapped: 2^-64 per engine */
		engine_uses = ENGINE_INPUTS;
		return 0;
	}
	engine_uses++;
	uint8_t pblob[MRAIL_ADDR_MAX];
	memcpy(pblob, blob, blen);
	memcpy(pblob + 8, &peer_uuid, 8);
	FUZZ_CHECK(mrail_peer_add(e, pblob, blen, &peer) == MRAIL_OK);
	int nrails = mrail_rail_count(e, peer);
	FUZZ_CHECK(nrails >= 1);
	if (nrails > MAX_RAILS)
		nrails = MAX_RAILS;

	for (int r = 0; r < nrails; r++) {
		struct sockaddr_in sin = {.sin_family = AF_INET,
					  .sin_port = port};
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		fds[r] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		FUZZ_CHECK(fds[r] >= 0);
		/* A failure here is the host's (ports exhausted): the rail
		 * then just never comes up. */
		if (connect(fds[r], (struct sockaddr *)&sin, sizeof sin) < 0)
			continue;
		uint8_t pkt[8 + sizeof(struct mrail_wire_hello)];
		struct mrail_wire_hello h;
		memset(&h, 0, sizeof h);
		h.h.type = MRAIL_WIRE_HELLO;
		h.version = MRAIL_WIRE_VERSION;
		h.rail_index = (uint16_t)r;
		h.nrails = (uint16_t)mrail_rail_count(e, peer);
		h.src_uuid = peer_uuid;
		h.dst_uuid = uuid;
		memset(h.nonce, r + 1, sizeof h.nonce);
		mrail_auth_mac(job_key, &h, offsetof(struct mrail_wire_hello, mac),
			       h.mac);
		if (flags & 16)
			h.mac[0] ^= 1;
		mrail_wire_put_pkt_hdr(pkt);
		memcpy(pkt + 8, &h, sizeof h);
		send_frame(fds[r], pkt, sizeof pkt, NULL, 0);
	}
	progress(e, fds, (unsigned)nrails, 50);

	if (flags & 1)
		mrail_irecv(e, MRAIL_ANY_PEER, recvbuf, 64 << 10, 0, 0, &req[0]);
	if (flags & 2)
		mrail_isend(e, peer, sendbuf, 256 << 10, 5, &req[1]);
	if (flags & 4)
		mrail_issend(e, peer, sendbuf, 100, 6, &req[2]);
	progress(e, fds, (unsigned)nrails, 5);

	const uint8_t *p = data + 1;
	size_t n = size - 1;
	uint8_t head[8 + 65536];
	uint32_t pseq[8] = {0}; /* wire v5: numbered packets per rail */
	while (n >= 4) {
		size_t hl = (size_t)p[0] | (size_t)(p[1] & 0x7f) << 8;
		int rail = (p[1] >> 7) % nrails;
		size_t bl = (size_t)p[2] | (size_t)p[3] << 8;
		p += 4;
		n -= 4;
		hl = hl < n ? hl : n;
		bl = bl < n - hl ? bl : n - hl;
		size_t off = 0;
		if (!(flags & 8)) {
			off = mrail_wire_put_pkt_hdr(head);
			if (bl == 0) /* DATA frame heads are not numbered */
				mrail_wire_set_pkt_pseq(head, ++pseq[rail % 8]);
		}
		memcpy(head + off, p, hl);
		send_frame(fds[rail], head, off + hl, p + hl, bl);
		p += hl + bl;
		n -= hl + bl;
		progress(e, fds, (unsigned)nrails, 3);
	}
	progress(e, fds, (unsigned)nrails, 10);

	if (!(flags & 32)) {
		for (int r = 0; r < nrails; r++) {
			shutdown(fds[r], SHUT_WR);
			progress(e, fds, (unsigned)nrails, 5);
			fuzz_close_abort(fds[r]);
			fds[r] = -1;
		}
		progress(e, fds, (unsigned)nrails, 20);
	}
	for (int i = 0; i < 3; i++) {
		mrail_status_t st;
		if (!req[i])
			continue;
		if (mrail_test(e, req[i], &st) == MRAIL_ERR_AGAIN) {
			mrail_cancel(e, req[i]);
			for (int k = 0; k < 1000 &&
			     mrail_test(e, req[i], &st) == MRAIL_ERR_AGAIN; k++)
				progress(e, fds, (unsigned)nrails, 1);
		}
	}
	if (flags & 32) /* destroyed with the connection still open */
		engine_uses = ENGINE_INPUTS, engine_get();
	for (int r = 0; r < nrails; r++)
		if (fds[r] >= 0)
			fuzz_close_abort(fds[r]);
	progress(engine, fds, 0, 5);
	return 0;
}
