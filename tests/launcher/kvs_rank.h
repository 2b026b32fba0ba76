/* Shared by the parts of the kvs_rank test program. */
#ifndef MRAIL_TEST_KVS_RANK_H
#define MRAIL_TEST_KVS_RANK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                  \
	do {                                                              \
		if (!(cond)) {                                            \
			fprintf(stderr, "kvs_rank %s:%d: check failed: %s: ",   \
				__FILE__, __LINE__, #cond);               \
			fprintf(stderr, __VA_ARGS__);                     \
			fputc('\n', stderr);                              \
			exit(1);                                          \
		}                                                         \
	} while (0)

/* stray.c: hostile and broken connections to MRAIL_KVS_ADDR; exits 1 if
 * the service does not refuse one of them. */
void stray_connections(void);
/* stray.c: a second connection claiming `rank` must be refused. */
void stray_duplicate_rank(unsigned rank);

#endif
