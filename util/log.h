/* Process-wide logging for libmrail and its tools (stderr, one line each). */
#ifndef MRAIL_UTIL_LOG_H
#define MRAIL_UTIL_LOG_H

#include "mrail.h"

extern int mrail_log_level;

/* Prefix shown on every line, e.g. "rank 3" (copied). */
void mrail_log_set_prefix(const char *prefix);
void mrail_log_msg(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Parse "error|warn|info|debug|trace" or "0".."4"; -1 if invalid. */
int mrail_log_parse_level(const char *s);

#define mrail_log(lvl, ...)                                                \
	do {                                                               \
		if ((lvl) <= mrail_log_level)                              \
			mrail_log_msg((lvl), __VA_ARGS__);                 \
	} while (0)
#define mrail_error(...) mrail_log(MRAIL_LOG_ERROR, __VA_ARGS__)
#define mrail_warn(...) mrail_log(MRAIL_LOG_WARN, __VA_ARGS__)
#define mrail_info(...) mrail_log(MRAIL_LOG_INFO, __VA_ARGS__)
#define mrail_debug(...) mrail_log(MRAIL_LOG_DEBUG, __VA_ARGS__)
#define mrail_trace(...) mrail_log(MRAIL_LOG_TRACE, __VA_ARGS__)

#endif
