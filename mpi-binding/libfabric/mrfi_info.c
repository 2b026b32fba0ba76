/*
 * fi_getinfo: what the provider offers, and the refusal of hints it
 * cannot honour. Without libfabric's util library the hint checks are
 * ours; each refusal is logged (FI_LOG_LEVEL=info) with its reason, so a
 * user asking why `mrail` was not picked can read it.
 */
#include "mrfi.h"

#include <stdlib.h>
#include <string.h>

/* What the engine really does: tagged and untagged two-sided messages,
 * directed receives, the source of every message, multi-receive buffers
 * for untagged messages (mrfi_multi.c). No RMA through the provider (the
 * engine's RDMA is internal to rendezvous), no atomics, no remote CQ
 * data. */
#define MRFI_CAPS (FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | \
		   FI_DIRECTED_RECV | FI_SOURCE | FI_LOCAL_COMM | \
		   FI_REMOTE_COMM | FI_MULTI_RECV)
#define MRFI_PRIMARY (FI_MSG | FI_TAGGED)
#define MRFI_INJECT 4096
#define MRFI_QUEUE 65536
#define MRFI_IOV 1024

#define REFUSE(...)                                                     \
	do {                                                            \
		FI_INFO(&mrfi_prov, FI_LOG_CORE, __VA_ARGS__);          \
		return -FI_ENODATA;                                     \
	} while (0)

static int check_hints(uint32_t version, const struct fi_info *h)
{
	if (!h)
		return 0;
	if (h->ep_attr && h->ep_attr->type != FI_EP_UNSPEC &&
	    h->ep_attr->type != FI_EP_RDM)
		REFUSE("endpoint type %d asked; mrail offers FI_EP_RDM only\n",
		       h->ep_attr->type);
	if (h->caps & ~(MRFI_CAPS | FI_MSG | FI_TAGGED))
		REFUSE("caps 0x%llx not offered (RMA, atomics, "
		       "collectives, HMEM are not)\n",
		       (unsigned long long)(h->caps & ~MRFI_CAPS));
	if (h->caps && !(h->caps & MRFI_PRIMARY))
		REFUSE("neither FI_MSG nor FI_TAGGED asked\n");
	if (h->addr_format != FI_FORMAT_UNSPEC)
		REFUSE("address format %u asked; mrail names are opaque "
		       "(FI_FORMAT_UNSPEC)\n", h->addr_format);
	if (h->domain_attr) {
		const struct fi_domain_attr *d = h->domain_attr;
		if (d->name && strcmp(d->name, MRFI_NAME))
			REFUSE("domain \"%s\" asked; mrail has \"mrail\"\n",
			       d->name);
		if (d->data_progress == FI_PROGRESS_AUTO ||
		    d->control_progress == FI_PROGRESS_AUTO)
			REFUSE("FI_PROGRESS_AUTO asked; progress is manual "
			       "(from CQ reads)\n");
		if (FI_VERSION_GE(version, FI_VERSION(1, 5)) &&
		    (d->mr_mode & (FI_MR_BASIC | FI_MR_SCALABLE)) &&
		    d->mr_mode != FI_MR_BASIC && d->mr_mode != FI_MR_SCALABLE)
			REFUSE("mr_mode mixes old and new bits\n");
	}
	if (h->fabric_attr && h->fabric_attr->name &&
	    strcmp(h->fabric_attr->name, MRFI_NAME))
		REFUSE("fabric \"%s\" asked; mrail has \"mrail\"\n",
		       h->fabric_attr->name);
	if (h->tx_attr && (h->tx_attr->msg_order & ~(uint64_t)FI_ORDER_SAS))
		REFUSE("message order 0x%llx asked; only FI_ORDER_SAS\n",
		       (unsigned long long)h->tx_attr->msg_order);
	if (h->rx_attr && (h->rx_attr->msg_order & ~(uint64_t)FI_ORDER_SAS))
		REFUSE("receive order 0x%llx asked; only FI_ORDER_SAS\n",
		       (unsigned long long)h->rx_attr->msg_order);
	if (h->domain_attr &&
	    h->domain_attr->cq_data_size > MRFI_CQ_DATA_SIZE)
		REFUSE("cq_data_size %zu asked; at most %d\n",
		       h->domain_attr->cq_data_size, MRFI_CQ_DATA_SIZE);
	if (h->tx_attr && h->tx_attr->inject_size > MRFI_INJECT)
		REFUSE("inject_size %zu asked; at most %d\n",
		       h->tx_attr->inject_size, MRFI_INJECT);
	return 0;
}

static struct fi_info *build(uint32_t version, const struct fi_info *h)
{
	struct fi_info *fi = fi_allocinfo();
	if (!fi)
		return NULL;
	uint64_t caps = MRFI_CAPS;
	if (h && h->caps) {
		caps = h->caps;
		/* Asking for a message type implies both directions unless
		 * one is named. */
		if (!(caps & (FI_SEND | FI_RECV)))
			caps |= FI_SEND | FI_RECV;
	}
	fi->caps = caps;
	fi->mode = 0;
	fi->addr_format = FI_FORMAT_UNSPEC;

	fi->tx_attr->caps = caps & (MRFI_PRIMARY | FI_SEND |
				    FI_LOCAL_COMM | FI_REMOTE_COMM);
	fi->tx_attr->msg_order = FI_ORDER_SAS;
	fi->tx_attr->comp_order = FI_ORDER_NONE;
	fi->tx_attr->inject_size = MRFI_INJECT;
	fi->tx_attr->size = MRFI_QUEUE;
	fi->tx_attr->iov_limit = MRFI_IOV;
	fi->tx_attr->rma_iov_limit = 0;
	if (h && h->tx_attr)
		fi->tx_attr->op_flags = h->tx_attr->op_flags;

	fi->rx_attr->caps = caps & (MRFI_PRIMARY | FI_RECV | FI_SOURCE |
				    FI_DIRECTED_RECV | FI_LOCAL_COMM |
				    FI_REMOTE_COMM | FI_MULTI_RECV);
	fi->rx_attr->msg_order = FI_ORDER_SAS;
	fi->rx_attr->comp_order = FI_ORDER_NONE;
	fi->rx_attr->total_buffered_recv = 0;
	fi->rx_attr->size = MRFI_QUEUE;
	fi->rx_attr->iov_limit = MRFI_IOV;
	if (h && h->rx_attr)
		fi->rx_attr->op_flags = h->rx_attr->op_flags;

	fi->ep_attr->type = FI_EP_RDM;
	fi->ep_attr->protocol = FI_PROTO_UNSPEC;
	fi->ep_attr->protocol_version = 1;
	fi->ep_attr->max_msg_size = SIZE_MAX;
	fi->ep_attr->msg_prefix_size = 0;
	fi->ep_attr->mem_tag_format = ~(uint64_t)0;
	fi->ep_attr->tx_ctx_cnt = 1;
	fi->ep_attr->rx_ctx_cnt = 1;

	struct fi_domain_attr *d = fi->domain_attr;
	d->name = strdup(MRFI_NAME);
	/* Every call is safe from any thread: the engine is created at
	 * MRAIL_THREAD_MULTIPLE and the provider's own objects have locks. */
	d->threading = (h && h->domain_attr && h->domain_attr->threading)
		? h->domain_attr->threading : FI_THREAD_SAFE;
	d->control_progress = FI_PROGRESS_MANUAL;
	d->data_progress = FI_PROGRESS_MANUAL;
	d->resource_mgmt = FI_RM_ENABLED;
	d->av_type = (h && h->domain_attr) ? h->domain_attr->av_type
					   : FI_AV_UNSPEC;
	if (FI_VERSION_GE(version, FI_VERSION(1, 5)))
		d->mr_mode = 0; /* no registration needed for anything */
	else
		d->mr_mode = (h && h->domain_attr && h->domain_attr->mr_mode)
			? h->domain_attr->mr_mode : FI_MR_SCALABLE;
	d->mr_key_size = sizeof(uint64_t);
	/* Remote CQ data: 64 bits beside the payload (the engine's
	 * MRAIL_REQ_DATA, wire record IMM), reported by probes too. MPICH
	 * needs it (>= 4 bytes) for its tagged path. */
	d->cq_data_size = MRFI_CQ_DATA_SIZE;
	d->cq_cnt = 256;
	d->ep_cnt = 256;
	d->tx_ctx_cnt = 256;
	d->rx_ctx_cnt = 256;
	d->max_ep_tx_ctx = 1;
	d->max_ep_rx_ctx = 1;
	d->max_ep_stx_ctx = 0;
	d->max_ep_srx_ctx = 0;
	d->cntr_cnt = 256;
	d->mr_iov_limit = 1;
	d->mr_cnt = 65536;
	d->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;

	fi->fabric_attr->name = strdup(MRFI_NAME);
	/* prov_name stays NULL: libfabric's core fills it in (a name set
	 * here would read as a provider layered over another). */
	fi->fabric_attr->prov_version = MRFI_PROV_VERSION;
	fi->fabric_attr->api_version = MRFI_FI_VERSION;
	if (!d->name || !fi->fabric_attr->name) {
		fi_freeinfo(fi);
		return NULL;
	}
	return fi;
}

int mrfi_getinfo(uint32_t version, const char *node, const char *service,
		 uint64_t flags, const struct fi_info *hints,
		 struct fi_info **info)
{
	/* The engine picks its own interfaces (MRAIL_RAILS): node and
	 * service do not select anything. */
	(void)node;
	(void)service;
	(void)flags;
	int rc = check_hints(version, hints);
	if (rc)
		return rc;
	*info = build(version, hints);
	return *info ? 0 : -FI_ENOMEM;
}
