/*
 * bench_cpu: how busy the machine was during a run, to tell a clean
 * measurement from one disturbed by other processes (on two CPUs, two
 * busy-polling ranks already use everything).
 */
#ifndef MRAIL_BENCH_CPU_H
#define MRAIL_BENCH_CPU_H

struct bench_cpu {
	double busy_s;  /* whole machine: user+nice+system+irq+softirq */
	double steal_s; /* taken by the hypervisor */
	double self_s;  /* this process (user + system, all threads) */
	double wall_s;
};

/* Snapshot now. */
void bench_cpu_sample(struct bench_cpu *c);

/*
 * CPUs' worth of time used by others between two snapshots, given the CPU
 * seconds of the job's other ranks (peer_self_s). *steal gets the stolen
 * CPUs. Approximate (kernel work for the job's own sockets can land on
 * other tasks' accounts).
 */
double bench_cpu_others(const struct bench_cpu *a, const struct bench_cpu *b,
			double peer_self_s, double *steal);

/* Number of online CPUs. */
int bench_cpu_count(void);

#endif
