/*
 * The engine's packet parser (libmrail/wire.c): every frame head a peer
 * sends goes through mrail_wire_check_pkt_hdr and mrail_wire_next, both
 * for data packets (EAGER, EAGER_SYNC, SYNC_ACK, RTS, RTR, DATA, BUSY,
 * BYE, RKEY, GET_FIN, PUT_FIN) and for the handshake (HELLO, HELLO_ACK).
 * Input: one byte choosing the eager limit, then the frame head. A
 * packet the receive path's shortcut takes (mrail_wire_lone_eager) must
 * read, record by record, as the general parser reads it.
 */
#include "fuzz.h"
#include "libmrail/wire.h"

#include <string.h>

static const size_t eager_limits[] = {0, 1, 8, 64, 4096, 32768, 1 << 20,
				      (size_t)-1};

static void check_lone(const uint8_t *head, size_t len, size_t off,
		       size_t max_eager)
{
	struct mrail_wire_lone l;
	struct mrail_wire_rec rec;
	const char *why = NULL;
	if (!mrail_wire_lone_eager(head, len, off, max_eager, &l))
		return;
	if (l.has_credit) {
		FUZZ_CHECK(mrail_wire_next(head, len, &off, max_eager, &rec,
					   &why) == 1);
		FUZZ_CHECK(rec.type == MRAIL_WIRE_CREDIT &&
			   rec.u.credit.bytes == l.credit);
	}
	FUZZ_CHECK(mrail_wire_next(head, len, &off, max_eager, &rec, &why) ==
		   1);
	FUZZ_CHECK(rec.type == MRAIL_WIRE_EAGER && !rec.has_data &&
		   rec.u.eager.seq == l.eager.u.eager.seq &&
		   rec.u.eager.tag == l.eager.u.eager.tag &&
		   rec.payload == l.eager.payload &&
		   rec.payload_len == l.eager.payload_len);
	if (l.has_ack) {
		FUZZ_CHECK(mrail_wire_next(head, len, &off, max_eager, &rec,
					   &why) == 1);
		FUZZ_CHECK(rec.type == MRAIL_WIRE_ACK &&
			   rec.u.ack_rec.count == l.ack);
	}
	FUZZ_CHECK(mrail_wire_next(head, len, &off, max_eager, &rec, &why) ==
		   0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t max_eager = eager_limits[data[0] % 8];
	/* A copy of exactly the head's size, so any over-read is caught. */
	size_t len = size - 1;
	uint8_t *head = malloc(len ? len : 1);
	if (!head)
		return 0;
	memcpy(head, data + 1, len);

	const char *why = NULL;
	size_t off = mrail_wire_check_pkt_hdr(head, len, &why);
	if (!off) {
		FUZZ_CHECK(why != NULL);
		free(head);
		return 0;
	}
	FUZZ_CHECK(off == sizeof(struct mrail_wire_pkt_hdr) && off <= len);
	check_lone(head, len, off, max_eager);
	struct mrail_wire_rec rec;
	int rc;
	while ((rc = mrail_wire_next(head, len, &off, max_eager, &rec,
				     &why)) == 1) {
		FUZZ_CHECK(off <= len && off % 8 == 0);
		FUZZ_CHECK(rec.type > 0 && rec.type < MRAIL_WIRE_TYPE_MAX);
		if (rec.payload) {
			const uint8_t *p = rec.payload;
			FUZZ_CHECK(p >= head && p + rec.payload_len <= head + off);
			fuzz_touch(p, rec.payload_len);
		} else {
			FUZZ_CHECK(rec.payload_len == 0);
		}
		switch (rec.type) {
		case MRAIL_WIRE_EAGER:
		case MRAIL_WIRE_EAGER_SYNC:
			FUZZ_CHECK(rec.payload_len <= max_eager);
			break;
		case MRAIL_WIRE_BUSY:
			FUZZ_CHECK(rec.payload_len <= 4 * MRAIL_WIRE_BUSY_MAX);
			break;
		case MRAIL_WIRE_RKEY:
			FUZZ_CHECK(rec.payload_len >= 1 &&
				   rec.payload_len <= MRAIL_WIRE_RKEY_MAX);
			break;
		case MRAIL_WIRE_RTR:
			FUZZ_CHECK((rec.u.rtr.h.flags & ~MRAIL_WIRE_RTR_PUT) ==
				   0);
			break;
		default:
			break;
		}
	}
	FUZZ_CHECK(rc == 0 ? off >= len : why != NULL);
	free(head);
	return 0;
}
