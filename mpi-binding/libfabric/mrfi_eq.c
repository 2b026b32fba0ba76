/*
 * Event queues. An RDM endpoint of this provider raises no events (no
 * connections to manage, AV inserts are synchronous), but applications
 * open an EQ anyway (fi_pingpong does) and may fi_eq_write their own
 * events: those are queued and read back in order.
 */
#include "mrfi.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EQ_DATA_MAX 256

struct eq_ev {
	struct eq_ev *next;
	uint32_t event;
	size_t len;
	unsigned char data[EQ_DATA_MAX];
};

struct mrfi_eq {
	struct fid_eq eq;
	pthread_mutex_t lock;
	struct eq_ev *head, *tail;
};

static ssize_t eq_read(struct fid_eq *feq, uint32_t *event, void *buf,
		       size_t len, uint64_t flags)
{
	struct mrfi_eq *eq = (struct mrfi_eq *)feq;
	pthread_mutex_lock(&eq->lock);
	struct eq_ev *ev = eq->head;
	if (!ev) {
		pthread_mutex_unlock(&eq->lock);
		return -FI_EAGAIN;
	}
	if (len < ev->len) {
		pthread_mutex_unlock(&eq->lock);
		return -FI_ETOOSMALL;
	}
	*event = ev->event;
	memcpy(buf, ev->data, ev->len);
	ssize_t n = (ssize_t)ev->len;
	if (!(flags & FI_PEEK)) {
		eq->head = ev->next;
		if (!eq->head)
			eq->tail = NULL;
		free(ev);
	}
	pthread_mutex_unlock(&eq->lock);
	return n;
}

static ssize_t eq_readerr(struct fid_eq *eq, struct fi_eq_err_entry *buf,
			  uint64_t flags)
{
	(void)eq;
	(void)buf;
	(void)flags;
	return -FI_EAGAIN; /* this provider raises no error events */
}

static ssize_t eq_write(struct fid_eq *feq, uint32_t event, const void *buf,
			size_t len, uint64_t flags)
{
	struct mrfi_eq *eq = (struct mrfi_eq *)feq;
	(void)flags;
	if (len > EQ_DATA_MAX)
		return -FI_EINVAL;
	struct eq_ev *ev = malloc(sizeof *ev);
	if (!ev)
		return -FI_ENOMEM;
	ev->next = NULL;
	ev->event = event;
	ev->len = len;
	memcpy(ev->data, buf, len);
	pthread_mutex_lock(&eq->lock);
	if (eq->tail)
		eq->tail->next = ev;
	else
		eq->head = ev;
	eq->tail = ev;
	pthread_mutex_unlock(&eq->lock);
	return (ssize_t)len;
}

static ssize_t eq_sread(struct fid_eq *feq, uint32_t *event, void *buf,
			size_t len, int timeout, uint64_t flags)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		ssize_t n = eq_read(feq, event, buf, len, flags);
		if (n != -FI_EAGAIN)
			return n;
		clock_gettime(CLOCK_MONOTONIC, &t);
		double ms = (double)(t.tv_sec - t0.tv_sec) * 1e3 +
			    (double)(t.tv_nsec - t0.tv_nsec) / 1e6;
		if (timeout >= 0 && ms >= timeout)
			return -FI_EAGAIN;
		struct timespec nap = { 0, 1000000 };
		nanosleep(&nap, NULL);
	}
}

static const char *eq_strerror(struct fid_eq *eq, int prov_errno,
			       const void *err_data, char *buf, size_t len)
{
	(void)eq;
	(void)err_data;
	const char *s = mrail_strerror(prov_errno);
	if (buf && len) {
		strncpy(buf, s, len - 1);
		buf[len - 1] = 0;
		return buf;
	}
	return s;
}

static int eq_close(struct fid *fid)
{
	struct mrfi_eq *eq = (struct mrfi_eq *)fid;
	while (eq->head) {
		struct eq_ev *ev = eq->head;
		eq->head = ev->next;
		free(ev);
	}
	pthread_mutex_destroy(&eq->lock);
	free(eq);
	return 0;
}

static struct fi_ops eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = eq_close,
	.bind = mrfi_no_bind,
	.control = mrfi_no_control,
	.ops_open = mrfi_no_ops_open,
};

static struct fi_ops_eq eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = eq_read,
	.readerr = eq_readerr,
	.write = eq_write,
	.sread = eq_sread,
	.strerror = eq_strerror,
};

int mrfi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		 struct fid_eq **feq, void *context)
{
	(void)fabric;
	if (attr && attr->wait_obj != FI_WAIT_NONE &&
	    attr->wait_obj != FI_WAIT_UNSPEC)
		return -FI_ENOSYS;
	struct mrfi_eq *eq = calloc(1, sizeof *eq);
	if (!eq)
		return -FI_ENOMEM;
	pthread_mutex_init(&eq->lock, NULL);
	eq->eq.fid.fclass = FI_CLASS_EQ;
	eq->eq.fid.context = context;
	eq->eq.fid.ops = &eq_fi_ops;
	eq->eq.ops = &eq_ops;
	*feq = &eq->eq;
	return 0;
}
