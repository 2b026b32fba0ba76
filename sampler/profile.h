/*
 * Rail profiles: one-way transfer times measured at a set of sizes, eager
 * and rendezvous separately, plus what identifies the rail and how the
 * figures were obtained. Stored as a small versioned text file (see
 * docs/profile-format.md); this module writes, reads and names them.
 *
 * The reader trusts nothing: any byte sequence either loads into a profile
 * that mrail_profile_check() accepts or fails with "file:line: reason".
 */
#ifndef MRAIL_SAMPLER_PROFILE_H
#define MRAIL_SAMPLER_PROFILE_H

#include <stdint.h>
#include <stdio.h>

#define MRAIL_PROFILE_VERSION 1
/* Limits: beyond them a file is rejected as absurd, not trusted. */
#define MRAIL_PROFILE_MAX_SAMPLES 1024
#define MRAIL_PROFILE_MAX_LINE 256                 /* bytes, without '\n' */
#define MRAIL_PROFILE_MAX_LINES (2 * MRAIL_PROFILE_MAX_SAMPLES + 64)
#define MRAIL_PROFILE_MAX_SIZE (UINT64_C(1) << 40) /* 1 TiB */
#define MRAIL_PROFILE_MAX_TIME 3600.0              /* seconds */
#define MRAIL_PROFILE_MIN_TIME 1e-9                /* below: a clock bug */
#define MRAIL_PROFILE_MAX_MBPS 10000000ULL         /* 10 Tb/s */
/* Room for a complete path built by mrail_profile_path(). */
#define MRAIL_PROFILE_PATH_MAX 4096

/* What identifies a rail's hardware and path; names its profile file. */
struct mrail_rail_identity {
	char driver[32];     /* "tcp", "verbs", ... */
	char local[64];      /* local interface or device, "eth0", "mlx5_0:1" */
	uint64_t link_mbps;  /* local link speed in Mb/s, 0: unknown */
	char peer[128];      /* peer side, e.g. "node2/eth1" */
};

struct mrail_profile_sample {
	uint64_t size;       /* bytes, >= 1, strictly increasing */
	double eager, rdv;   /* one-way seconds; NAN: not measured ("-") */
};

struct mrail_profile {
	struct mrail_rail_identity id;
	char date[24];       /* ISO 8601 UTC, "2024-05-01T12:34:56Z" */
	char tool[64];       /* "mrail-sample 0.1.0" */
	char statistic[128]; /* "median of 50, warm-up excluded" */
	uint64_t eager_threshold; /* eager limit while measuring; 0: unset */
	unsigned nsamples;
	struct mrail_profile_sample samples[MRAIL_PROFILE_MAX_SAMPLES];
};

/* 1 if a sample time was measured (not NAN). */
static inline int mrail_profile_has(double t)
{
	return t == t;
}

/* Sets p->date to the current time. */
void mrail_profile_set_now(struct mrail_profile *p);

/*
 * Checks an in-memory profile against every rule the reader applies (so a
 * profile that passes can be written and read back). MRAIL_OK, or
 * MRAIL_ERR_INVALID with the reason in err (may be NULL).
 */
int mrail_profile_check(const struct mrail_profile *p, char *err,
			size_t errlen);

/*
 * Writes p in the text format. Refuses (MRAIL_ERR_INVALID, nothing
 * written) a profile that mrail_profile_check() rejects; MRAIL_ERR_IO if
 * the stream fails. Times are printed so they read back bit-exact.
 */
int mrail_profile_format(const struct mrail_profile *p, FILE *f);

/*
 * Writes p to path atomically: a temporary file in the same directory,
 * fsync, rename. Readers see the old file or the new one, never a part.
 * The file is mode 0644 (profiles may be shared on a cluster).
 */
int mrail_profile_write(const struct mrail_profile *p, const char *path);

/*
 * Reads a profile from f; name is used in messages only. On failure,
 * *out is unspecified and err holds "name:line: reason".
 * MRAIL_OK, MRAIL_ERR_INVALID (bad content) or MRAIL_ERR_IO.
 */
int mrail_profile_read(FILE *f, const char *name, struct mrail_profile *out,
		       char *err, size_t errlen);

/*
 * mrail_profile_read() on a file. MRAIL_ERR_NOT_FOUND if it does not
 * exist (the caller samples or falls back without alarming anyone).
 */
int mrail_profile_load(const char *path, struct mrail_profile *out,
		       char *err, size_t errlen);

/*
 * The directory profiles live in: $MRAIL_PROFILE_DIR, else
 * $XDG_CACHE_HOME/mrail/profiles, else ~/.cache/mrail/profiles (empty
 * variables and a relative XDG_CACHE_HOME are ignored, as the XDG spec
 * says). Not created. MRAIL_ERR_NOT_FOUND without any home directory,
 * MRAIL_ERR_INVALID if buf is too small.
 */
int mrail_profile_dir(char *buf, size_t len);

/* mkdir -p dir (mode 0755). MRAIL_OK or MRAIL_ERR_IO (errno kept). */
int mrail_profile_mkdir(const char *dir);

/*
 * "dir/<driver>_<local>_<N>Mbps_<peer>.profile": each field keeps
 * [A-Za-z0-9.-] and escapes every other byte as %XX, so the name is safe
 * on any filesystem and distinct identities give distinct names. A name
 * longer than fits a directory entry is cut and ends with a hash of the
 * full identity. MRAIL_ERR_INVALID if buf is too small.
 */
int mrail_profile_path(const char *dir, const struct mrail_rail_identity *id,
		       char *buf, size_t len);

#endif
