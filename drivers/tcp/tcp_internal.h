/*
 * TCP driver internals, shared by tcp.c (instance, listeners, connections,
 * progress), tcp_send.c, tcp_recv.c and tcp_addr.c.
 *
 * Wire format and behaviour are described in docs/driver-tcp.md.
 */
#ifndef MRAIL_DRIVERS_TCP_INTERNAL_H
#define MRAIL_DRIVERS_TCP_INTERNAL_H

#include "drivers/driver.h"

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

static inline void tcp_put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void tcp_put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t tcp_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t tcp_get_le64(const uint8_t *p)
{
	return (uint64_t)tcp_get_le32(p) | (uint64_t)tcp_get_le32(p + 4) << 32;
}

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
/* Connections accepted per listener per progress call. */
#define TCP_ACCEPT_BUDGET 16
#define TCP_EPOLL_BATCH 64
/* Send records this small are recycled instead of freed. */
#define TCP_SEND_POOLED_IOV 8
#define TCP_SEND_POOL_MAX 256
/* Kernel limit for one sendmsg/readv (IOV_MAX on Linux). */
#define TCP_IOV_MAX 1024
#define TCP_NAME_LEN 80

/* ---- objects ----------------------------------------------------------- */

enum tcp_obj_kind { TCP_OBJ_LISTENER, TCP_OBJ_EP };

/* First member of every object registered in epoll (epoll data.ptr). */
struct tcp_pollable {
	enum tcp_obj_kind kind;
	int fd;
};

struct tcp_listener {
	struct tcp_pollable poll;
	char name[TCP_NAME_LEN];
	double bandwidth; /* bytes/s of the interface, 0 if unknown */
	int accept_errno; /* last accept failure, logged once */
};

/*
 * One posted frame. iov[0] is the frame header, iov[1] the head, then the
 * body entries; entries are advanced in place as bytes leave.
 */
struct tcp_send {
	struct tcp_send *next;
	struct mrail_drv_ep *ep;
	void *send_ctx;
	uint64_t left; /* bytes not yet handed to the kernel */
	int status;    /* reported by send_done */
	int iov_pos;   /* first entry with unsent bytes */
	int iov_cnt;
	int iov_cap;
	uint8_t hdr[TCP_FRAME_HDR_LEN];
	struct iovec iov[];
};

enum tcp_ep_state {
	TCP_EP_CONNECTING,
	TCP_EP_CONNECTED,
	TCP_EP_FAILED, /* error reported; waits for ep_close */
	TCP_EP_CLOSED, /* ep_close called; memory freed at a safe point */
};

struct mrail_drv_ep {
	struct tcp_pollable poll;
	struct mrail_drv *drv;
	void *ctx;
	enum tcp_ep_state state;
	uint32_t ev_mask; /* epoll events currently registered, 0 if none */
	struct mrail_drv_ep *prev, *next; /* drv->eps */

	/* Failures seen outside progress, reported by the next progress. */
	bool needs_attention;
	struct mrail_drv_ep *attention_next;
	int early_connect_errno;
	int send_errno;

	/* Send queue: frames not fully written, in posting order. */
	struct tcp_send *sq_head, *sq_tail;
	uint64_t backlog;

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

	char local_name[TCP_NAME_LEN];
	char remote_name[TCP_NAME_LEN];
};

struct mrail_drv {
	struct mrail_drv_base base; /* upcalls, engine context */
	int epfd;
	int sockbuf; /* SO_SNDBUF/SO_RCVBUF request, 0 = kernel autotuning */
	unsigned loopback_rails; /* rails to processes of this host */
	int user_timeout_ms;     /* TCP_USER_TIMEOUT on rail sockets, 0: off */
	int keepalive;           /* s idle before/between probes, 0: off */
#define TCP_DEFAULT_KEEPALIVE 1

	struct tcp_listener **listeners;
	int nlisteners;

	struct mrail_drv_ep *eps;
	struct mrail_drv_ep *zombies; /* closed during progress, freed after */
	struct mrail_drv_ep *attention;
	int progress_depth;

	/* Sends that left, waiting for their send_done upcall. */
	struct tcp_send *done_head, *done_tail;
	unsigned done_count;

	struct tcp_send *send_pool;
	int send_pool_cnt;

	struct iovec gather[TCP_IOV_MAX]; /* flush scratch */
};

/* ---- tcp.c ------------------------------------------------------------- */
extern const struct mrail_drv_ops mrail_tcp_driver_ops;
void tcp_ep_update_events(struct mrail_drv_ep *ep);
void tcp_ep_need_attention(struct mrail_drv_ep *ep);
/* Report a broken connection (progress only); see driver.h ep_error. */
void tcp_ep_fail(struct mrail_drv_ep *ep, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static inline bool tcp_ep_usable(const struct mrail_drv_ep *ep)
{
	return ep->state == TCP_EP_CONNECTED;
}

/* ---- tcp_send.c -------------------------------------------------------- */
int tcp_send(struct mrail_drv_ep *ep, const void *head, size_t head_len,
	     const struct iovec *body, int body_cnt, void *send_ctx);
uint64_t tcp_ep_backlog(struct mrail_drv_ep *ep);
/* Write queued frames; 0, or -errno when the connection broke. */
int tcp_flush(struct mrail_drv_ep *ep);
/* Queued frames move to the completion list with `status`. */
void tcp_sendq_fail(struct mrail_drv_ep *ep, int status);
void tcp_sendq_drop(struct mrail_drv_ep *ep);
/* send_done upcalls for ep's finished sends (before an ep_error). */
void tcp_report_done_of(struct mrail_drv_ep *ep);
void tcp_drop_done_of(struct mrail_drv_ep *ep);
int tcp_run_completions(struct mrail_drv *drv);
void tcp_send_pool_free(struct mrail_drv *drv);

/* ---- tcp_recv.c -------------------------------------------------------- */
/* Read and deliver what the socket has, within the fairness budget. */
void tcp_rx_process(struct mrail_drv_ep *ep);
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
