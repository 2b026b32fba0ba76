/* Shared by the backends of sdn_node.c (internal). */
#ifndef MRAIL_SDN_INTERNAL_H
#define MRAIL_SDN_INTERNAL_H

#include "sdn_node.h"

#include <stdatomic.h>

enum sdn_backend { SDN_NONE, SDN_UNISONFLOW, SDN_BPF };

struct mrail_sdn {
	enum sdn_backend backend;
	struct mrail_rail_hooks hooks;
	unsigned world_rank, nprocs;
	_Atomic unsigned *peer_rank;  /* per peer id; UINT_MAX: unknown */
	int fd;                       /* /dev/sdnmpi or the tags map */
	int (*ioctl_fn)(int, unsigned long, void *);
	unsigned fence_us;
	atomic_int warned;            /* the one out-of-range warning */
	struct {
		_Atomic uint64_t registered, unregistered, retags, fences,
			fence_timeouts, untagged, errors;
	} st;
};

/* Per rail (what rail_up returns). */
struct sdn_rail {
	mrail_peer_t peer;
	int fd;                /* TCP socket, -1: not a TCP rail */
	uint64_t cur;          /* bpf: the socket's current tag value */
	int registered;        /* unisonflow: ADD_PEER worked */
	unsigned char peer_abi[64]; /* unisonflow: the struct sdnmpi_peer */
};

unsigned sdn_peer_rank(const struct mrail_sdn *s, mrail_peer_t peer);
void sdn_warn_once(struct mrail_sdn *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* sdn_unisonflow.c */
int sdn_uf_open(struct mrail_sdn *s, const char *device, char *err,
		size_t errlen);
void *sdn_uf_rail_up(void *ctx, const struct mrail_rail_conn *c);
void sdn_uf_rail_down(void *ctx, const struct mrail_rail_conn *c, void *st);

/* sdn_bpf.c */
int sdn_bpf_open(struct mrail_sdn *s, const char *dir, char *err,
		 size_t errlen);
void *sdn_bpf_rail_up(void *ctx, const struct mrail_rail_conn *c);
void sdn_bpf_rail_down(void *ctx, const struct mrail_rail_conn *c, void *st);
void sdn_bpf_msg_tx(void *ctx, void *state, uint64_t tag);

#endif
