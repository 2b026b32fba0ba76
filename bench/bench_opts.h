/*
 * bench_opts: command line of mrail-bench.
 */
#ifndef MRAIL_BENCH_OPTS_H
#define MRAIL_BENCH_OPTS_H

#include <stddef.h>

struct bench_opts {
	size_t min_size, max_size; /* message sizes, doubled from min to max */
	int iters;        /* ping-pong iterations for small sizes */
	int warmup;       /* warm-up iterations for small sizes */
	int reps;         /* interleaved raw/engine blocks per size */
	int window;       /* outstanding sends in the bandwidth test */
	int do_lat, do_bw;
	int raw;          /* run the raw TCP baseline */
	int pin;          /* pin rank r to CPU r % ncpus */
	int check;        /* fill and verify payloads */
	const char *csv;  /* CSV output file or NULL */
	const char *raw_addr; /* address of the raw TCP baseline or NULL */
	long raw_sockbuf; /* SO_SNDBUF/SO_RCVBUF of the raw sockets (0: kernel
	                     autotuning) */
};

/* Fill opts from argv; prints usage and exits on --help or bad input. */
void bench_opts_parse(struct bench_opts *opts, int argc, char **argv);

#endif
