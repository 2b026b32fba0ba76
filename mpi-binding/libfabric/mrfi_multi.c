/*
 * FI_MULTI_RECV: one posted buffer takes successive untagged messages
 * (MPICH ch4:ofi posts its active-message buffers so). The engine matches
 * a receive to a buffer of its own length, so the provider matches here:
 * at every CQ read (and when a buffer is posted) it claims the next
 * untagged message (mrail_improbe, any peer), learns its length and
 * receives it (mrail_imrecv_x) at the buffer's current offset. Each
 * message completes on its own (buf = where it was placed); once less
 * than FI_OPT_MIN_MULTI_RECV bytes are left, or the next message does not
 * fit in what is left, the buffer is retired and, when its last message
 * has landed, released by an entry with only FI_MULTI_RECV set.
 *
 * A message larger than a whole buffer is placed truncated (FI_ETRUNC,
 * olen set) and takes the buffer. A message claimed while no buffer is
 * posted waits, claimed, for the next one.
 */
#include "mrfi.h"

#include <stdlib.h>
#include <string.h>

struct mrfi_mrecv {
	struct mrfi_mrecv *next;
	struct mrfi_ep *ep;
	void *context;
	char *buf;
	size_t len, off;
	int report;
	/* Messages still landing, plus 1 while the buffer takes more: who
	 * brings it to 0 writes the release (callbacks may run in another
	 * thread's CQ read). */
	int holds;
};

static void release(struct mrfi_mrecv *m)
{
	if (__atomic_sub_fetch(&m->holds, 1, __ATOMIC_ACQ_REL))
		return;
	struct mrfi_cqe e = { 0 };
	e.e.op_context = m->context;
	e.e.flags = FI_MULTI_RECV; /* no FI_RECV: no message in it */
	e.src = FI_ADDR_NOTAVAIL;
	mrfi_cq_push(m->ep->rx_cq, &e);
	free(m);
}

void mrfi_multi_piece_done(struct mrfi_mrecv *m)
{
	release(m);
}

/* Retire the head buffer (it takes no more). Under mr_lock. */
static void retire_head(struct mrfi_ep *ep)
{
	struct mrfi_mrecv *m = ep->mr_head;
	__atomic_store_n(&ep->mr_head, m->next, __ATOMIC_RELEASE);
	if (!ep->mr_head)
		ep->mr_tail = NULL;
	release(m);
}

/* Receive claimed message msg (len bytes) into the head buffer. */
static int place(struct mrfi_ep *ep, struct mrfi_mrecv *m,
		 mrail_message_t *msg, size_t len)
{
	size_t room = m->len - m->off;
	size_t take = len < room ? len : room;
	struct mrfi_op *o = mrfi_op_new(ep, 0);
	if (!o)
		return -FI_ENOMEM;
	o->context = m->context;
	o->flags = FI_RECV | FI_MSG;
	o->report = m->report;
	o->buf = m->buf + m->off;
	o->len = take;
	o->multi = m;
	__atomic_add_fetch(&m->holds, 1, __ATOMIC_ACQ_REL);
	m->off += take;
	struct mrail_req_args a = MRAIL_REQ_ARGS_INIT;
	a.cb = mrfi_op_done;
	a.cb_ctx = o;
	mrfi_op_link(ep, o);
	int rc = mrail_imrecv_x(ep->engine, o->buf, take, msg, &a, &o->req);
	if (rc != MRAIL_OK) {
		pthread_mutex_lock(&ep->lock);
		if (o->pending) {
			if (o->prev)
				o->prev->next = o->next;
			else
				ep->pending = o->next;
			if (o->next)
				o->next->prev = o->prev;
		}
		pthread_mutex_unlock(&ep->lock);
		/* The message is lost to us: say so on the buffer. */
		FI_WARN(&mrfi_prov, FI_LOG_EP_DATA, "multi-recv: receiving a "
			"claimed message failed: %s\n", mrail_strerror(rc));
		free(o);
		release(m);
		return mrfi_err(rc);
	}
	return 0;
}

void mrfi_multi_progress(struct mrfi_ep *ep)
{
	/* Unlocked peek (every CQ read comes here): a buffer posted
	 * meanwhile runs its own pass. */
	if (!__atomic_load_n(&ep->mr_head, __ATOMIC_ACQUIRE))
		return;
	if (pthread_mutex_trylock(&ep->mr_lock))
		return; /* another thread is at it */
	for (;;) {
		struct mrfi_mrecv *m = ep->mr_head;
		if (!m)
			break;
		size_t room = m->len - m->off;
		if (room == 0 || room < ep->min_multi_recv) {
			retire_head(ep);
			continue;
		}
		if (!ep->mr_msg) {
			int found = 0;
			mrail_status_t st;
			mrail_message_t *msg = NULL;
			int rc = mrail_improbe(ep->engine, MRAIL_ANY_PEER,
					       MRFI_MSG_TAG, MRAIL_TAG_MASK_ALL,
					       &found, &msg, &st);
			if (rc != MRAIL_OK || !found)
				break;
			ep->mr_msg = msg;
			ep->mr_msg_len = st.length;
		}
		/* Does not fit in what is left of a used buffer: the next
		 * buffer takes it (whole buffers take anything, truncated). */
		if (ep->mr_msg_len > room && m->off > 0) {
			retire_head(ep);
			continue;
		}
		mrail_message_t *msg = ep->mr_msg;
		ep->mr_msg = NULL;
		(void)place(ep, m, msg, ep->mr_msg_len);
	}
	pthread_mutex_unlock(&ep->mr_lock);
}

int mrfi_multi_post(struct mrfi_ep *ep, const struct iovec *iov, size_t count,
		    void *context, int report)
{
	if (count != 1)
		return -FI_EINVAL; /* one contiguous buffer */
	struct mrfi_mrecv *m = calloc(1, sizeof *m);
	if (!m)
		return -FI_ENOMEM;
	m->ep = ep;
	m->context = context;
	m->buf = iov[0].iov_base;
	m->len = iov[0].iov_len;
	m->report = report;
	m->holds = 1;
	pthread_mutex_lock(&ep->mr_lock);
	if (ep->mr_tail)
		ep->mr_tail->next = m;
	else
		__atomic_store_n(&ep->mr_head, m, __ATOMIC_RELEASE);
	ep->mr_tail = m;
	pthread_mutex_unlock(&ep->mr_lock);
	mrfi_multi_progress(ep);
	return 0;
}

/* At close (the engine is gone, no callback will run): buffers still
 * posted, and their messages' ops (mrfi_multi_drop_piece), are dropped
 * without completions. */
void mrfi_multi_drop_piece(struct mrfi_mrecv *m)
{
	if (--m->holds == 0)
		free(m);
}

void mrfi_multi_free_all(struct mrfi_ep *ep)
{
	while (ep->mr_head) {
		struct mrfi_mrecv *m = ep->mr_head;
		ep->mr_head = m->next;
		mrfi_multi_drop_piece(m);
	}
	ep->mr_tail = NULL;
}
