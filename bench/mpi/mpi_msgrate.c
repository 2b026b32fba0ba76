/*
 * mpi-msgrate: small-message rate and streaming bandwidth, osu_mbw_mr
 * style (one pair, a window of 64 non-blocking sends answered by one
 * 4-byte message per window), 1 B to 16 KiB; and 8 B ping-pong latency.
 * Plain MPI: the same binary compares transports (bench/mpi/msgrate.sh).
 * usage: mpi-msgrate [SCALE] [LABEL] [BYTES]
 *   SCALE multiplies the windows per repetition; BYTES: that size alone,
 *   no latency (for profiles: perf, strace -c, callgrind)
 * Prints CSV on rank 0: label,test,bytes,value,unit  where value is the
 * median over repetitions: msgs/s and MB/s for "rate", one-way µs for
 * "latency".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WINDOW = 64, MAXB = 16384, REPS = 7 };

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Seconds for `windows` windows of `n`-byte messages from rank 0 to 1. */
static double stream(int rank, char *buf, int n, int windows)
{
	MPI_Request r[WINDOW];
	char ack[4];
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	for (int w = 0; w < windows; w++) {
		if (rank == 0) {
			for (int i = 0; i < WINDOW; i++)
				MPI_Isend(buf + (size_t)i * n, n, MPI_BYTE, 1,
					  100, MPI_COMM_WORLD, &r[i]);
			MPI_Waitall(WINDOW, r, MPI_STATUSES_IGNORE);
			MPI_Recv(ack, 4, MPI_BYTE, 1, 101, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		} else if (rank == 1) {
			for (int i = 0; i < WINDOW; i++)
				MPI_Irecv(buf + (size_t)i * n, n, MPI_BYTE, 0,
					  100, MPI_COMM_WORLD, &r[i]);
			MPI_Waitall(WINDOW, r, MPI_STATUSES_IGNORE);
			MPI_Send(ack, 4, MPI_BYTE, 0, 101, MPI_COMM_WORLD);
		}
	}
	return MPI_Wtime() - t0;
}

int main(int argc, char **argv)
{
	int rank, np;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &np);
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	const char *label = argc > 2 ? argv[2] : "run";
	int only = argc > 3 ? atoi(argv[3]) : 0;
	if (only < 0 || only > MAXB)
		only = MAXB;
	if (np != 2) {
		if (rank == 0)
			fprintf(stderr, "mpi-msgrate: run it on 2 processes\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	char *buf = calloc((size_t)WINDOW * MAXB, 1);
	double v[REPS], mb[REPS];
	if (rank == 0)
		printf("label,test,bytes,value,unit\n");
	for (int n = only ? only : 1; n <= (only ? only : MAXB); n *= 2) {
		/* ~ the same bytes per repetition for the large sizes, at
		 * least 40 windows for the small ones */
		int windows = (int)(scale * (n <= 256 ? 100 : 25600 / n * 4));
		if (windows < 10)
			windows = 10;
		stream(rank, buf, n, windows / 10 + 1); /* warm-up */
		for (int k = 0; k < REPS; k++) {
			double s = stream(rank, buf, n, windows);
			v[k] = (double)windows * WINDOW / s;
			mb[k] = v[k] * n / 1e6;
		}
		if (rank == 0) {
			printf("%s,rate,%d,%.0f,msgs/s\n", label, n, median(v, REPS));
			printf("%s,bw,%d,%.3f,MB/s\n", label, n, median(mb, REPS));
		}
	}
	if (only) {
		free(buf);
		MPI_Finalize();
		return 0;
	}
	/* 8 B ping-pong, one way */
	enum { PP = 2000 };
	double *t = calloc(PP, sizeof *t);
	char pp[8] = { 0 };
	for (int k = -200; k < PP; k++) {
		double t0 = MPI_Wtime();
		if (rank == 0) {
			MPI_Send(pp, 8, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
			MPI_Recv(pp, 8, MPI_BYTE, 1, 7, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(pp, 8, MPI_BYTE, 0, 7, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			MPI_Send(pp, 8, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
		}
		if (k >= 0)
			t[k] = (MPI_Wtime() - t0) / 2 * 1e6;
	}
	if (rank == 0)
		printf("%s,latency,8,%.2f,us\n", label, median(t, PP));
	free(t);
	free(buf);
	MPI_Finalize();
	return 0;
}
