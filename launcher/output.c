#include "launcher/output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void tagged_stream_init(struct tagged_stream *s, int fd, int out_fd,
			unsigned rank)
{
	s->fd = fd;
	s->out_fd = out_fd;
	s->rank = rank;
	s->mid_line = false;
	s->len = 0;
	if (fd >= 0)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static void write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* reader gone (EPIPE): drop the output */
		p += n;
		len -= (size_t)n;
	}
}

/* Write buf[0..len) as one chunk, prefixed unless it continues a line. */
static void emit(struct tagged_stream *s, const char *p, size_t len)
{
	char line[TAGGED_LINE_MAX + 32];
	size_t n = 0;

	if (!s->mid_line)
		n = (size_t)snprintf(line, sizeof line, "[%u] ", s->rank);
	memcpy(line + n, p, len);
	n += len;
	s->mid_line = line[n - 1] != '\n';
	write_all(s->out_fd, line, n);
}

/* Emit every complete line; a full buffer without a newline goes as is. */
static void emit_lines(struct tagged_stream *s)
{
	size_t start = 0;
	for (size_t i = 0; i < s->len; i++) {
		if (s->buf[i] == '\n') {
			emit(s, s->buf + start, i + 1 - start);
			start = i + 1;
		}
	}
	if (start == 0 && s->len == sizeof s->buf) {
		emit(s, s->buf, s->len);
		start = s->len;
	}
	memmove(s->buf, s->buf + start, s->len - start);
	s->len -= start;
}

void tagged_stream_pump(struct tagged_stream *s)
{
	while (s->fd >= 0) {
		ssize_t n = read(s->fd, s->buf + s->len, sizeof s->buf - s->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			tagged_stream_close(s);
			return;
		}
		s->len += (size_t)n;
		emit_lines(s);
	}
}

void tagged_stream_close(struct tagged_stream *s)
{
	if (s->len > 0) {
		emit(s, s->buf, s->len);
		s->len = 0;
	}
	if (s->mid_line)
		write_all(s->out_fd, "\n", 1);
	s->mid_line = false;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}
