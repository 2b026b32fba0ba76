/*
 * Connections a stray or hostile process could make to the KVS port. Each
 * must be refused (the service closes it) while the job goes on; the test
 * driver checks mrail-run's log names the peer and the reason.
 */
#include <errno.h>
#include <netdb.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "bootstrap/kvs/kvs_proto.h"
#include "tests/launcher/kvs_rank.h"
#include "util/auth.h"
#include "util/clock.h"

static int raw_connect(void)
{
	const char *addr = getenv("MRAIL_KVS_ADDR");
	char host[128], port[8];
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;

	CHECK(addr && mrail_kvs_addr_split(addr, host, sizeof host, port,
					   sizeof port) == 0, "addr");
	CHECK(getaddrinfo(host, port, &hints, &res) == 0, "resolve %s", addr);
	int fd = socket(res->ai_family, SOCK_STREAM, 0);
	CHECK(fd >= 0, "socket");
	CHECK(connect(fd, res->ai_addr, res->ai_addrlen) == 0, "connect: %s",
	      strerror(errno));
	freeaddrinfo(res);
	struct timeval tv = {.tv_sec = 5};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	return fd;
}

static void read_exact(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = read(fd, p, len);
		CHECK(n > 0, "read: %s", n == 0 ? "EOF" : strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

/* Read one frame; returns its type, payload (NUL-terminated) in buf. */
static uint8_t read_frame(int fd, char *buf, size_t cap)
{
	uint8_t raw[MRAIL_KVS_HEADER_BYTES];
	struct mrail_kvs_header h;
	const char *why;

	read_exact(fd, raw, sizeof raw);
	CHECK(mrail_kvs_header_decode(raw, &h, &why) == 0, "%s", why);
	CHECK(h.length < cap, "frame too long");
	read_exact(fd, buf, h.length);
	buf[h.length] = '\0';
	return h.type;
}

/* The service must close the connection (any REJECT before is fine). */
static void expect_closed(int fd, const char *what)
{
	char buf[512];
	double t0 = mrail_now();
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			break;
		CHECK(n > 0, "%s: not closed by the service (%s)", what,
		      strerror(errno));
		CHECK(mrail_now() - t0 < 5, "%s: not closed", what);
	}
	close(fd);
}

/* Complete HELLO, send AUTH for `rank` proven with `key`; expect REJECT. */
static void expect_auth_rejected(uint32_t rank, const uint8_t *key,
				 const char *reason)
{
	char buf[512];
	int fd = raw_connect();
	CHECK(read_frame(fd, buf, sizeof buf) == MRAIL_KVS_HELLO, "HELLO");
	struct mrail_kvs_auth auth = {.rank = rank};
	mrail_kvs_client_proof(key, (const uint8_t *)buf, rank, auth.mac);
	uint8_t frame[MRAIL_KVS_HEADER_BYTES + MRAIL_KVS_AUTH_BYTES];
	mrail_kvs_header_encode(frame, MRAIL_KVS_AUTH, MRAIL_KVS_AUTH_BYTES);
	mrail_kvs_auth_encode(&auth, frame + MRAIL_KVS_HEADER_BYTES);
	CHECK(write(fd, frame, sizeof frame) == (ssize_t)sizeof frame, "write");
	uint8_t type = read_frame(fd, buf, sizeof buf);
	CHECK(type == MRAIL_KVS_REJECT, "expected REJECT, got %s",
	      mrail_kvs_type_name(type));
	CHECK(strstr(buf, reason), "REJECT says '%s', expected '%s'", buf,
	      reason);
	expect_closed(fd, reason);
}

void stray_connections(void)
{
	uint8_t key[MRAIL_AUTH_KEY_BYTES], wrong[MRAIL_AUTH_KEY_BYTES] = {0};
	CHECK(mrail_auth_key_parse(getenv("MRAIL_JOB_KEY"), key) == 0, "key");

	/* Held open, silent, while everything else happens. */
	int silent = raw_connect();

	int fd = raw_connect();
	static const char http[] = "GET / HTTP/1.0\r\n\r\n";
	CHECK(write(fd, http, sizeof http - 1) > 0, "write");
	expect_closed(fd, "garbage");

	fd = raw_connect();
	uint8_t huge[MRAIL_KVS_HEADER_BYTES];
	mrail_kvs_header_encode(huge, MRAIL_KVS_PUT, 0xffffffffu);
	CHECK(write(fd, huge, sizeof huge) > 0, "write");
	expect_closed(fd, "huge length");

	fd = raw_connect();
	uint8_t get[MRAIL_KVS_HEADER_BYTES + 1];
	mrail_kvs_header_encode(get, MRAIL_KVS_GET, 1);
	get[MRAIL_KVS_HEADER_BYTES] = 'k';
	CHECK(write(fd, get, sizeof get) > 0, "write");
	expect_closed(fd, "request before authentication");

	expect_auth_rejected(0, wrong, "bad job key");
	uint32_t size = (uint32_t)atoi(getenv("MRAIL_SIZE"));
	expect_auth_rejected(size + 5, key, "out of range");

	/* mrail-run is started with --auth-timeout 1 by the test. */
	expect_closed(silent, "silent connection");
	printf("stray connections refused\n");
}

void stray_duplicate_rank(unsigned rank)
{
	uint8_t key[MRAIL_AUTH_KEY_BYTES];
	CHECK(mrail_auth_key_parse(getenv("MRAIL_JOB_KEY"), key) == 0, "key");
	expect_auth_rejected(rank, key, "already connected");
}
