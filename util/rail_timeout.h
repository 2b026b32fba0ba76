#ifndef MRAIL_UTIL_RAIL_TIMEOUT_H
#define MRAIL_UTIL_RAIL_TIMEOUT_H

/*
 * MRAIL_RAIL_TIMEOUT (docs/failover.md): seconds after which a rail that
 * shows no sign of life is failed. Read in one place for the engine
 * (failover.c) and the drivers that derive their own timers from it (TCP
 * user timeout), so that the kernel and the engine give up together.
 */
#define MRAIL_RAIL_TIMEOUT_DEFAULT 5.0

/* 0 with *seconds set (the default if unset), -1 if the variable is not
 * a number of seconds in (0, 86400]. */
int mrail_rail_timeout_env(double *seconds);

#endif
