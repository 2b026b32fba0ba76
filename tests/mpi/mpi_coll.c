/*
 * Every blocking collective (at whatever size the job has, non-powers of
 * two included), small and large counts; communicator split and dup; many
 * communicators alive at once; neighborhood collectives on a ring and
 * collectives across an intercommunicator.
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

/* Neighborhood collectives on a periodic ring (a 1-D Cartesian
 * communicator: left and right neighbours; on 2 processes both are the
 * same rank, and which of its two blocks lands in which slot is left to
 * the implementation, so only the pair is checked), then collectives
 * across an
 * intercommunicator between the even and the odd ranks. */
static void neighbours_and_inter(void)
{
	MPI_Comm ring;
	int dims[1] = { size }, periods[1] = { 1 }, me, left, right;
	MPI_OK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring));
	MPI_Comm_rank(ring, &me);
	MPI_OK(MPI_Cart_shift(ring, 0, 1, &left, &right));
#define A2A_OK(in)                                                        \
	(left != right ? (in)[0] == left * 10 + 1 && (in)[1] == right * 10 \
		       : (in)[0] + (in)[1] == left * 20 + 1 &&             \
				 (in)[0] != (in)[1])
	int out[2] = { me * 10, me * 10 + 1 }, in[4] = { -1, -1, -1, -1 };
	MPI_OK(MPI_Neighbor_allgather(out, 1, MPI_INT, in, 1, MPI_INT, ring));
	CHECK(in[0] == left * 10 && in[1] == right * 10,
	      "neighbor_allgather %d %d", in[0], in[1]);
	/* Block 0 goes to the left neighbour, block 1 to the right one. */
	MPI_OK(MPI_Neighbor_alltoall(out, 1, MPI_INT, in, 1, MPI_INT, ring));
	CHECK(A2A_OK(in), "neighbor_alltoall %d %d", in[0], in[1]);
	int cnt[2] = { 1, 1 }, dsp[2] = { 0, 1 };
	MPI_OK(MPI_Neighbor_allgatherv(out, 1, MPI_INT, in, cnt, dsp, MPI_INT,
				       ring));
	CHECK(in[0] == left * 10 && in[1] == right * 10, "neighbor_allgatherv");
	MPI_OK(MPI_Neighbor_alltoallv(out, cnt, dsp, MPI_INT, in, cnt, dsp,
				      MPI_INT, ring));
	CHECK(A2A_OK(in), "neighbor_alltoallv");
	MPI_Aint wd[2] = { 0, sizeof(int) };
	MPI_Datatype wt[2] = { MPI_INT, MPI_INT };
	MPI_OK(MPI_Neighbor_alltoallw(out, cnt, wd, wt, in, cnt, wd, wt, ring));
	CHECK(A2A_OK(in), "neighbor_alltoallw");
#undef A2A_OK
	MPI_OK(MPI_Comm_free(&ring));

	if (size < 2)
		return;
	MPI_Comm half, inter;
	int color = rank % 2;
	MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half));
	/* Leaders: world rank 0 (evens) and 1 (odds). */
	MPI_OK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - color, 77,
				    &inter));
	int hr, rs;
	MPI_Comm_rank(half, &hr);
	MPI_Comm_remote_size(inter, &rs);
	MPI_OK(MPI_Barrier(inter));
	/* Allreduce across: each side gets the sum over the other side. */
	int v = rank, sum = -1, want = 0;
	for (int r = 1 - color; r < size; r += 2)
		want += r;
	MPI_OK(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, inter));
	CHECK(sum == want, "intercomm allreduce %d, not %d", sum, want);
	/* Bcast from the evens' leader to the odds. */
	int b = color == 0 && hr == 0 ? 4242 : -1;
	int root = color == 0 ? (hr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
	MPI_OK(MPI_Bcast(&b, 1, MPI_INT, root, inter));
	if (color == 1)
		CHECK(b == 4242, "intercomm bcast %d", b);
	/* Allgather across: every process gets the other side's ranks. */
	int *all = malloc(rs * sizeof(int));
	CHECK(all, "no memory");
	MPI_OK(MPI_Allgather(&v, 1, MPI_INT, all, 1, MPI_INT, inter));
	for (int i = 0; i < rs; i++)
		CHECK(all[i] == 2 * i + 1 - color, "intercomm allgather[%d] %d",
		      i, all[i]);
	free(all);
	MPI_OK(MPI_Comm_free(&inter));
	MPI_OK(MPI_Comm_free(&half));
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
	neighbours_and_inter();
	if (rank == 0)
		printf("mpi_coll: %d processes OK\n", size);
	MPI_OK(MPI_Finalize());
	return 0;
}
