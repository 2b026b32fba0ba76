/*
 * libfabric is loaded when an engine first opens the ofi driver, not linked
 * into libmrail: applications that never ask for ofi do not load it (nor
 * the provider libraries it pulls in, some of which install process-wide
 * signal handlers from their constructors), and libmrail runs on machines
 * without libfabric. Only these five entry points are real symbols; the
 * rest of the API is inline calls through the objects they return.
 */
#include "drivers/ofi/ofi_internal.h"
#include "util/log.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <pthread.h>

struct ofi_lib ofi_lib;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_rc = MRAIL_ERR_NOT_FOUND;

static void load(void)
{
	/* MRAIL_OFI_LIBRARY: a libfabric of one's own (a vendor's, in a
	 * prefix the loader does not search). */
	const char *lib = getenv("MRAIL_OFI_LIBRARY");
	void *h;

	if (!lib || !*lib)
		lib = "libfabric.so.1";
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		mrail_error("ofi: the ofi driver is built in, but libfabric "
			    "cannot be loaded: %s (install libfabric1, or name "
			    "the library in MRAIL_OFI_LIBRARY; the other "
			    "drivers work without it)",
			    dlerror());
		return;
	}
	/* The versions our headers were written for (FABRIC_1.3 has the
	 * fi_info layout of FI_VERSION(1, 9) and later). */
	ofi_lib.getinfo = dlvsym(h, "fi_getinfo", "FABRIC_1.3");
	ofi_lib.freeinfo = dlvsym(h, "fi_freeinfo", "FABRIC_1.3");
	ofi_lib.dupinfo = dlvsym(h, "fi_dupinfo", "FABRIC_1.3");
	ofi_lib.fabric = dlvsym(h, "fi_fabric", "FABRIC_1.1");
	ofi_lib.strerror = dlvsym(h, "fi_strerror", "FABRIC_1.0");
	if (!ofi_lib.getinfo || !ofi_lib.freeinfo || !ofi_lib.dupinfo ||
	    !ofi_lib.fabric || !ofi_lib.strerror) {
		mrail_error("ofi: libfabric.so.1 lacks fi_getinfo@FABRIC_1.3 "
			    "or another entry point this driver needs (too "
			    "old?)");
		return; /* the handle stays: a partial table is never used */
	}
	load_rc = MRAIL_OK;
}

int ofi_lib_load(void)
{
	pthread_once(&once, load);
	return load_rc;
}
