/*
 * bench_pin: CPU pinning of all threads (the engine may run a progress
 * thread, which must follow the rank's CPU).
 */
#include "bench_pin.h"
#include "bench_util.h"

#include <dirent.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/types.h>

int bench_pin(unsigned index)
{
	cpu_set_t allowed, one;
	int n, cpu = -1;
	DIR *d;
	struct dirent *de;

	if (sched_getaffinity(0, sizeof allowed, &allowed))
		bench_die_errno("--pin: sched_getaffinity");
	n = CPU_COUNT(&allowed);
	if (n <= 0)
		bench_die("--pin: no CPU in the affinity mask");
	for (int c = 0, seen = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &allowed) && seen++ == (int)(index % (unsigned)n)) {
			cpu = c;
			break;
		}
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	d = opendir("/proc/self/task");
	if (!d)
		bench_die_errno("--pin: /proc/self/task");
	while ((de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		if (tid > 0 && sched_setaffinity(tid, sizeof one, &one))
			bench_die_errno("--pin: sched_setaffinity(thread %d, CPU %d)",
					(int)tid, cpu);
	}
	closedir(d);
	return cpu;
}
