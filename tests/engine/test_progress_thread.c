/*
 * With MRAIL_PROGRESS_THREAD=1 a rendezvous message completes while the
 * receiving application sleeps without calling the library: the first
 * mrail_test() after the sleep must find it complete. (Without the thread,
 * one test() call cannot move 16 MiB, and this test fails.)
 */
#include "harness.h"

#include <unistd.h>

enum { LEN = 16 << 20, TAG = 5, TAG_GO = 6 };

int main(void)
{
	mrail_engine_t *e = test_engine();
	uint32_t me = mrail_rank(e);
	uint8_t *buf = malloc(LEN);
	mrail_request_t *r, *go;
	mrail_status_t st;

	CHECK_EQ(mrail_size(e), 2);
	CHECK(buf);
	if (me == 1) {
		CHECK_RC(mrail_irecv(e, 0, buf, LEN, TAG, MRAIL_TAG_MASK_ALL, &r));
		CHECK_RC(mrail_isend(e, 0, NULL, 0, TAG_GO, &go));
		CHECK_RC(mrail_wait(e, go, NULL));
		sleep(3); /* no library call: only the progress thread runs */
		int rc = mrail_test(e, r, &st);
		if (rc == MRAIL_ERR_AGAIN) {
			fprintf(stderr, "receive did not progress while the "
				"application slept\n");
			return 1;
		}
		CHECK_RC(rc);
		CHECK_RC(st.error);
		CHECK_EQ(st.length, LEN);
		CHECK_EQ(pattern_check(buf, LEN, 99), LEN);
	} else {
		pattern_fill(buf, LEN, 99);
		CHECK_RC(mrail_irecv(e, 1, NULL, 0, TAG_GO, MRAIL_TAG_MASK_ALL, &go));
		CHECK_RC(mrail_wait(e, go, NULL));
		CHECK_RC(mrail_isend(e, 1, buf, LEN, TAG, &r));
		CHECK_RC(mrail_wait(e, r, &st));
		CHECK_RC(st.error);
	}
	test_barrier(e);
	free(buf);
	CHECK_RC(mrail_engine_destroy(e));
	return 0;
}
