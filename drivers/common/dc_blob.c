/*
 * drivers/common: the listener address blob of drivers that name their
 * listeners themselves (fake, ofi): 4 magic bytes, a version byte, the
 * rail index, the payload length, then the payload (a socket name, a
 * libfabric address). Each driver's page in docs/ documents its magic and
 * payload; decoding checks every field before use.
 */
#include "drivers/common/dc.h"
#include "util/log.h"

#include <string.h>

int dc_blob_encode(const struct dc_drv *drv, const struct dc_blob_format *f,
		   int rail, const void *payload, size_t len, void *addr,
		   size_t *addr_len)
{
	uint8_t *b = addr;

	if (*addr_len < DC_BLOB_HDR_LEN + len) {
		mrail_error("%s: address buffer of %zu bytes, need %zu",
			    drv->hooks->name, *addr_len, DC_BLOB_HDR_LEN + len);
		*addr_len = DC_BLOB_HDR_LEN + len;
		return MRAIL_ERR_INVALID;
	}
	memcpy(b, f->magic, 4);
	b[4] = f->version;
	b[5] = (uint8_t)rail;
	b[6] = (uint8_t)len;
	memcpy(b + DC_BLOB_HDR_LEN, payload, len);
	*addr_len = DC_BLOB_HDR_LEN + len;
	return 0;
}

int dc_blob_decode(const struct dc_drv *drv, const struct dc_blob_format *f,
		   const void *addr, size_t len, int *rail,
		   const uint8_t **payload, size_t *payload_len)
{
	const char *name = drv->hooks->name;
	const uint8_t *b = addr;

	if (!b || len < DC_BLOB_HDR_LEN || memcmp(b, f->magic, 4) != 0) {
		mrail_error("%s: peer address of %zu bytes is not %s driver "
			    "address",
			    name, len, f->a_driver);
		return MRAIL_ERR_INVALID;
	}
	if (b[4] != f->version) {
		mrail_error("%s: peer address version %u, this driver "
			    "speaks %u",
			    name, b[4], f->version);
		return MRAIL_ERR_INVALID;
	}
	if (b[6] == 0 || b[6] > f->max_payload ||
	    len != DC_BLOB_HDR_LEN + (size_t)b[6] || b[5] >= f->max_rails) {
		mrail_error("%s: malformed peer address (%s length %u, "
			    "rail %u, %zu bytes)",
			    name, f->payload_what, b[6], b[5], len);
		return MRAIL_ERR_INVALID;
	}
	*rail = b[5];
	*payload = b + DC_BLOB_HDR_LEN;
	*payload_len = b[6];
	return 0;
}
