/*
 * Rail models under mpirun. An engine created without a bootstrap has no
 * in-band sampling of its own, so rails without a profile kept the link's
 * nominal speed: on netlab every veth says 10 Gbit/s, the split strategy
 * cut each message in equal halves and the slow rail set the pace (the
 * 82 MB/s of 1000 + 400 Mbit/s rails). Here, once every process of the
 * world is added, each process samples its rails with one partner on
 * another node, through mrail_sample_peer().
 *
 * Pairing, computed alike by every process from the host names PMIx gives:
 * in rank order, each unpaired rank takes the lowest unpaired rank on
 * another node; a rank left over (odd count, or a crowded node) is then
 * served by the lowest rank on another node. Each process runs its
 * sessions in this one global order, so the lowest unfinished session
 * always has both sides at it: no deadlock. A job on one node samples
 * nothing (its rails are local).
 */
#include "mtl_mrail.h"
#include "mpi-binding/common/sample_pairs.h"

#include "ompi/proc/proc.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/util/output.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Node of each world rank: a number per distinct host name (the node
 * id key is not given for remote processes by Open MPI 4.1's runtime). */
static int node_ids(size_t n, struct ompi_proc_t **procs, uint32_t *node,
		    mrail_peer_t *peer)
{
	char **host = calloc(n, sizeof *host);
	int rc = host ? 0 : -1;
	for (size_t i = 0; i < n && !rc; i++) {
		uint32_t vpid = procs[i]->super.proc_name.vpid;
		char *h = NULL;
		if (vpid >= n || host[vpid]) {
			rc = -1;
			break;
		}
		OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, OPAL_PMIX_HOSTNAME,
					       &procs[i]->super.proc_name, &h,
					       OPAL_STRING);
		if (rc != OPAL_SUCCESS || !h) {
			rc = -1;
			break;
		}
		host[vpid] = h;
		peer[vpid] = (mrail_peer_t)((uintptr_t)procs[i]->proc_endpoints
						    [OMPI_PROC_ENDPOINT_TAG_MTL] -
					    1);
	}
	for (size_t r = 0; r < n && !rc; r++) {
		node[r] = (uint32_t)r;
		for (size_t q = 0; q < r; q++)
			if (!strcmp(host[q], host[r])) {
				node[r] = node[q];
				break;
			}
	}
	for (size_t r = 0; host && r < n; r++)
		free(host[r]);
	free(host);
	return rc;
}

void mtl_mrail_sample_rails(size_t nprocs, struct ompi_proc_t **procs)
{
	size_t n = ompi_process_info.num_procs;
	uint32_t me = OMPI_PROC_MY_NAME->vpid;
	if (nprocs != n || n < 2)
		return;
	uint32_t *node = calloc(n, sizeof *node);
	mrail_peer_t *peer = calloc(n, sizeof *peer);
	struct sample_pair *s = calloc(n, sizeof *s);
	if (!node || !peer || !s || node_ids(n, procs, node, peer)) {
		opal_output(0, "mtl mrail: no host names from PMIx: rails keep "
			    "their profile or nominal model");
		goto out;
	}
	size_t ns = sample_pairs(n, node, s);
	for (size_t i = 0; i < ns; i++) {
		if (s[i].a != me && s[i].b != me)
			continue;
		uint32_t other = s[i].a == me ? s[i].b : s[i].a;
		int rc = mrail_sample_peer(ompi_mtl_mrail.engine, peer[other],
					   me < other);
		if (rc != MRAIL_OK)
			opal_output(0, "mtl mrail: sampling rails with rank %u: "
				    "%s", other, mrail_strerror(rc));
		else if (ompi_mtl_mrail.verbose > 0)
			opal_output(0, "mtl mrail: in-band sampling with rank %u "
				    "done (rails with profiles keep them)",
				    other);
	}
out:
	free(node);
	free(peer);
	free(s);
}
