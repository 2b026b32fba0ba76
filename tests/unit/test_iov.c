/* iovec slicing and copies, checked against a flat reference. */
#include "../check.h"
#include "util/iov.h"

#include <string.h>

int main(void)
{
	uint8_t flat[1000], a[1000], b[1000];
	size_t parts[] = {0, 1, 0, 300, 7, 0, 692};
	struct iovec iov[7], out[8];
	size_t off = 0;
	for (int i = 0; i < 1000; i++)
		flat[i] = (uint8_t)(i * 13);
	for (int i = 0; i < 7; i++) {
		iov[i].iov_base = a + off;
		iov[i].iov_len = parts[i];
		off += parts[i];
	}
	CHECK(mrail_iov_length(iov, 7) == 1000);
	for (size_t o = 0; o <= 1000; o += 37)
		for (size_t l = 0; o + l <= 1000; l += 53) {
			memset(a, 0, sizeof a);
			mrail_buf_to_iov(iov, 7, o, flat + o, l);
			for (size_t i = 0; i < 1000; i++)
				CHECK(a[i] == (i >= o && i < o + l ? flat[i] : 0));
			mrail_iov_to_buf(b, iov, 7, o, l);
			CHECK(!memcmp(b, flat + o, l));
			int n = mrail_iov_slice(iov, 7, o, l, out, 8);
			CHECK(n >= 0);
			size_t total = 0;
			for (int k = 0; k < n; k++) {
				CHECK(out[k].iov_len > 0);
				CHECK(!memcmp(out[k].iov_base, flat + o + total,
					      out[k].iov_len));
				total += out[k].iov_len;
			}
			CHECK(total == l);
		}
	CHECK(mrail_iov_slice(iov, 7, 990, 11, out, 8) == -1); /* past end */
	CHECK(mrail_iov_slice(iov, 7, 0, 1000, out, 2) == -1); /* too few */
	puts("test_iov: ok");
	return 0;
}
