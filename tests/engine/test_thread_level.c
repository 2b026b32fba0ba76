/*
 * Thread levels (docs/threads.md): chosen by cfg.thread_level or
 * MRAIL_THREAD_LEVEL, read back by mrail_thread_level(); a progress thread
 * is refused at single; debug builds abort, naming the rule, when a call
 * breaks the level or an internal entry point runs without the engine lock,
 * and stay quiet when the rules are kept. Standalone engines, no launcher.
 */
#include "harness.h"
#include "libmrail/engine.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static mrail_engine_t *create(int level, int progress_thread)
{
	struct mrail_config cfg;
	mrail_engine_t *e = NULL;
	CHECK_RC(mrail_config_init(&cfg));
	if (level >= 0)
		cfg.thread_level = level;
	cfg.progress_thread = progress_thread;
	CHECK_RC(mrail_engine_create(&cfg, &e));
	return e;
}

static void check_levels(void)
{
	static const struct { const char *env; int level; } envs[] = {
		{"single", MRAIL_THREAD_SINGLE},
		{"serialized", MRAIL_THREAD_SERIALIZED},
		{"multiple", MRAIL_THREAD_MULTIPLE},
	};
	mrail_engine_t *e = create(-1, 0);
	CHECK_EQ(mrail_thread_level(e), MRAIL_THREAD_MULTIPLE); /* default */
	CHECK_RC(mrail_engine_destroy(e));
	for (size_t i = 0; i < sizeof envs / sizeof *envs; i++) {
		setenv("MRAIL_THREAD_LEVEL", envs[i].env, 1);
		e = create(-1, 0);
		CHECK_EQ(mrail_thread_level(e), envs[i].level);
		CHECK_RC(mrail_engine_destroy(e));
	}
	unsetenv("MRAIL_THREAD_LEVEL");
	e = create(MRAIL_THREAD_SERIALIZED, 0);
	CHECK_EQ(mrail_thread_level(e), MRAIL_THREAD_SERIALIZED);
	CHECK_RC(mrail_engine_destroy(e));
	CHECK_EQ(mrail_thread_level(NULL), MRAIL_ERR_INVALID);

	struct mrail_config cfg;
	CHECK_RC(mrail_config_init(&cfg));
	cfg.thread_level = 3;
	CHECK_EQ(mrail_engine_create(&cfg, &e), MRAIL_ERR_CONFIG);
	cfg.thread_level = MRAIL_THREAD_SINGLE;
	cfg.progress_thread = 1;
	CHECK_EQ(mrail_engine_create(&cfg, &e), MRAIL_ERR_CONFIG);
	CHECK(e == NULL);
	setenv("MRAIL_THREAD_LEVEL", "Single", 1); /* strict: lower case */
	CHECK_EQ(mrail_config_init(&cfg), MRAIL_ERR_CONFIG);
	unsetenv("MRAIL_THREAD_LEVEL");
}

#ifdef MRAIL_DEBUG_LOCKS /* the abort cases exist only with lock checks */
/* ---- debug checks: each case runs in a child that must (not) abort --- */
static mrail_engine_t *E;
static pthread_mutex_t app_lock = PTHREAD_MUTEX_INITIALIZER;

static void *hammer(void *arg)
{
	int serialize = arg != NULL;
	for (int i = 0; i < 200000; i++) {
		if (serialize)
			pthread_mutex_lock(&app_lock);
		mrail_progress(E);
		if (serialize)
			pthread_mutex_unlock(&app_lock);
	}
	return NULL;
}

static void *progress_once(void *arg)
{
	(void)arg;
	mrail_progress(E);
	return NULL;
}

/* Two application threads call at once (serialize: 0) or take turns. */
static int case_two_threads(int level, int serialize, int progress_thread)
{
	pthread_t t[2];
	E = create(level, progress_thread);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&t[i], NULL, hammer,
				     serialize ? (void *)1 : NULL) == 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	CHECK_RC(mrail_engine_destroy(E));
	return 0;
}

static int case_single_other_thread(void)
{
	pthread_t t;
	E = create(MRAIL_THREAD_SINGLE, 0);
	CHECK(pthread_create(&t, NULL, progress_once, NULL) == 0);
	pthread_join(t, NULL);
	return 0;
}

static int case_unlocked_internal(void)
{
	E = create(MRAIL_THREAD_MULTIPLE, 0);
	engine_progress(E); /* internal entry point, lock not taken */
	return 0;
}

/* Runs fn in a child; returns its stderr and whether SIGABRT ended it. */
static int run_child(int (*fn)(void), char *err, size_t cap)
{
	int p[2];
	CHECK(pipe(p) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		alarm(60);
		dup2(p[1], 2);
		close(p[0]);
		_exit(fn());
	}
	close(p[1]);
	size_t n = 0;
	ssize_t k;
	while (n + 1 < cap && (k = read(p[0], err + n, cap - 1 - n)) > 0)
		n += (size_t)k;
	err[n] = '\0';
	close(p[0]);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	if (WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT)
		return 1;
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "child ended badly (status %#x): %s\n", st, err);
		exit(1);
	}
	return 0;
}

static int serialized_racing(void)
{
	return case_two_threads(MRAIL_THREAD_SERIALIZED, 0, 0);
}
static int serialized_kept(void)
{
	return case_two_threads(MRAIL_THREAD_SERIALIZED, 1, 0);
}
static int serialized_progress_thread(void)
{
	return case_two_threads(MRAIL_THREAD_SERIALIZED, 1, 1);
}
static int multiple_racing(void)
{
	return case_two_threads(MRAIL_THREAD_MULTIPLE, 0, 1);
}

static void expect(const char *what, int (*fn)(void), const char *msg)
{
	char err[8192];
	int aborted = run_child(fn, err, sizeof err);
	if (msg && (!aborted || !strstr(err, msg))) {
		fprintf(stderr, "%s: expected an abort saying '%s'; got %s: "
			"%s\n", what, msg, aborted ? "abort" : "exit 0", err);
		exit(1);
	}
	if (!msg && aborted) {
		fprintf(stderr, "%s: unexpected abort: %s\n", what, err);
		exit(1);
	}
	printf("%s: %s\n", what, msg ? "aborted, rule named" : "no complaint");
}

#endif

int main(void)
{
	setenv("MRAIL_BOOTSTRAP", "0", 1);
	check_levels();
	printf("levels: default multiple; env and cfg read back; bad values "
	       "and single + progress thread refused\n");
#ifdef MRAIL_DEBUG_LOCKS
	expect("serialized, two threads at once", serialized_racing,
	       "MRAIL_THREAD_SERIALIZED: two threads may not be inside");
	expect("serialized, threads taking turns", serialized_kept, NULL);
	expect("serialized, turns + progress thread",
	       serialized_progress_thread, NULL);
	expect("multiple, two threads at once + progress thread",
	       multiple_racing, NULL);
	expect("single, call from another thread", case_single_other_thread,
	       "MRAIL_THREAD_SINGLE: only the thread that created");
	expect("internal entry point without the lock", case_unlocked_internal,
	       "engine lock not held by this thread");
	return 0;
#else
	printf("lock checks need a debug build (MRAIL_DEBUG_LOCKS): skipped\n");
	return 77;
#endif
}
