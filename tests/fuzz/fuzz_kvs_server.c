/*
 * mrail-run's key-value service (bootstrap/kvs/kvs_server.c) fed byte
 * streams from two ranks over real loopback connections: what a stray
 * process or a broken rank can send it. A fresh service per input (job of
 * two ranks), so nothing stored leaks from one input into the next.
 *
 * Input: byte 0 says which connections authenticate properly first (bit 0:
 * the first as rank 0; bit 1: the second as rank 1, bit 2: as rank 0
 * instead) and whether they close before the end (bit 3); byte 1 where the
 * rest splits between the two streams.
 */
#include "fuzz.h"
#include "bootstrap/kvs/kvs_proto.h"
#include "bootstrap/kvs/kvs_server.h"
#include "mrail.h"
#include "util/log.h"

#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const uint8_t key[MRAIL_AUTH_KEY_BYTES] = {1, 2, 3, 4, 5, 6, 7, 8};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	mrail_log_level = MRAIL_LOG_TRACE;
	return 0;
}

static int dial(const struct mrail_kvs_server *s)
{
	const char *a = mrail_kvs_server_address(s);
	struct sockaddr_in sin = {.sin_family = AF_INET};
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)atoi(strrchr(a, ':') + 1));
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		abort();
	if (connect(fd, (struct sockaddr *)&sin, sizeof sin) < 0) {
		close(fd); /* ports exhausted by a busy host: skip the input */
		return -1;
	}
	return fd;
}

/* Dispatch until the service has nothing left to do; drain replies. */
static void settle(struct mrail_kvs_server *s, const int *fds, int n)
{
	uint8_t junk[65536];
	/* Loopback delivers within send(): nothing ready means done. */
	for (int idle = 0; idle < 2;) {
		struct pollfd p = {.fd = mrail_kvs_server_fd(s),
				   .events = POLLIN};
		if (poll(&p, 1, 0) > 0) {
			mrail_kvs_server_dispatch(s);
			idle = 0;
		} else {
			idle++;
		}
		for (int i = 0; i < n; i++)
			while (fds[i] >= 0 &&
			       recv(fds[i], junk, sizeof junk, MSG_DONTWAIT) > 0)
				;
	}
}

/* Read the greeting (the service sent it on accept) and answer it. */
static void authenticate(struct mrail_kvs_server *s, int fd, uint32_t rank)
{
	uint8_t hello[MRAIL_KVS_HEADER_BYTES + MRAIL_AUTH_NONCE_BYTES];
	size_t got = 0;
	while (got < sizeof hello) {
		mrail_kvs_server_dispatch(s);
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 10) <= 0)
			continue;
		ssize_t n = recv(fd, hello + got, sizeof hello - got, 0);
		if (n <= 0)
			abort();
		got += (size_t)n;
	}
	struct mrail_kvs_auth a = {.rank = rank};
	uint8_t frame[MRAIL_KVS_HEADER_BYTES + MRAIL_KVS_AUTH_BYTES];
	mrail_kvs_client_proof(key, hello + MRAIL_KVS_HEADER_BYTES, rank,
			       a.mac);
	mrail_kvs_header_encode(frame, MRAIL_KVS_AUTH, MRAIL_KVS_AUTH_BYTES);
	mrail_kvs_auth_encode(&a, frame + MRAIL_KVS_HEADER_BYTES);
	if (send(fd, frame, sizeof frame, MSG_NOSIGNAL) != sizeof frame)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mrail_kvs_server_config cfg = {
		.size = 2, .key = key, .auth_timeout = 30,
		.store_max = 1 << 20};
	struct mrail_kvs_server *s;
	if (size < 2)
		return 0;
	if (mrail_kvs_server_create(&cfg, &s) != MRAIL_OK)
		abort();
	int fds[2] = {dial(s), dial(s)};
	if (fds[0] < 0 || fds[1] < 0) {
		for (int i = 0; i < 2; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		mrail_kvs_server_destroy(s);
		return 0;
	}
	settle(s, fds, 0);
	if (data[0] & 1)
		authenticate(s, fds[0], 0);
	if (data[0] & 2)
		authenticate(s, fds[1], data[0] & 4 ? 0 : 1);
	size_t split = (size - 2) * data[1] / 255;
	const uint8_t *part[2] = {data + 2, data + 2 + split};
	size_t len[2] = {split, size - 2 - split};
	for (int i = 0; i < 2; i++) {
		settle(s, fds, 2);
		/* A peer the service dropped gets EPIPE: fine. */
		if (len[i] && send(fds[i], part[i], len[i], MSG_NOSIGNAL) < 0)
			continue;
	}
	settle(s, fds, 2);
	if (data[0] & 8) {
		shutdown(fds[0], SHUT_WR);
		settle(s, fds, 2);
		fuzz_close_abort(fds[0]);
		fds[0] = -1;
		settle(s, fds, 2);
	}
	mrail_kvs_server_job_ending(s);
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			shutdown(fds[i], SHUT_WR);
	settle(s, fds, 2);
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			fuzz_close_abort(fds[i]);
	settle(s, fds, 0);
	mrail_kvs_server_destroy(s);
	return 0;
}
