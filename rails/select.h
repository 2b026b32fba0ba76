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

/*
 * Connection types, numbered as in the thesis's table 3.1 (these numbers
 * are also mrail_rail_info.conn_type). The table gives "public, other
 * networks" the highest weight, but the thesis's own text (section 3.3
 * constraint 4, 3.3.1, 3.3.2) and the Open MPI code written from it prefer
 * the same network; so does the matching: see mrail_conn_weight().
 */
enum mrail_conn_type {
	MRAIL_CONN_NONE = 0,           /* no common family, private on
	                                  different networks, collision,
	                                  loopback, private with public */
	MRAIL_CONN_PRIVATE_SAME = 1,   /* private IPv4, same network */
	MRAIL_CONN_PUBLIC_SAME = 2,    /* public IPv4 / IPv6, same network */
	MRAIL_CONN_PUBLIC_ROUTED = 3,  /* public IPv4 / IPv6, other networks */
	MRAIL_CONN_PRIVATE_FALLBACK = 4, /* thesis 3.4 last resort, only when
	                                  no other pair works: private IPv4 on
	                                  different (or colliding) networks,
	                                  reachable only if routed */
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
 * interfaces; MRAIL_ERR_INVALID for malformed tables (more than
 * MRAIL_NETIF_MAX interfaces or MRAIL_NETIF_ADDRS_MAX addresses);
 * MRAIL_ERR_NOMEM. Ties between equally good selections go to the lowest
 * indexes of side a, so (a, b) and (b, a) agree whenever the best
 * selection is unique; the engine's fixed orientation covers the rest.
 * More pairs than max: the first max (by a_if) are kept.
 */
int mrail_select_rails(const struct mrail_sel_input *in,
		       struct mrail_sel_pair *out, unsigned max, unsigned *n,
		       char *why, size_t whylen);

/* Connection type of one address pair (x on host a, y on host b, two
 * different hosts). Symmetric in x and y. */
int mrail_conn_type(const struct mrail_netif_addr *x,
		    const struct mrail_netif_addr *y,
		    const struct mrail_netif_addr *dup, unsigned ndup);

/* Edge weight the matching gives a connection type: 0 none, 1 private same
 * network, 2 public routed, 3 public same network (0 for the fallback,
 * which never competes). */
int mrail_conn_weight(int type);

/* "private, same network", ... for logs; "?" for unknown values. */
const char *mrail_conn_type_name(int type);

#endif
