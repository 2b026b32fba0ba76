/*
 * Completion counters of the provider `mrail` (fi_cntr(3)), two processes
 * (fork) over the engine's default rails: a send counter and a receive
 * counter bound to one endpoint each side count every completion, with
 * selective completion leaving the CQ empty; fi_cntr_wait with a timeout
 * returns -FI_ETIMEDOUT when the threshold is out of reach; a truncated
 * receive and a cancelled one move the error count (and end a wait with
 * -FI_EAVAIL); add/set/adderr/seterr; a counter still bound cannot be
 * closed; bad attributes and bind flags are refused.
 * FI_PROVIDER_PATH must name the folder of libmrail-fi.so.
 */
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pair.h"


#define NMSG 20

static struct fid_fabric *fab;
static struct fid_domain *dom;
static struct fid_ep *ep;
static struct fid_av *av;
static struct fid_cq *cq;
static struct fid_cntr *tx_cntr, *rx_cntr;
static fi_addr_t peer;

static void open_all(void)
{
	struct fi_info *info =
		pair_open_domain(FI_TAGGED | FI_MSG, FI_AV_TABLE, &fab, &dom);
	CHECK(info->domain_attr->cntr_cnt > 0, "cntr_cnt 0 in fi_info");
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED,
				 .wait_obj = FI_WAIT_NONE };
	CHECK(fi_cq_open(dom, &ca, &cq, NULL) == 0, "cq");
	/* Refused: a wait object we do not have, unknown flags. */
	struct fi_cntr_attr bad = { .events = FI_CNTR_EVENTS_COMP,
				    .wait_obj = FI_WAIT_FD };
	struct fid_cntr *c;
	CHECK(fi_cntr_open(dom, &bad, &c, NULL) == -FI_ENOSYS,
	      "FI_WAIT_FD counter opened");
	bad.wait_obj = FI_WAIT_UNSPEC;
	bad.flags = 1;
	CHECK(fi_cntr_open(dom, &bad, &c, NULL) == -FI_EINVAL,
	      "counter with flags opened");
	struct fi_cntr_attr na = { .events = FI_CNTR_EVENTS_COMP,
				   .wait_obj = FI_WAIT_UNSPEC };
	CHECK(fi_cntr_open(dom, &na, &tx_cntr, NULL) == 0, "tx cntr");
	na.wait_obj = FI_WAIT_NONE;
	CHECK(fi_cntr_open(dom, &na, &rx_cntr, NULL) == 0, "rx cntr");
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	CHECK(fi_av_open(dom, &aa, &av, NULL) == 0, "av");
	CHECK(fi_endpoint(dom, info, &ep, NULL) == 0, "endpoint");
	CHECK(fi_ep_bind(ep, &av->fid, 0) == 0, "bind av");
	/* Selective completion: only the counters see the transfers. */
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV |
			 FI_SELECTIVE_COMPLETION) == 0, "bind cq");
	CHECK(fi_ep_bind(ep, &tx_cntr->fid, FI_TAGGED) == -FI_EINVAL,
	      "counter bound with FI_TAGGED");
	/* The RMA kinds too, as MPICH binds them (they never move). */
	CHECK(fi_ep_bind(ep, &tx_cntr->fid, FI_SEND | FI_READ | FI_WRITE) == 0,
	      "bind tx cntr");
	CHECK(fi_ep_bind(ep, &rx_cntr->fid, FI_RECV) == 0, "bind rx cntr");
	CHECK(fi_enable(ep) == 0, "enable");
	fi_freeinfo(info);

	peer = pair_exchange_names(ep, av);
}

static void close_all(void)
{
	CHECK(fi_close(&tx_cntr->fid) == -FI_EBUSY, "bound counter closed");
	CHECK(fi_close(&ep->fid) == 0, "close ep");
	CHECK(fi_close(&tx_cntr->fid) == 0, "close tx cntr");
	CHECK(fi_close(&rx_cntr->fid) == 0, "close rx cntr");
	CHECK(fi_close(&av->fid) == 0, "close av");
	CHECK(fi_close(&cq->fid) == 0, "close cq");
	CHECK(fi_close(&dom->fid) == 0, "close domain");
	CHECK(fi_close(&fab->fid) == 0, "close fabric");
}

static void cq_empty(void)
{
	struct fi_cq_tagged_entry e;
	CHECK(fi_cq_read(cq, &e, 1) == -FI_EAGAIN,
	      "selective completion wrote a CQ entry");
}

/* NMSG tagged sends, fi_tinject ones included: the send counter reaches
 * NMSG; then one 64 B message for the peer's truncated receive. */
static void sender(void)
{
	int v[NMSG];
	for (int i = 0; i < NMSG; i++) {
		v[i] = i;
		ssize_t rc = i % 2
			? fi_tinject(ep, &v[i], sizeof v[i], peer, 7)
			: fi_tsend(ep, &v[i], sizeof v[i], NULL, peer, 7,
				   NULL);
		CHECK(rc == 0, "send %d: %zd", i, rc);
	}
	CHECK(fi_cntr_wait(tx_cntr, NMSG, 10000) == 0,
	      "send counter %llu, not %d",
	      (unsigned long long)fi_cntr_read(tx_cntr), NMSG);
	CHECK(fi_cntr_readerr(tx_cntr) == 0, "send errors");
	cq_empty();
	char big[64];
	memset(big, 'x', sizeof big);
	CHECK(fi_tsend(ep, big, sizeof big, NULL, peer, 8, NULL) == 0,
	      "big send");
	CHECK(fi_cntr_wait(tx_cntr, NMSG + 1, 10000) == 0, "big send count");
	sync_peer(); /* the receiver's checks */
}

static void receiver(void)
{
	int v[NMSG];
	/* Nothing posted yet: a wait times out, about on time. */
	time_t t0 = time(NULL);
	CHECK(fi_cntr_wait(rx_cntr, 1, 300) == -FI_ETIMEDOUT,
	      "wait on an idle counter did not time out");
	CHECK(time(NULL) - t0 < 5, "wait with a 300 ms timeout took %lds",
	      (long)(time(NULL) - t0));
	for (int i = 0; i < NMSG; i++)
		CHECK(fi_trecv(ep, &v[i], sizeof v[i], NULL, peer, 7, 0,
			       NULL) == 0, "trecv %d", i);
	CHECK(fi_cntr_wait(rx_cntr, NMSG, 10000) == 0,
	      "recv counter %llu, not %d",
	      (unsigned long long)fi_cntr_read(rx_cntr), NMSG);
	for (int i = 0; i < NMSG; i++)
		CHECK(v[i] == i, "message %d holds %d", i, v[i]);
	CHECK(fi_cntr_readerr(rx_cntr) == 0, "recv errors");
	cq_empty();

	/* Truncation: an error, not a completion; it ends a wait for a
	 * threshold that can no longer be reached. */
	char small[16];
	CHECK(fi_trecv(ep, small, sizeof small, NULL, peer, 8, 0, NULL) == 0,
	      "small trecv");
	CHECK(fi_cntr_wait(rx_cntr, NMSG + 1, 10000) == -FI_EAVAIL,
	      "truncation did not end the wait");
	CHECK(fi_cntr_readerr(rx_cntr) == 1 && fi_cntr_read(rx_cntr) == NMSG,
	      "after truncation: %llu ok, %llu errors",
	      (unsigned long long)fi_cntr_read(rx_cntr),
	      (unsigned long long)fi_cntr_readerr(rx_cntr));
	struct fi_cq_err_entry err = { 0 };
	CHECK(fi_cq_readerr(cq, &err, 0) == 1 && err.err == FI_ETRUNC,
	      "truncation not on the CQ");

	/* Cancel: one more error. */
	int never;
	CHECK(fi_trecv(ep, &never, sizeof never, NULL, peer, 99, 0,
		       &never) == 0, "trecv to cancel");
	CHECK(fi_cancel(&ep->fid, &never) == 0, "cancel");
	time_t t1 = time(NULL);
	while (fi_cntr_readerr(rx_cntr) < 2)
		CHECK(time(NULL) - t1 < 10, "cancel not counted");
	CHECK(fi_cq_readerr(cq, &err, 0) == 1 && err.err == FI_ECANCELED,
	      "cancel not on the CQ");

	/* The application's own adjustments. */
	CHECK(fi_cntr_add(rx_cntr, 5) == 0 &&
	      fi_cntr_read(rx_cntr) == NMSG + 5, "add");
	CHECK(fi_cntr_set(rx_cntr, 1) == 0 && fi_cntr_read(rx_cntr) == 1,
	      "set");
	CHECK(fi_cntr_wait(rx_cntr, 1, 0) == 0, "wait on a reached count");
	CHECK(fi_cntr_adderr(rx_cntr, 3) == 0 && fi_cntr_readerr(rx_cntr) == 5,
	      "adderr");
	CHECK(fi_cntr_seterr(rx_cntr, 0) == 0 && fi_cntr_readerr(rx_cntr) == 0,
	      "seterr");
	sync_peer();
}

int main(void)
{
	return pair_run(open_all, close_all, sender, receiver,
			"provider counters: OK");
}
