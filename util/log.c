#include "util/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

int mrail_log_level = MRAIL_LOG_WARN;
static char log_prefix[64];

static const char *const level_names[] = {"error", "warn", "info", "debug",
					   "trace"};

void mrail_log_set_prefix(const char *prefix)
{
	snprintf(log_prefix, sizeof log_prefix, "%s", prefix ? prefix : "");
}

int mrail_log_parse_level(const char *s)
{
	if (!s || !*s)
		return -1;
	for (int i = 0; i < 5; i++)
		if (!strcasecmp(s, level_names[i]))
			return i;
	if (s[0] >= '0' && s[0] <= '4' && s[1] == '\0')
		return s[0] - '0';
	return -1;
}

void mrail_log_msg(int level, const char *fmt, ...)
{
	char line[1024];
	int n;
	va_list ap;

	if (level < 0)
		level = 0;
	if (level > 4)
		level = 4;
	n = snprintf(line, sizeof line, "mrail%s%s[%d] %s: ",
		     log_prefix[0] ? " " : "", log_prefix, (int)getpid(),
		     level_names[level]);
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof line)
		n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof line - 1)
		n = sizeof line - 2;
	line[n++] = '\n';
	/* One write per line so lines of concurrent processes do not mix. */
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}
