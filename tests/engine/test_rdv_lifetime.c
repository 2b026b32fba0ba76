/*
 * Request lifetime when a peer goes away during a 256 MiB rendezvous over
 * two rails: the peer destroys its engine, or is SIGKILLed, while it
 * sends to or receives from the survivor (rank 0). The survivor's request
 * must complete with an honest status, after which it frees (receive) or
 * unmaps (send) its buffer at once: no driver operation may touch it
 * afterwards (ASan, or EFAULT in the driver, would tell). Then it keeps
 * working with rank 2. Each process checks its own leaks at exit (exit(),
 * not _exit(), so LeakSanitizer runs).
 *
 *   test_rdv_lifetime destroy-recv | destroy-send | kill-recv | kill-send
 * ("recv": the peer that goes away is the receiver).
 */
#include "standalone.h"

#include <string.h>
#include <sys/mman.h>
#include <time.h>

enum { BIG = 256 << 20, MID = 16 << 20, TAG_BIG = 1, TAG_PING = 2 };

static int victim_sends, victim_killed;

static void finish(mrail_engine_t *e, int rc)
{
	CHECK_RC(mrail_engine_destroy(e));
	fflush(stdout);
	fflush(stderr);
	exit(rc);
}

static int transfer_started(mrail_engine_t *e)
{
	int n = mrail_rail_count(e, 0);
	CHECK(n == 2);
	for (int i = 0; i < n; i++) {
		struct mrail_rail_stats st;
		CHECK_RC(mrail_rail_stats(e, 0, i, &st));
		if (victim_sends ? st.tx_chunks > 0 : st.rx_chunks > 0)
			return 1;
	}
	return 0;
}

/* The handle is dropped on return: only the engine can free the request,
 * and LeakSanitizer (at exit) checks that destroy does. */
__attribute__((noinline)) static void post_and_forget(mrail_engine_t *e,
						      uint8_t *buf)
{
	mrail_request_t *r;
	if (victim_sends) {
		pattern_fill(buf, BIG, 7);
		CHECK_RC(mrail_isend(e, 0, buf, BIG, TAG_BIG, &r));
	} else {
		CHECK_RC(mrail_irecv(e, 0, buf, BIG, TAG_BIG, MRAIL_TAG_MASK_ALL,
				     &r));
	}
}

/* The peer that goes away once its transfer is under way. */
static void victim(mrail_engine_t *e)
{
	uint8_t *buf = malloc(BIG);
	CHECK(buf);
	post_and_forget(e, buf);
	/* Until the payload moves (a chunk is posted or arriving on some
	 * rail), then a little more: mid-transfer, not before or after. */
	while (!transfer_started(e))
		mrail_progress(e);
	for (int i = 0; i < 5; i++)
		mrail_progress(e);
	if (victim_killed)
		raise(SIGKILL);
	/* Destroy with the request in flight: the engine frees it. */
	CHECK_RC(mrail_engine_destroy(e));
	free(buf);
	fflush(stdout);
	exit(0);
}

/* Every rail to peer reports "closed" (bounded: 30 s). */
static void wait_peer_closed(mrail_engine_t *e, mrail_peer_t peer)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int open = 0;
		for (int i = 0; i < mrail_rail_count(e, peer); i++) {
			struct mrail_rail_info ri;
			CHECK_RC(mrail_rail_info(e, peer, i, &ri));
			open += strcmp(ri.state, "closed") != 0;
		}
		if (!open)
			return;
		mrail_progress(e);
		clock_gettime(CLOCK_MONOTONIC, &t);
		CHECK(t.tv_sec - t0.tv_sec < 30);
	}
}

static void survivor(mrail_engine_t *e)
{
	mrail_request_t *r[2];
	mrail_status_t st[2];
	int expect = victim_killed ? MRAIL_ERR_PEER : MRAIL_ERR_PEER_CLOSED;
	uint8_t *big = mmap(NULL, BIG, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(big != MAP_FAILED);
	if (victim_sends) {
		CHECK_RC(mrail_irecv(e, 1, big, BIG, TAG_BIG, MRAIL_TAG_MASK_ALL,
				     &r[0]));
	} else {
		memset(big, 1, BIG);
		CHECK_RC(mrail_isend(e, 1, big, BIG, TAG_BIG, &r[0]));
	}
	CHECK_RC(mrail_wait(e, r[0], &st[0]));
	printf("survivor: %s %s, length %zu\n", victim_sends ? "recv" : "send",
	       mrail_strerror(st[0].error), st[0].length);
	/* A sender that destroyed its engine flushed what the receiver asked
	 * for first: the message may well be complete. */
	CHECK(st[0].error == expect || st[0].error == MRAIL_OK);
	CHECK(st[0].length <= BIG);
	if (st[0].error == MRAIL_OK) {
		CHECK_EQ(st[0].length, BIG);
		if (victim_sends)
			CHECK_EQ(pattern_check(big, BIG, 7), BIG);
	} else {
		CHECK(st[0].length < BIG);
	}
	/* The buffer is ours again: overwrite it, then give it back. */
	memset(big, 0xee, BIG);
	CHECK(munmap(big, BIG) == 0);
	/* A message that arrived whole may have done so before the peer's
	 * closing notice (BYE follows the sender's completion, which waits
	 * for our RDV_DONE): wait for it, then new sends fail at once. */
	if (st[0].error == MRAIL_OK && !victim_killed)
		wait_peer_closed(e, 1);
	CHECK_EQ(mrail_isend(e, 1, NULL, 0, TAG_PING, &r[0]), expect);

	uint8_t *buf = malloc(2 * MID);
	CHECK(buf);
	pattern_fill(buf, MID, 0);
	CHECK_RC(mrail_irecv(e, 2, buf + MID, MID, TAG_PING, MRAIL_TAG_MASK_ALL,
			     &r[0]));
	CHECK_RC(mrail_isend(e, 2, buf, MID, TAG_PING, &r[1]));
	CHECK_RC(mrail_wait_all(e, 2, r, st));
	CHECK_EQ(pattern_check(buf + MID, MID, 2), MID);
	free(buf);
}

static void bystander(mrail_engine_t *e)
{
	mrail_request_t *r[2];
	mrail_status_t st[2];
	uint8_t *buf = malloc(2 * MID);
	CHECK(buf);
	pattern_fill(buf, MID, 2);
	CHECK_RC(mrail_irecv(e, 0, buf + MID, MID, TAG_PING, MRAIL_TAG_MASK_ALL,
			     &r[0]));
	CHECK_RC(mrail_isend(e, 0, buf, MID, TAG_PING, &r[1]));
	CHECK_RC(mrail_wait_all(e, 2, r, st));
	CHECK_EQ(pattern_check(buf + MID, MID, 0), MID);
	free(buf);
}

static int job(mrail_engine_t *e, uint32_t rank, uint32_t n)
{
	static const int alive_after[3] = {1, 0, 1};
	job_barrier(e, rank, n, NULL); /* everyone connected */
	if (rank == 1)
		victim(e);
	if (rank == 0)
		survivor(e);
	else
		bystander(e);
	job_barrier(e, rank, n, alive_after);
	finish(e, 0);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *names[] = {"destroy-recv", "destroy-send",
				      "kill-recv", "kill-send"};
	int which = -1, status[3];
	for (int i = 0; i < 4 && argc == 2; i++)
		if (!strcmp(argv[1], names[i]))
			which = i;
	if (which < 0) {
		fprintf(stderr, "usage: test_rdv_lifetime destroy-recv|"
			"destroy-send|kill-recv|kill-send\n");
		return 2;
	}
	victim_sends = which & 1;
	victim_killed = which >= 2;
	setenv("MRAIL_TCP_LOOPBACK_RAILS", "2", 0);
	fflush(stdout);
	job_run(3, job, status);
	if (victim_killed)
		CHECK(WIFSIGNALED(status[1]) && WTERMSIG(status[1]) == SIGKILL);
	for (int i = 0; i < 3; i++) {
		if (i == 1 && victim_killed)
			continue;
		if (!WIFEXITED(status[i]) || WEXITSTATUS(status[i]) != 0) {
			fprintf(stderr, "rank %d failed (status %#x)\n", i,
				status[i]);
			return 1;
		}
	}
	printf("test_rdv_lifetime %s: survivor completed, released its buffer "
	       "and kept working\n", names[which]);
	return 0;
}
