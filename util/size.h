#ifndef MRAIL_UTIL_SIZE_H
#define MRAIL_UTIL_SIZE_H

#include <stdint.h>

/*
 * A byte count such as "4096", "64k", "16M" or "1g" (powers of 1024,
 * either case). 0 and *out set, or -1 for anything else: empty, negative,
 * trailing characters, overflow.
 */
int mrail_parse_size(const char *s, uint64_t *out);

#endif
