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
#include <sys/eventfd.h>
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

static void wake(struct dc_drv *dc)
{
	uint64_t one = 1;
	struct mrail_drv *drv = (struct mrail_drv *)dc;

	if (write(drv->wake.poll.fd, &one, sizeof one) < 0 && errno != EAGAIN)
		mrail_debug("shm: wake-up: %s", strerror(errno));
}

const struct dc_hooks shm_hooks = {
	.name = "shm",
	.ep_free = shm_ep_free,
	.ep_closing = shm_ep_closing,
	.ep_attend = shm_ep_attend,
	.wake = wake,
	.ep_stop = shm_ep_stop,
	.ep_fail_ops = shm_rma_fail_of,
	.ep_drop_ops = shm_rma_drop_of,
	.ep_wanted_events = shm_ep_wanted_events,
	.ep_events = shm_ep_events,
	.ep_accept = shm_ep_accept,
	.other_events = shm_bell_events,
};

static int shm_open(const struct mrail_drv_open_args *args,
		    struct mrail_drv **out);

static void shm_close(struct mrail_drv *drv)
{
	dc_drv_fini(&drv->dc); /* closes every endpoint and listener */
	shm_rma_fini(drv);
	if (drv->wake.poll.fd >= 0)
		close(drv->wake.poll.fd);
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
			       MRAIL_DRV_CAP_NEEDS_REG |
			       MRAIL_DRV_CAP_REG_CHEAP |
			       MRAIL_DRV_CAP_RMA_CPU;
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

static void shm_ep_query(struct mrail_drv_ep *ep, struct mrail_drv_ep_info *info)
{
	(void)ep;
	memset(info, 0, sizeof *info);
	info->fd = -1;
}

/* A same-host link cannot die while its socket is open: the peer's
 * death shows as a hang-up, which fails the endpoint. A peer that only
 * computes must not have its rail failed by the ack rule. */
static int shm_ep_link_quiet_ms(struct mrail_drv_ep *ep)
{
	return ep && ep->dc.state == DC_EP_CONNECTED ? 0 : -1;
}

static int shm_wait_fd(struct mrail_drv *drv)
{
	return drv->dc.epfd;
}

/* ---- progress ---------------------------------------------------------- */

/* Rings: deliver and move queued sends on. */
static int poll_rings(struct mrail_drv *drv)
{
	struct mrail_list *pos, *tmp;
	int n = 0;
	bool connecting = false;

	dc_foreach_ep(pos, tmp, &drv->dc) {
		struct mrail_drv_ep *ep = shm_ep(dc_ep_entry(pos));
		if (ep->dc.state != DC_EP_CONNECTED) {
			connecting |= ep->dc.state == DC_EP_CONNECTING;
			continue;
		}
		if (!shm_rx_idle(ep))
			n += shm_rx(ep);
		if (ep->dc.state == DC_EP_CONNECTED && ep->dc.sq_head)
			n += shm_flush(ep);
	}
	drv->connecting = connecting;
	return n;
}

static void audit_rings(struct mrail_drv *drv)
{
	struct mrail_list *pos, *tmp;

	dc_foreach_ep(pos, tmp, &drv->dc) {
		struct mrail_drv_ep *ep = shm_ep(dc_ep_entry(pos));
		if (ep->dc.state == DC_EP_CONNECTED)
			shm_rx_audit(ep);
	}
}

/*
 * The doorbells are armed only here, just before the engine sleeps, never
 * while it polls: a producer that finds its consumer armed makes a
 * system call (the eventfd write) and the consumer another (its read),
 * which on a guest whose system calls cost a microsecond doubled an 8 B
 * message's latency when empty polls armed them.
 */
static int shm_trywait(struct mrail_drv *drv)
{
	struct mrail_list *pos, *tmp;
	int rc = 0;

	/* A get queued by an upcall of the last pass has not run yet. */
	if (drv->rma_head)
		return MRAIL_ERR_AGAIN;
	drv->armed = true;
	dc_foreach_ep(pos, tmp, &drv->dc) {
		struct mrail_drv_ep *ep = shm_ep(dc_ep_entry(pos));
		if (ep->dc.state != DC_EP_CONNECTED)
			continue;
		shm_rx_release(ep); /* no space held while we sleep */
		if (!shm_ring_arm(&ep->rx))
			rc = MRAIL_ERR_AGAIN; /* bytes came meanwhile */
	}
	return rc;
}

static int shm_progress(struct mrail_drv *drv)
{
	int n = 0;

	if (!dc_progress_enter(&drv->dc))
		return 0;
	if (drv->dc.attention)
		n += dc_attend(&drv->dc);
	/* After a sleep the doorbell that woke us is drained at once. The
	 * rings stay armed: another thread (the progress thread) may be
	 * the one asleep, and a producer clears the flag when it rings. */
	if (drv->armed || drv->connecting ||
	    ++drv->tick % SHM_EPOLL_EVERY == 0 ||
	    mrail_list_empty(&drv->dc.eps)) {
		drv->armed = false;
		n += dc_epoll_dispatch(&drv->dc);
		audit_rings(drv);
	}
	n += poll_rings(drv);
	n += dc_run_completions(&drv->dc);
	n += shm_rma_completions(drv);
	dc_progress_leave(&drv->dc);
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
	.ep_set_ctx = dc_op_ep_set_ctx,
	.send = shm_send,
	.inject = shm_inject,
	.ep_backlog = dc_op_ep_backlog,
	.progress = shm_progress,
	.wait_fd = shm_wait_fd,
	.trywait = shm_trywait,
	.ep_names = dc_op_ep_names,
	.ep_close = dc_op_ep_close,
	.list_rails = shm_list_rails,
	.ep_query = shm_ep_query,
	.ep_link_quiet_ms = shm_ep_link_quiet_ms,
	.rma = &shm_rma_ops,
};

static int shm_open(const struct mrail_drv_open_args *args,
		    struct mrail_drv **out)
{
	struct mrail_drv *drv = calloc(1, sizeof *drv);
	int rc;

	if (!drv)
		return MRAIL_ERR_NOMEM;
	dc_drv_init(&drv->dc, &shm_hooks, &mrail_shm_driver_ops, args);
	drv->wake = (struct shm_bell){{DC_OBJ_OTHER, -1}, NULL};
	drv->key_salt = (uint64_t)getpid() << 32;
	if ((rc = shm_params_parse(args->params, &drv->par)) ||
	    (rc = dc_epoll_open(&drv->dc)))
		goto fail;
	drv->wake.poll.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (drv->wake.poll.fd < 0) {
		mrail_error("shm: eventfd: %s", strerror(errno));
		rc = MRAIL_ERR_IO;
		goto fail;
	}
	if ((rc = shm_bell_watch(drv, &drv->wake)))
		goto fail;
	drv->cma = shm_cma_usable(drv->par.cma);
	if (drv->par.cma == 1 && !drv->cma) {
		mrail_error("shm driver parameter cma=on, but cross-memory "
			    "attach does not work here (see above)");
		rc = MRAIL_ERR_CONFIG;
		goto fail;
	}
	*out = drv;
	return MRAIL_OK;
fail:
	dc_drv_fini(&drv->dc);
	if (drv->wake.poll.fd >= 0)
		close(drv->wake.poll.fd);
	free(drv);
	return rc;
}
