/*
 * TCP driver internals, shared by tcp.c (instance, listeners, connections,
 * progress), tcp_send.c, tcp_recv.c and tcp_addr.c.
 *
 * Wire format and behaviour are described in docs/driver-tcp.md.
 */
#ifndef MRAIL_DRIVERS_TCP_INTERNAL_H
#define MRAIL_DRIVERS_TCP_INTERNAL_H

#include "drivers/common/dc.h"
#include "drivers/common/dc_le.h"
#include "drivers/driver.h"
#include "mrail.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

/* ---- wire format (version 1) ------------------------------------------ */

/* Bytes 'M' 'R' 'T' <version> read as a little-endian u32. */
#define TCP_WIRE_MAGIC 0x0054524dU
#define TCP_WIRE_MAGIC_MASK 0x00ffffffU
#define TCP_WIRE_VERSION 1u
#define TCP_FRAME_HDR_LEN 16

/* Little-endian wire fields (drivers/common/dc_le.h). */
#define tcp_put_le32 dc_put_le32
#define tcp_put_le64 dc_put_le64
#define tcp_get_le32 dc_get_le32
#define tcp_get_le64 dc_get_le64

/* ---- capabilities ------------------------------------------------------ */

/* A 1 MiB eager packet plus room for engine headers. */
#define TCP_MAX_HEAD (((size_t)1 << 20) + 4096)
#define TCP_MAX_BODY ((uint64_t)1 << 48)
#define TCP_MAX_BODY_IOV 1024
#define TCP_EAGER_MAX_HINT 32768

/* ---- tuning ------------------------------------------------------------ */

/* The receive buffer starts at TCP_RBUF_MIN, doubles while reads fill
 * it, up to TCP_RBUF_SIZE, and is freed when the socket is drained with
 * no partial frame: an idle connection holds none (docs/scale.md; a
 * fixed 256 KiB per connection was most of a connected peer's memory). */
#define TCP_RBUF_MIN (16 * 1024)
#define TCP_RBUF_SIZE (256 * 1024)
#define TCP_DEFAULT_SOCKBUF (4 * 1024 * 1024)
/* Read syscalls one endpoint may use per progress call (fairness). */
#define TCP_RX_SYSCALL_BUDGET 8
/* Kernel limit for one sendmsg/readv (IOV_MAX on Linux). */
#define TCP_IOV_MAX 1024
#define TCP_NAME_LEN DC_NAME_LEN

/* ---- objects ----------------------------------------------------------- */

struct tcp_listener {
	struct dc_listener dc; /* first: registered in the epoll set */
	double bandwidth;      /* bytes/s of the interface, 0 if unknown */
};

/* Frames are struct dc_send records: hdr holds the frame header. */

struct mrail_drv_ep {
	struct dc_ep dc; /* first: state, names, send queue (drivers/common) */

	/* Receive buffer: bytes [rstart, rend) not yet parsed. */
	char *rbuf;
	size_t rcap, rstart, rend;
	bool rfull;      /* the last read filled rbuf: grow it */
	/* Body being received straight into engine memory. */
	bool in_body;
	struct iovec *dst; /* TCP_MAX_BODY_IOV + 1 entries (+1: spill) */
	int dst_pos, dst_cnt;
	uint64_t body_left, body_len;
	void *body_cookie;
};

struct mrail_drv {
	struct dc_drv dc; /* first: upcalls, endpoints, epoll set */
	int sockbuf; /* SO_SNDBUF/SO_RCVBUF request, 0 = kernel autotuning */
	unsigned loopback_rails;
	bool loopback_asked; /* set by the user: kept beside shm */
	int user_timeout_ms;     /* TCP_USER_TIMEOUT on rail sockets, 0: off;
	                            default: MRAIL_RAIL_TIMEOUT */
	int keepalive;           /* s idle before/between probes, 0: off */
#define TCP_DEFAULT_KEEPALIVE 1
	int rto_max_ms;          /* TCP_RTO_MAX_MS on rail sockets, 0: kernel's
	                            (120 s); kernels before 6.15 ignore it */
#define TCP_DEFAULT_RTO_MAX_MS 1000
	int notsent_lowat;       /* TCP_NOTSENT_LOWAT bytes, 0: kernel's */
#define TCP_DEFAULT_NOTSENT_LOWAT (128 * 1024)

	struct iovec gather[TCP_IOV_MAX]; /* flush scratch */
	/* One receive buffer of TCP_RBUF_MIN that a drained connection
	 * left for the next one that reads (one per instance, not per
	 * peer, so idle peers still hold none): an 8 B ping-pong drains
	 * the socket at every message, and malloc + free of the buffer
	 * there were ~330 instructions of ~4 300 on the receive path
	 * (callgrind, docs/anchors.md). */
	char *rbuf_spare;
	unsigned neps;        /* endpoints allocated, not yet freed */
	unsigned epoll_skips; /* passes without epoll_wait (tcp_progress) */
/* At most this many endpoints are read directly, not through epoll (an
 * idle pass makes one empty read per endpoint; one and two were measured,
 * docs/driver-tcp.md), and epoll runs every TCP_EPOLL_EVERY-th pass. */
#define TCP_DIRECT_MAX 2
#define TCP_EPOLL_EVERY 5
};

static inline struct mrail_drv *tcp_drv(const struct mrail_drv_ep *ep)
{
	return (struct mrail_drv *)ep->dc.drv;
}

/* ---- tcp.c ------------------------------------------------------------- */
extern const struct mrail_drv_ops mrail_tcp_driver_ops;
/* The ep_error status for a socket error: MRAIL_ERR_PEER_CLOSED when the
 * peer's end reset the connection (its process may be gone; the engine
 * tells that from a dead link), else MRAIL_ERR_PEER. */
static inline int tcp_closed_status(int err)
{
	return err == ECONNRESET || err == EPIPE ? MRAIL_ERR_PEER_CLOSED
						 : MRAIL_ERR_PEER;
}

/* Report a broken connection (progress only); see driver.h ep_error. */
#define tcp_ep_fail(ep, status, ...) \
	dc_ep_fail(&(ep)->dc, status, false, __VA_ARGS__)
static inline bool tcp_ep_usable(const struct mrail_drv_ep *ep)
{
	return ep->dc.state == DC_EP_CONNECTED;
}

/* ---- tcp_send.c -------------------------------------------------------- */
int tcp_send(struct mrail_drv_ep *ep, const void *head, size_t head_len,
	     const struct iovec *body, int body_cnt, void *send_ctx);
/* Write queued frames; 0, or -errno when the connection broke. */
int tcp_flush(struct mrail_drv_ep *ep);

/* ---- tcp_recv.c -------------------------------------------------------- */
/* Read and deliver what the socket has, within the fairness budget. */
bool tcp_rx_process(struct mrail_drv_ep *ep);
void tcp_rx_free(struct mrail_drv_ep *ep);

/* ---- tcp_addr.c -------------------------------------------------------- */
#define TCP_BLOB_V4_LEN 16
#define TCP_BLOB_V6_LEN 28
/*
 * Resolve a local address: NULL/"" = any IPv4 address, an IPv4/IPv6
 * literal (with %scope for link-local), or an interface name (its first
 * address of `want_family`, AF_UNSPEC = IPv4 preferred).
 */
int tcp_local_addr(const char *local, int want_family,
		   struct sockaddr_storage *ss, socklen_t *len);
int tcp_blob_encode(const struct sockaddr_storage *ss, void *blob,
		    size_t *blob_len);
int tcp_blob_decode(const void *blob, size_t blob_len,
		    struct sockaddr_storage *ss, socklen_t *len);
void tcp_sockaddr_name(const struct sockaddr_storage *ss, char *name,
		       size_t len);
void tcp_fd_names(int fd, char *local, size_t llen, char *remote,
		  size_t rlen);
/* Interface speed for an address in bytes/s, 0 if unknown. */
double tcp_addr_bandwidth(const struct sockaddr_storage *ss);

#endif
