/*
 * Receives, probes, matched probes and cancel.
 */
#include "mtl_mrail.h"
#include "mtl_mrail_bits.h"

#include "ompi/communicator/communicator.h"
#include "ompi/message/message.h"
#include "ompi/mca/mtl/base/mtl_base_datatype.h"
#include "opal/util/output.h"

/* What a probe reports: MPI leaves MPI_ERROR alone in the status of a
 * single-completion call (MPI-3.1 3.2.5), and cm hands probes the
 * caller's status itself. */
static void fill_probe_status(ompi_status_public_t *s,
			      const mrail_status_t *st)
{
	s->MPI_SOURCE = mrail_mtl_bits_source(st->tag);
	s->MPI_TAG = mrail_mtl_bits_tag(st->tag);
	s->_ucount = st->length;
}

/* A request's status: Open MPI copies MPI_ERROR out of it only where the
 * standard wants it (the multiple-completion calls). */
static void fill_status(ompi_status_public_t *s, const mrail_status_t *st)
{
	fill_probe_status(s, st);
	s->MPI_ERROR = st->error == MRAIL_ERR_CANCELED
			       ? MPI_SUCCESS
			       : mtl_mrail_status_error(st->error);
}

static void recv_done(mrail_request_t *mreq, const mrail_status_t *st,
		      void *ctx)
{
	struct mtl_mrail_request *r = ctx;
	ompi_status_public_t *s = &r->super.ompi_req->req_status;
	(void)mreq;

	if (st->error == MRAIL_ERR_CANCELED) {
		s->_cancelled = true;
		if (r->free_after)
			free(r->buf);
	} else {
		fill_status(s, st);
		/* Unpacks a bounce buffer (and frees it); a no-op for a
		 * receive straight into the user's memory. */
		if (r->free_after)
			ompi_mtl_datatype_unpack(r->convertor, r->buf,
						 st->length);
	}
	/* Marked under the lock mtl_mrail_cancel holds, so a cancel never
	 * touches an engine request this callback is about to release. */
	OPAL_THREAD_LOCK(&ompi_mtl_mrail.lock);
	r->done = true;
	OPAL_THREAD_UNLOCK(&ompi_mtl_mrail.lock);
	r->super.completion_callback(&r->super);
}

/* iov (MTL_MRAIL_IOV_MAX entries) must live until the post: the engine
 * copies the array. Afterwards post with buf/len, or a->iov when set. */
static int prepare(struct opal_convertor_t *convertor,
		   struct mtl_mrail_request *r, struct mrail_req_args *a,
		   struct iovec *iov)
{
	if (mtl_mrail_convertor_iov(convertor, iov, &a->iovcnt, &r->len)) {
		a->iov = iov;
		r->buf = NULL;
		r->free_after = false;
	} else {
		int rc = ompi_mtl_datatype_recv_buf(convertor, &r->buf,
						    &r->len, &r->free_after);
		if (rc != OMPI_SUCCESS)
			return rc;
		if (r->len && !r->buf)
			return OMPI_ERR_OUT_OF_RESOURCE;
	}
	r->type = MTL_MRAIL_RECV;
	r->convertor = convertor;
	r->done = false;
	a->storage = mtl_mrail_storage(r);
	a->cb = recv_done;
	a->cb_ctx = r;
	/* A message already here completes the receive inside the post
	 * (recv_done runs there): the wait that follows finds it done. */
	a->flags |= MRAIL_REQ_IMMEDIATE;
	return OMPI_SUCCESS;
}

static int peer_of(struct ompi_communicator_t *comm, int src,
		   mrail_peer_t *peer)
{
	if (src == MPI_ANY_SOURCE) {
		*peer = MRAIL_ANY_PEER;
		return OMPI_SUCCESS;
	}
	return mtl_mrail_peer(comm, src, peer);
}

int mtl_mrail_irecv(struct mca_mtl_base_module_t *mtl,
		    struct ompi_communicator_t *comm, int src, int tag,
		    struct opal_convertor_t *convertor,
		    mca_mtl_request_t *mtl_request)
{
	struct mtl_mrail_request *r = (struct mtl_mrail_request *)mtl_request;
	struct mrail_req_args a = MRAIL_REQ_ARGS_INIT;
	struct iovec iov[MTL_MRAIL_IOV_MAX];
	uint64_t bits, mask;
	mrail_peer_t peer;
	(void)mtl;

	int rc = peer_of(comm, src, &peer);
	if (rc != OMPI_SUCCESS)
		return rc;
	rc = prepare(convertor, r, &a, iov);
	if (rc != OMPI_SUCCESS)
		return rc;
	mrail_mtl_recv_bits(comm->c_contextid, src, tag, &bits, &mask);
	rc = mrail_irecv_x(ompi_mtl_mrail.engine, peer, r->buf,
			   a.iov ? 0 : r->len, bits, mask, &a, &r->mreq);
	if (rc != MRAIL_OK) {
		if (r->free_after)
			free(r->buf);
		return mtl_mrail_error(rc);
	}
	return OMPI_SUCCESS;
}

int mtl_mrail_iprobe(struct mca_mtl_base_module_t *mtl,
		     struct ompi_communicator_t *comm, int src, int tag,
		     int *flag, struct ompi_status_public_t *status)
{
	uint64_t bits, mask;
	mrail_peer_t peer;
	mrail_status_t st;
	(void)mtl;

	int rc = peer_of(comm, src, &peer);
	if (rc != OMPI_SUCCESS)
		return rc;
	mrail_mtl_recv_bits(comm->c_contextid, src, tag, &bits, &mask);
	rc = mrail_iprobe(ompi_mtl_mrail.engine, peer, bits, mask, flag, &st);
	if (rc != MRAIL_OK)
		return mtl_mrail_error(rc);
	if (*flag && status != MPI_STATUS_IGNORE)
		fill_probe_status(status, &st);
	return OMPI_SUCCESS;
}

int mtl_mrail_improbe(struct mca_mtl_base_module_t *mtl,
		      struct ompi_communicator_t *comm, int src, int tag,
		      int *matched, struct ompi_message_t **message,
		      struct ompi_status_public_t *status)
{
	uint64_t bits, mask;
	mrail_peer_t peer;
	mrail_status_t st;
	mrail_message_t *m = NULL;
	(void)mtl;

	*matched = 0;
	*message = MPI_MESSAGE_NULL;
	int rc = peer_of(comm, src, &peer);
	if (rc != OMPI_SUCCESS)
		return rc;
	mrail_mtl_recv_bits(comm->c_contextid, src, tag, &bits, &mask);
	/* Allocated first: once the engine gave us the message, nothing may
	 * fail and lose it. */
	struct ompi_message_t *msg = ompi_message_alloc();
	if (!msg)
		return OMPI_ERR_OUT_OF_RESOURCE;
	int flag = 0;
	rc = mrail_improbe(ompi_mtl_mrail.engine, peer, bits, mask, &flag, &m,
			   &st);
	if (rc != MRAIL_OK || !flag) {
		ompi_message_return(msg);
		return mtl_mrail_error(rc);
	}
	msg->comm = comm;
	msg->req_ptr = m;
	msg->peer = mrail_mtl_bits_source(st.tag);
	msg->count = st.length;
	if (status != MPI_STATUS_IGNORE)
		fill_probe_status(status, &st);
	*message = msg;
	*matched = 1;
	return OMPI_SUCCESS;
}

int mtl_mrail_imrecv(struct mca_mtl_base_module_t *mtl,
		     struct opal_convertor_t *convertor,
		     struct ompi_message_t **message,
		     mca_mtl_request_t *mtl_request)
{
	struct mtl_mrail_request *r = (struct mtl_mrail_request *)mtl_request;
	struct mrail_req_args a = MRAIL_REQ_ARGS_INIT;
	struct iovec iov[MTL_MRAIL_IOV_MAX];
	(void)mtl;

	int rc = prepare(convertor, r, &a, iov);
	if (rc != OMPI_SUCCESS)
		return rc;
	rc = mrail_imrecv_x(ompi_mtl_mrail.engine, r->buf,
			    a.iov ? 0 : r->len,
			    (*message)->req_ptr, &a, &r->mreq);
	if (rc != MRAIL_OK) {
		if (r->free_after)
			free(r->buf);
		return mtl_mrail_error(rc);
	}
	ompi_message_return(*message);
	*message = MPI_MESSAGE_NULL;
	return OMPI_SUCCESS;
}

/* Sends cannot be canceled (MPI allows that: the send then completes
 * normally). A receive is canceled unless already matched; either way its
 * callback completes it. */
int mtl_mrail_cancel(struct mca_mtl_base_module_t *mtl,
		     mca_mtl_request_t *mtl_request, int flag)
{
	struct mtl_mrail_request *r = (struct mtl_mrail_request *)mtl_request;
	(void)mtl;
	(void)flag;

	if (r->type != MTL_MRAIL_RECV)
		return OMPI_SUCCESS;
	OPAL_THREAD_LOCK(&ompi_mtl_mrail.lock);
	int rc = r->done ? MRAIL_ERR_BUSY
			 : mrail_cancel(ompi_mtl_mrail.engine, r->mreq);
	OPAL_THREAD_UNLOCK(&ompi_mtl_mrail.lock);
	return rc == MRAIL_OK || rc == MRAIL_ERR_BUSY ? OMPI_SUCCESS
						      : mtl_mrail_error(rc);
}
