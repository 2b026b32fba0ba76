/*
 * The "pmix" bootstrap: a rank started by a PMIx-enabled launcher (Open MPI's
 * mpirun, Slurm's srun --mpi=pmix, prterun) exchanges addresses through the
 * launcher's PMIx server.
 *
 * PMIx stores a value under its publisher: a get names the process it reads
 * from, whereas this bootstrap's keys are job-wide. Keys ending in ".<rank>"
 * (the engine's "mrail.addr.<rank>") are read from that rank; other keys, and
 * misses there, are looked for at every rank in turn. After a fence that
 * collects data every value is in the node-local store, so each look is a
 * local read (PMIX_OPTIONAL), never a round trip to a server.
 *
 * put() only stages a copy; the next fence hands the values to PMIx_Put as
 * "KEY#E", E the number of that fence in this process (the same on every
 * rank: fences are collective), and get() after fence F returns the
 * newest of KEY#F, KEY#F-1, ... So nothing is visible before the fence
 * that publishes it, even where PMIx_Commit would show it to the node
 * earlier, and no PMIx key is ever written twice: libpmix 4.2 does not
 * reliably replace a value across fences that collect data.
 */
#include <errno.h>
#include <math.h>
#include <pmix.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "mrail.h"
#include "util/log.h"

#define DEFAULT_TIMEOUT 60 /* seconds, like the kvs bootstrap */
#define NO_RANK UINT32_MAX

extern char **environ;

/*
 * One PMIx client session per process, opened by the first init() and
 * closed when the process exits (or libmrail is unloaded), not by fini():
 * libpmix 4.2 loses or garbles a process's job data when it is initialised
 * a second time (a second engine), and a launcher counts a process that
 * initialised PMIx and exits without finalising as failed.
 */
static struct {
	pthread_mutex_t lock;
	bool up;
	pid_t pid; /* a forked child must not finalise its parent's session */
	pmix_proc_t me;
	uint32_t size, local_rank, local_size;
	uint32_t epoch; /* fences completed (the same count on every rank) */
	bool broken;    /* a fence failed: the ranks' counts may differ */
} session = {.lock = PTHREAD_MUTEX_INITIALIZER};

struct staged {
	char *key;
	void *val;
	size_t len;
};

struct mrail_bootstrap {
	pmix_proc_t me;
	uint32_t rank, size;
	uint32_t local_rank, local_size;
	int timeout; /* PMIX_TIMEOUT for fences, seconds; 0 = no limit */
	struct staged *staged;
	size_t nstaged, cap;
};

/* Log a failed PMIx call; the MRAIL_ERR_* to return. */
static int pmix_failed(uint32_t rank, const char *call, const char *what,
		       pmix_status_t rc)
{
	char who[32] = "";

	if (rank != NO_RANK)
		snprintf(who, sizeof who, "rank %u: ", rank);
	mrail_error("pmix bootstrap: %s%s failed%s%s: %s", who, call,
		    what ? " " : "", what ? what : "", PMIx_Error_string(rc));
	return rc == PMIX_ERR_TIMEOUT ? MRAIL_ERR_TIMEOUT : MRAIL_ERR_BOOTSTRAP;
}

/* ---- detection and the session ---------------------------------------- */

/* A PMIx server started us: it says who we are and where it listens
 * (PMIX_SERVER_URI, PMIX_SERVER_URI2, ..., one per protocol version). */
static int pmix_detect(void)
{
	if (!getenv("PMIX_RANK") || !getenv("PMIX_NAMESPACE"))
		return 0;
	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, "PMIX_SERVER_URI", 15))
			return 1;
	return 0;
}

/* Any unsigned integer type a PMIx server may answer with. */
static int value_u32(const pmix_value_t *v, uint32_t *out)
{
	uint64_t x;

	switch (v->type) {
	case PMIX_UINT8: x = v->data.uint8; break;
	case PMIX_UINT16: x = v->data.uint16; break;
	case PMIX_UINT32: x = v->data.uint32; break;
	case PMIX_UINT64: x = v->data.uint64; break;
	case PMIX_SIZE: x = v->data.size; break;
	case PMIX_PROC_RANK: x = v->data.rank; break;
	case PMIX_INT:
		if (v->data.integer < 0)
			return -1;
		x = (uint64_t)v->data.integer;
		break;
	default:
		return -1;
	}
	if (x > UINT32_MAX)
		return -1;
	*out = (uint32_t)x;
	return 0;
}

/* A job-level (rank = WILDCARD) or own attribute of the launch. */
static int get_attr(pmix_rank_t rank, const char *attr, uint32_t *out)
{
	pmix_proc_t p;
	pmix_value_t *v = NULL;
	pmix_status_t rc;

	PMIX_LOAD_PROCID(&p, session.me.nspace, rank);
	rc = PMIx_Get(&p, attr, NULL, 0, &v);
	if (rc != PMIX_SUCCESS) {
		char what[64];
		snprintf(what, sizeof what, "for %s", attr);
		return pmix_failed(session.me.rank, "PMIx_Get", what, rc);
	}
	int bad = value_u32(v, out);
	if (bad)
		mrail_error("pmix bootstrap: rank %u: %s has unexpected type "
			    "%s", session.me.rank, attr,
			    PMIx_Data_type_string(v->type));
	PMIX_VALUE_RELEASE(v);
	return bad ? MRAIL_ERR_BOOTSTRAP : MRAIL_OK;
}

static void session_close(void)
{
	pthread_mutex_lock(&session.lock);
	if (session.up && session.pid == getpid()) {
		pmix_status_t rc = PMIx_Finalize(NULL, 0);
		if (rc != PMIX_SUCCESS)
			pmix_failed(session.me.rank, "PMIx_Finalize", NULL,
				    rc);
	}
	session.up = false;
	pthread_mutex_unlock(&session.lock);
}

/* Called with the lock held. */
static int session_open(void)
{
	static bool registered;
	pmix_status_t prc;
	int rc;

	if (session.up && session.pid == getpid())
		return MRAIL_OK;
	prc = PMIx_Init(&session.me, NULL, 0);
	if (prc != PMIX_SUCCESS)
		return pmix_failed(NO_RANK, "PMIx_Init",
				   "(is the launcher's PMIx server still "
				   "running?)", prc);
	if ((rc = get_attr(PMIX_RANK_WILDCARD, PMIX_JOB_SIZE,
			   &session.size)) ||
	    (rc = get_attr(PMIX_RANK_WILDCARD, PMIX_LOCAL_SIZE,
			   &session.local_size)) ||
	    (rc = get_attr(session.me.rank, PMIX_LOCAL_RANK,
			   &session.local_rank))) {
		PMIx_Finalize(NULL, 0);
		return rc;
	}
	if (session.size == 0 || session.me.rank >= session.size ||
	    session.local_size == 0 || session.local_size > session.size ||
	    session.local_rank >= session.local_size) {
		mrail_error("pmix bootstrap: inconsistent job from the PMIx "
			    "server: rank %u of %u, local rank %u of %u",
			    session.me.rank, session.size, session.local_rank,
			    session.local_size);
		PMIx_Finalize(NULL, 0);
		return MRAIL_ERR_BOOTSTRAP;
	}
	if (!registered && atexit(session_close) != 0) {
		mrail_error("pmix bootstrap: atexit failed");
		PMIx_Finalize(NULL, 0);
		return MRAIL_ERR_NOMEM;
	}
	registered = true;
	session.up = true;
	session.pid = getpid();
	return MRAIL_OK;
}

/* ---- init / fini ------------------------------------------------------- */

static int read_timeout(int *out)
{
	const char *v = getenv("MRAIL_BOOTSTRAP_TIMEOUT");
	char *end;

	*out = DEFAULT_TIMEOUT;
	if (!v)
		return MRAIL_OK;
	double t = strtod(v, &end);
	if (end == v || *end || !(t >= 0) || t > INT32_MAX) {
		mrail_error("pmix bootstrap: MRAIL_BOOTSTRAP_TIMEOUT='%s' is "
			    "not a number of seconds (0 = no limit)", v);
		return MRAIL_ERR_BOOTSTRAP;
	}
	/* PMIx counts whole seconds; never round a limit down to none. */
	*out = (int)ceil(t);
	return MRAIL_OK;
}

static void drop_staged(struct mrail_bootstrap *bs)
{
	for (size_t i = 0; i < bs->nstaged; i++) {
		free(bs->staged[i].key);
		free(bs->staged[i].val);
	}
	bs->nstaged = 0;
}

/* The PMIx session stays open (see above): only our state goes. */
static void pmix_fini(struct mrail_bootstrap *bs)
{
	if (!bs)
		return;
	drop_staged(bs);
	free(bs->staged);
	free(bs);
}

static int pmix_init(struct mrail_bootstrap **out)
{
	struct mrail_bootstrap *bs = calloc(1, sizeof *bs);
	int rc;

	*out = NULL;
	if (!bs)
		return MRAIL_ERR_NOMEM;
	if ((rc = read_timeout(&bs->timeout))) {
		free(bs);
		return rc;
	}
	pthread_mutex_lock(&session.lock);
	rc = session_open();
	bs->me = session.me;
	bs->rank = session.me.rank;
	bs->size = session.size;
	bs->local_rank = session.local_rank;
	bs->local_size = session.local_size;
	pthread_mutex_unlock(&session.lock);
	if (rc) {
		free(bs);
		return rc;
	}
	mrail_info("bootstrap: pmix: rank %u of %u (local %u of %u), "
		   "namespace %s", bs->rank, bs->size, bs->local_rank,
		   bs->local_size, bs->me.nspace);
	*out = bs;
	return MRAIL_OK;
}

static uint32_t pmix_rank(struct mrail_bootstrap *bs)
{
	return bs->rank;
}

static uint32_t pmix_size(struct mrail_bootstrap *bs)
{
	return bs->size;
}

static uint32_t pmix_local_rank(struct mrail_bootstrap *bs)
{
	return bs->local_rank;
}

static uint32_t pmix_local_size(struct mrail_bootstrap *bs)
{
	return bs->local_size;
}

/* ---- put / fence / get ----------------------------------------------- */

static int check_key(const char *key)
{
	size_t n = key ? strnlen(key, MRAIL_BOOTSTRAP_KEY_MAX + 1) : 0;

	if (n == 0 || n > MRAIL_BOOTSTRAP_KEY_MAX) {
		mrail_error("pmix bootstrap: key must be 1..%d bytes",
			    MRAIL_BOOTSTRAP_KEY_MAX);
		return MRAIL_ERR_INVALID;
	}
	if (!strncmp(key, "pmix", 4)) {
		mrail_error("pmix bootstrap: key '%s': keys starting with "
			    "\"pmix\" are reserved by PMIx", key);
		return MRAIL_ERR_INVALID;
	}
	return MRAIL_OK;
}

static int pmix_put(struct mrail_bootstrap *bs, const char *key,
		    const void *val, size_t len)
{
	struct staged *s = NULL;
	int rc = check_key(key);

	if (rc)
		return rc;
	if (len > MRAIL_BOOTSTRAP_VALUE_MAX || (len && !val)) {
		mrail_error("pmix bootstrap: value for '%s' must be at most %d "
			    "bytes (got %zu)", key, MRAIL_BOOTSTRAP_VALUE_MAX,
			    len);
		return MRAIL_ERR_INVALID;
	}
	void *copy = malloc(len ? len : 1);
	if (!copy)
		return MRAIL_ERR_NOMEM;
	if (len)
		memcpy(copy, val, len);
	/* The same key twice before a fence: the later value wins. */
	for (size_t i = 0; i < bs->nstaged && !s; i++)
		if (!strcmp(bs->staged[i].key, key))
			s = &bs->staged[i];
	if (!s) {
		if (bs->nstaged == bs->cap) {
			size_t cap = bs->cap ? 2 * bs->cap : 8;
			struct staged *n = realloc(bs->staged, cap * sizeof *n);
			if (!n) {
				free(copy);
				return MRAIL_ERR_NOMEM;
			}
			bs->staged = n;
			bs->cap = cap;
		}
		char *k = strdup(key);
		if (!k) {
			free(copy);
			return MRAIL_ERR_NOMEM;
		}
		s = &bs->staged[bs->nstaged++];
		*s = (struct staged){.key = k};
	}
	free(s->val);
	s->val = copy;
	s->len = len;
	return MRAIL_OK;
}

/* The PMIx key of `key` as published by fence number `epoch`. */
static void epoch_key(char out[PMIX_MAX_KEYLEN + 1], const char *key,
		      uint32_t epoch)
{
	snprintf(out, PMIX_MAX_KEYLEN + 1, "%s#%u", key, epoch);
}

static uint32_t completed_fences(void)
{
	pthread_mutex_lock(&session.lock);
	uint32_t e = session.epoch;
	pthread_mutex_unlock(&session.lock);
	return e;
}

/* Once a fence failed, ranks may disagree on fence numbers. */
static int fence_failed(int rc)
{
	pthread_mutex_lock(&session.lock);
	session.broken = true;
	pthread_mutex_unlock(&session.lock);
	return rc;
}

/* PMIx_Fence_nb's completion, from PMIx's progress thread. */
struct fence_wait {
	pthread_mutex_t lock;
	bool done;
	pmix_status_t status;
	int fd; /* written when done: wakes the waiting idle() */
};

static void fence_done(pmix_status_t status, void *cbdata)
{
	struct fence_wait *w = cbdata;
	uint64_t one = 1;
	/* The wake-up is written under the lock: once the waiter sees done it
	 * closes the fd and its stack frame (w) goes away, so nothing of w
	 * may be touched after the unlock. */
	pthread_mutex_lock(&w->lock);
	w->status = status;
	w->done = true;
	if (write(w->fd, &one, sizeof one) < 0)
		mrail_debug("pmix bootstrap: fence wake-up: %s", strerror(errno));
	pthread_mutex_unlock(&w->lock);
}

/* PMIx_Fence_nb, then idle() until its callback ran. */
static pmix_status_t fence_nb(pmix_proc_t *all, pmix_info_t *info,
			      size_t ninfo, void (*idle)(void *arg, int fd),
			      void *arg)
{
	struct fence_wait w = {.lock = PTHREAD_MUTEX_INITIALIZER};
	w.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w.fd < 0) /* no way to be woken: wait the plain way */
		return PMIx_Fence(all, 1, info, ninfo);
	pmix_status_t prc = PMIx_Fence_nb(all, 1, info, ninfo, fence_done, &w);
	if (prc == PMIX_OPERATION_SUCCEEDED) { /* done at once, no callback */
		close(w.fd);
		return PMIX_SUCCESS;
	}
	for (bool done = prc != PMIX_SUCCESS; !done;) {
		pthread_mutex_lock(&w.lock);
		done = w.done;
		pthread_mutex_unlock(&w.lock);
		if (!done)
			idle(arg, w.fd);
	}
	if (prc == PMIX_SUCCESS)
		prc = w.status;
	close(w.fd);
	return prc;
}

static int fence(struct mrail_bootstrap *bs, void (*idle)(void *arg, int fd),
		 void *arg)
{
	char pkey[PMIX_MAX_KEYLEN + 1];
	pmix_proc_t all;
	pmix_info_t info[2];
	pmix_status_t prc;
	bool collect = true, broken;
	size_t ninfo = 1;
	uint32_t epoch;

	pthread_mutex_lock(&session.lock);
	broken = session.broken;
	epoch = session.epoch + 1;
	pthread_mutex_unlock(&session.lock);
	if (broken) {
		mrail_error("pmix bootstrap: rank %u: an earlier fence failed; "
			    "the job's ranks are out of step", bs->rank);
		return MRAIL_ERR_BOOTSTRAP;
	}
	for (size_t i = 0; i < bs->nstaged; i++) {
		pmix_value_t v = {.type = PMIX_BYTE_OBJECT};
		v.data.bo.bytes = bs->staged[i].val;
		v.data.bo.size = bs->staged[i].len;
		epoch_key(pkey, bs->staged[i].key, epoch);
		prc = PMIx_Put(PMIX_GLOBAL, pkey, &v);
		if (prc != PMIX_SUCCESS) {
			char what[MRAIL_BOOTSTRAP_KEY_MAX + 16];
			snprintf(what, sizeof what, "for key '%s'",
				 bs->staged[i].key);
			return fence_failed(pmix_failed(bs->rank, "PMIx_Put",
							what, prc));
		}
	}
	if ((prc = PMIx_Commit()) != PMIX_SUCCESS)
		return fence_failed(pmix_failed(bs->rank, "PMIx_Commit", NULL,
						prc));
	drop_staged(bs); /* PMIx holds them now */

	PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
	if (bs->timeout > 0)
		PMIX_INFO_LOAD(&info[ninfo++], PMIX_TIMEOUT, &bs->timeout,
			       PMIX_INT);
	PMIX_LOAD_PROCID(&all, bs->me.nspace, PMIX_RANK_WILDCARD);
	prc = idle ? fence_nb(&all, info, ninfo, idle, arg)
		   : PMIx_Fence(&all, 1, info, ninfo);
	for (size_t i = 0; i < ninfo; i++)
		PMIX_INFO_DESTRUCT(&info[i]);
	if (prc == PMIX_ERR_TIMEOUT) {
		mrail_error("pmix bootstrap: rank %u: PMIx_Fence failed: %s "
			    "(not every rank reached the fence within %d s, "
			    "MRAIL_BOOTSTRAP_TIMEOUT)", bs->rank,
			    PMIx_Error_string(prc), bs->timeout);
		return fence_failed(MRAIL_ERR_TIMEOUT);
	}
	if (prc != PMIX_SUCCESS)
		return fence_failed(pmix_failed(bs->rank, "PMIx_Fence", NULL,
						prc));
	pthread_mutex_lock(&session.lock);
	session.epoch = epoch;
	pthread_mutex_unlock(&session.lock);
	return MRAIL_OK;
}

static int pmix_fence(struct mrail_bootstrap *bs)
{
	return fence(bs, NULL, NULL);
}

static int pmix_fence_idle(struct mrail_bootstrap *bs,
			   void (*idle)(void *arg, int fd), void *arg)
{
	return fence(bs, idle, arg);
}

/* The rank a key such as "mrail.addr.12" names, or UINT32_MAX. */
static uint32_t key_rank(const char *key, uint32_t size)
{
	const char *dot = strrchr(key, '.');
	char *end;

	if (!dot || dot[1] < '0' || dot[1] > '9')
		return UINT32_MAX;
	errno = 0;
	unsigned long r = strtoul(dot + 1, &end, 10);
	if (errno || *end || r >= size)
		return UINT32_MAX;
	return (uint32_t)r;
}

/*
 * The newest value `rank` published under `key` by fence `epoch` or an
 * earlier one, from the local store only: 1 found (*out set), 0 absent,
 * <0 error.
 */
static int lookup(struct mrail_bootstrap *bs, uint32_t rank, const char *key,
		  uint32_t epoch, pmix_value_t **out)
{
	char pkey[PMIX_MAX_KEYLEN + 1];
	pmix_proc_t p;
	pmix_info_t info;
	bool optional = true;
	pmix_status_t prc = PMIX_ERR_NOT_FOUND;

	PMIX_LOAD_PROCID(&p, bs->me.nspace, rank);
	PMIX_INFO_LOAD(&info, PMIX_OPTIONAL, &optional, PMIX_BOOL);
	*out = NULL;
	for (; epoch > 0 && prc == PMIX_ERR_NOT_FOUND; epoch--) {
		epoch_key(pkey, key, epoch);
		prc = PMIx_Get(&p, pkey, &info, 1, out);
	}
	PMIX_INFO_DESTRUCT(&info);
	if (prc == PMIX_SUCCESS)
		return 1;
	if (prc == PMIX_ERR_NOT_FOUND)
		return 0;
	char what[MRAIL_BOOTSTRAP_KEY_MAX + 32];
	snprintf(what, sizeof what, "for key '%s' of rank %u", key, rank);
	return pmix_failed(bs->rank, "PMIx_Get", what, prc);
}

static int pmix_get(struct mrail_bootstrap *bs, const char *key, void *val,
		    size_t *len)
{
	pmix_value_t *v = NULL;
	int rc = check_key(key);

	if (rc)
		return rc;
	if (!len || (*len && !val))
		return MRAIL_ERR_INVALID;
	uint32_t epoch = completed_fences();
	uint32_t first = key_rank(key, bs->size);
	if (first != UINT32_MAX)
		rc = lookup(bs, first, key, epoch, &v);
	for (uint32_t r = 0; r < bs->size && rc == 0; r++)
		if (r != first)
			rc = lookup(bs, r, key, epoch, &v);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return MRAIL_ERR_NOT_FOUND;
	if (v->type != PMIX_BYTE_OBJECT) {
		mrail_error("pmix bootstrap: rank %u: key '%s' holds a %s, not "
			    "a byte object (not published by libmrail?)",
			    bs->rank, key, PMIx_Data_type_string(v->type));
		PMIX_VALUE_RELEASE(v);
		return MRAIL_ERR_PROTO;
	}
	size_t cap = *len, have = v->data.bo.size;
	*len = have;
	rc = MRAIL_OK;
	if (have > cap) {
		/* Like a short receive: fill the buffer, report the size. */
		have = cap;
		rc = MRAIL_ERR_TRUNCATE;
	}
	if (have)
		memcpy(val, v->data.bo.bytes, have);
	PMIX_VALUE_RELEASE(v);
	return rc;
}

const struct mrail_bootstrap_ops mrail_pmix_bootstrap_ops = {
	.name = "pmix",
	.detect = pmix_detect,
	.init = pmix_init,
	.fini = pmix_fini,
	.rank = pmix_rank,
	.size = pmix_size,
	.put = pmix_put,
	.fence = pmix_fence,
	.fence_idle = pmix_fence_idle,
	.get = pmix_get,
	.local_rank = pmix_local_rank,
	.local_size = pmix_local_size,
};
