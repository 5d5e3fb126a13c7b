/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A test-only stand-in for libcuda.so.1: the CUDA driver entry points ddtx and the hmem tests
 * call, over host memory.  It exercises ddtx's own logic (detection, FI_HMEM offer,
 * registration, staging, error paths) in CI with real processes; it is not CUDA and proves
 * nothing about a GPU.  Built only with the tests, into its own folder, and chosen by
 * LD_LIBRARY_PATH; never installed.
 *
 * "Device memory" is a memfd mapped twice: the address handed out is PROT_NONE, so any host
 * load or store ddtx makes to device memory (instead of a driver copy) kills the process; the
 * copies go through a second, writable mapping.  A freed allocation keeps its PROT_NONE
 * reservation (the address is not reused, as CUDA's VA space) and is unknown to the driver
 * from then on.  FAKE_CUDA_DEVICES sets the device count (default 1; 0 = a driver with no GPU).
 * FAKE_CUDA_REUSE_VA=1: an allocation takes the addresses of a freed one of the same size,
 * as CUDA's allocator does (a new buffer id, new pages), unseen by the host's memory map as a
 * GPU's is: the reservation stays as it was, only the shadow is new (the freed one's is kept,
 * PROT_NONE, so that a stale host view faults instead of meeting the new pages).
 *
 * CUDA IPC works across real processes: an allocation keeps its memfd open (named after its
 * buffer id), its handle names the owner's pid, that descriptor and the id, and
 * cuIpcOpenMemHandle maps /proc/PID/fd/FD after checking the name still carries the id (so a
 * handle of a freed allocation, whose descriptor was closed or reused, is refused, as is a
 * forged one).  The mapping is PROT_NONE to the host like any other device memory: only the
 * copy calls below touch its bytes.  The *Async calls run synchronously (one stream).
 * FAKE_CUDA_KERNELS=1 also loads the provider's pack kernels, emulated on the host (at the
 * end of this file); otherwise their module does not load, and ddtx goes without them.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_INVALID_HANDLE = 400,
	CUDA_ERROR_NOT_FOUND = 500,
	CUDA_ERROR_NOT_SUPPORTED = 801,
};
enum {
	ATTR_MEMORY_TYPE = 2,
	ATTR_BUFFER_ID = 7,
	ATTR_IS_MANAGED = 8,
	ATTR_DEVICE_ORDINAL = 9,
	ATTR_RANGE_START_ADDR = 11,
	ATTR_RANGE_SIZE = 12,
	MEMORYTYPE_DEVICE = 2,
};

struct alloc {
	uintptr_t dev;          /* the address handed out (PROT_NONE) */
	uint8_t *shadow;        /* the same pages, writable (NULL once freed) */
	size_t len;
	unsigned long long id;
	int device;
	int fd;                 /* the memfd (owner: what a peer's IPC open names), or -1 */
	int imported;           /* mapped from a peer's IPC handle (closed, not freed) */
};

#define MAX_ALLOCS 4096
static struct alloc allocs[MAX_ALLOCS];
static size_t nallocs;
static unsigned long long next_id = 1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int initialised, ndevices = -1, current = -1;

static int devices(void)
{
	if (ndevices < 0) {
		const char *e = getenv("FAKE_CUDA_DEVICES");
		ndevices = e ? atoi(e) : 1;
	}
	return ndevices;
}

/* The live allocation holding [p, p + len), or NULL. */
static struct alloc *find(uintptr_t p, size_t len)
{
	for (size_t i = 0; i < nallocs; i++) {
		struct alloc *a = &allocs[i];
		if (a->shadow && p >= a->dev && p - a->dev <= a->len && len <= a->len - (p - a->dev))
			return a;
	}
	return NULL;
}

/* The live allocation starting at p (find(p, 0) may name the one before, which ends there). */
static struct alloc *find_base(uintptr_t p)
{
	for (size_t i = 0; i < nallocs; i++)
		if (allocs[i].shadow && allocs[i].dev == p)
			return &allocs[i];
	return NULL;
}

static int reuse_va(void)
{
	const char *e = getenv("FAKE_CUDA_REUSE_VA");
	return e && !strcmp(e, "1");
}

static size_t page_round(size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	return (len + page - 1) / page * page;
}

/* Does p fall in any reservation, live or freed?  (Host code must never touch those.) */
static int reserved(uintptr_t p)
{
	for (size_t i = 0; i < nallocs; i++)
		if (p >= allocs[i].dev && p - allocs[i].dev < page_round(allocs[i].len))
			return 1;
	return 0;
}

EXPORT CUresult cuInit(unsigned int flags)
{
	(void)flags;
	if (devices() < 1)
		return CUDA_ERROR_NO_DEVICE;
	initialised = 1;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *n)
{
	if (!initialised)
		return CUDA_ERROR_NOT_INITIALIZED;
	*n = devices();
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(int *dev, int ordinal)
{
	if (ordinal < 0 || ordinal >= devices())
		return CUDA_ERROR_INVALID_DEVICE;
	*dev = ordinal;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev)
{
	if (dev < 0 || dev >= devices())
		return CUDA_ERROR_INVALID_DEVICE;
	*ctx = (void *)(uintptr_t)(0x1000 + dev);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(void *ctx)
{
	current = ctx ? (int)((uintptr_t)ctx - 0x1000) : -1;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize(void)
{
	return CUDA_SUCCESS;
}

/* Map fd twice (PROT_NONE "device" address, writable shadow) and record it; under lock. */
static CUresult add_mapping(int fd, size_t len, int keep_fd, int imported, CUdeviceptr *out)
{
	size_t mapped = page_round(len);
	if (nallocs == MAX_ALLOCS)
		return CUDA_ERROR_OUT_OF_MEMORY;
	void *dev = mmap(NULL, mapped, PROT_NONE, MAP_SHARED, fd, 0);
	void *shadow = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (dev == MAP_FAILED || shadow == MAP_FAILED) {
		if (dev != MAP_FAILED)
			munmap(dev, mapped);
		if (shadow != MAP_FAILED)
			munmap(shadow, mapped);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	allocs[nallocs++] = (struct alloc){ (uintptr_t)dev, shadow, len, next_id++, current,
					    keep_fd ? fd : -1, imported };
	*out = (uintptr_t)dev;
	return CUDA_SUCCESS;
}

/* FAKE_CUDA_REUSE_VA=1: fd's pages behind the reservation of a freed allocation of len's
 * pages (a new shadow; the reservation untouched). */
static int reuse(int fd, size_t len, CUdeviceptr *out)
{
	if (!reuse_va())
		return 0;
	size_t mapped = page_round(len);
	for (size_t i = 0; i < nallocs; i++) {
		struct alloc *a = &allocs[i];
		if (a->shadow || a->imported || page_round(a->len) != mapped)
			continue;
		void *shadow = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (shadow == MAP_FAILED)
			return 0;
		*a = (struct alloc){ a->dev, shadow, len, next_id++, current, fd, 0 };
		*out = a->dev;
		return 1;
	}
	return 0;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *out, size_t len)
{
	CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
	char name[64];

	if (current < 0)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!len)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	snprintf(name, sizeof(name), "fake-cuda-%d-%llu", (int)getpid(), next_id);
	int fd = memfd_create(name, MFD_CLOEXEC);
	if (fd >= 0 && !ftruncate(fd, (off_t)page_round(len)))
		r = reuse(fd, len, out) ? CUDA_SUCCESS : add_mapping(fd, len, 1, 0, out);
	if (r && fd >= 0)
		close(fd);
	pthread_mutex_unlock(&lock);
	return r;
}

/* Free (or IPC-close) the mapping at p: the shadow goes, the PROT_NONE reservation stays. */
static CUresult release(CUdeviceptr p, int imported)
{
	CUresult r = CUDA_ERROR_INVALID_VALUE;

	pthread_mutex_lock(&lock);
	struct alloc *a = find_base((uintptr_t)p);
	if (a && a->imported == imported) {
		if (reuse_va())
			mprotect(a->shadow, page_round(a->len), PROT_NONE);
		else
			munmap(a->shadow, page_round(a->len));
		a->shadow = NULL; /* the PROT_NONE reservation stays: the address is not reused */
		if (a->fd >= 0)
			close(a->fd);
		a->fd = -1;
		r = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&lock);
	return r;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
	return release(p, 0);
}

EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
	pthread_mutex_lock(&lock);
	struct alloc *a = find((uintptr_t)p, 1);
	if (a) {
		if (base)
			*base = a->dev;
		if (size)
			*size = a->len;
	}
	pthread_mutex_unlock(&lock);
	return a ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

/* CUipcMemHandle as the stand-in fills it. */
struct ipc_handle {
	unsigned int magic;
	int pid, fd, device;
	unsigned long long id, len;
	char unused[32];
};
_Static_assert(sizeof(struct ipc_handle) == 64, "CUipcMemHandle is 64 bytes");
#define IPC_MAGIC 0xfa4ecda1u

EXPORT CUresult cuIpcGetMemHandle(struct ipc_handle *h, CUdeviceptr p)
{
	CUresult r = CUDA_ERROR_INVALID_VALUE;

	pthread_mutex_lock(&lock);
	struct alloc *a = find_base((uintptr_t)p);
	if (a && !a->imported && a->fd >= 0) {
		memset(h, 0, sizeof(*h));
		*h = (struct ipc_handle){ IPC_MAGIC, (int)getpid(), a->fd, a->device, a->id, a->len,
					  { 0 } };
		r = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&lock);
	return r;
}

/* Is fd (of /proc/PID/fd) the owner's memfd for allocation id? */
static int names_allocation(const char *path, int pid, unsigned long long id)
{
	char link[128], want[96];
	ssize_t n = readlink(path, link, sizeof(link) - 1);

	if (n < 0)
		return 0;
	link[n] = 0;
	snprintf(want, sizeof(want), "/memfd:fake-cuda-%d-%llu ", pid, id);
	return !strncmp(link, want, strlen(want));
}

EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *out, struct ipc_handle h, unsigned int flags)
{
	char path[64], self[64];
	CUresult r = CUDA_ERROR_INVALID_HANDLE;
	struct stat st;

	(void)flags;
	if (current < 0)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (h.magic != IPC_MAGIC || h.pid <= 0 || h.fd < 0 || !h.len || h.pid == (int)getpid())
		return CUDA_ERROR_INVALID_HANDLE;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", h.pid, h.fd);
	if (!names_allocation(path, h.pid, h.id))
		return CUDA_ERROR_INVALID_HANDLE;
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return CUDA_ERROR_INVALID_HANDLE;
	/* The descriptor may have been closed and reused between the check and the open. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	if (names_allocation(self, h.pid, h.id) && !fstat(fd, &st) &&
	    (unsigned long long)st.st_size >= h.len) {
		pthread_mutex_lock(&lock);
		r = add_mapping(fd, (size_t)h.len, 0, 1, out);
		pthread_mutex_unlock(&lock);
	}
	close(fd);
	return r;
}

EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr p)
{
	return release(p, 1);
}

static CUresult copy(void *dst, uintptr_t ddst, const void *src, uintptr_t dsrc, size_t len)
{
	CUresult r = CUDA_SUCCESS;

	pthread_mutex_lock(&lock);
	if (ddst) {
		struct alloc *a = find(ddst, len);
		dst = a ? a->shadow + (ddst - a->dev) : NULL;
	}
	if (dsrc) {
		struct alloc *a = find(dsrc, len);
		src = a ? a->shadow + (dsrc - a->dev) : NULL;
	}
	if (!dst || !src)
		r = CUDA_ERROR_INVALID_VALUE;
	else
		memmove(dst, src, len);
	pthread_mutex_unlock(&lock);
	return r;
}

/*
 * Not CUDA: the host address of device address addr (its writable shadow), the door through
 * which ddtx's shm wire acts as a NIC that reaches device memory (as one does through
 * dma-buf), so that ddtx's zero-copy path for device memory runs in CI.  *len is cut to the
 * bytes from addr to the end of its allocation's pages.  NULL for an address outside every
 * live allocation.  Only with FAKE_CUDA_HOST_VIEW=1; then (NULL, NULL) answers non-NULL,
 * which is how ddtx asks whether the door is open.
 */
EXPORT void *fakeCudaHostView(const void *addr, size_t *len)
{
	const char *e = getenv("FAKE_CUDA_HOST_VIEW");
	void *view = NULL;
	if (!e || strcmp(e, "1"))
		return NULL;
	if (!addr && !len)
		return (void *)&initialised;
	if (!len)
		return NULL;
	uintptr_t p = (uintptr_t)addr;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < nallocs && !view; i++) {
		struct alloc *a = &allocs[i];
		size_t mapped = page_round(a->len);
		if (a->shadow && p >= a->dev && p - a->dev < mapped) {
			view = a->shadow + (p - a->dev);
			if (*len > mapped - (p - a->dev))
				*len = mapped - (p - a->dev);
		}
	}
	pthread_mutex_unlock(&lock);
	return view;
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t len)
{
	return copy(dst, 0, NULL, (uintptr_t)src, len);
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t len)
{
	return copy(NULL, (uintptr_t)dst, src, 0, len);
}

EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t len)
{
	return copy(NULL, (uintptr_t)dst, NULL, (uintptr_t)src, len);
}

/* Calls of cuPointerGetAttributes so far, for tests that count what ddtx asks the driver
 * (dlsym "fake_cuda_pointer_queries"; a real driver has no such symbol). */
EXPORT unsigned long long fake_cuda_pointer_queries;

/* Host memory: success with memory type 0 (as recent drivers answer for unknown memory). */
EXPORT CUresult cuPointerGetAttributes(unsigned int n, int *attrs, void **data, CUdeviceptr p)
{
	__atomic_add_fetch(&fake_cuda_pointer_queries, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&lock);
	struct alloc *a = find((uintptr_t)p, 1);
	struct alloc copy_of = a ? *a : (struct alloc){ 0 };
	pthread_mutex_unlock(&lock);
	if (!initialised)
		return CUDA_ERROR_NOT_INITIALIZED;
	for (unsigned int i = 0; i < n; i++) {
		switch (attrs[i]) {
		case ATTR_MEMORY_TYPE:
			*(unsigned int *)data[i] = a ? MEMORYTYPE_DEVICE : 0;
			break;
		case ATTR_IS_MANAGED:
			*(unsigned int *)data[i] = 0;
			break;
		case ATTR_DEVICE_ORDINAL:
			*(int *)data[i] = a ? copy_of.device : -2;
			break;
		case ATTR_BUFFER_ID:
			*(unsigned long long *)data[i] = copy_of.id;
			break;
		case ATTR_RANGE_START_ADDR:
			*(CUdeviceptr *)data[i] = copy_of.dev;
			break;
		case ATTR_RANGE_SIZE:
			*(size_t *)data[i] = copy_of.len;
			break;
		default:
			return CUDA_ERROR_INVALID_VALUE;
		}
	}
	return CUDA_SUCCESS;
}

EXPORT CUresult cuPointerSetAttribute(const void *value, int attr, CUdeviceptr p)
{
	(void)value;
	(void)attr;
	(void)p;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t len, void *stream);

/* CUDA_MEMCPY2D, 64-bit layout; memory types 1 host, 2 device, 4 unified (either, by address:
 * the *_device field). */
struct memcpy2d {
	size_t src_x, src_y;
	unsigned int src_type;
	const void *src_host;
	CUdeviceptr src_device;
	void *src_array;
	size_t src_pitch;
	size_t dst_x, dst_y;
	unsigned int dst_type;
	void *dst_host;
	CUdeviceptr dst_device;
	void *dst_array;
	size_t dst_pitch;
	size_t width, height;
};

EXPORT CUresult cuMemcpy2D_v2(const struct memcpy2d *d)
{
	if (d->width > d->src_pitch || d->width > d->dst_pitch || d->src_x || d->src_y ||
	    d->dst_x || d->dst_y)
		return CUDA_ERROR_INVALID_VALUE;
	int dunified = d->dst_type == 4, sunified = d->src_type == 4;
	for (size_t r = 0; r < d->height; r++) {
		uintptr_t so = r * d->src_pitch, dof = r * d->dst_pitch;
		if (dunified || sunified) {
			CUresult res = cuMemcpyAsync(
				dunified ? d->dst_device + dof
					 : d->dst_type == 1 ? (uintptr_t)d->dst_host + dof
							    : d->dst_device + dof,
				sunified ? d->src_device + so
					 : d->src_type == 1 ? (uintptr_t)d->src_host + so
							    : d->src_device + so,
				d->width, NULL);
			if (res)
				return res;
			continue;
		}
		CUresult res = copy(d->dst_type == 1 ? (uint8_t *)d->dst_host + dof : NULL,
				    d->dst_type == 2 ? d->dst_device + dof : 0,
				    d->src_type == 1 ? (const uint8_t *)d->src_host + so : NULL,
				    d->src_type == 2 ? d->src_device + so : 0, d->width);
		if (res)
			return res;
	}
	return CUDA_SUCCESS;
}

/* Page-locked host memory: plain memory here (the stand-in has no DMA to pin for). */
EXPORT CUresult cuMemAllocHost_v2(void **p, size_t len)
{
	*p = malloc(len ? len : 1);
	return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuMemFreeHost(void *p)
{
	free(p);
	return CUDA_SUCCESS;
}

/* Unified addressing: either side is device memory (ours or a peer's mapping) or host. */
EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t len, void *stream)
{
	(void)stream;
	pthread_mutex_lock(&lock);
	int ddev = find((uintptr_t)dst, len) != NULL, sdev = find((uintptr_t)src, len) != NULL;
	int freed = (!ddev && reserved((uintptr_t)dst)) || (!sdev && reserved((uintptr_t)src));
	pthread_mutex_unlock(&lock);
	if (freed) /* freed device memory: refused, as by the driver (never a host access) */
		return CUDA_ERROR_INVALID_VALUE;
	return copy(ddev ? NULL : (void *)(uintptr_t)dst, ddev ? (uintptr_t)dst : 0,
		    sdev ? NULL : (const void *)(uintptr_t)src, sdev ? (uintptr_t)src : 0, len);
}

EXPORT CUresult cuMemcpy2DAsync_v2(const struct memcpy2d *d, void *stream)
{
	(void)stream;
	return cuMemcpy2D_v2(d);
}

EXPORT CUresult cuStreamSynchronize(void *stream)
{
	(void)stream;
	return CUDA_SUCCESS;
}

/*
 * The provider's pack kernels (engine/gpu_pack.cu), emulated on the host when
 * FAKE_CUDA_KERNELS=1, so that CI runs the ways that launch them (the IPC copy kernel, the
 * staging pack kernel) with every byte checked.  Without it the module does not load, as on a
 * GPU the fatbin has no code for.  Each kernel's arguments are read as engine/gpu_kernels.c
 * passes them; every address they touch must be device memory (ours or a peer's mapping): a
 * host address is an illegal address, as a kernel's fault would be on a GPU.
 */
#include "gpu_piece_word.h"
#include "gpu_runs.h"

enum { CUDA_ERROR_NO_BINARY_FOR_GPU = 209, CUDA_ERROR_ILLEGAL_ADDRESS = 700 };
enum kernel_kind { KERNEL_RUNS, KERNEL_PIECES };
struct kernel {
	const char *name;
	enum kernel_kind kind;
	unsigned width;         /* the runs kernels' word */
};
static const struct kernel kernels[] = {
	{ "ddtx_runs_w16", KERNEL_RUNS, 16 }, { "ddtx_runs_w8", KERNEL_RUNS, 8 },
	{ "ddtx_runs_w4", KERNEL_RUNS, 4 },   { "ddtx_runs_w1", KERNEL_RUNS, 1 },
	{ "ddtx_pieces", KERNEL_PIECES, 0 },
};
static int module_token;

EXPORT CUresult cuModuleLoadData(void **module, const void *image)
{
	const char *e = getenv("FAKE_CUDA_KERNELS");
	if (!image || !e || atoi(e) != 1)
		return CUDA_ERROR_NO_BINARY_FOR_GPU;
	*module = &module_token;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleUnload(void *module)
{
	return module == &module_token ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

EXPORT CUresult cuModuleGetFunction(void **fn, void *module, const char *name)
{
	if (module != &module_token)
		return CUDA_ERROR_INVALID_HANDLE;
	for (size_t i = 0; i < sizeof(kernels) / sizeof(kernels[0]); i++)
		if (!strcmp(kernels[i].name, name)) {
			*fn = (void *)&kernels[i];
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_NOT_FOUND;
}

/* The writable view of device bytes [p, p + len), or NULL if they are not all device memory. */
static uint8_t *device_bytes(uintptr_t p, size_t len)
{
	pthread_mutex_lock(&lock);
	struct alloc *a = find(p, len);
	uint8_t *v = a ? a->shadow + (p - a->dev) : NULL;
	pthread_mutex_unlock(&lock);
	return v;
}

static CUresult run_runs(unsigned w, unsigned grid, void **params)
{
	uintptr_t runs = (uintptr_t) * (void **)params[0];
	uint64_t first = *(uint64_t *)params[1];
	uintptr_t origin = (uintptr_t) * (void **)params[2], packed = (uintptr_t) * (void **)params[3];
	uint64_t lo = *(uint64_t *)params[4], hi = *(uint64_t *)params[5];
	int gather = *(int *)params[6];
	for (unsigned b = 0; b < grid; b++) {
		const uint8_t *rv = device_bytes(runs + (first + b) * sizeof(struct ddtx_gpu_run),
						 sizeof(struct ddtx_gpu_run));
		if (!rv)
			return CUDA_ERROR_ILLEGAL_ADDRESS;
		struct ddtx_gpu_run r;
		memcpy(&r, rv, sizeof(r));
		uint64_t words = r.n * r.block / w;
		for (uint64_t k = 0; k < words; k++) {
			int64_t lay;
			uint64_t pay;
			ddtx_gpu_run_word(r.payload, r.off, r.block, r.stride, k, w, &lay, &pay);
			if (pay < lo || pay >= hi)
				continue;
			uint8_t *l = device_bytes(origin + (uintptr_t)lay, w);
			uint8_t *q = device_bytes(packed + (pay - lo), w);
			if (!l || !q)
				return CUDA_ERROR_ILLEGAL_ADDRESS;
			memcpy(gather ? q : l, gather ? l : q, w);
		}
	}
	return CUDA_SUCCESS;
}

static CUresult run_pieces(unsigned grid, void **params)
{
	uintptr_t p = (uintptr_t) * (void **)params[0], group = (uintptr_t) * (void **)params[1];
	const uint8_t *gv = device_bytes(group, (grid + 1) * sizeof(uint32_t));
	if (!gv)
		return CUDA_ERROR_ILLEGAL_ADDRESS;
	for (unsigned b = 0; b < grid; b++) {
		uint32_t first, end;
		memcpy(&first, gv + b * sizeof(uint32_t), sizeof(first));
		memcpy(&end, gv + (b + 1) * sizeof(uint32_t), sizeof(end));
		for (uint32_t i = first; i < end; i++) {
			const uint8_t *qv = device_bytes(p + i * sizeof(struct ddtx_gpu_piece),
							 sizeof(struct ddtx_gpu_piece));
			if (!qv)
				return CUDA_ERROR_ILLEGAL_ADDRESS;
			struct ddtx_gpu_piece q;
			memcpy(&q, qv, sizeof(q));
			uint8_t *d = device_bytes(q.dst, q.len), *s = device_bytes(q.src, q.len);
			if (!d || !s)
				return CUDA_ERROR_ILLEGAL_ADDRESS;
			memmove(d, s, q.len);
		}
	}
	return CUDA_SUCCESS;
}

EXPORT CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			       unsigned by, unsigned bz, unsigned shmem, void *stream,
			       void **params, void **extra)
{
	const struct kernel *k = fn;
	(void)bx, (void)by, (void)bz, (void)stream;
	if (k < kernels || k >= kernels + sizeof(kernels) / sizeof(kernels[0]) || !params ||
	    extra || gy != 1 || gz != 1 || shmem)
		return CUDA_ERROR_INVALID_VALUE;
	return k->kind == KERNEL_RUNS ? run_runs(k->width, gx, params) : run_pieces(gx, params);
}
