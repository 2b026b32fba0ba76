/*
 * mrail-run: start N ranks on this host with the key-value service they
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
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bootstrap/kvs/kvs_server.h"
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
static void raise_fd_limit(struct rlimit *orig, unsigned np, bool tagged)
{
	struct rlimit want;
	rlim_t need = 64 + (rlim_t)np * (tagged ? 3 : 1);

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

static void start_ranks(struct job *job, const char *path,
			const char *job_key, const sigset_t *orig_mask,
			const struct rlimit *orig_nofile)
{
	const struct run_options *o = job->opt;
	struct spawn_config cfg = {
		.path = path,
		.argv = o->argv,
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

	for (unsigned r = 0; r < o->np; r++) {
		struct rank_proc *p = &job->ranks[r];
		int rc = spawn_rank(&cfg, r, p);
		if (rc == 0 || rc > 0) {
			if (o->tag_output) {
				tagged_stream_init(&job->streams[2 * r],
						   p->out_fd, STDOUT_FILENO, r);
				tagged_stream_init(&job->streams[2 * r + 1],
						   p->err_fd, STDERR_FILENO, r);
			}
		}
		if (rc == 0) {
			job->running++;
			continue;
		}
		if (rc > 0) {
			fprintf(stderr, "mrail-run: cannot execute '%s' (rank "
				"%u): %s\n", o->argv[0], r, strerror(rc));
			fail_job(job, exec_error_code(rc));
		} else {
			fail_job(job, 1);
		}
		if (job->running > 0)
			terminate(job, SIGTERM);
		return;
	}
}

int main(int argc, char **argv)
{
	struct run_options opt;
	struct job job = {.opt = &opt, .deadline = INFINITY,
			  .kill_at = INFINITY, .sigfd = -1};
	char path[PATH_MAX], key_hex[2 * MRAIL_AUTH_KEY_BYTES + 1];
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
	if ((err = resolve_program(opt.argv[0], path, sizeof path))) {
		fprintf(stderr, "mrail-run: %s: %s\n", opt.argv[0],
			exec_error_text(opt.argv[0], err));
		run_options_free(&opt);
		return exec_error_code(err);
	}
	if (mrail_auth_random(key, sizeof key) < 0) {
		fprintf(stderr, "mrail-run: cannot draw a job key: %s\n",
			strerror(errno));
		return 1;
	}
	mrail_auth_key_format(key, key_hex);

	raise_fd_limit(&orig_nofile, opt.np, opt.tag_output);
	job.sigfd = setup_signals(&orig_mask);
	if (job.sigfd < 0) {
		fprintf(stderr, "mrail-run: signalfd: %s\n", strerror(errno));
		return 1;
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
		return 2;
	}
	/* Orphans of ranks come to us to be reaped, not to a distant init. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	job.ranks = calloc(opt.np, sizeof *job.ranks);
	job.streams = calloc(opt.tag_output ? 2 * opt.np : 1,
			     sizeof *job.streams);
	if (!job.ranks || !job.streams) {
		fprintf(stderr, "mrail-run: out of memory\n");
		return 1;
	}
	for (unsigned i = 0; opt.tag_output && i < 2 * opt.np; i++)
		job.streams[i].fd = -1;
	if (opt.timeout > 0)
		job.deadline = mrail_now() + opt.timeout;

	start_ranks(&job, path, key_hex, &orig_mask, &orig_nofile);
	event_loop(&job);

	mrail_kvs_server_destroy(job.kvs);
	close(job.sigfd);
	free(job.ranks);
	free(job.streams);
	run_options_free(&opt);
	explicit_bzero(key, sizeof key);
	return job.exit_code;
}
