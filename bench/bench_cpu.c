/*
 * bench_cpu: machine-wide CPU accounting from /proc/stat and getrusage().
 */
#include "bench_cpu.h"
#include "bench_util.h"

#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

void bench_cpu_sample(struct bench_cpu *c)
{
	unsigned long long v[8] = { 0 };
	long hz = sysconf(_SC_CLK_TCK);
	struct rusage ru;
	FILE *f = fopen("/proc/stat", "r");

	*c = (struct bench_cpu){ 0 };
	/* cpu user nice system idle iowait irq softirq steal */
	if (f) {
		if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
			   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8 &&
		    hz > 0) {
			c->busy_s = (double)(v[0] + v[1] + v[2] + v[5] + v[6]) /
				    (double)hz;
			c->steal_s = (double)v[7] / (double)hz;
		}
		fclose(f);
	}
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		c->self_s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
			    (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	c->wall_s = (double)bench_now_ns() / 1e9;
}

double bench_cpu_others(const struct bench_cpu *a, const struct bench_cpu *b,
			double peer_self_s, double *steal)
{
	double wall = b->wall_s - a->wall_s;
	double others = (b->busy_s - a->busy_s) - (b->self_s - a->self_s) -
			peer_self_s;
	if (wall <= 0)
		return 0;
	*steal = (b->steal_s - a->steal_s) / wall;
	return others > 0 ? others / wall : 0;
}

int bench_cpu_count(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}
