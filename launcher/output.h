/*
 * --tag-output: copy a rank's stdout/stderr to mrail-run's, each line
 * prefixed with "[RANK] ". A line is written with one write(2) so lines of
 * different ranks do not mix.
 */
#ifndef MRAIL_RUN_OUTPUT_H
#define MRAIL_RUN_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

#define TAGGED_LINE_MAX 4096

struct tagged_stream {
	int fd;          /* read end of the rank's pipe, -1 once closed */
	int out_fd;      /* STDOUT_FILENO or STDERR_FILENO */
	unsigned rank;
	bool mid_line;   /* the last chunk written did not end a line */
	size_t len;
	char buf[TAGGED_LINE_MAX];
};

void tagged_stream_init(struct tagged_stream *s, int fd, int out_fd,
			unsigned rank);
/* Forward what can be read without blocking; closes fd at end of file. */
void tagged_stream_pump(struct tagged_stream *s);
/* Write out a last partial line and close (the rank is gone). */
void tagged_stream_close(struct tagged_stream *s);

#endif
