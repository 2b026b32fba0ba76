/*
 * MPI matching semantics between real processes (mrail-run -n 3):
 * non-overtaking order across eager and rendezvous, unexpected buffering,
 * tag masks, any-source, truncation, zero-byte, iovec, cancel, wait_any,
 * messages to self.
 */
#include "harness.h"

#include <unistd.h>

enum { TAG_ORDER = 7, TAG_ANY = 9, TAG_TRUNC = 11, TAG_ZERO = 12,
       TAG_IOV = 13, TAG_CANCEL = 99, TAG_A = 20, TAG_B = 21,
       TAG_SYNC = 22, TAG_SELF = 30 };

static size_t order_size(int i)
{
	/* Mixed eager and rendezvous so both must respect send order. */
	return i % 10 == 0 ? 100000 + (size_t)i : (size_t)(i * 37 % 3000);
}

static void test_order(mrail_engine_t *e, uint32_t me)
{
	enum { N = 200 };
	if (me == 0) {
		mrail_request_t *rq[N];
		char *bufs[N];
		for (int i = 0; i < N; i++) {
			bufs[i] = malloc(order_size(i) + 1);
			pattern_fill(bufs[i], order_size(i), 1000 + (uint64_t)i);
			CHECK_RC(mrail_isend(e, 1, bufs[i], order_size(i),
					     TAG_ORDER, &rq[i]));
		}
		CHECK_RC(mrail_wait_all(e, N, rq, NULL));
		for (int i = 0; i < N; i++)
			free(bufs[i]);
	} else if (me == 1) {
		/* Let everything arrive first: all of it is unexpected. */
		for (int k = 0; k < 200; k++) {
			mrail_progress(e);
			usleep(1000);
		}
		for (int i = 0; i < N; i++) {
			size_t len = order_size(i);
			char *buf = malloc(len + 1);
			mrail_request_t *r;
			mrail_status_t st;
			CHECK_RC(mrail_irecv(e, 0, buf, len, TAG_ORDER,
					     MRAIL_TAG_MASK_ALL, &r));
			CHECK_RC(mrail_wait(e, r, &st));
			CHECK_RC(st.error);
			CHECK_EQ(st.length, len);
			CHECK_EQ(st.source, 0);
			CHECK_EQ(pattern_check(buf, len, 1000 + (uint64_t)i), len);
			free(buf);
		}
	}
}

static void test_mask(mrail_engine_t *e, uint32_t me)
{
	uint64_t tags[3] = {0x100, 0x201, 0x302};
	if (me == 0) {
		for (int i = 0; i < 3; i++) {
			mrail_request_t *r;
			CHECK_RC(mrail_isend(e, 1, &tags[i], 8, tags[i], &r));
			CHECK_RC(mrail_wait(e, r, NULL));
		}
	} else if (me == 1) {
		struct { uint64_t tag, mask, expect; } want[3] = {
			{0x200, 0xF00, 0x201}, /* skips 0x100 */
			{0, 0, 0x100},         /* any tag: oldest left */
			{0x302, MRAIL_TAG_MASK_ALL, 0x302},
		};
		for (int i = 0; i < 3; i++) {
			uint64_t v = 0;
			mrail_request_t *r;
			mrail_status_t st;
			CHECK_RC(mrail_irecv(e, 0, &v, 8, want[i].tag,
					     want[i].mask, &r));
			CHECK_RC(mrail_wait(e, r, &st));
			CHECK_EQ(st.tag, want[i].expect);
			CHECK_EQ(v, want[i].expect);
		}
	}
}

static void test_any_source(mrail_engine_t *e, uint32_t me)
{
	if (me == 0 || me == 2) {
		uint64_t v = 500 + me;
		mrail_request_t *r;
		CHECK_RC(mrail_isend(e, 1, &v, 8, TAG_ANY, &r));
		CHECK_RC(mrail_wait(e, r, NULL));
	} else if (me == 1) {
		int seen = 0;
		for (int i = 0; i < 2; i++) {
			uint64_t v = 0;
			mrail_request_t *r;
			mrail_status_t st;
			CHECK_RC(mrail_irecv(e, MRAIL_ANY_PEER, &v, 8, TAG_ANY,
					     MRAIL_TAG_MASK_ALL, &r));
			CHECK_RC(mrail_wait(e, r, &st));
			CHECK(st.source == 0 || st.source == 2);
			CHECK_EQ(v, 500 + st.source);
			seen |= 1 << st.source;
		}
		CHECK_EQ(seen, 5);
	}
}

static void test_truncation(mrail_engine_t *e, uint32_t me)
{
	size_t sizes[2] = {100, 1 << 20}, caps[2] = {50, 512 << 10};
	for (int k = 0; k < 2; k++) {
		if (me == 0) {
			char *b = malloc(sizes[k]);
			mrail_request_t *r;
			mrail_status_t st;
			pattern_fill(b, sizes[k], 77 + (uint64_t)k);
			CHECK_RC(mrail_isend(e, 1, b, sizes[k], TAG_TRUNC, &r));
			CHECK_RC(mrail_wait(e, r, &st));
			CHECK_RC(st.error); /* the sender is not told */
			free(b);
		} else if (me == 1) {
			size_t guard = 4096;
			unsigned char *b = malloc(caps[k] + guard);
			mrail_request_t *r;
			mrail_status_t st;
			memset(b + caps[k], 0xA5, guard);
			CHECK_RC(mrail_irecv(e, 0, b, caps[k], TAG_TRUNC,
					     MRAIL_TAG_MASK_ALL, &r));
			CHECK_RC(mrail_wait(e, r, &st));
			CHECK_EQ(st.error, MRAIL_ERR_TRUNCATE);
			CHECK_EQ(st.length, caps[k]);
			CHECK_EQ(pattern_check(b, caps[k], 77 + (uint64_t)k), caps[k]);
			for (size_t i = 0; i < guard; i++)
				CHECK_EQ(b[caps[k] + i], 0xA5);
			free(b);
		}
	}
}

static void test_zero(mrail_engine_t *e, uint32_t me)
{
	if (me == 0) {
		mrail_request_t *r[2];
		CHECK_RC(mrail_isend(e, 1, NULL, 0, TAG_ZERO, &r[0]));
		CHECK_RC(mrail_isendv(e, 1, NULL, 0, TAG_ZERO, &r[1]));
		CHECK_RC(mrail_wait_all(e, 2, r, NULL));
	} else if (me == 1) {
		char buf[16] = "untouched";
		mrail_request_t *r;
		mrail_status_t st;
		CHECK_RC(mrail_irecv(e, 0, NULL, 0, TAG_ZERO, MRAIL_TAG_MASK_ALL, &r));
		CHECK_RC(mrail_wait(e, r, &st));
		CHECK_RC(st.error);
		CHECK_EQ(st.length, 0);
		CHECK_RC(mrail_irecv(e, 0, buf, sizeof buf, TAG_ZERO,
				     MRAIL_TAG_MASK_ALL, &r));
		CHECK_RC(mrail_wait(e, r, &st));
		CHECK_RC(st.error);
		CHECK_EQ(st.length, 0);
		CHECK(!strcmp(buf, "untouched"));
	}
}

static void test_iov(mrail_engine_t *e, uint32_t me)
{
	/* A rendezvous-size and an eager-size message, scattered
	 * differently on each side. */
	size_t sparts[2][5] = {{1, 0, 1000, 70000, 3}, {5, 17, 0, 100, 1}};
	size_t rparts[2][7] = {{7, 7, 7, 60000, 1, 10978, 4},
			       {1, 1, 1, 1, 0, 100, 19}};
	for (int k = 0; k < 2; k++) {
		size_t total = 0;
		for (int i = 0; i < 5; i++)
			total += sparts[k][i];
		uint8_t *flat = malloc(total), *got = malloc(total);
		pattern_fill(flat, total, 4242 + (uint64_t)k);
		struct iovec iov[7];
		size_t off = 0;
		mrail_request_t *r;
		mrail_status_t st;
		if (me == 0) {
			for (int i = 0; i < 5; i++) {
				iov[i].iov_base = flat + off;
				iov[i].iov_len = sparts[k][i];
				off += sparts[k][i];
			}
			CHECK_RC(mrail_isendv(e, 1, iov, 5, TAG_IOV, &r));
			CHECK_RC(mrail_wait(e, r, &st));
			CHECK_RC(st.error);
		} else if (me == 1) {
			for (int i = 0; i < 7; i++) {
				iov[i].iov_base = got + off;
				iov[i].iov_len = rparts[k][i];
				off += rparts[k][i];
			}
			CHECK_EQ(off, total);
			CHECK_RC(mrail_irecvv(e, 0, iov, 7, TAG_IOV,
					      MRAIL_TAG_MASK_ALL, &r));
			CHECK_RC(mrail_wait(e, r, &st));
			CHECK_RC(st.error);
			CHECK_EQ(st.length, total);
			CHECK(!memcmp(flat, got, total));
		}
		free(flat);
		free(got);
	}
}

static void test_cancel_and_wait_any(mrail_engine_t *e, uint32_t me)
{
	mrail_request_t *r;
	mrail_status_t st;
	char buf[8];

	/* Cancel an unmatched receive. */
	CHECK_RC(mrail_irecv(e, MRAIL_ANY_PEER, buf, 8, TAG_CANCEL,
			     MRAIL_TAG_MASK_ALL, &r));
	CHECK_RC(mrail_cancel(e, r));
	CHECK_RC(mrail_wait(e, r, &st));
	CHECK_EQ(st.error, MRAIL_ERR_CANCELED);

	if (me == 0) {
		uint64_t a = 1, b = 2;
		mrail_request_t *s[2];
		CHECK_RC(mrail_isend(e, 1, &b, 8, TAG_B, &s[0]));
		CHECK_EQ(mrail_cancel(e, s[0]), MRAIL_ERR_INVALID);
		CHECK_RC(mrail_wait(e, s[0], NULL));
		/* TAG_A only after rank 1 saw TAG_B complete first. */
		CHECK_RC(mrail_irecv(e, 1, NULL, 0, TAG_SYNC,
				     MRAIL_TAG_MASK_ALL, &s[0]));
		CHECK_RC(mrail_wait(e, s[0], NULL));
		CHECK_RC(mrail_isend(e, 1, &a, 8, TAG_A, &s[0]));
		CHECK_RC(mrail_wait(e, s[0], NULL));
	} else if (me == 1) {
		uint64_t va = 0, vb = 0;
		mrail_request_t *rq[3] = {NULL, NULL, NULL};
		size_t idx;
		CHECK_RC(mrail_irecv(e, 0, &va, 8, TAG_A, MRAIL_TAG_MASK_ALL, &rq[0]));
		CHECK_RC(mrail_irecv(e, 0, &vb, 8, TAG_B, MRAIL_TAG_MASK_ALL, &rq[2]));
		CHECK_EQ(mrail_test(e, rq[0], NULL), MRAIL_ERR_AGAIN);
		CHECK_RC(mrail_wait_any(e, 3, rq, &idx, &st));
		CHECK_EQ(idx, 2);
		CHECK(rq[2] == NULL);
		CHECK_EQ(vb, 2);
		CHECK_EQ(st.tag, TAG_B);
		/* Matched and completed: too late to cancel. */
		mrail_request_t *s;
		CHECK_RC(mrail_isend(e, 0, NULL, 0, TAG_SYNC, &s));
		CHECK_RC(mrail_wait(e, s, NULL));
		CHECK_RC(mrail_wait_any(e, 3, rq, &idx, &st));
		CHECK_EQ(idx, 0);
		CHECK_EQ(va, 1);
	}
}

static void test_self(mrail_engine_t *e, uint32_t me)
{
	size_t sizes[3] = {0, 1000, 3 << 20};
	for (int k = 0; k < 3; k++) {
		size_t len = sizes[k];
		char *s = malloc(len + 1), *d = malloc(len + 1);
		mrail_request_t *rs, *rr;
		mrail_status_t st;
		pattern_fill(s, len, 900 + me);
		/* Unexpected first (send before receive), then expected. */
		CHECK_RC(mrail_isend(e, me, s, len, TAG_SELF, &rs));
		CHECK_RC(mrail_irecv(e, me, d, len, TAG_SELF, MRAIL_TAG_MASK_ALL, &rr));
		CHECK_RC(mrail_wait(e, rr, &st));
		CHECK_RC(st.error);
		CHECK_EQ(st.source, me);
		CHECK_EQ(st.length, len);
		CHECK_RC(mrail_wait(e, rs, NULL));
		CHECK_EQ(pattern_check(d, len, 900 + me), len);
		memset(d, 0, len);
		CHECK_RC(mrail_irecv(e, MRAIL_ANY_PEER, d, len, TAG_SELF + 1,
				     MRAIL_TAG_MASK_ALL, &rr));
		CHECK_RC(mrail_isend(e, me, s, len, TAG_SELF + 1, &rs));
		CHECK_RC(mrail_wait(e, rs, NULL));
		CHECK_RC(mrail_wait(e, rr, &st));
		CHECK_EQ(st.length, len);
		CHECK_EQ(pattern_check(d, len, 900 + me), len);
		free(s);
		free(d);
	}
}

static void test_bad_args(mrail_engine_t *e)
{
	mrail_request_t *r;
	char b[4] = {0};
	CHECK_EQ(mrail_isend(e, 12345, b, 4, 1, &r), MRAIL_ERR_NOT_FOUND);
	CHECK_EQ(mrail_irecv(e, 12345, b, 4, 1, 0, &r), MRAIL_ERR_NOT_FOUND);
	CHECK_EQ(mrail_isend(e, 0, NULL, 4, 1, &r), MRAIL_ERR_INVALID);
	CHECK_EQ(mrail_isendv(e, 0, NULL, 3, 1, &r), MRAIL_ERR_INVALID);
	CHECK_EQ(mrail_isend(NULL, 0, b, 4, 1, &r), MRAIL_ERR_INVALID);
}

int main(void)
{
	mrail_engine_t *e = test_engine();
	uint32_t me = mrail_rank(e);
	CHECK(mrail_size(e) >= 3);

	test_bad_args(e);
	test_order(e, me);
	test_barrier(e);
	test_mask(e, me);
	test_barrier(e);
	test_any_source(e, me);
	test_barrier(e);
	test_truncation(e, me);
	test_barrier(e);
	test_zero(e, me);
	test_barrier(e);
	test_iov(e, me);
	test_barrier(e);
	test_cancel_and_wait_any(e, me);
	test_barrier(e);
	test_self(e, me);
	test_barrier(e);
	CHECK_RC(mrail_engine_destroy(e));
	if (me == 0)
		printf("test_match: all checks passed\n");
	return 0;
}
