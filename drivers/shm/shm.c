/*
 * Shared-memory driver: frames between processes of one host through
 * per-connection single-producer/single-consumer rings in a shared
 * segment (shm_ring.c), large payloads in one copy by cross-memory attach
 * (shm_rma.c), with an eventfd doorbell for a consumer that sleeps. This
 * file holds the instance, its knobs, its rail, and the progress loop.
 * See docs/driver-shm.md.
 */
#include "drivers/shm/shm_internal.h"
#include "mrail.h"
#include "util/log.h"
#include "util/params.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

/* ---- knobs ------------------------------------------------------------- */

static int parse_size(const char *v, uint64_t *out)
{
	char *end;
	unsigned long long n = strtoull(v, &end, 10);

	if (end == v)
		return -1;
	if (*end == 'k' || *end == 'K')
		n <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		n <<= 20, end++;
	if (*end)
		return -1;
	*out = n;
	return 0;
}

int shm_params_parse(const char *s, struct shm_params *p)
{
	const char *pos = s ? s : "";
	char key[32], val[64];
	int r;

	p->ring = SHM_RING_DEFAULT;
	p->cma = -1;
	while ((r = mrail_params_next(&pos, key, sizeof key, val, sizeof val))) {
		uint64_t n;
		if (r < 0) {
			mrail_error("shm driver parameters '%s': malformed "
				    "entry (want key=value,...)", s);
			return MRAIL_ERR_CONFIG;
		}
		if (!strcmp(key, "ring")) {
			if (parse_size(val, &n) || n < SHM_RING_MIN ||
			    n > SHM_RING_MAX || (n & (n - 1))) {
				mrail_error("shm driver parameter ring=%s: want "
					    "a power of two from 4K to 64M",
					    val);
				return MRAIL_ERR_CONFIG;
			}
			p->ring = (uint32_t)n;
		} else if (!strcmp(key, "cma")) {
			if (!strcmp(val, "auto"))
				p->cma = -1;
			else if (!strcmp(val, "on") || !strcmp(val, "1"))
				p->cma = 1;
			else if (!strcmp(val, "off") || !strcmp(val, "0"))
				p->cma = 0;
			else {
				mrail_error("shm driver parameter cma=%s: want "
					    "auto, on or off", val);
				return MRAIL_ERR_CONFIG;
			}
		} else {
			mrail_error("shm driver parameters: unknown key '%s' "
				    "(known: ring, cma)", key);
			return MRAIL_ERR_CONFIG;
		}
	}
	return MRAIL_OK;
}

/* ---- instance ---------------------------------------------------------- */

static int shm_open(const struct mrail_drv_open_args *args,
		    struct mrail_drv **out);

static void shm_close(struct mrail_drv *drv)
{
	while (drv->eps)
		shm_ep_close(drv->eps);
	shm_free_zombies(drv);
	shm_close_listeners(drv);
	shm_sendq_fini(drv);
	close(drv->epfd);
	free(drv);
}

static void shm_query_caps(struct mrail_drv *drv, struct mrail_drv_caps *caps)
{
	memset(caps, 0, sizeof *caps);
	caps->max_head = SHM_MAX_HEAD;
	caps->max_body = SHM_MAX_BODY;
	caps->max_body_iov = SHM_MAX_BODY_IOV;
	caps->eager_max_hint = SHM_EAGER_MAX_HINT;
	caps->flags = MRAIL_DRV_CAP_RECV_INTO_USER;
	if (drv->cma)
		caps->flags |= MRAIL_DRV_CAP_RDMA_READ |
			       MRAIL_DRV_CAP_RDMA_WRITE |
			       MRAIL_DRV_CAP_NEEDS_REG;
	caps->nominal_bandwidth = 10e9;
	caps->nominal_latency = 0.3e-6;
	caps->max_rma = drv->cma ? SHM_MAX_RMA : 0;
}

/* One rail: this host. Peers pair it when they share the host. */
static int shm_list_rails(struct mrail_drv *drv, struct mrail_drv_rail_desc *out,
			  int max)
{
	(void)drv;
	if (max < 1)
		return 0;
	memset(out, 0, sizeof *out);
	snprintf(out->name, sizeof out->name, "shm");
	snprintf(out->ifname, sizeof out->ifname, "shm");
	snprintf(out->fabric, sizeof out->fabric, "shm");
	out->scope = MRAIL_DRV_SCOPE_HOST;
	out->numa_node = -1;
	return 1;
}

static void shm_ep_set_ctx(struct mrail_drv_ep *ep, void *ctx)
{
	ep->ctx = ctx;
}

static void shm_ep_names(struct mrail_drv_ep *ep, char *local, size_t llen,
			 char *remote, size_t rlen)
{
	if (local && llen)
		snprintf(local, llen, "%s", ep->local_name);
	if (remote && rlen)
		snprintf(remote, rlen, "%s", ep->remote_name);
}

static void shm_ep_query(struct mrail_drv_ep *ep, struct mrail_drv_ep_info *info)
{
	(void)ep;
	memset(info, 0, sizeof *info);
	info->fd = -1;
}

static int shm_wait_fd(struct mrail_drv *drv)
{
	return drv->epfd;
}

/* ---- progress ---------------------------------------------------------- */

static int poll_events(struct mrail_drv *drv)
{
	struct epoll_event ev[SHM_EPOLL_BATCH];
	int n = epoll_wait(drv->epfd, ev, SHM_EPOLL_BATCH, 0), done = 0;

	for (int i = 0; i < n; i++)
		done += shm_handle_event(drv, ev[i].data.ptr, ev[i].events);
	return done;
}

/* Rings: deliver, move queued sends on, and arm the doorbell of a ring
 * that stays empty (the engine may be about to sleep). */
static int poll_rings(struct mrail_drv *drv)
{
	struct mrail_drv_ep *ep, *next;
	int n = 0;

	for (ep = drv->eps; ep; ep = next) {
		next = ep->next;
		if (ep->state != SHM_EP_CONNECTED)
			continue;
		int got = shm_rx(ep);
		if (got) {
			ep->empty_polls = 0;
			n += got;
		} else if (++ep->empty_polls == SHM_ARM_AFTER &&
			   !shm_ring_arm(&ep->rx)) {
			ep->empty_polls = 0; /* bytes came meanwhile */
		}
		if (ep->state == SHM_EP_CONNECTED && ep->sq_head)
			n += shm_flush(ep);
	}
	return n;
}

static int shm_progress(struct mrail_drv *drv)
{
	int n = 0;

	drv->progress_depth++;
	if (drv->attention)
		n += shm_handle_attention(drv);
	if (++drv->tick % SHM_EPOLL_EVERY == 0 || !drv->eps)
		n += poll_events(drv);
	n += poll_rings(drv);
	n += shm_run_completions(drv);
	if (--drv->progress_depth == 0)
		shm_free_zombies(drv);
	return n;
}

const struct mrail_drv_ops mrail_shm_driver_ops = {
	.name = "shm",
	.abi_version = MRAIL_DRV_ABI_VERSION,
	.open = shm_open,
	.close = shm_close,
	.query_caps = shm_query_caps,
	.listen = shm_listen,
	.connect = shm_connect,
	.ep_set_ctx = shm_ep_set_ctx,
	.send = shm_send,
	.ep_backlog = shm_ep_backlog,
	.progress = shm_progress,
	.wait_fd = shm_wait_fd,
	.ep_names = shm_ep_names,
	.ep_close = shm_ep_close,
	.list_rails = shm_list_rails,
	.ep_query = shm_ep_query,
	.rma = &shm_rma_ops,
};

static int shm_open(const struct mrail_drv_open_args *args,
		    struct mrail_drv **out)
{
	struct mrail_drv *drv = calloc(1, sizeof *drv);
	int rc;

	if (!drv)
		return MRAIL_ERR_NOMEM;
	mrail_drv_base_init(&drv->base, &mrail_shm_driver_ops, args);
	if ((rc = shm_params_parse(args->params, &drv->par))) {
		free(drv);
		return rc;
	}
	drv->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (drv->epfd < 0) {
		mrail_error("shm: epoll_create1: %s", strerror(errno));
		free(drv);
		return MRAIL_ERR_IO;
	}
	drv->cma = shm_cma_usable(drv->par.cma);
	if (drv->par.cma == 1 && !drv->cma) {
		mrail_error("shm driver parameter cma=on, but cross-memory "
			    "attach does not work here (see above)");
		close(drv->epfd);
		free(drv);
		return MRAIL_ERR_CONFIG;
	}
	*out = drv;
	return MRAIL_OK;
}
