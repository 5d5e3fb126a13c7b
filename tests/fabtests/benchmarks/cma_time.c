/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cma_time.so: an LD_PRELOAD library that times every process_vm_readv / process_vm_writev of
 * the process it is loaded into, whoever makes it: ddtx's shm wire calls libc's wrappers,
 * libfabric's shm provider calls syscall(2) directly, so both are wrapped.  At exit it writes
 * one line to $CMA_TIME.<pid> (nothing without CMA_TIME):
 *   calls N mean_ns M over20us K over20us_ns T
 * util/cma-time.sh runs a fabtests ping-pong pair under it and sets what a one-way transfer
 * spends outside the kernel's copy beside the copy itself: the part a provider's own work
 * decides (issue 12: 96-128 KiB contiguous, where ddtx and libfabric shm both move the bytes
 * with one process_vm_readv by the receiver).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define SPIKE_NS 20000L
/* The project builds with hidden visibility; the wrappers must replace libc's. */
#define EXPORT __attribute__((visibility("default")))

typedef long (*syscall_fn)(long, ...);

static long calls, spikes;
static double total_ns, spike_ns;

static syscall_fn real_syscall(void)
{
	static syscall_fn fn;
	if (!fn)
		fn = (syscall_fn)dlsym(RTLD_NEXT, "syscall");
	return fn;
}

static long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

static long timed(long nr, long a, long b, long c, long d, long e, long f)
{
	long t0 = now_ns();
	long r = real_syscall()(nr, a, b, c, d, e, f);
	long dt = now_ns() - t0;
	calls++;
	total_ns += (double)dt;
	if (dt > SPIKE_NS) {
		spikes++;
		spike_ns += (double)dt;
	}
	return r;
}

EXPORT long syscall(long nr, ...)
{
	va_list ap;
	long a[6];
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == SYS_process_vm_readv || nr == SYS_process_vm_writev)
		return timed(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	return real_syscall()(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

EXPORT ssize_t process_vm_readv(pid_t pid, const struct iovec *l, unsigned long nl,
			 const struct iovec *r, unsigned long nr, unsigned long flags)
{
	return timed(SYS_process_vm_readv, pid, (long)l, (long)nl, (long)r, (long)nr, (long)flags);
}

EXPORT ssize_t process_vm_writev(pid_t pid, const struct iovec *l, unsigned long nl,
			  const struct iovec *r, unsigned long nr, unsigned long flags)
{
	return timed(SYS_process_vm_writev, pid, (long)l, (long)nl, (long)r, (long)nr, (long)flags);
}

__attribute__((destructor)) static void report(void)
{
	const char *prefix = getenv("CMA_TIME");
	if (!prefix || !calls)
		return;
	char path[4096];
	snprintf(path, sizeof(path), "%s.%d", prefix, (int)getpid());
	FILE *f = fopen(path, "w");
	if (!f)
		return;
	fprintf(f, "calls %ld mean_ns %.0f over20us %ld over20us_ns %.0f\n", calls,
		total_ns / (double)calls, spikes, spike_ns);
	fclose(f);
}
