/*
 * The mrail MTL: Open MPI's cm PML over libmrail (docs/mpi-ompi.md).
 * Internal to the component; ompi_config.h must come first.
 */
#ifndef MTL_MRAIL_H
#define MTL_MRAIL_H

#include "ompi_config.h"
#include "ompi/mca/mtl/mtl.h"
#include "opal/threads/mutex.h"

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
int mtl_mrail_peer(struct ompi_communicator_t *comm, int rank,
		   mrail_peer_t *peer);
int mtl_mrail_error(int mrail_err);
int mtl_mrail_status_error(int mrail_err);
void *mtl_mrail_storage(struct mtl_mrail_request *r);

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
