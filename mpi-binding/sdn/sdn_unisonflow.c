/* unisonflow backend: TCP rails registered with the UnisonFlow kernel
 * module through /dev/sdnmpi (sdnmpi_ioctl.h). */
#include "sdn_internal.h"
#include "sdnmpi_ioctl.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

_Static_assert(sizeof(struct sdnmpi_peer) == 52, "sdnmpi_peer layout");
_Static_assert(sizeof(struct sdnmpi_peer) <=
		       sizeof(((struct sdn_rail *)0)->peer_abi),
	       "room for the peer record");

static int sys_ioctl(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg);
}

int sdn_uf_open(struct mrail_sdn *s, const char *device, char *err,
		size_t errlen)
{
	if (!device)
		device = SDNMPI_DEVICE;
	if (!s->ioctl_fn)
		s->ioctl_fn = sys_ioctl;
	s->fd = open(device, O_RDWR | O_CLOEXEC);
	if (s->fd < 0) {
		int e = errno;
		snprintf(err, errlen, "MRAIL_SDN=unisonflow: %s: %s (is the "
			 "UnisonFlow tagging module loaded?)", device,
			 strerror(e));
		return -e;
	}
	return 0;
}

/* The connection as its packets leave this host. 0, or -1 when it is not
 * an IP connection (then there is nothing to register). */
static int peer_of(const struct mrail_sdn *s, const struct mrail_rail_conn *c,
		   struct sdnmpi_peer *p)
{
	memset(p, 0, sizeof *p);
	if (!c->local || !c->remote || c->local->sa_family != c->remote->sa_family)
		return -1;
	p->version = SDNMPI_ABI_VERSION;
	p->src_rank = s->world_rank;
	p->dst_rank = sdn_peer_rank(s, c->peer);
	if (c->local->sa_family == AF_INET) {
		const struct sockaddr_in *l = (const void *)c->local;
		const struct sockaddr_in *r = (const void *)c->remote;
		p->family = AF_INET;
		memcpy(p->saddr, &l->sin_addr, 4);
		memcpy(p->daddr, &r->sin_addr, 4);
		p->sport = l->sin_port;
		p->dport = r->sin_port;
		return 0;
	}
	if (c->local->sa_family == AF_INET6) {
		const struct sockaddr_in6 *l = (const void *)c->local;
		const struct sockaddr_in6 *r = (const void *)c->remote;
		p->family = AF_INET6;
		memcpy(p->saddr, &l->sin6_addr, 16);
		memcpy(p->daddr, &r->sin6_addr, 16);
		p->sport = l->sin6_port;
		p->dport = r->sin6_port;
		return 0;
	}
	return -1;
}

void *sdn_uf_rail_up(void *ctx, const struct mrail_rail_conn *c)
{
	struct mrail_sdn *s = ctx;
	struct sdnmpi_peer p;
	if (strcmp(c->driver, "tcp") || peer_of(s, c, &p))
		return NULL;
	struct sdn_rail *r = calloc(1, sizeof *r);
	if (!r) {
		s->st.errors++;
		sdn_warn_once(s, "out of memory: a TCP rail to peer %u is not "
			      "registered with %s", c->peer, SDNMPI_DEVICE);
		return NULL;
	}
	r->peer = c->peer;
	r->fd = c->fd;
	memcpy(r->peer_abi, &p, sizeof p);
	if (s->ioctl_fn(s->fd, SDNMPI_IOC_ADD_PEER, &p) == 0) {
		r->registered = 1;
		s->st.registered++;
	} else {
		s->st.errors++;
		sdn_warn_once(s, "SDNMPI_IOC_ADD_PEER (rail %d to peer %u): "
			      "%s; its packets go untagged", c->rail, c->peer,
			      strerror(errno));
	}
	return r;
}

void sdn_uf_rail_down(void *ctx, const struct mrail_rail_conn *c, void *st)
{
	struct mrail_sdn *s = ctx;
	struct sdn_rail *r = st;
	(void)c;
	if (!r)
		return;
	/* The record registered, not a new one: the kernel matches the
	 * 4-tuple it was given. */
	if (r->registered) {
		if (s->ioctl_fn(s->fd, SDNMPI_IOC_DEL_PEER, r->peer_abi) == 0)
			s->st.unregistered++;
		else
			s->st.errors++;
	}
	free(r);
}
