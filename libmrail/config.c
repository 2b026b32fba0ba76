/* Configuration defaults and the MRAIL_* environment variables. */
#include "libmrail/engine.h"
#include "util/log.h"
#include "util/size.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

/* Every MRAIL_* variable anything in the project reads; others warn. */
static const char *const known_vars[] = {
	"MRAIL_DRIVERS", "MRAIL_RAILS", "MRAIL_RAILS_EXCLUDE",
	"MRAIL_TCP_LOOPBACK_RAILS", "MRAIL_DRIVER_PARAMS",
	"MRAIL_FAKE_PARAMS", /* drivers/fake */
	"MRAIL_VERBS_DOUBLE", /* drivers/verbs: the verbs test double */
	"MRAIL_RDV",
	"MRAIL_REGCACHE", "MRAIL_REGCACHE_MAX_ENTRIES",
	"MRAIL_REGCACHE_MAX_BYTES", /* libmrail/regcache.c */
	"MRAIL_STRATEGY", "MRAIL_STRATEGY_PATH", "MRAIL_LOG_LEVEL",
	"MRAIL_PROFILE_DIR",
	"MRAIL_EAGER_MAX", "MRAIL_PROGRESS_THREAD", "MRAIL_BOOTSTRAP",
	"MRAIL_UNEXPECTED_MAX", "MRAIL_UNEXPECTED_PEER_MAX", /* credits.c */
	"MRAIL_CONNECT_TIMEOUT", "MRAIL_FINALIZE_TIMEOUT", "MRAIL_JOB_KEY",
	"MRAIL_RAIL_TIMEOUT", /* libmrail/failover.c */
	"MRAIL_PACE", "MRAIL_TRACE", /* libmrail/pace.c, trace.c */
	"MRAIL_SEND_HOLD", /* libmrail/burst.c */
	"MRAIL_TCP_SOCKBUF", /* drivers/tcp */
	"MRAIL_OFI_PROVIDER", "MRAIL_OFI_DOMAINS", "MRAIL_OFI_SHM",
	"MRAIL_OFI_LIBRARY", /* drivers/ofi */
	"MRAIL_INBAND_SAMPLING", "MRAIL_THREAD_LEVEL", "MRAIL_CONNECT",
	"MRAIL_OFFLOAD_CORES", "MRAIL_OFFLOAD_FORCE", /* libmrail/offload */
	/* set by mrail-run for the bootstrap */
	"MRAIL_RANK", "MRAIL_SIZE", "MRAIL_LOCAL_RANK", "MRAIL_LOCAL_SIZE",
	"MRAIL_KVS_ADDR", "MRAIL_BOOTSTRAP_TIMEOUT", "MRAIL_JOB_ID",
};

static int bad(const char *var, const char *val, const char *expect)
{
	mrail_error("invalid %s='%s': expected %s", var, val, expect);
	return MRAIL_ERR_CONFIG;
}

static int env_u64(const char *var, uint64_t lo, uint64_t hi, uint64_t *out)
{
	const char *s = getenv(var);
	uint64_t v;
	if (!s)
		return MRAIL_OK;
	if (mrail_parse_size(s, &v) || v < lo || v > hi) {
		char expect[96];
		snprintf(expect, sizeof expect, "an integer in [%llu, %llu] "
			 "(k/m/g suffixes allowed)", (unsigned long long)lo,
			 (unsigned long long)hi);
		return bad(var, s, expect);
	}
	*out = v;
	return MRAIL_OK;
}

static int env_seconds(const char *var, double *out)
{
	const char *s = getenv(var);
	char *end;
	if (!s)
		return MRAIL_OK;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v <= 0 || v > 86400)
		return bad(var, s, "a number of seconds in (0, 86400]");
	*out = v;
	return MRAIL_OK;
}

int config_env_switch(const char *var, const char *expect, int *out)
{
	const char *s = getenv(var);
	if (!s)
		return MRAIL_OK;
	if (!strcmp(s, "1") || !strcmp(s, "yes") || !strcmp(s, "on") ||
	    !strcmp(s, "true"))
		*out = 1;
	else if (!strcmp(s, "0") || !strcmp(s, "no") || !strcmp(s, "off") ||
		 !strcmp(s, "false"))
		*out = 0;
	else
		return bad(var, s, expect);
	return MRAIL_OK;
}

static int env_bool(const char *var, int *out)
{
	return config_env_switch(var, "0 or 1", out);
}

static int env_string(const char *var, const char **out)
{
	const char *s = getenv(var);
	if (!s)
		return MRAIL_OK;
	if (!*s)
		return bad(var, s, "a non-empty value");
	*out = s;
	return MRAIL_OK;
}

static void warn_unknown_vars(void)
{
	for (char **ep = environ; ep && *ep; ep++) {
		if (strncmp(*ep, "MRAIL_", 6))
			continue;
		/* MRAIL_SDN*: the MPI binding's SDN layer (docs/sdn.md). */
		if (!strncmp(*ep, "MRAIL_SDN", 9))
			continue;
		size_t n = strcspn(*ep, "=");
		int known = 0;
		for (size_t i = 0; i < sizeof known_vars / sizeof *known_vars;
		     i++)
			if (strlen(known_vars[i]) == n &&
			    !strncmp(*ep, known_vars[i], n))
				known = 1;
		if (!known)
			mrail_warn("unknown environment variable %.*s ignored "
				   "(typo?)", (int)n, *ep);
	}
}

MRAIL_API int mrail_config_init(struct mrail_config *c)
{
	uint64_t v = 0;
	int rc;

	if (!c)
		return MRAIL_ERR_INVALID;
	memset(c, 0, sizeof *c);
	c->version = MRAIL_CONFIG_VERSION;
	c->drivers = "tcp,shm"; /* shm carries peers of this host */
	c->strategy = "split";
	c->log_level = MRAIL_LOG_WARN;
	c->eager_max = MRAIL_EAGER_MAX_AUTO;
	c->bootstrap = -1;
	c->connect_timeout = 30;
	c->finalize_timeout = 5;
	c->inband_sampling = 1;
	c->thread_level = MRAIL_THREAD_MULTIPLE;
	c->unexpected_max = MRAIL_UNEXPECTED_MAX_DEFAULT;
	c->unexpected_peer_max = MRAIL_UNEXPECTED_PEER_MAX_DEFAULT;

	/* The log level first, so the other messages obey it. */
	const char *lvl = getenv("MRAIL_LOG_LEVEL");
	if (lvl) {
		int l = mrail_log_parse_level(lvl);
		if (l < 0)
			return bad("MRAIL_LOG_LEVEL", lvl,
				   "error, warn, info, debug, trace or 0..4");
		c->log_level = l;
		mrail_log_level = l;
	}
	if ((rc = env_string("MRAIL_DRIVERS", &c->drivers)) ||
	    (rc = env_string("MRAIL_RAILS", &c->rails)) ||
	    (rc = env_string("MRAIL_RAILS_EXCLUDE", &c->rails_exclude)) ||
	    (rc = env_string("MRAIL_STRATEGY", &c->strategy)) ||
	    (rc = env_string("MRAIL_PROFILE_DIR", &c->profile_dir)) ||
	    (rc = env_string("MRAIL_DRIVER_PARAMS", &c->driver_params)))
		return rc;
	if (getenv("MRAIL_EAGER_MAX")) {
		if ((rc = env_u64("MRAIL_EAGER_MAX", 0, MRAIL_EAGER_MAX_LIMIT,
				  &v)))
			return rc;
		c->eager_max = (size_t)v;
	}
	uint64_t um = c->unexpected_max, upm = c->unexpected_peer_max;
	if ((rc = env_u64("MRAIL_UNEXPECTED_MAX", 0, MRAIL_UNEXPECTED_LIMIT,
			  &um)) ||
	    (rc = env_u64("MRAIL_UNEXPECTED_PEER_MAX", 0,
			  MRAIL_UNEXPECTED_LIMIT, &upm)))
		return rc;
	c->unexpected_max = (size_t)um;
	c->unexpected_peer_max = (size_t)upm;
	if ((rc = env_bool("MRAIL_PROGRESS_THREAD", &c->progress_thread)) ||
	    (rc = env_bool("MRAIL_INBAND_SAMPLING", &c->inband_sampling)))
		return rc;
	const char *bs = getenv("MRAIL_BOOTSTRAP");
	if (bs) {
		if (!strcmp(bs, "auto"))
			c->bootstrap = -1;
		else if (strcmp(bs, "0") && strcmp(bs, "1"))
			return bad("MRAIL_BOOTSTRAP", bs, "auto, 0 or 1");
		else
			c->bootstrap = bs[0] - '0';
	}
	if ((rc = env_seconds("MRAIL_CONNECT_TIMEOUT", &c->connect_timeout)) ||
	    (rc = env_seconds("MRAIL_FINALIZE_TIMEOUT", &c->finalize_timeout)))
		return rc;
	const char *rdv = getenv("MRAIL_RDV");
	if (rdv) {
		c->rdv_protocol = rma_parse_protocol(rdv);
		if (c->rdv_protocol < 0)
			return bad("MRAIL_RDV", rdv, "auto, get, put or send");
	}
	const char *tl = getenv("MRAIL_THREAD_LEVEL");
	if (tl) {
		if (!strcmp(tl, "single"))
			c->thread_level = MRAIL_THREAD_SINGLE;
		else if (!strcmp(tl, "serialized"))
			c->thread_level = MRAIL_THREAD_SERIALIZED;
		else if (!strcmp(tl, "multiple"))
			c->thread_level = MRAIL_THREAD_MULTIPLE;
		else
			return bad("MRAIL_THREAD_LEVEL", tl,
				   "single, serialized or multiple");
	}
	const char *cm = getenv("MRAIL_CONNECT");
	if (cm) {
		if (!strcmp(cm, "auto"))
			c->connect_mode = MRAIL_CONNECT_AUTO;
		else if (!strcmp(cm, "eager"))
			c->connect_mode = MRAIL_CONNECT_EAGER;
		else if (!strcmp(cm, "lazy"))
			c->connect_mode = MRAIL_CONNECT_LAZY;
		else
			return bad("MRAIL_CONNECT", cm, "auto, eager or lazy");
	}
	const char *key = getenv("MRAIL_JOB_KEY");
	if (key) {
		if (mrail_auth_key_parse(key, c->job_key))
			return bad("MRAIL_JOB_KEY", "(hidden)",
				   "32 hexadecimal digits");
		c->has_job_key = 1;
	}
	warn_unknown_vars();
	return MRAIL_OK;
}

int config_copy_strings(struct mrail_engine *e, const struct mrail_config *c)
{
	const char *src[6] = {c->drivers, c->rails, c->strategy,
			      c->profile_dir, c->rails_exclude,
			      c->driver_params};
	e->cfg = *c;
	for (int i = 0; i < 6; i++) {
		e->cfg_strings[i] = src[i] ? strdup(src[i]) : NULL;
		if (src[i] && !e->cfg_strings[i])
			return MRAIL_ERR_NOMEM;
	}
	e->cfg.drivers = e->cfg_strings[0];
	e->cfg.rails = e->cfg_strings[1];
	e->cfg.strategy = e->cfg_strings[2];
	e->cfg.profile_dir = e->cfg_strings[3];
	e->cfg.rails_exclude = e->cfg_strings[4];
	e->cfg.driver_params = e->cfg_strings[5];
	return MRAIL_OK;
}

void config_free_strings(struct mrail_engine *e)
{
	for (int i = 0; i < 6; i++) {
		free(e->cfg_strings[i]);
		e->cfg_strings[i] = NULL;
	}
}
