/*
 * Per-message SDN tagging for an MPI binding over libmrail (docs/sdn.md):
 * the backend MRAIL_SDN=none|unisonflow|bpf chooses, as libmrail rail
 * hooks the binding installs in its engine configuration.
 *
 *   none        nothing installed: no per-message cost at all.
 *   unisonflow  the UnisonFlow kernel module (sdnmpi_ioctl.h): each TCP
 *               rail's 4-tuple registered at rail_up, removed at
 *               rail_down; the module tags packets itself.
 *   bpf         the tc tagger (mrail-sdn-tagger): each message's tag
 *               written into its TCP socket's BPF socket storage when it
 *               differs from the socket's current one.
 *
 * The engine tags are the MTL's match bits (mtl_mrail_bits.h): context id,
 * communicator rank of the source, MPI tag.
 */
#ifndef MRAIL_SDN_NODE_H
#define MRAIL_SDN_NODE_H

#include <mrail.h>
#include <stddef.h>
#include <stdint.h>

struct mrail_sdn;

struct mrail_sdn_opts {
	const char *mode;        /* NULL: $MRAIL_SDN, else "none" */
	unsigned world_rank;     /* this process in MPI_COMM_WORLD */
	unsigned nprocs;         /* world size: peers' ranks are kept per peer id */
	/* unisonflow: NULL: $MRAIL_SDN_DEVICE, else /dev/sdnmpi */
	const char *device;
	/* unisonflow: NULL: ioctl(2). Tests pass a recorder. */
	int (*ioctl_fn)(int fd, unsigned long request, void *arg);
	/* bpf: NULL: $MRAIL_SDN_BPF_DIR, else /sys/fs/bpf/mrail */
	const char *bpf_dir;
	/* bpf: longest wait, in µs, for a socket's unsent bytes to leave
	 * before its tag changes (so they keep their own tag); -1:
	 * $MRAIL_SDN_FENCE_US, else 2000; 0: no fence. */
	int fence_us;
};

struct mrail_sdn_stats {
	uint64_t registered, unregistered;  /* unisonflow ioctls that worked */
	uint64_t retags;          /* bpf: socket tag updates */
	uint64_t fences;          /* bpf: tag changes that waited for bytes */
	uint64_t fence_timeouts;  /* ... and gave up after fence_us */
	uint64_t untagged;        /* messages sent untagged (out of range) */
	uint64_t errors;          /* ioctl or map updates that failed */
};

/* 0 and *out = NULL for "none" (install nothing); 0 and *out set; or
 * -errno with the reason in err (e.g. "MRAIL_SDN=bpf: /sys/fs/bpf/mrail/
 * tags: No such file or directory (run mrail-sdn-tagger load IFACE as
 * root)"). */
int mrail_sdn_open(const struct mrail_sdn_opts *opts, struct mrail_sdn **out,
		   char *err, size_t errlen);
/* The hooks to install, with the mrail_sdn as their context. */
const struct mrail_rail_hooks *mrail_sdn_hooks(const struct mrail_sdn *s);
/* The world rank of an engine peer (default: the peer id). Thread safe. */
void mrail_sdn_set_peer_rank(struct mrail_sdn *s, mrail_peer_t peer,
			     unsigned world_rank);
void mrail_sdn_get_stats(const struct mrail_sdn *s, struct mrail_sdn_stats *st);
/* After the engine is destroyed (its rail_down hooks have run). */
void mrail_sdn_close(struct mrail_sdn *s);

#endif
