#ifndef MRAIL_UTIL_CLOCK_H
#define MRAIL_UTIL_CLOCK_H
/* Monotonic time in seconds. */
double mrail_now(void);
/* The same clock read cheaply, at the resolution of the scheduler tick
 * (1-10 ms) and never ahead of mrail_now(): for "is a timer due yet"
 * checks on hot paths. */
double mrail_now_coarse(void);
#endif
