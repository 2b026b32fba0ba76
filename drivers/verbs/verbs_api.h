/*
 * The verbs the driver uses, as one table of function pointers: the
 * driver never calls libibverbs directly, so tests can substitute the
 * in-tree fake HCA (drivers/verbs/double/) for the real library. The
 * default table (verbs_real.c) forwards to libibverbs (several of its
 * calls are inline wrappers around provider ops, hence the functions).
 */
#ifndef MRAIL_DRIVERS_VERBS_API_H
#define MRAIL_DRIVERS_VERBS_API_H

#include <hwloc.h>
#include <infiniband/verbs.h>

struct mrail_verbs_api {
	const char *name; /* "libibverbs", "double" */

	struct ibv_device **(*get_device_list)(int *num);
	void (*free_device_list)(struct ibv_device **list);
	const char *(*get_device_name)(struct ibv_device *dev);
	struct ibv_context *(*open_device)(struct ibv_device *dev);
	int (*close_device)(struct ibv_context *ctx);
	int (*query_device)(struct ibv_context *ctx,
			    struct ibv_device_attr *attr);
	int (*query_port)(struct ibv_context *ctx, uint8_t port,
			  struct ibv_port_attr *attr);
	int (*query_gid)(struct ibv_context *ctx, uint8_t port, int index,
			 union ibv_gid *gid);
	/* CPUs near the device (hwloc_ibv_get_device_cpuset for real). */
	int (*device_cpuset)(hwloc_topology_t topo, struct ibv_device *dev,
			     hwloc_cpuset_t set);

	struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
	int (*dealloc_pd)(struct ibv_pd *pd);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t len,
				 int access);
	int (*dereg_mr)(struct ibv_mr *mr);

	struct ibv_comp_channel *(*create_comp_channel)(struct ibv_context *ctx);
	int (*destroy_comp_channel)(struct ibv_comp_channel *ch);
	struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe,
				    void *cq_context,
				    struct ibv_comp_channel *ch, int vector);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*get_cq_event)(struct ibv_comp_channel *ch, struct ibv_cq **cq,
			    void **cq_context);
	void (*ack_cq_events)(struct ibv_cq *cq, unsigned nevents);
	int (*poll_cq)(struct ibv_cq *cq, int n, struct ibv_wc *wc);

	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int mask);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd, struct ibv_ah_attr *attr);
	int (*destroy_ah)(struct ibv_ah *ah);
};

/* verbs_real.c */
extern const struct mrail_verbs_api mrail_verbs_real_api;

/*
 * The fake HCA (drivers/verbs/double/, built with the test drivers).
 * conf is "key=value,..." (docs/driver-verbs.md); NULL if it is malformed
 * (logged) or the double is not built.
 */
const struct mrail_verbs_api *mrail_verbs_double_api(const char *conf);
/* Why mrail_verbs_double_api returned NULL, for the error message. */
const char *mrail_verbs_double_why(void);

#endif
