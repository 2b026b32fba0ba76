#ifndef MRAIL_UTIL_CLOCK_H
#define MRAIL_UTIL_CLOCK_H
/* Monotonic time in seconds. */
double mrail_now(void);
#endif
