/*
 * The automatic eager/rendezvous switch follows the driver's
 * eager_max_hint where that is above the engine's default (32 KiB): two
 * processes of one host, default settings, talk over shm, whose hint is
 * 64 KiB, so a 65536-byte message goes eager and 65537 bytes go
 * rendezvous: the receiver counts a chunk received or read (by default
 * shm reads rendezvous payloads, tcp receives them), eager has neither.
 * TEST_EXPECT_EAGER_MAX: the switch expected (meson sets it with
 * MRAIL_EAGER_MAX=32768, where the user's value must win, and for tcp,
 * whose hint is the default). Payloads are checked.
 */
#include "harness.h"

static uint64_t chunks(mrail_engine_t *e, uint32_t peer)
{
	struct mrail_rail_stats st;
	CHECK_RC(mrail_rail_stats(e, peer, 0, &st));
	return st.rx_chunks + st.rma_reads;
}

static int goes_rendezvous(mrail_engine_t *e, uint32_t me, size_t len)
{
	static uint8_t buf[1 << 17];
	mrail_request_t *r;
	mrail_status_t st;
	uint64_t before = chunks(e, 1 - me);
	if (me == 0) {
		pattern_fill(buf, len, len);
		CHECK_RC(mrail_isend(e, 1, buf, len, 9, &r));
	} else {
		memset(buf, 0, len);
		CHECK_RC(mrail_irecv(e, 0, buf, len, 9, MRAIL_TAG_MASK_ALL, &r));
	}
	CHECK_RC(mrail_wait(e, r, &st));
	if (me == 1) {
		CHECK_EQ(st.length, len);
		CHECK_EQ(pattern_check(buf, len, len), len);
	}
	test_barrier(e);
	return me == 0 ? -1 : chunks(e, 1 - me) > before;
}

int main(void)
{
	const char *want_driver = getenv("TEST_EXPECT_DRIVER");
	const char *want = getenv("TEST_EXPECT_EAGER_MAX");
	size_t eager_max = want ? strtoull(want, NULL, 0) : 65536;
	mrail_engine_t *e = test_engine();
	uint32_t me = mrail_rank(e);
	struct mrail_rail_stats rs;

	CHECK_EQ(mrail_size(e), 2);
	CHECK_RC(mrail_rail_stats(e, 1 - me, 0, &rs));
	if (strcmp(rs.driver, want_driver ? want_driver : "shm")) {
		fprintf(stderr, "rail 0 runs over %s, not %s\n", rs.driver,
			want_driver ? want_driver : "shm");
		return 1;
	}
	/* Rank 1, the receiver, judges (-1 on rank 0). */
	int no = me == 0 ? -1 : 0, yes = me == 0 ? -1 : 1;
	CHECK_EQ(goes_rendezvous(e, me, 32768), no);
	CHECK_EQ(goes_rendezvous(e, me, eager_max), no);
	CHECK_EQ(goes_rendezvous(e, me, eager_max + 1), yes);
	CHECK_EQ(goes_rendezvous(e, me, 65537), yes);
	CHECK_RC(mrail_engine_destroy(e));
	return 0;
}
