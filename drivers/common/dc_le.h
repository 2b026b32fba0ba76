/*
 * drivers/common: little-endian fields of driver wire formats (frame
 * headers, address blobs, remote keys), byte by byte so they are neither
 * alignment- nor host-order-dependent.
 */
#ifndef MRAIL_DRIVERS_COMMON_DC_LE_H
#define MRAIL_DRIVERS_COMMON_DC_LE_H

#include <stdint.h>

static inline void dc_put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void dc_put_le64(uint8_t *p, uint64_t v)
{
	dc_put_le32(p, (uint32_t)v);
	dc_put_le32(p + 4, (uint32_t)(v >> 32));
}

static inline uint32_t dc_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t dc_get_le64(const uint8_t *p)
{
	return (uint64_t)dc_get_le32(p) | (uint64_t)dc_get_le32(p + 4) << 32;
}

#endif
