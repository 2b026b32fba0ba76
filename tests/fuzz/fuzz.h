/*
 * Shared by the libFuzzer harnesses (tests/fuzz, docs/fuzzing.md). A
 * harness must not crash, leak, hang or trip a sanitizer on any input;
 * FUZZ_CHECK turns a broken invariant of a parser's result into a crash
 * the fuzzer reports.
 */
#ifndef MRAIL_TESTS_FUZZ_H
#define MRAIL_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(c)                                                      \
	do {                                                               \
		if (!(c)) {                                                \
			fprintf(stderr, "%s:%d: invariant broken: %s\n",   \
				__FILE__, __LINE__, #c);                   \
			abort();                                           \
		}                                                          \
	} while (0)

/* Reads every byte so ASan sees an out-of-bounds range in full. */
static inline unsigned fuzz_touch(const void *p, size_t n)
{
	const volatile uint8_t *b = p;
	unsigned s = 0;
	for (size_t i = 0; i < n; i++)
		s += b[i];
	return s;
}

/* A NUL-terminated malloc'd copy of data[0..n) (the caller frees). */
static inline char *fuzz_strndup(const uint8_t *data, size_t n)
{
	char *s = malloc(n + 1);
	if (!s)
		abort();
	for (size_t i = 0; i < n; i++)
		s[i] = (char)data[i];
	s[n] = '\0';
	return s;
}

/*
 * Close a TCP socket of the harness with a reset: thousands of inputs a
 * second would otherwise fill the ephemeral port range with TIME_WAIT
 * sockets and make connect() fail (EADDRNOTAVAIL). Call it after the
 * peer under test has seen the orderly shutdown it was meant to see.
 */
static inline void fuzz_close_abort(int fd)
{
	struct linger l = {1, 0};
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
	close(fd);
}

#endif
