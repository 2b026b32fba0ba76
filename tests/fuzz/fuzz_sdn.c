/*
 * The SDN side's parsers of bytes from outside: the controller's replies
 * as the client reads them (mpi-binding/sdn/ctrl_client.c, protocol
 * MRSDN/1: split into lines, versions, seq numbers, NACK reasons, limits)
 * and the 48-bit tag codec (mpi-binding/sdn/sdn_tag.c). Input: one byte
 * choosing the request to wait on (HELLO, a PATTERN with sync, or a
 * PATTERN without), then what "the controller" sends before closing.
 */
#include "fuzz.h"
#include "mpi-binding/sdn/ctrl_client.h"
#include "mpi-binding/sdn/sdn_tag.h"

#include <string.h>

static void fuzz_tag(const uint8_t *data, size_t size)
{
	uint8_t mac[6] = {0}, again[6];
	struct mrail_sdn_ctx c;
	memcpy(mac, data, size < 6 ? size : 6);
	if (mrail_sdn_tag_decode(mac, &c) != 0)
		return;
	/* A tag that decodes encodes back to itself, and is a locally
	 * administered unicast address. */
	FUZZ_CHECK(mrail_sdn_tag_encode(&c, again) == 0);
	FUZZ_CHECK(memcmp(mac, again, 6) == 0);
	FUZZ_CHECK((mac[0] & 0x03) == 0x02);
	FUZZ_CHECK(mrail_sdn_prim_name(c.prim) != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	fuzz_tag(data + 1, size - 1);
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return 0;
	/* The reply bytes wait in the socket; the peer end closes, so the
	 * client sees them then EOF and never waits for its timeout. The
	 * input is capped below the socket buffer so the write never blocks. */
	size_t n = size - 1 > 65536 ? 65536 : size - 1;
	if (n && write(sv[1], data + 1, n) != (ssize_t)n) {
		close(sv[0]);
		close(sv[1]);
		return 0;
	}
	shutdown(sv[1], SHUT_WR);
	struct mrail_sdn_ctrl *c;
	if (mrail_sdn_ctrl_adopt(sv[0], 1000, &c)) {
		close(sv[0]);
		close(sv[1]);
		return 0;
	}
	struct mrail_sdn_pair pairs[3] = {{0, 1}, {0, 2}, {1, 3}};
	int rc;
	switch (data[0] % 3) {
	case 0:
		rc = mrail_sdn_ctrl_hello(c, "job", 0, 4, "h0", "r0,r1");
		break;
	case 1:
		rc = mrail_sdn_ctrl_pattern(c, "job", 3, "bcast", 0, pairs, 3, 1);
		break;
	default:
		rc = mrail_sdn_ctrl_pattern(c, "job", 3, "reduce", 0, pairs, 3, 0);
		if (rc == 0)
			rc = mrail_sdn_ctrl_wait(c, "job",
						 mrail_sdn_ctrl_pattern_key(
							 3, "reduce", pairs, 3));
		break;
	}
	/* Whatever happened, a failure names its cause. */
	if (rc)
		FUZZ_CHECK(strlen(mrail_sdn_ctrl_error(c)) > 0);
	mrail_sdn_ctrl_close(c);
	close(sv[1]);
	return 0;
}
