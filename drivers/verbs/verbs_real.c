/* The default verbs table: libibverbs itself (see verbs_api.h). */
#include "drivers/verbs/verbs_api.h"

#include <hwloc/openfabrics-verbs.h>

static const char *real_device_name(struct ibv_device *dev)
{
	return ibv_get_device_name(dev);
}

static struct ibv_mr *real_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
				  int access)
{
	return ibv_reg_mr(pd, addr, len, access);
}

static int real_query_port(struct ibv_context *ctx, uint8_t port,
			   struct ibv_port_attr *attr)
{
	return ibv_query_port(ctx, port, attr);
}

static int real_req_notify(struct ibv_cq *cq, int solicited_only)
{
	return ibv_req_notify_cq(cq, solicited_only);
}

static int real_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	return ibv_poll_cq(cq, n, wc);
}

static int real_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			  struct ibv_send_wr **bad)
{
	return ibv_post_send(qp, wr, bad);
}

static int real_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad)
{
	return ibv_post_recv(qp, wr, bad);
}

static int real_cpuset(hwloc_topology_t topo, struct ibv_device *dev,
		       hwloc_cpuset_t set)
{
	return hwloc_ibv_get_device_cpuset(topo, dev, set);
}

const struct mrail_verbs_api mrail_verbs_real_api = {
	.name = "libibverbs",
	.get_device_list = ibv_get_device_list,
	.free_device_list = ibv_free_device_list,
	.get_device_name = real_device_name,
	.open_device = ibv_open_device,
	.close_device = ibv_close_device,
	.query_device = ibv_query_device,
	.query_port = real_query_port,
	.query_gid = ibv_query_gid,
	.device_cpuset = real_cpuset,
	.alloc_pd = ibv_alloc_pd,
	.dealloc_pd = ibv_dealloc_pd,
	.reg_mr = real_reg_mr,
	.dereg_mr = ibv_dereg_mr,
	.create_comp_channel = ibv_create_comp_channel,
	.destroy_comp_channel = ibv_destroy_comp_channel,
	.create_cq = ibv_create_cq,
	.destroy_cq = ibv_destroy_cq,
	.req_notify_cq = real_req_notify,
	.get_cq_event = ibv_get_cq_event,
	.ack_cq_events = ibv_ack_cq_events,
	.poll_cq = real_poll_cq,
	.create_qp = ibv_create_qp,
	.modify_qp = ibv_modify_qp,
	.destroy_qp = ibv_destroy_qp,
	.post_send = real_post_send,
	.post_recv = real_post_recv,
	.create_ah = ibv_create_ah,
	.destroy_ah = ibv_destroy_ah,
};
