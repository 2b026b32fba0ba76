/*
 * MRAIL_SDN=unisonflow against a stand-in for /dev/sdnmpi (mrail-run -n 2):
 * the backend's ioctl is a recorder, the device /dev/null. Over the real
 * TCP rails of a 2-process job: one ADD_PEER per TCP rail at wire-up, with
 * that rail's exact 4-tuple (as mrail_rail_info reports it, and mirrored by
 * the peer's own registration), the world ranks, ABI version 1; none for
 * other drivers' rails; no ioctl per message; at destroy one DEL_PEER per
 * registration with the same record. Also the errors of mrail_sdn_open.
 */
#include "../engine/harness.h"
#include "mpi-binding/sdn/sdn_node.h"
#include "mpi-binding/sdn/sdnmpi_ioctl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define MAXREC 64

struct call {
	unsigned long req;
	int fd;
	struct sdnmpi_peer p;
};
static struct call calls[2 * MAXREC];
static int ncalls;

static int rec_ioctl(int fd, unsigned long req, void *arg)
{
	CHECK(ncalls < 2 * MAXREC);
	calls[ncalls].req = req;
	calls[ncalls].fd = fd;
	memcpy(&calls[ncalls].p, arg, sizeof(struct sdnmpi_peer));
	ncalls++;
	return 0;
}

static void tuple(const struct sdnmpi_peer *p, int local, char *buf,
		  size_t len)
{
	char ip[INET_ADDRSTRLEN];
	CHECK_EQ(p->family, AF_INET);
	inet_ntop(AF_INET, local ? p->saddr : p->daddr, ip, sizeof ip);
	snprintf(buf, len, "%s:%u", ip, ntohs(local ? p->sport : p->dport));
}

static void open_errors(void)
{
	struct mrail_sdn *s = (struct mrail_sdn *)1;
	struct mrail_sdn_opts o = {.mode = "none", .fence_us = -1};
	char err[256] = "";
	CHECK_EQ(mrail_sdn_open(&o, &s, err, sizeof err), 0);
	CHECK(s == NULL && mrail_sdn_hooks(s) == NULL);
	o.mode = "openflow";
	CHECK_EQ(mrail_sdn_open(&o, &s, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "\"openflow\" (MRAIL_SDN, mtl_mrail_sdn) is not "
		     "none|unisonflow|bpf"));
	o.mode = "unisonflow";
	o.device = "/nonexistent/sdnmpi";
	CHECK_EQ(mrail_sdn_open(&o, &s, err, sizeof err), -ENOENT);
	CHECK(strstr(err, "/nonexistent/sdnmpi") && strstr(err, "module"));
	o.mode = "bpf";
	o.bpf_dir = "/nonexistent";
	CHECK(mrail_sdn_open(&o, &s, err, sizeof err) < 0);
	CHECK(strstr(err, "/nonexistent/tags"));
	setenv("MRAIL_SDN_FENCE_US", "soon", 1);
	CHECK_EQ(mrail_sdn_open(&o, &s, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "MRAIL_SDN_FENCE_US=\"soon\""));
	unsetenv("MRAIL_SDN_FENCE_US");
}

int main(void)
{
	open_errors();

	const char *rank_env = getenv("MRAIL_RANK");
	CHECK(rank_env);
	unsigned me = (unsigned)atoi(rank_env);
	struct mrail_sdn_opts o = {
		.mode = "unisonflow", .world_rank = me, .nprocs = 2,
		.device = "/dev/null", .ioctl_fn = rec_ioctl, .fence_us = -1};
	struct mrail_sdn *sdn;
	char err[256];
	if (mrail_sdn_open(&o, &sdn, err, sizeof err)) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	CHECK(sdn);
	CHECK(mrail_sdn_hooks(sdn)->msg_tx == NULL); /* no per-message cost */

	struct mrail_config cfg;
	mrail_engine_t *e;
	CHECK_RC(mrail_config_init(&cfg));
	cfg.rail_hooks = mrail_sdn_hooks(sdn);
	cfg.rail_hooks_ctx = sdn;
	CHECK_RC(mrail_engine_create(&cfg, &e));
	CHECK_EQ(mrail_rank(e), me);
	CHECK_EQ(mrail_size(e), 2);
	unsigned other = 1 - me;

	/* One ADD per TCP rail, with its 4-tuple. */
	int nr = mrail_rail_count(e, other), ntcp = 0;
	for (int i = 0; i < nr; i++) {
		struct mrail_rail_info info;
		CHECK_RC(mrail_rail_info(e, other, i, &info));
		if (strcmp(info.driver, "tcp"))
			continue;
		ntcp++;
		int found = 0;
		for (int k = 0; k < ncalls; k++) {
			char l[64], r[64];
			tuple(&calls[k].p, 1, l, sizeof l);
			tuple(&calls[k].p, 0, r, sizeof r);
			if (!strcmp(l, info.local_addr) &&
			    !strcmp(r, info.remote_addr))
				found++;
		}
		if (found != 1)
			fprintf(stderr, "rank %u rail %d %s -> %s registered "
				"%d times\n", me, i, info.local_addr,
				info.remote_addr, found);
		CHECK_EQ(found, 1);
	}
	CHECK(ntcp >= 1);
	CHECK_EQ(ncalls, ntcp);
	int devfd = calls[0].fd;
	CHECK(devfd >= 0);
	for (int k = 0; k < ncalls; k++) {
		CHECK_EQ(calls[k].req, SDNMPI_IOC_ADD_PEER);
		CHECK_EQ(calls[k].fd, devfd);
		CHECK_EQ(calls[k].p.version, SDNMPI_ABI_VERSION);
		CHECK_EQ(calls[k].p.reserved, 0);
		CHECK_EQ(calls[k].p.src_rank, me);
		CHECK_EQ(calls[k].p.dst_rank, other);
	}

	/* The peer registered the same connections from its side. */
	struct sdnmpi_peer mine[MAXREC], theirs[MAXREC];
	for (int k = 0; k < ncalls; k++)
		mine[k] = calls[k].p;
	mrail_request_t *rq[2];
	mrail_status_t st;
	CHECK_RC(mrail_irecv(e, other, theirs, sizeof theirs, 7,
			     MRAIL_TAG_MASK_ALL, &rq[0]));
	CHECK_RC(mrail_isend(e, other, mine, ncalls * sizeof mine[0], 7,
			     &rq[1]));
	CHECK_RC(mrail_wait(e, rq[0], &st));
	CHECK_RC(mrail_wait(e, rq[1], NULL));
	CHECK_EQ(st.length, ncalls * sizeof mine[0]);
	for (int k = 0; k < ncalls; k++) {
		int found = 0;
		for (int j = 0; j < ncalls; j++)
			found += !memcmp(mine[k].saddr, theirs[j].daddr, 16) &&
				 !memcmp(mine[k].daddr, theirs[j].saddr, 16) &&
				 mine[k].sport == theirs[j].dport &&
				 mine[k].dport == theirs[j].sport &&
				 theirs[j].src_rank == other &&
				 theirs[j].dst_rank == me;
		CHECK_EQ(found, 1);
	}
	CHECK_EQ(ncalls, ntcp); /* messages cost no ioctl */

	int adds = ncalls;
	CHECK_RC(mrail_engine_destroy(e));
	/* One DEL per ADD, with the very record registered. */
	CHECK_EQ(ncalls, 2 * adds);
	for (int k = adds; k < ncalls; k++) {
		CHECK_EQ(calls[k].req, SDNMPI_IOC_DEL_PEER);
		CHECK_EQ(calls[k].fd, devfd);
		int found = 0;
		for (int j = 0; j < adds; j++)
			found += !memcmp(&calls[j].p, &calls[k].p,
					 sizeof calls[k].p);
		CHECK_EQ(found, 1);
		for (int j = adds; j < k; j++)
			CHECK(memcmp(&calls[j].p, &calls[k].p,
				     sizeof calls[k].p));
	}
	struct mrail_sdn_stats s;
	mrail_sdn_get_stats(sdn, &s);
	CHECK_EQ(s.registered, adds);
	CHECK_EQ(s.unregistered, adds);
	CHECK_EQ(s.errors, 0);
	mrail_sdn_close(sdn);
	printf("test_sdn_unisonflow: rank %u ok (%d TCP rails of %d)\n", me,
	       ntcp, nr);
	return 0;
}
