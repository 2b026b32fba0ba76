/*
 * Sharing the copy between processes of one host (docs/driver-shm.md):
 * under the default settings two processes talk over shm, whose get and
 * put are copies by the calling CPU. A rendezvous of a send flagged
 * MRAIL_REQ_WAITING (its caller waits, as MPI_Send does) from 96 KiB is
 * copied by both ends at once: the sender writes a part (its rma_writes
 * grows) while the receiver reads the rest (its rma_reads grows). A send
 * without the flag, or smaller, is read whole by the receiver, which then
 * completes while the sender sleeps without calling into its engine.
 * With more processes on the host than CPUs online (run with -n 3 on a
 * 2-core machine) the sender's core is not idle while it waits, and
 * nothing is shared. Ranks 0 and 1 exchange, others only join the
 * barriers. Payloads are checked at sizes that are not page multiples.
 * With MRAIL_PROGRESS_THREAD=1 every sender keeps progressing: unflagged
 * sends are shared too, and the sleeping sender's thread writes its part.
 */
#include "harness.h"

#include <time.h>
#include <unistd.h>

enum { TAG = 5, MAX = (4 << 20) + 3 };

static uint8_t *buf;

static void stats(mrail_engine_t *e, uint32_t peer, uint64_t *reads,
		  uint64_t *writes)
{
	struct mrail_rail_stats st;
	CHECK_RC(mrail_rail_stats(e, peer, 0, &st));
	*reads = st.rma_reads;
	*writes = st.rma_writes;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One message of len bytes from rank 0 to rank 1; returns on both ranks
 * whether this rank moved bytes by RDMA read / write during it. */
static void one(mrail_engine_t *e, uint32_t me, size_t len, int waiting,
		int *read, int *wrote)
{
	mrail_request_t *r;
	mrail_status_t st;
	uint64_t r0, w0, r1, w1;

	*read = *wrote = 0;
	if (me > 1) {
		test_barrier(e);
		return;
	}
	stats(e, 1 - me, &r0, &w0);
	if (me == 0) {
		struct mrail_req_args a = MRAIL_REQ_ARGS_INIT;
		a.flags = waiting ? MRAIL_REQ_WAITING : 0;
		pattern_fill(buf, len, len + (size_t)waiting);
		CHECK_RC(mrail_isend_x(e, 1, buf, len, TAG, &a, &r));
	} else {
		memset(buf, 0, len);
		CHECK_RC(mrail_irecv(e, 0, buf, len, TAG, MRAIL_TAG_MASK_ALL,
				     &r));
	}
	CHECK_RC(mrail_wait(e, r, &st));
	if (me == 1) {
		CHECK_EQ(st.length, len);
		CHECK_EQ(pattern_check(buf, len, len + (size_t)waiting), len);
	}
	test_barrier(e);
	stats(e, 1 - me, &r1, &w1);
	*read = r1 > r0;
	*wrote = w1 > w0;
}

int main(void)
{
	static const size_t shared[] = {96 << 10, (128 << 10) + 1,
					(256 << 10) + 4095, (1 << 20) + 7, MAX};
	mrail_engine_t *e = test_engine();
	uint32_t me = mrail_rank(e);
	struct mrail_rail_stats rs;
	int read, wrote;

	uint32_t n = mrail_size(e);
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int share = cores > 0 && (long)n <= cores;
	const char *pt = getenv("MRAIL_PROGRESS_THREAD");
	int share_unflagged = share && pt && !strcmp(pt, "1");

	CHECK(n >= 2);
	CHECK_RC(mrail_rail_stats(e, me == 0 ? 1 : 0, 0, &rs));
	if (strcmp(rs.driver, "shm")) {
		fprintf(stderr, "rail 0 runs over %s, not shm\n", rs.driver);
		return 1;
	}
	CHECK((buf = malloc(MAX)));

	/* Flagged and large: the sender writes, the receiver reads. */
	for (size_t i = 0; i < sizeof shared / sizeof *shared; i++) {
		one(e, me, shared[i], 1, &read, &wrote);
		if (me == 0 && (wrote != share || read)) {
			fprintf(stderr, "%zu bytes, sender waiting, %u "
				"processes on %ld CPUs: it wrote %d, read %d "
				"(want %d, 0)\n", shared[i], n, cores, wrote,
				read, share);
			return 1;
		}
		if (me == 1 && (!read || wrote)) {
			fprintf(stderr, "%zu bytes, sender waiting: the "
				"receiver read %d, wrote %d (want 1, 0)\n",
				shared[i], read, wrote);
			return 1;
		}
	}
	/* Below the size, or not flagged: the receiver reads it all. */
	size_t alone[] = {(64 << 10) + 1, (96 << 10) - 1};
	for (size_t i = 0; i < 2; i++) {
		one(e, me, alone[i], 1, &read, &wrote);
		CHECK(!wrote && read == (me == 1));
	}
	one(e, me, 1 << 20, 0, &read, &wrote);
	CHECK(wrote == (me == 0 && share_unflagged) && read == (me == 1));

	/* Not flagged: the receive completes while the sender sleeps. */
	mrail_request_t *r;
	mrail_status_t st;
	if (me > 1) {
		/* barrier below */
	} else if (me == 0) {
		pattern_fill(buf, MAX, 77);
		CHECK_RC(mrail_isend(e, 1, buf, MAX, TAG, &r));
		sleep(3);
		CHECK_RC(mrail_wait(e, r, &st));
	} else {
		memset(buf, 0, MAX);
		double t0 = now();
		CHECK_RC(mrail_irecv(e, 0, buf, MAX, TAG, MRAIL_TAG_MASK_ALL,
				     &r));
		CHECK_RC(mrail_wait(e, r, &st));
		double waited = now() - t0;
		CHECK_EQ(pattern_check(buf, MAX, 77), (size_t)MAX);
		if (waited > 2.0) {
			fprintf(stderr, "the receive waited %.2f s for a "
				"sleeping sender\n", waited);
			return 1;
		}
	}
	test_barrier(e);
	free(buf);
	printf("test_share_copy: rank %u of %u on %ld CPUs ok (copy %s)\n",
	       me, n, cores, share ? "shared" : "not shared");
	CHECK_RC(mrail_engine_destroy(e));
	return 0;
}
