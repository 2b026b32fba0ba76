/*
 * bench_pin: pin every thread of the process to one CPU.
 */
#ifndef MRAIL_BENCH_PIN_H
#define MRAIL_BENCH_PIN_H

/* Pin all threads to the (index % n)-th CPU of the allowed set; returns
 * the CPU number. Dies on failure. */
int bench_pin(unsigned index);

#endif
