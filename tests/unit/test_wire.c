/*
 * The engine's packet parser: every record round-trips, every malformation
 * is rejected with a reason, and random garbage never reads out of bounds
 * (run under ASan in CI).
 */
#include "../check.h"
#include "libmrail/wire.h"

#include <string.h>

static uint8_t pkt[4096];

static int parse_all(const uint8_t *p, size_t len, const char **why)
{
	struct mrail_wire_rec rec;
	size_t off = mrail_wire_check_pkt_hdr(p, len, why);
	int n = 0, rc;
	if (!off)
		return -1;
	while ((rc = mrail_wire_next(p, len, &off, 1 << 20, &rec, why)) == 1)
		n++;
	return rc < 0 ? -1 : n;
}

static void roundtrip(void)
{
	const char *why = NULL;
	struct mrail_wire_rec rec;
	size_t n = mrail_wire_put_pkt_hdr(pkt);
	n += mrail_wire_put_eager(pkt + n, 5, 0xdeadbeef, 3);
	memcpy(pkt + n - 8, "abc", 3);
	n += mrail_wire_put_rts(pkt + n, 6, 7, 1ULL << 33, 99);
	n += mrail_wire_put_rtr(pkt + n, 1, 2, 3, 4, 5);
	n += mrail_wire_put_bye(pkt + n);
	CHECK(parse_all(pkt, n, &why) == 4);

	size_t off = mrail_wire_check_pkt_hdr(pkt, n, &why);
	CHECK(mrail_wire_next(pkt, n, &off, 1 << 20, &rec, &why) == 1);
	CHECK(rec.type == MRAIL_WIRE_EAGER && rec.u.eager.seq == 5 &&
	      rec.u.eager.tag == 0xdeadbeef && rec.payload_len == 3 &&
	      !memcmp(rec.payload, "abc", 3));
	CHECK(mrail_wire_next(pkt, n, &off, 1 << 20, &rec, &why) == 1);
	CHECK(rec.type == MRAIL_WIRE_RTS && rec.u.rts.msg_len == 1ULL << 33 &&
	      rec.u.rts.send_id == 99);
	CHECK(mrail_wire_next(pkt, n, &off, 1 << 20, &rec, &why) == 1);
	CHECK(rec.type == MRAIL_WIRE_RTR && rec.u.rtr.total == 5);

	/* BUSY: an odd count of entries, padded. */
	const uint32_t us[3] = {7, 0, UINT32_MAX};
	n = mrail_wire_put_pkt_hdr(pkt);
	n += mrail_wire_put_busy(pkt + n, us, 3);
	CHECK(n == 8 + mrail_wire_busy_size(3) && mrail_wire_busy_size(3) == 24);
	n += mrail_wire_put_rts(pkt + n, 6, 7, 1ULL << 33, 99);
	CHECK(parse_all(pkt, n, &why) == 2);
	off = mrail_wire_check_pkt_hdr(pkt, n, &why);
	CHECK(mrail_wire_next(pkt, n, &off, 1 << 20, &rec, &why) == 1);
	CHECK(rec.type == MRAIL_WIRE_BUSY && rec.payload_len == 12 &&
	      !memcmp(rec.payload, us, 12));
	CHECK(mrail_wire_next(pkt, n, &off, 1 << 20, &rec, &why) == 1);
	CHECK(rec.type == MRAIL_WIRE_RTS);
	n = mrail_wire_put_pkt_hdr(pkt);
	n += mrail_wire_put_busy(pkt + n, us, 0);
	CHECK(parse_all(pkt, n, &why) == 1);

	/* Synchronous sends: EAGER_SYNC (payload like EAGER) and SYNC_ACK. */
	n = mrail_wire_put_pkt_hdr(pkt);
	n += mrail_wire_put_eager_sync(pkt + n, 9, 10, 11, 5);
	memcpy(pkt + n - 8, "hello", 5);
	n += mrail_wire_put_sync_ack(pkt + n, 12);
	CHECK(n == 8 + 40 + 16);
	CHECK(parse_all(pkt, n, &why) == 2);
	off = mrail_wire_check_pkt_hdr(pkt, n, &why);
	CHECK(mrail_wire_next(pkt, n, &off, 1 << 20, &rec, &why) == 1);
	CHECK(rec.type == MRAIL_WIRE_EAGER_SYNC && rec.u.eager_sync.seq == 9 &&
	      rec.u.eager_sync.tag == 10 && rec.u.eager_sync.send_id == 11 &&
	      rec.payload_len == 5 && !memcmp(rec.payload, "hello", 5));
	CHECK(mrail_wire_next(pkt, n, &off, 1 << 20, &rec, &why) == 1);
	CHECK(rec.type == MRAIL_WIRE_SYNC_ACK && rec.u.sync_ack.send_id == 12);
}

static void expect_reject(const uint8_t *p, size_t len, const char *reason);

/* EAGER_SYNC is bounded like EAGER; SYNC_ACK is fixed-size. */
static void sync_rejects(void)
{
	size_t n = mrail_wire_put_pkt_hdr(pkt);
	size_t m = n + mrail_wire_put_eager_sync(pkt + n, 0, 0, 1, 16);
	uint32_t lie = 17;
	memcpy(pkt + n + 4, &lie, 4);
	expect_reject(pkt, m, "runs past the packet");
	m = n + mrail_wire_put_sync_ack(pkt + n, 1);
	expect_reject(pkt, m - 1, "truncated record");
	pkt[n + 4] = 1;
	expect_reject(pkt, m, "non-zero length");
}

/* CREDIT (v5): a fixed 16-byte record that round-trips its grant. */
static void credit_record(void)
{
	const char *why = NULL;
	struct mrail_wire_rec rec;
	size_t n = mrail_wire_put_pkt_hdr(pkt);
	size_t m = n + mrail_wire_put_credit(pkt + n, 4u << 20);
	CHECK(m - n == 16);
	m += mrail_wire_put_eager(pkt + m, 0, 1, 0);
	CHECK(parse_all(pkt, m, &why) == 2);
	size_t off = mrail_wire_check_pkt_hdr(pkt, m, &why);
	CHECK(mrail_wire_next(pkt, m, &off, 1 << 20, &rec, &why) == 1);
	CHECK(rec.type == MRAIL_WIRE_CREDIT && rec.u.credit.bytes == 4u << 20);
	m = n + mrail_wire_put_credit(pkt + n, 1);
	expect_reject(pkt, m - 1, "truncated record");
	pkt[n + 4] = 8;
	expect_reject(pkt, m, "non-zero length");
}

static void expect_reject(const uint8_t *p, size_t len, const char *reason)
{
	const char *why = NULL;
	CHECK(parse_all(p, len, &why) < 0);
	CHECK(why != NULL);
	if (!strstr(why, reason)) {
		fprintf(stderr, "expected '%s', got '%s'\n", reason, why);
		exit(1);
	}
}

static void rejections(void)
{
	size_t n = mrail_wire_put_pkt_hdr(pkt);
	expect_reject(pkt, 4, "shorter than its header");
	pkt[3] ^= 0xff; /* byte 0 is the version, 1..3 the magic */
	expect_reject(pkt, n, "bad packet magic");
	pkt[3] ^= 0xff;
	pkt[0] = (uint8_t)(pkt[0] + 1); /* the next version */
	expect_reject(pkt, n, "unsupported wire version");
	n = mrail_wire_put_pkt_hdr(pkt);

	size_t m = n + mrail_wire_put_rts(pkt + n, 1, 2, 3, 4);
	expect_reject(pkt, m - 1, "truncated record");
	expect_reject(pkt, n + 4, "truncated record header");
	pkt[n] = 42;
	expect_reject(pkt, m, "unknown record type");
	mrail_wire_put_rts(pkt + n, 1, 2, 3, 4);
	pkt[n + 4] = 1; /* a length in a fixed-size record */
	expect_reject(pkt, m, "non-zero length");

	m = n + mrail_wire_put_eager(pkt + n, 0, 0, 16);
	uint32_t lie = 17;
	memcpy(pkt + n + 4, &lie, 4);
	expect_reject(pkt, m, "runs past the packet");
	lie = 2u << 20;
	memcpy(pkt + n + 4, &lie, 4);
	expect_reject(pkt, sizeof pkt, "longer than the eager limit");

	const uint32_t us[MRAIL_WIRE_BUSY_MAX + 1] = {0};
	m = n + mrail_wire_put_busy(pkt + n, us, 3);
	expect_reject(pkt, m - 1, "runs past the packet");
	expect_reject(pkt, n + 8, "runs past the packet");
	m = n + mrail_wire_put_busy(pkt + n, us, MRAIL_WIRE_BUSY_MAX + 1);
	expect_reject(pkt, m, "more entries than rails");
}

static void garbage(void)
{
	uint64_t s = 12345;
	for (int iter = 0; iter < 200000; iter++) {
		size_t len = 8 + (size_t)(s % 200);
		size_t n = mrail_wire_put_pkt_hdr(pkt);
		for (size_t i = n; i < len; i++) {
			s = s * 6364136223846793005ULL + 1442695040888963407ULL;
			pkt[i] = (uint8_t)(s >> 56);
			/* Bias towards valid types so parsing gets deep. */
			if ((i - n) % 8 == 0 && (s >> 20) % 2)
				pkt[i] = (uint8_t)(1 + (s >> 30) % 8);
		}
		/* Exact-size copy: ASan catches any read past the end. */
		uint8_t *copy = malloc(len);
		memcpy(copy, pkt, len);
		const char *why;
		(void)parse_all(copy, len, &why);
		free(copy);
	}
}

/* Failover records (v5): ACK, RAIL_DOWN, RDV_DONE; the packet number. */
static void failover_records(void)
{
	const char *why = NULL;
	struct mrail_wire_rec rec;
	size_t n = mrail_wire_put_pkt_hdr(pkt);
	CHECK(mrail_wire_pkt_pseq(pkt) == 0);
	mrail_wire_set_pkt_pseq(pkt, 0xfffffffeu);
	CHECK(mrail_wire_pkt_pseq(pkt) == 0xfffffffeu);
	n += mrail_wire_put_ack(pkt + n, 41);
	n += mrail_wire_put_rail_down(pkt + n, 2, 7, 1234);
	n += mrail_wire_put_rdv_done(pkt + n, 99, 1ULL << 35);
	CHECK(n == 8 + 16 + 24 + 24);
	CHECK(parse_all(pkt, n, &why) == 3);
	size_t off = mrail_wire_check_pkt_hdr(pkt, n, &why);
	CHECK(mrail_wire_next(pkt, n, &off, 1 << 20, &rec, &why) == 1);
	CHECK(rec.type == MRAIL_WIRE_ACK && rec.u.ack_rec.count == 41);
	CHECK(mrail_wire_next(pkt, n, &off, 1 << 20, &rec, &why) == 1);
	CHECK(rec.type == MRAIL_WIRE_RAIL_DOWN && rec.u.rail_down.rail == 2 &&
	      rec.u.rail_down.epoch == 7 && rec.u.rail_down.received == 1234);
	CHECK(mrail_wire_next(pkt, n, &off, 1 << 20, &rec, &why) == 1);
	CHECK(rec.type == MRAIL_WIRE_RDV_DONE && rec.u.rdv_done.send_id == 99 &&
	      rec.u.rdv_done.total == 1ULL << 35);
	/* Fixed-size: truncated or with a length is rejected. */
	expect_reject(pkt, n - 1, "truncated record");
	pkt[8 + 4] = 1;
	expect_reject(pkt, n, "non-zero length");
	/* Version 4 packets are refused. */
	uint32_t v4 = MRAIL_WIRE_MAGIC | 4u;
	memcpy(pkt, &v4, 4);
	expect_reject(pkt, n, "unsupported wire version");
}

/* IMM (v6): 16 bytes, its 64 bits back; flags or a length are refused.
 * (Whether a message record follows is recv.c's rule: bad-input.) */
static void imm_record(void)
{
	const char *why = NULL;
	struct mrail_wire_rec rec;
	size_t n = mrail_wire_put_pkt_hdr(pkt);
	CHECK(mrail_wire_put_imm(pkt + n, 0xfedcba9876543210ull) == 16);
	n += 16;
	n += mrail_wire_put_eager(pkt + n, 1, 2, 0);
	size_t off = mrail_wire_check_pkt_hdr(pkt, n, &why);
	CHECK(mrail_wire_next(pkt, n, &off, 1 << 20, &rec, &why) == 1);
	CHECK(rec.type == MRAIL_WIRE_IMM &&
	      rec.u.imm.data == 0xfedcba9876543210ull && !rec.has_data);
	CHECK(mrail_wire_next(pkt, n, &off, 1 << 20, &rec, &why) == 1);
	CHECK(rec.type == MRAIL_WIRE_EAGER && !rec.has_data);
	pkt[8 + 1] = 1; /* flags */
	CHECK(parse_all(pkt, n, &why) < 0);
	pkt[8 + 1] = 0;
	pkt[8 + 4] = 8; /* len */
	CHECK(parse_all(pkt, n, &why) < 0);
	pkt[8 + 4] = 0;
	CHECK(parse_all(pkt, 8 + 12, &why) < 0); /* truncated */
}

/* RTS flags BUFFERED (v7) and ATTENTIVE (v8) round-trip; any other RTS
 * flag is refused. */
static void rts_flags(void)
{
	const char *why = NULL;
	struct mrail_wire_rec rec;
	size_t n = mrail_wire_put_pkt_hdr(pkt);
	size_t m = n + mrail_wire_put_rts_flags(pkt + n, 1, 2, 3, 4,
						MRAIL_WIRE_RTS_BUFFERED);
	CHECK(m - n == sizeof(struct mrail_wire_rts));
	size_t off = mrail_wire_check_pkt_hdr(pkt, m, &why);
	CHECK(mrail_wire_next(pkt, m, &off, 1 << 20, &rec, &why) == 1);
	CHECK(rec.type == MRAIL_WIRE_RTS &&
	      rec.u.rts.h.flags == MRAIL_WIRE_RTS_BUFFERED &&
	      rec.u.rts.seq == 1 && rec.u.rts.tag == 2 &&
	      rec.u.rts.msg_len == 3 && rec.u.rts.send_id == 4);
	m = n + mrail_wire_put_rts(pkt + n, 1, 2, 3, 4);
	off = mrail_wire_check_pkt_hdr(pkt, m, &why);
	CHECK(mrail_wire_next(pkt, m, &off, 1 << 20, &rec, &why) == 1);
	CHECK(rec.u.rts.h.flags == 0);
	m = n + mrail_wire_put_rts_flags(pkt + n, 1, 2, 3, 4,
					 MRAIL_WIRE_RTS_ATTENTIVE);
	off = mrail_wire_check_pkt_hdr(pkt, m, &why);
	CHECK(mrail_wire_next(pkt, m, &off, 1 << 20, &rec, &why) == 1);
	CHECK(rec.u.rts.h.flags == MRAIL_WIRE_RTS_ATTENTIVE);
	pkt[n + 1] = 0x04;
	expect_reject(pkt, m, "unknown RTS flags");
	/* EAGER has no flags at all. */
	m = n + mrail_wire_put_eager(pkt + n, 1, 2, 0);
	pkt[n + 1] = MRAIL_WIRE_RTS_BUFFERED;
	expect_reject(pkt, m, "flags set on a record that has none");
}

/* The small-message packet the receive path takes without the general
 * loop (mrail_wire_lone_eager): what it accepts, it reads as the loop
 * does; anything else it leaves to the loop. */
static int lone(size_t len, size_t max_eager, struct mrail_wire_lone *l)
{
	return mrail_wire_lone_eager(pkt, len, sizeof(struct mrail_wire_pkt_hdr),
				     max_eager, l);
}

static void lone_eager(void)
{
	struct mrail_wire_lone l;
	const char *why = NULL;
	size_t h = mrail_wire_put_pkt_hdr(pkt), n, e;

	/* EAGER alone, then with an ACK, then CREDIT, EAGER, ACK. */
	n = h + mrail_wire_put_eager(pkt + h, 9, 0x1234, 5);
	memcpy(pkt + n - 8, "hello", 5);
	CHECK(lone(n, 1 << 20, &l) == 1 && !l.has_credit && !l.has_ack);
	CHECK(l.eager.type == MRAIL_WIRE_EAGER && l.eager.u.eager.seq == 9 &&
	      l.eager.u.eager.tag == 0x1234 && l.eager.payload_len == 5 &&
	      !memcmp(l.eager.payload, "hello", 5) && !l.eager.has_data);
	e = n;
	n += mrail_wire_put_ack(pkt + n, 77);
	CHECK(lone(n, 1 << 20, &l) == 1 && l.has_ack && l.ack == 77 &&
	      !l.has_credit);
	CHECK(parse_all(pkt, n, &why) == 2);
	CHECK(lone(n, 4, &l) == 0); /* beyond the eager limit: the loop's */
	CHECK(lone(n - 1, 1 << 20, &l) == 0);
	CHECK(lone(e - 1, 1 << 20, &l) == 0); /* payload cut short */
	n = h + mrail_wire_put_credit(pkt + h, 1u << 20);
	n += mrail_wire_put_eager(pkt + n, 10, 1, 0);
	n += mrail_wire_put_ack(pkt + n, 3);
	CHECK(lone(n, 1 << 20, &l) == 1 && l.has_credit &&
	      l.credit == 1u << 20 && l.has_ack && l.ack == 3 &&
	      l.eager.payload_len == 0 && l.eager.u.eager.seq == 10);
	CHECK(parse_all(pkt, n, &why) == 3);

	/* Other layouts and malformed fields go to the general loop. */
	n = h + mrail_wire_put_eager(pkt + h, 1, 2, 0);
	size_t at = n;
	n += mrail_wire_put_ack(pkt + n, 1);
	n += mrail_wire_put_ack(pkt + n, 2);
	CHECK(lone(n, 1 << 20, &l) == 0); /* two ACKs */
	n = at + mrail_wire_put_credit(pkt + at, 1); /* CREDIT after EAGER */
	CHECK(lone(n, 1 << 20, &l) == 0);
	n = at + mrail_wire_put_ack(pkt + at, 1);
	pkt[at + 4] = 8; /* an ACK with a length */
	CHECK(lone(n, 1 << 20, &l) == 0);
	expect_reject(pkt, n, "non-zero length");
	pkt[at + 4] = 0;
	pkt[at + 1] = 1; /* an ACK with flags */
	CHECK(lone(n, 1 << 20, &l) == 0);
	pkt[at + 1] = 0;
	pkt[h + 1] = 1; /* an EAGER with flags */
	CHECK(lone(n, 1 << 20, &l) == 0);
	expect_reject(pkt, n, "flags set on a record that has none");
	n = h + mrail_wire_put_imm(pkt + h, 5);
	n += mrail_wire_put_eager(pkt + n, 1, 2, 0);
	CHECK(lone(n, 1 << 20, &l) == 0); /* IMM before it */
	n = h + mrail_wire_put_eager_sync(pkt + h, 1, 2, 3, 0);
	CHECK(lone(n, 1 << 20, &l) == 0); /* a synchronous send */
	CHECK(lone(h, 1 << 20, &l) == 0);
	CHECK(lone(h + 7, 1 << 20, &l) == 0);
}

int main(void)
{
	roundtrip();
	rts_flags();
	imm_record();
	failover_records();
	rejections();
	sync_rejects();
	credit_record();
	lone_eager();
	garbage();
	puts("test_wire: ok");
	return 0;
}
