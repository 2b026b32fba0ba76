#include "libmrail/wire.h"

#include <endian.h>
#include <stddef.h>
#include <string.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "the wire format is little-endian; add byte swapping first");
_Static_assert(sizeof(struct mrail_wire_eager) == 24, "eager record size");
_Static_assert(sizeof(struct mrail_wire_rts) == 40, "rts record size");
_Static_assert(sizeof(struct mrail_wire_rtr) == 48, "rtr record size");
_Static_assert(sizeof(struct mrail_wire_data) == 32, "data record size");
_Static_assert(sizeof(struct mrail_wire_hello) == 64, "hello record size");
_Static_assert(sizeof(struct mrail_wire_hello_ack) == 32, "ack record size");
_Static_assert(sizeof(struct mrail_wire_rkey) == 32, "rkey record size");
_Static_assert(sizeof(struct mrail_wire_get_fin) == 32, "get_fin size");
_Static_assert(sizeof(struct mrail_wire_put_fin) == 32, "put_fin size");
_Static_assert(MRAIL_WIRE_RKEY_MAX == 48, "keep in sync with the driver ABI");
_Static_assert(sizeof(struct mrail_wire_eager_sync) == 32,
	       "eager_sync record size");
_Static_assert(sizeof(struct mrail_wire_sync_ack) == 16,
	       "sync_ack record size");
_Static_assert(sizeof(struct mrail_wire_ack) == 16, "ack record size");
_Static_assert(sizeof(struct mrail_wire_rail_down) == 24,
	       "rail_down record size");
_Static_assert(sizeof(struct mrail_wire_rdv_done) == 24,
	       "rdv_done record size");
_Static_assert(sizeof(struct mrail_wire_imm) == 16, "imm record size");

size_t mrail_wire_put_pkt_hdr(void *buf)
{
	struct mrail_wire_pkt_hdr h = {MRAIL_WIRE_MAGIC | MRAIL_WIRE_VERSION,
				       0};
	memcpy(buf, &h, sizeof h);
	return sizeof h;
}

size_t mrail_wire_check_pkt_hdr(const void *head, size_t len,
				const char **why)
{
	struct mrail_wire_pkt_hdr h;
	if (len < sizeof h) {
		*why = "packet shorter than its header";
		return 0;
	}
	memcpy(&h, head, sizeof h);
	if ((h.magic_version & ~0xffu) != MRAIL_WIRE_MAGIC) {
		*why = "bad packet magic";
		return 0;
	}
	if ((h.magic_version & 0xffu) != MRAIL_WIRE_VERSION) {
		*why = "unsupported wire version";
		return 0;
	}
	return sizeof h;
}

uint32_t mrail_wire_pkt_pseq(const void *head)
{
	struct mrail_wire_pkt_hdr h;
	memcpy(&h, head, sizeof h);
	return h.pseq;
}

void mrail_wire_set_pkt_pseq(void *head, uint32_t pseq)
{
	memcpy((char *)head + offsetof(struct mrail_wire_pkt_hdr, pseq), &pseq,
	       sizeof pseq);
}

/* What a record type is on the wire: its fixed part, the flags it may
 * carry, what follows it. One table lookup replaces a chain of tests per
 * record (three records in an 8 B message's packet). */
enum tail_kind {
	TAIL_NONE,  /* h.len must be 0 */
	TAIL_EAGER, /* h.len payload bytes, at most max_eager */
	TAIL_PART,  /* h.len bytes of an eager part */
	TAIL_BUSY,  /* h.len 4-byte entries */
	TAIL_RKEY,  /* h.len key bytes, 1..MRAIL_WIRE_RKEY_MAX */
};

struct rec_kind {
	uint8_t size; /* 0: not a record type */
	uint8_t flags;
	uint8_t tail;
	const char *bad_flags;
};

#define KIND(t, st, tl) [t] = {sizeof(struct st), 0, tl, NULL}
static const struct rec_kind kinds[MRAIL_WIRE_TYPE_MAX] = {
	KIND(MRAIL_WIRE_EAGER, mrail_wire_eager, TAIL_EAGER),
	[MRAIL_WIRE_RTS] = {sizeof(struct mrail_wire_rts),
			    MRAIL_WIRE_RTS_BUFFERED | MRAIL_WIRE_RTS_ATTENTIVE,
			    TAIL_NONE, "unknown RTS flags"},
	[MRAIL_WIRE_RTR] = {sizeof(struct mrail_wire_rtr), MRAIL_WIRE_RTR_PUT,
			    TAIL_NONE, "unknown RTR flags"},
	KIND(MRAIL_WIRE_DATA, mrail_wire_data, TAIL_NONE),
	KIND(MRAIL_WIRE_HELLO, mrail_wire_hello, TAIL_NONE),
	KIND(MRAIL_WIRE_HELLO_ACK, mrail_wire_hello_ack, TAIL_NONE),
	KIND(MRAIL_WIRE_BYE, mrail_wire_bye, TAIL_NONE),
	KIND(MRAIL_WIRE_BUSY, mrail_wire_busy, TAIL_BUSY),
	KIND(MRAIL_WIRE_EAGER_SYNC, mrail_wire_eager_sync, TAIL_EAGER),
	KIND(MRAIL_WIRE_SYNC_ACK, mrail_wire_sync_ack, TAIL_NONE),
	KIND(MRAIL_WIRE_EAGER_PART, mrail_wire_eager_part, TAIL_PART),
	KIND(MRAIL_WIRE_RKEY, mrail_wire_rkey, TAIL_RKEY),
	KIND(MRAIL_WIRE_GET_FIN, mrail_wire_get_fin, TAIL_NONE),
	KIND(MRAIL_WIRE_PUT_FIN, mrail_wire_put_fin, TAIL_NONE),
	KIND(MRAIL_WIRE_ACK, mrail_wire_ack, TAIL_NONE),
	KIND(MRAIL_WIRE_RAIL_DOWN, mrail_wire_rail_down, TAIL_NONE),
	KIND(MRAIL_WIRE_RDV_DONE, mrail_wire_rdv_done, TAIL_NONE),
	KIND(MRAIL_WIRE_CREDIT, mrail_wire_credit, TAIL_NONE),
	KIND(MRAIL_WIRE_IMM, mrail_wire_imm, TAIL_NONE),
};
#undef KIND

/* The payload after a record's fixed part: checked against the packet
 * and the type's limits; its padded length, or -1 with *why set. */
static long tail_len(const struct mrail_wire_rec_hdr *rh, uint8_t kind,
		     const void *fixed, size_t room, size_t max_eager,
		     const char **why)
{
	size_t n = rh->len;

	switch (kind) {
	case TAIL_NONE:
		if (n == 0)
			return 0;
		*why = "non-zero length field in a fixed-size record";
		return -1;
	case TAIL_PART: {
		struct mrail_wire_eager_part ep;
		memcpy(&ep, fixed, sizeof ep);
		if (n == 0 || ep.msg_len > max_eager ||
		    ep.offset > ep.msg_len || n > ep.msg_len - ep.offset) {
			*why = "eager part empty, or beyond its message or the "
			       "eager limit";
			return -1;
		}
		if (mrail_wire_pad8(n) > room) {
			*why = "eager part payload runs past the packet";
			return -1;
		}
		return (long)mrail_wire_pad8(n);
	}
	case TAIL_BUSY:
		if (n > MRAIL_WIRE_BUSY_MAX) {
			*why = "busy record with more entries than rails";
			return -1;
		}
		if (mrail_wire_pad8(4 * n) > room) {
			*why = "busy record runs past the packet";
			return -1;
		}
		return (long)mrail_wire_pad8(4 * n);
	case TAIL_RKEY:
		if (n == 0 || n > MRAIL_WIRE_RKEY_MAX) {
			*why = "remote key empty or longer than the limit";
			return -1;
		}
		if (mrail_wire_pad8(n) > room) {
			*why = "remote key runs past the packet";
			return -1;
		}
		return (long)mrail_wire_pad8(n);
	}
	*why = "unknown record type";
	return -1;
}

int mrail_wire_next(const void *head, size_t len, size_t *off,
		    size_t max_eager, struct mrail_wire_rec *rec,
		    const char **why)
{
	const uint8_t *p = (const uint8_t *)head + *off;
	size_t left = len - *off;
	struct mrail_wire_rec_hdr rh;

	if (*off >= len)
		return 0;
	if (left < sizeof rh) {
		*why = "truncated record header";
		return -1;
	}
	memcpy(&rh, p, sizeof rh);
	const struct rec_kind *k = &kinds[rh.type % MRAIL_WIRE_TYPE_MAX];
	if (rh.type >= MRAIL_WIRE_TYPE_MAX || k->size == 0) {
		*why = "unknown record type";
		return -1;
	}
	if (rh.flags & ~k->flags) {
		*why = k->bad_flags ? k->bad_flags
				    : "flags set on a record that has none";
		return -1;
	}
	size_t need = k->size;
	if (left < need) {
		*why = "truncated record";
		return -1;
	}
	/* A whole union's worth when the packet has it: one fixed-size copy
	 * the compiler inlines, instead of a call for `need` bytes. */
	if (left >= sizeof rec->u)
		memcpy(&rec->u, p, sizeof rec->u);
	else
		memcpy(&rec->u, p, need);
	rec->type = rh.type;
	rec->has_data = 0;
	rec->data = 0;
	if (k->tail == TAIL_EAGER) {
		/* The common case, kept inline. */
		if (rh.len > max_eager) {
			*why = "eager payload longer than the eager limit";
			return -1;
		}
		if (mrail_wire_pad8(rh.len) > left - need) {
			*why = "eager payload runs past the packet";
			return -1;
		}
		rec->payload = p + need;
		rec->payload_len = rh.len;
		*off += need + mrail_wire_pad8(rh.len);
		return 1;
	}
	long t = rh.len == 0 && k->tail == TAIL_NONE
			 ? 0
			 : tail_len(&rh, k->tail, p, left - need, max_eager, why);
	if (t < 0)
		return -1;
	rec->payload = k->tail == TAIL_NONE ? NULL : p + need;
	rec->payload_len = k->tail == TAIL_NONE	 ? 0
			   : k->tail == TAIL_BUSY ? 4 * (size_t)rh.len
						  : rh.len;
	*off += need + (size_t)t;
	return 1;
}

/* The fixed-size record of `type` at off, whole in the packet, with no
 * flags and no length (as mrail_wire_next requires of these). */
static int lone_fixed(const uint8_t *p, size_t len, size_t off, uint8_t type,
		      size_t size)
{
	struct mrail_wire_rec_hdr rh;
	if (len - off < size)
		return 0;
	memcpy(&rh, p + off, sizeof rh);
	return rh.type == type && !rh.flags && !rh.len;
}

int mrail_wire_lone_eager(const void *head, size_t len, size_t off,
			  size_t max_eager, struct mrail_wire_lone *l)
{
	const uint8_t *p = (const uint8_t *)head;
	const size_t cr = sizeof(struct mrail_wire_credit),
		     eg = sizeof(struct mrail_wire_eager),
		     ak = sizeof(struct mrail_wire_ack);
	struct mrail_wire_rec_hdr rh;

	if (off > len)
		return 0;
	l->has_credit = lone_fixed(p, len, off, MRAIL_WIRE_CREDIT, cr);
	if (l->has_credit) {
		struct mrail_wire_credit c;
		memcpy(&c, p + off, sizeof c);
		l->credit = c.bytes;
		off += cr;
	}
	if (len - off < eg)
		return 0;
	memcpy(&rh, p + off, sizeof rh);
	if (rh.type != MRAIL_WIRE_EAGER || rh.flags || rh.len > max_eager ||
	    mrail_wire_pad8(rh.len) > len - off - eg)
		return 0;
	size_t end = off + eg + mrail_wire_pad8(rh.len);
	l->has_ack = end < len;
	if (l->has_ack) {
		if (len - end != ak || !lone_fixed(p, len, end, MRAIL_WIRE_ACK, ak))
			return 0;
		struct mrail_wire_ack a;
		memcpy(&a, p + end, sizeof a);
		l->ack = a.count;
	}
	struct mrail_wire_rec *rec = &l->eager;
	memcpy(&rec->u.eager, p + off, sizeof rec->u.eager);
	rec->type = MRAIL_WIRE_EAGER;
	rec->has_data = 0;
	rec->data = 0;
	rec->payload = p + off + eg;
	rec->payload_len = rh.len;
	return 1;
}

static void put_rec_hdr(void *buf, uint8_t type, uint32_t len)
{
	struct mrail_wire_rec_hdr h = {type, 0, 0, len};
	memcpy(buf, &h, sizeof h);
}

size_t mrail_wire_put_eager_head(void *buf, uint64_t seq, uint64_t tag,
				 size_t len)
{
	struct mrail_wire_eager r;
	memset(&r, 0, sizeof r);
	put_rec_hdr(&r.h, MRAIL_WIRE_EAGER, (uint32_t)len);
	r.seq = seq;
	r.tag = tag;
	memcpy(buf, &r, sizeof r);
	return sizeof r;
}

size_t mrail_wire_put_eager(void *buf, uint64_t seq, uint64_t tag,
			    size_t len)
{
	size_t r = mrail_wire_put_eager_head(buf, seq, tag, len);
	/* Zero the padding so no stale memory leaves the host. */
	size_t pad = mrail_wire_pad8(len) - len;
	if (pad)
		memset((char *)buf + r + len, 0, pad);
	return mrail_wire_eager_size(len);
}

size_t mrail_wire_put_rts(void *buf, uint64_t seq, uint64_t tag,
			  uint64_t msg_len, uint64_t send_id)
{
	struct mrail_wire_rts r;
	memset(&r, 0, sizeof r);
	put_rec_hdr(&r.h, MRAIL_WIRE_RTS, 0);
	r.seq = seq;
	r.tag = tag;
	r.msg_len = msg_len;
	r.send_id = send_id;
	memcpy(buf, &r, sizeof r);
	return sizeof r;
}

size_t mrail_wire_put_rtr(void *buf, uint64_t send_id, uint64_t recv_id,
			  uint64_t offset, uint64_t len, uint64_t total)
{
	struct mrail_wire_rtr r;
	memset(&r, 0, sizeof r);
	put_rec_hdr(&r.h, MRAIL_WIRE_RTR, 0);
	r.send_id = send_id;
	r.recv_id = recv_id;
	r.offset = offset;
	r.len = len;
	r.total = total;
	memcpy(buf, &r, sizeof r);
	return sizeof r;
}

size_t mrail_wire_put_data(void *buf, uint64_t recv_id, uint64_t offset,
			   uint64_t len)
{
	struct mrail_wire_data r;
	memset(&r, 0, sizeof r);
	put_rec_hdr(&r.h, MRAIL_WIRE_DATA, 0);
	r.recv_id = recv_id;
	r.offset = offset;
	r.len = len;
	memcpy(buf, &r, sizeof r);
	return sizeof r;
}

size_t mrail_wire_put_bye(void *buf)
{
	struct mrail_wire_bye r;
	memset(&r, 0, sizeof r);
	put_rec_hdr(&r.h, MRAIL_WIRE_BYE, 0);
	memcpy(buf, &r, sizeof r);
	return sizeof r;
}

size_t mrail_wire_put_busy(void *buf, const uint32_t *us, unsigned n)
{
	size_t size = mrail_wire_busy_size(n);
	memset(buf, 0, size);
	put_rec_hdr(buf, MRAIL_WIRE_BUSY, n);
	memcpy((char *)buf + sizeof(struct mrail_wire_busy), us, 4 * (size_t)n);
	return size;
}

size_t mrail_wire_put_rts_flags(void *buf, uint64_t seq, uint64_t tag,
				uint64_t msg_len, uint64_t send_id,
				uint8_t flags)
{
	size_t n = mrail_wire_put_rts(buf, seq, tag, msg_len, send_id);
	((struct mrail_wire_rec_hdr *)buf)->flags = flags;
	return n;
}

size_t mrail_wire_put_rtr_flags(void *buf, uint64_t send_id, uint64_t recv_id,
				uint64_t offset, uint64_t len, uint64_t total,
				uint8_t flags)
{
	size_t n = mrail_wire_put_rtr(buf, send_id, recv_id, offset, len, total);
	((struct mrail_wire_rec_hdr *)buf)->flags = flags;
	return n;
}

size_t mrail_wire_put_rkey(void *buf, uint64_t id, uint64_t rails,
			   uint64_t addr, const void *key, size_t key_len)
{
	struct mrail_wire_rkey r;
	size_t size = mrail_wire_rkey_size(key_len);
	memset(buf, 0, size);
	memset(&r, 0, sizeof r);
	put_rec_hdr(&r.h, MRAIL_WIRE_RKEY, (uint32_t)key_len);
	r.id = id;
	r.rails = rails;
	r.addr = addr;
	memcpy(buf, &r, sizeof r);
	memcpy((char *)buf + sizeof r, key, key_len);
	return size;
}

size_t mrail_wire_put_get_fin(void *buf, uint64_t send_id, uint64_t total,
			      uint64_t bytes)
{
	struct mrail_wire_get_fin r;
	memset(&r, 0, sizeof r);
	put_rec_hdr(&r.h, MRAIL_WIRE_GET_FIN, 0);
	r.send_id = send_id;
	r.total = total;
	r.bytes = bytes;
	memcpy(buf, &r, sizeof r);
	return sizeof r;
}

size_t mrail_wire_put_put_fin(void *buf, uint64_t recv_id, uint64_t offset,
			      uint64_t len)
{
	struct mrail_wire_put_fin r;
	memset(&r, 0, sizeof r);
	put_rec_hdr(&r.h, MRAIL_WIRE_PUT_FIN, 0);
	r.recv_id = recv_id;
	r.offset = offset;
	r.len = len;
	memcpy(buf, &r, sizeof r);
	return sizeof r;
}

size_t mrail_wire_put_eager_sync(void *buf, uint64_t seq, uint64_t tag,
				 uint64_t send_id, size_t len)
{
	struct mrail_wire_eager_sync r;
	memset(&r, 0, sizeof r);
	put_rec_hdr(&r.h, MRAIL_WIRE_EAGER_SYNC, (uint32_t)len);
	r.seq = seq;
	r.tag = tag;
	r.send_id = send_id;
	memcpy(buf, &r, sizeof r);
	size_t pad = mrail_wire_pad8(len) - len;
	if (pad)
		memset((char *)buf + sizeof r + len, 0, pad);
	return mrail_wire_eager_sync_size(len);
}

/* The records that are a header and one u64 (CREDIT, SYNC_ACK, IMM, ACK). */
static size_t put_u64_rec(void *buf, uint8_t type, uint64_t v)
{
	struct mrail_wire_imm r; /* the layout they share */
	put_rec_hdr(&r.h, type, 0);
	r.data = v;
	memcpy(buf, &r, sizeof r);
	return sizeof r;
}
_Static_assert(sizeof(struct mrail_wire_credit) == 16 &&
	       sizeof(struct mrail_wire_sync_ack) == 16 &&
	       sizeof(struct mrail_wire_ack) == 16,
	       "one u64 after the header");

size_t mrail_wire_put_credit(void *buf, uint64_t bytes)
{
	return put_u64_rec(buf, MRAIL_WIRE_CREDIT, bytes);
}

size_t mrail_wire_put_sync_ack(void *buf, uint64_t send_id)
{
	return put_u64_rec(buf, MRAIL_WIRE_SYNC_ACK, send_id);
}

size_t mrail_wire_put_imm(void *buf, uint64_t data)
{
	return put_u64_rec(buf, MRAIL_WIRE_IMM, data);
}

size_t mrail_wire_put_eager_part(void *buf, uint64_t seq, uint64_t tag,
				 uint64_t msg_len, uint64_t offset, size_t len)
{
	struct mrail_wire_eager_part r;
	memset(&r, 0, sizeof r);
	put_rec_hdr(&r.h, MRAIL_WIRE_EAGER_PART, (uint32_t)len);
	r.seq = seq;
	r.tag = tag;
	r.msg_len = msg_len;
	r.offset = offset;
	memcpy(buf, &r, sizeof r);
	size_t pad = mrail_wire_pad8(len) - len;
	if (pad)
		memset((char *)buf + sizeof r + len, 0, pad);
	return mrail_wire_eager_part_size(len);
}

size_t mrail_wire_put_ack(void *buf, uint64_t count)
{
	return put_u64_rec(buf, MRAIL_WIRE_ACK, count);
}

size_t mrail_wire_put_rail_down(void *buf, uint32_t rail, uint32_t epoch,
				uint64_t received)
{
	struct mrail_wire_rail_down r;
	memset(&r, 0, sizeof r);
	put_rec_hdr(&r.h, MRAIL_WIRE_RAIL_DOWN, 0);
	r.rail = rail;
	r.epoch = epoch;
	r.received = received;
	memcpy(buf, &r, sizeof r);
	return sizeof r;
}

size_t mrail_wire_put_rdv_done(void *buf, uint64_t send_id, uint64_t total)
{
	struct mrail_wire_rdv_done r;
	memset(&r, 0, sizeof r);
	put_rec_hdr(&r.h, MRAIL_WIRE_RDV_DONE, 0);
	r.send_id = send_id;
	r.total = total;
	memcpy(buf, &r, sizeof r);
	return sizeof r;
}
