/*
 * UnisonFlow's Listing 1 (shared/seeds/000): Bcast iterations, then Reduce
 * iterations, then (seed 001) Allreduce iterations, with results checked.
 * Prints each phase's wall-clock start and end (rank 0) so the test can
 * match switch counters and captures to phases.
 * usage: sdn_listing1 [ITERS [BYTES [PAUSE_MS]]]: PAUSE_MS of silence between
 * phases, so counters sampled now and then still separate them.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void stamp(int rank, const char *what)
{
	struct timespec ts;

	/* Wall clock: the test compares it with capture timestamps. */
	clock_gettime(CLOCK_REALTIME, &ts);
	if (rank == 0)
		printf("phase %s %ld.%09ld\n", what, (long)ts.tv_sec,
		       ts.tv_nsec);
}

/* First call of a phase (the pattern is new: announced, and with
 * MRAIL_SDN_SYNC=1 installed before it starts) against the mean of the
 * others (announcement cached): the cost of the controller round trip. */
static void report(int rank, const char *what, double first, double rest,
		   int iters)
{
	if (rank == 0 && iters > 1)
		printf("timing %s first %.3f ms, later mean %.3f ms\n", what,
		       first * 1e3, rest / (iters - 1) * 1e3);
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
	int pause_ms = argc > 3 ? atoi(argv[3]) : 0;
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
	double t, first = 0, rest = 0;

	stamp(rank, "bcast-start");
	for (int it = 0; it < iters; it++) {
		for (int i = 0; i < n; i++)
			buf[i] = rank == 0 ? it + i : -1;
		t = MPI_Wtime();
		MPI_Bcast(buf, n, MPI_INT, 0, MPI_COMM_WORLD);
		t = MPI_Wtime() - t;
		*(it ? &rest : &first) += t;
		if (buf[n - 1] != it + n - 1)
			DIE("rank %d: bcast %d wrong\n", rank, it);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	stamp(rank, "bcast-end");
	report(rank, "bcast", first, rest, iters);
	first = rest = 0;
	usleep((useconds_t)pause_ms * 1000);
	MPI_Barrier(MPI_COMM_WORLD);
	stamp(rank, "reduce-start");
	for (int it = 0; it < iters; it++) {
		for (int i = 0; i < n; i++)
			buf[i] = rank + it;
		t = MPI_Wtime();
		MPI_Reduce(buf, out, n, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
		t = MPI_Wtime() - t;
		*(it ? &rest : &first) += t;
		if (rank == 0 && out[n - 1] != size * (size - 1) / 2 + size * it)
			DIE("reduce %d wrong\n", it);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	stamp(rank, "reduce-end");
	report(rank, "reduce", first, rest, iters);
	first = rest = 0;
	usleep((useconds_t)pause_ms * 1000);
	MPI_Barrier(MPI_COMM_WORLD);
	stamp(rank, "allreduce-start");
	for (int it = 0; it < iters; it++) {
		for (int i = 0; i < n; i++)
			buf[i] = rank * it;
		t = MPI_Wtime();
		MPI_Allreduce(buf, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		t = MPI_Wtime() - t;
		*(it ? &rest : &first) += t;
		if (out[0] != it * size * (size - 1) / 2)
			DIE("rank %d: allreduce %d wrong\n", rank, it);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	stamp(rank, "allreduce-end");
	report(rank, "allreduce", first, rest, iters);
	if (rank == 0)
		printf("sdn_listing1: %d processes OK\n", size);
	free(buf);
	free(out);
	MPI_Finalize();
	return 0;
}
