/* A minimal application, built against the installed library. */
#include <mrail.h>
#include <stdio.h>

int main(void)
{
	mrail_engine_t *e;
	mrail_request_t *r[2];
	mrail_status_t st[2];
	int rc = mrail_engine_create(NULL, &e);
	if (rc) {
		fprintf(stderr, "create: %s\n", mrail_strerror(rc));
		return 1;
	}
	unsigned me = mrail_rank(e), n = mrail_size(e);
	unsigned out = me, in = 99;
	mrail_irecv(e, (me + n - 1) % n, &in, sizeof in, 1, MRAIL_TAG_MASK_ALL, &r[0]);
	mrail_isend(e, (me + 1) % n, &out, sizeof out, 1, &r[1]);
	rc = mrail_wait_all(e, 2, r, st);
	mrail_engine_destroy(e);
	return rc || in != (me + n - 1) % n;
}
