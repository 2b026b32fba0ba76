/*
 * mpi-bench: ping-pong latency and bandwidth, streaming bandwidth with a
 * window, allreduce and alltoall time; by message size. Plain MPI, so the same binary
 * compares transports (bench/mpi/run.sh, docs/mpi-ompi.md).
 * usage: mpi-bench pingpong|latency|stream|bw|bibw|allreduce|alltoall|barrier
 *        [MAX_BYTES] [LABEL] [WINDOW]
 * barrier: one row (bytes 0), timed as the collectives are: the 8 B
 * collectives' share that is synchronisation alone (docs/driver-shm.md).
 * (alltoall: MAX_BYTES to each rank; WINDOW: sends in flight in stream,
 * default 16; OSU's osu_bw uses 64)
 * bw, bibw: osu_bw / osu_bibw style, every power of two from 16 KiB: a
 * window of up to 64 messages (fewer from 512 KiB: 16 MiB in flight, at least 2,
 * so that 16 MiB rounds stay short on slow rails); bibw sends the window
 * both ways at once and counts the bytes of both directions.
 * Prints CSV on rank 0: label,test,np,bytes,usec,MBps
 * latency: osu_latency style, ping-pong round trips back to back (no
 * barrier between them), one way = total / 2 / round trips; MPI_BENCH_ITERS
 * sets the round trips per size (default as pingpong), so two runs with
 * different counts give per-round-trip figures (strace -c, perf stat,
 * callgrind); it sets the iterations of the collectives and barrier too.
 * usec is the median over iterations (one way for pingpong): a VM's
 * scheduling hiccups hit single iterations and would move a mean.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WINDOW_DEFAULT = 16, WINDOW_MAX = 1024 };
/* A stream's window uses its own buffer slot per message up to this much
 * memory, then slots again (osu_bw uses one buffer for the whole window);
 * 256 MiB is what window 16 always took at 16 MiB. */
#define STREAM_BUF_MAX ((size_t)256 << 20)
enum { OSU_WINDOW = 64 };
#define OSU_MIN ((size_t)16 << 10)
#define OSU_INFLIGHT ((size_t)16 << 20)

static int osu_window(size_t n)
{
	size_t w = OSU_INFLIGHT / n;
	return w >= OSU_WINDOW ? OSU_WINDOW : w < 2 ? 2 : (int)w;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int iters_for(size_t n)
{
	if (n <= 4096)
		return 1000;
	if (n <= 65536)
		return 200;
	if (n <= (1 << 20))
		return 40;
	return 8;
}

/* bw and bibw move up to OSU_INFLIGHT bytes per iteration. */
static int osu_iters_for(size_t n)
{
	return n <= ((size_t)256 << 10) ? 12 : 6;
}

/* One window of bw (sender -> receiver, acknowledged by the receiver as
 * osu_bw does) or bibw (both ways at once, as osu_bibw). */
static void osu_window_run(int bidir, int rank, int peer, char *a, char *b,
			   size_t n, int w)
{
	MPI_Request r[2 * OSU_WINDOW];
	int k = 0, sender = rank % 2 == 0;
	if (bidir || !sender)
		for (int i = 0; i < w; i++)
			MPI_Irecv(b + (size_t)i * n, (int)n, MPI_BYTE, peer, 4,
				  MPI_COMM_WORLD, &r[k++]);
	if (bidir || sender)
		for (int i = 0; i < w; i++)
			MPI_Isend(a + (size_t)i * n, (int)n, MPI_BYTE, peer, 4,
				  MPI_COMM_WORLD, &r[k++]);
	MPI_Waitall(k, r, MPI_STATUSES_IGNORE);
	if (bidir)
		return;
	char ack = 0;
	if (sender)
		MPI_Recv(&ack, 1, MPI_BYTE, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	else
		MPI_Send(&ack, 1, MPI_BYTE, peer, 5, MPI_COMM_WORLD);
}

static void latency_run(int rank, int peer, char *a, char *b, size_t max,
			const char *label)
{
	const char *env = getenv("MPI_BENCH_ITERS");
	for (size_t n = 8; n <= max; n *= 8) {
		int it = env ? atoi(env) : iters_for(n);
		if (it < 1)
			it = 1;
		double t0 = 0;
		for (int k = -(it / 10 + 1); k < it; k++) {
			if (k == 0) {
				MPI_Barrier(MPI_COMM_WORLD);
				t0 = MPI_Wtime();
			}
			if (rank == 0) {
				MPI_Send(a, (int)n, MPI_BYTE, peer, 6, MPI_COMM_WORLD);
				MPI_Recv(b, (int)n, MPI_BYTE, peer, 6, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
			} else if (rank == 1) {
				MPI_Recv(b, (int)n, MPI_BYTE, peer, 6, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				MPI_Send(a, (int)n, MPI_BYTE, peer, 6, MPI_COMM_WORLD);
			}
		}
		double us = (MPI_Wtime() - t0) * 1e6 / 2 / it;
		if (rank == 0)
			printf("%s,latency,2,%zu,%.2f,%.1f\n", label, n, us, n / us);
		fflush(stdout);
	}
}

int main(int argc, char **argv)
{
	int rank, np;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &np);
	const char *test = argc > 1 ? argv[1] : "pingpong";
	size_t max = argc > 2 ? strtoull(argv[2], NULL, 0) : (16u << 20);
	const char *label = argc > 3 ? argv[3] : "run";
	static const char *const tests[] = { "pingpong", "latency", "stream",
		"bw", "bibw", "allreduce", "alltoall", "barrier" };
	size_t ti = 0;
	while (ti < sizeof tests / sizeof *tests && strcmp(test, tests[ti]))
		ti++;
	if (ti == sizeof tests / sizeof *tests) {
		if (rank == 0)
			fprintf(stderr, "mpi-bench: unknown test '%s' (pingpong, "
				"latency, stream, bw, bibw, allreduce, alltoall, "
				"barrier)\n", test);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	int window = argc > 4 ? atoi(argv[4]) : WINDOW_DEFAULT;
	if (window < 1 || window > WINDOW_MAX) {
		if (rank == 0)
			fprintf(stderr, "mpi-bench: WINDOW must be 1..%d, not "
				"'%s'\n", WINDOW_MAX, argv[4]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	size_t slots = (size_t)window;
	if (max > 0 && slots * max > STREAM_BUF_MAX)
		slots = STREAM_BUF_MAX / max > 0 ? STREAM_BUF_MAX / max : 1;
	int osu = !strcmp(test, "bw") || !strcmp(test, "bibw");
	int bidir = !strcmp(test, "bibw");
	size_t bufsz = osu			   ? max * (size_t)osu_window(max)
		       : !strcmp(test, "stream")   ? max * slots
		       : !strcmp(test, "alltoall") ? max * (size_t)np
						   : max;
	char *a = malloc(bufsz ? bufsz : 1), *b = malloc(bufsz ? bufsz : 1);
	memset(a, 1, bufsz);
	memset(b, 0, bufsz);
	int peer = rank ^ 1;
	if (rank == 0)
		printf("label,test,np,bytes,usec,MBps\n");
	if (!strcmp(test, "latency")) {
		latency_run(rank, peer, a, b, max, label);
		max = 0; /* skips the loop below */
	}
	int barrier = !strcmp(test, "barrier");
	if (barrier)
		max = 8; /* one pass of the loop below */
	/* 8, 64, 512, 4 KiB, 32 KiB, then every power of two from 64 KiB
	 * (the range the targets are about). */
	for (size_t n = osu ? OSU_MIN : 8; n <= max; n *= n < 32768 && !osu ? 8 : 2) {
		const char *env = getenv("MPI_BENCH_ITERS");
		int it = osu ? osu_iters_for(n) : iters_for(n), warm;
		if (env && !osu && strcmp(test, "pingpong") &&
		    strcmp(test, "stream"))
			it = atoi(env) > 0 ? atoi(env) : 1;
		warm = it / 10 + 1;
		double *t = calloc((size_t)it, sizeof *t);
		for (int k = -warm; k < it; k++) {
			MPI_Barrier(MPI_COMM_WORLD);
			double t0 = MPI_Wtime();
			if (!strcmp(test, "pingpong") && peer < np) {
				if (rank % 2 == 0) {
					MPI_Send(a, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
					MPI_Recv(b, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
						 MPI_STATUS_IGNORE);
				} else {
					MPI_Recv(b, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
						 MPI_STATUS_IGNORE);
					MPI_Send(a, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
				}
			} else if (!strcmp(test, "stream") && peer < np) {
				MPI_Request r[WINDOW_MAX];
				for (int w = 0; w < window; w++) {
					if (rank % 2 == 0)
						MPI_Isend(a + (size_t)w % slots * n, (int)n, MPI_BYTE, peer, 2,
							  MPI_COMM_WORLD, &r[w]);
					else
						MPI_Irecv(b + (size_t)w % slots * n, (int)n, MPI_BYTE, peer, 2,
							  MPI_COMM_WORLD, &r[w]);
				}
				MPI_Waitall(window, r, MPI_STATUSES_IGNORE);
				/* The sender's clock stops at the receiver's ack. */
				char ack = 0;
				if (rank % 2 == 0)
					MPI_Recv(&ack, 1, MPI_BYTE, peer, 3, MPI_COMM_WORLD,
						 MPI_STATUS_IGNORE);
				else
					MPI_Send(&ack, 1, MPI_BYTE, peer, 3, MPI_COMM_WORLD);
			} else if (osu && peer < np) {
				osu_window_run(bidir, rank, peer, a, b, n, osu_window(n));
			} else if (!strcmp(test, "allreduce")) {
				if (n < 8)
					continue;
				MPI_Allreduce(a, b, (int)(n / 8), MPI_DOUBLE, MPI_SUM,
					      MPI_COMM_WORLD);
			} else if (!strcmp(test, "alltoall")) {
				MPI_Alltoall(a, (int)n, MPI_BYTE, b, (int)n, MPI_BYTE,
					     MPI_COMM_WORLD);
			} else if (barrier) {
				MPI_Barrier(MPI_COMM_WORLD);
			}
			if (k >= 0 && t)
				t[k] = MPI_Wtime() - t0;
		}
		if (!t)
			MPI_Abort(MPI_COMM_WORLD, 1);
		qsort(t, (size_t)it, sizeof *t, cmp_double);
		double us = t[it / 2] * 1e6, mbps = 0;
		free(t);
		if (!strcmp(test, "pingpong")) {
			us /= 2; /* one way */
			mbps = n / us;
		} else if (!strcmp(test, "stream")) {
			mbps = (double)n * window / us;
		} else if (osu) {
			mbps = (double)n * osu_window(n) * (bidir ? 2 : 1) / us;
		}
		if (rank == 0)
			printf("%s,%s,%d,%zu,%.2f,%.1f\n", label, test, np,
			       barrier ? 0 : n, us, mbps);
		fflush(stdout);
	}
	free(a);
	free(b);
	MPI_Finalize();
	return 0;
}
