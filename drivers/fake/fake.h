/*
 * The fake driver's extra entry point for tests (internal: tests include it
 * by path). docs/driver-fake.md describes the driver.
 */
#ifndef MRAIL_DRIVERS_FAKE_H
#define MRAIL_DRIVERS_FAKE_H

#include <stdint.h>

struct mrail_drv;

struct mrail_fake_counters {
	uint64_t frames;          /* frames handed to the sockets */
	uint64_t body_bytes;      /* body bytes of those frames */
	uint64_t frames_received; /* frames delivered to the engine */
	uint64_t gets, puts;      /* operations posted */
	uint64_t rma_bytes;       /* bytes moved by successful gets/puts */
	uint64_t rma_errors;      /* gets/puts completed with an error */
	uint64_t errors_injected; /* fail_rma_after and drop_after faults */
};

/* drv must be an instance of the fake driver ("fake"). */
void mrail_fake_counters(struct mrail_drv *drv,
			 struct mrail_fake_counters *out);

extern const struct mrail_drv_ops mrail_fake_driver_ops;

#endif
