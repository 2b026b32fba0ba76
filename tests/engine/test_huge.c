/*
 * One message larger than 4 GiB (4 GiB + 1 byte), split over two rails:
 * sizes and offsets must be 64-bit all the way. Sampled positions (a prime
 * stride, plus the first and last MiB) carry distinct values so a wrong
 * offset anywhere shows.
 */
#include "harness.h"

#include <sys/mman.h>

#ifndef LEN
#define LEN ((size_t)4 << 30 | 1)
#endif
#define STRIDE 4093
#define EDGE ((size_t)1 << 20)

static void fill(uint8_t *p)
{
	for (size_t i = 0; i < LEN; i += STRIDE)
		p[i] = pattern_byte(7, i);
	pattern_fill(p, EDGE, 8);
	for (size_t i = LEN - EDGE; i < LEN; i++)
		p[i] = pattern_byte(9, i);
}

static size_t verify(const uint8_t *p)
{
	for (size_t i = (EDGE / STRIDE + 1) * STRIDE; i < LEN - EDGE; i += STRIDE)
		if (p[i] != pattern_byte(7, i))
			return i;
	if (pattern_check(p, EDGE, 8) != EDGE)
		return pattern_check(p, EDGE, 8);
	for (size_t i = LEN - EDGE; i < LEN; i++)
		if (p[i] != pattern_byte(9, i))
			return i;
	return LEN;
}

int main(void)
{
	mrail_engine_t *e = test_engine();
	uint32_t me = mrail_rank(e);
	mrail_request_t *r;
	mrail_status_t st;
	uint8_t *buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	CHECK(buf != MAP_FAILED);
	CHECK_EQ(mrail_size(e), 2);
	if (me == 0) {
		fill(buf);
		CHECK_RC(mrail_isend(e, 1, buf, LEN, 1, &r));
	} else {
		CHECK_RC(mrail_irecv(e, 0, buf, LEN, 1, MRAIL_TAG_MASK_ALL, &r));
	}
	CHECK_RC(mrail_wait(e, r, &st));
	CHECK_RC(st.error);
	CHECK_EQ(st.length, LEN);
	if (me == 1) {
		size_t bad = verify(buf);
		if (bad != LEN)
			fprintf(stderr, "byte %zu differs\n", bad);
		CHECK_EQ(bad, LEN);
		printf("test_huge: %zu bytes received and verified\n", LEN);
	}
	test_barrier(e);
	munmap(buf, LEN);
	CHECK_RC(mrail_engine_destroy(e));
	return 0;
}
