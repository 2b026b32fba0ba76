/*
 * Address selection: which local/peer interface pairs become rails.
 * After Peiselt, "Improved Address Selection for Message Passing in
 * Multi-Domain Cluster Systems" (shared/seeds/002), chapter 3: a bipartite
 * graph of local and peer interfaces weighted by connection type, then a
 * matching of maximum cardinality and, among those, maximum total weight.
 *
 * The function is deterministic and pure: both ends of a pair compute it
 * (the engine always passes the end with the smaller uuid as "a"), so they
 * agree on the rails without talking.
 */
#ifndef MRAIL_RAILS_SELECT_H
#define MRAIL_RAILS_SELECT_H

#include "rails/netif.h"

/* Connection types = edge weights (thesis, table in chapter 3). */
enum mrail_conn_type {
	MRAIL_CONN_NONE = 0,           /* no common family, private on
	                                  different networks, collision */
	MRAIL_CONN_PRIVATE_SAME = 1,   /* private IPv4, same network */
	MRAIL_CONN_PUBLIC_SAME = 2,    /* public IPv4 / IPv6, same network */
	MRAIL_CONN_PUBLIC_ROUTED = 3,  /* public IPv4 / IPv6, other networks */
};

struct mrail_sel_pair {
	unsigned a_if, a_addr; /* interface of host a and which address */
	unsigned b_if, b_addr;
	int type;              /* enum mrail_conn_type (> 0) */
};

struct mrail_sel_input {
	const struct mrail_netif *a; unsigned na;
	const struct mrail_netif *b; unsigned nb;
	/* Addresses held by more than one host of the job: private networks
	 * containing one of them are refused (thesis: colliding addresses). */
	const struct mrail_netif_addr *dup; unsigned ndup;
};

/*
 * Fill out[0..*n) (at most max pairs, ordered by a_if) with the chosen
 * rails. Returns 0, or MRAIL_ERR_NOT_FOUND when no pair can work — after
 * trying the thesis's fallback — with `why` naming both hosts'
 * interfaces.
 */
int mrail_select_rails(const struct mrail_sel_input *in,
		       struct mrail_sel_pair *out, unsigned max, unsigned *n,
		       char *why, size_t whylen);

/* Edge weight of one address pair (exposed for tests and logs). */
int mrail_conn_type(const struct mrail_netif_addr *x,
		    const struct mrail_netif_addr *y,
		    const struct mrail_netif_addr *dup, unsigned ndup);

#endif
