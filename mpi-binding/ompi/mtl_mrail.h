/*
 * The mrail MTL: Open MPI's cm PML over libmrail (docs/mpi-ompi.md).
 * Internal to the component; ompi_config.h must come first.
 */
#ifndef MTL_MRAIL_H
#define MTL_MRAIL_H

#include "ompi_config.h"
#include "ompi/mca/mtl/mtl.h"
#include "opal/threads/mutex.h"
#include "ompi/communicator/communicator.h"
#include "ompi/proc/proc.h"

#include <mrail.h>
#include <stdbool.h>
#include <sys/uio.h>

/* Most iovec entries handed to the engine for one message (it accepts
 * 1024; beyond a few dozen the pack copy is cheaper anyway). */
#define MTL_MRAIL_IOV_MAX 64

BEGIN_C_DECLS

struct mca_mtl_mrail_module {
	mca_mtl_base_module_t super;
	mrail_engine_t *engine;
	/* Orders cancel against completion (the engine releases a request
	 * once our callback returned; see docs/api.md "Callbacks"). */
	opal_mutex_t lock;
	/* MCA parameters (NULL / -1: not set, the MRAIL_* environment and
	 * the engine's defaults decide). */
	char *drivers, *rails, *rails_exclude, *driver_params, *strategy;
	char *rdv, *thread_level;
	char *sdn;                /* MRAIL_SDN backend (docs/sdn.md) */
	struct mrail_sdn *sdn_tagger; /* NULL: no SDN tagging */
	int log_level, progress_thread, eager_max;
	/* Smallest mean block (bytes) for which a non-contiguous datatype
	 * goes as an iovec of user memory instead of packed; 0: always pack. */
	int iov_min_block;
	double connect_timeout;
	int verbose;
};
extern struct mca_mtl_mrail_module ompi_mtl_mrail;

struct mca_mtl_mrail_component {
	mca_mtl_base_component_2_0_0_t super;
};
OMPI_DECLSPEC extern struct mca_mtl_mrail_component mca_mtl_mrail_component;

enum mtl_mrail_req_type { MTL_MRAIL_SEND, MTL_MRAIL_RECV };

/* Open MPI reserves mtl_request_size bytes after `super`: our fields, then
 * room for the engine's request aligned like max_align_t. */
struct mtl_mrail_request {
	mca_mtl_request_t super;
	enum mtl_mrail_req_type type;
	bool free_after;   /* buf is a pack/unpack copy */
	volatile bool done; /* callback ran (under ompi_mtl_mrail.lock) */
	void *buf;
	size_t len;
	struct opal_convertor_t *convertor;
	mrail_request_t *mreq;
	unsigned char space[]; /* mrail_request_size() + alignment slack */
};

/* module (mtl_mrail.c) */
int mtl_mrail_module_init(bool mpi_threads);
int mtl_mrail_finalize(struct mca_mtl_base_module_t *mtl);
int mtl_mrail_add_procs(struct mca_mtl_base_module_t *mtl, size_t nprocs,
			struct ompi_proc_t **procs);
int mtl_mrail_del_procs(struct mca_mtl_base_module_t *mtl, size_t nprocs,
			struct ompi_proc_t **procs);
/* A peer not added yet (dynamic processes): added now. */
int mtl_mrail_peer_add(struct ompi_proc_t *proc, mrail_peer_t *peer);
int mtl_mrail_error(int mrail_err);

/* Inline, as the two below: each message calls them, and as calls into
 * another file they were a tenth of the MTL's instructions per message. */
static inline int mtl_mrail_peer(struct ompi_communicator_t *comm, int rank,
				 mrail_peer_t *peer)
{
	struct ompi_proc_t *proc = ompi_comm_peer_lookup(comm, rank);
	if (OPAL_UNLIKELY(!proc))
		return OMPI_ERR_BAD_PARAM;
	uintptr_t v =
		(uintptr_t)proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_MTL];
	if (OPAL_UNLIKELY(!v))
		return mtl_mrail_peer_add(proc, peer);
	*peer = (mrail_peer_t)(v - 1);
	return OMPI_SUCCESS;
}

/* A request's status carries an MPI error class, never an internal OMPI
 * code (MPI_Wait hands status.MPI_ERROR to the user as is). A failed peer
 * fails only its own requests, as MPI_ERR_INTERN: the communicator's
 * error handler decides (MPI_ERRORS_RETURN lets the others go on). */
static inline int mtl_mrail_status_error(int err)
{
	switch (err) {
	case MRAIL_OK:
		return MPI_SUCCESS;
	case MRAIL_ERR_TRUNCATE:
		return MPI_ERR_TRUNCATE;
	case MRAIL_ERR_NOMEM:
		return MPI_ERR_NO_MEM;
	default:
		return MPI_ERR_INTERN;
	}
}

/* Where the engine's request lives in ours: aligned like max_align_t. */
static inline void *mtl_mrail_storage(struct mtl_mrail_request *r)
{
	uintptr_t p = (uintptr_t)r->space;
	uintptr_t a = _Alignof(max_align_t);
	return (void *)((p + a - 1) & ~(a - 1));
}

/* iovec path for non-contiguous datatypes (mtl_mrail_iov.c): true and
 * iov/iovcnt/len filled when the datatype is sent or received straight
 * from/into the user's blocks; false (convertor untouched) to pack. */
bool mtl_mrail_convertor_iov(struct opal_convertor_t *cv, struct iovec *iov,
			     int *iovcnt, size_t *len);

/* rail models by in-band sampling with a partner on another node, once
 * every process of the world is added (mtl_mrail_sample.c) */
void mtl_mrail_sample_rails(size_t nprocs, struct ompi_proc_t **procs);

/* send (mtl_mrail_send.c) */
int mtl_mrail_send(struct mca_mtl_base_module_t *mtl,
		   struct ompi_communicator_t *comm, int dest, int tag,
		   struct opal_convertor_t *convertor,
		   mca_pml_base_send_mode_t mode);
int mtl_mrail_isend(struct mca_mtl_base_module_t *mtl,
		    struct ompi_communicator_t *comm, int dest, int tag,
		    struct opal_convertor_t *convertor,
		    mca_pml_base_send_mode_t mode, bool blocking,
		    mca_mtl_request_t *mtl_request);

/* receive, probe, cancel (mtl_mrail_recv.c) */
int mtl_mrail_irecv(struct mca_mtl_base_module_t *mtl,
		    struct ompi_communicator_t *comm, int src, int tag,
		    struct opal_convertor_t *convertor,
		    mca_mtl_request_t *mtl_request);
int mtl_mrail_iprobe(struct mca_mtl_base_module_t *mtl,
		     struct ompi_communicator_t *comm, int src, int tag,
		     int *flag, struct ompi_status_public_t *status);
int mtl_mrail_improbe(struct mca_mtl_base_module_t *mtl,
		      struct ompi_communicator_t *comm, int src, int tag,
		      int *matched, struct ompi_message_t **message,
		      struct ompi_status_public_t *status);
int mtl_mrail_imrecv(struct mca_mtl_base_module_t *mtl,
		     struct opal_convertor_t *convertor,
		     struct ompi_message_t **message,
		     mca_mtl_request_t *mtl_request);
int mtl_mrail_cancel(struct mca_mtl_base_module_t *mtl,
		     mca_mtl_request_t *mtl_request, int flag);

END_C_DECLS
#endif
