/*
 * coll/sdn: announces the communication pattern of Bcast, Reduce and
 * Allreduce to the SDN controller before running them
 * (docs/sdn-controller.md). Stacked over the selected modules the way
 * coll/monitoring is: highest priority, the underlying functions saved at
 * enable time and used for everything it does not announce. To make the
 * announcement exact it pins the algorithm: the Open MPI base functions
 * whose pairs coll_sdn_pattern.c reproduces.
 */
#include "ompi_config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/group/group.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/coll/base/coll_base_functions.h"
#include "ompi/mca/rte/rte.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

#include "coll_sdn_pattern.h"
#include "ctrl_client.h"

#define SDN_MAX_COMM 4096u /* the tag's comm field (docs/sdn.md) */

struct sdn_module {
	mca_coll_base_module_t super;
	/* The modules underneath, for what this one does not pin. */
	mca_coll_base_module_bcast_fn_t u_bcast;
	mca_coll_base_module_t *u_bcast_module;
	mca_coll_base_module_reduce_fn_t u_reduce;
	mca_coll_base_module_t *u_reduce_module;
	mca_coll_base_module_allreduce_fn_t u_allreduce;
	mca_coll_base_module_t *u_allreduce_module;
	int *world; /* comm rank -> MPI_COMM_WORLD rank */
	/* Per root (bcast, reduce) and for allreduce: announced once (or
	 * tried once: a refused pattern is not retried at every call), so a
	 * repeated collective costs one load; the pairs depend on nothing
	 * else for a given communicator. */
	unsigned char *bcast_done, *reduce_done, allreduce_done;
};
typedef struct sdn_module sdn_module_t;
/* OBJ_NEW leaves a subclass's own fields as malloc left them. */
static void sdn_module_construct(sdn_module_t *m)
{
	memset((char *)m + sizeof(m->super), 0, sizeof(*m) - sizeof(m->super));
}
static OBJ_CLASS_INSTANCE(sdn_module_t, mca_coll_base_module_t,
			  sdn_module_construct, NULL);

static int sdn_priority = 90;
static char *sdn_controller;
static int sdn_sync = -1;
static int sdn_timeout_ms = 5000;

/* One connection per process, shared by all communicators. */
static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mrail_sdn_ctrl *ctl;
static int ctl_state; /* 0 not tried, 1 up, -1 off */
static int ctl_sync;
static char job[32];

static int sdn_register(void);
static int sdn_init_query(bool threads, bool mpi_threads);
static mca_coll_base_module_t *sdn_comm_query(struct ompi_communicator_t *c,
					      int *priority);

OMPI_DECLSPEC extern mca_coll_base_component_2_0_0_t
	mca_coll_sdn_component;
mca_coll_base_component_2_0_0_t mca_coll_sdn_component = {
	.collm_version = {
		MCA_COLL_BASE_VERSION_2_0_0,
		.mca_component_name = "sdn",
		MCA_BASE_MAKE_VERSION(component, 1, 0, 0),
		.mca_register_component_params = sdn_register,
	},
	.collm_data = { MCA_BASE_METADATA_PARAM_CHECKPOINT },
	.collm_init_query = sdn_init_query,
	.collm_comm_query = sdn_comm_query,
};

static int sdn_register(void)
{
	mca_base_component_t *v = &mca_coll_sdn_component.collm_version;

	mca_base_component_var_register(v, "priority",
		"Priority of coll sdn (above the module it stacks on)",
		MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9,
		MCA_BASE_VAR_SCOPE_READONLY, &sdn_priority);
	sdn_controller = NULL;
	mca_base_component_var_register(v, "controller",
		"SDN controller host:port (MRAIL_SDN_CONTROLLER); unset: off",
		MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4,
		MCA_BASE_VAR_SCOPE_READONLY, &sdn_controller);
	mca_base_component_var_register(v, "sync",
		"1: wait for the controller's ACK before each new pattern "
		"(MRAIL_SDN_SYNC)", MCA_BASE_VAR_TYPE_INT, NULL, 0, 0,
		OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY, &sdn_sync);
	mca_base_component_var_register(v, "timeout",
		"Controller reply timeout, ms", MCA_BASE_VAR_TYPE_INT, NULL, 0,
		0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
		&sdn_timeout_ms);
	return OMPI_SUCCESS;
}

static const char *controller_addr(void)
{
	const char *mode = getenv("MRAIL_SDN");

	/* MRAIL_SDN=none turns every SDN hook off, this one included. */
	if (mode && strcmp(mode, "none") == 0)
		return NULL;
	if (sdn_controller && *sdn_controller)
		return sdn_controller;
	mode = getenv("MRAIL_SDN_CONTROLLER");
	return mode && *mode ? mode : NULL;
}

static int ctl_up(void);

/*
 * HELLO here, at MPI_Init's component selection (Open MPI 4.1: after the
 * modex fence, before add_procs and the fence that ends MPI_Init), so
 * every rank's HELLO is acknowledged before any process can send an MPI
 * message, the only traffic the MTL tags (its wire-up traffic is sent
 * untagged). The controller installs a rank's fallback flows when it
 * takes the rank's HELLO; at communicator selection, after that fence, a
 * tagged packet could reach a rank whose HELLO was not in yet and was
 * dropped, and with a controller slow to answer (a loaded machine) the
 * connections sending them hit the default rail timeout and the job
 * failed (sdn e2e in CI).
 */
static int sdn_init_query(bool threads, bool mpi_threads)
{
	(void)threads;
	(void)mpi_threads;
	if (!controller_addr())
		return OMPI_ERROR;
	pthread_mutex_lock(&ctl_lock);
	ctl_up();
	pthread_mutex_unlock(&ctl_lock);
	/* Selected even when the controller is off for this rank: the
	 * module's algorithms are the same either way, only announcing
	 * stops. Left out on one rank, that rank ran the default
	 * collectives' algorithms against the others' pinned ones and the
	 * job hung (a HELLO past its timeout on one of 4 ranks). */
	return OMPI_SUCCESS;
}

static void ctl_off(const char *why)
{
	opal_output(0, "coll sdn: %s; patterns are no longer announced", why);
	mrail_sdn_ctrl_close(ctl);
	ctl = NULL;
	ctl_state = -1;
}

/* Connect and say HELLO once per process; called under ctl_lock. */
static int ctl_up(void)
{
	char err[256], host[128], rails[4096];
	const char *env;
	int rc;

	if (ctl_state)
		return ctl_state > 0;
	env = getenv("MRAIL_SDN_SYNC");
	if (sdn_sync >= 0) {
		ctl_sync = sdn_sync > 0;
	} else if (env && strcmp(env, "0") != 0 && strcmp(env, "1") != 0) {
		opal_output(0, "coll sdn: MRAIL_SDN_SYNC='%s' is not 0 or 1; "
			    "not waiting for the controller", env);
		ctl_sync = 0;
	} else {
		ctl_sync = env && env[0] == '1';
	}
	snprintf(job, sizeof(job), "%lu",
		 (unsigned long)OPAL_PROC_MY_NAME.jobid);
	if (gethostname(host, sizeof(host)) != 0)
		strcpy(host, "unknown");
	host[sizeof(host) - 1] = '\0';
	for (char *p = host; *p; p++)
		if (*p <= ' ')
			*p = '_';
	rc = mrail_sdn_ctrl_connect(controller_addr(), sdn_timeout_ms, &ctl,
				    err, sizeof(err));
	if (rc) {
		ctl_off(err);
		return 0;
	}
	rc = mrail_sdn_ctrl_local_rails(rails, sizeof(rails));
	if (rc || !rails[0]) {
		snprintf(err, sizeof(err), "this host's interfaces: %s",
			 rc ? strerror(-rc) : "none up with an IPv4 address");
		ctl_off(err);
		return 0;
	}
	/* MPI_COMM_WORLD does not exist yet (sdn_init_query): a job of one
	 * world, whose ranks are the vpids. */
	rc = mrail_sdn_ctrl_hello(ctl, job, (unsigned)OPAL_PROC_MY_NAME.vpid,
				  (unsigned)ompi_process_info.num_procs, host,
				  rails);
	if (rc) {
		ctl_off(mrail_sdn_ctrl_error(ctl));
		return 0;
	}
	ctl_state = 1;
	return 1;
}

/*
 * Announce pairs (comm ranks, translated here) before the collective:
 * the root sends the pattern; in sync mode every rank waits until the
 * controller has installed it. Failures warn and the collective runs.
 */
static void announce(struct sdn_module *m, struct ompi_communicator_t *comm,
		     const char *prim, int root, struct mrail_sdn_pair *pairs,
		     size_t n)
{
	uint64_t key;
	int rc = 0, me = ompi_comm_rank(comm);

	if (n == 0 || comm->c_contextid >= SDN_MAX_COMM)
		return;
	for (size_t i = 0; i < n; i++) {
		pairs[i].src = (uint32_t)m->world[pairs[i].src];
		pairs[i].dst = (uint32_t)m->world[pairs[i].dst];
	}
	key = mrail_sdn_ctrl_pattern_key(comm->c_contextid, prim, pairs, n);
	pthread_mutex_lock(&ctl_lock);
	if (ctl_state > 0) {
		if (me == root)
			rc = mrail_sdn_ctrl_pattern(ctl, job, comm->c_contextid,
						    prim,
						    (unsigned)m->world[root],
						    pairs, n, ctl_sync);
		else if (ctl_sync)
			rc = mrail_sdn_ctrl_wait(ctl, job, key);
		if (rc == -EREMOTEIO || rc == -ETIMEDOUT)
			opal_output(0, "coll sdn: %s: %s runs on the "
				    "default routes", mrail_sdn_ctrl_error(ctl),
				    prim);
		else if (rc)
			ctl_off(mrail_sdn_ctrl_error(ctl));
	}
	pthread_mutex_unlock(&ctl_lock);
}

static struct mrail_sdn_pair *pairs_alloc(size_t n)
{
	return malloc((n ? n : 1) * sizeof(struct mrail_sdn_pair));
}

/* Our pairs against the tree the base function will use (this rank's
 * view): a different Open MPI would make the announcement wrong. */
static int tree_matches(struct ompi_communicator_t *comm,
			mca_coll_base_module_t *module, int root,
			const struct mrail_sdn_pair *p, size_t n)
{
	int me = ompi_comm_rank(comm), kids = 0;
	ompi_coll_tree_t *t;

	COLL_BASE_UPDATE_BMTREE(comm, module, root);
	t = module->base_data->cached_bmtree;
	if (!t)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if ((int)p[i].dst == me && t->tree_prev != (int)p[i].src)
			return 0;
		if ((int)p[i].src != me)
			continue;
		int found = 0;
		for (int k = 0; k < t->tree_nextsize; k++)
			found |= t->tree_next[k] == (int)p[i].dst;
		if (!found)
			return 0;
		kids++;
	}
	return kids == t->tree_nextsize;
}

static int sdn_bcast(void *buf, int count, struct ompi_datatype_t *dt,
		     int root, struct ompi_communicator_t *comm,
		     mca_coll_base_module_t *module)
{
	struct sdn_module *m = (struct sdn_module *)module;
	unsigned size = (unsigned)ompi_comm_size(comm);
	struct mrail_sdn_pair *p;

	if (m->bcast_done[root])
		goto run;
	if (!(p = pairs_alloc(size)))
		return m->u_bcast(buf, count, dt, root, comm, m->u_bcast_module);
	size_t n = mrail_sdn_pairs_bcast_binomial(size, (unsigned)root, p);
	if (!tree_matches(comm, module, root, p, n)) {
		opal_output(0, "coll sdn: the binomial tree of this Open MPI "
			    "is not the one announced; bcast not announced");
		n = 0;
	}
	announce(m, comm, "bcast", root, p, n);
	m->bcast_done[root] = 1;
	free(p);
run:
	return ompi_coll_base_bcast_intra_binomial(buf, count, dt, root, comm,
						   module, 0);
}

static int sdn_reduce(const void *sbuf, void *rbuf, int count,
		      struct ompi_datatype_t *dt, struct ompi_op_t *op,
		      int root, struct ompi_communicator_t *comm,
		      mca_coll_base_module_t *module)
{
	struct sdn_module *m = (struct sdn_module *)module;
	unsigned size = (unsigned)ompi_comm_size(comm);
	struct mrail_sdn_pair *p;

	if (m->reduce_done[root])
		goto run;
	if (!(p = pairs_alloc(size)))
		return m->u_reduce(sbuf, rbuf, count, dt, op, root, comm,
				   m->u_reduce_module);
	announce(m, comm, "reduce", root, p,
		 mrail_sdn_pairs_reduce_linear(size, (unsigned)root, p));
	m->reduce_done[root] = 1;
	free(p);
run:
	return ompi_coll_base_reduce_intra_basic_linear(sbuf, rbuf, count, dt,
							op, root, comm, module);
}

static int sdn_allreduce(const void *sbuf, void *rbuf, int count,
			 struct ompi_datatype_t *dt, struct ompi_op_t *op,
			 struct ompi_communicator_t *comm,
			 mca_coll_base_module_t *module)
{
	struct sdn_module *m = (struct sdn_module *)module;
	unsigned size = (unsigned)ompi_comm_size(comm);
	struct mrail_sdn_pair *p;
	/* Recursive doubling combines in rank-pair order: only for
	 * commutative operations; the others keep the module underneath. */
	int commute = 0;

	if (MPI_Op_commutative(op, &commute) != MPI_SUCCESS || !commute)
		return m->u_allreduce(sbuf, rbuf, count, dt, op, comm,
				      m->u_allreduce_module);
	if (m->allreduce_done)
		goto run;
	if (!(p = pairs_alloc(mrail_sdn_pairs_allreduce_max(size))))
		return m->u_allreduce(sbuf, rbuf, count, dt, op, comm,
				      m->u_allreduce_module);
	announce(m, comm, "allreduce", 0, p,
		 mrail_sdn_pairs_allreduce_rdbl(size, p));
	m->allreduce_done = 1;
	free(p);
run:
	return ompi_coll_base_allreduce_intra_recursivedoubling(
		sbuf, rbuf, count, dt, op, comm, module);
}

#define SAVE(m, comm, f)                                                   \
	do {                                                               \
		(m)->u_##f = (comm)->c_coll->coll_##f;                     \
		(m)->u_##f##_module = (comm)->c_coll->coll_##f##_module;   \
		if (!(m)->u_##f || !(m)->u_##f##_module)                   \
			return OMPI_ERROR;                                 \
		OBJ_RETAIN((m)->u_##f##_module);                           \
	} while (0)

static int sdn_enable(mca_coll_base_module_t *module,
		      struct ompi_communicator_t *comm)
{
	struct sdn_module *m = (struct sdn_module *)module;
	int size = ompi_comm_size(comm);

	SAVE(m, comm, bcast);
	SAVE(m, comm, reduce);
	SAVE(m, comm, allreduce);
	m->world = malloc((size_t)size * sizeof(int));
	m->bcast_done = calloc((size_t)size, 1);
	m->reduce_done = calloc((size_t)size, 1);
	int *ranks = malloc((size_t)size * sizeof(int));
	if (!m->world || !ranks || !m->bcast_done || !m->reduce_done) {
		free(ranks);
		return OMPI_ERR_OUT_OF_RESOURCE;
	}
	for (int i = 0; i < size; i++)
		ranks[i] = i;
	int rc = ompi_group_translate_ranks(comm->c_local_group, size, ranks,
					    ompi_mpi_comm_world.comm.c_local_group,
					    m->world);
	free(ranks);
	for (int i = 0; rc == OMPI_SUCCESS && i < size; i++)
		if (m->world[i] < 0) /* a process of another job */
			rc = OMPI_ERROR;
	return rc;
}

static int sdn_disable(mca_coll_base_module_t *module,
		       struct ompi_communicator_t *comm)
{
	struct sdn_module *m = (struct sdn_module *)module;

	(void)comm;
	if (m->u_bcast_module)
		OBJ_RELEASE(m->u_bcast_module);
	if (m->u_reduce_module)
		OBJ_RELEASE(m->u_reduce_module);
	if (m->u_allreduce_module)
		OBJ_RELEASE(m->u_allreduce_module);
	m->u_bcast_module = m->u_reduce_module = m->u_allreduce_module = NULL;
	free(m->world);
	free(m->bcast_done);
	free(m->reduce_done);
	m->world = NULL;
	m->bcast_done = m->reduce_done = NULL;
	return OMPI_SUCCESS;
}

static mca_coll_base_module_t *sdn_comm_query(struct ompi_communicator_t *c,
					      int *priority)
{
	struct sdn_module *m;

	if (OMPI_COMM_IS_INTER(c) || ompi_comm_size(c) < 2 ||
	    sdn_priority <= 0)
		return NULL;
	m = OBJ_NEW(sdn_module_t);
	if (!m)
		return NULL;
	/* The base algorithms cache their trees here. */
	m->super.base_data = OBJ_NEW(mca_coll_base_comm_t);
	if (!m->super.base_data) {
		OBJ_RELEASE(m);
		return NULL;
	}
	m->super.coll_module_enable = sdn_enable;
	m->super.coll_module_disable = sdn_disable;
	m->super.coll_bcast = sdn_bcast;
	m->super.coll_reduce = sdn_reduce;
	m->super.coll_allreduce = sdn_allreduce;
	*priority = sdn_priority;
	return &m->super;
}
