/*
 * Chunk trace (docs/trace.md): one text line per event, in a file per
 * engine, so that what the strategy planned can be set against what the
 * NICs did. Times are CLOCK_MONOTONIC in microseconds: processes of one
 * kernel (netlab hosts are network namespaces) share that clock, so the
 * sender's and the receivers' files line up without an offset.
 */
#include "libmrail/engine.h"
#include "util/clock.h"
#include "util/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TRACE_FORMAT_VERSION 1

int trace_open(struct mrail_engine *e)
{
	/* Several engines in one process (mrail-peers keeps one per
	 * configuration): a file each, numbered in creation order. */
	static unsigned seq;
	const char *prefix = getenv("MRAIL_TRACE");
	char path[4096];

	if (!prefix || !*prefix)
		return MRAIL_OK;
	snprintf(path, sizeof path, "%s.%ld.%u", prefix, (long)getpid(),
		 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
	e->trace = fopen(path, "w");
	if (!e->trace) {
		mrail_error("MRAIL_TRACE: cannot write '%s': %s", path,
			    strerror(errno));
		return MRAIL_ERR_CONFIG;
	}
	return MRAIL_OK;
}

/* Written with the first event, not at opening: a standalone engine
 * learns its rank in the job (mrail_set_job_rank) after it is created. */
static void header(struct mrail_engine *e)
{
	e->trace_headed = 1;
	fprintf(e->trace,
		"# mrail chunk trace v%d rank=%u size=%u strategy=%s pace=%d\n",
		TRACE_FORMAT_VERSION, e->job_rank, e->job_size,
		e->cfg.strategy && *e->cfg.strategy ? e->cfg.strategy
		: e->strategy ? e->strategy->name : "?", e->pace);
	for (unsigned i = 0; i < e->nlocal; i++)
		fprintf(e->trace, "# nic=%u name=%s\n", i, e->local[i].name);
}

static inline void headed(struct mrail_engine *e)
{
	if (!e->trace_headed)
		header(e);
}

void trace_close(struct mrail_engine *e)
{
	if (e->trace && !e->trace_headed)
		header(e);
	if (e->trace)
		fclose(e->trace);
	e->trace = NULL;
}

static unsigned nic_of(const struct mrail_engine *e, const struct rail *r)
{
	return (unsigned)(r->local - e->local);
}

static double us(double t)
{
	return t * 1e6;
}

void trace_plan_(struct mrail_engine *e, struct gate *g, uint64_t recv_id,
		 uint64_t total, const struct mrail_rail_view *views,
		 unsigned nviews, const struct mrail_chunk *chunks, int cnt)
{
	double now = mrail_now();
	double at[MRAIL_MAX_RAILS];

	headed(e);
	/* The split's own model of the plan: a chunk starts when its rail
	 * is free (busy_until) or when the one before it on that rail ends. */
	for (unsigned v = 0; v < nviews && v < MRAIL_MAX_RAILS; v++)
		at[v] = now + views[v].busy_until;
	fprintf(e->trace, "%.3f plan rank=%u peer=%u id=%llu len=%llu\n",
		us(now), e->job_rank, g->job_rank, (unsigned long long)recv_id,
		(unsigned long long)total);
	for (int k = 0; k < cnt; k++) {
		const struct mrail_chunk *c = &chunks[k];
		if (c->rail >= nviews || c->rail >= MRAIL_MAX_RAILS)
			continue;
		const struct mrail_rail_view *v = &views[c->rail];
		const struct rail *r = g->rails[v->index];
		double start = at[c->rail];
		double end = start + v->predict(v, c->length);
		at[c->rail] = end;
		fprintf(e->trace,
			"%.3f chunk rank=%u peer=%u rail=%u nic=%u id=%llu "
			"off=%llu len=%llu busy=%.3f scale=%.3f pstart=%.3f "
			"pend=%.3f\n",
			us(now), e->job_rank, g->job_rank, v->index,
			r ? nic_of(e, r) : 0u, (unsigned long long)recv_id,
			(unsigned long long)c->offset,
			(unsigned long long)c->length, us(v->busy_until),
			v->time_scale, us(start), us(end));
	}
}

void trace_op_(struct mrail_engine *e, enum trace_event ev,
	       const struct send_op *op)
{
	static const char *const names[] = {
		[TRACE_QUEUE] = "queue", [TRACE_POST] = "post",
		[TRACE_SENT] = "sent", [TRACE_ARRIVE] = "arrive"};
	const struct rail *r = op->rail;

	if (!r || !r->gate)
		return;
	headed(e);
	fprintf(e->trace,
		"%.3f %s rank=%u peer=%u rail=%u nic=%u id=%llu off=%llu "
		"len=%llu\n",
		us(mrail_now()), names[ev], e->job_rank, r->gate->job_rank,
		r->index, nic_of(e, r), (unsigned long long)op->recv_id,
		(unsigned long long)op->offset, (unsigned long long)op->bytes);
}

void trace_arrive_(struct mrail_engine *e, const struct rail *r,
		   uint64_t bytes, double due)
{
	if (!r->gate)
		return;
	headed(e);
	fprintf(e->trace,
		"%.3f arrive rank=%u peer=%u rail=%u nic=%u len=%llu "
		"pend=%.3f\n",
		us(mrail_now()), e->job_rank, r->gate->job_rank, r->index,
		nic_of(e, r), (unsigned long long)bytes, us(due));
}
