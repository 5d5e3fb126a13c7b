/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Device memory (FI_HMEM_CUDA) through the public API, two real processes.  The program reaches
 * the CUDA driver through dlopen("libcuda.so.1") exactly as the provider does, so the same
 * binary runs against:
 *   - the test-only stand-in tests/fabtests/fakecuda (LD_LIBRARY_PATH, as meson test sets it):
 *     ddtx's own logic (offer, registration, staging, errors) in CI.  Its "device memory" is
 *     PROT_NONE to the host, so a host access by ddtx instead of a driver copy kills the rank.
 *     This is not CUDA.
 *   - a real GPU (util/gpu-tests.sh): the same checks on device memory.
 * Without a driver or a device: exit 77.
 *
 *   offer      FI_HMEM in fi_getinfo exactly when the driver has a device (FAKE_CUDA_DEVICES=0:
 *              -FI_ENODATA, as without CUDA)
 *   d2d d2h h2d  layouts (contiguous, vectors of 8 B to 4 KiB blocks, an irregular list),
 *              eager and rendezvous sizes, msg and tagged, with and without MR descriptors:
 *              every byte of the receiver's buffer checked (payload and the bytes around it),
 *              and the way the device side was copied (fi_ddtx_stats.hmem_copy_ops: what
 *              FI_DDTX_HMEM_COPY forces, a forced way that cannot apply counting a fallback
 *              and auto's choice running; under auto one possible for the layout, the
 *              learned model's choice: test_hmem_copy checks its priors and its learning)
 *   errors     device memory without FI_HMEM, wrong iface in fi_mr_regattr, remote access to a
 *              device MR, FI_HMEM_DEVICE_ONLY on host memory, FI_MULTI_RECV on device memory,
 *              freed device memory behind an MR descriptor: -FI_E*, no crash
 *   cancel     a posted device receive cancelled by the caller's context
 *   host_queries  host memory only, in a domain without FI_HMEM and in one with it: the first
 *              operation asks the driver about each segment (the stand-in counts its
 *              cuPointerGetAttributes calls), later ones over the same buffers ask nothing
 *              (fi_ddtx_stats.hmem_ptr_cached counts the segments answered from the domain's
 *              host page cache); after madvise(DONTNEED), and after munmap and a new
 *              mapping, the driver is asked again;
 *              every byte checked.  FI_DDTX_MR_MONITOR=0: no cache, every segment asked.
 *              On the shm wire a device sender's rendezvous goes by CUDA IPC (the receiver
 *              copies from the sender's blocks; fi_ddtx_stats.hmem_ipc_*): checked to be so
 *              above the eager size, with no copy through host memory on either side;
 *              FI_DDTX_HMEM_IPC=0: staged only.  A receiver in host memory declines the
 *              irregular list (300 pieces, a driver copy each): staged, both sides count it.
 *   ipc_decline  d2d with a receiver that declines every IPC offer: the sender stages after
 *              the CTS, every byte checked, both sides count it
 *   ipc_freed  a device send whose buffer is freed before the receiver takes the offer: error
 *              completions on both sides (FI_EIO), no crash, the next message arrives whole
 *   semantics  on device memory: a truncated receive (FI_ETRUNC, the bytes that fit delivered,
 *              nothing past the buffer), fi_inject and fi_injectdata (no completion; the data
 *              arrives), selective completion (FI_COMPLETION only where asked; the data of the
 *              others arrives all the same, the counters count them)
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fx.h"

#define TMO 20000

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
	unsigned long long *queries;   /* the stand-in's count of cuPointerGetAttributes calls */
} cu;

/* 0 with a device and its context current; FT_SKIP otherwise. */
static int cuda_open(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	int n = 0, dev;
	void *ctx;

	if (!lib) {
		printf("SKIP: no libcuda.so.1\n");
		return FT_SKIP;
	}
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
	SYM(queries, "fake_cuda_pointer_queries");
	if (!cu.init || !cu.alloc || cu.init(0) || cu.device_count(&n) || n < 1 ||
	    cu.device_get(&dev, 0) || cu.ctx_retain(&ctx, dev) || cu.ctx_set(ctx)) {
		printf("SKIP: no CUDA device\n");
		return FT_SKIP;
	}
	return 0;
}

static void *dev_alloc(size_t len)
{
	cu_ptr p = 0;
	FT_CHECK(cu.alloc(&p, len) == 0, "cuMemAlloc(%zu)", len);
	return (void *)(uintptr_t)p;
}

/* A buffer of either kind with host-side access through copies. */
struct buf {
	bool dev;
	uint8_t *p;
	size_t len;
};

static void buf_init(struct buf *b, bool dev, size_t len)
{
	b->dev = dev;
	b->len = len;
	b->p = dev ? dev_alloc(len) : fx_alloc(len);
}

static void buf_put(struct buf *b, const void *src)
{
	if (b->dev)
		FT_CHECK(cu.htod((uintptr_t)b->p, src, b->len) == 0, "cuMemcpyHtoD");
	else
		memcpy(b->p, src, b->len);
}

static void buf_get(const struct buf *b, void *dst)
{
	if (b->dev)
		FT_CHECK(cu.dtoh(dst, (uintptr_t)b->p, b->len) == 0, "cuMemcpyDtoH");
	else
		memcpy(dst, b->p, b->len);
}

static void buf_free(struct buf *b)
{
	if (b->dev)
		cu.free((uintptr_t)b->p);
	else
		free(b->p);
}

/* Layouts: count blocks of `block` bytes `stride` apart; block 0: an irregular list. */
struct layout {
	const char *name;
	size_t count, block, stride;
};
static const struct layout layouts[] = {
	{"contig_1k", 1, 1024, 0},          {"contig_1m", 1, 1 << 20, 0},
	{"vec_8x200", 200, 8, 24},          {"vec_64x64", 64, 64, 128},
	{"vec_4k_256", 256, 4096, 8192},    {"vec_512_1024", 1024, 512, 640},
	{"irregular_300", 300, 0, 0},
};

static size_t irregular_len(size_t i)
{
	static const size_t lens[] = {1, 7, 64, 300, 4096, 13, 512, 3};
	return lens[i % 8];
}

/* The layout's iov list over base; returns the span it covers. */
static size_t layout_iov(const struct layout *l, uint8_t *base, struct iovec *iov)
{
	size_t pos = 0;
	for (size_t i = 0; i < l->count; i++) {
		size_t len = l->block ? l->block : irregular_len(i);
		if (l->block)
			pos = i * l->stride;
		iov[i].iov_base = base + pos;
		iov[i].iov_len = len;
		if (!l->block)
			pos += len + (i % 3) * 5;
	}
	return l->block ? (l->count - 1) * l->stride + l->block : pos;
}

static size_t layout_span(const struct layout *l)
{
	static struct iovec iov[4096];
	return layout_iov(l, NULL, iov);
}

struct dir {
	bool sdev, rdev;
	bool tagged, desc;
};

static struct fx_opts hmem_opts = {.caps = FI_MSG | FI_TAGGED | FI_HMEM};

/*
 * The way FI_DDTX_HMEM_COPY and the layout call for; -1: segments or kernel (irregular, or
 * auto on a vector: auto takes the way its learned model predicts fastest among those
 * possible, and against this test's driver stand-in a copy per segment can be the fastest).
 */
/* The driver stand-in emulating the pack kernels (FAKE_CUDA_KERNELS=1): a forced kernel way
 * must then be the kernel, not a fallback. */
static bool kernels_emulated(void)
{
	return fx_env_long("FAKE_CUDA_KERNELS", 0) == 1;
}

static int expected_way(const struct layout *l, bool *fallback)
{
	const char *f = getenv("FI_DDTX_HMEM_COPY");
	bool vector = l->block && l->count > 1;
	*fallback = false;
	if (!f || !strcmp(f, "auto"))
		return l->count > 1 ? -1 : FI_DDTX_HMEM_COPY_SEGMENTS;
	if (!strcmp(f, "segments"))
		return FI_DDTX_HMEM_COPY_SEGMENTS;
	if (!strcmp(f, "2d")) {
		*fallback = !vector;
		return vector ? FI_DDTX_HMEM_COPY_2D : FI_DDTX_HMEM_COPY_SEGMENTS;
	}
	return -2; /* kernel: the kernel, or auto's choice and a fallback without kernels */
}

/*
 * CUDA IPC (shm wire, FI_DDTX_HMEM_IPC): did it carry this message, and is that what was due?
 * Due for a device sender above the eager size (16 KiB); below it the cost model may still
 * choose a rendezvous, so either is right there.  Carried: no copy through host memory on
 * either side, and the receiver counts the bytes.
 */
static bool receiver_declines; /* ipc_decline: the receiver runs with FI_DDTX_HMEM_IPC=0 */

/* A receiver in host memory declines an offer of more than 16 pieces that no 2-D copy moves
 * (a driver copy each), unless FI_DDTX_HMEM_COPY forces a way. */
static bool declined_to_host(const struct dir *d, const struct layout *l)
{
	const char *f = getenv("FI_DDTX_HMEM_COPY");
	return d->sdev && !d->rdev && !l->block && l->count > 16 && (!f || !strcmp(f, "auto"));
}

static bool check_ipc(const struct fi_ddtx_stats *s0, const struct fi_ddtx_stats *s1,
		      const struct dir *d, const struct layout *l, size_t total, bool sender,
		      const char *what)
{
	bool on = fx_env_long("FI_DDTX_HMEM_IPC", 1) != 0 && !getenv("FI_DDTX_WIRE");
	uint64_t n = sender ? s1->hmem_ipc_tx - s0->hmem_ipc_tx : s1->hmem_ipc_rx - s0->hmem_ipc_rx;
	if ((receiver_declines || (on && declined_to_host(d, l))) && d->sdev && total > 16384) {
		/* offered, declined, and staged after all */
		uint64_t k = sender ? s1->hmem_ipc_tx_staged - s0->hmem_ipc_tx_staged
				    : s1->hmem_ipc_declined - s0->hmem_ipc_declined;
		FT_CHECK(n == 0 && k == 1, "%s: %s: %llu by IPC, %llu declined", what,
			 sender ? "sender" : "receiver", (unsigned long long)n,
			 (unsigned long long)k);
		/* the staged bytes went by the forced scheme (counted where it is decided) */
		int forced = fx_scheme_of(getenv("FI_DDTX_SCHEME"));
		if (!sender && forced >= 0)
			FT_CHECK(s1->ops[forced] - s0->ops[forced] == 1,
				 "%s: not carried by FI_DDTX_SCHEME=%s after the decline", what,
				 fx_scheme_name(forced));
		return false;
	}
	if (!on || !d->sdev || receiver_declines || declined_to_host(d, l))
		FT_CHECK(n == 0, "%s: %llu messages by CUDA IPC, want none", what,
			 (unsigned long long)n);
	else if (total > 16384)
		FT_CHECK(n == 1, "%s: not carried by CUDA IPC", what);
	FT_CHECK(n <= 1, "%s: %llu messages by CUDA IPC", what, (unsigned long long)n);
	if (!n)
		return false;
	for (int w = 0; w < FI_DDTX_HMEM_COPY_COUNT; w++)
		FT_CHECK(s1->hmem_copy_ops[w] == s0->hmem_copy_ops[w],
			 "%s: CUDA IPC, yet a copy through host memory", what);
	if (!sender)
		FT_CHECK(s1->hmem_ipc_bytes - s0->hmem_ipc_bytes == total &&
			 s1->hmem_ipc_copy_2d + s1->hmem_ipc_copy_batched + s1->hmem_ipc_copy_kernel -
			 s0->hmem_ipc_copy_2d - s0->hmem_ipc_copy_batched - s0->hmem_ipc_copy_kernel == 1,
			 "%s: CUDA IPC bytes or copies miscounted", what);
	/* A forced kernel into device memory with the kernels loaded: the copy kernel did it. */
	const char *way = getenv("FI_DDTX_HMEM_COPY");
	if (!sender && d->rdev && l->count > 1 && kernels_emulated() && way &&
	    !strcmp(way, "kernel"))
		FT_CHECK(s1->hmem_ipc_copy_kernel - s0->hmem_ipc_copy_kernel == 1,
			 "%s: forced kernel, kernels loaded: the IPC copy was no kernel", what);
	return true;
}

/*
 * Zero copy by the NIC (hmem_direct.c): the stand-in's door open (FAKE_CUDA_HOST_VIEW=1) makes
 * the shm wire one whose keys reach device memory; with CUDA IPC off, every device send goes
 * so.  Did this side's message go zero copy, as due?  Due: a device sender (never PACK, no
 * copy through host memory); a device receiver of a device sender.  A device receiver of a
 * host sender may go either way (the sender's eager or PACK: staged).
 */
static bool direct_on(void)
{
	return fx_env_long("FAKE_CUDA_HOST_VIEW", 0) == 1 && fx_env_long("FI_DDTX_HMEM_IPC", 1) == 0;
}

static bool check_direct(const struct fi_ddtx_stats *s0, const struct fi_ddtx_stats *s1,
			 const struct dir *d, const struct layout *l, size_t total, bool sender,
			 const char *what)
{
	if (!direct_on()) {
		FT_CHECK(s1->hmem_direct_tx == s0->hmem_direct_tx &&
			 s1->hmem_direct_rx == s0->hmem_direct_rx, "%s: zero copy of device "
			 "memory on a wire without device keys", what);
		return false;
	}
	uint64_t n = sender ? s1->hmem_direct_tx - s0->hmem_direct_tx
			    : s1->hmem_direct_rx - s0->hmem_direct_rx;
	bool due = sender ? d->sdev : d->rdev && d->sdev;
	FT_CHECK(n == (due ? 1u : 0u) || (!sender && d->rdev && n == 1), "%s: %s: %llu zero copy "
		 "transfers of device memory", what, sender ? "sender" : "receiver",
		 (unsigned long long)n);
	if (!sender && d->sdev) {
		uint64_t z = s1->ops[FI_DDTX_SCHEME_SGL] + s1->ops[FI_DDTX_SCHEME_UMR] -
			     s0->ops[FI_DDTX_SCHEME_SGL] - s0->ops[FI_DDTX_SCHEME_UMR];
		FT_CHECK(z == 1 && s1->ops[FI_DDTX_SCHEME_PACK] == s0->ops[FI_DDTX_SCHEME_PACK],
			 "%s: a device sender's message not carried zero copy", what);
	}
	if (!n)
		return false;
	for (int w = 0; w < FI_DDTX_HMEM_COPY_COUNT; w++)
		FT_CHECK(s1->hmem_copy_ops[w] == s0->hmem_copy_ops[w],
			 "%s: zero copy, yet a copy through host memory", what);
	FT_CHECK(s1->hmem_direct_bytes - s0->hmem_direct_bytes == total,
		 "%s: zero copy bytes miscounted", what);
	/* The kernel forced and loaded: many device blocks go through one packed bounce buffer
	 * (host segments on this side: never). */
	const char *way = getenv("FI_DDTX_HMEM_COPY");
	bool dev = sender ? d->sdev : d->rdev;
	uint64_t k = s1->hmem_direct_kernel - s0->hmem_direct_kernel;
	if (kernels_emulated() && way && !strcmp(way, "kernel"))
		FT_CHECK(k == (dev && l->count > 1 ? 1u : 0u), "%s: %s: %llu transfers through "
			 "the pack kernel", what, sender ? "sender" : "receiver",
			 (unsigned long long)k);
	FT_CHECK(k <= (dev && l->count > 1 ? 1u : 0u), "%s: the pack kernel on %s", what,
		 dev ? "one block" : "host memory");
	return true;
}

static void check_way(const struct fi_ddtx_stats *s0, const struct fi_ddtx_stats *s1,
		      const struct layout *l, const char *what)
{
	bool fallback;
	int want = expected_way(l, &fallback);
	int got = -1, n = 0;
	for (int w = 0; w < FI_DDTX_HMEM_COPY_COUNT; w++)
		if (s1->hmem_copy_ops[w] != s0->hmem_copy_ops[w]) {
			got = w;
			n += (int)(s1->hmem_copy_ops[w] - s0->hmem_copy_ops[w]);
		}
	uint64_t fb = s1->hmem_copy_fallbacks - s0->hmem_copy_fallbacks;
	FT_CHECK(n == 1, "%s: %d device copies counted, want 1", what, n);
	if (want >= 0)
		FT_CHECK(got == want && fb == (fallback ? 1u : 0u),
			 "%s: copied by way %d (%llu fallbacks), want %d", what, got,
			 (unsigned long long)fb, want);
	else if (want == -1)
		FT_CHECK(fb == 0 && (got == FI_DDTX_HMEM_COPY_SEGMENTS ||
				     got == FI_DDTX_HMEM_COPY_KERNEL ||
				     (got == FI_DDTX_HMEM_COPY_2D && l->block)),
			 "%s: copied by way %d (%llu fallbacks)", what, got,
			 (unsigned long long)fb);
	else if (kernels_emulated() && l->count > 1)
		FT_CHECK(got == FI_DDTX_HMEM_COPY_KERNEL && !fb,
			 "%s: forced kernel, kernels loaded: way %d, %llu fallbacks", what, got,
			 (unsigned long long)fb);
	else
		FT_CHECK(got == FI_DDTX_HMEM_COPY_KERNEL ||
			 (fb == 1 && got == (l->block && l->count > 1 ? FI_DDTX_HMEM_COPY_2D
							     : FI_DDTX_HMEM_COPY_SEGMENTS)),
			 "%s: forced kernel: way %d, %llu fallbacks", what, got,
			 (unsigned long long)fb);
}

static struct fid_mr *reg(struct fx *fx, struct buf *b)
{
	struct fid_mr *mr = NULL;
	struct iovec iov = {b->p, b->len};
	struct fi_mr_attr attr = {.mr_iov = &iov, .iov_count = 1, .access = FI_SEND | FI_RECV,
				  .requested_key = 0, .iface = b->dev ? FI_HMEM_CUDA : FI_HMEM_SYSTEM};
	static uint64_t key = 100;
	attr.requested_key = key++;
	int ret = fi_mr_regattr(fx->domain, &attr, b->dev ? FI_HMEM_DEVICE_ONLY : 0, &mr);
	FT_CHECK(ret == 0, "fi_mr_regattr(%s): %s", b->dev ? "cuda" : "host", fi_strerror(-ret));
	return mr;
}

static void one_transfer(struct ft_ctx *ctx, struct fx *fx, const struct layout *l,
			 const struct dir *d, uint64_t seed)
{
	static struct iovec iov[4096];
	size_t span = layout_span(l);
	int peer = 1 - ctx->rank;
	char what[160];
	struct fx_comp c;
	struct fi_ddtx_stats s0, s1;
	bool dev = ctx->rank == 0 ? d->sdev : d->rdev;
	struct buf b;

	snprintf(what, sizeof(what), "%s %s->%s %s%s", l->name, d->sdev ? "dev" : "host",
		 d->rdev ? "dev" : "host", d->tagged ? "tagged" : "msg", d->desc ? " desc" : "");
	buf_init(&b, dev, span);
	uint8_t *img = fx_alloc(span), *want = fx_alloc(span);
	fx_fill(img, span, ctx->rank == 0 ? seed : seed ^ 0xc0ffee, 0);
	buf_put(&b, img);
	size_t n = l->count;
	layout_iov(l, b.p, iov);
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += iov[i].iov_len;
	struct fid_mr *mr = d->desc ? reg(fx, &b) : NULL;
	void *descs[4096];
	for (size_t i = 0; i < n; i++)
		descs[i] = mr ? fi_mr_desc(mr) : NULL;
	fx_stats(fx, &s0);
	if (ctx->rank == 0) {
		fx_pbarrier(ctx, fx); /* the receive is posted */
		if (d->tagged) {
			struct fi_msg_tagged m = {.msg_iov = iov, .desc = descs, .iov_count = n,
						  .addr = fx->peers[peer], .tag = 7, .context = what};
			FX_OK(fx, fi_tsendmsg(fx->ep, &m, FI_COMPLETION));
		} else {
			struct fi_msg m = {.msg_iov = iov, .desc = descs, .iov_count = n,
					   .addr = fx->peers[peer], .context = what};
			FX_OK(fx, fi_sendmsg(fx->ep, &m, FI_COMPLETION));
		}
		fx_wait(fx, 1, &c, TMO);
		FT_CHECK(c.op_context == what, "%s: send completion context", what);
		fx_stats(fx, &s1);
		FT_CHECK(s1.hmem_tx_staged - s0.hmem_tx_staged ==
				 (d->sdev && !direct_on() ? 1u : 0u),
			 "%s: %llu staged sends", what,
			 (unsigned long long)(s1.hmem_tx_staged - s0.hmem_tx_staged));
		if (!check_direct(&s0, &s1, d, l, total, true, what) &&
		    !check_ipc(&s0, &s1, d, l, total, true, what) && d->sdev)
			check_way(&s0, &s1, l, what);
	} else {
		if (d->tagged) {
			struct fi_msg_tagged m = {.msg_iov = iov, .desc = descs, .iov_count = n,
						  .addr = FI_ADDR_UNSPEC, .tag = 7, .context = what};
			FX_OK(fx, fi_trecvmsg(fx->ep, &m, FI_COMPLETION));
		} else {
			struct fi_msg m = {.msg_iov = iov, .desc = descs, .iov_count = n,
					   .addr = FI_ADDR_UNSPEC, .context = what};
			FX_OK(fx, fi_recvmsg(fx->ep, &m, FI_COMPLETION));
		}
		fx_pbarrier(ctx, fx);
		fx_wait(fx, 1, &c, TMO);
		FT_CHECK(c.op_context == what && c.len == total, "%s: receive completion (len %zu)",
			 what, c.len);
		fx_stats(fx, &s1);
		FT_CHECK(s1.hmem_rx_staged - s0.hmem_rx_staged == (d->rdev ? 1u : 0u),
			 "%s: staged receives", what);
		if (!check_direct(&s0, &s1, d, l, total, false, what) &&
		    !check_ipc(&s0, &s1, d, l, total, false, what) && d->rdev)
			check_way(&s0, &s1, l, what);
		/* want: the receiver's own bytes, with the sender's packed stream scattered in */
		uint8_t *sender = fx_alloc(span), *p = want;
		fx_fill(sender, span, seed, 0);
		memcpy(want, img, span);
		static struct iovec siov[4096];
		layout_iov(l, sender, siov);
		uint8_t *stream = fx_alloc(total), *q = stream;
		for (size_t i = 0; i < n; q += siov[i].iov_len, i++)
			memcpy(q, siov[i].iov_base, siov[i].iov_len);
		q = stream;
		for (size_t i = 0; i < n; q += iov[i].iov_len, i++)
			memcpy(want + ((uint8_t *)iov[i].iov_base - b.p), q, iov[i].iov_len);
		buf_get(&b, img);
		for (size_t i = 0; i < span; i++)
			FT_CHECK(img[i] == want[i], "%s: byte %zu of %zu is %#x, want %#x", what, i,
				 span, img[i], want[i]);
		(void)p;
		free(sender);
		free(stream);
	}
	fx_pbarrier(ctx, fx);
	if (mr)
		fi_close(&mr->fid);
	buf_free(&b);
	free(img);
	free(want);
}

static int t_move(struct ft_ctx *ctx, void *arg)
{
	const char *kind = arg;
	int skip = cuda_open();
	if (skip)
		return skip;
	struct fx fx;
	fx_open(ctx, &hmem_opts, &fx);
	FT_CHECK(fx.info->caps & FI_HMEM, "FI_HMEM not granted");
	struct dir d = {.sdev = kind[0] == 'd', .rdev = kind[2] == 'd'};
	uint64_t seed = 1;
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		for (int v = 0; v < 4; v++) {
			d.tagged = v & 1;
			d.desc = v & 2;
			one_transfer(ctx, &fx, &layouts[i], &d, seed++);
		}
	fx_close(&fx);
	return 0;
}

/* The receiver declines every CUDA IPC offer: the sender stages after the CTS, bytes intact. */
static int t_ipc_decline(struct ft_ctx *ctx, void *arg)
{
	(void)arg;
	receiver_declines = true;
	if (ctx->rank == 1)
		setenv("FI_DDTX_HMEM_IPC", "0", 1);
	return t_move(ctx, "d2d");
}

/*
 * The sender frees its device buffer while its send waits for the receiver: the receiver's
 * mapping of the handle is refused (a handle of a freed allocation), it declines, the sender
 * cannot stage freed memory either: an error completion on both sides, no crash, and the
 * endpoint still carries the next message.
 */
static int t_ipc_freed(struct ft_ctx *ctx, void *arg)
{
	(void)arg;
	int skip = cuda_open();
	if (skip)
		return skip;
	struct fx fx;
	fx_open(ctx, &hmem_opts, &fx);
	size_t len = 1 << 20;
	struct fi_cq_err_entry err;
	struct fx_comp c;
	for (int rdev = 0; rdev < 2; rdev++) {
		struct buf b;
		buf_init(&b, ctx->rank == 0 || rdev, len);
		uint8_t *img = fx_alloc(len);
		fx_fill(img, len, 77 + rdev, 0);
		if (ctx->rank == 0) {
			buf_put(&b, img);
			FX_OK(&fx, fi_send(fx.ep, b.p, len, NULL, fx.peers[1], &fx));
			buf_free(&b); /* freed before the receiver looks at the offer */
			fx_pbarrier(ctx, &fx);
			fx_wait_err(&fx, &err, TMO);
			FT_CHECK(err.err == FI_EIO, "sender: error %d, want FI_EIO", err.err);
		} else {
			fx_pbarrier(ctx, &fx); /* the offer waits, unexpected, for this receive */
			FX_OK(&fx, fi_recv(fx.ep, b.p, len, NULL, FI_ADDR_UNSPEC, &fx));
			fx_wait_err(&fx, &err, TMO);
			FT_CHECK(err.err == FI_EIO, "receiver: error %d, want FI_EIO", err.err);
			buf_free(&b);
		}
		fx_pbarrier(ctx, &fx);
		/* and the next message arrives whole */
		buf_init(&b, true, len);
		if (ctx->rank == 0) {
			buf_put(&b, img);
			fx_pbarrier(ctx, &fx);
			FX_OK(&fx, fi_send(fx.ep, b.p, len, NULL, fx.peers[1], &fx));
			fx_wait(&fx, 1, &c, TMO);
		} else {
			FX_OK(&fx, fi_recv(fx.ep, b.p, len, NULL, FI_ADDR_UNSPEC, &fx));
			fx_pbarrier(ctx, &fx);
			fx_wait(&fx, 1, &c, TMO);
			uint8_t *got = fx_alloc(len);
			buf_get(&b, got);
			FT_CHECK(!memcmp(got, img, len), "the message after the failure differs");
			free(got);
		}
		fx_pbarrier(ctx, &fx);
		buf_free(&b);
		free(img);
	}
	struct fi_ddtx_stats st;
	fx_stats(&fx, &st);
	if (ctx->rank == 1)
		FT_CHECK(st.hmem_ipc_declined >= 2 && st.hmem_ipc_stale + st.hmem_ipc_opens >= 1,
			 "receiver: %llu offers declined", (unsigned long long)st.hmem_ipc_declined);
	fx_close(&fx);
	return 0;
}

/*
 * Zero copy by the NIC (direct_on), a device buffer freed and another allocated at its
 * addresses (the stand-in with FAKE_CUDA_REUSE_VA=1, as CUDA's allocator does), both sides:
 * the keys cached over the first must not reach the second (hmem_direct.c's buffer id guard).
 * Every byte of each round checked; the reuse and the guard's drop checked to have happened.
 */
static int t_direct_realloc(struct ft_ctx *ctx, void *arg)
{
	(void)arg;
	int skip = cuda_open();
	if (skip)
		return skip;
	if (!direct_on() || fx_env_long("FAKE_CUDA_REUSE_VA", 0) != 1)
		return FT_SKIP;
	struct fx fx;
	fx_open(ctx, &hmem_opts, &fx);
	const struct layout *l = &layouts[4]; /* vec_4k_256: a layout the caches keep */
	static struct iovec iov[4096];
	size_t span = layout_span(l), total = l->count * l->block;
	void *first = NULL;
	struct fx_comp c;
	for (int round = 0; round < 3; round++) {
		struct buf b;
		buf_init(&b, true, span);
		if (!round)
			first = b.p;
		else
			FT_CHECK(b.p == first, "round %d: the stand-in did not reuse the addresses",
				 round);
		uint8_t *img = fx_alloc(span);
		fx_fill(img, span, 500 + round, 0);
		if (ctx->rank == 0)
			buf_put(&b, img);
		layout_iov(l, b.p, iov);
		if (ctx->rank == 0) {
			fx_pbarrier(ctx, &fx);
			struct fi_msg m = {.msg_iov = iov, .iov_count = l->count,
					   .addr = fx.peers[1], .context = &fx};
			FX_OK(&fx, fi_sendmsg(fx.ep, &m, FI_COMPLETION));
			fx_wait(&fx, 1, &c, TMO);
		} else {
			struct fi_msg m = {.msg_iov = iov, .iov_count = l->count,
					   .addr = FI_ADDR_UNSPEC, .context = &fx};
			FX_OK(&fx, fi_recvmsg(fx.ep, &m, FI_COMPLETION));
			fx_pbarrier(ctx, &fx);
			fx_wait(&fx, 1, &c, TMO);
			FT_CHECK(c.len == total, "round %d: received %zu bytes", round, c.len);
			uint8_t *got = fx_alloc(span);
			buf_get(&b, got);
			for (size_t i = 0; i < l->count; i++)
				FT_CHECK(!memcmp(got + i * l->stride, img + i * l->stride, l->block),
					 "round %d: block %zu differs from the sender's", round, i);
			free(got);
		}
		fx_pbarrier(ctx, &fx);
		buf_free(&b);
		free(img);
	}
	struct fi_ddtx_stats st;
	fx_stats(&fx, &st);
	FT_CHECK(st.hmem_direct_tx + st.hmem_direct_rx == 3 && st.hmem_direct_stale >= 2,
		 "rank %d: %llu zero copy transfers, %llu stale allocations dropped", ctx->rank,
		 (unsigned long long)(st.hmem_direct_tx + st.hmem_direct_rx),
		 (unsigned long long)st.hmem_direct_stale);
	fx_close(&fx);
	return 0;
}

static int t_offer(struct ft_ctx *ctx, void *arg)
{
	struct fi_info *info = NULL;
	long want = fx_env_long("FAKE_CUDA_DEVICES", 1) > 0;
	int ret = fx_getinfo(&hmem_opts, &info);
	if (!want) {
		FT_CHECK(ret == -FI_ENODATA, "FI_HMEM with no device: %s", fi_strerror(-ret));
		/* and without FI_HMEM, everything as before */
		struct fx_opts plain = {.caps = FI_MSG | FI_TAGGED};
		ret = fx_getinfo(&plain, &info);
		FT_CHECK(ret == 0 && !(info->caps & FI_HMEM), "plain fi_getinfo: %s",
			 fi_strerror(-ret));
		fi_freeinfo(info);
		return 0;
	}
	if (cuda_open())
		return FT_SKIP;
	FT_CHECK(ret == 0, "fi_getinfo(FI_HMEM): %s", fi_strerror(-ret));
	FT_CHECK((info->caps & FI_HMEM) && (info->tx_attr->caps & FI_HMEM) &&
		 (info->rx_attr->caps & FI_HMEM), "FI_HMEM missing from caps");
	fi_freeinfo(info);
	return 0;
}

static int t_errors(struct ft_ctx *ctx, void *arg)
{
	int skip = cuda_open();
	if (skip)
		return skip;
	struct fx fx, plain;
	struct fx_opts popts = {.caps = FI_MSG | FI_TAGGED};
	struct fid_mr *mr = NULL;
	uint8_t *dev = dev_alloc(8192), *host = fx_alloc(8192);
	struct iovec iov = {dev, 8192};
	struct fi_mr_attr attr = {.mr_iov = &iov, .iov_count = 1, .access = FI_SEND | FI_RECV,
				  .iface = FI_HMEM_CUDA, .requested_key = 1};
	int ret;

	/* A domain without FI_HMEM: device buffers refused at the call, CUDA MRs too. */
	fx_open(ctx, &popts, &plain);
	FT_CHECK(!(plain.info->caps & FI_HMEM), "FI_HMEM granted unasked");
	ret = (int)fi_send(plain.ep, dev, 64, NULL, plain.peers[0], NULL);
	FT_CHECK(ret == -FI_EINVAL, "send of device memory without FI_HMEM: %d", ret);
	ret = (int)fi_recv(plain.ep, dev, 64, NULL, FI_ADDR_UNSPEC, NULL);
	FT_CHECK(ret == -FI_EINVAL, "recv into device memory without FI_HMEM: %d", ret);
	ret = fi_mr_regattr(plain.domain, &attr, 0, &mr);
	FT_CHECK(ret == -FI_ENOSYS, "CUDA MR without FI_HMEM: %d", ret);
	fx_expect_none(&plain, 100);
	fx_close(&plain);

	fx_open(ctx, &hmem_opts, &fx);
	attr.iface = FI_HMEM_SYSTEM;
	ret = fi_mr_regattr(fx.domain, &attr, 0, &mr);
	FT_CHECK(ret == -FI_EINVAL, "device memory registered as FI_HMEM_SYSTEM: %d", ret);
	attr.iface = FI_HMEM_CUDA;
	iov.iov_base = host;
	ret = fi_mr_regattr(fx.domain, &attr, 0, &mr);
	FT_CHECK(ret == -FI_EINVAL, "host memory registered as FI_HMEM_CUDA: %d", ret);
	iov.iov_base = dev;
	attr.device.cuda = 5;
	ret = fi_mr_regattr(fx.domain, &attr, 0, &mr);
	FT_CHECK(ret == -FI_EINVAL, "device memory registered with the wrong device: %d", ret);
	attr.device.cuda = 0;
	attr.access = FI_REMOTE_WRITE;
	ret = fi_mr_regattr(fx.domain, &attr, 0, &mr);
	FT_CHECK(ret == -FI_EOPNOTSUPP, "remote access to device memory: %d", ret);
	attr.access = FI_SEND | FI_RECV;
	attr.iface = FI_HMEM_SYSTEM;
	iov.iov_base = host;
	ret = fi_mr_regattr(fx.domain, &attr, FI_HMEM_DEVICE_ONLY, &mr);
	FT_CHECK(ret == -FI_EINVAL, "FI_HMEM_DEVICE_ONLY on host memory: %d", ret);
	struct fi_msg m = {.msg_iov = &(struct iovec){dev, 8192}, .iov_count = 1,
			   .addr = FI_ADDR_UNSPEC};
	ret = (int)fi_recvmsg(fx.ep, &m, FI_MULTI_RECV);
	FT_CHECK(ret == -FI_EOPNOTSUPP, "FI_MULTI_RECV into device memory: %d", ret);

	/* A device segment running past its allocation: refused at the call (a copy kernel
	 * would fault and leave the context unusable). */
	uint8_t *small = dev_alloc(4096);
	ret = (int)fi_send(fx.ep, small, (size_t)64 << 20, NULL, fx.peers[0], NULL);
	FT_CHECK(ret == -FI_EINVAL, "send running past its device allocation: %d", ret);
	ret = (int)fi_recv(fx.ep, small, (size_t)64 << 20, NULL, FI_ADDR_UNSPEC, NULL);
	FT_CHECK(ret == -FI_EINVAL, "recv running past its device allocation: %d", ret);
	cu.free((uintptr_t)small);

	/* Freed device memory behind its MR's descriptor: refused at the call. */
	uint8_t *gone = dev_alloc(4096);
	iov.iov_base = gone;
	iov.iov_len = 4096;
	attr.iface = FI_HMEM_CUDA;
	attr.requested_key = 2;
	ret = fi_mr_regattr(fx.domain, &attr, 0, &mr);
	FT_CHECK(ret == 0, "CUDA MR: %d", ret);
	cu.free((uintptr_t)gone);
	void *desc = fi_mr_desc(mr);
	ret = (int)fi_send(fx.ep, gone, 64, desc, fx.peers[0], NULL);
	FT_CHECK(ret == -FI_EINVAL, "send of freed device memory with its descriptor: %d", ret);
	ret = (int)fi_recv(fx.ep, gone, 64, desc, FI_ADDR_UNSPEC, NULL);
	FT_CHECK(ret == -FI_EINVAL, "recv into freed device memory with its descriptor: %d", ret);
	fi_close(&mr->fid);
	fx_expect_none(&fx, 100);
	fx_close(&fx);
	cu.free((uintptr_t)dev);
	free(host);
	return 0;
}

static int t_cancel(struct ft_ctx *ctx, void *arg)
{
	int skip = cuda_open();
	if (skip)
		return skip;
	struct fx fx;
	fx_open(ctx, &hmem_opts, &fx);
	uint8_t *dev = dev_alloc(4096);
	int mine;
	FX_OK(&fx, fi_trecv(fx.ep, dev, 4096, NULL, FI_ADDR_UNSPEC, 99, 0, &mine));
	FT_CHECK(fi_cancel(&fx.ep->fid, &mine) == 0, "fi_cancel of a device receive");
	struct fi_cq_err_entry err;
	fx_wait_err(&fx, &err, TMO);
	FT_CHECK(err.op_context == &mine && err.err == FI_ECANCELED,
		 "cancel completion: context %p (want %p), err %d", err.op_context, (void *)&mine,
		 err.err);
	fx_close(&fx);
	cu.free((uintptr_t)dev);
	return 0;
}

/* Device buffer of len bytes filled with the pattern of seed; returns the device pointer. */
static uint8_t *dev_filled(size_t len, uint64_t seed)
{
	uint8_t *d = dev_alloc(len), *h = fx_alloc(len);
	fx_fill(h, len, seed, 0);
	FT_CHECK(cu.htod((uintptr_t)d, h, len) == 0, "cuMemcpyHtoD");
	free(h);
	return d;
}

/* The device buffer holds the pattern of seed in [0, n) and of cseed in [n, len). */
static void dev_check(const uint8_t *d, size_t len, size_t n, uint64_t seed, uint64_t cseed,
		      const char *what)
{
	uint8_t *h = fx_alloc(len);
	FT_CHECK(cu.dtoh(h, (uintptr_t)d, len) == 0, "cuMemcpyDtoH");
	FX_CHECK_PATTERN(h, n, seed, 0, "%s: delivered bytes", what);
	size_t bad = fx_find_bad(h + n, len - n, cseed, n);
	FT_CHECK(bad == (size_t)-1, "%s: byte %zu past the delivered ones changed", what, n + bad);
	free(h);
}

static int t_semantics(struct ft_ctx *ctx, void *arg)
{
	int skip = cuda_open();
	if (skip)
		return skip;
	struct fx fx;
	struct fx_opts o = hmem_opts;
	o.rx_selective = true;
	o.cntr = true;
	fx_open(ctx, &o, &fx);
	int peer = 1 - ctx->rank;
	struct fx_comp c;
	struct fi_cq_err_entry err;
	size_t big = 100000, small = 4000;
	if (ctx->rank == 0) {
		uint8_t *s1 = dev_filled(big, 11), *s2 = dev_filled(64, 12), *s3 = dev_filled(64, 13);
		uint8_t *s4 = dev_filled(small, 14);
		fx_pbarrier(ctx, &fx); /* receives posted */
		FX_OK(&fx, fi_send(fx.ep, s1, big, NULL, fx.peers[peer], s1)); /* truncated there */
		fx_wait(&fx, 1, &c, TMO);
		FX_OK(&fx, fi_inject(fx.ep, s2, 64, fx.peers[peer]));
		FX_OK(&fx, fi_injectdata(fx.ep, s3, 64, 0x77, fx.peers[peer]));
		FX_OK(&fx, fi_send(fx.ep, s4, small, NULL, fx.peers[peer], s4));
		fx_wait(&fx, 1, &c, TMO);
		FT_CHECK(c.op_context == s4, "send completion of s4");
		fx_expect_none(&fx, 200); /* the injects complete silently */
		fx_pbarrier(ctx, &fx);
		cu.free((uintptr_t)s1), cu.free((uintptr_t)s2), cu.free((uintptr_t)s3);
		cu.free((uintptr_t)s4);
	} else {
		size_t cap = 50000;
		uint8_t *r1 = dev_filled(cap, FX_CSEED), *r2 = dev_filled(64, FX_CSEED);
		uint8_t *r3 = dev_filled(64, FX_CSEED), *r4 = dev_filled(small, FX_CSEED);
		struct iovec v;
		struct fi_msg m = {.msg_iov = &v, .iov_count = 1, .addr = FI_ADDR_UNSPEC};
		/* r1 asks for a completion (and gets an error one), r2 and r3 do not, r4 does */
		v = (struct iovec){r1, cap}, m.context = r1;
		FX_OK(&fx, fi_recvmsg(fx.ep, &m, FI_COMPLETION));
		v = (struct iovec){r2, 64}, m.context = r2;
		FX_OK(&fx, fi_recvmsg(fx.ep, &m, 0));
		v = (struct iovec){r3, 64}, m.context = r3;
		FX_OK(&fx, fi_recvmsg(fx.ep, &m, 0));
		v = (struct iovec){r4, small}, m.context = r4;
		FX_OK(&fx, fi_recvmsg(fx.ep, &m, FI_COMPLETION));
		fx_pbarrier(ctx, &fx);
		fx_wait_err(&fx, &err, TMO);
		FT_CHECK(err.err == FI_ETRUNC && err.op_context == r1 && err.olen == big - cap,
			 "truncated device receive: err %d ctx %p olen %zu", err.err, err.op_context,
			 err.olen);
		fx_wait(&fx, 1, &c, TMO);
		FT_CHECK(c.op_context == r4 && c.len == small, "r4's completion (ctx %p len %zu)",
			 c.op_context, c.len);
		fx_expect_none(&fx, 200); /* r2 and r3 complete silently */
		FT_CHECK(fi_cntr_read(fx.cntr) >= 3, "receive counter %llu",
			 (unsigned long long)fi_cntr_read(fx.cntr));
		dev_check(r1, cap, cap, 11, FX_CSEED, "truncated receive");
		dev_check(r2, 64, 64, 12, FX_CSEED, "fi_inject");
		dev_check(r3, 64, 64, 13, FX_CSEED, "fi_injectdata");
		dev_check(r4, small, small, 14, FX_CSEED, "selective receive");
		fx_pbarrier(ctx, &fx);
		cu.free((uintptr_t)r1), cu.free((uintptr_t)r2), cu.free((uintptr_t)r3);
		cu.free((uintptr_t)r4);
	}
	fx_close(&fx);
	return 0;
}

/* Driver pointer queries this process made so far (the stand-in's count). */
static unsigned long long driver_queries(void)
{
	return __atomic_load_n(cu.queries, __ATOMIC_RELAXED);
}

/* Can this process have a userfaultfd (what ddtx's memory monitor needs)? */
static bool have_userfaultfd(void)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | 1 /* USER_MODE_ONLY */);
	if (fd < 0)
		fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* One message of `count` blocks of `block` bytes `stride` apart from rank 0's buffer to rank
 * 1's, every byte of the receiver's buffer checked; returns this rank's driver queries and
 * host-cache answers in *queries / *cached. */
static void host_round(struct ft_ctx *ctx, struct fx *fx, uint8_t *buf, size_t count,
		       size_t block, size_t stride, uint64_t seed, unsigned long long *queries,
		       unsigned long long *cached)
{
	static struct iovec iov[1024];
	size_t span = count * stride, total = count * block;
	struct fi_ddtx_stats s0, s1;
	struct fx_comp c;

	for (size_t i = 0; i < count; i++)
		iov[i] = (struct iovec){ buf + i * stride, block };
	if (ctx->rank == 0)
		fx_fill(buf, span, seed, 0);
	else
		memset(buf, 0xa5, span);
	fx_stats(fx, &s0);
	unsigned long long q0 = driver_queries();
	if (ctx->rank == 0) {
		fx_pbarrier(ctx, fx); /* the receive is posted */
		FX_OK(fx, fi_sendv(fx->ep, iov, NULL, count, fx->peers[1], NULL));
		fx_wait(fx, 1, &c, TMO);
	} else {
		FX_OK(fx, fi_recvv(fx->ep, iov, NULL, count, FI_ADDR_UNSPEC, NULL));
		fx_pbarrier(ctx, fx);
		fx_wait(fx, 1, &c, TMO);
		FT_CHECK(c.len == total, "host_queries: received %zu of %zu bytes", c.len, total);
	}
	*queries = driver_queries() - q0;
	fx_stats(fx, &s1);
	*cached = s1.hmem_ptr_cached - s0.hmem_ptr_cached;
	FT_CHECK(s1.hmem_ptr_queries - s0.hmem_ptr_queries == *queries,
		 "host_queries: stats count %llu queries, the driver saw %llu",
		 (unsigned long long)(s1.hmem_ptr_queries - s0.hmem_ptr_queries), *queries);
	FT_CHECK(*queries + *cached == count, "host_queries: %llu asked + %llu cached of %zu "
		 "segments", *queries, *cached, count);
	if (ctx->rank == 1) {
		uint8_t *want = fx_alloc(span);
		fx_fill(want, span, seed, 0);
		for (size_t i = 0; i < span; i++) {
			uint8_t w = i % stride < block ? want[i] : 0xa5;
			FT_CHECK(buf[i] == w, "host_queries: byte %zu of %zu is %#x, want %#x", i,
				 span, buf[i], w);
		}
		free(want);
	}
	fx_pbarrier(ctx, fx);
}

static int t_host_queries(struct ft_ctx *ctx, void *arg)
{
	(void)arg;
	int skip = cuda_open();
	if (skip)
		return skip;
	if (!cu.queries) {
		printf("SKIP: not the test stand-in for libcuda (no query count)\n");
		return FT_SKIP;
	}
	bool monitor = fx_env_long("FI_DDTX_MR_MONITOR", 1) != 0;
	if (monitor && !have_userfaultfd()) {
		printf("SKIP: no userfaultfd here: ddtx's memory monitor (and this cache) is off\n");
		return FT_SKIP;
	}
	/* An eager-sized vector of small blocks, and a rendezvous-sized one over 2 MiB. */
	static const struct { size_t count, block, stride; } shapes[] = {
		{ 256, 64, 256 }, { 512, 2048, 4096 } };
	struct fx_opts plain = {.caps = FI_MSG | FI_TAGGED};
	const struct fx_opts *opts[] = { &plain, &hmem_opts };
	uint64_t seed = 100;
	for (size_t o = 0; o < 2; o++) {
		struct fx fx;
		fx_open(ctx, opts[o], &fx);
		for (size_t k = 0; k < 2; k++) {
			size_t count = shapes[k].count, span = count * shapes[k].stride;
			unsigned long long q, hit;
			uint8_t *buf = mmap(NULL, span, PROT_READ | PROT_WRITE,
					    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			FT_CHECK(buf != MAP_FAILED, "mmap");
			host_round(ctx, &fx, buf, count, shapes[k].block, shapes[k].stride, seed++,
				   &q, &hit);
			FT_CHECK(q > 0, "host_queries: the first operation asked the driver nothing");
			for (int r = 0; r < 3; r++) {
				host_round(ctx, &fx, buf, count, shapes[k].block, shapes[k].stride,
					   seed++, &q, &hit);
				if (monitor)
					FT_CHECK(q == 0 && hit == count, "host_queries (%s, %zu "
						 "segments): steady state asked the driver %llu times",
						 o ? "FI_HMEM" : "no FI_HMEM", count, q);
				else
					FT_CHECK(q == count && hit == 0, "host_queries: no monitor, "
						 "yet %llu of %zu segments answered without the "
						 "driver", hit, count);
			}
			/* Pages returned to the system (the monitor reports it): forgotten, asked
			 * about again. */
			FT_CHECK(madvise(buf, span, MADV_DONTNEED) == 0, "madvise");
			host_round(ctx, &fx, buf, count, shapes[k].block, shapes[k].stride, seed++,
				   &q, &hit);
			if (monitor)
				FT_CHECK(q > 0, "host_queries: released pages answered from the cache "
					 "(%llu cached)", hit);
			/* New memory at the same address (when the kernel gives it back there:
			 * under ASan something else may take it): forgotten as well. */
			FT_CHECK(munmap(buf, span) == 0, "munmap");
			uint8_t *again = mmap(buf, span, PROT_READ | PROT_WRITE,
					      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
					      0);
			if (again == MAP_FAILED)
				again = mmap(NULL, span, PROT_READ | PROT_WRITE,
					     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			FT_CHECK(again != MAP_FAILED, "mmap again");
			host_round(ctx, &fx, again, count, shapes[k].block, shapes[k].stride, seed++,
				   &q, &hit);
			FT_CHECK(q > 0, "host_queries: memory mapped anew answered from the cache "
				 "(%llu cached)", hit);
			munmap(again, span);
		}
		fx_close(&fx);
	}
	return 0;
}

static const struct fx_test tests[] = {
	{"semantics", 2, 60, t_semantics, NULL},
	{"offer", 1, 30, t_offer, NULL},
	{"d2d", 2, 120, t_move, "d2d"},
	{"d2h", 2, 120, t_move, "d2h"},
	{"h2d", 2, 120, t_move, "h2d"},
	{"errors", 1, 30, t_errors, NULL},
	{"cancel", 1, 30, t_cancel, NULL},
	{"host_queries", 2, 60, t_host_queries, NULL},
	{"ipc_decline", 2, 120, t_ipc_decline, NULL},
	{"ipc_freed", 2, 60, t_ipc_freed, NULL},
	{"direct_realloc", 2, 120, t_direct_realloc, NULL},
};

int main(int argc, char **argv)
{
	return fx_main(argc, argv, tests, sizeof(tests) / sizeof(tests[0]));
}
