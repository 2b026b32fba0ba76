/*
 * Holding back-to-back sends (docs/bursts.md).
 *
 * Over TCP every packet costs a send() that, on one host, also runs the
 * receiver's half of the stack: 2-5 us, more than the rest of a small
 * message's path. A window of 64 small messages then costs 64 system calls
 * on each side, where one packet could carry them all. So on rails whose
 * driver says each send is a system call (MRAIL_DRV_CAP_SEND_SYSCALL), a
 * message posted to a peer that already had a packet leave since the last
 * progress pass stays queued; the next pass (any test, wait or progress
 * call) sends the queue in as few packets as it fits, through the
 * strategy's rail_idle as any queued message.
 *
 * Held messages wait for the application's next call into the engine. An
 * application that posts and then computes for a long time would see its
 * later messages leave only after the computation, so holding is allowed
 * only while the application has come back within BURST_GAP of its last
 * post BURST_QUICK_MIN times in a row; one slow return turns it off until
 * quick returns are seen again. A first message of a burst always leaves
 * at once (latency is unchanged), and a queue that fills a packet leaves
 * at once too.
 */
#include "libmrail/burst.h"
#include "libmrail/engine.h"

/* Seconds: a return this quick costs a held message about what ten small
 * messages' system calls cost the sender (2-5 us each); 10 us was too
 * tight for sanitizer builds and loaded machines (a single slow return
 * turns holding off for two bursts). */
#define BURST_GAP 50e-6
#define BURST_QUICK_MIN 2

int burst_config(struct mrail_engine *e)
{
	e->burst_hold = 1;
	e->burst_quick = 0;
	e->burst_post_pending = 0;
	return config_env_switch("MRAIL_SEND_HOLD",
				 "1 (hold back-to-back sends to one peer until "
				 "the next progress pass, the default) or 0 "
				 "(send every message when posted)",
				 &e->burst_hold);
}

static int syscall_rail(const struct rail *rail)
{
	return (rail->local->caps.flags & MRAIL_DRV_CAP_SEND_SYSCALL) != 0;
}

static void note_post(struct mrail_engine *e)
{
	e->burst_post_at = engine_now(e);
	e->burst_post_pending = 1;
}

int burst_hold(struct mrail_engine *e, struct gate *g, const struct rail *rail,
	       size_t bytes, size_t room, int all)
{
	if (!e->burst_hold || !syscall_rail(rail) ||
	    g->burst_pass != e->progress_calls ||
	    e->burst_quick < BURST_QUICK_MIN || !all || bytes >= room)
		return 0;
	note_post(e);
	return 1;
}

void burst_sent(struct mrail_engine *e, struct gate *g, const struct rail *rail)
{
	if (!e->burst_hold || !syscall_rail(rail))
		return;
	g->burst_pass = e->progress_calls;
	/* The gap starts when the application gets control back: after the
	 * send, which may have taken longer than the gap itself. */
	engine_clock_tick(e);
	note_post(e);
}

void burst_progress(struct mrail_engine *e)
{
	if (!e->burst_post_pending)
		return;
	e->burst_post_pending = 0;
	if (engine_now(e) - e->burst_post_at <= BURST_GAP)
		e->burst_quick += e->burst_quick < 255;
	else
		e->burst_quick = 0;
}
