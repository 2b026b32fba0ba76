/*
 * Standalone jobs for tests that must control processes themselves (kill
 * one, impersonate one): fork N children, each creates an engine without a
 * launcher, the parent relays the address blobs, each child adds every
 * peer in rank order (so peer id == rank) and runs its part.
 */
#ifndef MRAIL_TEST_STANDALONE_H
#define MRAIL_TEST_STANDALONE_H

#include "harness.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int (*job_fn)(mrail_engine_t *e, uint32_t rank, uint32_t n);

static inline void xwrite(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t k = write(fd, p, len);
		CHECK(k > 0);
		p += k;
		len -= (size_t)k;
	}
}

static inline void xread(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t k = read(fd, p, len);
		CHECK(k > 0);
		p += k;
		len -= (size_t)k;
	}
}

static inline void send_blob(int fd, const void *blob, uint32_t len)
{
	xwrite(fd, &len, 4);
	xwrite(fd, blob, len);
}

static inline uint32_t recv_blob(int fd, void *blob, uint32_t cap)
{
	uint32_t len;
	xread(fd, &len, 4);
	CHECK(len <= cap);
	xread(fd, blob, len);
	return len;
}

/* Zero-byte messages to and from every peer of a standalone job. */
static inline void job_barrier(mrail_engine_t *e, uint32_t rank, uint32_t n,
			       const int *alive)
{
	mrail_request_t *rq[128] = {0};
	CHECK(n <= 64);
	for (uint32_t p = 0; p < n; p++) {
		if (p == rank || (alive && !alive[p]))
			continue;
		CHECK_RC(mrail_irecv(e, p, NULL, 0, TAG_BARRIER,
				     MRAIL_TAG_MASK_ALL, &rq[2 * p]));
		CHECK_RC(mrail_isend(e, p, NULL, 0, TAG_BARRIER, &rq[2 * p + 1]));
	}
	CHECK_RC(mrail_wait_all(e, 2 * (size_t)n, rq, NULL));
}

static inline void job_child(int fd, uint32_t rank, uint32_t n, job_fn fn)
{
	uint8_t blob[MRAIL_ADDR_MAX];
	size_t len = sizeof blob;
	mrail_engine_t *e;
	struct mrail_config cfg;

	alarm(120); /* a hung test must not hang the suite */
	CHECK_RC(mrail_config_init(&cfg));
	cfg.bootstrap = 0;
	CHECK_RC(mrail_engine_create(&cfg, &e));
	CHECK_RC(mrail_address(e, blob, &len));
	send_blob(fd, blob, (uint32_t)len);
	for (uint32_t p = 0; p < n; p++) {
		mrail_peer_t id;
		uint32_t l = recv_blob(fd, blob, sizeof blob);
		CHECK_RC(mrail_peer_add(e, blob, l, &id));
		CHECK_EQ(id, p);
	}
	int rc = fn(e, rank, n);
	CHECK_RC(mrail_engine_destroy(e));
	fflush(stdout);
	_exit(rc);
}

/* Forks n children, each running child(fd, rank, arg) (which must not
 * return), relays their address blobs (each sends one, then receives
 * every child's in rank order) and fills status[] with each child's wait
 * status. For tests whose children set up their engines themselves. */
typedef void (*job_child_fn)(int fd, uint32_t rank, void *arg);

static inline void job_spawn(uint32_t n, job_child_fn child, void *arg,
			     int *status)
{
	int fds[64];
	pid_t pids[64];
	uint8_t blobs[64][MRAIL_ADDR_MAX];
	uint32_t lens[64];

	CHECK(n <= 64);
	for (uint32_t i = 0; i < n; i++) {
		int sv[2];
		CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
		pids[i] = fork();
		CHECK(pids[i] >= 0);
		if (pids[i] == 0) {
			close(sv[0]);
			child(sv[1], i, arg);
			_exit(1);
		}
		close(sv[1]);
		fds[i] = sv[0];
	}
	for (uint32_t i = 0; i < n; i++)
		lens[i] = recv_blob(fds[i], blobs[i], MRAIL_ADDR_MAX);
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t p = 0; p < n; p++)
			send_blob(fds[i], blobs[p], lens[p]);
	for (uint32_t i = 0; i < n; i++) {
		CHECK(waitpid(pids[i], &status[i], 0) == pids[i]);
		close(fds[i]);
	}
}

struct job_plain {
	uint32_t n;
	job_fn fn;
	void (*setup)(int rank);
};

static inline void job_plain_child(int fd, uint32_t rank, void *arg)
{
	const struct job_plain *j = arg;
	if (j->setup)
		j->setup((int)rank);
	job_child(fd, rank, j->n, j->fn);
}

/* Runs the job; fills status[] with each child's wait status. `setup`,
 * if given, runs first in each child (e.g. to enter a network namespace). */
static inline void job_run_ns(uint32_t n, job_fn fn, int *status,
			      void (*setup)(int rank))
{
	struct job_plain j = {n, fn, setup};
	job_spawn(n, job_plain_child, &j, status);
}

static inline void job_run(uint32_t n, job_fn fn, int *status)
{
	job_run_ns(n, fn, status, NULL);
}

#endif
