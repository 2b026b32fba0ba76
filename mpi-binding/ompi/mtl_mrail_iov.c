/*
 * Non-contiguous datatypes as an iovec of the user's own memory: the
 * engine sends from (receives into) the blocks directly, saving the pack
 * copy and its temporary buffer. Worth it only for few, large blocks: a
 * datatype of many small pieces is packed (a memcpy beats an iovec walk
 * per piece in the driver and the RMA registration of each block).
 */
#include "mtl_mrail.h"

#include "opal/datatype/opal_convertor.h"
#include "opal/datatype/opal_datatype.h"
#include "opal/util/output.h"

bool mtl_mrail_convertor_iov(struct opal_convertor_t *cv, struct iovec *iov,
			     int *iovcnt, size_t *len)
{
	size_t total = 0, got = 0, zero = 0;
	uint32_t n = MTL_MRAIL_IOV_MAX;

	/* Contiguous layouts go straight already (and cm hands them over
	 * with a convertor that raw() must not walk). */
	if (ompi_mtl_mrail.iov_min_block <= 0 ||
	    !opal_convertor_need_buffers(cv) ||
	    !(cv->flags & CONVERTOR_HOMOGENEOUS) || !cv->pDesc ||
	    (cv->flags & CONVERTOR_COMPLETED) ||
	    opal_datatype_is_contiguous_memory_layout(cv->pDesc, cv->count))
		return false;
	opal_convertor_get_packed_size(cv, &total);
	if (total < (size_t)ompi_mtl_mrail.iov_min_block)
		return false;
	/* raw returns 1 once the whole datatype fit in the n entries. */
	int complete = opal_convertor_raw(cv, iov, &n, &got);
	if (complete == 1 && n > 0 && got == total &&
	    total / n >= (size_t)ompi_mtl_mrail.iov_min_block) {
		*iovcnt = (int)n;
		*len = total;
		if (ompi_mtl_mrail.verbose > 1)
			opal_output(0, "mtl mrail: %s as %u blocks of user "
				    "memory, %zu bytes",
				    cv->flags & CONVERTOR_SEND ? "send"
							       : "receive",
				    n, total);
		return true;
	}
	/* Too many or too small blocks: back to the start for packing. */
	opal_convertor_set_position(cv, &zero);
	return false;
}
