/* Byte ranges of scatter/gather lists. */
#ifndef MRAIL_UTIL_IOV_H
#define MRAIL_UTIL_IOV_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

/* Total length of an iovec (saturates at SIZE_MAX). Inline: every
 * small message's path sums a list of one to five entries several times,
 * and the call was a tenth of the loop's cost. */
static inline size_t mrail_iov_length(const struct iovec *iov, int cnt)
{
	size_t total = 0;
	for (int i = 0; i < cnt; i++) {
		if (iov[i].iov_len > SIZE_MAX - total)
			return SIZE_MAX;
		total += iov[i].iov_len;
	}
	return total;
}

/*
 * Describe bytes [off, off+len) of iov as at most `max` entries in out.
 * Returns the entry count, or -1 if the range is outside iov or needs more
 * than `max` entries.
 */
int mrail_iov_slice(const struct iovec *iov, int cnt, size_t off, size_t len,
		    struct iovec *out, int max);

/* Copy between a flat buffer and bytes [off, off+len) of an iovec. A
 * range inside the first entry, as every contiguous message's, is one
 * memcpy inline (the loop was 50 instructions of an 8 B message's path). */
void mrail_iov_to_buf_any(void *dst, const struct iovec *iov, int cnt,
			  size_t off, size_t len);
void mrail_buf_to_iov_any(const struct iovec *iov, int cnt, size_t off,
			  const void *src, size_t len);
static inline void mrail_iov_to_buf(void *dst, const struct iovec *iov,
				    int cnt, size_t off, size_t len)
{
	if (cnt >= 1 && off <= iov[0].iov_len && len <= iov[0].iov_len - off) {
		if (len)
			memcpy(dst, (const char *)iov[0].iov_base + off, len);
		return;
	}
	mrail_iov_to_buf_any(dst, iov, cnt, off, len);
}
static inline void mrail_buf_to_iov(const struct iovec *iov, int cnt,
				    size_t off, const void *src, size_t len)
{
	if (cnt >= 1 && off <= iov[0].iov_len && len <= iov[0].iov_len - off) {
		if (len)
			memcpy((char *)iov[0].iov_base + off, src, len);
		return;
	}
	mrail_buf_to_iov_any(iov, cnt, off, src, len);
}

#endif
