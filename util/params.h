#ifndef MRAIL_UTIL_PARAMS_H
#define MRAIL_UTIL_PARAMS_H

#include <stddef.h>

/*
 * Iterates a driver's parameter string "key=value,key=value". Returns 1
 * with the next pair copied to key/val, 0 at the end, -1 for a malformed
 * entry (no '=', empty key, key or value too long). *pos starts at the
 * string.
 */
int mrail_params_next(const char **pos, char *key, size_t kcap, char *val,
		      size_t vcap);

#endif
