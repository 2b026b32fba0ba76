/*
 * libmrail strategy plugin interface (installed as <mrail/strategy.h>).
 *
 * A strategy takes the scheduling decisions of the engine. The engine
 * calls it at its decision points; the strategy sees each rail of a gate
 * (the connection to one peer over one NIC pair) through a read-only view
 * (never driver internals) and answers with a rail choice, a number of
 * queued messages to pack, or a chunk plan.
 *
 * Decision points (NewMadeleine's, seed 004):
 *  - eager_rail: a message was just posted to a gate whose send queue
 *    holds eager messages or rendezvous requests: which idle rail takes a
 *    packet now, and how many queued messages (from the head, in order)
 *    it aggregates.
 *  - rail_idle (optional): a rail of a gate with queued messages has just
 *    become idle: send a packet on it now (and how many messages it
 *    packs), or leave it idle (for example to keep small messages on a
 *    faster rail).
 *  - rdv_split: a rendezvous request has just been matched by the
 *    receiver: which rails carry which byte ranges of the payload.
 *  - eager_offload (optional): an eager message at the head of the queue
 *    could leave in parts, each copied and posted by a worker thread on
 *    an idle core (offload, docs/offload.md): in which parts, if at all.
 *  - eager_max (optional): a rail of a gate has come up and the rails'
 *    profiles set the eager/rendezvous switch: the largest message sent
 *    eagerly to this peer, knowing how this strategy cuts a rendezvous.
 * plus init/fini (one state per engine) and, optionally, peer_init/
 * peer_fini (one state per gate, i.e. per peer, created with the gate).
 *
 * This header needs only <stddef.h> and <stdint.h>; return codes
 * (MRAIL_OK, MRAIL_ERR_CONFIG, ...) are in <mrail.h>. A plugin calls
 * nothing in libmrail. See docs/extending.md.
 */
#ifndef MRAIL_PUBLIC_STRATEGY_H
#define MRAIL_PUBLIC_STRATEGY_H

#include <stddef.h>
#include <stdint.h>

#define MRAIL_STRATEGY_ABI_VERSION 4
#define MRAIL_MAX_RAILS 64
#define MRAIL_MAX_CHUNKS 256

/* A rail's sampled model: opaque here (defined inside libmrail, in
 * sampler/predict.h, for the built-in strategies). */
struct mrail_rail_model;

/* What a strategy may know about one rail of a gate. */
struct mrail_rail_view {
	unsigned index;         /* rail index within the gate */
	int idle;               /* nothing waiting to leave on this rail
				   but the payload pacing lets its driver
				   hold (docs/pacing.md): a packet posted
				   now leaves at once or right after it */
	uint64_t backlog_bytes; /* bytes posted, not yet handed to the NIC */
	double bandwidth;       /* bytes/s, asymptotic (profile, in-band
				   samples or nominal) */
	double latency;         /* seconds, small-message one-way time */
	size_t eager_max;       /* eager/rendezvous switch on this rail */
	/* The rail's sampled model, opaque outside libmrail (the built-in
	 * strategies read it); plugins use predict() below. NULL when the
	 * rail has only nominal figures. */
	const struct mrail_rail_model *model;
	/*
	 * Seconds from now until the rail is free for the transfer being
	 * decided, predicted by the engine and corrected from completions.
	 * eager_rail/rail_idle (sending): until what this host has queued on
	 * the rail has left. rdv_split (receiving): until the payload chunks
	 * this host already requested on the rail have arrived, or the
	 * sender's own queue on it has left (as the sender reported in its
	 * request), whichever is later.
	 */
	double busy_until;
	/* Measured / predicted duration of recent chunks on this rail
	 * (exponential average; 1 until something was measured). */
	double time_scale;
	/* Predicted seconds to move `bytes` on this rail once it is free:
	 * time_scale x the model's prediction. Never NULL. */
	double (*predict)(const struct mrail_rail_view *v, uint64_t bytes);
};

struct mrail_chunk {
	unsigned rail;
	uint64_t offset;
	uint64_t length;
};

/* The head of a gate's send queue, as the eager decisions see it. */
#define MRAIL_QUEUE_VIEW 64
struct mrail_send_queue {
	unsigned known;              /* messages described: the first
					min(queued, MRAIL_QUEUE_VIEW), >= 1 */
	int more;                    /* more are queued behind them */
	const size_t *record_bytes;  /* wire bytes of each of the `known`
					messages, in queue order */
	size_t packet_room;          /* record bytes one packet carries */
};

/* How many messages from the head fit in one packet (>= 1 when the queue
 * is not empty: the head always fits). */
static inline unsigned mrail_send_queue_fit(const struct mrail_send_queue *q)
{
	size_t used = 0;
	unsigned k = 0;
	while (k < q->known && used + q->record_bytes[k] <= q->packet_room)
		used += q->record_bytes[k++];
	return k > 0 ? k : 1;
}

/* Wire bytes of the first `count` messages of q (count <= q->known). */
static inline uint64_t mrail_send_queue_bytes(const struct mrail_send_queue *q,
					      unsigned count)
{
	uint64_t b = 0;
	for (unsigned k = 0; k < count && k < q->known; k++)
		b += q->record_bytes[k];
	return b;
}

struct mrail_strategy_ops {
	const char *name;
	unsigned abi_version; /* MRAIL_STRATEGY_ABI_VERSION */

	/* args: the part after "name:" in MRAIL_STRATEGY ("" if none).
	 * Unknown keys or bad values: return MRAIL_ERR_CONFIG and log. */
	int (*init)(const char *args, void **state);
	void (*fini)(void *state);

	/* Optional (may be NULL): per-peer state, made when the gate to peer
	 * `peer` is created, freed when the engine is destroyed. A non-zero
	 * return fails that gate. Without peer_init, peer_state is NULL. */
	int (*peer_init)(void *state, unsigned peer, void **peer_state);
	void (*peer_fini)(void *state, void *peer_state);

	/* Before a packet leaves: the view index of an idle rail of
	 * rails[0..n) to send one now, packing *count (>= 1; the engine
	 * caps it at what fits) messages from the head of q; -1 to keep
	 * them queued until a rail becomes idle. */
	int (*eager_rail)(void *state, void *peer_state,
			  const struct mrail_rail_view *rails, unsigned n,
			  const struct mrail_send_queue *q, unsigned *count);

	/* Optional (NULL: eager_rail decides): rails[idle] has just become
	 * idle and q is not empty. Return 1 to send a packet of *count
	 * messages on it now, 0 to leave it idle. */
	int (*rail_idle)(void *state, void *peer_state,
			 const struct mrail_rail_view *rails, unsigned n,
			 unsigned idle, const struct mrail_send_queue *q,
			 unsigned *count);

	/* Split a rendezvous payload of `length` bytes (> 0) into at most
	 * `max` chunks covering [0, length) exactly, in offset order.
	 * Returns the chunk count (>= 1). */
	int (*rdv_split)(void *state, void *peer_state,
			 const struct mrail_rail_view *rails, unsigned n,
			 uint64_t length, struct mrail_chunk *out, unsigned max);

	/* Optional (NULL: never in parts). Offload (ABI 3): the eager
	 * message of `length` bytes at the head of the queue may leave in
	 * parts, each copied and posted by its own worker thread on an idle
	 * core, at once; handing a part to a worker is predicted to cost
	 * `t_offload` seconds before its copy starts. Return k in [2, max]
	 * with out[0..k) on distinct idle rails covering [0, length) in
	 * offset order, no part empty, to send it so; 0 to send it whole
	 * from the calling thread (eager_rail / rail_idle then place it).
	 * max = min(idle rails, idle workers) >= 2. Only asked when offload
	 * is on (MRAIL_OFFLOAD_CORES) and workers are idle. */
	int (*eager_offload)(void *state, void *peer_state,
			     const struct mrail_rail_view *rails, unsigned n,
			     uint64_t length, double t_offload,
			     struct mrail_chunk *out, unsigned max);

	/* Optional (NULL: the smallest rails[i].eager_max). ABI 4: the
	 * largest message sent eagerly to this peer, asked when one of its
	 * rails comes up, with the views of its rails that are up (as if
	 * free: busy_until 0). Only asked when the threshold is automatic
	 * (MRAIL_EAGER_MAX unset); the engine caps the answer at the
	 * smallest rails[i].eager_max (what one packet carries on every
	 * rail). A strategy that cuts rendezvous payloads over several
	 * rails can switch earlier than any rail alone would. */
	size_t (*eager_max)(void *state, void *peer_state,
			    const struct mrail_rail_view *rails, unsigned n);
};

/*
 * External strategies (plugins). When MRAIL_STRATEGY names no built-in,
 * the engine looks in each directory of MRAIL_STRATEGY_PATH
 * (colon-separated, in order) for `<name>.so`, then
 * `libmrail-strategy-<name>.so`, dlopens the first file found
 * (RTLD_NOW | RTLD_LOCAL) and reads the symbol MRAIL_STRATEGY_PLUGIN_SYMBOL:
 *
 *   __attribute__((visibility("default")))
 *   const struct mrail_strategy_ops mrail_strategy_plugin = {...};
 *
 * ABI rules: abi_version must equal this header's
 * MRAIL_STRATEGY_ABI_VERSION (checked before anything else is read; `name`
 * and `abi_version` stay the first two fields in every version), `name`
 * must equal the requested name and every op not marked optional must be
 * non-NULL; otherwise engine creation fails with MRAIL_ERR_CONFIG. Any
 * change to the ops table, the views, the send-queue view or the chunk
 * struct bumps MRAIL_STRATEGY_ABI_VERSION. Plugins call nothing in
 * libmrail (the static inline helpers above are part of this header); the
 * engine keeps the object loaded until the engine is destroyed (after
 * fini).
 */
#define MRAIL_STRATEGY_PLUGIN_SYMBOL "mrail_strategy_plugin"

#endif /* MRAIL_PUBLIC_STRATEGY_H */
