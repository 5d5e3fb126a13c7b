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
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
	CUDA_ERROR_NOT_SUPPORTED = 801,
};
enum {
	ATTR_MEMORY_TYPE = 2,
	ATTR_BUFFER_ID = 7,
	ATTR_IS_MANAGED = 8,
	ATTR_DEVICE_ORDINAL = 9,
	MEMORYTYPE_DEVICE = 2,
};

struct alloc {
	uintptr_t dev;          /* the address handed out (PROT_NONE) */
	uint8_t *shadow;        /* the same pages, writable (NULL once freed) */
	size_t len;
	unsigned long long id;
	int device;
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

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *out, size_t len)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t mapped = (len + (size_t)page - 1) / (size_t)page * (size_t)page;
	CUresult r = CUDA_ERROR_OUT_OF_MEMORY;

	if (current < 0)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!len)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	int fd = memfd_create("fake-cuda", MFD_CLOEXEC);
	if (fd >= 0 && nallocs < MAX_ALLOCS && !ftruncate(fd, (off_t)mapped)) {
		void *dev = mmap(NULL, mapped, PROT_NONE, MAP_SHARED, fd, 0);
		void *shadow = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (dev != MAP_FAILED && shadow != MAP_FAILED) {
			allocs[nallocs++] = (struct alloc){ (uintptr_t)dev, shadow, len, next_id++,
							    current };
			*out = (uintptr_t)dev;
			r = CUDA_SUCCESS;
		}
	}
	if (fd >= 0)
		close(fd);
	pthread_mutex_unlock(&lock);
	return r;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
	CUresult r = CUDA_ERROR_INVALID_VALUE;

	pthread_mutex_lock(&lock);
	struct alloc *a = find((uintptr_t)p, 0);
	if (a && a->dev == p) {
		long page = sysconf(_SC_PAGESIZE);
		munmap(a->shadow, (a->len + (size_t)page - 1) / (size_t)page * (size_t)page);
		a->shadow = NULL; /* the PROT_NONE reservation stays: the address is not reused */
		r = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&lock);
	return r;
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

/* CUDA_MEMCPY2D, 64-bit layout; memory types 1 host, 2 device. */
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
	for (size_t r = 0; r < d->height; r++) {
		uintptr_t so = r * d->src_pitch, dof = r * d->dst_pitch;
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
