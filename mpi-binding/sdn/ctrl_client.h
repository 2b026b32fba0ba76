/*
 * Client of the SDN controller (protocol version 1, docs/sdn-controller.md):
 * one TCP connection per process; HELLO once, then for each collective
 * whose pattern is new to this process, PATTERN (the root) and, in sync
 * mode, WAIT (every rank) until the controller says the flows are in.
 *
 * Self-contained (libc only) so the Open MPI coll component and the tests
 * link it without libmrail. Not thread-safe: one caller at a time (MPI
 * collectives on one communicator are not concurrent by definition; the
 * component serialises communicators with its own lock).
 */
#ifndef MRAIL_SDN_CTRL_CLIENT_H
#define MRAIL_SDN_CTRL_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#define MRAIL_SDN_CTRL_PROTO 1
/* Longest line either side sends (a PATTERN of ~40000 pairs). */
#define MRAIL_SDN_CTRL_MAX_LINE (1u << 20)
/* Longest reply the client accepts: replies are short. */
#define MRAIL_SDN_CTRL_MAX_REPLY 1024u

struct mrail_sdn_ctrl;

struct mrail_sdn_pair {
	uint32_t src, dst; /* ranks in MPI_COMM_WORLD */
};

/*
 * Connect to "host:port" (IPv4/IPv6 literal or name; "[v6]:port" too)
 * within timeout_ms, which also bounds every later reply. 0 and *out set,
 * or a negative errno with a message naming the cause in err.
 */
int mrail_sdn_ctrl_connect(const char *hostport, int timeout_ms,
			   struct mrail_sdn_ctrl **out, char *err,
			   size_t errlen);
/* A client over an already connected stream socket fd (taken over:
 * closed by mrail_sdn_ctrl_close); for tests and the fuzzer. */
int mrail_sdn_ctrl_adopt(int fd, int timeout_ms, struct mrail_sdn_ctrl **out);
void mrail_sdn_ctrl_close(struct mrail_sdn_ctrl *c);
/* The last error's message ("" when none). */
const char *mrail_sdn_ctrl_error(const struct mrail_sdn_ctrl *c);

/*
 * HELLO: who this process is. rails: "ifname/ipv4/mac,..." (see
 * mrail_sdn_ctrl_local_rails). Waits for the controller's ACK.
 */
int mrail_sdn_ctrl_hello(struct mrail_sdn_ctrl *c, const char *job,
			 unsigned rank, unsigned size, const char *host,
			 const char *rails);

/*
 * The pattern's key: FNV-1a 64 of its canonical text (documented; the
 * controller recomputes it). Same on every rank for the same pattern.
 */
uint64_t mrail_sdn_ctrl_pattern_key(unsigned comm, const char *prim,
				    const struct mrail_sdn_pair *pairs,
				    size_t n);

/*
 * PATTERN (the collective's root only). With wait, returns once the
 * controller acknowledged the flows (0), or -ETIMEDOUT / another negative
 * errno with the message in mrail_sdn_ctrl_error.
 */
int mrail_sdn_ctrl_pattern(struct mrail_sdn_ctrl *c, const char *job,
			   unsigned comm, const char *prim, unsigned root,
			   const struct mrail_sdn_pair *pairs, size_t n,
			   int wait);
/* WAIT (non-root ranks in sync mode): until the pattern `key` is installed. */
int mrail_sdn_ctrl_wait(struct mrail_sdn_ctrl *c, const char *job,
			uint64_t key);

/*
 * This host's IPv4 interfaces, up and not loopback, as
 * "ifname/ip/mac,...", into buf. 0, or -ENOSPC/-errno.
 */
int mrail_sdn_ctrl_local_rails(char *buf, size_t len);

#endif
