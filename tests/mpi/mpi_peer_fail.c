/*
 * A peer that dies fails only the requests that involve it. The last rank
 * leaves abruptly (_exit, no MPI_Finalize) once everyone is connected; on
 * a communicator with MPI_ERRORS_RETURN, rank 0's receive from it must
 * complete with an error (not hang, not abort the job), and ranks 0 and 1
 * must still exchange messages afterwards; rank 1's large send to it fails
 * the same way. Errors are of class MPI_ERR_INTERN. Run under mpirun
 * --enable-recovery (else mpirun itself kills the job when a rank dies).
 * The survivors cannot MPI_Finalize (its fence includes the dead rank):
 * they report and leave with _exit.
 */
#include "mpi_check.h"

#include <unistd.h>

int main(int argc, char **argv)
{
	int rank, size;
	MPI_OK(MPI_Init(&argc, &argv));
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	CHECK(size >= 3, "needs 3 processes");
	MPI_Comm c;
	MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
	MPI_OK(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
	int dead = size - 1, v = 0;
	/* Everyone talks to everyone once, so connections exist. */
	MPI_OK(MPI_Allreduce(&rank, &v, 1, MPI_INT, MPI_SUM, c));
	MPI_OK(MPI_Barrier(c));
	if (rank == dead) {
		fflush(stdout);
		_exit(0);
	}
	if (rank == 0) {
		MPI_Request r;
		MPI_Status st;
		int x = -1;
		MPI_OK(MPI_Irecv(&x, 1, MPI_INT, dead, 5, c, &r));
		int rc = MPI_Wait(&r, &st);
		int cls = -1;
		MPI_Error_class(rc, &cls);
		CHECK(rc != MPI_SUCCESS && x == -1 && cls == MPI_ERR_INTERN,
		      "receive from a dead peer returned %d (class %d)", rc,
		      cls);
		printf("receive from the dead rank: MPI_ERR_INTERN\n");
	}
	if (rank == 1) {
		/* Large enough that no implementation buffers it whole. */
		size_t n = 16 << 20;
		char *b = calloc(n, 1);
		CHECK(b, "no memory");
		int rc = MPI_Send(b, (int)n, MPI_BYTE, dead, 5, c), cls = -1;
		MPI_Error_class(rc, &cls);
		CHECK(cls == MPI_ERR_INTERN,
		      "16 MiB send to a dead peer returned %d (class %d)", rc,
		      cls);
		free(b);
	}
	/* The living pair still works. */
	if (rank <= 1) {
		int y = 0, peer = 1 - rank;
		MPI_OK(MPI_Sendrecv(&rank, 1, MPI_INT, peer, 6, &y, 1, MPI_INT,
				    peer, 6, c, MPI_STATUS_IGNORE));
		CHECK(y == peer, "survivors' exchange gave %d", y);
	}
	if (rank == 0)
		printf("mpi_peer_fail: %d processes OK\n", size);
	fflush(stdout);
	_exit(0);
}
