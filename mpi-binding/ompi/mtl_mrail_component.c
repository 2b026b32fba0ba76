/*
 * The mrail MTL component: MCA parameters and selection.
 */
#include "mtl_mrail.h"

#include "opal/mca/base/mca_base_var.h"
#include "opal/util/output.h"
#include "ompi/runtime/params.h"

#include <string.h>

static int mtl_mrail_register(void);
static int mtl_mrail_open(void);
static int mtl_mrail_close(void);
static int mtl_mrail_query(mca_base_module_t **module, int *priority);
static mca_mtl_base_module_t *mtl_mrail_init(bool progress_threads,
					     bool mpi_threads);

struct mca_mtl_mrail_component mca_mtl_mrail_component = {
	.super = {
		.mtl_version = {
			MCA_MTL_BASE_VERSION_2_0_0,
			.mca_component_name = "mrail",
			MCA_BASE_MAKE_VERSION(component, MRAIL_VERSION_MAJOR,
					      MRAIL_VERSION_MINOR, 0),
			.mca_open_component = mtl_mrail_open,
			.mca_close_component = mtl_mrail_close,
			.mca_query_component = mtl_mrail_query,
			.mca_register_component_params = mtl_mrail_register,
		},
		.mtl_data = { MCA_BASE_METADATA_PARAM_NONE },
		.mtl_init = mtl_mrail_init,
	},
};

static int reg_string(const char *name, const char *help, char **store)
{
	*store = NULL;
	return mca_base_component_var_register(
		&mca_mtl_mrail_component.super.mtl_version, name, help,
		MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4,
		MCA_BASE_VAR_SCOPE_READONLY, store);
}

static int reg_int(const char *name, const char *help, int *store)
{
	*store = -1;
	return mca_base_component_var_register(
		&mca_mtl_mrail_component.super.mtl_version, name, help,
		MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_4,
		MCA_BASE_VAR_SCOPE_READONLY, store);
}

/* Every parameter maps onto one MRAIL_* setting; unset ones leave the
 * environment (and the engine's defaults) in charge. */
static int mtl_mrail_register(void)
{
	struct mca_mtl_mrail_module *m = &ompi_mtl_mrail;

	reg_string("drivers", "Driver instances, comma list (MRAIL_DRIVERS, "
		   "default tcp,shm)", &m->drivers);
	reg_string("rails", "Interfaces or addresses rails may use "
		   "(MRAIL_RAILS, default: every interface that is up)",
		   &m->rails);
	reg_string("rails_exclude", "Interfaces or addresses never to use "
		   "(MRAIL_RAILS_EXCLUDE)", &m->rails_exclude);
	reg_string("driver_params", "Per-driver knobs "
		   "\"driver:key=value,...;...\" (MRAIL_DRIVER_PARAMS)",
		   &m->driver_params);
	reg_string("strategy", "Scheduling strategy name[:key=value,...] "
		   "(MRAIL_STRATEGY, default split)", &m->strategy);
	reg_string("rdv", "Rendezvous on RDMA rails: auto|get|put|send "
		   "(MRAIL_RDV)", &m->rdv);
	reg_string("sdn", "SDN tagging of MPI packets: none|unisonflow|bpf "
		   "(MRAIL_SDN, default none; docs/sdn.md)", &m->sdn);
	reg_string("thread_level", "Engine thread level single|serialized|"
		   "multiple (default: multiple when MPI_THREAD_MULTIPLE is "
		   "asked, else serialized)", &m->thread_level);
	reg_int("log_level", "libmrail log level 0 (error) .. 4 (trace) "
		"(MRAIL_LOG_LEVEL, default 1)", &m->log_level);
	reg_int("progress_thread", "1: a libmrail thread moves data in the "
		"background (MRAIL_PROGRESS_THREAD)", &m->progress_thread);
	reg_int("eager_max", "Largest eager message in bytes, max 1 MiB "
		"(MRAIL_EAGER_MAX; default: from rail profiles, else 32768)",
		&m->eager_max);
	m->connect_timeout = -1;
	mca_base_component_var_register(
		&mca_mtl_mrail_component.super.mtl_version, "connect_timeout",
		"Seconds to wait for a peer's rails (MRAIL_CONNECT_TIMEOUT)",
		MCA_BASE_VAR_TYPE_DOUBLE, NULL, 0, 0, OPAL_INFO_LVL_4,
		MCA_BASE_VAR_SCOPE_READONLY, &m->connect_timeout);
	m->iov_min_block = 4096;
	mca_base_component_var_register(
		&mca_mtl_mrail_component.super.mtl_version, "iov_min_block",
		"Non-contiguous datatypes of at most 64 blocks averaging at "
		"least this many bytes go as an iovec of user memory, others "
		"are packed; 0: always pack", MCA_BASE_VAR_TYPE_INT, NULL, 0,
		0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
		&m->iov_min_block);
	reg_int("verbose", "1: say at init which engine and thread level "
		"were chosen, with whom the rails were sampled, and at "
		"finalize each peer's rails (model, bytes); 2: also each "
		"datatype sent or received as an iovec of user memory",
		&m->verbose);
	return OMPI_SUCCESS;
}

static int mtl_mrail_open(void)
{
	return OMPI_SUCCESS;
}

static int mtl_mrail_close(void)
{
	return OMPI_SUCCESS;
}

/* Used only when the "mtl" selection names it (e.g. --mca mtl mrail): a
 * component dropped into the system directory must not silently move
 * every job of the machine from ob1 to cm. */
static bool explicitly_selected(void)
{
	int vari;
	const char **value = NULL;

	if (mca_base_var_find_by_name("mtl", &vari) != OPAL_SUCCESS ||
	    mca_base_var_get_value(vari, &value, NULL, NULL) != OPAL_SUCCESS ||
	    !value || !*value)
		return false;
	const char *s = *value;
	if (s[0] == '^')
		return false;
	size_t n = strlen("mrail");
	for (const char *p = s; (p = strstr(p, "mrail")); p += n)
		if ((p == s || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
			return true;
	return false;
}

static int mtl_mrail_query(mca_base_module_t **module, int *priority)
{
	if (!explicitly_selected()) {
		*module = NULL;
		return OMPI_ERR_NOT_AVAILABLE;
	}
	*priority = 10;
	*module = (mca_base_module_t *)&ompi_mtl_mrail.super;
	return OMPI_SUCCESS;
}

static mca_mtl_base_module_t *mtl_mrail_init(bool progress_threads,
					     bool mpi_threads)
{
	(void)progress_threads;
	if (mtl_mrail_module_init(mpi_threads) != OMPI_SUCCESS)
		return NULL;
	return &ompi_mtl_mrail.super;
}
