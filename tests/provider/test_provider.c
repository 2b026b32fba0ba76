/*
 * The provider `mrail` through libfabric's public API, two real processes
 * (fork) over the engine's default rails on this host: tagged matching
 * with wildcards and FI_SOURCE, untagged messages, inject, truncation
 * errors, cancel, probe/claim/discard, AV map and table, every CQ format,
 * FI_MULTI_RECV buffers (messages packed, buffers released, one truncated
 * into a later buffer), and bad input (a name that is not an mrail name,
 * an unknown fi_addr).
 * usage: test_provider table|map context|msg|data|tagged
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


static struct fid_fabric *fab;
static struct fid_domain *dom;
static struct fid_ep *ep;
static struct fid_av *av;
static struct fid_cq *cq;
static enum fi_cq_format fmt;
static fi_addr_t peer;

/* One completion (tagged view of whatever format) or an error entry. */
static int wait_comp(struct fi_cq_tagged_entry *e, fi_addr_t *src,
		     struct fi_cq_err_entry *err)
{
	union {
		struct fi_cq_entry c;
		struct fi_cq_msg_entry m;
		struct fi_cq_data_entry d;
		struct fi_cq_tagged_entry t;
	} u;
	time_t t0 = time(NULL);
	for (;;) {
		fi_addr_t a = FI_ADDR_NOTAVAIL;
		ssize_t n = fi_cq_readfrom(cq, &u, 1, &a);
		if (n == 1) {
			memset(e, 0, sizeof *e);
			e->op_context = u.c.op_context;
			if (fmt != FI_CQ_FORMAT_CONTEXT) {
				e->flags = u.m.flags;
				e->len = u.m.len;
			}
			if (fmt == FI_CQ_FORMAT_TAGGED)
				e->tag = u.t.tag;
			if (fmt == FI_CQ_FORMAT_DATA ||
			    fmt == FI_CQ_FORMAT_TAGGED) {
				e->buf = u.d.buf;
				e->data = u.d.data;
			}
			if (src)
				*src = a;
			return 0;
		}
		if (n == -FI_EAVAIL) {
			memset(err, 0, sizeof *err);
			CHECK(fi_cq_readerr(cq, err, 0) == 1, "readerr");
			return err->err;
		}
		CHECK(n == -FI_EAGAIN, "cq read %zd", n);
		CHECK(time(NULL) - t0 < 30, "no completion in 30 s");
	}
}

/* Peek (with flags: FI_CLAIM, FI_DISCARD) until the message is there;
 * the completion's error, 0 when found. */
static int peek_until(struct fi_msg_tagged *m, uint64_t flags,
		      struct fi_cq_tagged_entry *e, struct fi_cq_err_entry *err)
{
	int r;
	do {
		CHECK(fi_trecvmsg(ep, m, flags) == 0, "peek flags %llx",
		      (unsigned long long)flags);
		r = wait_comp(e, NULL, err);
	} while (r == FI_ENOMSG);
	return r;
}

static void open_all(enum fi_av_type avt)
{
	struct fi_info *info = pair_open_domain(
		FI_TAGGED | FI_MSG | FI_DIRECTED_RECV | FI_SOURCE |
			FI_MULTI_RECV,
		avt, &fab, &dom);
	struct fi_cq_attr ca = { .format = fmt, .wait_obj = FI_WAIT_NONE };
	CHECK(fi_cq_open(dom, &ca, &cq, NULL) == 0, "cq");
	struct fi_av_attr aa = { .type = avt };
	CHECK(fi_av_open(dom, &aa, &av, NULL) == 0, "av");
	ep = pair_open_ep(dom, info, av, cq);
	fi_freeinfo(info);

	char me[FI_NAME_MAX], other[FI_NAME_MAX];
	size_t len = 8;
	CHECK(fi_getname(&ep->fid, me, &len) == -FI_ETOOSMALL &&
	      len == FI_NAME_MAX, "getname size query: %zu", len);
	len = sizeof me;
	CHECK(fi_getname(&ep->fid, me, &len) == 0 && len == FI_NAME_MAX,
	      "getname");
	CHECK(write(sock, me, len) == (ssize_t)len &&
	      read(sock, other, len) == (ssize_t)len, "name exchange");
	/* Bad input first: a name that is not ours fails alone. */
	char junk[FI_NAME_MAX];
	memset(junk, 0x5a, sizeof junk);
	fi_addr_t bad = 0;
	CHECK(fi_av_insert(av, junk, 1, &bad, 0, NULL) == 0 &&
	      bad == FI_ADDR_NOTAVAIL, "junk name inserted");
	CHECK(fi_av_insert(av, other, 1, &peer, 0, NULL) == 1, "insert");
	fi_addr_t again;
	CHECK(fi_av_insert(av, other, 1, &again, 0, NULL) == 1 &&
	      again == peer, "insert again: %llu vs %llu",
	      (unsigned long long)again, (unsigned long long)peer);
	char back[FI_NAME_MAX];
	len = sizeof back;
	CHECK(fi_av_lookup(av, peer, back, &len) == 0 &&
	      !memcmp(back, other, FI_NAME_MAX), "av lookup");
}

static void close_all(void)
{
	pair_close(ep, av, cq, dom, fab);
}

/* FI_MULTI_RECV: untagged messages of these lengths, each filled with
 * '1' + its index; the receiver's buffers are 100 B with at least 16 B
 * left to take more. */
static const size_t mlen[] = { 40, 40, 30, 50, 300 };
#define NMULTI (sizeof mlen / sizeof *mlen)

static void multi_send(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	char buf[300];
	sync_peer(); /* the receiver's buffers are posted */
	for (size_t i = 0; i < NMULTI; i++) {
		memset(buf, '1' + (int)i, sizeof buf);
		CHECK(fi_send(ep, buf, mlen[i], NULL, peer, &buf[i]) == 0,
		      "multi send %zu", i);
		CHECK(wait_comp(&e, NULL, &err) == 0 &&
		      e.op_context == &buf[i], "multi send completion %zu", i);
	}
	sync_peer();
}

static int all_of(const char *p, size_t n, char c)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != c)
			return 0;
	return 1;
}

static void multi_recv(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	static char a[100], b[100], c[64];
	struct fi_context ctx[3];
	size_t min = 16, got = 0, glen = sizeof got;
	CHECK(fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min,
			sizeof min) == 0, "setopt min_multi_recv");
	CHECK(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &got,
			&glen) == 0 && got == 16, "getopt min_multi_recv");
	struct iovec iov[2] = { { a, sizeof a }, { b, sizeof b } };
	struct fi_msg m = { .iov_count = 1, .addr = FI_ADDR_UNSPEC };
	for (int i = 0; i < 2; i++) {
		m.msg_iov = &iov[i];
		m.context = &ctx[i];
		CHECK(fi_recvmsg(ep, &m, FI_MULTI_RECV | FI_COMPLETION) == 0,
		      "post multi-recv buffer %d", i);
	}
	/* A tagged multi-recv is refused. */
	struct fi_msg_tagged tm = { .msg_iov = &iov[0], .iov_count = 1,
				    .addr = FI_ADDR_UNSPEC };
	CHECK(fi_trecvmsg(ep, &tm, FI_MULTI_RECV) == -FI_EINVAL,
	      "tagged multi-recv accepted");
	sync_peer();
	/* 40 + 40 in a (20 B left: 30 does not fit, a is released), 30 +
	 * 50 in b (20 left: 300 does not fit, b is released); the 300 B
	 * message waits for the next buffer. Releases come after their
	 * buffer's messages. */
	char *want_buf[] = { a, a + 40, b, b + 30 };
	void *want_ctx[] = { &ctx[0], &ctx[0], &ctx[1], &ctx[1] };
	int seen = 0, released[2] = { 0, 0 };
	while (seen < 4 || !released[0] || !released[1]) {
		CHECK(wait_comp(&e, NULL, &err) == 0, "multi-recv entry");
		if (e.flags == FI_MULTI_RECV) {
			int k = e.op_context == &ctx[0] ? 0 : 1;
			CHECK(e.op_context == &ctx[k] && !released[k],
			      "release of buffer %d", k);
			/* a after its 2 messages, b after all 4 */
			CHECK(seen >= (k ? 4 : 2), "buffer %d released after "
			      "%d messages", k, seen);
			released[k] = 1;
			continue;
		}
		CHECK(seen < 4, "a fifth message in 200 B");
		CHECK(e.flags == (FI_RECV | FI_MSG) && e.len == mlen[seen] &&
		      e.op_context == want_ctx[seen],
		      "multi message %d: flags %llx len %zu", seen,
		      (unsigned long long)e.flags, e.len);
		if (fmt != FI_CQ_FORMAT_MSG)
			CHECK(e.buf == want_buf[seen], "message %d at offset "
			      "%td", seen, (char *)e.buf - a);
		CHECK(all_of(want_buf[seen], mlen[seen], '1' + (char)seen),
		      "message %d data", seen);
		seen++;
	}
	/* The 300 B message into a 64 B buffer: truncated, olen 236, then
	 * the buffer (full) is released. */
	struct iovec ci = { c, sizeof c };
	m.msg_iov = &ci;
	m.context = &ctx[2];
	CHECK(fi_recvmsg(ep, &m, FI_MULTI_RECV | FI_COMPLETION) == 0,
	      "post buffer c");
	CHECK(wait_comp(&e, NULL, &err) == FI_ETRUNC &&
	      err.op_context == &ctx[2] && err.len == 64 && err.olen == 236,
	      "truncated multi-recv: len %zu olen %zu", err.len, err.olen);
	CHECK(all_of(c, sizeof c, '5'), "truncated data");
	CHECK(wait_comp(&e, NULL, &err) == 0 && e.flags == FI_MULTI_RECV &&
	      e.op_context == &ctx[2], "release of buffer c");
	sync_peer();
}

/* Remote CQ data (cq_data_size 8): tagged and untagged, injected,
 * rendezvous-sized, seen by a peek, a claim and the receive, and absent
 * where none was sent. Formats with a data field only. */
enum { RD_BIG = 1 << 20 };
static uint64_t rd_val[] = { 0x1111222233334444ull, 0x55,
			     0xfedcba9876543210ull, 0 };

static void data_send(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	char *big = malloc(RD_BIG);
	CHECK(big, "malloc");
	memset(big, 'z', RD_BIG);
	CHECK(fi_tsenddata(ep, "d0", 3, NULL, rd_val[0], peer, 0x800,
			   &rd_val[0]) == 0, "tsenddata");
	CHECK(fi_tinjectdata(ep, "d1", 3, rd_val[1], peer, 0x801) == 0,
	      "tinjectdata");
	CHECK(fi_tsenddata(ep, big, RD_BIG, NULL, rd_val[2], peer, 0x802,
			   &rd_val[2]) == 0, "tsenddata big");
	CHECK(fi_tsend(ep, "d3", 3, NULL, peer, 0x803, &rd_val[3]) == 0,
	      "tsend without data");
	CHECK(fi_senddata(ep, "d4", 3, NULL, rd_val[0], peer, big) == 0,
	      "senddata");
	for (int i = 0; i < 4; i++) {
		CHECK(wait_comp(&e, NULL, &err) == 0, "data send completion");
		CHECK(!(e.flags & FI_REMOTE_CQ_DATA), "send entry with data");
	}
	sync_peer();
	free(big);
}

static void data_recv(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct fi_context ctx[6];
	char *big = malloc(RD_BIG);
	CHECK(big, "malloc");
	/* A peek and a claim report it before the receive. */
	struct fi_msg_tagged m = {
		.msg_iov = NULL, .iov_count = 0, .addr = FI_ADDR_UNSPEC,
		.tag = 0x800, .ignore = 0, .context = &ctx[0],
	};
	int r;
	r = peek_until(&m, FI_PEEK, &e, &err);
	CHECK(r == 0 && (e.flags & FI_REMOTE_CQ_DATA) && e.data == rd_val[0],
	      "peek: flags %llx data %llx", (unsigned long long)e.flags,
	      (unsigned long long)e.data);
	m.tag = 0x801;
	m.context = &ctx[1];
	r = peek_until(&m, FI_PEEK | FI_CLAIM, &e, &err);
	CHECK(r == 0 && (e.flags & FI_REMOTE_CQ_DATA) && e.data == rd_val[1],
	      "claim: data %llx", (unsigned long long)e.data);
	char b[8] = { 0 };
	struct iovec iov = { b, sizeof b };
	m.msg_iov = &iov;
	m.iov_count = 1;
	CHECK(fi_trecvmsg(ep, &m, FI_CLAIM) == 0, "claimed recv");
	CHECK(wait_comp(&e, NULL, &err) == 0 && !strcmp(b, "d1") &&
	      (e.flags & FI_REMOTE_CQ_DATA) && e.data == rd_val[1],
	      "claimed recv data");
	CHECK(fi_trecv(ep, b, sizeof b, NULL, FI_ADDR_UNSPEC, 0x800, 0,
		       &ctx[2]) == 0, "trecv");
	CHECK(wait_comp(&e, NULL, &err) == 0 && e.op_context == &ctx[2] &&
	      !strcmp(b, "d0") && e.flags == (FI_RECV | FI_TAGGED |
					      FI_REMOTE_CQ_DATA) &&
	      e.data == rd_val[0], "recv data: flags %llx data %llx",
	      (unsigned long long)e.flags, (unsigned long long)e.data);
	/* Truncated: the error entry carries it too. */
	CHECK(fi_trecv(ep, big, RD_BIG / 2, NULL, FI_ADDR_UNSPEC, 0x802, 0,
		       &ctx[3]) == 0, "trecv big");
	CHECK(wait_comp(&e, NULL, &err) == FI_ETRUNC &&
	      (err.flags & FI_REMOTE_CQ_DATA) && err.data == rd_val[2] &&
	      big[0] == 'z' && big[RD_BIG / 2 - 1] == 'z',
	      "truncated rendezvous data");
	CHECK(fi_trecv(ep, b, sizeof b, NULL, FI_ADDR_UNSPEC, 0x803, 0,
		       &ctx[4]) == 0, "trecv plain");
	CHECK(wait_comp(&e, NULL, &err) == 0 && !strcmp(b, "d3") &&
	      !(e.flags & FI_REMOTE_CQ_DATA), "data where none was sent");
	CHECK(fi_recv(ep, b, sizeof b, NULL, FI_ADDR_UNSPEC, &ctx[5]) == 0,
	      "recv");
	CHECK(wait_comp(&e, NULL, &err) == 0 && !strcmp(b, "d4") &&
	      e.flags == (FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA) &&
	      e.data == rd_val[0], "untagged data");
	sync_peer();
	free(big);
}

static void sender(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	char buf[64] = { 0 };
	/* Unknown fi_addr: refused at once. */
	CHECK(fi_tsend(ep, buf, 1, NULL, peer + 1000, 1, NULL) == -FI_EINVAL,
	      "send to unknown fi_addr");
	/* 1: exact tag; 2: wildcard; 3: truncated; 4: untagged; 5: inject
	 * (no completion); 6..8: probe/claim/discard. */
	uint64_t tags[] = { 0x1234, 0xabcd0001ull << 32 | 7, 0x55 };
	for (int i = 0; i < 3; i++) {
		memset(buf, 'a' + i, sizeof buf);
		CHECK(fi_tsend(ep, buf, 16, NULL, peer, tags[i], &tags[i]) == 0,
		      "tsend %d", i);
		CHECK(wait_comp(&e, NULL, &err) == 0 &&
		      e.op_context == &tags[i], "send completion %d", i);
		if (fmt != FI_CQ_FORMAT_CONTEXT)
			CHECK(e.flags == (FI_SEND | FI_TAGGED), "send flags");
	}
	CHECK(fi_send(ep, "untagged", 9, NULL, peer, buf) == 0, "send");
	CHECK(wait_comp(&e, NULL, &err) == 0 && e.op_context == buf,
	      "untagged send completion");
	CHECK(fi_tinject(ep, "injected", 9, peer, 0x99) == 0, "tinject");
	sync_peer(); /* the receiver probes an empty queue */
	for (int i = 0; i < 3; i++)
		CHECK(fi_tsend(ep, "probed", 7, NULL, peer, 0x700 + i, NULL) == 0,
		      "tsend probe %d", i);
	for (int i = 0; i < 3; i++)
		CHECK(wait_comp(&e, NULL, &err) == 0, "probe send completion");
	sync_peer(); /* the receiver canceled */
	/* Nothing else may have completed (inject has no completion). */
	CHECK(fi_cq_read(cq, &e, 1) == -FI_EAGAIN, "stray completion");
	sync_peer();
	if (fmt != FI_CQ_FORMAT_CONTEXT)
		multi_send();
	sync_peer();
	if (fmt == FI_CQ_FORMAT_DATA || fmt == FI_CQ_FORMAT_TAGGED)
		data_send();
}

static void receiver(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	char buf[64];
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	struct fi_context ctx[8];

	/* 1: exact tag, FI_SOURCE. */
	memset(buf, 0, sizeof buf);
	CHECK(fi_trecv(ep, buf, sizeof buf, NULL, FI_ADDR_UNSPEC, 0x1234, 0,
		       &ctx[0]) == 0, "trecv");
	CHECK(wait_comp(&e, &src, &err) == 0 && e.op_context == &ctx[0],
	      "recv 1");
	CHECK(src == peer, "FI_SOURCE %llu, not %llu",
	      (unsigned long long)src, (unsigned long long)peer);
	if (fmt != FI_CQ_FORMAT_CONTEXT)
		CHECK(e.len == 16 && e.flags == (FI_RECV | FI_TAGGED),
		      "recv 1 len %zu flags %llx", e.len,
		      (unsigned long long)e.flags);
	if (fmt == FI_CQ_FORMAT_TAGGED)
		CHECK(e.tag == 0x1234, "recv 1 tag");
	CHECK(buf[0] == 'a' && buf[15] == 'a' && buf[16] == 0, "recv 1 data");
	/* 2: low 32 bits ignored, directed at the peer. */
	CHECK(fi_trecv(ep, buf, sizeof buf, NULL, peer, 0xabcd0001ull << 32,
		       0xffffffffull, &ctx[1]) == 0, "trecv wildcard");
	CHECK(wait_comp(&e, NULL, &err) == 0 && e.op_context == &ctx[1],
	      "recv 2");
	if (fmt == FI_CQ_FORMAT_TAGGED)
		CHECK(e.tag == (0xabcd0001ull << 32 | 7), "wildcard tag");
	CHECK(buf[0] == 'b', "recv 2 data");
	/* 3: 16 bytes into 4: FI_ETRUNC, the 4 bytes placed, no more. */
	memset(buf, 0, sizeof buf);
	CHECK(fi_trecv(ep, buf, 4, NULL, FI_ADDR_UNSPEC, 0x55, 0, &ctx[2]) == 0,
	      "trecv trunc");
	CHECK(wait_comp(&e, NULL, &err) == FI_ETRUNC, "no truncation error");
	CHECK(err.op_context == &ctx[2] && err.len == 4 && err.tag == 0x55,
	      "trunc entry: len %zu tag %llx", err.len,
	      (unsigned long long)err.tag);
	/* fi_cq(3): olen = the bytes that did not fit (16 - 4). */
	CHECK(err.olen == 12, "trunc entry: olen %zu, not 12", err.olen);
	CHECK(buf[3] == 'c' && buf[4] == 0, "truncated data");
	/* 4: untagged. */
	CHECK(fi_recv(ep, buf, sizeof buf, NULL, FI_ADDR_UNSPEC, &ctx[3]) == 0,
	      "recv");
	CHECK(wait_comp(&e, NULL, &err) == 0 && !strcmp(buf, "untagged"),
	      "untagged");
	if (fmt != FI_CQ_FORMAT_CONTEXT)
		CHECK(e.flags == (FI_RECV | FI_MSG), "untagged flags");
	/* 5: the injected message. */
	CHECK(fi_trecv(ep, buf, sizeof buf, NULL, FI_ADDR_UNSPEC, 0x99, 0,
		       &ctx[4]) == 0, "trecv inject");
	CHECK(wait_comp(&e, NULL, &err) == 0 && !strcmp(buf, "injected"),
	      "injected");

	/* 6: probe of nothing: FI_ENOMSG. */
	struct iovec iov = { buf, sizeof buf };
	struct fi_msg_tagged m = {
		.msg_iov = NULL, .iov_count = 0, .addr = FI_ADDR_UNSPEC,
		.tag = 0x700, .ignore = 0xff, .context = &ctx[5],
	};
	CHECK(fi_trecvmsg(ep, &m, FI_PEEK) == 0, "peek");
	CHECK(wait_comp(&e, NULL, &err) == FI_ENOMSG &&
	      err.op_context == &ctx[5], "empty peek");
	sync_peer();
	/* Peek until the first arrives: it stays queued. */
	int r;
	r = peek_until(&m, FI_PEEK, &e, &err);
	CHECK(r == 0, "peek err %d", r);
	if (fmt == FI_CQ_FORMAT_TAGGED)
		CHECK(e.tag == 0x700, "peek tag %llx",
		      (unsigned long long)e.tag);
	if (fmt != FI_CQ_FORMAT_CONTEXT)
		CHECK(e.len == 7, "peek len");
	/* Claim it, then receive exactly that one. */
	m.context = &ctx[6];
	r = peek_until(&m, FI_PEEK | FI_CLAIM, &e, &err);
	CHECK(r == 0, "claim err %d", r);
	memset(buf, 0, sizeof buf);
	m.msg_iov = &iov;
	m.iov_count = 1;
	CHECK(fi_trecvmsg(ep, &m, FI_CLAIM) == 0, "claimed recv");
	CHECK(wait_comp(&e, NULL, &err) == 0 && e.op_context == &ctx[6] &&
	      !strcmp(buf, "probed"), "claimed data");
	if (fmt == FI_CQ_FORMAT_TAGGED)
		CHECK(e.tag == 0x700, "claimed tag (non-overtaking)");
	/* Peek and discard the second; the third is received. */
	m.msg_iov = NULL;
	m.iov_count = 0;
	m.context = &ctx[7];
	r = peek_until(&m, FI_PEEK | FI_DISCARD, &e, &err);
	CHECK(r == 0 && e.op_context == &ctx[7], "discard err %d", r);
	CHECK(fi_trecv(ep, buf, sizeof buf, NULL, FI_ADDR_UNSPEC, 0x700, 0xff,
		       &ctx[0]) == 0, "trecv after discard");
	CHECK(wait_comp(&e, NULL, &err) == 0, "recv after discard");
	if (fmt == FI_CQ_FORMAT_TAGGED)
		CHECK(e.tag == 0x702, "discarded the wrong one: %llx",
		      (unsigned long long)e.tag);
	/* Cancel: an unmatched receive completes with FI_ECANCELED. */
	CHECK(fi_trecv(ep, buf, sizeof buf, NULL, FI_ADDR_UNSPEC, 0xdead, 0,
		       &ctx[1]) == 0, "trecv to cancel");
	CHECK(fi_cancel(&ep->fid, &ctx[1]) == 0, "cancel");
	CHECK(wait_comp(&e, NULL, &err) == FI_ECANCELED &&
	      err.op_context == &ctx[1], "canceled entry");
	CHECK(fi_cancel(&ep->fid, &ctx[1]) == -FI_ENOENT, "cancel twice");
	sync_peer();
	CHECK(fi_cq_read(cq, &e, 1) == -FI_EAGAIN, "stray completion");
	sync_peer();
	if (fmt != FI_CQ_FORMAT_CONTEXT) /* entries need flags and len */
		multi_recv();
	sync_peer();
	if (fmt == FI_CQ_FORMAT_DATA || fmt == FI_CQ_FORMAT_TAGGED)
		data_recv();
}

static enum fi_av_type avt_chosen;

static void open_chosen(void)
{
	open_all(avt_chosen);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s table|map context|msg|data|tagged\n",
			argv[0]);
		return 2;
	}
	enum fi_av_type avt = !strcmp(argv[1], "map") ? FI_AV_MAP : FI_AV_TABLE;
	const char *f = argv[2];
	fmt = !strcmp(f, "context") ? FI_CQ_FORMAT_CONTEXT
	      : !strcmp(f, "msg")   ? FI_CQ_FORMAT_MSG
	      : !strcmp(f, "data")  ? FI_CQ_FORMAT_DATA
				    : FI_CQ_FORMAT_TAGGED;
	avt_chosen = avt;
	char ok[64];
	snprintf(ok, sizeof ok, "provider test %s %s: OK", argv[1], argv[2]);
	return pair_run(open_chosen, close_all, sender, receiver, ok);
}
