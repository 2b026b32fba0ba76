/*
 * mrail_engine_dump: what the engine waits on, for a human diagnosing a
 * stall (a request that does not complete, a rail that looks idle). One
 * line per gate, rail and pending request, under the engine lock, written
 * with write(2) so that it works from a watchdog thread of the caller's
 * while stdio is busy elsewhere. The text is for people; nothing parses
 * it and it may change between versions (docs/api.md).
 */
#include "libmrail/engine.h"
#include "util/clock.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

/* Requests listed per gate and list: enough to see the head of a queue
 * and what is stuck, short enough for a log. */
#define DUMP_REQS_MAX 8

struct dump {
	int fd;
	char buf[1024];
};

__attribute__((format(printf, 2, 3)))
static void out(struct dump *d, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(d->buf, sizeof d->buf, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	size_t len = (size_t)n < sizeof d->buf ? (size_t)n : sizeof d->buf - 1;
	for (size_t off = 0; off < len;) {
		ssize_t w = write(d->fd, d->buf + off, len - off);
		if (w <= 0)
			return;
		off += (size_t)w;
	}
}

static const char *gate_state_name(enum gate_state s)
{
	switch (s) {
	case GATE_IDLE: return "idle";
	case GATE_CONNECTING: return "connecting";
	case GATE_UP: return "up";
	case GATE_CLOSED: return "closed";
	case GATE_FAILED: return "failed";
	}
	return "?";
}

static const char *phase_name(enum req_phase p)
{
	switch (p) {
	case REQ_QUEUED: return "queued";
	case REQ_POSTED: return "posted";
	case REQ_RDV_WAIT_RTR: return "rts-sent";
	case REQ_RDV_ACTIVE: return "rdv-active";
	case REQ_SELF_WAIT: return "self-wait";
	case REQ_SYNC_WAIT: return "sync-wait";
	case REQ_DONE: return "done";
	}
	return "?";
}

static unsigned list_len(const struct mrail_list *l)
{
	unsigned n = 0;
	for (const struct mrail_list *p = l->next; p != l; p = p->next)
		n++;
	return n;
}

static double age(double now, double t)
{
	return t > 0 ? now - t : -1;
}

static void dump_request(struct dump *d, const char *where,
			 const struct mrail_request *r)
{
	out(d, "    %s: %s %s seq %llu tag %#llx len %zu%s%s expected %llu "
	    "done %llu outstanding %d%s%s%s\n", where,
	    r->kind == REQ_SEND ? "send" : "recv", phase_name(r->phase),
	    (unsigned long long)r->seq, (unsigned long long)r->tag, r->len,
	    (r->flags & REQF_DETACHED) ? " detached" : "",
	    (r->flags & REQF_SYNC) ? " sync" : "",
	    (unsigned long long)r->expected,
	    (unsigned long long)r->done_bytes, r->outstanding,
	    r->rdone ? " receiver-has-all" : "", r->failing ? " failing" : "",
	    r->rma ? " rdma-keyed" : "");
	for (unsigned i = 0; i < r->nranges && i < DUMP_REQS_MAX; i++) {
		const struct rdv_range *g = &r->ranges[i];
		out(d, "      range %u: rail %u epoch %u %s off %llu len %llu "
		    "got %llu\n", i, g->rail, g->epoch,
		    g->kind == RANGE_TWO_SIDED ? "two-sided"
		    : g->kind == RANGE_GET     ? "read"
					       : "written",
		    (unsigned long long)g->off, (unsigned long long)g->len,
		    (unsigned long long)g->got);
	}
}

static void dump_rail(struct dump *d, const struct rail *r, double now,
		      const char *what)
{
	unsigned retained = list_len(&r->retained);
	char oldest[48] = "";
	if (retained) {
		const struct send_op *op = mrail_list_first(
			&r->retained, struct send_op, rlink);
		if (op->in_flight)
			snprintf(oldest, sizeof oldest, ", oldest queued");
		else if (op->sent_at <= 0)
			snprintf(oldest, sizeof oldest, ", oldest just sent");
		else
			snprintf(oldest, sizeof oldest, ", oldest sent %.3f s "
				 "ago", now - op->sent_at);
	}
	uint64_t backlog = r->ep && r->local && r->local->ops->ep_backlog
				   ? r->local->ops->ep_backlog(r->ep)
				   : 0;
	out(d, "  %s %u epoch %u: %s%s%s %s <-> %s backlog %llu posted %u "
	    "pace-held %u payload-in-driver %llu; packets sent %u acked %u "
	    "(retained %u%s), "
	    "received %u acked to peer %u; heard %.3f s "
	    "ago; rx waits %u%s; down told %d heard %d settled %d, retry in "
	    "%.3f s; model %.1f MB/s (%s) x %.2f; busy sending %.3f s, "
	    "receiving %.3f s\n", what, r->index, r->epoch,
	    rail_state_name(r->state),
	    r->reconnecting ? " reconnecting" : "",
	    r->fail_pending ? " fail-pending" : "", r->stats.local,
	    r->stats.remote, (unsigned long long)backlog, list_len(&r->posted),
	    r->pace_held, (unsigned long long)r->pace_inflight, r->tx_pseq,
	    r->peer_acked, retained, oldest,
	    r->rx_pseq, r->ack_sent, age(now, r->rx_last), r->rx_count,
	    r->rx_len ? " mid-body" : "", r->down_told, r->down_heard,
	    r->settled, r->retry_at > 0 ? r->retry_at - now : -1,
	    r->bandwidth / 1e6, r->model_source ? r->model_source : "?",
	    r->time_scale, r->local ? busy_until(r, VIEW_SEND, now) : 0,
	    r->local ? busy_until(r, VIEW_RECV, now) : 0);
}

static void dump_gate(struct dump *d, const struct gate *g, double now)
{
	out(d, "%s: %s, %u of %u rail(s) up%s; next send seq %llu, next "
	    "receive seq %llu, early arrivals %u; credit to send %llu, "
	    "granted %llu, held %llu; detached copies %llu B; pulls %u, "
	    "to pull %u; owed notices %u%s\n", g->name,
	    gate_state_name(g->state), g->rails_up, g->nrails,
	    g->scheduled ? ", scheduled" : "",
	    (unsigned long long)g->next_send_seq,
	    (unsigned long long)g->next_recv_seq, list_len(&g->ooo),
	    (unsigned long long)g->cr_tx, (unsigned long long)g->cr_granted,
	    (unsigned long long)g->cr_held,
	    (unsigned long long)g->detached_bytes, g->pulls,
	    list_len(&g->pull_wait), list_len(&g->owed),
	    g->all_down_since > 0 ? ", every rail down" : "");
	for (unsigned i = 0; i < g->nrails; i++)
		if (g->rails[i])
			dump_rail(d, g->rails[i], now, "rail");
	const struct mrail_list *pos;
	for (pos = g->dead_rails.next; pos != &g->dead_rails; pos = pos->next)
		dump_rail(d, mrail_list_entry(pos, struct rail, link), now,
			  "earlier connection of rail");
	unsigned n = 0, total = list_len(&g->sendq);
	for (pos = g->sendq.next; pos != &g->sendq && n < DUMP_REQS_MAX;
	     pos = pos->next, n++)
		dump_request(d, "send queue",
			     mrail_list_entry(pos, struct mrail_request, link));
	if (total > n)
		out(d, "    send queue: %u more\n", total - n);
	/* Detached copies are the engine's own (their callers are done):
	 * counted; the requests someone waits on are listed. */
	unsigned detached = 0, listed = 0, hidden = 0;
	for (pos = g->rdv.next; pos != &g->rdv; pos = pos->next) {
		const struct mrail_request *r =
			mrail_list_entry(pos, struct mrail_request, gate_link);
		if (r->flags & REQF_DETACHED) {
			if (detached++ == 0)
				dump_request(d, "in flight (first copy)", r);
		} else if (listed < DUMP_REQS_MAX) {
			dump_request(d, "in flight", r);
			listed++;
		} else {
			hidden++;
		}
	}
	if (detached > 1 || hidden)
		out(d, "    in flight: %u detached cop%s, %u more not listed\n",
		    detached, detached == 1 ? "y" : "ies", hidden);
}

void engine_dump(struct mrail_engine *e, int fd)
{
	ENGINE_ASSERT_LOCKED(e);
	struct dump d = {.fd = fd};
	double now = mrail_now();
	out(&d, "mrail engine rank %u of %u at %.6f: %u peer(s); posted "
	    "receives %u, unexpected %u, probed %u; detached copies %llu B; "
	    "credit granted %llu, held %llu; pulls %u; chunks held by pacing "
	    "%u; rail timeout %.1f s\n", e->job_rank, e->job_size, now,
	    e->ngates,
	    list_len(&e->posted), list_len(&e->unexpected),
	    list_len(&e->probed), (unsigned long long)e->detached_bytes,
	    (unsigned long long)e->cr_granted, (unsigned long long)e->cr_held,
	    e->pulls, e->pace_held, e->rail_timeout);
	for (uint32_t i = 0; i < e->ngates; i++) {
		const struct gate *g = e->gates[i];
		if (!g || g->self || g->state == GATE_IDLE)
			continue;
		dump_gate(&d, g, now);
	}
}
