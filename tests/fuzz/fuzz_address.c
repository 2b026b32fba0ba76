/*
 * Address blobs (libmrail/address.c, version 3): what every rank reads
 * from the bootstrap about every other rank, then the listener addresses
 * inside them as the tcp driver decodes them before connecting.
 */
#include "fuzz.h"
#include "drivers/tcp/tcp_internal.h"
#include "libmrail/engine.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct peer_address pa;
	const char *why = NULL;
	uint8_t *blob = malloc(size ? size : 1);
	if (!blob)
		return 0;
	memcpy(blob, data, size);
	if (address_parse(blob, size, &pa, &why)) {
		FUZZ_CHECK(why != NULL);
		FUZZ_CHECK(pa.netif == NULL && pa.ep == NULL);
		free(blob);
		return 0;
	}
	FUZZ_CHECK(pa.nnetif <= MRAIL_NETIF_MAX);
	for (unsigned i = 0; i < pa.nnetif; i++) {
		const struct mrail_netif *n = &pa.netif[i];
		FUZZ_CHECK(strnlen(n->name, sizeof n->name) < sizeof n->name);
		FUZZ_CHECK(n->naddrs <= MRAIL_NETIF_ADDRS_MAX);
	}
	for (unsigned i = 0; i < pa.nep; i++) {
		const struct remote_ep *ep = &pa.ep[i];
		FUZZ_CHECK(ep->netif < (int)pa.nnetif && ep->netif >= -1);
		FUZZ_CHECK(ep->len <= sizeof ep->blob);
		FUZZ_CHECK(strlen(ep->driver) < sizeof ep->driver);
		FUZZ_CHECK(strlen(ep->name) < sizeof ep->name);
		FUZZ_CHECK(strlen(ep->fabric) < sizeof ep->fabric);
		FUZZ_CHECK(strlen(ep->ifname) < sizeof ep->ifname);
		if (ep->netif >= 0)
			FUZZ_CHECK(ep->addr < pa.netif[ep->netif].naddrs);
		if (!strcmp(ep->driver, "tcp")) {
			struct sockaddr_storage ss;
			socklen_t sl;
			char name[128];
			if (tcp_blob_decode(ep->blob, ep->len, &ss, &sl) == 0) {
				FUZZ_CHECK(sl <= sizeof ss);
				tcp_sockaddr_name(&ss, name, sizeof name);
				FUZZ_CHECK(strlen(name) < sizeof name);
			}
		}
	}
	address_free(&pa);
	free(blob);
	return 0;
}
