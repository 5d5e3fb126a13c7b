/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What one GPU shared by two processes costs a copy (on an H200: a device copy or kernel by
 * one process costs the other's next one about 140 us; host transfers neither pay nor cause
 * it).  Two processes take turns, as a send and its reply do: the measured one
 * copies from the other's allocation through CUDA IPC into its own (one 2-D copy of 256 rows
 * of 512 B, the same by ddtx's copy kernel, 128 KiB by one copy), then hands the turn over;
 * and, for comparison, copies that touch no mapping: 128 KiB within its own memory by one copy
 * and by the copy kernel, and 128 KiB to and from page-locked host memory; the other does, in
 * its turn, one of:
 *   sleeps     waits for its turn in nanosleep (the GPU idle in that process)
 *   spins      waits spinning on the shared flag (a polling progress loop, no CUDA call)
 *   queries    spins asking the driver about a pointer (ddtx classifying segments)
 *   1d copy    one 4 KiB device-to-device copy in its own memory (the copy engine)
 *   kernel     one launch of the copy kernel over 4 KiB of its own memory (the SMs)
 *   to host    one 4 KiB copy from its device memory to page-locked host memory
 * and the table gives the measured copy's microseconds for each pair.  A second table takes
 * the benchmark's vector shapes (rows of a width, a pitch apart, into the same shape) with the
 * other process asleep, each copied through the IPC mapping by one 2-D copy, by the copy
 * kernel, and from a second allocation of the measured process's own by one 2-D copy; and,
 * through the mapping, the same bytes as one contiguous copy and the whole span they lie in:
 * what the shape costs, apart from sharing.  Nothing asserted; without a driver and a device:
 * 77.  Links the provider's internals (hmem/, engine/).
 *   gpu_share [ITERS]
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/gpu_kernels.h"
#include "engine/ipc_copy.h"
#include "hmem/hmem.h"

enum { SPAN = 8 << 20, ROWS = 256, ROW = 512, MAX_ROWS = 8192 };
enum other { SLEEPS, SPINS, QUERIES, COPY_1D, KERNEL, TO_HOST, NOTHER };
static const char *const other_name[NOTHER] = { "sleeps", "spins", "queries", "1d copy",
						"kernel", "to host" };
enum way { W_2D, W_KERNEL, W_1D, W_OWN_1D, W_OWN_KERNEL, W_D2H, W_H2D, NWAY };
static const char *const way_name[NWAY] = { "2-D ipc", "kernel ipc", "1 copy ipc", "1 copy own",
					    "kernel own", "to host", "from host" };

static struct shared {
	_Atomic int turn;     /* 0: the measured process, 1: the other */
	_Atomic int other;    /* what the other does in its turn; NOTHER: exit */
	_Atomic int ready;
	struct ddtx_hmem_ipc h;
} *sh;

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void wait_turn(int want, bool sleep)
{
	struct timespec ns = { 0, 20000 };
	while (atomic_load(&sh->turn) != want)
		if (sleep)
			nanosleep(&ns, NULL);
}

static int other_process(void)
{
	void *mem;
	if (ddtx_hmem_dev_alloc(0, SPAN, &mem) || ddtx_hmem_ipc_export(mem, &sh->h))
		return 1;
	struct ddtx_hmem_copy_op op = { (uint8_t *)mem + SPAN / 2, mem, 4096 };
	struct ddtx_hmem_attr a;
	bool pinned;
	void *host = ddtx_hmem_host_alloc(0, 4096, &pinned);
	if (!host)
		return 1;
	atomic_store(&sh->ready, 1);
	for (;;) {
		int o = atomic_load(&sh->other);
		if (o == NOTHER)
			break;
		if (o == QUERIES)
			while (atomic_load(&sh->turn) != 1)
				ddtx_hmem_detect(mem, &a);
		else
			wait_turn(1, o == SLEEPS);
		if (atomic_load(&sh->other) == NOTHER)
			break;
		if (o == COPY_1D)
			ddtx_hmem_copy_batch(0, &op, 1);
		else if (o == KERNEL)
			ddtx_gpu_copy_pieces(0, &op, 1);
		else if (o == TO_HOST)
			ddtx_hmem_copy(0, host, mem, 4096, DDTX_HMEM_TO_HOST);
		atomic_store(&sh->turn, 0);
	}
	ddtx_hmem_host_free(host, pinned);
	ddtx_hmem_dev_free(0, mem);
	return 0;
}

/* The vector shapes of nc_gpu_bw's layouts (and two to tell row count from pitch). */
static const struct shape {
	const char *name;
	size_t width, rows, pitch;
} shapes[] = {
	{ "256 x 512 B, 1 KiB apart", 512, 256, 1024 },
	{ "MILC 64 x 3 KiB, 96 KiB", 3072, 64, 98304 },
	{ "64 x 3 KiB, 8 KiB apart", 3072, 64, 8192 },
	{ "NAS_MG_y 64 x 1 KiB", 1024, 64, 68640 },
	{ "SPECFEM3D_mt 512 x 4 KiB", 4096, 512, 8192 },
	{ "SW4Lite 55 x 5000 B", 5000, 55, 10000 },
	{ "OSU 8192 x 64 B", 64, 8192, 128 },
};
enum { S_2D, S_KERNEL, S_2D_LOCAL, S_SAME_BYTES, S_SPAN, NS };

static double time_plan(int iters, struct ddtx_ipc_plan *p, enum ddtx_hmem_copy how)
{
	double t = 0;
	int ret = 0;
	for (int k = -3; k < iters && !ret; k++) {
		double t0 = now_us();
		ddtx_ipc_plan_run(0, p, how, &ret);
		if (k >= 0)
			t += now_us() - t0;
	}
	return ret ? -1.0 : t / iters;
}

static int shape_table(int iters, uint8_t *theirs, uint8_t *mine, uint8_t *own_src)
{
	static struct iovec sv[MAX_ROWS], dv[MAX_ROWS], lv[MAX_ROWS];
	printf("# the shapes, the other process asleep (us per copy, mean of %d)\n"
	       "%-28s %9s %9s %9s %11s %9s\n", iters, "shape", "2-D ipc", "kernel",
	       "2-D own", "same bytes", "span");
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		const struct shape *g = &shapes[s];
		struct ddtx_ipc_plan p[NS];
		size_t bytes = g->width * g->rows, span = g->pitch * (g->rows - 1) + g->width;
		for (size_t i = 0; i < g->rows; i++) {
			sv[i] = (struct iovec){ theirs + g->pitch * i, g->width };
			dv[i] = (struct iovec){ mine + g->pitch * i, g->width };
			lv[i] = (struct iovec){ own_src + g->pitch * i, g->width };
		}
		struct iovec s1 = { theirs, bytes }, sspan = { theirs, span }, d1 = { mine, bytes },
			     dspan = { mine, span };
		if (ddtx_ipc_plan_build(dv, g->rows, sv, g->rows, bytes, &p[S_2D]) ||
		    ddtx_ipc_plan_build(dv, g->rows, sv, g->rows, bytes, &p[S_KERNEL]) ||
		    ddtx_ipc_plan_build(dv, g->rows, lv, g->rows, bytes, &p[S_2D_LOCAL]) ||
		    ddtx_ipc_plan_build(&d1, 1, &s1, 1, bytes, &p[S_SAME_BYTES]) ||
		    ddtx_ipc_plan_build(&dspan, 1, &sspan, 1, span, &p[S_SPAN]))
			return 1;
		const enum ddtx_hmem_copy how[NS] = { DDTX_HMEM_COPY_2D, DDTX_HMEM_COPY_KERNEL,
						      DDTX_HMEM_COPY_2D, DDTX_HMEM_COPY_SEGMENTS,
						      DDTX_HMEM_COPY_SEGMENTS };
		printf("%-28s", g->name);
		for (int w = 0; w < NS; w++) {
			printf(" %*.1f", w == S_SAME_BYTES ? 11 : 9, time_plan(iters, &p[w], how[w]));
			ddtx_ipc_plan_free(&p[w]);
		}
		printf("\n");
	}
	return 0;
}

static int measured_process(int iters)
{
	void *mine, *theirs, *own_src;
	size_t size;
	static struct iovec sv[ROWS], dv[ROWS];
	struct ddtx_ipc_plan plan[W_D2H];
	int ret;

	while (!atomic_load(&sh->ready))
		usleep(1000);
	if (ddtx_hmem_dev_alloc(0, SPAN, &mine) || ddtx_hmem_dev_alloc(0, SPAN, &own_src) ||
	    ddtx_hmem_ipc_open(0, sh->h.handle, &theirs, &size) ||
	    shape_table(iters, theirs, mine, own_src))
		return 1;
	for (size_t i = 0; i < ROWS; i++) {
		sv[i] = (struct iovec){ (uint8_t *)theirs + 1024 * i, ROW };
		dv[i] = (struct iovec){ (uint8_t *)mine + 2048 * i, ROW };
	}
	struct iovec s1 = { theirs, ROWS * ROW }, d1 = { mine, ROWS * ROW },
		     o1 = { own_src, ROWS * ROW };
	bool pinned;
	void *host = ddtx_hmem_host_alloc(0, ROWS * ROW, &pinned);
	if (!host || ddtx_ipc_plan_build(dv, ROWS, sv, ROWS, ROWS * ROW, &plan[W_2D]) ||
	    ddtx_ipc_plan_build(dv, ROWS, sv, ROWS, ROWS * ROW, &plan[W_KERNEL]) ||
	    ddtx_ipc_plan_build(&d1, 1, &s1, 1, ROWS * ROW, &plan[W_1D]) ||
	    ddtx_ipc_plan_build(&d1, 1, &o1, 1, ROWS * ROW, &plan[W_OWN_1D]) ||
	    ddtx_ipc_plan_build(dv, ROWS, &o1, 1, ROWS * ROW, &plan[W_OWN_KERNEL]))
		return 1;
	const enum ddtx_hmem_copy how[W_D2H] = { DDTX_HMEM_COPY_2D, DDTX_HMEM_COPY_KERNEL,
						 DDTX_HMEM_COPY_SEGMENTS, DDTX_HMEM_COPY_SEGMENTS,
						 DDTX_HMEM_COPY_KERNEL };
	printf("# gpu_share: the measured process's copy (us, mean of %d turns) while the other\n"
	       "# process, in its turn, ...\n%-10s", iters, "other");
	for (int w = 0; w < NWAY; w++)
		printf(" %11s", way_name[w]);
	printf("\n");
	for (int o = 0; o < NOTHER; o++) {
		atomic_store(&sh->other, o);
		printf("%-10s", other_name[o]);
		for (int w = 0; w < NWAY; w++) {
			double t = 0;
			for (int k = -3; k < iters; k++) {
				double t0 = now_us();
				if (w == W_D2H || w == W_H2D)
					ret = ddtx_hmem_copy(0, w == W_D2H ? host : mine,
							     w == W_D2H ? mine : host, ROWS * ROW,
							     w == W_D2H ? DDTX_HMEM_TO_HOST
									: DDTX_HMEM_TO_DEVICE);
				else
					ddtx_ipc_plan_run(0, &plan[w], how[w], &ret);
				if (k >= 0)
					t += now_us() - t0;
				atomic_store(&sh->turn, 1);
				wait_turn(0, false);
			}
			printf(" %11.1f", ret ? -1.0 : t / iters);
		}
		printf("\n");
	}
	atomic_store(&sh->other, NOTHER);
	atomic_store(&sh->turn, 1);
	for (int w = 0; w < W_D2H; w++)
		ddtx_ipc_plan_free(&plan[w]);
	ddtx_hmem_host_free(host, pinned);
	ddtx_hmem_ipc_close(0, theirs);
	ddtx_hmem_dev_free(0, mine);
	ddtx_hmem_dev_free(0, own_src);
	return 0;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 50;

	/* Fork before the driver starts (CUDA does not survive fork); probe in a child. */
	pid_t probe = fork();
	if (probe == 0)
		_exit(ddtx_hmem_cuda_available() && ddtx_gpu_kernels_ready(0) ? 0 : 77);
	int status = 0;
	waitpid(probe, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		printf("SKIP: no CUDA driver with a device, or no kernels in this build\n");
		return 77;
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	pid_t pid = fork();
	if (pid == 0)
		_exit(other_process());
	int ret = measured_process(iters);
	waitpid(pid, &status, 0);
	return ret || !WIFEXITED(status) || WEXITSTATUS(status) ? 1 : 0;
}
