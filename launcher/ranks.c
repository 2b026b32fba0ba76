#include "launcher/ranks.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int check_executable(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return errno;
	if (S_ISDIR(st.st_mode))
		return EISDIR;
	if (!S_ISREG(st.st_mode) || access(path, X_OK) < 0)
		return EACCES;
	return 0;
}

int resolve_program(const char *name, char *out, size_t out_len)
{
	if (strchr(name, '/')) {
		if (strlen(name) >= out_len)
			return ENAMETOOLONG;
		strcpy(out, name);
		return check_executable(out);
	}
	const char *path = getenv("PATH");
	int found_err = ENOENT;
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *dir = path;; ) {
		const char *end = strchr(dir, ':');
		size_t dlen = end ? (size_t)(end - dir) : strlen(dir);
		int n = snprintf(out, out_len, "%.*s%s%s", (int)dlen, dir,
				 dlen ? "/" : "", name);
		if (n > 0 && (size_t)n < out_len) {
			int err = check_executable(out);
			if (err == 0)
				return 0;
			/* Like execvp: a non-executable match is reported only
			 * if nothing better turns up later in PATH. */
			if (err == EACCES || err == EISDIR)
				found_err = EACCES;
		}
		if (!end)
			break;
		dir = end + 1;
	}
	return found_err;
}

/* In the child, between fork and exec: only report failures via errpipe. */
static void __attribute__((noreturn))
child_exec(const struct spawn_config *cfg, unsigned rank,
	   const struct rank_launch *l, pid_t parent, int errpipe,
	   const int out_pipe[2], const int err_pipe[2])
{
	char num[16];
	int err;

	setpgid(0, 0);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(127); /* mrail-run already gone */
	/* Dispositions and the mask survive exec: give the program a clean
	 * slate (mrail-run blocks the signals it reads via signalfd). */
	signal(SIGPIPE, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	sigprocmask(SIG_SETMASK, cfg->child_mask, NULL);
	/* mrail-run raised its own limit for 1024 ranks; a program using
	 * select() must not see descriptors above FD_SETSIZE because of us. */
	setrlimit(RLIMIT_NOFILE, cfg->child_nofile);
	if (!(rank == 0 && cfg->pass_stdin)) {
		int fd = open("/dev/null", O_RDONLY);
		if (fd >= 0 && fd != STDIN_FILENO) {
			dup2(fd, STDIN_FILENO);
			close(fd);
		}
	}
	if (cfg->tag_output) {
		dup2(out_pipe[1], STDOUT_FILENO);
		dup2(err_pipe[1], STDERR_FILENO);
	}
	for (size_t i = 0; i < cfg->nenv; i++)
		putenv(cfg->env[i]);
	snprintf(num, sizeof num, "%u", rank);
	setenv("MRAIL_RANK", num, 1);
	snprintf(num, sizeof num, "%u", cfg->np);
	setenv("MRAIL_SIZE", num, 1);
	snprintf(num, sizeof num, "%u", l->local_rank);
	setenv("MRAIL_LOCAL_RANK", num, 1);
	snprintf(num, sizeof num, "%u", l->local_size);
	setenv("MRAIL_LOCAL_SIZE", num, 1);
	setenv("MRAIL_KVS_ADDR", cfg->kvs_addr, 1);
	setenv("MRAIL_JOB_KEY", cfg->job_key, 1);
	execv(l->path, l->argv);
	err = errno;
	if (write(errpipe, &err, sizeof err) < 0) {
		/* nothing left to tell it with */
	}
	_exit(127);
}

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0)
			close(p[i]);
}

int spawn_rank_start(const struct spawn_config *cfg, unsigned rank,
		     const struct rank_launch *l, struct rank_proc *p,
		     int *errfd)
{
	int errpipe[2], out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
	pid_t parent = getpid();

	p->rank = rank;
	p->out_fd = p->err_fd = -1;
	if (pipe2(errpipe, O_CLOEXEC) < 0 ||
	    (cfg->tag_output && (pipe2(out_pipe, O_CLOEXEC) < 0 ||
				 pipe2(err_pipe, O_CLOEXEC) < 0))) {
		fprintf(stderr, "mrail-run: pipe: %s\n", strerror(errno));
		close_pair(out_pipe);
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "mrail-run: fork for rank %u: %s\n", rank,
			strerror(errno));
		close_pair(errpipe);
		close_pair(out_pipe);
		close_pair(err_pipe);
		return -1;
	}
	if (pid == 0)
		child_exec(cfg, rank, l, parent, errpipe[1], out_pipe,
			   err_pipe);
	/* Also here: a signal sent before the child ran setpgid must still
	 * find the group. */
	setpgid(pid, pid);
	p->pid = pid;
	p->running = true;
	close(errpipe[1]);
	if (cfg->tag_output) {
		close(out_pipe[1]);
		close(err_pipe[1]);
		p->out_fd = out_pipe[0];
		p->err_fd = err_pipe[0];
	}
	*errfd = errpipe[0];
	return 0;
}

int spawn_rank_check(struct rank_proc *p, int errfd)
{
	pid_t pid = p->pid;
	int err = 0;
	ssize_t n;
	do
		n = read(errfd, &err, sizeof err); /* EOF = exec worked */
	while (n < 0 && errno == EINTR);
	close(errfd);
	if (n == (ssize_t)sizeof err && err) {
		while (waitpid(pid, &p->status, 0) < 0 && errno == EINTR)
			;
		p->running = false;
		return err;
	}
	return 0;
}

int spawn_rank(const struct spawn_config *cfg, unsigned rank,
	       const struct rank_launch *l, struct rank_proc *p)
{
	int errfd;
	int rc = spawn_rank_start(cfg, rank, l, p, &errfd);
	return rc ? rc : spawn_rank_check(p, errfd);
}

void signal_rank(const struct rank_proc *p, int sig)
{
	if (!p->running)
		return;
	/* The group may not exist if the child died before setpgid. */
	if (kill(-p->pid, sig) < 0)
		kill(p->pid, sig);
}

void describe_status(int status, char *out, size_t out_len)
{
	if (WIFSIGNALED(status))
		snprintf(out, out_len, "killed by signal %d (%s)%s",
			 WTERMSIG(status), strsignal(WTERMSIG(status)),
			 WCOREDUMP(status) ? ", core dumped" : "");
	else
		snprintf(out, out_len, "exited with status %d",
			 WEXITSTATUS(status));
}

int status_exit_code(int status)
{
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
