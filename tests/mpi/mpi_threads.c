/*
 * MPI_Init_thread(MPI_THREAD_MULTIPLE): whatever level is provided must be
 * the one MPI_Query_thread reports; when it is MPI_THREAD_MULTIPLE, several
 * threads per process exchange messages at once (each on its own tag, plus
 * ANY_SOURCE receives and a communicator per thread) and every message
 * arrives intact. Below MULTIPLE the program says so and does not use
 * threads concurrently (that would be erroneous).
 */
#include "mpi_check.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

enum { THREADS = 4, ROUNDS = 200, BIG = 50000 };

static int rank, size;
static MPI_Comm comms[THREADS];

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	int to = (rank + 1) % size, from = (rank + size - 1) % size;
	int *out = malloc(BIG * sizeof(int)), *in = malloc(BIG * sizeof(int));
	CHECK(out && in, "no memory");
	for (int k = 0; k < ROUNDS; k++) {
		/* Every 20th round a large (rendezvous-sized) message. */
		int n = k % 20 == 19 ? BIG : 1 + k % 7;
		for (int i = 0; i < n; i++)
			out[i] = rank * 1000000 + t * 10000 + k + i;
		MPI_Request r[2];
		MPI_Status st;
		/* World communicator, tag per thread: threads share a comm. */
		MPI_OK(MPI_Irecv(in, n, MPI_INT, from, 100 + t, MPI_COMM_WORLD,
				 &r[0]));
		MPI_OK(MPI_Isend(out, n, MPI_INT, to, 100 + t, MPI_COMM_WORLD,
				 &r[1]));
		MPI_OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
		for (int i = 0; i < n; i++)
			CHECK(in[i] == from * 1000000 + t * 10000 + k + i,
			      "thread %d round %d at %d", t, k, i);
		/* Own communicator, ANY_SOURCE / ANY_TAG. */
		MPI_OK(MPI_Sendrecv(out, 1, MPI_INT, to, k, in, 1, MPI_INT,
				    MPI_ANY_SOURCE, MPI_ANY_TAG, comms[t], &st));
		CHECK(st.MPI_SOURCE == from && st.MPI_TAG == k &&
			      in[0] == from * 1000000 + t * 10000 + k,
		      "thread %d any-source round %d", t, k);
	}
	free(out);
	free(in);
	return NULL;
}

int main(int argc, char **argv)
{
	int provided = -1, queried = -2;
	MPI_OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_OK(MPI_Query_thread(&queried));
	CHECK(queried == provided, "MPI_Query_thread %d, provided %d", queried,
	      provided);
	CHECK(provided >= MPI_THREAD_SINGLE && provided <= MPI_THREAD_MULTIPLE,
	      "provided %d", provided);
	if (provided == MPI_THREAD_MULTIPLE) {
		for (int t = 0; t < THREADS; t++)
			MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]));
		pthread_t th[THREADS];
		for (int t = 0; t < THREADS; t++)
			CHECK(!pthread_create(&th[t], NULL, worker,
					      (void *)(intptr_t)t),
			      "pthread_create");
		for (int t = 0; t < THREADS; t++)
			pthread_join(th[t], NULL);
		for (int t = 0; t < THREADS; t++)
			MPI_OK(MPI_Comm_free(&comms[t]));
	}
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	if (rank == 0)
		printf("mpi_threads: provided %d%s: %d processes OK\n", provided,
		       provided == MPI_THREAD_MULTIPLE
			       ? " (MPI_THREAD_MULTIPLE, 4 threads each)"
			       : " (below MULTIPLE: no concurrent use)",
		       size);
	MPI_OK(MPI_Finalize());
	return 0;
}
