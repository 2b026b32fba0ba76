/*
 * Point-to-point semantics: matching order, wildcards, probes, matched
 * probes, cancel of receives and sends, synchronous send, truncation,
 * derived datatypes (many small and few large blocks).
 * usage: mpi_p2p [large]   ("large": one message of 256 MiB + 1 byte)
 */
#include "mpi_check.h"

#include <stdint.h>
#include <stddef.h>
#include <string.h>

static int rank, size;

/* Messages from one sender with one tag arrive in send order, also
 * mixed sizes (eager and rendezvous) and through ANY_SOURCE. */
static void test_order(void)
{
	enum { N = 50 };
	static int big[N][20000];
	MPI_Request rq[2 * N];
	int nr = 0;
	int peer_to = (rank + 1) % size, peer_from = (rank + size - 1) % size;

	for (int i = 0; i < N; i++) {
		big[i][0] = i;
		int cnt = (i % 5 == 0) ? 20000 : 1 + i;
		MPI_OK(MPI_Isend(big[i], cnt, MPI_INT, peer_to, 7,
				 MPI_COMM_WORLD, &rq[nr++]));
	}
	static int in[N][20000];
	for (int i = 0; i < N; i++)
		MPI_OK(MPI_Irecv(in[i], 20000, MPI_INT,
				 i % 2 ? peer_from : MPI_ANY_SOURCE, 7,
				 MPI_COMM_WORLD, &rq[nr++]));
	MPI_OK(MPI_Waitall(nr, rq, MPI_STATUSES_IGNORE));
	for (int i = 0; i < N; i++)
		CHECK(in[i][0] == i, "order: message %d carries %d", i,
		      in[i][0]);
}

/* ANY_SOURCE / ANY_TAG report the real envelope; an ANY_TAG receive
 * posted before collectives run must not take their internal messages. */
static void test_wildcards(void)
{
	MPI_Request r = MPI_REQUEST_NULL;
	int v = -1;
	if (rank == 0)
		MPI_OK(MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG,
				 MPI_COMM_WORLD, &r));
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	int x = rank, s = 0;
	MPI_OK(MPI_Allreduce(&x, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
	CHECK(s == size * (size - 1) / 2, "allreduce under ANY_TAG: %d", s);
	if (rank == size - 1) {
		int t = 4242;
		MPI_OK(MPI_Send(&t, 1, MPI_INT, 0, 99, MPI_COMM_WORLD));
	}
	if (rank == 0) {
		MPI_Status st;
		MPI_OK(MPI_Wait(&r, &st));
		CHECK(v == 4242 && st.MPI_SOURCE == size - 1 &&
			      st.MPI_TAG == 99,
		      "ANY/ANY got %d from %d tag %d", v, st.MPI_SOURCE,
		      st.MPI_TAG);
	}
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	/* Every other rank sends two tags; rank 0 takes them in any order. */
	if (rank != 0) {
		int m[2] = { rank * 10, rank * 10 + 1 };
		MPI_OK(MPI_Send(&m[0], 1, MPI_INT, 0, 1000 + rank,
				MPI_COMM_WORLD));
		MPI_OK(MPI_Send(&m[1], 1, MPI_INT, 0, 2000 + rank,
				MPI_COMM_WORLD));
	} else {
		int seen = 0;
		for (int i = 0; i < 2 * (size - 1); i++) {
			MPI_Status st;
			int m;
			MPI_OK(MPI_Recv(&m, 1, MPI_INT, MPI_ANY_SOURCE,
					MPI_ANY_TAG, MPI_COMM_WORLD, &st));
			int src = st.MPI_SOURCE, which = st.MPI_TAG >= 2000;
			CHECK(src > 0 && src < size &&
				      st.MPI_TAG == (which ? 2000 : 1000) + src &&
				      m == src * 10 + which,
			      "wildcard recv: %d from %d tag %d", m, src,
			      st.MPI_TAG);
			seen++;
		}
		CHECK(seen == 2 * (size - 1), "wildcard count");
	}
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
}

static void test_probes(void)
{
	int to = (rank + 1) % size, from = (rank + size - 1) % size;
	for (int k = 0; k < 3; k++) {
		int n = k == 0 ? 3 : k == 1 ? 5000 : 300000;
		int *out = malloc(n * sizeof *out);
		for (int i = 0; i < n; i++)
			out[i] = rank + i;
		MPI_Request r;
		MPI_OK(MPI_Isend(out, n, MPI_INT, to, 50 + k, MPI_COMM_WORLD,
				 &r));
		MPI_Status st;
		int cnt, flag = 0;
		/* Probe, then Iprobe: the message stays queued. */
		MPI_OK(MPI_Probe(from, 50 + k, MPI_COMM_WORLD, &st));
		MPI_OK(MPI_Get_count(&st, MPI_INT, &cnt));
		CHECK(cnt == n && st.MPI_SOURCE == from, "probe count %d", cnt);
		while (!flag)
			MPI_OK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG,
					  MPI_COMM_WORLD, &flag, &st));
		CHECK(st.MPI_TAG == 50 + k, "iprobe tag %d", st.MPI_TAG);
		/* Mprobe takes it: an Iprobe no longer sees it. */
		MPI_Message msg;
		if (k == 1) {
			flag = 0;
			while (!flag)
				MPI_OK(MPI_Improbe(from, MPI_ANY_TAG,
						   MPI_COMM_WORLD, &flag, &msg,
						   &st));
		} else {
			MPI_OK(MPI_Mprobe(MPI_ANY_SOURCE, 50 + k,
					  MPI_COMM_WORLD, &msg, &st));
		}
		MPI_OK(MPI_Get_count(&st, MPI_INT, &cnt));
		CHECK(cnt == n, "mprobe count %d", cnt);
		MPI_OK(MPI_Iprobe(from, 50 + k, MPI_COMM_WORLD, &flag,
				  MPI_STATUS_IGNORE));
		CHECK(!flag, "message still visible after mprobe");
		int *in = malloc(n * sizeof *in);
		if (k == 2) {
			MPI_Request mr;
			MPI_OK(MPI_Imrecv(in, n, MPI_INT, &msg, &mr));
			MPI_OK(MPI_Wait(&mr, &st));
		} else {
			MPI_OK(MPI_Mrecv(in, n, MPI_INT, &msg, &st));
		}
		for (int i = 0; i < n; i++)
			CHECK(in[i] == from + i, "mrecv data at %d", i);
		MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
		free(in);
		free(out);
	}
	/* PROC_NULL: probes find an empty message at once. */
	MPI_Status st;
	MPI_OK(MPI_Probe(MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st));
	CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "probe PROC_NULL");
	MPI_OK(MPI_Send(NULL, 0, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD));
	MPI_OK(MPI_Recv(NULL, 0, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD,
			&st));
	CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG,
	      "recv PROC_NULL");
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
}

static void test_cancel(void)
{
	int v = 0, flag;
	MPI_Request r;
	MPI_Status st;
	/* Never sent: cancel wins. */
	MPI_OK(MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 777, MPI_COMM_WORLD,
			 &r));
	MPI_OK(MPI_Cancel(&r));
	MPI_OK(MPI_Wait(&r, &st));
	MPI_OK(MPI_Test_cancelled(&st, &flag));
	CHECK(flag, "unmatched receive not canceled");
	/* Already matched (the Ssend completed): cancel loses, data stay. */
	int to = (rank + 1) % size, from = (rank + size - 1) % size;
	MPI_OK(MPI_Irecv(&v, 1, MPI_INT, from, 778, MPI_COMM_WORLD, &r));
	int x = 100 + rank;
	MPI_OK(MPI_Ssend(&x, 1, MPI_INT, to, 778, MPI_COMM_WORLD));
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	MPI_OK(MPI_Cancel(&r));
	MPI_OK(MPI_Wait(&r, &st));
	MPI_OK(MPI_Test_cancelled(&st, &flag));
	CHECK(!flag && v == 100 + from, "matched receive: cancelled %d v %d",
	      flag, v);
}

/* Issend cannot complete before the receive is posted: the receiver
 * posts it only after a go-ahead sent once we have tested. */
static void test_ssend(void)
{
	if (size < 2)
		return;
	int x = 5, go = 1;
	if (rank == 0) {
		MPI_Request r;
		int flag = 0;
		MPI_OK(MPI_Issend(&x, 1, MPI_INT, 1, 300, MPI_COMM_WORLD, &r));
		for (int i = 0; i < 200 && !flag; i++)
			MPI_OK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
		CHECK(!flag, "Issend completed before the receive was posted");
		MPI_OK(MPI_Send(&go, 1, MPI_INT, 1, 301, MPI_COMM_WORLD));
		MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
	} else if (rank == 1) {
		int y;
		MPI_OK(MPI_Recv(&go, 1, MPI_INT, 0, 301, MPI_COMM_WORLD,
				MPI_STATUS_IGNORE));
		MPI_OK(MPI_Recv(&y, 1, MPI_INT, 0, 300, MPI_COMM_WORLD,
				MPI_STATUS_IGNORE));
		CHECK(y == 5, "ssend data %d", y);
	}
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
}

static void test_truncate(void)
{
	int to = (rank + 1) % size, from = (rank + size - 1) % size;
	MPI_Comm c;
	MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
	MPI_OK(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
	int ns[2] = { 100, 1 << 20 };
	for (int k = 0; k < 2; k++) {
		int n = ns[k];
		int *out = calloc(n, sizeof *out), *in = calloc(n, sizeof *in);
		MPI_Request r;
		MPI_Status st;
		for (int i = 0; i < n; i++)
			out[i] = i;
		MPI_OK(MPI_Isend(out, n, MPI_INT, to, 400, c, &r));
		int rc = MPI_Recv(in, n / 2, MPI_INT, from, 400, c, &st);
		int cls = -1;
		MPI_Error_class(rc, &cls);
		CHECK(cls == MPI_ERR_TRUNCATE, "truncation gave class %d", cls);
		for (int i = 0; i < n / 2; i++)
			CHECK(in[i] == i, "truncated data at %d", i);
		MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
		free(in);
		free(out);
	}
	MPI_OK(MPI_Comm_free(&c));
}

/* Non-contiguous on either side: a strided vector (small and large) and
 * a struct with holes, against contiguous buffers. */
static void test_datatypes(void)
{
	int to = (rank + 1) % size, from = (rank + size - 1) % size;
	for (int k = 0; k < 2; k++) {
		int blocks = k ? 100000 : 10;
		MPI_Datatype vec;
		MPI_OK(MPI_Type_vector(blocks, 3, 5, MPI_INT, &vec));
		MPI_OK(MPI_Type_commit(&vec));
		int *strided = calloc((size_t)blocks * 5, sizeof(int));
		int *flat = calloc((size_t)blocks * 3, sizeof(int));
		for (int i = 0; i < blocks * 5; i++)
			strided[i] = i % 5 < 3 ? rank * 7 + i : -1;
		MPI_Request r;
		MPI_OK(MPI_Isend(strided, 1, vec, to, 500, MPI_COMM_WORLD, &r));
		MPI_OK(MPI_Recv(flat, blocks * 3, MPI_INT, from, 500,
				MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
		for (int b = 0; b < blocks; b++)
			for (int j = 0; j < 3; j++)
				CHECK(flat[b * 3 + j] == from * 7 + b * 5 + j,
				      "vector->flat at %d", b * 3 + j);
		/* And back: flat into strided, holes untouched. */
		for (int i = 0; i < blocks * 5; i++)
			strided[i] = -2;
		MPI_OK(MPI_Isend(flat, blocks * 3, MPI_INT, to, 501,
				 MPI_COMM_WORLD, &r));
		MPI_OK(MPI_Recv(strided, 1, vec, from, 501, MPI_COMM_WORLD,
				MPI_STATUS_IGNORE));
		MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
		int fromfrom = (from + size - 1) % size;
		for (int b = 0; b < blocks; b++)
			for (int j = 0; j < 5; j++)
				CHECK(strided[b * 5 + j] ==
					      (j < 3 ? fromfrom * 7 + b * 5 + j
						     : -2),
				      "flat->vector at %d", b * 5 + j);
		free(strided);
		free(flat);
		MPI_OK(MPI_Type_free(&vec));
	}
	struct rec { char c; double d; int i; } out[4], in[4];
	int bl[3] = { 1, 1, 1 };
	MPI_Aint disp[3] = { offsetof(struct rec, c), offsetof(struct rec, d),
			     offsetof(struct rec, i) };
	MPI_Datatype types[3] = { MPI_CHAR, MPI_DOUBLE, MPI_INT }, st, rs;
	MPI_OK(MPI_Type_create_struct(3, bl, disp, types, &st));
	MPI_OK(MPI_Type_create_resized(st, 0, sizeof(struct rec), &rs));
	MPI_OK(MPI_Type_commit(&rs));
	for (int i = 0; i < 4; i++)
		out[i] = (struct rec){ (char)('a' + i), rank + i * 0.5,
				       rank * 100 + i };
	memset(in, 0, sizeof in);
	MPI_OK(MPI_Sendrecv(out, 4, rs, to, 502, in, 4, rs, from, 502,
			    MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	for (int i = 0; i < 4; i++)
		CHECK(in[i].c == 'a' + i && in[i].d == from + i * 0.5 &&
			      in[i].i == from * 100 + i,
		      "struct element %d", i);
	MPI_OK(MPI_Type_free(&rs));
	MPI_OK(MPI_Type_free(&st));
}

/* Few large blocks (the shape an implementation may send as an iovec of
 * user memory): vector->vector with other strides on each side, through a
 * matched probe, and truncated into a vector. 3 blocks of 100000 ints
 * (rendezvous-sized) and 4 of 2000 (eager-sized). */
static void test_big_blocks(void)
{
	int to = (rank + 1) % size, from = (rank + size - 1) % size;
	MPI_Comm c;
	MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
	MPI_OK(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
	int shapes[2][2] = { { 3, 100000 }, { 4, 2000 } };
	for (int k = 0; k < 2; k++) {
		int nb = shapes[k][0], bl = shapes[k][1];
		MPI_Datatype sv, rv;
		/* Sender: gap of one block; receiver: gap of half a block. */
		MPI_OK(MPI_Type_vector(nb, bl, 2 * bl, MPI_INT, &sv));
		MPI_OK(MPI_Type_vector(nb, bl, bl + bl / 2, MPI_INT, &rv));
		MPI_OK(MPI_Type_commit(&sv));
		MPI_OK(MPI_Type_commit(&rv));
		size_t sn = (size_t)nb * 2 * bl, rn = (size_t)nb * (bl + bl / 2);
		int *out = malloc(sn * sizeof(int)), *in = malloc(rn * sizeof(int));
		CHECK(out && in, "no memory");
		for (size_t i = 0; i < sn; i++)
			out[i] = (int)(i % (2 * bl) < (size_t)bl
					       ? rank * 1000003 + (int)i
					       : -1);
		for (int pass = 0; pass < 2; pass++) {
			for (size_t i = 0; i < rn; i++)
				in[i] = -7;
			MPI_Request r;
			MPI_Status st;
			MPI_OK(MPI_Isend(out, 1, sv, to, 510 + pass, c, &r));
			if (pass == 0) {
				MPI_OK(MPI_Recv(in, 1, rv, from, 510, c, &st));
			} else {
				MPI_Message m;
				MPI_OK(MPI_Mprobe(from, 511, c, &m, &st));
				MPI_OK(MPI_Mrecv(in, 1, rv, &m, &st));
			}
			MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
			int cnt;
			MPI_OK(MPI_Get_count(&st, rv, &cnt));
			CHECK(cnt == 1, "big blocks count %d (pass %d)", cnt,
			      pass);
			for (int b = 0; b < nb; b++)
				for (int j = 0; j < bl + bl / 2; j++) {
					size_t i = (size_t)b * (bl + bl / 2) + j;
					int want = j < bl ? from * 1000003 +
								    b * 2 * bl + j
							  : -7;
					CHECK(in[i] == want,
					      "big blocks %dx%d pass %d at %zu: "
					      "%d, not %d", nb, bl, pass, i,
					      in[i], want);
				}
		}
		/* Truncated: only nb-1 blocks fit; MPI_ERR_TRUNCATE, and the
		 * blocks that fit carry the message's start. */
		MPI_Datatype small;
		MPI_OK(MPI_Type_vector(nb - 1, bl, bl + bl / 2, MPI_INT,
				       &small));
		MPI_OK(MPI_Type_commit(&small));
		for (size_t i = 0; i < rn; i++)
			in[i] = -7;
		MPI_Request r;
		MPI_OK(MPI_Isend(out, 1, sv, to, 512, c, &r));
		int rc = MPI_Recv(in, 1, small, from, 512, c, MPI_STATUS_IGNORE);
		int cls = -1;
		MPI_Error_class(rc, &cls);
		CHECK(cls == MPI_ERR_TRUNCATE, "vector truncation class %d", cls);
		for (int j = 0; j < bl; j++)
			CHECK(in[j] == from * 1000003 + j,
			      "truncated vector at %d", j);
		MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
		MPI_OK(MPI_Type_free(&small));
		MPI_OK(MPI_Type_free(&sv));
		MPI_OK(MPI_Type_free(&rv));
		free(out);
		free(in);
	}
	MPI_OK(MPI_Comm_free(&c));
}

/* Cancel of a send: MPI lets the cancel fail, but then the send must be
 * matched and delivered, and a cancelled send must never be received. The
 * receiver posts its receive at once and learns the outcome afterwards;
 * small (eager) and 4 MiB (rendezvous) messages. */
static void test_send_cancel(void)
{
	int to = (rank + 1) % size, from = (rank + size - 1) % size;
	int ns[2] = { 4, 1 << 20 };
	for (int k = 0; k < 2; k++) {
		int n = ns[k], *out = malloc(n * sizeof(int)),
		    *in = malloc(n * sizeof(int));
		CHECK(out && in, "no memory");
		for (int i = 0; i < n; i++) {
			out[i] = rank + i;
			in[i] = -1;
		}
		MPI_Request rr, sr;
		MPI_Status st;
		int cancelled, peer_cancelled, flag;
		MPI_OK(MPI_Irecv(in, n, MPI_INT, from, 520, MPI_COMM_WORLD,
				 &rr));
		MPI_OK(MPI_Isend(out, n, MPI_INT, to, 520, MPI_COMM_WORLD,
				 &sr));
		MPI_OK(MPI_Cancel(&sr));
		MPI_OK(MPI_Wait(&sr, &st));
		MPI_OK(MPI_Test_cancelled(&st, &cancelled));
		MPI_OK(MPI_Sendrecv(&cancelled, 1, MPI_INT, to, 521,
				    &peer_cancelled, 1, MPI_INT, from, 521,
				    MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		if (peer_cancelled) {
			MPI_OK(MPI_Cancel(&rr));
			MPI_OK(MPI_Wait(&rr, &st));
			MPI_OK(MPI_Test_cancelled(&st, &flag));
			CHECK(flag && in[0] == -1,
			      "a cancelled send was received (n %d)", n);
		} else {
			MPI_OK(MPI_Wait(&rr, &st));
			for (int i = 0; i < n; i++)
				CHECK(in[i] == from + i,
				      "send not cancelled but data lost at %d "
				      "(n %d)", i, n);
		}
		if (rank == 0)
			printf("send cancel, %d ints: %s\n", n,
			       cancelled ? "cancelled" : "not cancelled "
							 "(delivered)");
		free(out);
		free(in);
	}
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
}

/* One message larger than 256 MiB, rank 0 to rank 1, checked end to end. */
static void test_large(void)
{
	size_t n = ((size_t)256 << 20) + 1;
	unsigned char *b = malloc(n);
	CHECK(b, "no memory for %zu bytes", n);
	if (rank == 0) {
		for (size_t i = 0; i < n; i++)
			b[i] = (unsigned char)(i * 31 + 7);
		MPI_OK(MPI_Send(b, (int)n, MPI_BYTE, 1, 600, MPI_COMM_WORLD));
	} else if (rank == 1) {
		MPI_Status st;
		int cnt;
		memset(b, 0, n);
		MPI_OK(MPI_Recv(b, (int)n, MPI_BYTE, 0, 600, MPI_COMM_WORLD,
				&st));
		MPI_OK(MPI_Get_count(&st, MPI_BYTE, &cnt));
		CHECK((size_t)cnt == n, "large count %d", cnt);
		for (size_t i = 0; i < n; i++)
			CHECK(b[i] == (unsigned char)(i * 31 + 7),
			      "large data at %zu", i);
	}
	free(b);
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
}

int main(int argc, char **argv)
{
	MPI_OK(MPI_Init(&argc, &argv));
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc > 1 && !strcmp(argv[1], "large")) {
		CHECK(size >= 2, "large needs 2 processes");
		test_large();
	} else {
		test_order();
		test_wildcards();
		test_probes();
		test_cancel();
		test_ssend();
		test_truncate();
		test_datatypes();
		test_big_blocks();
		test_send_cancel();
	}
	if (rank == 0)
		printf("mpi_p2p %s: %d processes OK\n",
		       argc > 1 ? argv[1] : "semantics", size);
	MPI_OK(MPI_Finalize());
	return 0;
}
