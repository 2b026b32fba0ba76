/*
 * A job whose rank 1 fails right after wire-up: it exits with status 3
 * while the others sleep. The launcher must notice, end the job and exit
 * non-zero. Each rank writes its pid to $PMIX_FAIL_DIR/RANK.pid so the test
 * can check that none is left behind.
 */
#include <mrail.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
	const char *dir = getenv("PMIX_FAIL_DIR");
	mrail_engine_t *e;
	char path[4096];
	int rc = mrail_engine_create(NULL, &e);

	if (rc != MRAIL_OK) {
		fprintf(stderr, "pmix_fail: engine: %s\n", mrail_strerror(rc));
		return 1;
	}
	unsigned rank = mrail_rank(e), size = mrail_size(e);
	if (dir) {
		snprintf(path, sizeof path, "%s/%u.pid", dir, rank);
		FILE *f = fopen(path, "w");
		if (f) {
			fprintf(f, "%d\n", (int)getpid());
			fclose(f);
		}
	}
	printf("pmix_fail: rank %u of %u up\n", rank, size);
	fflush(stdout);
	if (size < 2) {
		fprintf(stderr, "pmix_fail: only %u rank(s): no bootstrap?\n",
			size);
		return 1;
	}
	/* Every connection is up before rank 1 goes (zero-byte exchange). */
	mrail_request_t **rq = calloc(2 * (size_t)size, sizeof *rq);
	for (unsigned p = 0; p < size && rq; p++) {
		if (p == rank)
			continue;
		if (mrail_irecv(e, p, NULL, 0, 7, MRAIL_TAG_MASK_ALL,
				&rq[2 * p]) ||
		    mrail_isend(e, p, NULL, 0, 7, &rq[2 * p + 1]))
			return 1;
	}
	if (!rq || mrail_wait_all(e, 2 * (size_t)size, rq, NULL) != MRAIL_OK) {
		fprintf(stderr, "pmix_fail: rank %u: exchange failed\n", rank);
		return 1;
	}
	free(rq);
	if (rank == 1)
		exit(3); /* no engine destroy: a crash-like end */
	sleep(60);
	mrail_engine_destroy(e);
	return 0;
}
