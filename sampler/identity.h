#ifndef MRAIL_SAMPLER_IDENTITY_H
#define MRAIL_SAMPLER_IDENTITY_H

#include "mrail.h"
#include "sampler/profile.h"

/* The profile identity of rail number `rail` described by info. */
void mrail_rail_identity_of(const struct mrail_rail_info *info, unsigned rail,
			    struct mrail_rail_identity *id);

#endif
