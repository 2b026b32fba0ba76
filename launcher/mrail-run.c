/*
 * mrail-run: start N ranks (on this host, or on others through a --wrap
 * command such as ssh or ip netns exec) with the key-value service they
 * bootstrap through, and turn their fates into one exit status.
 *
 * One thread, one poll loop: signals (signalfd, so SIGCHLD and Ctrl-C are
 * ordinary events), the KVS (its epoll fd), and with --tag-output the ranks'
 * output pipes. Nothing in the loop blocks on a rank.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bootstrap/kvs/kvs_server.h"
#include "launcher/hosts.h"
#include "launcher/options.h"
#include "launcher/output.h"
#include "launcher/ranks.h"
#include "mrail.h"
#include "util/auth.h"
#include "util/clock.h"
#include "util/log.h"

/* Cap on what ranks may store in the KVS (keys + values). */
#define KVS_STORE_MAX ((size_t)256 << 20)
#define EXIT_TIMEOUT 124

struct job {
	const struct run_options *opt;
	struct rank_proc *ranks;
	struct rank_launch *launch; /* per rank: what to exec, local rank */
	char ***wrapped;      /* np --wrap command lines, else NULL */
	struct tagged_stream *streams; /* 2 per rank with --tag-output */
	unsigned running;
	int exit_code;        /* first failure's code; 0 while none */
	double deadline;      /* --timeout, INFINITY if none */
	double kill_at;       /* SIGKILL the rest then; INFINITY if not
	                         terminating */
	bool terminating;
	bool killed;          /* SIGKILL already sent */
	struct mrail_kvs_server *kvs;
	int sigfd;
};

static void fail_job(struct job *job, int code)
{
	if (!job->exit_code)
		job->exit_code = code;
}

/* SIGTERM (or the signal mrail-run got) now, SIGKILL after the grace. */
static void terminate(struct job *job, int sig)
{
	for (unsigned r = 0; r < job->opt->np; r++)
		signal_rank(&job->ranks[r], sig);
	if (!job->terminating) {
		job->terminating = true;
		job->kill_at = mrail_now() + job->opt->grace;
		mrail_kvs_server_job_ending(job->kvs);
	}
}

static void kill_all(struct job *job)
{
	for (unsigned r = 0; r < job->opt->np; r++)
		signal_rank(&job->ranks[r], SIGKILL);
	job->killed = true;
}

static void rank_exited(struct job *job, struct rank_proc *p)
{
	char what[128];
	bool failed = !WIFEXITED(p->status) || WEXITSTATUS(p->status) != 0;

	describe_status(p->status, what, sizeof what);
	if (!failed || job->terminating) {
		/* Ends we caused are not news. */
		mrail_debug("rank %u (pid %d) %s", p->rank, (int)p->pid, what);
		return;
	}
	if (p->host)
		fprintf(stderr, "mrail-run: rank %u (pid %d, host %s) %s\n",
			p->rank, (int)p->pid, p->host, what);
	else
		fprintf(stderr, "mrail-run: rank %u (pid %d) %s\n", p->rank,
			(int)p->pid, what);
	fail_job(job, status_exit_code(p->status));
	if (!job->opt->keep_going && job->running > 0) {
		fprintf(stderr, "mrail-run: terminating the other %u rank%s\n",
			job->running, job->running == 1 ? "" : "s");
		terminate(job, SIGTERM);
	}
}

static void reap(struct job *job)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		/* Unknown pids are orphans of ranks (we are a subreaper). */
		for (unsigned r = 0; r < job->opt->np; r++) {
			struct rank_proc *p = &job->ranks[r];
			if (p->running && p->pid == pid) {
				p->running = false;
				p->status = status;
				job->running--;
				rank_exited(job, p);
				break;
			}
		}
	}
}

static void got_signal(struct job *job, int sig)
{
	if (job->terminating && sig != SIGCHLD) {
		/* Asked twice: stop waiting for a graceful end. */
		if (!job->killed) {
			fprintf(stderr, "mrail-run: got SIG%s while ending "
				"the job: killing the ranks now\n",
				sigabbrev_np(sig));
			kill_all(job);
		}
		return;
	}
	fprintf(stderr, "mrail-run: got SIG%s: forwarding to %u rank%s\n",
		sigabbrev_np(sig), job->running, job->running == 1 ? "" : "s");
	fail_job(job, 128 + sig);
	terminate(job, sig);
}

static void read_signals(struct job *job)
{
	struct signalfd_siginfo si;

	while (read(job->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
		if (si.ssi_signo == SIGCHLD)
			reap(job);
		else
			got_signal(job, (int)si.ssi_signo);
	}
	reap(job); /* SIGCHLDs coalesce: always look */
}

static void check_deadlines(struct job *job)
{
	double now = mrail_now();

	if (!job->terminating && now >= job->deadline) {
		fprintf(stderr, "mrail-run: job exceeded --timeout %g s; "
			"terminating %u rank%s\n", job->opt->timeout,
			job->running, job->running == 1 ? "" : "s");
		fail_job(job, EXIT_TIMEOUT);
		terminate(job, SIGTERM);
	}
	if (job->terminating && !job->killed && now >= job->kill_at &&
	    job->running > 0) {
		fprintf(stderr, "mrail-run: %u rank%s still running after the "
			"%g s grace period: sending SIGKILL\n", job->running,
			job->running == 1 ? "" : "s", job->opt->grace);
		kill_all(job);
	}
}

static int poll_timeout_ms(const struct job *job)
{
	double next = !job->terminating ? job->deadline
			: job->killed	 ? INFINITY
					 : job->kill_at;
	int ms = mrail_kvs_server_timeout_ms(job->kvs);

	if (!isinf(next)) {
		double left = next - mrail_now();
		int t = left <= 0 ? 0 : left > 3600 ? 3600000
						    : (int)(left * 1000) + 1;
		if (ms < 0 || t < ms)
			ms = t;
	}
	return ms;
}

static void event_loop(struct job *job)
{
	unsigned nstreams = job->opt->tag_output ? 2 * job->opt->np : 0;
	struct pollfd *fds = calloc(2 + nstreams, sizeof *fds);
	unsigned *which = calloc(nstreams + 1, sizeof *which);

	if (!fds || !which) {
		fprintf(stderr, "mrail-run: out of memory\n");
		fail_job(job, 1);
		terminate(job, SIGKILL);
		job->killed = true;
	}
	while (job->running > 0) {
		nfds_t n = 0;
		if (fds) {
			fds[n++] = (struct pollfd){.fd = job->sigfd,
						   .events = POLLIN};
			fds[n++] = (struct pollfd){
				.fd = mrail_kvs_server_fd(job->kvs),
				.events = POLLIN};
			for (unsigned i = 0; i < nstreams; i++) {
				if (job->streams[i].fd < 0)
					continue;
				which[n - 2] = i;
				fds[n++] = (struct pollfd){
					.fd = job->streams[i].fd,
					.events = POLLIN};
			}
		}
		if (poll(fds, n, poll_timeout_ms(job)) < 0 && errno != EINTR) {
			fprintf(stderr, "mrail-run: poll: %s\n",
				strerror(errno));
			break;
		}
		for (nfds_t i = 2; i < n; i++)
			if (fds[i].revents)
				tagged_stream_pump(&job->streams[which[i - 2]]);
		mrail_kvs_server_dispatch(job->kvs);
		read_signals(job);
		check_deadlines(job);
	}
	/* Output written before a rank exited is still in its pipe. */
	for (unsigned i = 0; i < nstreams; i++) {
		tagged_stream_pump(&job->streams[i]);
		tagged_stream_close(&job->streams[i]);
	}
	free(fds);
	free(which);
}

/* Block the signals we read from a signalfd; children get `orig` back. */
static int setup_signals(sigset_t *orig)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	if (sigprocmask(SIG_BLOCK, &set, orig) < 0)
		return -1;
	/* A rank closing a --tag-output pipe must not kill us. */
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

static int exec_error_code(int err)
{
	return err == ENOENT ? 127 : 126;
}

/* What the shell would say: a bare name is looked up in PATH. */
static const char *exec_error_text(const char *prog, int err)
{
	if (err == ENOENT && !strchr(prog, '/'))
		return "command not found";
	return strerror(err);
}

/*
 * Each rank costs a KVS connection, and with --tag-output two pipes: 1024
 * ranks exceed the usual soft limit of 1024 descriptors. Raise it as far as
 * allowed; ranks get the original back.
 */
/* Ranks forked before the first of them is checked to have exec'd. */
#define SPAWN_BATCH 64

static void raise_fd_limit(struct rlimit *orig, unsigned np, bool tagged)
{
	struct rlimit want;
	rlim_t need = 64 + SPAWN_BATCH + (rlim_t)np * (tagged ? 3 : 1);

	if (getrlimit(RLIMIT_NOFILE, orig) < 0) {
		orig->rlim_cur = orig->rlim_max = RLIM_INFINITY;
		return;
	}
	if (orig->rlim_cur == RLIM_INFINITY || orig->rlim_cur >= need)
		return;
	want = *orig;
	want.rlim_cur = orig->rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &want) < 0 || want.rlim_cur < need)
		mrail_warn("descriptor limit %llu may be too low for %u ranks",
			   (unsigned long long)want.rlim_cur, np);
}

static void start_ranks(struct job *job, const char *job_key,
			const sigset_t *orig_mask,
			const struct rlimit *orig_nofile)
{
	const struct run_options *o = job->opt;
	struct spawn_config cfg = {
		.env = o->env,
		.nenv = o->nenv,
		.np = o->np,
		.kvs_addr = mrail_kvs_server_address(job->kvs),
		.job_key = job_key,
		.tag_output = o->tag_output,
		.pass_stdin = !isatty(STDIN_FILENO),
		.child_mask = orig_mask,
		.child_nofile = orig_nofile,
	};

	/* In batches: a batch's ranks exec at once; SPAWN_BATCH exec-error
	 * pipes open at most (raise_fd_limit counts them). */
	int errfd[SPAWN_BATCH];
	for (unsigned base = 0; base < o->np; base += SPAWN_BATCH) {
		unsigned end = base + SPAWN_BATCH < o->np ? base + SPAWN_BATCH
							  : o->np;
		unsigned started = base;
		int failed = 0;
		while (started < end &&
		       spawn_rank_start(&cfg, started, &job->launch[started],
					&job->ranks[started],
					&errfd[started - base]) == 0)
			started++;
		if (started < end) { /* fork or pipe failed (logged) */
			fail_job(job, 1);
			failed = 1;
		}
		for (unsigned r = base; r < started; r++) {
			struct rank_proc *p = &job->ranks[r];
			int rc = spawn_rank_check(p, errfd[r - base]);
			if (o->tag_output) {
				tagged_stream_init(&job->streams[2 * r],
						   p->out_fd, STDOUT_FILENO, r);
				tagged_stream_init(&job->streams[2 * r + 1],
						   p->err_fd, STDERR_FILENO, r);
			}
			if (rc == 0) {
				job->running++;
				continue;
			}
			if (!failed)
				fprintf(stderr, "mrail-run: cannot execute '%s' "
					"(rank %u): %s\n",
					job->launch[r].argv[0], r, strerror(rc));
			if (!failed)
				fail_job(job, exec_error_code(rc));
			failed = 1;
		}
		if (failed) {
			if (job->running > 0)
				terminate(job, SIGTERM);
			return;
		}
	}
}

/* PROGRAM, found in main (without --wrap). */
static char program_path[PATH_MAX];

/*
 * A rank of ours is not the process a PMIx launcher (mpirun, srun) started:
 * if mrail-run runs inside such a job, its ranks must not present that
 * job's PMIx identity, or libmrail's "pmix" bootstrap (tried before "kvs")
 * would pick it up. -x can still set these explicitly.
 */
static void drop_pmix_identity(void)
{
	extern char **environ;
	char name[64];

	for (char **e = environ; e && *e;) {
		size_t len = strcspn(*e, "=");
		if (len < sizeof name &&
		    (!strncmp(*e, "PMIX_SERVER_URI", 15) ||
		     (len == 9 && !strncmp(*e, "PMIX_RANK", 9)) ||
		     (len == 14 && !strncmp(*e, "PMIX_NAMESPACE", 14)) ||
		     (len == 7 && !strncmp(*e, "PMIX_ID", 7)))) {
			memcpy(name, *e, len);
			name[len] = '\0';
			unsetenv(name); /* shifts the rest down */
			continue;
		}
		e++;
	}
}

/* "NAME=VALUE" (malloc'd), or NULL. */
static char *env_word(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static char *env_word(const char *name, const char *fmt, ...)
{
	char value[256], *out;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(value, sizeof value, fmt, ap);
	va_end(ap);
	return asprintf(&out, "%s=%s", name, value) < 0 ? NULL : out;
}

/*
 * What {env} passes to one rank: the MRAIL_* variables of our environment
 * (a local rank inherits them), the -x variables, then the contract.
 */
static char **rank_env_words(const struct run_options *o, unsigned r,
			     const struct placement *pl, const char *kvs_addr,
			     const char *job_key, size_t *n)
{
	extern char **environ;
	size_t ninherit = 0;

	for (char **e = environ; e && *e; e++)
		ninherit += !strncmp(*e, "MRAIL_", 6);
	char **w = calloc(ninherit + o->nenv + 6 + 1, sizeof *w);
	if (!w)
		return NULL;
	*n = 0;
	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, "MRAIL_", 6) &&
		    !run_options_reserved(*e, strcspn(*e, "=")) &&
		    !(w[(*n)++] = strdup(*e)))
			goto nomem;
	for (size_t i = 0; i < o->nenv; i++)
		if (!(w[(*n)++] = strdup(o->env[i])))
			goto nomem;
	if (!(w[(*n)++] = env_word("MRAIL_RANK", "%u", r)) ||
	    !(w[(*n)++] = env_word("MRAIL_SIZE", "%u", o->np)) ||
	    !(w[(*n)++] = env_word("MRAIL_LOCAL_RANK", "%u", pl->local_rank)) ||
	    !(w[(*n)++] = env_word("MRAIL_LOCAL_SIZE", "%u", pl->local_size)) ||
	    !(w[(*n)++] = env_word("MRAIL_KVS_ADDR", "%s", kvs_addr)) ||
	    !(w[(*n)++] = env_word("MRAIL_JOB_KEY", "%s", job_key)))
		goto nomem;
	return w;
nomem:
	argv_free(w);
	return NULL;
}

/*
 * Each rank's command line and executable: PROGRAM ARGS..., or with --wrap
 * the expanded template followed by them. 0, or the exit status to end
 * with (the error printed).
 */
static int plan_ranks(struct job *job, const struct placement *pl,
		      const struct wrap_template *wrap, const char *job_key)
{
	const struct run_options *o = job->opt;
	const char *kvs_addr = mrail_kvs_server_address(job->kvs);
	char path[PATH_MAX];
	int err;

	job->launch = calloc(o->np, sizeof *job->launch);
	if (wrap->nwords)
		job->wrapped = calloc(o->np, sizeof *job->wrapped);
	if (!job->launch || (wrap->nwords && !job->wrapped))
		goto nomem;
	for (unsigned r = 0; r < o->np; r++) {
		struct rank_launch *l = &job->launch[r];
		l->local_rank = pl[r].local_rank;
		l->local_size = pl[r].local_size;
		job->ranks[r].host = o->hosts || o->hostfile ? pl[r].host
							    : NULL;
		if (!wrap->nwords) {
			l->argv = o->argv;
			l->path = program_path; /* resolved in main */
			continue;
		}
		size_t nenv;
		char **env = rank_env_words(o, r, &pl[r], kvs_addr, job_key,
					    &nenv);
		if (!env)
			goto nomem;
		job->wrapped[r] = wrap_argv(wrap, pl[r].host, r, env, nenv,
					    o->argv, o->wrap_quote);
		argv_free(env);
		if (!job->wrapped[r])
			goto nomem;
		l->argv = job->wrapped[r];
		/* The wrapper may differ per rank (a {host} in its name). */
		if (r > 0 && !strcmp(l->argv[0], job->launch[r - 1].argv[0])) {
			l->path = job->launch[r - 1].path;
			continue;
		}
		if ((err = resolve_program(l->argv[0], path, sizeof path))) {
			fprintf(stderr, "mrail-run: --wrap command '%s' (rank "
				"%u): %s\n", l->argv[0], r,
				exec_error_text(l->argv[0], err));
			return exec_error_code(err);
		}
		if (!(l->path = strdup(path)))
			goto nomem;
		l->path_owned = true;
	}
	return 0;
nomem:
	fprintf(stderr, "mrail-run: out of memory\n");
	return 1;
}

static void free_plan(struct job *job)
{
	for (unsigned r = 0; job->launch && r < job->opt->np; r++)
		if (job->launch[r].path_owned)
			free((char *)job->launch[r].path);
	for (unsigned r = 0; job->wrapped && r < job->opt->np; r++)
		argv_free(job->wrapped[r]);
	free(job->launch);
	free(job->wrapped);
}

/* Ranks elsewhere cannot dial 127.0.0.1 or ::1 of this host. */
static void check_reachable(const struct run_options *o, const char *addr)
{
	if (!o->wrap || (!o->hosts && !o->hostfile))
		return;
	if (strncmp(addr, "127.", 4) && strncmp(addr, "[::1]", 5))
		return;
	fprintf(stderr, "mrail-run: note: the key-value service is at %s, a "
		"loopback address: ranks on other hosts cannot reach it "
		"(use --bind with an address of this host they can reach)\n",
		addr);
}

int main(int argc, char **argv)
{
	struct run_options opt;
	struct job job = {.opt = &opt, .deadline = INFINITY,
			  .kill_at = INFINITY, .sigfd = -1};
	struct host_list hosts = {0};
	struct wrap_template wrap = {0};
	struct placement *pl = NULL;
	char key_hex[2 * MRAIL_AUTH_KEY_BYTES + 1];
	uint8_t key[MRAIL_AUTH_KEY_BYTES];
	sigset_t orig_mask;
	struct rlimit orig_nofile;
	int rc, err;

	mrail_log_set_prefix("launcher");
	int level = mrail_log_parse_level(getenv("MRAIL_LOG_LEVEL"));
	if (level >= 0)
		mrail_log_level = level;

	rc = run_options_parse(argc, argv, &opt);
	if (rc == RUN_OPTIONS_EXIT)
		return 0;
	if (rc != RUN_OPTIONS_OK)
		return 2;
	if ((opt.hosts && host_list_parse(opt.hosts, &hosts) < 0) ||
	    (opt.hostfile && host_list_read_file(opt.hostfile, &hosts) < 0) ||
	    (opt.wrap && wrap_parse(opt.wrap, &wrap) < 0)) {
		job.exit_code = 2;
		goto out;
	}
	pl = calloc(opt.np, sizeof *pl);
	if (!pl || place_ranks(&hosts, opt.np, pl) < 0) {
		fprintf(stderr, "mrail-run: out of memory\n");
		job.exit_code = 1;
		goto out;
	}
	/* With --wrap the program runs where the wrapper takes it: only the
	 * wrapper must exist here (checked once the command lines exist). */
	if (!opt.wrap &&
	    (err = resolve_program(opt.argv[0], program_path,
				   sizeof program_path))) {
		fprintf(stderr, "mrail-run: %s: %s\n", opt.argv[0],
			exec_error_text(opt.argv[0], err));
		job.exit_code = exec_error_code(err);
		goto out;
	}
	drop_pmix_identity();
	if (mrail_auth_random(key, sizeof key) < 0) {
		fprintf(stderr, "mrail-run: cannot draw a job key: %s\n",
			strerror(errno));
		job.exit_code = 1;
		goto out;
	}
	mrail_auth_key_format(key, key_hex);

	raise_fd_limit(&orig_nofile, opt.np, opt.tag_output);
	job.sigfd = setup_signals(&orig_mask);
	if (job.sigfd < 0) {
		fprintf(stderr, "mrail-run: signalfd: %s\n", strerror(errno));
		job.exit_code = 1;
		goto out;
	}
	struct mrail_kvs_server_config kcfg = {
		.bind = opt.bind,
		.size = opt.np,
		.key = key,
		.auth_timeout = opt.auth_timeout,
		.store_max = KVS_STORE_MAX,
	};
	if (mrail_kvs_server_create(&kcfg, &job.kvs) != MRAIL_OK) {
		/* Most likely the address is not one of this host's. */
		fprintf(stderr, "mrail-run: cannot start the key-value "
			"service on --bind %s (see above)\n", opt.bind);
		job.kvs = NULL;
		job.exit_code = 2;
		goto out;
	}
	/* Orphans of ranks come to us to be reaped, not to a distant init. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	job.ranks = calloc(opt.np, sizeof *job.ranks);
	job.streams = calloc(opt.tag_output ? 2 * opt.np : 1,
			     sizeof *job.streams);
	if (!job.ranks || !job.streams) {
		fprintf(stderr, "mrail-run: out of memory\n");
		job.exit_code = 1;
		goto out;
	}
	for (unsigned i = 0; opt.tag_output && i < 2 * opt.np; i++)
		job.streams[i].fd = -1;
	if (opt.timeout > 0)
		job.deadline = mrail_now() + opt.timeout;

	if ((rc = plan_ranks(&job, pl, &wrap, key_hex))) {
		job.exit_code = rc;
		goto out;
	}
	check_reachable(&opt, mrail_kvs_server_address(job.kvs));
	start_ranks(&job, key_hex, &orig_mask, &orig_nofile);
	event_loop(&job);
out:
	if (job.kvs)
		mrail_kvs_server_destroy(job.kvs);
	if (job.sigfd >= 0)
		close(job.sigfd);
	free_plan(&job);
	free(job.ranks);
	free(job.streams);
	free(pl);
	wrap_free(&wrap);
	host_list_free(&hosts);
	run_options_free(&opt);
	explicit_bzero(key, sizeof key);
	return job.exit_code;
}
