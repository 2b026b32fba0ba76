/*
 * The mrail MTL module: engine life cycle, address exchange, peers,
 * progress.
 */
#include "mtl_mrail.h"
#include "mtl_mrail_bits.h"
#include "sdn_node.h"

#include "ompi/communicator/communicator.h"
#include "ompi/proc/proc.h"
#include "ompi/mca/rte/rte.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(MRAIL_MTL_ANY_SOURCE == MPI_ANY_SOURCE, "MPI_ANY_SOURCE");
_Static_assert(MRAIL_MTL_ANY_TAG == MPI_ANY_TAG, "MPI_ANY_TAG");

/* Communicators need no state here: the context id in the match bits is
 * all the engine sees. */
static int mtl_mrail_comm_noop(struct mca_mtl_base_module_t *mtl,
			       struct ompi_communicator_t *comm)
{
	(void)mtl;
	(void)comm;
	return OMPI_SUCCESS;
}

struct mca_mtl_mrail_module ompi_mtl_mrail = {
	.super = {
		.mtl_max_contextid = MRAIL_MTL_MAX_CID,
		.mtl_max_tag = MRAIL_MTL_MAX_TAG,
		/* The engine needs both sides of a pair added: make Open MPI
		 * add every process of the world at init. */
		.mtl_flags = MCA_MTL_BASE_FLAG_REQUIRE_WORLD,
		.mtl_add_procs = mtl_mrail_add_procs,
		.mtl_del_procs = mtl_mrail_del_procs,
		.mtl_finalize = mtl_mrail_finalize,
		.mtl_send = mtl_mrail_send,
		.mtl_isend = mtl_mrail_isend,
		.mtl_irecv = mtl_mrail_irecv,
		.mtl_iprobe = mtl_mrail_iprobe,
		.mtl_imrecv = mtl_mrail_imrecv,
		.mtl_improbe = mtl_mrail_improbe,
		.mtl_cancel = mtl_mrail_cancel,
		/* cm calls these without checking for NULL. */
		.mtl_add_comm = mtl_mrail_comm_noop,
		.mtl_del_comm = mtl_mrail_comm_noop,
	},
};

static int mtl_mrail_progress(void)
{
	int n = mrail_progress(ompi_mtl_mrail.engine);
	return n > 0 ? n : 0;
}

int mtl_mrail_error(int err)
{
	switch (err) {
	case MRAIL_OK:
		return OMPI_SUCCESS;
	case MRAIL_ERR_TRUNCATE:
		return MPI_ERR_TRUNCATE;
	case MRAIL_ERR_NOMEM:
		return OMPI_ERR_OUT_OF_RESOURCE;
	case MRAIL_ERR_PEER:
	case MRAIL_ERR_PEER_CLOSED:
		return OMPI_ERR_UNREACH;
	case MRAIL_ERR_INVALID:
		return OMPI_ERR_BAD_PARAM;
	default:
		return OMPI_ERROR;
	}
}

static int parse_level(const char *s, int *level)
{
	static const char *names[] = { "single", "serialized", "multiple" };
	for (int i = 0; i < 3; i++)
		if (!strcmp(s, names[i])) {
			*level = i;
			return 0;
		}
	return -1;
}

static int parse_rdv(const char *s, int *rdv)
{
	static const char *names[] = { "auto", "get", "put", "send" };
	for (int i = 0; i < 4; i++)
		if (!strcmp(s, names[i])) {
			*rdv = i;
			return 0;
		}
	return -1;
}

/* MCA parameters override the MRAIL_* environment, field by field. */
static int apply_params(struct mrail_config *cfg, bool mpi_threads)
{
	struct mca_mtl_mrail_module *m = &ompi_mtl_mrail;

	if (m->drivers)
		cfg->drivers = m->drivers;
	if (m->rails)
		cfg->rails = m->rails;
	if (m->rails_exclude)
		cfg->rails_exclude = m->rails_exclude;
	if (m->driver_params)
		cfg->driver_params = m->driver_params;
	if (m->strategy)
		cfg->strategy = m->strategy;
	if (m->log_level >= 0)
		cfg->log_level = m->log_level;
	if (m->progress_thread >= 0)
		cfg->progress_thread = m->progress_thread;
	if (m->eager_max >= 0)
		cfg->eager_max = (size_t)m->eager_max;
	if (m->connect_timeout > 0)
		cfg->connect_timeout = m->connect_timeout;
	if (m->rdv && parse_rdv(m->rdv, &cfg->rdv_protocol)) {
		opal_output(0, "mtl mrail: mtl_mrail_rdv=\"%s\" is not "
			    "auto|get|put|send", m->rdv);
		return OMPI_ERR_BAD_PARAM;
	}
	/* opal_progress may run in any thread that waits, but never two at
	 * once unless MPI_THREAD_MULTIPLE was asked for. */
	cfg->thread_level = mpi_threads ? MRAIL_THREAD_MULTIPLE
					: MRAIL_THREAD_SERIALIZED;
	if (m->thread_level &&
	    parse_level(m->thread_level, &cfg->thread_level)) {
		opal_output(0, "mtl mrail: mtl_mrail_thread_level=\"%s\" is "
			    "not single|serialized|multiple", m->thread_level);
		return OMPI_ERR_BAD_PARAM;
	}
	/* Open MPI will answer MPI_THREAD_MULTIPLE: an engine that cannot
	 * take concurrent calls would make that answer a lie. */
	if (mpi_threads && cfg->thread_level != MRAIL_THREAD_MULTIPLE) {
		opal_output(0, "mtl mrail: MPI_THREAD_MULTIPLE asked but "
			    "mtl_mrail_thread_level=%s: not used",
			    m->thread_level);
		return OMPI_ERR_NOT_SUPPORTED;
	}
	/* Open MPI exchanges the addresses (modex), not mrail-run. */
	cfg->bootstrap = 0;
	return OMPI_SUCCESS;
}

static int publish_address(void)
{
	size_t len = MRAIL_ADDR_MAX;
	unsigned char *blob =
		malloc(sizeof(struct mrail_mtl_modex_hdr) + MRAIL_ADDR_MAX);
	if (!blob)
		return OMPI_ERR_OUT_OF_RESOURCE;
	int rc = mrail_address(ompi_mtl_mrail.engine,
			       blob + sizeof(struct mrail_mtl_modex_hdr), &len);
	if (rc != MRAIL_OK) {
		opal_output(0, "mtl mrail: mrail_address: %s",
			    mrail_strerror(rc));
		free(blob);
		return OMPI_ERROR;
	}
	struct mrail_mtl_modex_hdr h = {
		.magic = MRAIL_MTL_MODEX_MAGIC,
		.version = MRAIL_MTL_BITS_VERSION,
		.addr_len = (uint32_t)len,
	};
	memcpy(blob, &h, sizeof h);
	OPAL_MODEX_SEND(rc, OPAL_PMIX_GLOBAL,
			&mca_mtl_mrail_component.super.mtl_version, blob,
			sizeof h + len);
	free(blob);
	if (rc != OPAL_SUCCESS)
		opal_output(0, "mtl mrail: modex send failed (%d)", rc);
	return rc;
}

/* SDN tagging asked for (mtl_mrail_sdn or MRAIL_SDN): its hooks go into
 * the engine's configuration so they see the first rails. A backend that
 * cannot start fails init: the user asked for tagged traffic. */
static int open_sdn(struct mrail_config *cfg)
{
	struct mrail_sdn_opts o = {
		.mode = ompi_mtl_mrail.sdn,
		.world_rank = OMPI_PROC_MY_NAME->vpid,
		.nprocs = ompi_process_info.num_procs,
		.fence_us = -1,
	};
	char err[512];
	int rc = mrail_sdn_open(&o, &ompi_mtl_mrail.sdn_tagger, err,
				sizeof err);
	if (rc) {
		opal_output(0, "mtl mrail: %s", err);
		return OMPI_ERR_BAD_PARAM;
	}
	if (ompi_mtl_mrail.sdn_tagger) {
		cfg->rail_hooks = mrail_sdn_hooks(ompi_mtl_mrail.sdn_tagger);
		cfg->rail_hooks_ctx = ompi_mtl_mrail.sdn_tagger;
	}
	return OMPI_SUCCESS;
}

int mtl_mrail_module_init(bool mpi_threads)
{
	struct mrail_config cfg;
	int rc = mrail_config_init(&cfg);

	if (rc != MRAIL_OK) {
		opal_output(0, "mtl mrail: bad MRAIL_* environment: %s (see "
			    "the libmrail log line above)", mrail_strerror(rc));
		return OMPI_ERR_BAD_PARAM;
	}
	if (apply_params(&cfg, mpi_threads) != OMPI_SUCCESS)
		return OMPI_ERR_BAD_PARAM;
	if (ompi_process_info.num_procs > MRAIL_MTL_MAX_RANK + 1) {
		opal_output(0, "mtl mrail: %u processes, the match bits hold "
			    "ranks up to %u (docs/mpi-ompi.md)",
			    (unsigned)ompi_process_info.num_procs,
			    MRAIL_MTL_MAX_RANK);
		return OMPI_ERR_NOT_SUPPORTED;
	}
	if (open_sdn(&cfg) != OMPI_SUCCESS)
		return OMPI_ERR_BAD_PARAM;
	rc = mrail_engine_create(&cfg, &ompi_mtl_mrail.engine);
	if (rc != MRAIL_OK) {
		opal_output(0, "mtl mrail: mrail_engine_create: %s",
			    mrail_strerror(rc));
		mrail_sdn_close(ompi_mtl_mrail.sdn_tagger);
		ompi_mtl_mrail.sdn_tagger = NULL;
		return OMPI_ERROR;
	}
	/* Logs, traces and dumps then name world ranks, as MPI does. */
	(void)mrail_set_job_rank(ompi_mtl_mrail.engine,
				 ompi_process_info.my_name.vpid,
				 ompi_process_info.num_procs);
	if (publish_address() != OPAL_SUCCESS) {
		mrail_engine_destroy(ompi_mtl_mrail.engine);
		ompi_mtl_mrail.engine = NULL;
		mrail_sdn_close(ompi_mtl_mrail.sdn_tagger);
		ompi_mtl_mrail.sdn_tagger = NULL;
		return OMPI_ERROR;
	}
	OBJ_CONSTRUCT(&ompi_mtl_mrail.lock, opal_mutex_t);
	ompi_mtl_mrail.super.mtl_request_size =
		sizeof(struct mtl_mrail_request) - sizeof(mca_mtl_request_t) +
		mrail_request_size() + _Alignof(max_align_t);
	opal_progress_register(mtl_mrail_progress);
	if (ompi_mtl_mrail.verbose > 0)
		opal_output(0, "mtl mrail: engine up, thread level %d "
			    "(asked: MPI threads %s)",
			    mrail_thread_level(ompi_mtl_mrail.engine),
			    mpi_threads ? "yes" : "no");
	return OMPI_SUCCESS;
}

/* mtl_mrail_verbose >= 1: where each peer's bytes went and which model
 * planned them (nominal figures under mpirun without profiles split as if
 * all rails were equal: docs/mpi-ompi.md "Rails and models"). */
static void report_rails(void)
{
	mrail_engine_t *e = ompi_mtl_mrail.engine;
	uint32_t n = mrail_peer_count(e);
	for (uint32_t p = 0; p < n; p++) {
		int nr = mrail_rail_count(e, (mrail_peer_t)p);
		for (int i = 0; i < nr; i++) {
			struct mrail_rail_info ri;
			struct mrail_rail_stats rs;
			if (mrail_rail_info(e, (mrail_peer_t)p, i, &ri) ||
			    mrail_rail_stats(e, (mrail_peer_t)p, i, &rs))
				continue;
			opal_output(0, "mtl mrail: peer %u rail %d %s %s: model "
				    "%s %.0f MB/s %.1f us; sent %llu B in %llu "
				    "msgs + %llu chunks, received %llu B",
				    p, i, ri.driver, ri.local_if, ri.model,
				    ri.bandwidth / 1e6, ri.latency * 1e6,
				    (unsigned long long)rs.tx_bytes,
				    (unsigned long long)rs.tx_msgs,
				    (unsigned long long)rs.tx_chunks,
				    (unsigned long long)rs.rx_bytes);
		}
	}
}

int mtl_mrail_finalize(struct mca_mtl_base_module_t *mtl)
{
	(void)mtl;
	if (ompi_mtl_mrail.verbose > 0)
		report_rails();
	opal_progress_unregister(mtl_mrail_progress);
	int rc = mrail_engine_destroy(ompi_mtl_mrail.engine);
	if (ompi_mtl_mrail.sdn_tagger && ompi_mtl_mrail.verbose > 0) {
		struct mrail_sdn_stats s;
		mrail_sdn_get_stats(ompi_mtl_mrail.sdn_tagger, &s);
		opal_output(0, "mtl mrail: sdn registered %llu unregistered "
			    "%llu retags %llu fences %llu fence_timeouts %llu "
			    "untagged %llu errors %llu",
			    (unsigned long long)s.registered,
			    (unsigned long long)s.unregistered,
			    (unsigned long long)s.retags,
			    (unsigned long long)s.fences,
			    (unsigned long long)s.fence_timeouts,
			    (unsigned long long)s.untagged,
			    (unsigned long long)s.errors);
	}
	ompi_mtl_mrail.engine = NULL;
	/* After the engine: its rail_down hooks used it. */
	mrail_sdn_close(ompi_mtl_mrail.sdn_tagger);
	ompi_mtl_mrail.sdn_tagger = NULL;
	OBJ_DESTRUCT(&ompi_mtl_mrail.lock);
	return rc == MRAIL_OK ? OMPI_SUCCESS : OMPI_ERROR;
}

/* The peer id is kept in the proc's MTL endpoint slot as id + 1 (0 is
 * "not added"). */
static int add_one(struct ompi_proc_t *proc)
{
	struct mrail_mtl_modex_hdr h;
	unsigned char *blob = NULL;
	size_t size = 0;
	int rc;

	if (proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_MTL])
		return OMPI_SUCCESS;
	OPAL_MODEX_RECV(rc, &mca_mtl_mrail_component.super.mtl_version,
			&proc->super.proc_name, (void **)&blob, &size);
	if (rc != OPAL_SUCCESS || !blob) {
		opal_output(0, "mtl mrail: no mrail address from %s (is every "
			    "process using --mca mtl mrail?)",
			    OPAL_NAME_PRINT(proc->super.proc_name));
		return OMPI_ERR_UNREACH;
	}
	const char *why = NULL;
	if (size < sizeof h)
		why = "shorter than its header";
	else {
		memcpy(&h, blob, sizeof h);
		if (h.magic != MRAIL_MTL_MODEX_MAGIC)
			why = "bad magic";
		else if (h.version != MRAIL_MTL_BITS_VERSION)
			why = "other match-bits version (rebuild both)";
		else if (h.addr_len != size - sizeof h)
			why = "length does not match its header";
	}
	if (why) {
		opal_output(0, "mtl mrail: address from %s: %s",
			    OPAL_NAME_PRINT(proc->super.proc_name), why);
		free(blob);
		return OMPI_ERR_UNREACH;
	}
	mrail_peer_t peer;
	/* A process of another job (MPI_Comm_spawn) has a vpid of its own
	 * numbering: it stays "peer N" in libmrail's logs. */
	if (proc->super.proc_name.jobid == ompi_process_info.my_name.jobid)
		rc = mrail_peer_add_ranked(ompi_mtl_mrail.engine,
					   blob + sizeof h, h.addr_len,
					   proc->super.proc_name.vpid, &peer);
	else
		rc = mrail_peer_add(ompi_mtl_mrail.engine, blob + sizeof h,
				    h.addr_len, &peer);
	free(blob);
	if (rc != MRAIL_OK) {
		opal_output(0, "mtl mrail: mrail_peer_add(%s): %s",
			    OPAL_NAME_PRINT(proc->super.proc_name),
			    mrail_strerror(rc));
		return OMPI_ERR_UNREACH;
	}
	proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_MTL] =
		(void *)((uintptr_t)peer + 1);
	/* Tags name world ranks (a job of one world: the vpid). */
	mrail_sdn_set_peer_rank(ompi_mtl_mrail.sdn_tagger, peer,
				proc->super.proc_name.vpid);
	return OMPI_SUCCESS;
}

int mtl_mrail_add_procs(struct mca_mtl_base_module_t *mtl, size_t nprocs,
			struct ompi_proc_t **procs)
{
	static bool sampled;
	(void)mtl;
	for (size_t i = 0; i < nprocs; i++) {
		int rc = add_one(procs[i]);
		if (rc != OMPI_SUCCESS)
			return rc;
	}
	/* The world's add_procs at MPI_Init: every process is here, no
	 * application message exists yet. */
	if (!sampled) {
		sampled = true;
		mtl_mrail_sample_rails(nprocs, procs);
	}
	return OMPI_SUCCESS;
}

int mtl_mrail_del_procs(struct mca_mtl_base_module_t *mtl, size_t nprocs,
			struct ompi_proc_t **procs)
{
	/* Gates live until the engine closes: a peer's late messages must
	 * still find it. */
	(void)mtl;
	(void)nprocs;
	(void)procs;
	return OMPI_SUCCESS;
}

int mtl_mrail_peer_add(struct ompi_proc_t *proc, mrail_peer_t *peer)
{
	int rc = add_one(proc);
	if (rc != OMPI_SUCCESS)
		return rc;
	uintptr_t v = (uintptr_t)proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_MTL];
	*peer = (mrail_peer_t)(v - 1);
	return OMPI_SUCCESS;
}
