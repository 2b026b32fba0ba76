/*
 * Bootstrap: the job-wide address exchange (put/get/fence of opaque blobs),
 * provided by whatever launched the process: the embedded mrail-run
 * key-value service ("kvs") or a PMIx server (mpirun, srun: "pmix"). A new
 * bootstrap is one folder plus one line in bootstrap/registry.c.
 */
#ifndef MRAIL_BOOTSTRAP_H
#define MRAIL_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#define MRAIL_BOOTSTRAP_KEY_MAX 255
#define MRAIL_BOOTSTRAP_VALUE_MAX 65536

struct mrail_bootstrap;

struct mrail_bootstrap_ops {
	const char *name;
	/* 1 if this process was launched by this bootstrap (environment). */
	int (*detect)(void);
	/* Connect to the launcher. 0 or a negative MRAIL_ERR_*. */
	int (*init)(struct mrail_bootstrap **bs);
	void (*fini)(struct mrail_bootstrap *bs);
	uint32_t (*rank)(struct mrail_bootstrap *bs);
	uint32_t (*size)(struct mrail_bootstrap *bs);
	/* Publish key=value (visible to others after the next fence). */
	int (*put)(struct mrail_bootstrap *bs, const char *key,
		   const void *val, size_t len);
	/* Wait until every rank has called fence (collective). */
	int (*fence)(struct mrail_bootstrap *bs);
	/* Optional (NULL: fence() alone): fence(), calling idle(arg, fd)
	 * again and again while it waits; fd becomes readable when the
	 * fence may have completed (-1: none). idle() may sleep in poll()
	 * on fd and descriptors of its own. For the caller's protocol to
	 * go on meanwhile: a rank still finishing its part (waiting for an
	 * acknowledgement, a reconnection handshake) must not be stalled
	 * by one already in the fence. */
	int (*fence_idle)(struct mrail_bootstrap *bs,
			  void (*idle)(void *arg, int fd), void *arg);
	/* Read a key published before the last fence; *len: capacity in,
	 * length out. MRAIL_ERR_NOT_FOUND if absent. */
	int (*get)(struct mrail_bootstrap *bs, const char *key, void *val,
		   size_t *len);
	/* Optional (NULL: get() per key): n gets in as few round trips as
	 * the launcher allows. keys[i] into vals[i]; lens[i] capacity in,
	 * length out; rcs[i] what get() would have returned for it. MRAIL_OK
	 * when every rcs[i] is set, else the error that broke the exchange. */
	int (*get_many)(struct mrail_bootstrap *bs, uint32_t n,
			const char *const *keys, void *const *vals,
			size_t *lens, int *rcs);
	/* Optional (NULL if the launcher cannot tell): this rank's index
	 * among the job's ranks on its host, and how many those are. */
	uint32_t (*local_rank)(struct mrail_bootstrap *bs);
	uint32_t (*local_size)(struct mrail_bootstrap *bs);
};

/* bootstrap/batch.c: ops->get_many, or ops->get per key without it. */
int mrail_bootstrap_get_many(const struct mrail_bootstrap_ops *ops,
			     struct mrail_bootstrap *bs, uint32_t n,
			     const char *const *keys, void *const *vals,
			     size_t *lens, int *rcs);

/* bootstrap/registry.c: the first bootstrap whose detect() says yes. */
const struct mrail_bootstrap_ops *mrail_bootstrap_detect(void);

#endif
