/*
 * What the provider tests share: two processes (fork) joined by a socket
 * pair for names and lock-step, a CHECK that names the side that failed.
 * A test defines its own open/close and its two roles, and calls
 * pair_run from main.
 */
#ifndef PROVIDER_PAIR_H
#define PROVIDER_PAIR_H

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *role = "?";
static int sock;

#define CHECK(c, ...)                                                    \
	do {                                                             \
		if (!(c)) {                                              \
			fprintf(stderr, "[%s] %s:%d: ", role, __FILE__,  \
				__LINE__);                               \
			fprintf(stderr, __VA_ARGS__);                    \
			fprintf(stderr, "\n");                           \
			exit(1);                                         \
		}                                                        \
	} while (0)

/* Both sides reach this point before either goes on. */
static inline void sync_peer(void)
{
	char c = 1;
	CHECK(write(sock, &c, 1) == 1 && read(sock, &c, 1) == 1, "sync");
}

/* fi_getinfo of the provider mrail for an RDM endpoint with caps, and
 * its fabric and domain; the caller frees the info. */
static inline struct fi_info *pair_open_domain(uint64_t caps,
					       enum fi_av_type avt,
					       struct fid_fabric **fab,
					       struct fid_domain **dom)
{
	struct fi_info *hints = fi_allocinfo(), *info;
	CHECK(hints, "fi_allocinfo");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = caps;
	hints->fabric_attr->prov_name = strdup("mrail");
	hints->domain_attr->av_type = avt;
	CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info) == 0,
	      "fi_getinfo (FI_PROVIDER_PATH?)");
	fi_freeinfo(hints);
	CHECK(!strcmp(info->fabric_attr->prov_name, "mrail"), "provider %s",
	      info->fabric_attr->prov_name);
	CHECK(fi_fabric(info->fabric_attr, fab, NULL) == 0, "fabric");
	CHECK(fi_domain(*fab, info, dom, NULL) == 0, "domain");
	return info;
}

/* An endpoint on av and cq (both directions), enabled. */
static inline struct fid_ep *pair_open_ep(struct fid_domain *dom,
					  struct fi_info *info,
					  struct fid_av *av, struct fid_cq *cq)
{
	struct fid_ep *ep;
	CHECK(fi_endpoint(dom, info, &ep, NULL) == 0, "endpoint");
	CHECK(fi_ep_bind(ep, &av->fid, 0) == 0, "bind av");
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV) == 0, "bind cq");
	CHECK(fi_enable(ep) == 0, "enable");
	return ep;
}

/* Everything pair_open_domain/pair_open_ep opened, in reverse. */
static inline void pair_close(struct fid_ep *ep, struct fid_av *av,
			      struct fid_cq *cq, struct fid_domain *dom,
			      struct fid_fabric *fab)
{
	CHECK(fi_close(&ep->fid) == 0, "close ep");
	CHECK(fi_close(&av->fid) == 0, "close av");
	CHECK(fi_close(&cq->fid) == 0, "close cq");
	CHECK(fi_close(&dom->fid) == 0, "close domain");
	CHECK(fi_close(&fab->fid) == 0, "close fabric");
}

/* Our endpoint's name for the other side's, inserted into av. */
static inline fi_addr_t pair_exchange_names(struct fid_ep *ep,
					    struct fid_av *av)
{
	char me[FI_NAME_MAX], other[FI_NAME_MAX];
	size_t len = sizeof me;
	fi_addr_t peer;
	CHECK(fi_getname(&ep->fid, me, &len) == 0 && len == FI_NAME_MAX,
	      "getname");
	CHECK(write(sock, me, len) == (ssize_t)len &&
	      read(sock, other, len) == (ssize_t)len, "name exchange");
	CHECK(fi_av_insert(av, other, 1, &peer, 0, NULL) == 1, "insert");
	return peer;
}

/*
 * The receiver in a child, the sender here, each between open and close;
 * prints ok_line when both succeeded. Returns main's exit status.
 */
static inline int pair_run(void (*open_all)(void), void (*close_all)(void),
			   void (*sender)(void), void (*receiver)(void),
			   const char *ok_line)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 1;
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		role = "receiver";
		sock = sv[1];
		close(sv[0]); /* a side that fails ends the other's sync */
		open_all();
		receiver();
		close_all();
		exit(0);
	}
	role = "sender";
	sock = sv[0];
	close(sv[1]);
	open_all();
	sender();
	close_all();
	int st;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "receiver failed\n");
		return 1;
	}
	printf("%s\n", ok_line);
	return 0;
}

#endif
