/*
 * Addresses: this host's listeners (endpoints.c), the address blob that
 * describes them to peers (address.c, docs/wire.md), and which rails a
 * gate gets from two blobs (pairing.c).
 */
#ifndef MRAIL_LIBMRAIL_ADDRESS_H
#define MRAIL_LIBMRAIL_ADDRESS_H

#include <stddef.h>
#include <stdint.h>

#include "drivers/driver.h"
#include "rails/netif.h"

struct mrail_engine;
struct gate;

/* address.c: the address blob (docs/wire.md) */
struct remote_ep {
	int netif;                 /* -1: a rail the driver listed */
	unsigned addr;             /* address index, or listed rail index */
	int scope;                 /* listed: enum mrail_drv_rail_scope */
	char name[MRAIL_DRV_RAIL_NAME_MAX];
	char fabric[MRAIL_DRV_FABRIC_MAX];
	char ifname[16];
	char driver[16];
	uint8_t blob[256];
	size_t len;
};
struct peer_address {
	uint64_t uuid, host_id;
	unsigned nnetif, nep;      /* nep: every endpoint, listed ones last */
	struct mrail_netif *netif; /* nnetif */
	struct remote_ep *ep;      /* nep */
};
int address_encode(struct mrail_engine *e, void *buf, size_t *len);
int address_parse(const void *blob, size_t len, struct peer_address *pa,
		  const char **why);
void address_free(struct peer_address *pa);

/* endpoints.c */
int endpoints_open(struct mrail_engine *e);
uint64_t endpoints_host_identity(void);

/* pairing.c: which rails a gate gets */
int gate_plan_rails(struct mrail_engine *e, struct gate *g,
		    const struct peer_address *pa, char *why, size_t whylen);
int engine_find_dups(struct mrail_engine *e, const struct peer_address *pas,
		     unsigned n);

#endif
