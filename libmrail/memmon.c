/*
 * Process-wide memory-event monitor on userfaultfd (docs/regcache.md).
 *
 * Why userfaultfd: the kernel reports munmap, madvise(DONTNEED/FREE/
 * REMOVE) and mremap of a registered range to the monitor and makes the
 * calling thread wait until the monitor has read the event, which is what
 * lets a cache promise that a registration of freed memory is never reused
 * (libfabric's "uffd" monitor works the same way). Write-protect mode is
 * preferred: no page is ever write-protected, so no fault is ever
 * delivered, only events. Missing mode is the fallback on kernels without
 * WP on anonymous memory; the monitor then answers every first touch of a
 * page with a zero page.
 */
#include "libmrail/memmon.h"
#include "mrail.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

#define WANT_FEATURES                                                      \
	(UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE |            \
	 UFFD_FEATURE_EVENT_REMAP)

/* Lifecycle and subscriptions; never taken by the monitor thread. */
static pthread_mutex_t sub_lock = PTHREAD_MUTEX_INITIALIZER;
/* Sinks and their pending ranges; the monitor holds it while it reads
 * events and records them, so nothing that can unmap memory may run
 * while it is held. */
static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;

static struct mrail_memmon_sink *sinks;
static unsigned users;          /* attached caches that want the monitor */
static int mode;                /* enum mrail_memmon_mode while users > 0 */
static int forced_mode;
static int uffd = -1, wakefd = -1;
static int mapsfd = -1; /* /proc/self/maps for PROCMAP_QUERY; -2: none */
static int maps_text;   /* tests: parse the text even with the query */
/* The process the monitor serves: after fork the child shares the
 * userfaultfd, which still acts on the parent's memory. */
static pid_t monitor_pid;
static pthread_t thread;
static uint64_t n_events, n_faults; /* under sink_lock */

/* Subscriptions: a multiset of ranges sorted by start. */
static struct mrail_memmon_range *subs;
static size_t nsubs, capsubs;
static uintptr_t max_sub_len;

static size_t page_size(void)
{
	static size_t pg;
	if (!pg)
		pg = (size_t)sysconf(_SC_PAGESIZE);
	return pg;
}

/* ---- recording ---------------------------------------------------------- */

static void record_locked(uintptr_t start, uintptr_t end)
{
	for (struct mrail_memmon_sink *s = sinks; s; s = s->next) {
		if (s->count && s->r[s->count - 1].start == start &&
		    s->r[s->count - 1].end == end)
			continue;
		if (s->count == MRAIL_MEMMON_SINK_CAP)
			s->overflow = 1;
		else
			s->r[s->count++] = (struct mrail_memmon_range){start, end};
	}
}

void mrail_memmon_record(uintptr_t start, uintptr_t end)
{
	pthread_mutex_lock(&sink_lock);
	record_locked(start, end);
	pthread_mutex_unlock(&sink_lock);
}

unsigned mrail_memmon_drain(struct mrail_memmon_sink *s,
			    struct mrail_memmon_range *out, int *overflow)
{
	pthread_mutex_lock(&sink_lock);
	unsigned n = s->count;
	memcpy(out, s->r, n * sizeof *out);
	*overflow = s->overflow;
	s->count = 0;
	s->overflow = 0;
	pthread_mutex_unlock(&sink_lock);
	return n;
}

void mrail_memmon_counters(uint64_t *events, uint64_t *faults)
{
	pthread_mutex_lock(&sink_lock);
	*events = n_events;
	*faults = n_faults;
	pthread_mutex_unlock(&sink_lock);
}

/* ---- the monitor thread ------------------------------------------------- */

static void resolve_fault(uintptr_t addr)
{
	size_t pg = page_size();
	struct uffdio_zeropage z = {
		.range = {.start = addr & ~(uintptr_t)(pg - 1), .len = pg},
	};
	if (!ioctl(uffd, UFFDIO_ZEROPAGE, &z))
		return;
	/* EEXIST: another thread populated it first; wake the faulter. */
	if (errno != EEXIST)
		mrail_debug("regcache monitor: zero page at %#lx: %s",
			    (unsigned long)addr, strerror(errno));
	struct uffdio_range r = z.range;
	ioctl(uffd, UFFDIO_WAKE, &r);
}

static void *monitor_main(void *arg)
{
	(void)arg;
	struct uffd_msg msg[32];
	uintptr_t faults[32];

	for (;;) {
		struct pollfd p[2] = {{.fd = uffd, .events = POLLIN},
				      {.fd = wakefd, .events = POLLIN}};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			mrail_error("regcache monitor: poll: %s; monitor stops, "
				    "caches flushed", strerror(errno));
			pthread_mutex_lock(&sink_lock);
			for (struct mrail_memmon_sink *s = sinks; s; s = s->next)
				s->overflow = 1;
			pthread_mutex_unlock(&sink_lock);
			return NULL;
		}
		if (p[1].revents)
			return NULL;
		unsigned nf = 0;
		pthread_mutex_lock(&sink_lock);
		for (;;) {
			ssize_t n = read(uffd, msg, sizeof msg);
			if (n <= 0)
				break; /* EAGAIN: all read */
			for (size_t i = 0; i < (size_t)n / sizeof *msg; i++) {
				const struct uffd_msg *m = &msg[i];
				switch (m->event) {
				case UFFD_EVENT_UNMAP:
				case UFFD_EVENT_REMOVE:
					record_locked(m->arg.remove.start,
						      m->arg.remove.end);
					n_events++;
					break;
				case UFFD_EVENT_REMAP:
					record_locked(m->arg.remap.from,
						      m->arg.remap.from +
							      m->arg.remap.len);
					n_events++;
					break;
				case UFFD_EVENT_PAGEFAULT:
					faults[nf++] = m->arg.pagefault.address;
					n_faults++;
					break;
				default:
					break;
				}
			}
			if (nf)
				break; /* resolve them before reading more */
		}
		pthread_mutex_unlock(&sink_lock);
		for (unsigned i = 0; i < nf; i++)
			resolve_fault(faults[i]);
	}
}

/* ---- start and stop ----------------------------------------------------- */

static int open_uffd(int *user_only)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	*user_only = 0;
	if (fd < 0 && (errno == EPERM || errno == EACCES)) {
		/* vm.unprivileged_userfaultfd=0: only user-mode faults. */
		fd = (int)syscall(SYS_userfaultfd,
				  O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
		*user_only = 1;
	}
	if (fd < 0) {
		mrail_info("regcache: userfaultfd unavailable (%s): "
			   "registrations are not cached", strerror(errno));
		return -1;
	}
	struct uffdio_api api = {.api = UFFD_API, .features = WANT_FEATURES};
	if (ioctl(fd, UFFDIO_API, &api) ||
	    (api.features & WANT_FEATURES) != WANT_FEATURES) {
		mrail_info("regcache: userfaultfd lacks unmap/remove/remap "
			   "events (%s): registrations are not cached",
			   strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* Does registering anonymous memory in this mode work on this kernel? */
static int probe_mode(int fd, int m)
{
	size_t pg = page_size();
	void *p = mmap(NULL, pg, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 0;
	struct uffdio_register r = {
		.range = {.start = (uintptr_t)p, .len = pg},
		.mode = m == MRAIL_MEMMON_WP ? UFFDIO_REGISTER_MODE_WP
					     : UFFDIO_REGISTER_MODE_MISSING,
	};
	int ok = !ioctl(fd, UFFDIO_REGISTER, &r);
	if (ok)
		ioctl(fd, UFFDIO_UNREGISTER, &r.range);
	munmap(p, pg);
	return ok;
}

static void start_monitor(void)
{
	int user_only;
	mode = MRAIL_MEMMON_OFF;
	if ((uffd = open_uffd(&user_only)) < 0)
		return;
	int m = MRAIL_MEMMON_OFF;
	if (forced_mode != MRAIL_MEMMON_MISSING &&
	    probe_mode(uffd, MRAIL_MEMMON_WP))
		m = MRAIL_MEMMON_WP;
	/* Missing mode with user-mode-only faults would make the kernel's
	 * own accesses (read(2) into a buffer, pinning) fail with EFAULT. */
	else if (!user_only && forced_mode != MRAIL_MEMMON_WP &&
		 probe_mode(uffd, MRAIL_MEMMON_MISSING))
		m = MRAIL_MEMMON_MISSING;
	if (m == MRAIL_MEMMON_OFF) {
		mrail_info("regcache: userfaultfd cannot watch anonymous "
			   "memory here: registrations are not cached");
		goto fail;
	}
	if ((wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		goto fail;
	/* The application's signal handlers must not run on our thread. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&thread, NULL, monitor_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		mrail_info("regcache: cannot start the monitor thread (%s): "
			   "registrations are not cached", strerror(rc));
		goto fail;
	}
	mode = m;
	monitor_pid = getpid();
	mapsfd = maps_text ? -2 : open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	mrail_debug("regcache: monitor on, userfaultfd %s mode%s",
		    m == MRAIL_MEMMON_WP ? "write-protect" : "missing",
		    user_only ? ", user-mode only" : "");
	return;
fail:
	if (wakefd >= 0)
		close(wakefd);
	close(uffd);
	uffd = wakefd = -1;
}

static void stop_monitor(void)
{
	if (mode != MRAIL_MEMMON_OFF && monitor_pid != getpid()) {
		close(wakefd); /* a forked child: the thread is not ours */
		close(uffd);
	} else if (mode != MRAIL_MEMMON_OFF) {
		uint64_t one = 1;
		if (write(wakefd, &one, sizeof one) != sizeof one)
			mrail_error("regcache monitor: cannot wake: %s",
				    strerror(errno));
		pthread_join(thread, NULL);
		/* Closing the fd unregisters every range and wakes any
		 * thread waiting on an event nobody will read now. */
		close(wakefd);
		close(uffd);
	}
	uffd = wakefd = -1;
	if (mapsfd >= 0)
		close(mapsfd);
	mapsfd = -1;
	mode = MRAIL_MEMMON_OFF;
	free(subs);
	subs = NULL;
	nsubs = capsubs = 0;
	max_sub_len = 0;
}

int mrail_memmon_attach(struct mrail_memmon_sink *s, int want_monitor)
{
	pthread_mutex_lock(&sub_lock);
	if (want_monitor && users++ == 0)
		start_monitor();
	s->count = 0;
	s->overflow = 0;
	pthread_mutex_lock(&sink_lock);
	s->next = sinks;
	sinks = s;
	pthread_mutex_unlock(&sink_lock);
	int m = want_monitor ? mode : MRAIL_MEMMON_OFF;
	pthread_mutex_unlock(&sub_lock);
	return m;
}

void mrail_memmon_detach(struct mrail_memmon_sink *s, int want_monitor)
{
	pthread_mutex_lock(&sub_lock);
	pthread_mutex_lock(&sink_lock);
	for (struct mrail_memmon_sink **pp = &sinks; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	pthread_mutex_unlock(&sink_lock);
	if (want_monitor && --users == 0)
		stop_monitor();
	pthread_mutex_unlock(&sub_lock);
}

void mrail_memmon_force_mode(int m, int text)
{
	pthread_mutex_lock(&sub_lock);
	forced_mode = m;
	maps_text = text;
	pthread_mutex_unlock(&sub_lock);
}

/* ---- which memory can be watched ---------------------------------------- */

/* One /proc/self/maps line: anonymous private memory (no file, not
 * shared; named anonymous regions, heap and stack included)? */
static int parse_maps_line(const char *l, uintptr_t *vs, uintptr_t *ve,
			   int *anon_private)
{
	unsigned long s, e, inode;
	char perms[8];
	int path = 0;
	if (sscanf(l, "%lx-%lx %7s %*s %*s %lu %n", &s, &e, perms, &inode,
		   &path) < 4)
		return -1;
	const char *name = l + path;
	*vs = s;
	*ve = e;
	*anon_private = perms[3] == 'p' && inode == 0 &&
			(!*name || !strcmp(name, "[heap]") ||
			 !strcmp(name, "[stack]") || !strncmp(name, "[anon:", 6));
	return 0;
}

/*
 * PROCMAP_QUERY (Linux 6.11): one VMA per ioctl instead of the whole text
 * of /proc/self/maps. Declared here because older headers lack it; the
 * kernel checks `size`, so this prefix of the structure stays valid.
 */
struct mrail_procmap_query {
	uint64_t size, query_flags, query_addr;
	uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset;
	uint64_t inode;
	uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};
#define MRAIL_PROCMAP_QUERY _IOWR('f', 17, struct mrail_procmap_query)
#define MRAIL_PROCMAP_VMA_SHARED 0x08

/* 1 or 0 answered by PROCMAP_QUERY, -1 if the kernel lacks it. */
static int query_anon_private(int fd, uintptr_t start, uintptr_t end)
{
	for (uintptr_t cur = start; cur < end;) {
		struct mrail_procmap_query q = {.size = sizeof q,
						.query_addr = cur};
		if (ioctl(fd, MRAIL_PROCMAP_QUERY, &q))
			return errno == ENOENT ? 0 : -1;
		/* Anonymous: no file (inode and device 0); hugetlb and shared
		 * anonymous memory have an inode. */
		if (q.vma_start > cur || (q.vma_flags & MRAIL_PROCMAP_VMA_SHARED) ||
		    q.inode || q.dev_major || q.dev_minor)
			return 0;
		cur = q.vma_end;
	}
	return 1;
}

/*
 * Is [start, end) covered by anonymous private mappings without holes?
 * Without PROCMAP_QUERY, parse the text with a stack buffer: no
 * allocation, since this runs on every miss.
 */
static int is_anon_private(uintptr_t start, uintptr_t end)
{
	if (mapsfd >= 0) {
		int r = query_anon_private(mapsfd, start, end);
		if (r >= 0)
			return r;
		close(mapsfd); /* no PROCMAP_QUERY here */
		mapsfd = -2;
	}
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char buf[8192];
	size_t have = 0;
	uintptr_t cur = start;
	int ok = 0, done = 0;
	while (!done) {
		ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
		if (n <= 0)
			break;
		have += (size_t)n;
		buf[have] = '\0';
		char *line = buf, *nl;
		while (!done && (nl = strchr(line, '\n'))) {
			*nl = '\0';
			uintptr_t vs, ve;
			int anon;
			if (parse_maps_line(line, &vs, &ve, &anon) == 0 &&
			    ve > cur) {
				if (vs > cur || !anon)
					done = 1; /* hole or not watchable */
				else if ((cur = ve) >= end)
					ok = done = 1;
			}
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have == sizeof buf - 1)
			break; /* absurd line: give up, not cached */
	}
	close(fd);
	return ok;
}

/* ---- subscriptions ------------------------------------------------------ */

/* First subscription whose start is >= a. */
static size_t lower_bound(uintptr_t a)
{
	size_t lo = 0, hi = nsubs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (subs[mid].start < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int mrail_memmon_subscribe(uintptr_t start, uintptr_t end)
{
	int rc = MRAIL_ERR_NOT_FOUND;
	pthread_mutex_lock(&sub_lock);
	if (mode == MRAIL_MEMMON_OFF || start >= end ||
	    monitor_pid != getpid() || !is_anon_private(start, end))
		goto out;
	if (nsubs == capsubs) {
		size_t cap = capsubs ? 2 * capsubs : 64;
		void *p = realloc(subs, cap * sizeof *subs);
		if (!p) {
			rc = MRAIL_ERR_NOMEM;
			goto out;
		}
		subs = p;
		capsubs = cap;
	}
	struct uffdio_register r = {
		.range = {.start = start, .len = end - start},
		.mode = mode == MRAIL_MEMMON_WP ? UFFDIO_REGISTER_MODE_WP
						: UFFDIO_REGISTER_MODE_MISSING,
	};
	if (ioctl(uffd, UFFDIO_REGISTER, &r)) {
		mrail_debug("regcache: cannot watch [%#lx, %#lx): %s",
			    (unsigned long)start, (unsigned long)end,
			    strerror(errno));
		goto out;
	}
	size_t i = lower_bound(start);
	memmove(&subs[i + 1], &subs[i], (nsubs - i) * sizeof *subs);
	subs[i] = (struct mrail_memmon_range){start, end};
	nsubs++;
	if (end - start > max_sub_len)
		max_sub_len = end - start;
	rc = MRAIL_OK;
out:
	pthread_mutex_unlock(&sub_lock);
	return rc;
}

static void unregister(uintptr_t start, uintptr_t end)
{
	struct uffdio_range r = {.start = start, .len = end - start};
	/* Fails harmlessly when the memory is already gone. */
	if (ioctl(uffd, UFFDIO_UNREGISTER, &r))
		mrail_trace("regcache: unwatch [%#lx, %#lx): %s",
			    (unsigned long)start, (unsigned long)end,
			    strerror(errno));
}

void mrail_memmon_unsubscribe(uintptr_t start, uintptr_t end)
{
	pthread_mutex_lock(&sub_lock);
	size_t i = lower_bound(start);
	while (i < nsubs && subs[i].start == start && subs[i].end != end)
		i++;
	if (i == nsubs || subs[i].start != start) {
		pthread_mutex_unlock(&sub_lock); /* monitor restarted */
		return;
	}
	memmove(&subs[i], &subs[i + 1], (nsubs - i - 1) * sizeof *subs);
	nsubs--;
	/* Unregister only what no other subscription still covers:
	 * sweep the subscriptions that can overlap, in start order. */
	uintptr_t cur = start;
	size_t j = lower_bound(start > max_sub_len ? start - max_sub_len : 0);
	for (; j < nsubs && subs[j].start < end && cur < end; j++) {
		if (subs[j].end <= cur)
			continue;
		if (subs[j].start > cur)
			unregister(cur, subs[j].start);
		cur = subs[j].end;
	}
	if (cur < end)
		unregister(cur, end);
	pthread_mutex_unlock(&sub_lock);
}
