/*
 * Small standard sends complete without their receive: exchange patterns
 * that deadlock unless the MPI buffers small messages (every mainstream
 * one does). Synchronous sends still wait for their match.
 * Run at any number of processes (the suite uses 2, 8 and 64).
 */
#include "mpi_check.h"

#include <string.h>

static int rank, size;

static void fill(unsigned char *b, int n, int seed)
{
	for (int i = 0; i < n; i++)
		b[i] = (unsigned char)(seed * 31 + i * 7);
}

static void expect(const unsigned char *b, int n, int seed, const char *what)
{
	for (int i = 0; i < n; i++)
		CHECK(b[i] == (unsigned char)(seed * 31 + i * 7),
		      "%s: byte %d of message %d is wrong", what, i, seed);
}

/* Partner of a pair (the last rank of an odd world has none). */
static int partner(void)
{
	int p = rank ^ 1;
	return p < size ? p : -1;
}

/* Isend + Wait, then Send; the receiver takes the second message first. */
static void reverse_pair(void)
{
	int p = partner();
	unsigned char a[1] = { 11 }, b[8], x[1] = { 0 }, y[8];
	if (p < 0)
		return;
	fill(b, 8, 2);
	if (rank % 2 == 0) {
		MPI_Request rq;
		MPI_OK(MPI_Isend(a, 1, MPI_BYTE, p, 1, MPI_COMM_WORLD, &rq));
		MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
		MPI_OK(MPI_Send(b, 8, MPI_BYTE, p, 2, MPI_COMM_WORLD));
	} else {
		MPI_OK(MPI_Recv(y, 8, MPI_BYTE, p, 2, MPI_COMM_WORLD,
				MPI_STATUS_IGNORE));
		MPI_OK(MPI_Recv(x, 1, MPI_BYTE, p, 1, MPI_COMM_WORLD,
				MPI_STATUS_IGNORE));
		CHECK(x[0] == 11, "reverse: first message carries %d", x[0]);
		expect(y, 8, 2, "reverse");
	}
}

/* Every rank sends to every other rank (blocking), then receives. */
static void all_send_then_recv(void)
{
	static const int sizes[] = { 1, 64, 4096 };
	enum { NS = sizeof sizes / sizeof sizes[0] };
	unsigned char out[4096], in[4096];

	for (int k = 0; k < NS; k++) {
		for (int d = 1; d < size; d++) {
			int to = (rank + d) % size;
			fill(out, sizes[k], rank * 1000 + to);
			MPI_OK(MPI_Send(out, sizes[k], MPI_BYTE, to, 10 + k,
					MPI_COMM_WORLD));
		}
		for (int d = 1; d < size; d++) {
			int from = (rank + size - d) % size;
			MPI_Status st;
			MPI_OK(MPI_Recv(in, sizes[k], MPI_BYTE, from, 10 + k,
					MPI_COMM_WORLD, &st));
			int n;
			MPI_OK(MPI_Get_count(&st, MPI_BYTE, &n));
			CHECK(n == sizes[k], "all-to-all: %d bytes, not %d", n,
			      sizes[k]);
			expect(in, n, from * 1000 + rank, "all-to-all");
		}
	}
}

/* Halo exchange written send-then-receive, both directions of a ring. */
static void ring_halo(void)
{
	enum { ITER = 20, N = 512 };
	unsigned char out[N], in[N];
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	for (int it = 0; it < ITER; it++) {
		fill(out, N, it);
		MPI_OK(MPI_Send(out, N, MPI_BYTE, right, 20, MPI_COMM_WORLD));
		MPI_OK(MPI_Send(out, N, MPI_BYTE, left, 21, MPI_COMM_WORLD));
		MPI_OK(MPI_Recv(in, N, MPI_BYTE, left, 20, MPI_COMM_WORLD,
				MPI_STATUS_IGNORE));
		expect(in, N, it, "halo right");
		MPI_OK(MPI_Recv(in, N, MPI_BYTE, right, 21, MPI_COMM_WORLD,
				MPI_STATUS_IGNORE));
		expect(in, N, it, "halo left");
	}
}

/*
 * More small messages than any receiver buffers for one peer (4 MiB by
 * default): all sent before the first receive, which asks for the last.
 * Fewer at large worlds, where a peer's share of the buffering is small.
 */
static void flood_pair(void)
{
	int p = partner();
	int n = size <= 8 ? 1100 : 300, len = 4096;
	unsigned char buf[4096];
	if (p < 0)
		return;
	if (rank % 2 == 0) {
		for (int i = 0; i < n; i++) {
			fill(buf, len, i);
			MPI_OK(MPI_Send(buf, len, MPI_BYTE, p, i,
					MPI_COMM_WORLD));
		}
		/* ...and the receiver's answer comes only after all. */
		MPI_OK(MPI_Recv(buf, 1, MPI_BYTE, p, n, MPI_COMM_WORLD,
				MPI_STATUS_IGNORE));
	} else {
		MPI_OK(MPI_Recv(buf, len, MPI_BYTE, p, n - 1, MPI_COMM_WORLD,
				MPI_STATUS_IGNORE));
		expect(buf, len, n - 1, "flood last");
		for (int i = 0; i < n - 1; i++) {
			MPI_OK(MPI_Recv(buf, len, MPI_BYTE, p, i,
					MPI_COMM_WORLD, MPI_STATUS_IGNORE));
			expect(buf, len, i, "flood");
		}
		MPI_OK(MPI_Send(buf, 1, MPI_BYTE, p, n, MPI_COMM_WORLD));
	}
}

/* A synchronous send completes only once its receive matched: the
 * receiver posts it only after a message the sender sends after many
 * tests of the synchronous one, which must all say "not complete". */
static void ssend_waits(void)
{
	int p = partner();
	unsigned char s[1] = { 5 }, go[1] = { 1 }, in[1];
	if (p < 0)
		return;
	if (rank % 2 == 0) {
		MPI_Request rq;
		int flag = 0;
		MPI_OK(MPI_Issend(s, 1, MPI_BYTE, p, 30, MPI_COMM_WORLD, &rq));
		for (int i = 0; i < 2000 && !flag; i++)
			MPI_OK(MPI_Test(&rq, &flag, MPI_STATUS_IGNORE));
		CHECK(!flag, "a synchronous send completed before its receive "
			     "was posted");
		MPI_OK(MPI_Send(go, 1, MPI_BYTE, p, 31, MPI_COMM_WORLD));
		MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
	} else {
		MPI_OK(MPI_Recv(in, 1, MPI_BYTE, p, 31, MPI_COMM_WORLD,
				MPI_STATUS_IGNORE));
		MPI_OK(MPI_Recv(in, 1, MPI_BYTE, p, 30, MPI_COMM_WORLD,
				MPI_STATUS_IGNORE));
		CHECK(in[0] == 5, "synchronous message carries %d", in[0]);
	}
}

int main(int argc, char **argv)
{
	MPI_OK(MPI_Init(&argc, &argv));
	MPI_OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
	MPI_OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
	/* First, before any traffic: a fresh connection has no credit yet. */
	reverse_pair();
	all_send_then_recv();
	ring_halo();
	flood_pair();
	ssend_waits();
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	if (rank == 0)
		printf("mpi_exchange: %d processes OK\n", size);
	MPI_OK(MPI_Finalize());
	return 0;
}
