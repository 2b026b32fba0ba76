/*
 * Example external strategy (docs/extending.md, "A strategy as a plugin"):
 * every rendezvous payload in one chunk on the last rail of the gate, eager
 * packets (every queued message that fits) on the last rail when it is
 * idle. It keeps a small per-peer state (packets decided per peer) to show
 * peer_init/peer_fini. Needs only the installed headers; built as
 * example.so:
 *
 *   cc -shared -fPIC -fvisibility=hidden $(pkg-config --cflags mrail) \
 *      -o example.so example_strategy.c
 */
#include <mrail.h>               /* MRAIL_OK, MRAIL_ERR_CONFIG */
#include <mrail/strategy.h>

#include <stddef.h>
#include <stdlib.h>

struct example_peer {
	unsigned peer;
	unsigned long packets;
};

static int example_init(const char *args, void **state)
{
	static int dummy;
	if (args && *args)
		return MRAIL_ERR_CONFIG; /* takes no options */
	*state = &dummy;
	return MRAIL_OK;
}

static void example_fini(void *state)
{
	(void)state;
}

static int example_peer_init(void *state, unsigned peer, void **peer_state)
{
	struct example_peer *p = calloc(1, sizeof *p);
	(void)state;
	if (!p)
		return MRAIL_ERR_NOMEM;
	p->peer = peer;
	*peer_state = p;
	return MRAIL_OK;
}

static void example_peer_fini(void *state, void *peer_state)
{
	(void)state;
	free(peer_state);
}

static int example_eager_rail(void *state, void *peer_state,
			      const struct mrail_rail_view *rails, unsigned n,
			      const struct mrail_send_queue *q, unsigned *count)
{
	struct example_peer *p = peer_state;
	(void)state;
	if (!rails[n - 1].idle)
		return -1;
	*count = mrail_send_queue_fit(q);
	if (p)
		p->packets++;
	return (int)(n - 1);
}

static int example_rdv_split(void *state, void *peer_state,
			     const struct mrail_rail_view *rails, unsigned n,
			     uint64_t length, struct mrail_chunk *out,
			     unsigned max)
{
	(void)state;
	(void)peer_state;
	(void)rails;
	(void)max;
	out[0].rail = n - 1;
	out[0].offset = 0;
	out[0].length = length;
	return 1;
}

__attribute__((visibility("default")))
const struct mrail_strategy_ops mrail_strategy_plugin = {
	.name = "example",
	.abi_version = MRAIL_STRATEGY_ABI_VERSION,
	.init = example_init,
	.fini = example_fini,
	.peer_init = example_peer_init,
	.peer_fini = example_peer_fini,
	.eager_rail = example_eager_rail,
	.rdv_split = example_rdv_split,
};
