/*
 * The engine's wire format (version 7), carried in driver frame heads.
 * Documented in docs/wire.md; keep both in sync.
 *
 * A frame head is a packet: an 8-byte packet header, then records, each
 * starting on an 8-byte boundary. A frame with a body (rendezvous payload)
 * carries exactly one DATA record in its head. All integers are
 * little-endian; fields are copied out with memcpy (heads may be unaligned)
 * and every length is checked against the packet before use.
 */
#ifndef MRAIL_WIRE_H
#define MRAIL_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "util/auth.h"

#define MRAIL_WIRE_MAGIC 0x50524d00u /* "\0MRP" read as little-endian u32 */
#define MRAIL_WIRE_VERSION 8u

enum mrail_wire_type {
	MRAIL_WIRE_EAGER = 1,     /* a whole small message */
	MRAIL_WIRE_RTS = 2,       /* rendezvous: ready to send */
	MRAIL_WIRE_RTR = 3,       /* rendezvous: send me this byte range */
	MRAIL_WIRE_DATA = 4,      /* rendezvous payload chunk (frame body) */
	MRAIL_WIRE_HELLO = 5,     /* first frame of a connection */
	MRAIL_WIRE_HELLO_ACK = 6, /* acceptor's answer to HELLO */
	MRAIL_WIRE_BYE = 7,       /* the sender's engine is closing */
	MRAIL_WIRE_BUSY = 8,      /* sender's per-rail busy time (v2) */
	MRAIL_WIRE_EAGER_SYNC = 9, /* EAGER of a synchronous send (v3) */
	MRAIL_WIRE_SYNC_ACK = 10, /* receiver matched an EAGER_SYNC */
	MRAIL_WIRE_EAGER_PART = 11, /* one part of an offloaded eager message */
	/* Rail failover (v5, docs/failover.md). */
	MRAIL_WIRE_ACK = 12,      /* packets of this rail processed so far */
	MRAIL_WIRE_RAIL_DOWN = 13, /* a rail failed; what we took from it */
	MRAIL_WIRE_RDV_DONE = 14, /* receiver has every byte of a rendezvous */
	MRAIL_WIRE_IMM = 15,      /* remote data of the next message (v6) */
	/* One-sided rendezvous (v3; types 16.. are RMA records). */
	MRAIL_WIRE_RKEY = 16,     /* a registered buffer peers may reach */
	MRAIL_WIRE_GET_FIN = 17,  /* receiver read payload by RDMA */
	MRAIL_WIRE_PUT_FIN = 18,  /* sender wrote a payload chunk by RDMA */
	MRAIL_WIRE_CREDIT = 19,   /* receiver grants eager bytes (v5) */
	MRAIL_WIRE_TYPE_MAX = 32, /* types are below this */
};

/* RTR flag: move this chunk by RDMA write into the buffer of the RKEY
 * record (same recv_id) that came before it on the rail. */
#define MRAIL_WIRE_RTR_PUT 0x01u
/* RTS flag (v7): the sender's send has completed already and its payload
 * waits in a copy the sender's engine holds (a standard send beyond the
 * eager credit): the receiver may pull it before a receive matches
 * (libmrail/pull.c). Never set for a synchronous send. */
#define MRAIL_WIRE_RTS_BUFFERED 0x01u
/* RTS flag (v8): the sender's engine progresses until this send completes
 * (its caller waits on it, or a progress thread runs): the receiver may
 * ask it to write part of the payload (RTR_PUT) where it could read it
 * all, and count on it being done soon (libmrail/rdv.c, share_part). */
#define MRAIL_WIRE_RTS_ATTENTIVE 0x02u
/* Bytes of a packed remote key (drivers/driver.h MRAIL_DRV_RKEY_MAX). */
#define MRAIL_WIRE_RKEY_MAX 48

/* BUSY: h.len entries (<= MRAIL_WIRE_BUSY_MAX) of uint32 microseconds
 * follow, one per rail of the gate in rail order, padded to 8 bytes. */
#define MRAIL_WIRE_BUSY_MAX 64

struct mrail_wire_pkt_hdr {
	uint32_t magic_version; /* MRAIL_WIRE_MAGIC | MRAIL_WIRE_VERSION */
	uint32_t pseq; /* v5: packet number on its connection (1, 2, ...),
	                  0: not counted (handshake, standalone ACK, DATA) */
};

/* Common first 8 bytes of every record. */
struct mrail_wire_rec_hdr {
	uint8_t type;
	uint8_t flags;
	uint16_t reserved;
	uint32_t len; /* EAGER: payload bytes that follow the record */
};

struct mrail_wire_eager {
	struct mrail_wire_rec_hdr h;
	uint64_t seq; /* per-gate message sequence number */
	uint64_t tag;
	/* payload, padded to 8 bytes */
};

/* Only sent for synchronous sends, so peers that predate it are only
 * affected by applications that use them (docs/wire.md). */
struct mrail_wire_eager_sync {
	struct mrail_wire_rec_hdr h;
	uint64_t seq;
	uint64_t tag;
	uint64_t send_id; /* echoed in SYNC_ACK once a receive matched */
	/* payload, padded to 8 bytes */
};

/* Only sent by an engine with offload workers (docs/offload.md): the
 * parts of one eager message share seq and tag and travel on different
 * rails; h.len payload bytes [offset, offset + h.len) follow. */
struct mrail_wire_eager_part {
	struct mrail_wire_rec_hdr h;
	uint64_t seq;
	uint64_t tag;
	uint64_t msg_len;
	uint64_t offset;
	/* payload, padded to 8 bytes */
};

/* v6: the 64-bit remote data (MRAIL_REQ_DATA) of the message record
 * (EAGER, EAGER_SYNC or RTS) that follows it at once in the packet. */
struct mrail_wire_imm {
	struct mrail_wire_rec_hdr h;
	uint64_t data;
};

struct mrail_wire_sync_ack {
	struct mrail_wire_rec_hdr h;
	uint64_t send_id;
};

struct mrail_wire_rts {
	struct mrail_wire_rec_hdr h;
	uint64_t seq;
	uint64_t tag;
	uint64_t msg_len;
	uint64_t send_id;
};

struct mrail_wire_rtr {
	struct mrail_wire_rec_hdr h;
	uint64_t send_id;
	uint64_t recv_id;
	uint64_t offset;
	uint64_t len;
	uint64_t total; /* bytes the receiver takes in all (<= msg_len) */
};

struct mrail_wire_data {
	struct mrail_wire_rec_hdr h;
	uint64_t recv_id;
	uint64_t offset;
	uint64_t len; /* == frame body length */
};

struct mrail_wire_hello {
	struct mrail_wire_rec_hdr h;
	uint16_t version;
	uint16_t rail_index;
	uint16_t nrails;
	uint16_t epoch; /* v5: 0 for a rail's first connection, + 1 for each
	                   reconnection (failover) */
	uint64_t src_uuid;
	uint64_t dst_uuid;
	uint8_t nonce[MRAIL_AUTH_NONCE_BYTES];
	uint8_t mac[MRAIL_AUTH_MAC_BYTES]; /* over all bytes before it */
};

struct mrail_wire_hello_ack {
	struct mrail_wire_rec_hdr h;
	uint64_t src_uuid;
	uint8_t mac[MRAIL_AUTH_MAC_BYTES]; /* over hello nonce + this uuid */
};

struct mrail_wire_bye {
	struct mrail_wire_rec_hdr h;
};

struct mrail_wire_busy {
	struct mrail_wire_rec_hdr h;
};

/* h.len key bytes (<= MRAIL_WIRE_RKEY_MAX) follow, padded to 8. Precedes
 * the RTS (id = send_id: the sender's buffer, for RDMA read) or the RTRs
 * (id = recv_id: the receiver's buffer, for RDMA write) it serves. */
struct mrail_wire_rkey {
	struct mrail_wire_rec_hdr h;
	uint64_t id;
	uint64_t rails; /* bit i: the key is valid on rail i of the gate */
	uint64_t addr;  /* where byte 0 of the message is */
};

struct mrail_wire_get_fin {
	struct mrail_wire_rec_hdr h;
	uint64_t send_id;
	uint64_t total; /* bytes the receiver takes in all (<= msg_len) */
	uint64_t bytes; /* of which it read this many by RDMA */
};

struct mrail_wire_put_fin {
	struct mrail_wire_rec_hdr h;
	uint64_t recv_id;
	uint64_t offset;
	uint64_t len;
};

/* v5: the receiver of a connection's counted packets has processed
 * all of them up to number `count`; sent on that same connection. */
struct mrail_wire_ack {
	struct mrail_wire_rec_hdr h;
	uint64_t count;
};

/* v5: rail `rail` (connection number `epoch` of it) failed; this side
 * processed `received` counted packets from it and takes nothing more
 * from it. Travels on another rail of the gate. */
struct mrail_wire_rail_down {
	struct mrail_wire_rec_hdr h;
	uint32_t rail;
	uint32_t epoch;
	uint64_t received;
};

/* v5: a receive of a two-sided or RDMA-write rendezvous has every byte
 * (`total`, <= msg_len); the send completes on it. */
struct mrail_wire_rdv_done {
	struct mrail_wire_rec_hdr h;
	uint64_t send_id;
	uint64_t total;
};

/* Eager flow control (v5, docs/flow-control.md): the receiver allows
 * the sender `bytes` more bytes of eager payload; grants add up. */
struct mrail_wire_credit {
	struct mrail_wire_rec_hdr h;
	uint64_t bytes;
};

/* Decoded record, pointing into the packet. */
struct mrail_wire_rec {
	int type;
	union {
		struct mrail_wire_eager eager;
		struct mrail_wire_rts rts;
		struct mrail_wire_rtr rtr;
		struct mrail_wire_data data;
		struct mrail_wire_hello hello;
		struct mrail_wire_hello_ack ack;
		struct mrail_wire_eager_sync eager_sync;
		struct mrail_wire_sync_ack sync_ack;
		struct mrail_wire_eager_part part;
		struct mrail_wire_rkey rkey;
		struct mrail_wire_get_fin get_fin;
		struct mrail_wire_put_fin put_fin;
		struct mrail_wire_ack ack_rec;
		struct mrail_wire_rail_down rail_down;
		struct mrail_wire_rdv_done rdv_done;
		struct mrail_wire_credit credit;
		struct mrail_wire_imm imm;
	} u;
	const void *payload; /* EAGER: the message; BUSY: the entries;
	                        RKEY: the key */
	size_t payload_len;
	/* Message records: the IMM record before it (recv.c sets these). */
	int has_data;
	uint64_t data;
};

static inline size_t mrail_wire_pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* Bytes an eager record of `len` payload bytes takes in a packet. */
static inline size_t mrail_wire_eager_size(size_t len)
{
	return sizeof(struct mrail_wire_eager) + mrail_wire_pad8(len);
}

/* Writes the packet header; returns its size. */
size_t mrail_wire_put_pkt_hdr(void *buf);

/* v5: the packet number of a packet whose header was checked. */
uint32_t mrail_wire_pkt_pseq(const void *head);
void mrail_wire_set_pkt_pseq(void *head, uint32_t pseq);

/*
 * Checks the packet header of `head` (len bytes). Returns the offset of
 * the first record, or 0 with *why set.
 */
size_t mrail_wire_check_pkt_hdr(const void *head, size_t len,
				const char **why);

/*
 * The packet of one small message, recognised without the general
 * parser: after the packet header at off, an optional CREDIT record,
 * one EAGER record, an optional ACK record, and nothing else; every
 * field as mrail_wire_next would accept it (no flags, no length on the
 * fixed records, the payload within max_eager and the packet). That is
 * the layout an eager send builds (credit piggybacked before, the ACK
 * appended when the packet is numbered). Returns 1 with *l filled, 0 for
 * any other packet, which mrail_wire_next then decodes (and rejects, if
 * malformed).
 */
struct mrail_wire_lone {
	int has_credit, has_ack;
	uint64_t credit, ack;  /* their records' bytes and count */
	struct mrail_wire_rec eager;
};
int mrail_wire_lone_eager(const void *head, size_t len, size_t off,
			  size_t max_eager, struct mrail_wire_lone *l);

/*
 * Decodes the record at *off in head[0..len). Returns 1 and advances *off,
 * 0 at the end of the packet, -1 with *why on a malformed record (unknown
 * type, truncated, length beyond the packet or beyond max_eager).
 */
int mrail_wire_next(const void *head, size_t len, size_t *off,
		    size_t max_eager, struct mrail_wire_rec *rec,
		    const char **why);

/* Record constructors: write at buf, return bytes written. */
size_t mrail_wire_put_eager(void *buf, uint64_t seq, uint64_t tag,
			    size_t len); /* payload written by the caller */
/* Its fixed part only (sizeof struct mrail_wire_eager), for a packet
 * gathered from pieces: the payload and its zero padding follow. */
size_t mrail_wire_put_eager_head(void *buf, uint64_t seq, uint64_t tag,
				 size_t len);
/* EAGER_SYNC: mrail_wire_eager_sync_size(len) bytes, payload by caller. */
size_t mrail_wire_put_eager_sync(void *buf, uint64_t seq, uint64_t tag,
				 uint64_t send_id, size_t len);
static inline size_t mrail_wire_eager_sync_size(size_t len)
{
	return sizeof(struct mrail_wire_eager_sync) + mrail_wire_pad8(len);
}
size_t mrail_wire_put_sync_ack(void *buf, uint64_t send_id);
/* IMM (v6): sizeof(struct mrail_wire_imm) bytes, right before the
 * message record it belongs to. */
size_t mrail_wire_put_imm(void *buf, uint64_t data);
/* EAGER_PART: mrail_wire_eager_part_size(len) bytes, payload by caller. */
size_t mrail_wire_put_eager_part(void *buf, uint64_t seq, uint64_t tag,
				 uint64_t msg_len, uint64_t offset, size_t len);
static inline size_t mrail_wire_eager_part_size(size_t len)
{
	return sizeof(struct mrail_wire_eager_part) + mrail_wire_pad8(len);
}
size_t mrail_wire_put_rts(void *buf, uint64_t seq, uint64_t tag,
			  uint64_t msg_len, uint64_t send_id);
size_t mrail_wire_put_rtr(void *buf, uint64_t send_id, uint64_t recv_id,
			  uint64_t offset, uint64_t len, uint64_t total);
size_t mrail_wire_put_data(void *buf, uint64_t recv_id, uint64_t offset,
			   uint64_t len);
size_t mrail_wire_put_bye(void *buf);
size_t mrail_wire_put_ack(void *buf, uint64_t count);
size_t mrail_wire_put_rail_down(void *buf, uint32_t rail, uint32_t epoch,
				uint64_t received);
size_t mrail_wire_put_rdv_done(void *buf, uint64_t send_id, uint64_t total);
/* RKEY with a key of key_len bytes: mrail_wire_rkey_size(key_len). */
size_t mrail_wire_put_rkey(void *buf, uint64_t id, uint64_t rails,
			   uint64_t addr, const void *key, size_t key_len);
static inline size_t mrail_wire_rkey_size(size_t key_len)
{
	return sizeof(struct mrail_wire_rkey) + mrail_wire_pad8(key_len);
}
size_t mrail_wire_put_get_fin(void *buf, uint64_t send_id, uint64_t total,
			      uint64_t bytes);
size_t mrail_wire_put_put_fin(void *buf, uint64_t recv_id, uint64_t offset,
			      uint64_t len);
size_t mrail_wire_put_credit(void *buf, uint64_t bytes);
/* RTS with flags (MRAIL_WIRE_RTS_BUFFERED). */
size_t mrail_wire_put_rts_flags(void *buf, uint64_t seq, uint64_t tag,
				uint64_t msg_len, uint64_t send_id,
				uint8_t flags);
/* RTR with flags (MRAIL_WIRE_RTR_PUT). */
size_t mrail_wire_put_rtr_flags(void *buf, uint64_t send_id, uint64_t recv_id,
				uint64_t offset, uint64_t len, uint64_t total,
				uint8_t flags);
/* BUSY with n (<= MRAIL_WIRE_BUSY_MAX) entries; mrail_wire_busy_size(n)
 * bytes. */
size_t mrail_wire_put_busy(void *buf, const uint32_t *us, unsigned n);
static inline size_t mrail_wire_busy_size(unsigned n)
{
	return sizeof(struct mrail_wire_busy) + mrail_wire_pad8(4 * (size_t)n);
}

#endif
