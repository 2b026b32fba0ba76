/* Shared helpers of the MPI test programs (written to the MPI standard,
 * not to any one implementation). */
#ifndef MPI_CHECK_H
#define MPI_CHECK_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                  \
	do {                                                              \
		if (!(cond)) {                                            \
			int r_;                                           \
			MPI_Comm_rank(MPI_COMM_WORLD, &r_);               \
			fprintf(stderr, "FAIL rank %d %s:%d: ", r_,       \
				__FILE__, __LINE__);                      \
			fprintf(stderr, __VA_ARGS__);                     \
			fputc('\n', stderr);                              \
			MPI_Abort(MPI_COMM_WORLD, 1);                     \
		}                                                         \
	} while (0)

#define MPI_OK(call)                                                      \
	do {                                                              \
		int rc_ = (call);                                         \
		CHECK(rc_ == MPI_SUCCESS, "%s returned %d", #call, rc_);  \
	} while (0)

#endif
