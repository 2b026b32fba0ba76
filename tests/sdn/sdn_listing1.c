/*
 * UnisonFlow's Listing 1 (shared/seeds/000): Bcast iterations, then Reduce
 * iterations, then (seed 001) Allreduce iterations, with results checked.
 * Prints each phase's wall-clock start and end (rank 0) so the test can
 * match switch counters and captures to phases.
 * usage: sdn_listing1 [ITERS [BYTES]]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void stamp(int rank, const char *what)
{
	struct timespec ts;

	/* Wall clock: the test compares it with capture timestamps. */
	clock_gettime(CLOCK_REALTIME, &ts);
	if (rank == 0)
		printf("phase %s %ld.%09ld\n", what, (long)ts.tv_sec,
		       ts.tv_nsec);
}

#define DIE(...)                                                           \
	do {                                                               \
		fprintf(stderr, __VA_ARGS__);                              \
		MPI_Abort(MPI_COMM_WORLD, 1);                              \
	} while (0)

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 50;
	int n = (argc > 2 ? atoi(argv[2]) : 1 << 18) / (int)sizeof(int);
	int rank, size;
	int *buf, *out;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	buf = malloc((size_t)n * sizeof(int));
	out = malloc((size_t)n * sizeof(int));
	if (!buf || !out)
		DIE("out of memory\n");
	MPI_Barrier(MPI_COMM_WORLD);
	stamp(rank, "bcast-start");
	for (int it = 0; it < iters; it++) {
		for (int i = 0; i < n; i++)
			buf[i] = rank == 0 ? it + i : -1;
		MPI_Bcast(buf, n, MPI_INT, 0, MPI_COMM_WORLD);
		if (buf[n - 1] != it + n - 1)
			DIE("rank %d: bcast %d wrong\n", rank, it);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	stamp(rank, "bcast-end");
	stamp(rank, "reduce-start");
	for (int it = 0; it < iters; it++) {
		for (int i = 0; i < n; i++)
			buf[i] = rank + it;
		MPI_Reduce(buf, out, n, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
		if (rank == 0 && out[n - 1] != size * (size - 1) / 2 + size * it)
			DIE("reduce %d wrong\n", it);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	stamp(rank, "reduce-end");
	stamp(rank, "allreduce-start");
	for (int it = 0; it < iters; it++) {
		for (int i = 0; i < n; i++)
			buf[i] = rank * it;
		MPI_Allreduce(buf, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		if (out[0] != it * size * (size - 1) / 2)
			DIE("rank %d: allreduce %d wrong\n", rank, it);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	stamp(rank, "allreduce-end");
	if (rank == 0)
		printf("sdn_listing1: %d processes OK\n", size);
	free(buf);
	free(out);
	MPI_Finalize();
	return 0;
}
