/*
 * Every blocking collective (at whatever size the job has, non-powers of
 * two included), small and large counts; communicator split and dup; many
 * communicators alive at once.
 */
#include "mpi_check.h"

#include <string.h>

static int rank, size;

static void collectives(MPI_Comm c, int n)
{
	int me, np;
	MPI_Comm_rank(c, &me);
	MPI_Comm_size(c, &np);
	int *a = malloc((size_t)n * np * sizeof(int));
	int *b = malloc((size_t)n * np * sizeof(int));
	int *cnt = malloc(np * sizeof(int)), *dsp = malloc(np * sizeof(int));
	int *wdsp = malloc(np * sizeof(int));
	MPI_Datatype *wt = malloc(np * sizeof(MPI_Datatype));

	MPI_OK(MPI_Barrier(c));
	for (int i = 0; i < n; i++)
		a[i] = me == np - 1 ? i * 3 : -1;
	MPI_OK(MPI_Bcast(a, n, MPI_INT, np - 1, c));
	for (int i = 0; i < n; i++)
		CHECK(a[i] == i * 3, "bcast[%d]", i);

	for (int i = 0; i < n; i++)
		a[i] = me + i;
	MPI_OK(MPI_Reduce(a, b, n, MPI_INT, MPI_SUM, 0, c));
	if (me == 0)
		for (int i = 0; i < n; i++)
			CHECK(b[i] == np * (np - 1) / 2 + np * i, "reduce[%d]", i);
	MPI_OK(MPI_Allreduce(a, b, n, MPI_INT, MPI_MAX, c));
	for (int i = 0; i < n; i++)
		CHECK(b[i] == np - 1 + i, "allreduce[%d]", i);
	MPI_OK(MPI_Scan(a, b, n, MPI_INT, MPI_SUM, c));
	for (int i = 0; i < n; i++)
		CHECK(b[i] == me * (me + 1) / 2 + (me + 1) * i, "scan[%d]", i);
	MPI_OK(MPI_Exscan(a, b, n, MPI_INT, MPI_SUM, c));
	if (me > 0)
		for (int i = 0; i < n; i++)
			CHECK(b[i] == me * (me - 1) / 2 + me * i, "exscan[%d]", i);

	/* Gather family: element j of block r is r * 1000 + j. */
	for (int i = 0; i < n; i++)
		a[i] = me * 1000 + i;
	MPI_OK(MPI_Gather(a, n, MPI_INT, b, n, MPI_INT, 0, c));
	if (me == 0)
		for (int r = 0; r < np; r++)
			for (int i = 0; i < n; i++)
				CHECK(b[r * n + i] == r * 1000 + i, "gather");
	MPI_OK(MPI_Allgather(a, n, MPI_INT, b, n, MPI_INT, c));
	for (int r = 0; r < np; r++)
		for (int i = 0; i < n; i++)
			CHECK(b[r * n + i] == r * 1000 + i, "allgather");
	/* v-variants: rank r contributes r % 3 + 1 elements (<= n). */
	int tot = 0;
	for (int r = 0; r < np; r++) {
		cnt[r] = (r % 3 + 1) * n / 3;
		dsp[r] = tot;
		tot += cnt[r];
	}
	MPI_OK(MPI_Gatherv(a, cnt[me], MPI_INT, b, cnt, dsp, MPI_INT, 0, c));
	if (me == 0)
		for (int r = 0; r < np; r++)
			for (int i = 0; i < cnt[r]; i++)
				CHECK(b[dsp[r] + i] == r * 1000 + i, "gatherv");
	MPI_OK(MPI_Allgatherv(a, cnt[me], MPI_INT, b, cnt, dsp, MPI_INT, c));
	for (int r = 0; r < np; r++)
		for (int i = 0; i < cnt[r]; i++)
			CHECK(b[dsp[r] + i] == r * 1000 + i, "allgatherv");
	/* Scatter family from the last rank. */
	for (int r = 0; r < np; r++)
		for (int i = 0; i < n; i++)
			a[r * n + i] = r * 7 + i;
	MPI_OK(MPI_Scatter(a, n, MPI_INT, b, n, MPI_INT, np - 1, c));
	for (int i = 0; i < n; i++)
		CHECK(b[i] == me * 7 + i, "scatter[%d]", i);
	MPI_OK(MPI_Scatterv(a, cnt, dsp, MPI_INT, b, cnt[me], MPI_INT, np - 1,
			    c));
	for (int i = 0; i < cnt[me]; i++)
		CHECK(b[i] == a[dsp[me] + i], "scatterv[%d]", i);
	/* All-to-all family: block for rank d from rank s holds s*100+d. */
	for (int d = 0; d < np; d++)
		for (int i = 0; i < n; i++)
			a[d * n + i] = me * 100 + d + i;
	MPI_OK(MPI_Alltoall(a, n, MPI_INT, b, n, MPI_INT, c));
	for (int s = 0; s < np; s++)
		for (int i = 0; i < n; i++)
			CHECK(b[s * n + i] == s * 100 + me + i, "alltoall");
	for (int r = 0; r < np; r++) {
		cnt[r] = n;
		dsp[r] = r * n;
		wdsp[r] = r * n * (int)sizeof(int);
		wt[r] = MPI_INT;
	}
	memset(b, 0, (size_t)n * np * sizeof(int));
	MPI_OK(MPI_Alltoallv(a, cnt, dsp, MPI_INT, b, cnt, dsp, MPI_INT, c));
	for (int s = 0; s < np; s++)
		CHECK(b[s * n] == s * 100 + me, "alltoallv");
	memset(b, 0, (size_t)n * np * sizeof(int));
	MPI_OK(MPI_Alltoallw(a, cnt, wdsp, wt, b, cnt, wdsp, wt, c));
	for (int s = 0; s < np; s++)
		CHECK(b[s * n + n - 1] == s * 100 + me + n - 1, "alltoallw");
	/* Reduce-scatter: every rank gives d for block d. */
	for (int d = 0; d < np; d++)
		for (int i = 0; i < n; i++)
			a[d * n + i] = d + i;
	MPI_OK(MPI_Reduce_scatter_block(a, b, n, MPI_INT, MPI_SUM, c));
	for (int i = 0; i < n; i++)
		CHECK(b[i] == np * (me + i), "reduce_scatter_block[%d]", i);
	MPI_OK(MPI_Reduce_scatter(a, b, cnt, MPI_INT, MPI_SUM, c));
	for (int i = 0; i < n; i++)
		CHECK(b[i] == np * (me + i), "reduce_scatter[%d]", i);
	free(a);
	free(b);
	free(cnt);
	free(dsp);
	free(wdsp);
	free(wt);
}

static void communicators(void)
{
	MPI_Comm half, dup;
	MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half));
	int hr, hs;
	MPI_Comm_rank(half, &hr);
	MPI_Comm_size(half, &hs);
	CHECK(hs == (size + 1 - rank % 2) / 2, "split size %d", hs);
	collectives(half, 5);
	MPI_OK(MPI_Comm_dup(half, &dup));
	collectives(dup, 300);
	/* Same tag, same ranks, other communicator: never mixed up. */
	int to = (hr + 1) % hs, from = (hr + hs - 1) % hs, x = 1, y = 2, u, v;
	MPI_Request r[4];
	MPI_OK(MPI_Irecv(&u, 1, MPI_INT, from, 9, half, &r[0]));
	MPI_OK(MPI_Irecv(&v, 1, MPI_INT, from, 9, dup, &r[1]));
	MPI_OK(MPI_Isend(&y, 1, MPI_INT, to, 9, dup, &r[2]));
	MPI_OK(MPI_Isend(&x, 1, MPI_INT, to, 9, half, &r[3]));
	MPI_OK(MPI_Waitall(4, r, MPI_STATUSES_IGNORE));
	CHECK(u == 1 && v == 2, "communicators mixed: %d %d", u, v);
	MPI_OK(MPI_Comm_free(&dup));
	MPI_OK(MPI_Comm_free(&half));

	/* Many communicators alive at once, each used. */
	enum { MANY = 300 };
	static MPI_Comm cs[MANY];
	for (int i = 0; i < MANY; i++)
		MPI_OK(MPI_Comm_dup(i ? cs[i - 1] : MPI_COMM_WORLD, &cs[i]));
	for (int i = MANY - 1; i >= 0; i--) {
		int s = 0, one = i;
		MPI_OK(MPI_Allreduce(&one, &s, 1, MPI_INT, MPI_SUM, cs[i]));
		CHECK(s == i * size, "comm %d allreduce %d", i, s);
	}
	for (int i = 0; i < MANY; i++)
		MPI_OK(MPI_Comm_free(&cs[i]));
}

int main(int argc, char **argv)
{
	MPI_OK(MPI_Init(&argc, &argv));
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int ns[] = { 1, 3, 1000, 70000 };
	for (unsigned i = 0; i < sizeof ns / sizeof *ns; i++)
		collectives(MPI_COMM_WORLD, ns[i]);
	communicators();
	if (rank == 0)
		printf("mpi_coll: %d processes OK\n", size);
	MPI_OK(MPI_Finalize());
	return 0;
}
