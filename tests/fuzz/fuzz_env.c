/*
 * MRAIL_* values: mrail_config_init() with a fuzzed environment, then
 * what the engine does next with the strings it kept: the strategy and
 * its options (every built-in strategy's init), the rail include/exclude
 * lists against a fixed interface table, and driver parameter strings
 * (util/params.c, the fake driver's knobs).
 *
 * Input: lines; a line's first byte picks the variable (byte % the table
 * size), the rest is its value (cut at a NUL, as an environment is).
 */
#include "fuzz.h"
#include "drivers/fake/fake_internal.h"
#include "mrail.h"
#include "rails/netif.h"
#include "strategies/strategy.h"
#include "util/log.h"
#include "util/params.h"
#include "util/size.h"

#include <string.h>

static const char *const vars[] = {
	"MRAIL_DRIVERS", "MRAIL_RAILS", "MRAIL_RAILS_EXCLUDE",
	"MRAIL_TCP_LOOPBACK_RAILS", "MRAIL_DRIVER_PARAMS", "MRAIL_FAKE_PARAMS",
	"MRAIL_RDV", "MRAIL_REGCACHE", "MRAIL_REGCACHE_MAX_ENTRIES",
	"MRAIL_REGCACHE_MAX_BYTES", "MRAIL_STRATEGY", "MRAIL_STRATEGY_PATH",
	"MRAIL_LOG_LEVEL", "MRAIL_PROFILE_DIR", "MRAIL_EAGER_MAX",
	"MRAIL_PROGRESS_THREAD", "MRAIL_BOOTSTRAP", "MRAIL_CONNECT_TIMEOUT",
	"MRAIL_FINALIZE_TIMEOUT", "MRAIL_JOB_KEY", "MRAIL_TCP_SOCKBUF",
	"MRAIL_INBAND_SAMPLING", "MRAIL_THREAD_LEVEL", "MRAIL_TYPO",
};
#define NVARS (sizeof vars / sizeof vars[0])

static const char *const strategies[] = {"single", "iso", "pin", "bw",
					 "greedy", "aggreg", "split"};

static void strategy(const char *spec)
{
	char name[64];
	size_t n = strcspn(spec, ":");
	const char *args = spec[n] ? spec + n + 1 : "";
	if (n >= sizeof name)
		return;
	memcpy(name, spec, n);
	name[n] = '\0';
	/* The named one as the engine would, and every built-in one with the
	 * same options (the fuzzer rarely guesses a name). */
	for (size_t i = 0; i <= sizeof strategies / sizeof *strategies; i++) {
		const struct mrail_strategy_ops *ops = mrail_strategy_find(
			i ? strategies[i - 1] : name);
		void *state = NULL;
		if (ops && ops->init(args, &state) == MRAIL_OK && ops->fini)
			ops->fini(state);
	}
}

static void rails(const char *include, const char *exclude)
{
	struct mrail_netif ifs[4];
	static const char *const names[] = {"lo", "eth0", "ib0", "rail1"};
	unsigned n = 4;
	char err[256];

	memset(ifs, 0, sizeof ifs);
	for (unsigned i = 0; i < 4; i++) {
		snprintf(ifs[i].name, sizeof ifs[i].name, "%s", names[i]);
		ifs[i].naddrs = 2;
		ifs[i].addrs[0] = (struct mrail_netif_addr){
			4, 24, {10, 0, (uint8_t)i, 1}};
		ifs[i].addrs[1] = (struct mrail_netif_addr){
			6, 64, {0x20, 0x01, 0x0d, 0xb8, 0, (uint8_t)i}};
		ifs[i].addrs[1].addr[15] = 1;
	}
	err[0] = '\0';
	if (mrail_netif_filter(ifs, &n, include, exclude, err, sizeof err) ==
	    MRAIL_OK)
		FUZZ_CHECK(n <= 4);
	else
		FUZZ_CHECK(strlen(err) < sizeof err);
}

static void params(const char *s)
{
	const char *pos = s;
	char key[32], val[64];
	int rc;
	while ((rc = mrail_params_next(&pos, key, sizeof key, val,
				       sizeof val)) > 0)
		FUZZ_CHECK(strlen(key) < sizeof key && strlen(val) < sizeof val);
	struct fake_params fp;
	fake_params_parse(s, &fp);
	uint64_t v;
	mrail_parse_size(s, &v);
}

/* MRAIL_DRIVER_PARAMS: "driver:k=v,...;driver:..." (as drivers.c). */
static void sections(const char *all)
{
	char sec[256];
	for (const char *p = all; p && *p;) {
		size_t len = strcspn(p, ";");
		const char *colon = memchr(p, ':', len);
		size_t vl = colon ? len - (size_t)(colon - p) - 1 : 0;
		if (colon && vl < sizeof sec) {
			memcpy(sec, colon + 1, vl);
			sec[vl] = '\0';
			params(sec);
		}
		p += len;
		if (*p == ';')
			p++;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_strndup(data, size);
	for (size_t i = 0; i < NVARS; i++)
		unsetenv(vars[i]);
	for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		setenv(vars[(uint8_t)line[0] % NVARS], line + 1, 1);
	/* Nothing after a NUL byte counts, as in an environment. */

	struct mrail_config c;
	int rc = mrail_config_init(&c);
	mrail_log_level = MRAIL_LOG_TRACE; /* whatever the input set */
	if (rc == MRAIL_OK) {
		FUZZ_CHECK(c.version == MRAIL_CONFIG_VERSION);
		strategy(c.strategy ? c.strategy : "split");
		rails(c.rails, c.rails_exclude);
		sections(c.driver_params);
		const char *fake = getenv("MRAIL_FAKE_PARAMS");
		if (fake)
			params(fake);
	} else {
		FUZZ_CHECK(rc == MRAIL_ERR_CONFIG || rc == MRAIL_ERR_INVALID);
	}
	free(text);
	return 0;
}
