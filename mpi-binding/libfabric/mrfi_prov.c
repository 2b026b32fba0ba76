/*
 * The provider's entry point (fi_prov_ini), the fabric and domain
 * objects, and memory registration, which needs nothing: the engine
 * registers what its drivers need itself (docs/regcache.md), so an MR here
 * is only a key the application may carry around.
 */
#include "mrfi.h"

#include <stdlib.h>
#include <string.h>

struct fi_provider mrfi_prov = {
	.name = MRFI_NAME,
	.version = MRFI_PROV_VERSION,
	.fi_version = MRFI_FI_VERSION,
	.getinfo = mrfi_getinfo,
	.fabric = mrfi_fabric_open,
	.cleanup = NULL,
};

FI_EXT_INI
{
	return &mrfi_prov;
}

/* ---- memory registration -------------------------------------------- */

static int mr_close(struct fid *fid)
{
	free(fid);
	return 0;
}

static struct fi_ops mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = mr_close,
	.bind = mrfi_no_bind,
	.control = mrfi_no_control,
	.ops_open = mrfi_no_ops_open,
};

static int mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		      uint64_t flags, struct fid_mr **mr)
{
	struct mrfi_domain *d = (struct mrfi_domain *)fid;
	(void)flags;
	if (attr->iface != FI_HMEM_SYSTEM)
		return -FI_ENOSYS;
	struct fid_mr *m = calloc(1, sizeof *m);
	if (!m)
		return -FI_ENOMEM;
	m->fid.fclass = FI_CLASS_MR;
	m->fid.context = attr->context;
	m->fid.ops = &mr_fi_ops;
	m->mem_desc = NULL;
	pthread_mutex_lock(&d->lock);
	m->key = attr->requested_key ? attr->requested_key : ++d->mr_key;
	pthread_mutex_unlock(&d->lock);
	*mr = m;
	return 0;
}

static int mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		   uint64_t access, uint64_t offset, uint64_t requested_key,
		   uint64_t flags, struct fid_mr **mr, void *context)
{
	struct fi_mr_attr a = {
		.mr_iov = iov, .iov_count = count, .access = access,
		.offset = offset, .requested_key = requested_key,
		.context = context, .iface = FI_HMEM_SYSTEM,
	};
	return mr_regattr(fid, &a, flags, mr);
}

static int mr_reg(struct fid *fid, const void *buf, size_t len,
		  uint64_t access, uint64_t offset, uint64_t requested_key,
		  uint64_t flags, struct fid_mr **mr, void *context)
{
	struct iovec iov = { (void *)buf, len };
	return mr_regv(fid, &iov, 1, access, offset, requested_key, flags, mr,
		       context);
}

static struct fi_ops_mr mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = mr_reg,
	.regv = mr_regv,
	.regattr = mr_regattr,
};

/* ---- domain ---------------------------------------------------------- */

static int domain_close(struct fid *fid)
{
	struct mrfi_domain *d = (struct mrfi_domain *)fid;
	pthread_mutex_destroy(&d->lock);
	free(d);
	return 0;
}

static struct fi_ops domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = domain_close,
	.bind = mrfi_no_bind,
	.control = mrfi_no_control,
	.ops_open = mrfi_no_ops_open,
};

static struct fi_ops_domain domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = mrfi_av_open,
	.cq_open = mrfi_cq_open,
	.endpoint = mrfi_ep_open,
	.scalable_ep = mrfi_no_scalable_ep,
	.cntr_open = mrfi_cntr_open,
	.poll_open = mrfi_no_poll_open,
	.stx_ctx = mrfi_no_stx_context,
	.srx_ctx = mrfi_no_srx_context,
	.query_atomic = mrfi_no_query_atomic,
	.query_collective = mrfi_no_query_collective,
};

static int domain_open(struct fid_fabric *fabric, struct fi_info *info,
		       struct fid_domain **dom, void *context)
{
	if (info && info->domain_attr && info->domain_attr->name &&
	    strcmp(info->domain_attr->name, MRFI_NAME))
		return -FI_EINVAL;
	struct mrfi_domain *d = calloc(1, sizeof *d);
	if (!d)
		return -FI_ENOMEM;
	pthread_mutex_init(&d->lock, NULL);
	d->fab = (struct mrfi_fabric *)fabric;
	d->domain.fid.fclass = FI_CLASS_DOMAIN;
	d->domain.fid.context = context;
	d->domain.fid.ops = &domain_fi_ops;
	d->domain.ops = &domain_ops;
	d->domain.mr = &mr_ops;
	*dom = &d->domain;
	return 0;
}

/* ---- fabric ---------------------------------------------------------- */

static int fabric_close(struct fid *fid)
{
	free(fid);
	return 0;
}

static struct fi_ops fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = fabric_close,
	.bind = mrfi_no_bind,
	.control = mrfi_no_control,
	.ops_open = mrfi_no_ops_open,
};

static struct fi_ops_fabric fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = domain_open,
	.passive_ep = mrfi_no_passive_ep,
	.eq_open = mrfi_eq_open,
	.wait_open = mrfi_no_wait_open,
	.trywait = mrfi_trywait,
};

int mrfi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		     void *context)
{
	if (attr && attr->name && strcmp(attr->name, MRFI_NAME))
		return -FI_ENODATA;
	struct mrfi_fabric *f = calloc(1, sizeof *f);
	if (!f)
		return -FI_ENOMEM;
	f->fabric.fid.fclass = FI_CLASS_FABRIC;
	f->fabric.fid.context = context;
	f->fabric.fid.ops = &fabric_fi_ops;
	f->fabric.ops = &fabric_ops;
	f->fabric.api_version = MRFI_FI_VERSION;
	*fabric = &f->fabric;
	return 0;
}
