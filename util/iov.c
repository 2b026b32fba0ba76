#include "util/iov.h"

#include <string.h>

int mrail_iov_slice(const struct iovec *iov, int cnt, size_t off, size_t len,
		    struct iovec *out, int max)
{
	int n = 0, i = 0;

	while (i < cnt && off >= iov[i].iov_len) {
		off -= iov[i].iov_len;
		i++;
	}
	while (len > 0) {
		if (i >= cnt || n >= max)
			return -1;
		size_t take = iov[i].iov_len - off;
		if (take > len)
			take = len;
		if (take > 0) {
			out[n].iov_base = (char *)iov[i].iov_base + off;
			out[n].iov_len = take;
			n++;
		}
		len -= take;
		off = 0;
		i++;
	}
	return n;
}

void mrail_iov_to_buf_any(void *dst, const struct iovec *iov, int cnt,
			  size_t off, size_t len)
{
	char *d = dst;
	for (int i = 0; i < cnt && len > 0; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		size_t take = iov[i].iov_len - off;
		if (take > len)
			take = len;
		memcpy(d, (char *)iov[i].iov_base + off, take);
		d += take;
		len -= take;
		off = 0;
	}
}

void mrail_buf_to_iov_any(const struct iovec *iov, int cnt, size_t off,
			  const void *src, size_t len)
{
	const char *s = src;
	for (int i = 0; i < cnt && len > 0; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		size_t take = iov[i].iov_len - off;
		if (take > len)
			take = len;
		memcpy((char *)iov[i].iov_base + off, s, take);
		s += take;
		len -= take;
		off = 0;
	}
}
