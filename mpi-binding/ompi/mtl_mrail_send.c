/*
 * Sends: standard, synchronous (MRAIL_REQ_SYNC), buffered and ready (cm
 * has already copied a buffered message; both go as standard).
 */
#include "mtl_mrail.h"
#include "mtl_mrail_bits.h"

#include "ompi/communicator/communicator.h"
#include "ompi/mca/mtl/base/mtl_base_datatype.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

#include <alloca.h>

static void send_done(mrail_request_t *mreq, const mrail_status_t *st,
		      void *ctx)
{
	struct mtl_mrail_request *r = ctx;
	(void)mreq;
	if (r->free_after)
		free(r->buf);
	r->super.ompi_req->req_status.MPI_ERROR =
		mtl_mrail_status_error(st->error);
	r->done = true;
	r->super.completion_callback(&r->super);
}

static int post_send(struct ompi_communicator_t *comm, int dest, int tag,
		     struct opal_convertor_t *convertor,
		     mca_pml_base_send_mode_t mode, bool waiting,
		     struct mtl_mrail_request *r, mrail_request_cb_t cb)
{
	mrail_peer_t peer;
	int rc = mtl_mrail_peer(comm, dest, &peer);
	if (rc != OMPI_SUCCESS)
		return rc;
	if ((unsigned)comm->c_my_rank > MRAIL_MTL_MAX_RANK) {
		opal_output(0, "mtl mrail: rank %d does not fit the match bits",
			    comm->c_my_rank);
		return OMPI_ERR_NOT_SUPPORTED;
	}
	struct mrail_req_args a = MRAIL_REQ_ARGS_INIT;
	struct iovec iov[MTL_MRAIL_IOV_MAX];
	if (mtl_mrail_convertor_iov(convertor, iov, &a.iovcnt, &r->len)) {
		/* The engine copies the array, not the blocks. */
		a.iov = iov;
		r->buf = NULL;
		r->free_after = false;
	} else {
		rc = ompi_mtl_datatype_pack(convertor, &r->buf, &r->len,
					    &r->free_after);
		if (rc != OMPI_SUCCESS)
			return rc;
	}
	r->type = MTL_MRAIL_SEND;
	r->convertor = convertor;
	r->done = false;

	a.storage = mtl_mrail_storage(r);
	a.cb = cb;
	a.cb_ctx = r;
	if (mode == MCA_PML_BASE_SEND_SYNCHRONOUS)
		a.flags |= MRAIL_REQ_SYNC;
	/* The caller waits in opal_progress: a same-host receiver may ask
	 * us to copy part of a large payload (docs/driver-shm.md). */
	if (waiting)
		a.flags |= MRAIL_REQ_WAITING;
	/* A buffered send is completed by cm itself once isend returns
	 * (MCA_PML_CM_HVY_SEND_REQUEST_START): one inside isend would
	 * complete it twice. */
	if (mode != MCA_PML_BASE_SEND_BUFFERED)
		a.flags |= MRAIL_REQ_IMMEDIATE;
	rc = mrail_isend_x(ompi_mtl_mrail.engine, peer, r->buf,
			   a.iov ? 0 : r->len,
			   mrail_mtl_send_bits(comm->c_contextid,
					       comm->c_my_rank, tag),
			   &a, &r->mreq);
	if (rc != MRAIL_OK) {
		if (r->free_after)
			free(r->buf);
		return mtl_mrail_error(rc);
	}
	if (!r->mreq) {
		/* Complete already (the data is in a packet): no callback
		 * will come, the caller completes it now. */
		mrail_status_t st = {0};
		cb(NULL, &st, r);
	}
	return OMPI_SUCCESS;
}

int mtl_mrail_isend(struct mca_mtl_base_module_t *mtl,
		    struct ompi_communicator_t *comm, int dest, int tag,
		    struct opal_convertor_t *convertor,
		    mca_pml_base_send_mode_t mode, bool blocking,
		    mca_mtl_request_t *mtl_request)
{
	(void)mtl;
	return post_send(comm, dest, tag, convertor, mode, blocking,
			 (struct mtl_mrail_request *)mtl_request, send_done);
}

struct blocking_send {
	volatile int done;
	int error;
};

static void blocking_done(mrail_request_t *mreq, const mrail_status_t *st,
			  void *ctx)
{
	struct mtl_mrail_request *r = ctx;
	struct blocking_send *b = (struct blocking_send *)r->super.ompi_req;
	(void)mreq;
	if (r->free_after)
		free(r->buf);
	b->error = mtl_mrail_status_error(st->error);
	opal_atomic_wmb();
	b->done = 1;
}

/* Blocking send on a request on the stack, completed through
 * opal_progress so the rest of Open MPI keeps moving while it waits. */
int mtl_mrail_send(struct mca_mtl_base_module_t *mtl,
		   struct ompi_communicator_t *comm, int dest, int tag,
		   struct opal_convertor_t *convertor,
		   mca_pml_base_send_mode_t mode)
{
	(void)mtl;
	size_t size = ompi_mtl_mrail.super.mtl_request_size +
		      sizeof(mca_mtl_request_t);
	struct mtl_mrail_request *r = alloca(size);
	struct blocking_send b = { 0, OMPI_SUCCESS };

	/* ompi_req is only a cookie here: blocking_done finds `b` in it. */
	r->super.ompi_req = (struct ompi_request_t *)&b;
	r->super.completion_callback = NULL;
	int rc = post_send(comm, dest, tag, convertor, mode, true, r,
			   blocking_done);
	if (rc != OMPI_SUCCESS)
		return rc;
	/* A small message is usually done here (MRAIL_REQ_IMMEDIATE): no
	 * progress call at all, as btl vader's sendi. */
	while (!b.done)
		opal_progress();
	opal_atomic_rmb();
	return b.error;
}
