/*
 * An engine destroyed while a rendezvous send is still in flight (the
 * receiver has the RTS but never posted a receive) must free that request
 * without touching the gate it belonged to: before the fix, requests_fini
 * unlinked it from the already freed gate's list (heap-use-after-free,
 * seen under ASan; found by tests/fuzz/fuzz_engine). The receiver then
 * sees the sender leave and its own pending receive end.
 */
#include "standalone.h"

enum { BIG = 4 << 20, TAG_BIG = 1, TAG_NEVER = 2 };

static int job(mrail_engine_t *e, uint32_t rank, uint32_t n)
{
	mrail_request_t *r;
	mrail_status_t st;

	job_barrier(e, rank, n, NULL);
	if (rank == 0) {
		static uint8_t buf[BIG];
		CHECK_RC(mrail_isend(e, 1, buf, sizeof buf, TAG_BIG, &r));
		for (int i = 0; i < 100; i++)
			mrail_progress(e);
		/* Never answered: still pending when the engine goes. */
		CHECK_EQ(mrail_test(e, r, &st), MRAIL_ERR_AGAIN);
		return 0; /* job_child destroys the engine */
	}
	CHECK_RC(mrail_irecv(e, 0, NULL, 0, TAG_NEVER, MRAIL_TAG_MASK_ALL, &r));
	/* It must end (the sender left), whatever status it gets. */
	int rc = mrail_wait(e, r, &st);
	printf("receiver: pending receive ended: %s, status %s\n",
	       mrail_strerror(rc), mrail_strerror(st.error));
	/* Stay longer than the sender's finalize timeout: its gate must
	 * still be up, the send still in flight, when it frees the gate. */
	usleep(1000 * 1000);
	return 0;
}

int main(void)
{
	int status[2];
	setenv("MRAIL_FINALIZE_TIMEOUT", "0.2", 1);
	job_run(2, job, status);
	for (int i = 0; i < 2; i++)
		CHECK(WIFEXITED(status[i]) && WEXITSTATUS(status[i]) == 0);
	printf("ok\n");
	return 0;
}
