/*
 * The provider `mrail` with FI_WAIT_FD completion queues, two processes
 * (fork) as an event loop drives them: fi_control(FI_GETWAITOBJ /
 * FI_GETWAIT) gives the CQ's descriptor; fi_trywait says when sleeping on
 * it is safe; a message sent 300 ms later wakes the sleeper (tagged, then
 * one of 1 MiB); fi_cq_sread sleeps until its completion comes, or its
 * timeout passes; fi_cq_signal ends a blocking read. Bad input: a wait
 * object the provider does not have, fi_trywait on a fid with none.
 * FI_PROVIDER_PATH must name the folder of libmrail-fi.so.
 */
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pair.h"


enum { BIG = 1 << 20, DELAY_MS = 300 };

static struct fid_fabric *fab;
static struct fid_domain *dom;
static struct fid_ep *ep;
static struct fid_av *av;
static struct fid_cq *cq;
static fi_addr_t peer;

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void open_all(void)
{
	struct fi_info *info =
		pair_open_domain(FI_TAGGED | FI_MSG, FI_AV_TABLE, &fab, &dom);
	struct fi_cq_attr bad = {.format = FI_CQ_FORMAT_TAGGED,
				 .wait_obj = FI_WAIT_SET};
	CHECK(fi_cq_open(dom, &bad, &cq, NULL) == -FI_ENOSYS,
	      "FI_WAIT_SET accepted");
	struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_TAGGED,
				.wait_obj = FI_WAIT_FD};
	CHECK(fi_cq_open(dom, &ca, &cq, NULL) == 0, "cq with FI_WAIT_FD");
	struct fi_av_attr aa = {.type = FI_AV_TABLE};
	CHECK(fi_av_open(dom, &aa, &av, NULL) == 0, "av");
	ep = pair_open_ep(dom, info, av, cq);
	fi_freeinfo(info);
	peer = pair_exchange_names(ep, av);
}

static void close_all(void)
{
	pair_close(ep, av, cq, dom, fab);
}

/* One completion, reading the CQ only when its descriptor wakes. */
static struct fi_cq_tagged_entry poll_one(int fd, unsigned *sleeps)
{
	struct fi_cq_tagged_entry e;
	struct fid *f = &cq->fid;
	double end = now_s() + 30;
	for (;;) {
		ssize_t n = fi_cq_read(cq, &e, 1);
		if (n == 1)
			return e;
		CHECK(n == -FI_EAGAIN, "fi_cq_read: %zd", n);
		CHECK(now_s() < end, "no completion in 30 s");
		int rc = fi_trywait(fab, &f, 1);
		if (rc == -FI_EAGAIN)
			continue;
		CHECK(rc == 0, "fi_trywait: %d", rc);
		struct pollfd p = {fd, POLLIN, 0};
		CHECK(poll(&p, 1, -1) == 1, "poll");
		(*sleeps)++;
	}
}

static void sender(void)
{
	static char big[BIG];
	struct fi_cq_tagged_entry e;
	for (int i = 0; i < 3; i++) {
		sync_peer();
		usleep(DELAY_MS * 1000);
		size_t len = i == 1 ? BIG : 8;
		memset(big, 'a' + i, len);
		CHECK(fi_tsend(ep, big, len, NULL, peer, 100 + i, big) == 0,
		      "tsend %d", i);
		ssize_t n = fi_cq_sread(cq, &e, 1, NULL, 10000);
		CHECK(n == 1 && e.op_context == big, "send completion: %zd", n);
	}
	sync_peer();
}

static void receiver(void)
{
	static char big[BIG];
	int fd = -1;
	enum fi_wait_obj w = FI_WAIT_NONE;
	CHECK(fi_control(&cq->fid, FI_GETWAITOBJ, &w) == 0 && w == FI_WAIT_FD,
	      "FI_GETWAITOBJ: %d", (int)w);
	CHECK(fi_control(&cq->fid, FI_GETWAIT, &fd) == 0 && fd >= 0,
	      "FI_GETWAIT");
	struct fid *notcq = &av->fid;
	CHECK(fi_trywait(fab, &notcq, 1) == -FI_EINVAL, "trywait on an AV");
	for (int i = 0; i < 2; i++) {
		size_t len = i == 1 ? BIG : 8;
		CHECK(fi_trecv(ep, big, len, NULL, peer, 100 + i, 0, big) == 0,
		      "trecv %d", i);
		unsigned sleeps = 0;
		double t0 = now_s();
		sync_peer();
		struct fi_cq_tagged_entry e = poll_one(fd, &sleeps);
		double took = now_s() - t0;
		CHECK(e.op_context == big && e.len == len && e.tag == 100u + i &&
		      big[0] == 'a' + i && big[len - 1] == 'a' + i,
		      "message %d", i);
		printf("message %d (%zu B) after %.0f ms, %u sleeps\n", i, len,
		       took * 1e3, sleeps);
		/* The engine's timers wake it every 5 ms while the receive
		 * waits: about 60 in 300 ms, not a spin. */
		CHECK(sleeps >= 1 && sleeps < 2000, "%u sleeps", sleeps);
	}
	/* fi_cq_sread sleeps until the completion; a short timeout first. */
	struct fi_cq_tagged_entry e;
	CHECK(fi_trecv(ep, big, 8, NULL, peer, 102, 0, big) == 0, "trecv 2");
	sync_peer();
	CHECK(fi_cq_sread(cq, &e, 1, NULL, 20) == -FI_EAGAIN,
	      "sread returned before its message");
	ssize_t n = fi_cq_sread(cq, &e, 1, NULL, -1);
	CHECK(n == 1 && e.op_context == big && e.tag == 102, "sread: %zd", n);
	/* fi_cq_signal ends a blocking read. */
	CHECK(fi_cq_signal(cq) == 0, "signal");
	CHECK(fi_cq_sread(cq, &e, 1, NULL, -1) == -FI_EAGAIN,
	      "sread after fi_cq_signal");
	sync_peer();
}

int main(void)
{
	return pair_run(open_all, close_all, sender, receiver,
			"provider test wait-fd: OK");
}
