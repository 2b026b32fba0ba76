/*
 * Transfer-time prediction for one rail (NewMadeleine, Aumage et al.,
 * sections II-B and III-C): the time of a message of any size is the
 * linear interpolation between the two measured sizes around it, on the
 * eager curve below the rail's rendezvous threshold and on the rendezvous
 * curve from it on.
 *
 * Guarantees, relied upon by the strategies' split search (a dichotomy
 * that needs time to grow with size):
 *   - mrail_predict() is non-decreasing in size, across samples, beyond
 *     both ends and across the threshold;
 *   - at a sampled size it returns the (fitted) sample exactly;
 *   - it is finite and >= 0 for every size.
 */
#ifndef MRAIL_SAMPLER_PREDICT_H
#define MRAIL_SAMPLER_PREDICT_H

#include "sampler/profile.h"

#include <stdint.h>

enum mrail_model_source {
	MRAIL_MODEL_NOMINAL, /* driver's link speed and latency, no samples */
	MRAIL_MODEL_PROFILE, /* a profile file */
	MRAIL_MODEL_INBAND,  /* samples taken at init (set by the caller) */
};

enum mrail_threshold_source {
	MRAIL_THRESHOLD_NONE,    /* one curve only: the engine's limit rules */
	MRAIL_THRESHOLD_DERIVED, /* where rendezvous becomes faster for good */
	MRAIL_THRESHOLD_USER,    /* mrail_model_set_threshold() */
};

/*
 * One curve: times at increasing sizes. The times are the isotonic
 * (pool-adjacent-violators) least-squares fit of the measured ones, so
 * non-decreasing: noise that makes a larger message look faster is
 * averaged with its neighbours, not kept. Where the measures already grow,
 * they are kept exactly.
 */
struct mrail_curve {
	unsigned n;      /* 0: not measured */
	uint64_t *size;  /* strictly increasing */
	double *time;    /* seconds, non-decreasing */
	double tail;     /* seconds per byte beyond the last size */
	int log2_first;  /* >= 0: size[i] == 2^(log2_first + i), O(1)
			  * lookup; -1: binary search */
};

struct mrail_rail_model {
	int source;           /* enum mrail_model_source */
	struct mrail_curve eager, rdv;
	uint64_t threshold;   /* sizes >= threshold use the rdv curve */
	int threshold_source; /* enum mrail_threshold_source */
	/* Eager predictions are capped at rdv(threshold), so that time does
	 * not drop where the curves switch (with a user threshold above the
	 * crossing, eager may be slower than rendezvous just above). */
	double eager_cap;
};

/*
 * Model from a profile (which mrail_profile_check() must accept, else
 * MRAIL_ERR_INVALID), threshold derived. MRAIL_OK, MRAIL_ERR_INVALID or
 * MRAIL_ERR_NOMEM. Free with mrail_model_free().
 */
int mrail_model_from_profile(const struct mrail_profile *p,
			     struct mrail_rail_model **out);

/*
 * Model for a rail without profile: time = latency + size / bandwidth
 * (bytes/s in [1, 1e18], seconds in [0, 3600], else MRAIL_ERR_INVALID).
 */
int mrail_model_from_nominal(double bandwidth, double latency,
			     struct mrail_rail_model **out);

void mrail_model_free(struct mrail_rail_model *m);

/* Predicted one-way time, in seconds, of a message of size bytes. */
double mrail_predict(const struct mrail_rail_model *m, uint64_t size);

/* One curve alone (n > 0): interpolation, clamp below, tail above. */
double mrail_predict_curve(const struct mrail_curve *c, uint64_t size);

/*
 * The first size sent by rendezvous. Derived: the smallest size from
 * which the interpolated rendezvous curve is faster than the eager one
 * and stays so up to the last eager sample (both curves are linear
 * between sampled sizes, so the crossing is exact); one past the last
 * eager sample if rendezvous is not faster there (eager was not measured
 * beyond). Or set by the user. UINT64_MAX when the model has no
 * rendezvous curve, 0 when it has no eager curve (the threshold is then
 * the engine's business, threshold_source NONE).
 */
uint64_t mrail_model_threshold(const struct mrail_rail_model *m);

/* Overrides the derived threshold (e.g. MRAIL_EAGER_MAX set by the user). */
void mrail_model_set_threshold(struct mrail_rail_model *m, uint64_t size);

/* Asymptotic bandwidth in bytes/s: the slope the large-size curve
 * extrapolates with (its last segment). */
double mrail_model_bandwidth(const struct mrail_rail_model *m);

/* The asymptotic bandwidth, at most 1.5 times the slope from the
 * smallest to the largest sample: for models from few, noisy samples
 * (in-band), whose last segment one slow point can flatten. */
double mrail_model_bandwidth_checked(const struct mrail_rail_model *m);

/* Latency in seconds: the predicted time of the smallest message. */
double mrail_model_latency(const struct mrail_rail_model *m);

#endif
