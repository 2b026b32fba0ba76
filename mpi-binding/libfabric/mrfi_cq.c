/*
 * Completion queues. Progress is manual: every read first drives the
 * engines of the endpoints bound to the CQ (mrail_progress), whose
 * completion callbacks push entries here. Entries wait in a ring that
 * grows as needed; an error entry at the head makes reads answer
 * -FI_EAVAIL until fi_cq_readerr takes it.
 *
 * FI_WAIT_FD: the CQ's descriptor is an epoll set of its endpoints'
 * engine descriptors (mrail_wait_fd: drivers and engine timers) and an
 * eventfd for entries pushed by another thread and fi_cq_signal.
 * fi_trywait drives the engines until quiet (mrail_wait_prepare) and arms
 * the eventfd; fi_cq_sread sleeps on the set.
 */
#include "mrfi.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

static void wake(struct mrfi_cq *cq)
{
	uint64_t one = 1;
	/* EAGAIN: the counter is full, the sleeper wakes anyway. */
	if (write(cq->efd, &one, sizeof one) < 0 && errno != EAGAIN)
		FI_WARN(&mrfi_prov, FI_LOG_CQ, "CQ wake-up: %s\n",
			strerror(errno));
}

static void cq_progress(struct mrfi_cq *cq)
{
	struct mrfi_ep *eps[MRFI_CQ_EPS];
	pthread_mutex_lock(&cq->lock);
	int n = cq->neps;
	memcpy(eps, cq->eps, sizeof eps);
	pthread_mutex_unlock(&cq->lock);
	for (int i = 0; i < n; i++)
		mrfi_ep_progress(eps[i]);
}

int mrfi_cq_push(struct mrfi_cq *cq, const struct mrfi_cqe *e)
{
	pthread_mutex_lock(&cq->lock);
	if (cq->count == cq->cap) {
		size_t cap = cq->cap * 2;
		struct mrfi_cqe *q = malloc(cap * sizeof *q);
		if (!q) {
			pthread_mutex_unlock(&cq->lock);
			FI_WARN(&mrfi_prov, FI_LOG_CQ, "completion lost: no "
				"memory to grow the CQ\n");
			return -FI_ENOMEM;
		}
		for (size_t i = 0; i < cq->count; i++)
			q[i] = cq->q[(cq->head + i) % cq->cap];
		free(cq->q);
		cq->q = q;
		cq->head = 0;
		cq->cap = cap;
	}
	cq->q[(cq->head + cq->count) % cq->cap] = *e;
	cq->count++;
	/* Someone may sleep on the descriptor since fi_trywait: another
	 * thread's progress must wake them (their engine fds stay quiet). */
	int must_wake = cq->armed;
	cq->armed = 0;
	pthread_mutex_unlock(&cq->lock);
	if (must_wake)
		wake(cq);
	return 0;
}

static size_t entry_size(enum fi_cq_format f)
{
	switch (f) {
	case FI_CQ_FORMAT_CONTEXT: return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG: return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA: return sizeof(struct fi_cq_data_entry);
	default: return sizeof(struct fi_cq_tagged_entry);
	}
}

static void write_entry(enum fi_cq_format f, void *dst,
			const struct fi_cq_tagged_entry *e)
{
	switch (f) {
	case FI_CQ_FORMAT_CONTEXT: {
		struct fi_cq_entry *d = dst;
		d->op_context = e->op_context;
		break;
	}
	case FI_CQ_FORMAT_MSG: {
		struct fi_cq_msg_entry *d = dst;
		d->op_context = e->op_context;
		d->flags = e->flags;
		d->len = e->len;
		break;
	}
	case FI_CQ_FORMAT_DATA: {
		struct fi_cq_data_entry *d = dst;
		d->op_context = e->op_context;
		d->flags = e->flags;
		d->len = e->len;
		d->buf = e->buf;
		d->data = e->data;
		break;
	}
	default:
		memcpy(dst, e, sizeof *e);
	}
}

static ssize_t cq_readfrom(struct fid_cq *fcq, void *buf, size_t count,
			   fi_addr_t *src)
{
	struct mrfi_cq *cq = (struct mrfi_cq *)fcq;
	cq_progress(cq);
	size_t es = entry_size(cq->format);
	ssize_t n = 0;
	pthread_mutex_lock(&cq->lock);
	while ((size_t)n < count && cq->count) {
		struct mrfi_cqe *e = &cq->q[cq->head];
		if (e->err)
			break;
		write_entry(cq->format, (char *)buf + (size_t)n * es, &e->e);
		if (src)
			src[n] = e->src;
		cq->head = (cq->head + 1) % cq->cap;
		cq->count--;
		n++;
	}
	int err_head = cq->count && cq->q[cq->head].err;
	pthread_mutex_unlock(&cq->lock);
	if (n)
		return n;
	return err_head ? -FI_EAVAIL : -FI_EAGAIN;
}

static ssize_t cq_read(struct fid_cq *cq, void *buf, size_t count)
{
	return cq_readfrom(cq, buf, count, NULL);
}

static ssize_t cq_readerr(struct fid_cq *fcq, struct fi_cq_err_entry *buf,
			  uint64_t flags)
{
	struct mrfi_cq *cq = (struct mrfi_cq *)fcq;
	(void)flags;
	pthread_mutex_lock(&cq->lock);
	if (!cq->count || !cq->q[cq->head].err) {
		pthread_mutex_unlock(&cq->lock);
		return -FI_EAGAIN;
	}
	struct mrfi_cqe *e = &cq->q[cq->head];
	buf->op_context = e->e.op_context;
	buf->flags = e->e.flags;
	buf->len = e->e.len;
	buf->buf = e->e.buf;
	buf->data = e->e.data;
	buf->tag = e->e.tag;
	buf->olen = e->olen;
	buf->err = e->err;
	buf->prov_errno = e->prov_errno;
	/* No provider error data; err_data_size (1.5+) tells so. */
	buf->err_data_size = 0;
	cq->head = (cq->head + 1) % cq->cap;
	cq->count--;
	pthread_mutex_unlock(&cq->lock);
	return 1;
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int mrfi_cq_trywait(struct mrfi_cq *cq)
{
	struct mrfi_ep *eps[MRFI_CQ_EPS];
	if (cq->epfd < 0)
		return -FI_EINVAL; /* no wait object to sleep on */
	pthread_mutex_lock(&cq->lock);
	int n = cq->neps, full = cq->count > 0;
	memcpy(eps, cq->eps, sizeof eps);
	pthread_mutex_unlock(&cq->lock);
	if (full)
		return -FI_EAGAIN;
	for (int i = 0; i < n; i++) {
		if (!eps[i]->engine)
			continue;
		int rc = mrail_wait_prepare(eps[i]->engine);
		if (rc == MRAIL_ERR_AGAIN)
			return -FI_EAGAIN;
		if (rc != MRAIL_OK)
			return mrfi_err(rc);
	}
	uint64_t v;
	pthread_mutex_lock(&cq->lock);
	if (read(cq->efd, &v, sizeof v) < 0 && errno != EAGAIN)
		FI_WARN(&mrfi_prov, FI_LOG_CQ, "CQ wake-up: %s\n",
			strerror(errno));
	full = cq->count > 0 || cq->signaled;
	if (!full)
		cq->armed = 1;
	pthread_mutex_unlock(&cq->lock);
	return full ? -FI_EAGAIN : 0;
}

int mrfi_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	(void)fabric;
	for (int i = 0; i < count; i++) {
		if (!fids[i] || fids[i]->fclass != FI_CLASS_CQ)
			return -FI_EINVAL; /* only CQs have wait objects */
		int rc = mrfi_cq_trywait((struct mrfi_cq *)fids[i]);
		if (rc)
			return rc;
	}
	return 0;
}

static int take_signal(struct mrfi_cq *cq)
{
	pthread_mutex_lock(&cq->lock);
	int sig = cq->signaled;
	cq->signaled = 0;
	pthread_mutex_unlock(&cq->lock);
	return sig;
}

/* Blocking reads: FI_WAIT_FD sleeps on the CQ's descriptor; without it
 * (FI_WAIT_UNSPEC) reads spin on progress and yield the core between
 * rounds, which answers soonest. */
static ssize_t cq_sreadfrom(struct fid_cq *fcq, void *buf, size_t count,
			    fi_addr_t *src, const void *cond, int timeout)
{
	struct mrfi_cq *cq = (struct mrfi_cq *)fcq;
	(void)cond;
	double end = timeout >= 0 ? now_ms() + timeout : 0;
	for (;;) {
		ssize_t n = cq_readfrom(fcq, buf, count, src);
		if (n != -FI_EAGAIN)
			return n;
		if (take_signal(cq))
			return -FI_EAGAIN;
		double left = timeout >= 0 ? end - now_ms() : -1;
		if (timeout >= 0 && left <= 0)
			return -FI_EAGAIN;
		if (cq->epfd < 0) {
			sched_yield();
			continue;
		}
		int rc = mrfi_cq_trywait(cq);
		if (rc == -FI_EAGAIN)
			continue;
		if (rc)
			return rc;
		struct epoll_event ev;
		if (epoll_wait(cq->epfd, &ev, 1,
			       timeout >= 0 ? (int)left + 1 : -1) < 0 &&
		    errno != EINTR)
			return -errno;
	}
}

static ssize_t cq_sread(struct fid_cq *cq, void *buf, size_t count,
			const void *cond, int timeout)
{
	return cq_sreadfrom(cq, buf, count, NULL, cond, timeout);
}

static int cq_signal(struct fid_cq *fcq)
{
	struct mrfi_cq *cq = (struct mrfi_cq *)fcq;
	pthread_mutex_lock(&cq->lock);
	cq->signaled = 1;
	pthread_mutex_unlock(&cq->lock);
	if (cq->efd >= 0)
		wake(cq);
	return 0;
}

static const char *cq_strerror(struct fid_cq *cq, int prov_errno,
			       const void *err_data, char *buf, size_t len)
{
	(void)cq;
	(void)err_data;
	const char *s = mrail_strerror(prov_errno);
	if (buf && len) {
		strncpy(buf, s, len - 1);
		buf[len - 1] = 0;
		return buf;
	}
	return s;
}

static int cq_close(struct fid *fid)
{
	struct mrfi_cq *cq = (struct mrfi_cq *)fid;
	if (cq->neps)
		return -FI_EBUSY;
	if (cq->epfd >= 0)
		close(cq->epfd);
	if (cq->efd >= 0)
		close(cq->efd);
	free(cq->q);
	pthread_mutex_destroy(&cq->lock);
	free(cq);
	return 0;
}

static int cq_control(struct fid *fid, int command, void *arg)
{
	struct mrfi_cq *cq = (struct mrfi_cq *)fid;
	switch (command) {
	case FI_GETWAIT:
		if (cq->epfd < 0 || !arg)
			return -FI_ENODATA;
		*(int *)arg = cq->epfd;
		return 0;
	case FI_GETWAITOBJ:
		if (!arg)
			return -FI_EINVAL;
		*(enum fi_wait_obj *)arg = cq->epfd >= 0 ? FI_WAIT_FD
							 : FI_WAIT_NONE;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static struct fi_ops cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cq_close,
	.bind = mrfi_no_bind,
	.control = cq_control,
	.ops_open = mrfi_no_ops_open,
};

static struct fi_ops_cq cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = cq_read,
	.readfrom = cq_readfrom,
	.readerr = cq_readerr,
	.sread = cq_sread,
	.sreadfrom = cq_sreadfrom,
	.signal = cq_signal,
	.strerror = cq_strerror,
};

int mrfi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		 struct fid_cq **fcq, void *context)
{
	enum fi_cq_format f = attr ? attr->format : FI_CQ_FORMAT_UNSPEC;
	if (f == FI_CQ_FORMAT_UNSPEC)
		f = FI_CQ_FORMAT_TAGGED;
	if (f > FI_CQ_FORMAT_TAGGED)
		return -FI_ENOSYS;
	enum fi_wait_obj w = attr ? attr->wait_obj : FI_WAIT_NONE;
	if (w != FI_WAIT_NONE && w != FI_WAIT_UNSPEC && w != FI_WAIT_FD) {
		FI_INFO(&mrfi_prov, FI_LOG_CQ, "wait object %d: only "
			"FI_WAIT_NONE, FI_WAIT_UNSPEC and FI_WAIT_FD\n", w);
		return -FI_ENOSYS;
	}
	if (attr && attr->wait_cond != FI_CQ_COND_NONE)
		return -FI_ENOSYS;
	struct mrfi_cq *cq = calloc(1, sizeof *cq);
	if (!cq)
		return -FI_ENOMEM;
	cq->epfd = cq->efd = -1;
	if (w == FI_WAIT_FD) {
		struct epoll_event ev = {.events = EPOLLIN};
		cq->epfd = epoll_create1(EPOLL_CLOEXEC);
		cq->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		ev.data.fd = cq->efd;
		if (cq->epfd < 0 || cq->efd < 0 ||
		    epoll_ctl(cq->epfd, EPOLL_CTL_ADD, cq->efd, &ev)) {
			int err = errno;
			if (cq->epfd >= 0)
				close(cq->epfd);
			if (cq->efd >= 0)
				close(cq->efd);
			free(cq);
			return -err;
		}
	}
	cq->cap = attr && attr->size ? attr->size : 1024;
	cq->q = malloc(cq->cap * sizeof *cq->q);
	if (!cq->q) {
		free(cq);
		return -FI_ENOMEM;
	}
	pthread_mutex_init(&cq->lock, NULL);
	cq->dom = (struct mrfi_domain *)domain;
	cq->format = f;
	cq->cq.fid.fclass = FI_CLASS_CQ;
	cq->cq.fid.context = context;
	cq->cq.fid.ops = &cq_fi_ops;
	cq->cq.ops = &cq_ops;
	*fcq = &cq->cq;
	return 0;
}

int mrfi_cq_attach(struct mrfi_cq *cq, struct mrfi_ep *ep)
{
	pthread_mutex_lock(&cq->lock);
	for (int i = 0; i < cq->neps; i++)
		if (cq->eps[i] == ep) {
			pthread_mutex_unlock(&cq->lock);
			return 0;
		}
	int rc = 0, fd = -1;
	if (cq->neps == MRFI_CQ_EPS)
		rc = -FI_ENOSPC;
	else if (cq->epfd >= 0 && ep->engine &&
		 (rc = mrfi_err(mrail_wait_fd(ep->engine, &fd))) == 0) {
		struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
		if (epoll_ctl(cq->epfd, EPOLL_CTL_ADD, fd, &ev) &&
		    errno != EEXIST)
			rc = -errno;
	}
	if (rc == 0)
		cq->eps[cq->neps++] = ep;
	pthread_mutex_unlock(&cq->lock);
	return rc;
}

void mrfi_cq_detach(struct mrfi_cq *cq, struct mrfi_ep *ep)
{
	pthread_mutex_lock(&cq->lock);
	int fd;
	for (int i = 0; i < cq->neps; i++)
		if (cq->eps[i] == ep) {
			cq->eps[i] = cq->eps[--cq->neps];
			if (cq->epfd >= 0 && ep->engine &&
			    mrail_wait_fd(ep->engine, &fd) == MRAIL_OK)
				epoll_ctl(cq->epfd, EPOLL_CTL_DEL, fd, NULL);
			break;
		}
	pthread_mutex_unlock(&cq->lock);
}
