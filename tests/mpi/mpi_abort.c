/* The last rank aborts while the others wait for it in a receive: mpirun
 * must end the job and report it (the test script checks, under a
 * timeout, that nothing hangs). */
#include "mpi_check.h"

int main(int argc, char **argv)
{
	int rank, size, v;
	MPI_OK(MPI_Init(&argc, &argv));
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	if (rank == size - 1) {
		fprintf(stderr, "mpi_abort: rank %d aborts\n", rank);
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	MPI_Recv(&v, 1, MPI_INT, size - 1, 1, MPI_COMM_WORLD,
		 MPI_STATUS_IGNORE);
	MPI_Finalize();
	return 0;
}
