/*
 * External strategies: shared objects found through MRAIL_STRATEGY_PATH
 * (strategy.h, "External strategies", has the rules).
 */
#include "mrail.h"
#include "strategies/strategy.h"
#include "util/log.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Why `ops` cannot be used, or NULL. */
static const char *check_ops(const struct mrail_strategy_ops *ops,
			     const char *name, char *why, size_t cap)
{
	if (ops->abi_version != MRAIL_STRATEGY_ABI_VERSION) {
		snprintf(why, cap, "has strategy ABI %u, this libmrail needs %u",
			 ops->abi_version, MRAIL_STRATEGY_ABI_VERSION);
		return why;
	}
	if (!ops->name || strcmp(ops->name, name)) {
		snprintf(why, cap, "names its strategy '%s', expected '%s'",
			 ops->name ? ops->name : "(null)", name);
		return why;
	}
	/* peer_init, peer_fini and rail_idle are optional. */
	const char *missing = !ops->init ? "init" : !ops->fini ? "fini"
			      : !ops->eager_rail ? "eager_rail"
			      : !ops->rdv_split ? "rdv_split" : NULL;
	if (missing) {
		snprintf(why, cap, "has no %s operation (NULL)", missing);
		return why;
	}
	return NULL;
}

static int load_file(const char *file, const char *name,
		     const struct mrail_strategy_ops **ops, void **handle)
{
	char why[160];
	void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *err = dlerror();
		mrail_error("MRAIL_STRATEGY=%s: cannot load plugin %s: %s", name,
			    file, err ? err : "dlopen failed");
		return MRAIL_ERR_CONFIG;
	}
	dlerror();
	const struct mrail_strategy_ops *o =
		dlsym(h, MRAIL_STRATEGY_PLUGIN_SYMBOL);
	if (!o) {
		mrail_error("MRAIL_STRATEGY=%s: plugin %s exports no '%s' "
			    "(a const struct mrail_strategy_ops with default "
			    "visibility)", name, file,
			    MRAIL_STRATEGY_PLUGIN_SYMBOL);
		dlclose(h);
		return MRAIL_ERR_CONFIG;
	}
	if (check_ops(o, name, why, sizeof why)) {
		mrail_error("MRAIL_STRATEGY=%s: plugin %s %s", name, file, why);
		dlclose(h);
		return MRAIL_ERR_CONFIG;
	}
	mrail_info("strategy '%s' loaded from %s", name, file);
	*ops = o;
	*handle = h;
	return MRAIL_OK;
}

int mrail_strategy_load(const char *name, const char *search_path,
			const struct mrail_strategy_ops **ops, void **handle)
{
	static const char *const patterns[] = {"%s/%s.so",
					       "%s/libmrail-strategy-%s.so"};
	char file[PATH_MAX];

	*ops = NULL;
	*handle = NULL;
	if (!*name || name[0] == '.' || strchr(name, '/')) {
		mrail_error("MRAIL_STRATEGY: invalid strategy name '%s'", name);
		return MRAIL_ERR_CONFIG;
	}
	if (!search_path || !*search_path) {
		mrail_error("MRAIL_STRATEGY: unknown strategy '%s' (built-in: "
			    "%s; MRAIL_STRATEGY_PATH is not set, so no plugin "
			    "was searched)", name, mrail_strategy_names());
		return MRAIL_ERR_CONFIG;
	}
	for (const char *dir = search_path; *dir;) {
		size_t len = strcspn(dir, ":");
		if (len > 0 && len < PATH_MAX / 2) {
			char d[PATH_MAX / 2];
			memcpy(d, dir, len);
			d[len] = '\0';
			for (size_t i = 0; i < 2; i++) {
				int k = snprintf(file, sizeof file, patterns[i],
						 d, name);
				if (k < 0 || (size_t)k >= sizeof file)
					continue;
				if (access(file, F_OK) == 0)
					return load_file(file, name, ops,
							 handle);
			}
		}
		dir += len;
		if (*dir == ':')
			dir++;
	}
	mrail_error("MRAIL_STRATEGY: unknown strategy '%s': not built in (%s) "
		    "and no %s.so or libmrail-strategy-%s.so in "
		    "MRAIL_STRATEGY_PATH=%s", name, mrail_strategy_names(), name,
		    name, search_path);
	return MRAIL_ERR_CONFIG;
}

void mrail_strategy_unload(void *handle)
{
	if (handle)
		dlclose(handle);
}
