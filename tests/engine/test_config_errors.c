/*
 * Every malformed or unknown MRAIL_* value makes engine creation fail with
 * MRAIL_ERR_CONFIG and a log line naming the variable; a misspelt variable
 * name only warns.
 */
#include "harness.h"

#include <stdlib.h>
#include <unistd.h>

static const struct { const char *var, *value; } bad[] = {
	{"MRAIL_STRATEGY", "no-such-strategy"},
	{"MRAIL_STRATEGY", "iso:chunks=0"},
	{"MRAIL_STRATEGY", "iso:bogus=1"},
	{"MRAIL_STRATEGY", "single:x=1"},
	{"MRAIL_STRATEGY", "pin:rail=x"},
	{"MRAIL_STRATEGY", "split:max_chunks=0"},
	{"MRAIL_DRIVERS", "carrier-pigeon"},
	{"MRAIL_EAGER_MAX", "lots"},
	{"MRAIL_EAGER_MAX", "64g"},
	{"MRAIL_UNEXPECTED_MAX", "-1"},
	{"MRAIL_UNEXPECTED_MAX", "2048g"},
	{"MRAIL_UNEXPECTED_PEER_MAX", "4 MiB"},
	{"MRAIL_TCP_LOOPBACK_RAILS", "0"},
	{"MRAIL_TCP_LOOPBACK_RAILS", "-2"},
	{"MRAIL_TCP_LOOPBACK_RAILS", "3x"},
	{"MRAIL_LOG_LEVEL", "loud"},
	{"MRAIL_PROGRESS_THREAD", "maybe"},
	{"MRAIL_CONNECT_TIMEOUT", "-1"},
	{"MRAIL_FINALIZE_TIMEOUT", "nan"},
	{"MRAIL_JOB_KEY", "not-hex"},
	{"MRAIL_RAILS", "no-such-interface0"},
	{"MRAIL_RAILS", ","},
	{"MRAIL_BOOTSTRAP", "sometimes"},
	{"MRAIL_INBAND_SAMPLING", "often"},
	{"MRAIL_TCP_SOCKBUF", "huge"},
	{"MRAIL_THREAD_LEVEL", "funneled"},
	{"MRAIL_THREAD_LEVEL", "SINGLE"},
	{"MRAIL_DRIVERS", "tcp,tcp"},
	{"MRAIL_DRIVERS", "tcp,"},
	{"MRAIL_DRIVER_PARAMS", "tcp:loopback_rails=0"},
	{"MRAIL_DRIVER_PARAMS", "tcp:no_such_knob=1"},
	{"MRAIL_DRIVER_PARAMS", "tcp:;tcp:loopback_rails=2"},
	{"MRAIL_DRIVER_PARAMS", "carrier-pigeon:rails=1"},
	{"MRAIL_DRIVER_PARAMS", "loopback_rails=2"},
	{"MRAIL_RDV", "telepathy"},
	{"MRAIL_PACE", "sometimes"},
	{"MRAIL_SEND_HOLD", "2"},
	{"MRAIL_TRACE", "/nonexistent-dir/trace"},
};

static char logbuf[1 << 16];

static int create_logged(int logfd)
{
	mrail_engine_t *e = NULL;
	ftruncate(logfd, 0);
	lseek(logfd, 0, SEEK_SET);
	int rc = mrail_engine_create(NULL, &e);
	if (rc == MRAIL_OK)
		mrail_engine_destroy(e);
	ssize_t n = pread(logfd, logbuf, sizeof logbuf - 1, 0);
	logbuf[n > 0 ? n : 0] = '\0';
	return rc;
}

int main(void)
{
	char path[] = "/tmp/mrail-config-XXXXXX";
	int logfd = mkstemp(path), saved = dup(2), failures = 0;
	CHECK(logfd >= 0);
	unlink(path);
	setenv("MRAIL_BOOTSTRAP", "0", 1);
	dup2(logfd, 2);
	CHECK_EQ(create_logged(logfd), MRAIL_OK); /* defaults are fine */

	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		const char *old = getenv(bad[i].var);
		char *keep = old ? strdup(old) : NULL;
		setenv(bad[i].var, bad[i].value, 1);
		int rc = create_logged(logfd);
		if (keep)
			setenv(bad[i].var, keep, 1);
		else
			unsetenv(bad[i].var);
		free(keep);
		if (rc != MRAIL_ERR_CONFIG || !strstr(logbuf, bad[i].var)) {
			dprintf(saved, "%s=%s: got %d (%s), log: %s\n",
				bad[i].var, bad[i].value, rc, mrail_strerror(rc),
				logbuf);
			failures++;
		}
	}
	setenv("MRAIL_STRATEGYY", "iso", 1);
	CHECK_EQ(create_logged(logfd), MRAIL_OK);
	CHECK(strstr(logbuf, "MRAIL_STRATEGYY") != NULL);
	unsetenv("MRAIL_STRATEGYY");

	/* Not under a launcher but told to be: a clear bootstrap error. */
	setenv("MRAIL_BOOTSTRAP", "1", 1);
	unsetenv("MRAIL_KVS_ADDR");
	CHECK_EQ(create_logged(logfd), MRAIL_ERR_BOOTSTRAP);
	CHECK(strstr(logbuf, "mrail-run") != NULL);

	dup2(saved, 2);
	if (failures)
		return 1;
	printf("test_config_errors: %zu bad values rejected with the variable "
	       "named\n", sizeof bad / sizeof *bad);
	return 0;
}
