/* bpf backend, user side: each TCP rail's socket carries the tag of the
 * message it is sending in the tc tagger's socket-storage map (loaded and
 * pinned by mrail-sdn-tagger; docs/sdn.md). */
#include "sdn_internal.h"
#include "sdn_bpf_abi.h"
#include "sdn_tag.h"
#include "mpi-binding/ompi/mtl_mrail_bits.h"

#include <errno.h>
#include <linux/bpf.h>
#include <linux/sockios.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define VALID (1ull << 63)   /* sdn_rail.cur: a tag, not "untagged" */

static int sys_bpf(int cmd, union bpf_attr *a)
{
	return (int)syscall(__NR_bpf, cmd, a, sizeof *a);
}

int sdn_bpf_open(struct mrail_sdn *s, const char *dir, char *err,
		 size_t errlen)
{
	char path[512];
	union bpf_attr a;
	struct bpf_map_info info;

	snprintf(path, sizeof path, "%s/%s", dir ? dir : MRAIL_SDN_BPF_DIR,
		 MRAIL_SDN_BPF_TAGS);
	memset(&a, 0, sizeof a);
	a.pathname = (uintptr_t)path;
	a.file_flags = BPF_F_WRONLY;
	s->fd = sys_bpf(BPF_OBJ_GET, &a);
	if (s->fd < 0) {
		int e = errno;
		snprintf(err, errlen, "MRAIL_SDN=bpf: %s: %s (%s)", path,
			 strerror(e),
			 e == ENOENT ? "run mrail-sdn-tagger load IFACE as root"
			 : e == EPERM || e == EACCES
				 ? "not in the tagger's group, or "
				   "kernel.unprivileged_bpf_disabled is set"
				 : "see docs/sdn.md");
		return -e;
	}
	memset(&a, 0, sizeof a);
	memset(&info, 0, sizeof info);
	a.info.bpf_fd = (unsigned)s->fd;
	a.info.info_len = sizeof info;
	a.info.info = (uintptr_t)&info;
	if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a) == 0 &&
	    (info.type != BPF_MAP_TYPE_SK_STORAGE || info.key_size != 4 ||
	     info.value_size != sizeof(struct mrail_sdn_bpf_tag))) {
		snprintf(err, errlen, "MRAIL_SDN=bpf: %s is not the tagger's "
			 "tag map (type %u, key %u, value %u bytes; ABI %d "
			 "wants sk_storage, 4, %zu): reload mrail-sdn-tagger",
			 path, info.type, info.key_size, info.value_size,
			 MRAIL_SDN_BPF_ABI_VERSION,
			 sizeof(struct mrail_sdn_bpf_tag));
		return -EPROTO;
	}
	return 0;
}

void *sdn_bpf_rail_up(void *ctx, const struct mrail_rail_conn *c)
{
	struct mrail_sdn *s = ctx;
	if (strcmp(c->driver, "tcp") || c->fd < 0)
		return NULL;
	struct sdn_rail *r = calloc(1, sizeof *r);
	if (!r) {
		s->st.errors++;
		sdn_warn_once(s, "out of memory: a TCP rail to peer %u stays "
			      "untagged", c->peer);
		return NULL;
	}
	r->peer = c->peer;
	r->fd = c->fd;
	return r;
}

void sdn_bpf_rail_down(void *ctx, const struct mrail_rail_conn *c, void *st)
{
	/* The socket's storage goes with the socket. */
	(void)ctx;
	(void)c;
	free(st);
}

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* Bytes already written under the old tag leave with whatever tag the
 * socket has when TCP transmits them: let them go first. */
static void fence(struct mrail_sdn *s, int fd)
{
	int unsent = 0;
	if (!s->fence_us || ioctl(fd, SIOCOUTQNSD, &unsent) || unsent <= 0)
		return;
	s->st.fences++;
	double end = now_us() + s->fence_us;
	while (unsent > 0) {
		if (now_us() > end) {
			s->st.fence_timeouts++;
			return;
		}
		if (ioctl(fd, SIOCOUTQNSD, &unsent))
			return;
	}
}

/* The value for the socket: VALID | the 48-bit tag, or 0 (untagged). */
static uint64_t value_of(struct mrail_sdn *s, const struct sdn_rail *r,
			 uint64_t bits)
{
	unsigned cid = (unsigned)(bits >> 48);
	/* All-ones context: the engine's own traffic (wire-up sampling),
	 * never an Open MPI communicator here. */
	if (cid == MRAIL_MTL_MAX_CID)
		return 0;
	struct mrail_sdn_ctx c = {
		mrail_sdn_prim_of_ompi_tag(mrail_mtl_bits_tag(bits)), cid,
		s->world_rank, sdn_peer_rank(s, r->peer)};
	uint8_t mac[6];
	if (mrail_sdn_tag_encode(&c, mac)) {
		s->st.untagged++;
		if (c.comm >= MRAIL_SDN_MAX_COMM)
			sdn_warn_once(s, "communicator id %u >= %u: its "
				      "messages go untagged", c.comm,
				      MRAIL_SDN_MAX_COMM);
		else
			sdn_warn_once(s, "rank %u >= %u: messages between "
				      "ranks %u and %u go untagged",
				      c.src >= MRAIL_SDN_MAX_RANK ? c.src : c.dst,
				      MRAIL_SDN_MAX_RANK, c.src, c.dst);
		return 0;
	}
	uint64_t v = 0;
	for (int i = 0; i < 6; i++)
		v = v << 8 | mac[i];
	return VALID | v;
}

void sdn_bpf_msg_tx(void *ctx, void *state, uint64_t bits)
{
	struct mrail_sdn *s = ctx;
	struct sdn_rail *r = state;
	if (!r)
		return;
	uint64_t v = value_of(s, r, bits);
	if (v == r->cur)
		return;
	fence(s, r->fd);
	struct mrail_sdn_bpf_tag t = {.valid = !!(v & VALID),
				      .version = MRAIL_SDN_BPF_ABI_VERSION};
	for (int i = 0; i < 6; i++)
		t.mac[i] = (uint8_t)(v >> (8 * (5 - i)));
	union bpf_attr a;
	int key = r->fd;
	memset(&a, 0, sizeof a);
	a.map_fd = (unsigned)s->fd;
	a.key = (uintptr_t)&key;
	a.value = (uintptr_t)&t;
	a.flags = BPF_ANY;
	if (sys_bpf(BPF_MAP_UPDATE_ELEM, &a)) {
		s->st.errors++;
		sdn_warn_once(s, "tagging the socket of a rail to peer %u: %s",
			      r->peer, strerror(errno));
		return;
	}
	s->st.retags++;
	r->cur = v;
}
