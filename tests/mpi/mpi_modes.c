/*
 * Send modes and request life cycles (MPI-3.1 sections 3.4, 3.7, 3.9):
 * buffered (MPI_Bsend, MPI_Ibsend), ready (MPI_Rsend), synchronous
 * (MPI_Issend must not complete before its receive is posted),
 * persistent requests (MPI_Send_init / MPI_Recv_init, MPI_Start and
 * MPI_Startall, reused many times), MPI_Request_free on an active send,
 * and a send buffer rewritten as soon as its request completes (the data
 * received must be what was sent). Small messages, which a transport may
 * complete inside the post, and rendezvous-sized ones. Pairs of ranks
 * (0-1, 2-3...); an odd last rank only joins the barriers.
 */
#include "mpi_check.h"

#include <stdint.h>
#include <string.h>

enum { ROUNDS = 200, BIG = 256 * 1024, WINDOW = 32 };

static int rank, size, peer;

static void fill(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seed * 131u + i * 7u);
}

static void expect(const uint8_t *b, size_t n, unsigned seed, const char *what)
{
	for (size_t i = 0; i < n; i++)
		CHECK(b[i] == (uint8_t)(seed * 131u + i * 7u),
		      "%s: byte %zu of %zu wrong (seed %u)", what, i, n, seed);
}

/* Each send's buffer is overwritten at once after its completion. */
static void test_rewrite(size_t n)
{
	uint8_t *b = malloc(n + 1);
	CHECK(b, "malloc");
	for (unsigned i = 0; i < ROUNDS; i++) {
		if (rank < peer) {
			MPI_Request r;
			int flag = 0;
			fill(b, n, i);
			MPI_OK(MPI_Isend(b, (int)n, MPI_BYTE, peer, 10, MPI_COMM_WORLD, &r));
			while (!flag)
				MPI_OK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
			CHECK(r == MPI_REQUEST_NULL, "completed request not freed");
			memset(b, 0xee, n);
			fill(b, n, i + 1000);
			MPI_OK(MPI_Send(b, (int)n, MPI_BYTE, peer, 11, MPI_COMM_WORLD));
			memset(b, 0xdd, n);
		} else {
			MPI_OK(MPI_Recv(b, (int)n, MPI_BYTE, peer, 10, MPI_COMM_WORLD,
					MPI_STATUS_IGNORE));
			expect(b, n, i, "isend then rewrite");
			MPI_OK(MPI_Recv(b, (int)n, MPI_BYTE, peer, 11, MPI_COMM_WORLD,
					MPI_STATUS_IGNORE));
			expect(b, n, i + 1000, "send then rewrite");
		}
	}
	free(b);
}

static void test_buffered(size_t n)
{
	int bsize = (int)(WINDOW * (n + MPI_BSEND_OVERHEAD));
	uint8_t *att = malloc((size_t)bsize), *b = malloc(n + 1);
	CHECK(att && b, "malloc");
	MPI_OK(MPI_Buffer_attach(att, bsize));
	for (unsigned i = 0; i < ROUNDS / 10; i++) {
		if (rank < peer) {
			MPI_Request r[WINDOW];
			for (int w = 0; w < WINDOW; w++) {
				fill(b, n, i * WINDOW + (unsigned)w);
				if (w % 2)
					MPI_OK(MPI_Bsend(b, (int)n, MPI_BYTE, peer, 20,
							 MPI_COMM_WORLD));
				else
					MPI_OK(MPI_Ibsend(b, (int)n, MPI_BYTE, peer, 20,
							  MPI_COMM_WORLD, &r[w]));
				/* Buffered: the buffer is ours at once. */
				memset(b, 0xcc, n);
			}
			for (int w = 0; w < WINDOW; w += 2)
				MPI_OK(MPI_Wait(&r[w], MPI_STATUS_IGNORE));
		} else {
			for (int w = 0; w < WINDOW; w++) {
				MPI_OK(MPI_Recv(b, (int)n, MPI_BYTE, peer, 20,
						MPI_COMM_WORLD, MPI_STATUS_IGNORE));
				expect(b, n, i * WINDOW + (unsigned)w, "buffered");
			}
		}
		/* Detach waits for every buffered message to leave. */
		if (rank < peer) {
			void *p;
			int sz;
			MPI_OK(MPI_Buffer_detach(&p, &sz));
			CHECK(p == att && sz == bsize, "detach returned another buffer");
			MPI_OK(MPI_Buffer_attach(att, bsize));
		}
	}
	void *p;
	int sz;
	MPI_OK(MPI_Buffer_detach(&p, &sz));
	free(att);
	free(b);
}

/* Ready mode: the receive is posted before the sender is told to send. */
static void test_ready(size_t n)
{
	uint8_t *b = malloc(n + 1);
	char go = 1;
	CHECK(b, "malloc");
	for (unsigned i = 0; i < ROUNDS / 10; i++) {
		if (rank < peer) {
			MPI_OK(MPI_Recv(&go, 1, MPI_CHAR, peer, 31, MPI_COMM_WORLD,
					MPI_STATUS_IGNORE));
			fill(b, n, i);
			MPI_OK(MPI_Rsend(b, (int)n, MPI_BYTE, peer, 30, MPI_COMM_WORLD));
		} else {
			MPI_Request r;
			MPI_OK(MPI_Irecv(b, (int)n, MPI_BYTE, peer, 30, MPI_COMM_WORLD, &r));
			MPI_OK(MPI_Send(&go, 1, MPI_CHAR, peer, 31, MPI_COMM_WORLD));
			MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
			expect(b, n, i, "ready");
		}
	}
	free(b);
}

/* An Issend completes only after its receive is posted. */
static void test_issend(size_t n)
{
	uint8_t *b = malloc(n + 1);
	char token = 0;
	CHECK(b, "malloc");
	if (rank < peer) {
		MPI_Request r;
		int flag = 0;
		fill(b, n, 7);
		MPI_OK(MPI_Issend(b, (int)n, MPI_BYTE, peer, 40, MPI_COMM_WORLD, &r));
		for (int k = 0; k < 1000; k++)
			MPI_OK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
		CHECK(!flag, "Issend of %zu bytes completed before its receive", n);
		MPI_OK(MPI_Send(&token, 1, MPI_CHAR, peer, 41, MPI_COMM_WORLD));
		MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
	} else {
		MPI_OK(MPI_Recv(&token, 1, MPI_CHAR, peer, 41, MPI_COMM_WORLD,
				MPI_STATUS_IGNORE));
		MPI_OK(MPI_Recv(b, (int)n, MPI_BYTE, peer, 40, MPI_COMM_WORLD,
				MPI_STATUS_IGNORE));
		expect(b, n, 7, "issend");
	}
	free(b);
}

/* Persistent requests started again and again, alone and with Startall. */
static void test_persistent(size_t n)
{
	uint8_t *b[2] = {malloc(n + 1), malloc(n + 1)};
	MPI_Request r[2];
	CHECK(b[0] && b[1], "malloc");
	for (int k = 0; k < 2; k++) {
		if (rank < peer)
			MPI_OK(MPI_Send_init(b[k], (int)n, MPI_BYTE, peer, 50 + k,
					     MPI_COMM_WORLD, &r[k]));
		else
			MPI_OK(MPI_Recv_init(b[k], (int)n, MPI_BYTE, peer, 50 + k,
					     MPI_COMM_WORLD, &r[k]));
	}
	for (unsigned i = 0; i < ROUNDS; i++) {
		if (rank < peer) {
			fill(b[0], n, i);
			fill(b[1], n, i + 5000);
		}
		if (i % 2) {
			MPI_OK(MPI_Startall(2, r));
			MPI_OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
		} else {
			for (int k = 0; k < 2; k++) {
				MPI_OK(MPI_Start(&r[k]));
				MPI_OK(MPI_Wait(&r[k], MPI_STATUS_IGNORE));
			}
		}
		CHECK(r[0] != MPI_REQUEST_NULL && r[1] != MPI_REQUEST_NULL,
		      "a persistent request was freed by its completion");
		if (rank > peer) {
			expect(b[0], n, i, "persistent");
			expect(b[1], n, i + 5000, "persistent (2)");
		}
	}
	for (int k = 0; k < 2; k++) {
		MPI_OK(MPI_Request_free(&r[k]));
		free(b[k]);
	}
}

/* A freed active send still delivers (MPI-3.1 3.7.3). */
static void test_request_free(size_t n)
{
	uint8_t *b = malloc(n * WINDOW);
	CHECK(b, "malloc");
	if (rank < peer) {
		for (int w = 0; w < WINDOW; w++) {
			MPI_Request r;
			fill(b + (size_t)w * n, n, (unsigned)w + 77);
			MPI_OK(MPI_Isend(b + (size_t)w * n, (int)n, MPI_BYTE, peer, 60,
					 MPI_COMM_WORLD, &r));
			MPI_OK(MPI_Request_free(&r));
			CHECK(r == MPI_REQUEST_NULL, "freed request not nulled");
		}
		/* The receiver's answer says everything arrived: the
		 * buffers may go. */
		char done;
		MPI_OK(MPI_Recv(&done, 1, MPI_CHAR, peer, 61, MPI_COMM_WORLD,
				MPI_STATUS_IGNORE));
	} else {
		uint8_t *in = malloc(n + 1);
		CHECK(in, "malloc");
		for (int w = 0; w < WINDOW; w++) {
			MPI_OK(MPI_Recv(in, (int)n, MPI_BYTE, peer, 60, MPI_COMM_WORLD,
					MPI_STATUS_IGNORE));
			expect(in, n, (unsigned)w + 77, "freed send");
		}
		char done = 1;
		MPI_OK(MPI_Send(&done, 1, MPI_CHAR, peer, 61, MPI_COMM_WORLD));
		free(in);
	}
	free(b);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	peer = rank ^ 1;
	const size_t sizes[] = {0, 8, 1000, BIG};
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		size_t n = sizes[k];
		if (peer < size) {
			test_rewrite(n ? n : 1);
			test_buffered(n);
			test_ready(n);
			test_issend(n);
			test_persistent(n);
			test_request_free(n ? n : 1);
		}
		MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	}
	if (rank == 0)
		printf("mpi_modes: %d processes OK\n", size);
	MPI_Finalize();
	return 0;
}
