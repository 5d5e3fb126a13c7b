/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * core_bounce: what moving memory between two cores costs on this host right now.  Two threads
 * pinned to two CPUs hand one cache line back and forth (the one-way latency of a line), then
 * a 64 KiB buffer (one writes all of it, the other reads all of it, in turn).
 *
 * Why: the AMD EPYC KVM host of these benchmarks switches between two regimes that last from
 * seconds to minutes.  In the slow one, data written by one vCPU and read by the other moves
 * 2.5-5x slower (nc_bw ping-pong of 32 x 1 KiB: ddtx's PACK 4.1 -> 19.6 us, libfabric shm's
 * application pack path 9.2 -> 24), while one copy by the kernel (process_vm_readv) does not
 * change (13-15 us), 2026-11-27.  Every benchmark of two processes moves with it, so the scripts
 * print this figure before and after their runs, and a table is read against its regime.
 *
 *   core_bounce [-c CPU_A,CPU_B] [-n ROUNDS]      (default CPUs 0,1; 20000 line rounds)
 * Prints one line: "core_bounce: cpus A,B: line X ns one-way, 64 KiB Y us one-way (Z GB/s)".
 * Exit 77 when fewer than two CPUs can be used.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* CPU_SET, pthread_setaffinity_np (meson defines it; util/lib.sh does not) */
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUF_BYTES (64 * 1024)

struct side {
	int cpu;
	int me;                 /* 0 or 1: whose turn `turn` says it is */
};

static _Alignas(64) _Atomic long turn;  /* the bounced line: even = side 0's turn, odd = 1's */
static long rounds;
static long buf_rounds;
static _Alignas(64) uint64_t buf[BUF_BYTES / sizeof(uint64_t)];
static volatile uint64_t sink;

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* Wait until the turn counter reaches t (this side's next turn). */
static void wait_turn(long t)
{
	while (atomic_load_explicit(&turn, memory_order_acquire) != t)
		;
}

static void *run(void *arg)
{
	struct side *s = arg;
	if (pin(s->cpu))
		return (void *)1;
	long t = s->me;
	for (long i = 0; i < rounds; i++, t += 2) {
		wait_turn(t);
		atomic_store_explicit(&turn, t + 1, memory_order_release);
	}
	/* The buffer: side 0 writes it all, side 1 reads it all, and so on. */
	for (long i = 0; i < buf_rounds; i++, t += 2) {
		wait_turn(t);
		if (s->me == 0) {
			memset(buf, (int)(i & 0xff), sizeof(buf));
		} else {
			uint64_t sum = 0;
			for (size_t k = 0; k < BUF_BYTES / sizeof(uint64_t); k++)
				sum += buf[k];
			sink = sum;
		}
		atomic_store_explicit(&turn, t + 1, memory_order_release);
	}
	return NULL;
}

/* Both sides through `n_line` line rounds and `n_buf` buffer rounds; microseconds taken. */
static double timed(struct side sides[2], long n_line, long n_buf)
{
	pthread_t th[2];
	rounds = n_line;
	buf_rounds = n_buf;
	atomic_store(&turn, 0);
	double t0 = now_us();
	for (int i = 0; i < 2; i++)
		if (pthread_create(&th[i], NULL, run, &sides[i]))
			return -1.0;
	void *r0, *r1;
	pthread_join(th[0], &r0);
	pthread_join(th[1], &r1);
	return r0 || r1 ? -1.0 : now_us() - t0;
}

int main(int argc, char **argv)
{
	int a = 0, b = 1, opt;
	long n = 20000;
	while ((opt = getopt(argc, argv, "c:n:h")) != -1) {
		switch (opt) {
		case 'c':
			if (sscanf(optarg, "%d,%d", &a, &b) != 2 || a < 0 || b < 0 || a == b) {
				fprintf(stderr, "core_bounce: -c CPU_A,CPU_B\n");
				return 2;
			}
			break;
		case 'n':
			n = atol(optarg);
			if (n < 100) {
				fprintf(stderr, "core_bounce: -n 100 or more\n");
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: core_bounce [-c CPU_A,CPU_B] [-n ROUNDS]\n");
			return 2;
		}
	}
	cpu_set_t allowed;
	if (sched_getaffinity(0, sizeof(allowed), &allowed) || !CPU_ISSET(a, &allowed) ||
	    !CPU_ISSET(b, &allowed)) {
		printf("core_bounce: CPUs %d and %d are not both usable here: skipped\n", a, b);
		return 77;
	}
	struct side sides[2] = {{.cpu = a, .me = 0}, {.cpu = b, .me = 1}};
	/* Each phase timed alone (the other's rounds 0) and the fastest of three kept: a
	 * preemption lengthens a run, never shortens it. */
	long nbuf = n / 20 > 0 ? n / 20 : 1;
	double line = -1.0, whole = -1.0;
	for (int rep = 0; rep < 3; rep++) {
		double tl = timed(sides, n, 0), tb = timed(sides, 0, nbuf);
		if (tl < 0 || tb < 0) {
			printf("core_bounce: could not pin threads to CPUs %d and %d: skipped\n", a, b);
			return 77;
		}
		line = line < 0 || tl < line ? tl : line;
		whole = whole < 0 || tb < whole ? tb : whole;
	}
	double line_ns = line * 1e3 / (2.0 * (double)n);
	double buf_us = whole / (2.0 * (double)nbuf);
	printf("core_bounce: cpus %d,%d: line %.0f ns one-way, 64 KiB %.2f us one-way (%.1f GB/s)\n",
	       a, b, line_ns, buf_us, BUF_BYTES / buf_us / 1e3);
	return 0;
}
