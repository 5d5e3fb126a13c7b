/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The GPU mode of the bandwidth benchmark: application layouts of ../shared/LAYOUTS.md in
 * device memory, sent device -> device between two processes on one GPU, side by side in one
 * run:
 *   ddtx auto           FI_DDTX_SCHEME=auto, FI_DDTX_HMEM_COPY=auto
 *   ddtx <scheme>       each host scheme (pack, sgl, umr) under the staged device copy
 *   ddtx copy <way>     each way host staging copies the device part (segments, 2d, kernel)
 *   app pack kernel     the application packs with a kernel (ddtx's own pack kernel, launched
 *                       by the application) into a contiguous device buffer, sends it, and the
 *                       receiver unpacks with the kernel (the pack-then-send baseline)
 *   app host staging    the application copies the whole span to host memory, sends the host
 *                       layout with ddtx, the receiver copies its span back to the device
 *   contiguous          the same bytes as one contiguous device buffer
 * Each row runs in fresh processes (settings are read when the provider loads).  Every row's
 * first transfer is checked byte for byte, before the clock starts.  One transfer = send + a
 * 0-byte reply; bandwidth is payload / time per transfer.  Without a driver or a device: 77.
 *   nc_gpu_bw [-i ITERS] [LAYOUT...]     (NC_GPU_ROW=TEXT: only the rows whose name holds it)
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../functional/fx.h"
#include "engine/gpu_kernels.h"

typedef int cu_result;
typedef unsigned long long cu_ptr;
static struct {
	cu_result (*init)(unsigned int);
	cu_result (*device_count)(int *);
	cu_result (*device_get)(int *, int);
	cu_result (*ctx_retain)(void **, int);
	cu_result (*ctx_set)(void *);
	cu_result (*alloc)(cu_ptr *, size_t);
	cu_result (*free)(cu_ptr);
	cu_result (*htod)(cu_ptr, const void *, size_t);
	cu_result (*dtoh)(void *, cu_ptr, size_t);
} cu;

static int cuda_open(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	int n = 0, dev;
	void *ctx;
	if (!lib)
		return FT_SKIP;
#define SYM(f, name) *(void **)&cu.f = dlsym(lib, name)
	SYM(init, "cuInit");
	SYM(device_count, "cuDeviceGetCount");
	SYM(device_get, "cuDeviceGet");
	SYM(ctx_retain, "cuDevicePrimaryCtxRetain");
	SYM(ctx_set, "cuCtxSetCurrent");
	SYM(alloc, "cuMemAlloc_v2");
	SYM(free, "cuMemFree_v2");
	SYM(htod, "cuMemcpyHtoD_v2");
	SYM(dtoh, "cuMemcpyDtoH_v2");
	if (!cu.init || cu.init(0) || cu.device_count(&n) || n < 1 || cu.device_get(&dev, 0) ||
	    cu.ctx_retain(&ctx, dev) || cu.ctx_set(ctx))
		return FT_SKIP;
	return 0;
}

/* Layouts: count1 rows of count0 blocks (block bytes, stride0 apart), rows stride1 apart;
 * random: count0 blocks at distinct random places of a `stride0`-block array (fixed seed). */
struct layout {
	const char *name;
	size_t block, count0, count1;
	size_t stride0, stride1;
	bool random;
};
static const struct layout layouts[] = {
	{"MILC_su3_zd(16,16,32,32)", 3072, 64, 1, 98304, 0, false},
	{"NAS_MG_x(130,66,66)", 8, 64, 64, 8 * 130, 8 * 130 * 66, false},
	{"NAS_MG_y(130,66,66)", 1024, 64, 1, 8 * 130 * 66, 0, false},
	{"SPECFEM3D_mt(1024,2,512)", 4096, 512, 1, 8192, 0, false},
	{"SPECFEM3D_oc(88881,3225)", 4, 3225, 1, 88881, 0, true},
	{"SW4Lite_5K", 5000, 55, 1, 10000, 0, false},
	{"SW4Lite_48", 48, 3000, 1, 96, 0, false},
	{"OSU_vector_64x8192", 64, 8192, 1, 128, 0, false},
};

static size_t build_iov(const struct layout *l, uint8_t *base, struct iovec *iov)
{
	size_t n = 0, span = 0;
	if (l->random) {
		uint64_t rng = 42;
		size_t g = l->stride0, *perm = malloc(g * sizeof(size_t));
		for (size_t i = 0; i < g; i++)
			perm[i] = i;
		for (size_t i = 0; i < g; i++) {
			size_t j = (size_t)(ft_rand(&rng) % g), t = perm[i];
			perm[i] = perm[j];
			perm[j] = t;
		}
		for (; n < l->count0; n++)
			iov[n] = (struct iovec){base + perm[n] * l->block, l->block};
		free(perm);
		return g * l->block;
	}
	for (size_t r = 0; r < l->count1; r++)
		for (size_t b = 0; b < l->count0; b++, n++) {
			size_t off = r * l->stride1 + b * l->stride0;
			iov[n] = (struct iovec){base + off, l->block};
			if (off + l->block > span)
				span = off + l->block;
		}
	return span;
}

enum row_kind { ROW_DDTX, ROW_APP_KERNEL, ROW_APP_STAGING, ROW_CONTIG };
struct row {
	const char *name;
	enum row_kind kind;
	const char *scheme, *copy;
};
static const struct row rows[] = {
	{"ddtx auto", ROW_DDTX, "auto", "auto"},
	{"ddtx pack", ROW_DDTX, "pack", "auto"},
	{"ddtx sgl", ROW_DDTX, "sgl", "auto"},
	{"ddtx umr", ROW_DDTX, "umr", "auto"},
	{"ddtx copy segments", ROW_DDTX, "auto", "segments"},
	{"ddtx copy 2d", ROW_DDTX, "auto", "2d"},
	{"ddtx copy kernel", ROW_DDTX, "auto", "kernel"},
	{"app pack kernel", ROW_APP_KERNEL, "auto", "auto"},
	{"app host staging", ROW_APP_STAGING, "auto", "auto"},
	{"contiguous", ROW_CONTIG, "auto", "auto"},
};

struct job {
	const struct layout *l;
	const struct row *r;
	int iters;
};
/* What each row's two processes report back (a shared page): the time per transfer, the
 * time each side spent in the application's own kernels, and what ddtx says it did. */
struct result {
	double us, median_us, kernel_us[2];
	double send_call_us;
	uint64_t ipc_rx, ipc_2d, ipc_kernel, tx_packed, ipc_opens, ipc_plan_ns, ipc_copy_ns;
	uint64_t copy_ops[FI_DDTX_HMEM_COPY_COUNT], ptr_queries;
};
static struct result *res;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* A send of iov (or, over the iov limit, of its layout handle over base) and a 0-byte reply;
 * the time the sender spent in fi_sendmsg is added to *call. */
static void xfer(struct ft_ctx *ctx, struct fx *fx, const struct iovec *iov, size_t n,
		 struct fi_ddtx_layout *h, void *base, double *call)
{
	void *desc = h;
	struct iovec whole;
	if (h) {
		whole = (struct iovec){base, fx->ops->layout_size(h)};
		iov = &whole;
		n = 1;
	}
	struct fx_comp c;
	int peer = 1 - ctx->rank;
	if (ctx->rank == 0) {
		struct fi_msg m = {.msg_iov = iov, .iov_count = n, .addr = fx->peers[peer],
				   .desc = h ? &desc : NULL};
		double t = ft_now();
		FX_OK(fx, fi_sendmsg(fx->ep, &m, FI_COMPLETION));
		*call += ft_now() - t;
		FX_OK(fx, fi_recv(fx->ep, NULL, 0, NULL, fx->peers[peer], NULL));
		fx_wait(fx, 2, NULL, 60000);
	} else {
		struct fi_msg m = {.msg_iov = iov, .iov_count = n, .addr = FI_ADDR_UNSPEC,
				   .desc = h ? &desc : NULL};
		FX_OK(fx, fi_recvmsg(fx->ep, &m, FI_COMPLETION));
		fx_wait(fx, 1, &c, 60000);
		FX_OK(fx, fi_send(fx->ep, NULL, 0, NULL, fx->peers[peer], NULL));
		fx_wait(fx, 1, NULL, 60000);
	}
}

static int run_row(struct ft_ctx *ctx, void *arg)
{
	const struct job *j = arg;
	int skip = cuda_open();
	if (skip)
		return skip;
	setenv("FI_DDTX_SCHEME", j->r->scheme, 1);
	setenv("FI_DDTX_HMEM_COPY", j->r->copy, 1);
	struct fx fx;
	struct fx_opts o = {.caps = FI_MSG | FI_HMEM};
	fx_open(ctx, &o, &fx);
	size_t nb = j->l->count0 * j->l->count1;
	struct iovec *iov = calloc(nb, sizeof(*iov));
	size_t span = build_iov(j->l, NULL, iov), total = nb * j->l->block;
	cu_ptr d = 0, c = 0;
	FT_CHECK(cu.alloc(&d, span) == 0 && cu.alloc(&c, total) == 0, "cuMemAlloc");
	uint8_t *img = fx_alloc(span), *host = fx_alloc(span);
	fx_fill(img, span, ctx->rank == 0 ? 7 : 8, 0);
	FT_CHECK(cu.htod(d, img, span) == 0, "cuMemcpyHtoD");
	memcpy(host, img, span); /* the application's host mirror of its device array */
	/* Over the iov limit, a layout handle of the offsets (from the span's start). */
	struct fi_ddtx_layout *h = NULL;
	if (nb > fx.info->tx_attr->iov_limit) {
		struct fi_ddtx_stats unused;
		fx_stats(&fx, &unused); /* opens fx.ops */
		FT_CHECK(fx.ops->layout_create(fx.domain, iov, nb, &h) == 0, "layout_create");
	}
	build_iov(j->l, (uint8_t *)(uintptr_t)d, iov);
	struct iovec contig = {(void *)(uintptr_t)c, total};
	struct ddtx_gpu_layout gl = {0};
	if (j->r->kind == ROW_APP_KERNEL) {
		struct ddtx_gpu_runs runs;
		FT_CHECK(ddtx_gpu_runs_from_iov(iov, nb, (uintptr_t)d, 0, &runs) == 0 &&
			 ddtx_gpu_layout_upload(&runs, 0, &gl) == 0, "pack kernels (built: %s)",
			 ddtx_gpu_kernels_describe());
	}
	struct iovec *hiov = calloc(nb, sizeof(*hiov));
	build_iov(j->l, host, hiov);
	double t0 = 0, tk = 0, call = 0, *each = calloc(j->iters, sizeof(*each));
	struct fi_ddtx_stats s0, s1;
	for (int it = -1; it < j->iters; it++) {
		if (it == 0) {
			/* The receiver checks the first transfer: the clock starts when both are
			 * done with it (that check, in the timed loop, once added 110-150 us a
			 * transfer to the rows of 4-6 MB arrays). */
			ft_barrier(ctx);
			fx_stats(&fx, &s0);
			t0 = ft_now();
			call = 0;
		}
		double k0 = ft_now(), t_it = k0;
		switch (j->r->kind) {
		case ROW_DDTX:
			xfer(ctx, &fx, iov, nb, h, (void *)(uintptr_t)d, &call);
			break;
		case ROW_CONTIG:
			xfer(ctx, &fx, &contig, 1, NULL, NULL, &call);
			break;
		case ROW_APP_KERNEL:
			if (ctx->rank == 0) {
				FT_CHECK(ddtx_gpu_pack(&gl, (void *)(uintptr_t)d, 0, contig.iov_base,
						       total, true) == 0, "pack kernel");
				tk += it >= 0 ? ft_now() - k0 : 0;
			}
			xfer(ctx, &fx, &contig, 1, NULL, NULL, &call);
			if (ctx->rank == 1) {
				k0 = ft_now();
				FT_CHECK(ddtx_gpu_pack(&gl, (void *)(uintptr_t)d, 0, contig.iov_base,
						       total, false) == 0, "unpack kernel");
				tk += it >= 0 ? ft_now() - k0 : 0;
			}
			break;
		case ROW_APP_STAGING:
			if (ctx->rank == 0)
				FT_CHECK(cu.dtoh(host, d, span) == 0, "cuMemcpyDtoH");
			xfer(ctx, &fx, hiov, nb, h, host, &call);
			if (ctx->rank == 1)
				FT_CHECK(cu.htod(d, host, span) == 0, "cuMemcpyHtoD");
			break;
		}
		if (it < 0 && ctx->rank == 1 && j->r->kind != ROW_CONTIG) {
			/* the first transfer, byte for byte: the sender's blocks in ours */
			uint8_t *want = fx_alloc(span), *got = fx_alloc(span), *s = fx_alloc(span);
			fx_fill(s, span, 7, 0);
			memcpy(want, img, span);
			struct iovec *siov = calloc(nb, sizeof(*siov)), *riov = calloc(nb, sizeof(*riov));
			build_iov(j->l, s, siov);
			build_iov(j->l, want, riov);
			for (size_t k = 0; k < nb; k++)
				memcpy(riov[k].iov_base, siov[k].iov_base, j->l->block);
			FT_CHECK(cu.dtoh(got, d, span) == 0, "cuMemcpyDtoH");
			FT_CHECK(!memcmp(got, want, span), "%s / %s: received bytes differ",
				 j->l->name, j->r->name);
			free(want), free(got), free(s), free(siov), free(riov);
		}
		if (it >= 0)
			each[it] = ft_now() - t_it;
	}
	double us = (ft_now() - t0) * 1e6 / j->iters;
	fx_stats(&fx, &s1);
	if (ctx->rank == 0) {
		/* The median beside the mean: a few slow transfers (a way tried, a mapping
		 * opened) move the mean, not the median. */
		qsort(each, j->iters, sizeof(*each), cmp_double);
		res->us = us;
		res->send_call_us = call * 1e6 / j->iters;
		res->median_us = each[j->iters / 2] * 1e6;
	}
	free(each);
	res->kernel_us[ctx->rank] = tk * 1e6 / j->iters;
	__atomic_add_fetch(&res->ipc_rx, s1.hmem_ipc_rx - s0.hmem_ipc_rx, __ATOMIC_RELAXED);
	__atomic_add_fetch(&res->ipc_2d, s1.hmem_ipc_copy_2d - s0.hmem_ipc_copy_2d,
			   __ATOMIC_RELAXED);
	__atomic_add_fetch(&res->ipc_kernel, s1.hmem_ipc_copy_kernel - s0.hmem_ipc_copy_kernel,
			   __ATOMIC_RELAXED);
	__atomic_add_fetch(&res->tx_packed, s1.hmem_ipc_tx_packed - s0.hmem_ipc_tx_packed,
			   __ATOMIC_RELAXED);
	__atomic_add_fetch(&res->ipc_opens, s1.hmem_ipc_opens - s0.hmem_ipc_opens,
			   __ATOMIC_RELAXED);
	__atomic_add_fetch(&res->ipc_plan_ns, s1.hmem_ipc_plan_ns - s0.hmem_ipc_plan_ns,
			   __ATOMIC_RELAXED);
	__atomic_add_fetch(&res->ipc_copy_ns, s1.hmem_ipc_copy_ns - s0.hmem_ipc_copy_ns,
			   __ATOMIC_RELAXED);
	for (int w = 0; w < FI_DDTX_HMEM_COPY_COUNT; w++)
		__atomic_add_fetch(&res->copy_ops[w], s1.hmem_copy_ops[w] - s0.hmem_copy_ops[w],
				   __ATOMIC_RELAXED);
	__atomic_add_fetch(&res->ptr_queries, s1.hmem_ptr_queries - s0.hmem_ptr_queries,
			   __ATOMIC_RELAXED);
	if (gl.dev_runs)
		ddtx_gpu_layout_free(&gl);
	if (h)
		fx.ops->layout_free(h);
	fx_close(&fx);
	cu.free(d);
	cu.free(c);
	free(img), free(host), free(iov), free(hiov);
	return 0;
}

int main(int argc, char **argv)
{
	int iters = 100, first = 1;
	if (argc > 2 && !strcmp(argv[1], "-i")) {
		iters = atoi(argv[2]);
		first = 3;
	}
	/* fx_shmem is mapped by fx_main's helpers; use our own shared page */
	res = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	printf("# nc_gpu_bw: device -> device, two processes, one GPU; %d transfers per row\n",
	       iters);
	printf("# via: how ddtx moved it (ipc = the receiver copied from the sender's device memory,\n"
	       "#      staged = through host memory; the way device memory was copied), per transfer;\n"
	       "#      q = driver pointer queries per transfer (both sides); app kernel rows: the\n"
	       "#      microseconds of the pack and the unpack kernel calls; ipc rows: the sender's\n"
	       "#      time in fi_sendmsg, the receiver's from taking the offer to the copy's start\n"
	       "#      and the copy's own, per transfer (us: the mean, median: the median transfer)\n");
	printf("%-28s %-20s %10s %10s %10s %10s  %s\n", "layout", "row", "bytes", "us", "median",
	       "GB/s", "via");
	int status = 0;
	for (size_t li = 0; li < sizeof(layouts) / sizeof(layouts[0]); li++) {
		const struct layout *l = &layouts[li];
		bool want = argc <= first;
		for (int a = first; a < argc; a++)
			want |= strstr(l->name, argv[a]) != NULL;
		if (!want)
			continue;
		size_t total = l->block * l->count0 * l->count1;
		for (size_t ri = 0; ri < sizeof(rows) / sizeof(rows[0]); ri++) {
			const char *only = getenv("NC_GPU_ROW"); /* e.g. "auto": one row, to profile */
			if (only && !strstr(rows[ri].name, only))
				continue;
			/* a driver copy per block: ~10 us each, ms per transfer; fewer of them */
			bool slow = !strcmp(rows[ri].copy, "segments");
			struct job j = {l, &rows[ri], slow && iters > 10 ? iters / 10 : iters};
			memset(res, 0, sizeof(*res));
			int rc = ft_spawn(2, 600, run_row, &j);
			if (rc == FT_SKIP) {
				printf("SKIP: no CUDA driver or device (nothing measured)\n");
				return 77;
			}
			if (rc) {
				printf("%-28s %-20s %10zu %10s %10s %10s\n", l->name, rows[ri].name, total,
				       "FAILED", "-", "-");
				status = 1;
				continue;
			}
			double us = res->us, n = j.iters;
			char via[224];
			if (rows[ri].kind == ROW_APP_KERNEL)
				snprintf(via, sizeof(via), "pack %.1f us, unpack %.1f us",
					 res->kernel_us[0], res->kernel_us[1]);
			else if (res->ipc_rx)
				snprintf(via, sizeof(via), "ipc%s %.2f (2d %.2f kernel %.2f batched "
					 "%.2f), q %.1f, opens %.2f; send call %.1f, plan %.1f, "
					 "copy %.1f us",
					 res->tx_packed ? " of the sender's device pack" : "",
					 res->ipc_rx / n, res->ipc_2d / n, res->ipc_kernel / n,
					 (res->ipc_rx - res->ipc_2d - res->ipc_kernel) / n,
					 res->ptr_queries / n, res->ipc_opens / n, res->send_call_us,
					 res->ipc_plan_ns / n / 1e3, res->ipc_copy_ns / n / 1e3);
			else
				snprintf(via, sizeof(via), "staged seg %.2f 2d %.2f kernel %.2f, q %.1f",
					 res->copy_ops[0] / n, res->copy_ops[1] / n,
					 res->copy_ops[2] / n, res->ptr_queries / n);
			printf("%-28s %-20s %10zu %10.1f %10.1f %10.2f  %s\n", l->name, rows[ri].name,
			       total, us, res->median_us, total / us / 1e3, via);
			fflush(stdout);
		}
	}
	return status;
}
