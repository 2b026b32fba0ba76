/* mrail-sample internals. */
#ifndef MRAIL_SAMPLE_TOOL_H
#define MRAIL_SAMPLE_TOOL_H

#include <mrail.h>
#include <stdint.h>

#include "sampler/profile.h"

struct sample_opts {
	uint64_t min_size, max_size;
	double seconds_per_size; /* budget of one size */
	unsigned max_reps;
	const char *rails;       /* "0,2" or NULL = all */
	const char *out_dir;     /* NULL: the profile directory */
	int quiet;
	double budget;           /* seconds per rail, both protocols */
	double left;             /* of the curve being measured: counted from
	                            the agreed medians, so both ranks agree */
};

double sample_now(void);
/* Print "tool: what: error" and exit 1. */
void sample_die(const char *tool, const char *what, int rc);
/* A bootstrapped 2-rank engine whose traffic takes only `rail`, eager up
 * to eager_max bytes (exits with a message on failure). */
mrail_engine_t *sample_engine(const char *tool, unsigned rail,
			      size_t eager_max);

unsigned sample_reps(const struct sample_opts *o, uint64_t size,
		     double est_oneway);
int sample_size(mrail_engine_t *e, uint32_t me, struct sample_opts *o,
		void *buf, uint64_t size, double est_oneway, double *median);

int sample_plot(const struct mrail_profile *p, const char *png);

#endif
