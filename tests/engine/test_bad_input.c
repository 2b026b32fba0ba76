/*
 * Hostile and broken input on data connections. Engine A (this process)
 * has a real peer B (a child process with the same job key), a peer C with
 * a different job key, and fake peers that this test impersonates by hand
 * over raw sockets. Every bad connection must be dropped with a log line
 * naming the cause; A must not crash, must fail only the requests of the
 * offending peer, and must keep working with B.
 */
#include "standalone.h"
#include "libmrail/wire.h"
#include "util/auth.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>

#define KEY_HEX "00112233445566778899aabbccddeeff"
#define OTHER_KEY_HEX "ffeeddccbbaa99887766554433221100"
#define TCP_MAGIC_V1 0x0154524dU /* 'M' 'R' 'T' 1 */

static uint8_t key[MRAIL_AUTH_KEY_BYTES];
static mrail_engine_t *A;
static uint64_t a_uuid, a_host;
static uint16_t a_port; /* loopback listener, network order */

/*
 * White-box: the address blob (docs/wire.md, version 3) of an engine with
 * MRAIL_RAILS=lo has no interface records, only its loopback rail.
 */
static void parse_a_address(void)
{
	uint8_t blob[MRAIL_ADDR_MAX];
	size_t len = sizeof blob;
	uint16_t nnetif, nloop;
	CHECK_RC(mrail_address(A, blob, &len));
	memcpy(&nnetif, blob + 4, 2);
	memcpy(&nloop, blob + 6, 2);
	CHECK_EQ(nnetif, 0);
	CHECK_EQ(nloop, 1);
	memcpy(&a_uuid, blob + 8, 8);
	memcpy(&a_host, blob + 16, 8);
	size_t dl = blob[24];
	const uint8_t *tcp = blob + 25 + dl + 2;
	CHECK(!memcmp(tcp, "TCP", 3) && tcp[4] == 4);
	memcpy(&a_port, tcp + 6, 2);
}

/* An address blob for a fake peer on A's host: one loopback endpoint on a
 * port nobody listens on (A accepts, it never connects to it). */
static size_t fake_blob(uint64_t uuid, uint8_t *blob)
{
	uint32_t mv = 0x41524d00u | 3;
	uint16_t nnetif = 0, nloop = 1, al = 16;
	uint8_t tcp[16] = {'T', 'C', 'P', 1, 4, 0, 0, 1, 0, 0, 0, 0,
			   127, 0, 0, 1};
	size_t n = 0;
	memcpy(blob + n, &mv, 4), n += 4;
	memcpy(blob + n, &nnetif, 2), n += 2;
	memcpy(blob + n, &nloop, 2), n += 2;
	memcpy(blob + n, &uuid, 8), n += 8;
	memcpy(blob + n, &a_host, 8), n += 8;
	blob[n++] = 3;
	memcpy(blob + n, "tcp", 3), n += 3;
	memcpy(blob + n, &al, 2), n += 2;
	memcpy(blob + n, tcp, 16), n += 16;
	blob[n++] = 1; /* host scope */
	blob[n++] = 3;
	memcpy(blob + n, "lo0", 3), n += 3;
	blob[n++] = 0; /* fabric "" */
	blob[n++] = 2;
	memcpy(blob + n, "lo", 2), n += 2;
	return n;
}

static int dial(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = a_port};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(fd >= 0);
	CHECK(connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
	return fd;
}

static void send_frame(int fd, const void *head, uint32_t hlen,
		       uint64_t body_len, const void *body)
{
	uint8_t h[16];
	uint32_t magic = TCP_MAGIC_V1;
	memcpy(h, &magic, 4);
	memcpy(h + 4, &hlen, 4);
	memcpy(h + 8, &body_len, 8);
	xwrite(fd, h, 16);
	if (hlen)
		xwrite(fd, head, hlen);
	if (body_len)
		xwrite(fd, body, body_len);
}

/* A frame written while A progresses (it is in this process: a blocking
 * write into a full socket would wait for ever). 0 once A closed fd. */
static int send_frame_progress(int fd, const void *head, uint32_t hlen)
{
	uint8_t h[16];
	uint32_t magic = TCP_MAGIC_V1;
	uint64_t none = 0;
	memcpy(h, &magic, 4);
	memcpy(h + 4, &hlen, 4);
	memcpy(h + 8, &none, 8);
	struct iovec v[2] = {{h, 16}, {(void *)head, hlen}};
	size_t left = 16 + (size_t)hlen;
	int i = 0;
	while (left) {
		ssize_t k = send(fd, v[i].iov_base, v[i].iov_len,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (k < 0 && (errno == EPIPE || errno == ECONNRESET))
			return 0;
		CHECK(k >= 0 || errno == EAGAIN || errno == EWOULDBLOCK);
		if (k <= 0) {
			mrail_progress(A);
			continue;
		}
		left -= (size_t)k;
		v[i].iov_base = (uint8_t *)v[i].iov_base + k;
		v[i].iov_len -= (size_t)k;
		if (v[i].iov_len == 0)
			i++;
	}
	return 1;
}

/* Progress A until it closes fd (EOF or reset), at most `sec` seconds. */
static int closed_by_a(int fd, double sec)
{
	char buf[4096];
	fcntl(fd, F_SETFL, O_NONBLOCK);
	for (int i = 0; i < (int)(sec * 1000); i++) {
		mrail_progress(A);
		ssize_t k = recv(fd, buf, sizeof buf, 0);
		if (k == 0 || (k < 0 && errno != EAGAIN))
			return 1;
		usleep(1000);
	}
	return 0;
}

static void hello_for(uint64_t src_uuid, const uint8_t *k,
		      struct mrail_wire_hello *h)
{
	memset(h, 0, sizeof *h);
	h->h.type = MRAIL_WIRE_HELLO;
	h->version = MRAIL_WIRE_VERSION;
	h->rail_index = 0;
	h->nrails = 1;
	h->src_uuid = src_uuid;
	h->dst_uuid = a_uuid;
	CHECK(mrail_auth_random(h->nonce, sizeof h->nonce) == 0);
	mrail_auth_mac(k, h, offsetof(struct mrail_wire_hello, mac), h->mac);
}

static void send_hello(int fd, const struct mrail_wire_hello *h)
{
	uint8_t pkt[8 + sizeof *h];
	mrail_wire_put_pkt_hdr(pkt);
	memcpy(pkt + 8, h, sizeof *h);
	send_frame(fd, pkt, sizeof pkt, 0, NULL);
}

/* Impersonate a peer properly: HELLO with the key, check A's ACK. */
static int authenticated_fake(uint64_t uuid, mrail_peer_t *peer)
{
	uint8_t blob[64], hdr[16], ack[8 + sizeof(struct mrail_wire_hello_ack)];
	struct mrail_wire_hello h;
	CHECK_RC(mrail_peer_add(A, blob, fake_blob(uuid, blob), peer));
	int fd = dial();
	hello_for(uuid, key, &h);
	send_hello(fd, &h);
	for (int i = 0; i < 2000; i++) { /* A answers from its progress */
		mrail_progress(A);
		if (recv(fd, hdr, 1, MSG_PEEK | MSG_DONTWAIT) == 1)
			break;
		usleep(1000);
	}
	xread(fd, hdr, 16);
	uint32_t hlen;
	memcpy(&hlen, hdr + 4, 4);
	CHECK_EQ(hlen, sizeof ack);
	xread(fd, ack, sizeof ack);
	struct mrail_wire_hello_ack a;
	memcpy(&a, ack + 8, sizeof a);
	CHECK_EQ(a.h.type, MRAIL_WIRE_HELLO_ACK);
	uint8_t msg[16 + 8 + 3], mac[16];
	memcpy(msg, h.nonce, 16);
	memcpy(msg + 16, &a.src_uuid, 8);
	memcpy(msg + 24, "ack", 3);
	mrail_auth_mac(key, msg, sizeof msg, mac);
	CHECK(mrail_auth_mac_equal(mac, a.mac)); /* A knows the key too */
	return fd;
}

static void expect_fail(mrail_request_t *r, int error)
{
	mrail_status_t st;
	CHECK_RC(mrail_wait(A, r, &st));
	CHECK_EQ(st.error, error);
}

static void attack(void)
{
	uint8_t junk[256];
	int fd;

	/* 1. Random bytes instead of a frame. */
	fd = dial();
	CHECK(mrail_auth_random(junk, sizeof junk) == 0);
	junk[0] = 'X'; /* never a valid magic */
	xwrite(fd, junk, sizeof junk);
	CHECK(closed_by_a(fd, 5));
	close(fd);

	/* 2. A well-formed HELLO with the wrong key. */
	struct mrail_wire_hello h;
	uint8_t wrong[MRAIL_AUTH_KEY_BYTES];
	CHECK(mrail_auth_key_parse(OTHER_KEY_HEX, wrong) == 0);
	fd = dial();
	hello_for(77, wrong, &h);
	send_hello(fd, &h);
	CHECK(closed_by_a(fd, 5));
	close(fd);

	/* 3. A frame header announcing a 4 GiB head. */
	fd = dial();
	uint8_t big[16];
	uint32_t magic = TCP_MAGIC_V1, hl = 0xFFFFFFF0u;
	uint64_t bl = 0;
	memcpy(big, &magic, 4);
	memcpy(big + 4, &hl, 4);
	memcpy(big + 8, &bl, 8);
	xwrite(fd, big, 16);
	CHECK(closed_by_a(fd, 5));
	close(fd);

	/* 4. Connects and says nothing (MRAIL_CONNECT_TIMEOUT=1). */
	fd = dial();
	CHECK(closed_by_a(fd, 10));
	close(fd);

	/* 5. An authenticated peer that then sends a malformed packet: its
	 * gate fails, its pending receive completes with a protocol error. */
	mrail_peer_t f;
	mrail_request_t *r;
	fd = authenticated_fake(UINT64_MAX, &f);
	CHECK_RC(mrail_irecv(A, f, junk, 8, 1, MRAIL_TAG_MASK_ALL, &r));
	uint8_t bad[32];
	memset(bad, 0xEE, sizeof bad);
	send_frame(fd, bad, sizeof bad, 0, NULL);
	CHECK(closed_by_a(fd, 5));
	expect_fail(r, MRAIL_ERR_PROTO);
	close(fd);

	/* 6. An authenticated peer sending a payload chunk nobody asked for. */
	fd = authenticated_fake(UINT64_MAX - 1, &f);
	CHECK_RC(mrail_irecv(A, f, junk, 8, 1, MRAIL_TAG_MASK_ALL, &r));
	uint8_t data[8 + sizeof(struct mrail_wire_data)];
	mrail_wire_put_pkt_hdr(data);
	mrail_wire_put_data(data + 8, 0x123456789ULL, 0, sizeof junk);
	send_frame(fd, data, sizeof data, sizeof junk, junk);
	CHECK(closed_by_a(fd, 5));
	expect_fail(r, MRAIL_ERR_PROTO);
	close(fd);

	/* 7. An authenticated peer with an eager record longer than its
	 * packet. */
	fd = authenticated_fake(UINT64_MAX - 2, &f);
	uint8_t pkt[8 + sizeof(struct mrail_wire_eager) + 8];
	mrail_wire_put_pkt_hdr(pkt);
	mrail_wire_put_eager(pkt + 8, 0, 1, 8);
	uint32_t lie = 100000;
	memcpy(pkt + 8 + 4, &lie, 4);
	send_frame(fd, pkt, sizeof pkt, 0, NULL);
	CHECK(closed_by_a(fd, 5));
	close(fd);

	/* 8. An authenticated peer sending eager data beyond the credit A
	 * granted it (4 MiB at most, docs/flow-control.md), nothing posted:
	 * dropped instead of buffered. */
	fd = authenticated_fake(UINT64_MAX - 3, &f);
	size_t elen = 1 << 20, plen = 8 + mrail_wire_eager_size(elen);
	uint8_t *ep = calloc(1, plen);
	CHECK(ep);
	for (uint64_t seq = 0; seq < 6; seq++) {
		mrail_wire_put_pkt_hdr(ep);
		/* Numbered like a real peer's packets (wire v5 pseq), so the
		 * credit check is what rejects them. */
		uint32_t pseq = (uint32_t)seq + 1;
		memcpy(ep + 4, &pseq, sizeof pseq);
		mrail_wire_put_eager(ep + 8, seq, 1, elen);
		if (!send_frame_progress(fd, ep, (uint32_t)plen))
			break;
	}
	CHECK(closed_by_a(fd, 5));
	close(fd);
	free(ep);

	/* 9-10. Remote data (IMM, wire v6) that belongs to no message: one
	 * followed by a CREDIT record, one that ends its packet. */
	for (int k = 0; k < 2; k++) {
		uint8_t ip[8 + sizeof(struct mrail_wire_imm) +
			   sizeof(struct mrail_wire_credit)];
		size_t il = 8;
		fd = authenticated_fake(UINT64_MAX - 4 - (uint64_t)k, &f);
		mrail_wire_put_pkt_hdr(ip);
		uint32_t pseq = 1;
		memcpy(ip + 4, &pseq, sizeof pseq);
		il += mrail_wire_put_imm(ip + il, 42);
		if (k == 0)
			il += mrail_wire_put_credit(ip + il, 4096);
		send_frame(fd, ip, (uint32_t)il, 0, NULL);
		CHECK(closed_by_a(fd, 5));
		close(fd);
	}
}

static int real_peer(mrail_engine_t *e, uint32_t rank, uint32_t n)
{
	(void)rank;
	(void)n;
	uint8_t buf[1 << 20];
	mrail_request_t *r;
	mrail_status_t st;
	/* Ping-pong with A (peer 0) once A is done being attacked. */
	CHECK_RC(mrail_irecv(e, 0, buf, sizeof buf, 5, MRAIL_TAG_MASK_ALL, &r));
	CHECK_RC(mrail_wait(e, r, &st));
	if (getenv("TEST_EXPECT_REJECTION")) { /* C: the wrong key */
		CHECK(st.error == MRAIL_ERR_PEER || st.error == MRAIL_ERR_AUTH);
		return 0;
	}
	CHECK_RC(st.error);
	CHECK_RC(mrail_isend(e, 0, buf, st.length, 6, &r));
	CHECK_RC(mrail_wait(e, r, &st));
	CHECK_RC(st.error);
	return 0;
}

/* A child engine (B with the right key, C with another) peered with A. */
static pid_t spawn_peer(const char *key_hex, mrail_peer_t *peer, int *fdp)
{
	uint8_t blob[MRAIL_ADDR_MAX];
	size_t len = sizeof blob;
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		setenv("MRAIL_JOB_KEY", key_hex, 1);
		if (strcmp(key_hex, KEY_HEX))
			setenv("TEST_EXPECT_REJECTION", "1", 1);
		/* Child: peer 0 is A, peer 1 itself. */
		job_child(sv[1], 1, 2, real_peer);
	}
	close(sv[1]);
	uint8_t child_blob[MRAIL_ADDR_MAX];
	uint32_t cl = recv_blob(sv[0], child_blob, sizeof child_blob);
	CHECK_RC(mrail_address(A, blob, &len));
	send_blob(sv[0], blob, (uint32_t)len);
	send_blob(sv[0], child_blob, cl);
	CHECK_RC(mrail_peer_add(A, child_blob, cl, peer));
	*fdp = sv[0];
	return pid;
}

static int log_has(const char *log, const char *what)
{
	if (strstr(log, what))
		return 1;
	fprintf(stderr, "expected a log line containing \"%s\"\n", what);
	return 0;
}

int main(void)
{
	char logpath[] = "/tmp/mrail-bad-input-XXXXXX";
	int logfd = mkstemp(logpath), saved = dup(2);
	struct mrail_config cfg;
	int fdb, fdc, status;
	mrail_peer_t b, c;

	CHECK(logfd >= 0 && saved >= 0);
	unlink(logpath);
	dup2(logfd, 2);
	setenv("MRAIL_JOB_KEY", KEY_HEX, 1);
	setenv("MRAIL_CONNECT_TIMEOUT", "1", 1);
	setenv("MRAIL_RAILS", "lo", 1); /* only the loopback endpoint */
	/* Raw TCP impersonation: the TCP rails only (no shm for this host). */
	setenv("MRAIL_DRIVERS", "tcp", 1);
	CHECK(mrail_auth_key_parse(KEY_HEX, key) == 0);
	CHECK_RC(mrail_config_init(&cfg));
	cfg.bootstrap = 0;
	CHECK_RC(mrail_engine_create(&cfg, &A));
	mrail_peer_t self;
	uint8_t blob[MRAIL_ADDR_MAX];
	size_t len = sizeof blob;
	CHECK_RC(mrail_address(A, blob, &len));
	CHECK_RC(mrail_peer_add(A, blob, len, &self));
	parse_a_address();

	pid_t pb = spawn_peer(KEY_HEX, &b, &fdb);
	pid_t pc = spawn_peer(OTHER_KEY_HEX, &c, &fdc);

	attack();

	/* C never authenticates: A's receive from it fails. */
	mrail_request_t *r;
	mrail_status_t st;
	uint8_t buf[1 << 20];
	CHECK_RC(mrail_irecv(A, c, buf, 8, 5, MRAIL_TAG_MASK_ALL, &r));
	CHECK_RC(mrail_wait(A, r, &st));
	CHECK(st.error == MRAIL_ERR_PEER || st.error == MRAIL_ERR_AUTH);
	kill(pc, SIGKILL);
	waitpid(pc, &status, 0);

	/* B, the honest peer, still works. */
	pattern_fill(buf, sizeof buf, 31);
	CHECK_RC(mrail_isend(A, b, buf, sizeof buf, 5, &r));
	CHECK_RC(mrail_wait(A, r, &st));
	CHECK_RC(st.error);
	memset(buf, 0, sizeof buf);
	CHECK_RC(mrail_irecv(A, b, buf, sizeof buf, 6, MRAIL_TAG_MASK_ALL, &r));
	CHECK_RC(mrail_wait(A, r, &st));
	CHECK_RC(st.error);
	CHECK_EQ(pattern_check(buf, sizeof buf, 31), sizeof buf);
	CHECK_RC(mrail_engine_destroy(A));
	CHECK(waitpid(pb, &status, 0) == pb);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(fdb);
	close(fdc);

	/* Every rejection was logged with its cause. */
	dup2(saved, 2);
	static char log[1 << 16];
	ssize_t n = pread(logfd, log, sizeof log - 1, 0);
	CHECK(n > 0);
	log[n] = '\0';
	fputs(log, stderr);
	int ok = log_has(log, "rejected connection from 127.0.0.1") &&
		 log_has(log, "bad job key") &&
		 log_has(log, "no valid HELLO in time") &&
		 log_has(log, "eager message beyond the credit granted") &&
		 log_has(log, "IMM record not followed by its message") &&
		 log_has(log, "IMM record at the end of a packet") &&
		 log_has(log, "connection dropped");
	CHECK(ok);
	printf("test_bad_input: all bad connections rejected and logged\n");
	return 0;
}
