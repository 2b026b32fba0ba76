/*
 * Starting, signalling and reaping the ranks. Each rank leads its own
 * process group, so a signal reaches whatever the rank started too (a shell
 * wrapper and its children), and carries PR_SET_PDEATHSIG so it dies with
 * mrail-run even if mrail-run is SIGKILLed.
 */
#ifndef MRAIL_RUN_RANKS_H
#define MRAIL_RUN_RANKS_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

struct rank_proc {
	unsigned rank;
	const char *host; /* --hosts/--hostfile, for messages; else NULL */
	pid_t pid;      /* 0 if never started */
	bool running;   /* started and not yet reaped */
	int status;     /* wait status once reaped */
	int out_fd;     /* read ends of the rank's stdout/stderr pipes */
	int err_fd;     /* (--tag-output), else -1 */
};

struct spawn_config {
	char *const *env;      /* extra "VAR=VALUE" (-x), applied first */
	size_t nenv;
	unsigned np;
	const char *kvs_addr;
	const char *job_key;   /* 32 hex digits */
	bool tag_output;
	bool pass_stdin;       /* rank 0 reads mrail-run's stdin */
	const sigset_t *child_mask; /* signal mask to restore before exec */
	const struct rlimit *child_nofile; /* descriptor limit to restore */
};

/* What differs between ranks. */
struct rank_launch {
	const char *path;      /* resolved executable (the wrapper with --wrap) */
	char *const *argv;     /* argv[0] as the user wrote it */
	unsigned local_rank;   /* MRAIL_LOCAL_RANK */
	unsigned local_size;   /* MRAIL_LOCAL_SIZE */
	bool path_owned;       /* path is malloc'd */
};

/*
 * Find the program like execvp would (PATH search unless it has a '/').
 * 0 and the path in out, or an errno: ENOENT (not found), EACCES (found but
 * not executable), EISDIR, ENAMETOOLONG.
 */
int resolve_program(const char *name, char *out, size_t out_len);

/*
 * Fork and exec one rank. 0 once the exec succeeded; a positive errno if
 * the exec failed (the child is reaped, p->status set); -1 if fork/pipe
 * failed (logged).
 */
int spawn_rank(const struct spawn_config *cfg, unsigned rank,
	       const struct rank_launch *l, struct rank_proc *p);
/*
 * The same in two steps, so that many ranks exec at once instead of one
 * after the other (1024 ranks took 10 s to start on a loaded 2-core host,
 * each waiting for the previous one's exec): spawn_rank_start forks and
 * returns the read end of the exec-error pipe in *errfd (0, or -1 as
 * above); spawn_rank_check reads it and closes it (0 or a positive errno,
 * as spawn_rank).
 */
int spawn_rank_start(const struct spawn_config *cfg, unsigned rank,
		     const struct rank_launch *l, struct rank_proc *p,
		     int *errfd);
int spawn_rank_check(struct rank_proc *p, int errfd);

/* Signal the rank's process group (the rank and its children). */
void signal_rank(const struct rank_proc *p, int sig);

/* "exited with status 3" / "killed by signal 9 (Killed)". */
void describe_status(int status, char *out, size_t out_len);
/* The shell convention: the exit status, or 128+signal. */
int status_exit_code(int status);

#endif
