/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CUDA driver API through dlopen("libcuda.so.1").  Only the few entry points the wires need are
 * resolved; the constants below are the driver API's (cuda.h), defined here so that nothing
 * of CUDA is needed at build time.  Absent library, missing symbol or failed cuInit: CUDA is
 * "not available" and every address is host memory.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "common/log.h"
#include "hmem/hmem.h"

typedef int cu_result;                           /* CUresult; 0 = CUDA_SUCCESS */
typedef unsigned long long cu_deviceptr;         /* CUdeviceptr (64-bit builds) */
typedef int cu_device;                           /* CUdevice */
typedef void *cu_context;                        /* CUcontext */

/* CUipcMemHandle: passed by value to cuIpcOpenMemHandle. */
struct cu_ipc_handle {
	char reserved[64];
};

/* Primary contexts of the devices ddtx touches (one is made current before a driver call). */
#define DDTX_HMEM_MAX_DEVICES 64

enum {
	CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
	CU_POINTER_ATTRIBUTE_SYNC_MEMOPS = 6,
	CU_POINTER_ATTRIBUTE_BUFFER_ID = 7,
	CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
	CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
	CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
	CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,
	CU_MEMORYTYPE_HOST = 1,
	CU_MEMORYTYPE_DEVICE = 2,
	CU_MEMORYTYPE_UNIFIED = 4,
	CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 1,
	CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1,
};

static struct {
	pthread_once_t once;
	bool ok;
	void *lib;
	cu_result (*init)(unsigned int flags);
	cu_result (*get_attrs)(unsigned int n, int *attrs, void **data, cu_deviceptr ptr);
	cu_result (*set_attr)(const void *value, int attr, cu_deviceptr ptr);
	cu_result (*get_handle)(void *handle, cu_deviceptr ptr, size_t size, int type,
				unsigned long long flags);
	cu_result (*device_count)(int *count);
	cu_result (*device_get)(cu_device *dev, int ordinal);
	cu_result (*ctx_retain)(cu_context *ctx, cu_device dev);
	cu_result (*ctx_set)(cu_context ctx);
	cu_result (*dtoh)(void *dst, cu_deviceptr src, size_t len);
	cu_result (*htod)(cu_deviceptr dst, const void *src, size_t len);
	cu_result (*dtod)(cu_deviceptr dst, cu_deviceptr src, size_t len);
	cu_result (*mem_alloc)(cu_deviceptr *ptr, size_t len);
	cu_result (*mem_free)(cu_deviceptr ptr);
	cu_result (*module_load)(void **module, const void *image);
	cu_result (*module_unload)(void *module);
	cu_result (*module_function)(void **fn, void *module, const char *name);
	cu_result (*launch)(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			    unsigned by, unsigned bz, unsigned shared, void *stream, void **args,
			    void **extra);
	cu_result (*ctx_sync)(void);
	cu_result (*copy_2d)(const void *desc);
	cu_result (*host_alloc)(void **p, size_t len);
	cu_result (*host_free)(void *p);
	cu_result (*addr_range)(cu_deviceptr *base, size_t *size, cu_deviceptr ptr);
	cu_result (*ipc_get)(void *handle, cu_deviceptr ptr);
	cu_result (*ipc_open)(cu_deviceptr *ptr, struct cu_ipc_handle handle, unsigned int flags);
	cu_result (*ipc_close)(cu_deviceptr ptr);
	cu_result (*copy_async)(cu_deviceptr dst, cu_deviceptr src, size_t len, void *stream);
	cu_result (*copy_2d_async)(const void *desc, void *stream);
	cu_result (*stream_sync)(void *stream);
	/* Only the test stand-in (tests/fabtests/fakecuda) has it: see ddtx_hmem_host_view. */
	void *(*host_view)(const void *addr, size_t *len);
	int ndevices;
	pthread_mutex_t ctx_lock;
	cu_context ctx[DDTX_HMEM_MAX_DEVICES];
} cu = { .once = PTHREAD_ONCE_INIT, .ctx_lock = PTHREAD_MUTEX_INITIALIZER };

#define CU_SYM(field, name) (*(void **)&cu.field = dlsym(cu.lib, name))

static void cuda_load(void)
{
	cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!cu.lib) {
		DDTX_INFO(FI_LOG_CORE, "hmem: no CUDA driver (%s): host memory only\n", dlerror());
		return;
	}
	CU_SYM(init, "cuInit");
	CU_SYM(get_attrs, "cuPointerGetAttributes");
	CU_SYM(set_attr, "cuPointerSetAttribute");
	CU_SYM(get_handle, "cuMemGetHandleForAddressRange");
	if (!cu.init || !cu.get_attrs || !cu.set_attr) {
		DDTX_WARN(FI_LOG_CORE, "hmem: libcuda.so.1 lacks the pointer API: host memory "
			  "only\n");
		goto fail;
	}
	if (cu.init(0) != 0) {
		DDTX_INFO(FI_LOG_CORE, "hmem: cuInit failed (no GPU?): host memory only\n");
		goto fail;
	}
	if (!cu.get_handle)
		DDTX_INFO(FI_LOG_CORE, "hmem: CUDA driver without dma-buf export: device memory "
			  "cannot be registered\n");
	/* What staging and the kernels need; a driver without any of it: host memory only. */
	if (!CU_SYM(device_count, "cuDeviceGetCount") || !CU_SYM(device_get, "cuDeviceGet") ||
	    !CU_SYM(ctx_retain, "cuDevicePrimaryCtxRetain") || !CU_SYM(ctx_set, "cuCtxSetCurrent") ||
	    !CU_SYM(dtoh, "cuMemcpyDtoH_v2") || !CU_SYM(htod, "cuMemcpyHtoD_v2") ||
	    !CU_SYM(dtod, "cuMemcpyDtoD_v2") || !CU_SYM(ctx_sync, "cuCtxSynchronize")) {
		DDTX_WARN(FI_LOG_CORE, "hmem: libcuda.so.1 lacks the copy API: host memory only\n");
		goto fail;
	}
	if (cu.device_count(&cu.ndevices) != 0 || cu.ndevices < 1) {
		DDTX_INFO(FI_LOG_CORE, "hmem: CUDA driver sees no device: host memory only\n");
		goto fail;
	}
	if (cu.ndevices > DDTX_HMEM_MAX_DEVICES)
		cu.ndevices = DDTX_HMEM_MAX_DEVICES;
	/* Optional: the kernels (gpu_kernels.c) and device bounce buffers. */
	CU_SYM(mem_alloc, "cuMemAlloc_v2");
	CU_SYM(mem_free, "cuMemFree_v2");
	CU_SYM(module_load, "cuModuleLoadData");
	CU_SYM(module_unload, "cuModuleUnload");
	CU_SYM(module_function, "cuModuleGetFunction");
	CU_SYM(launch, "cuLaunchKernel");
	CU_SYM(copy_2d, "cuMemcpy2D_v2");
	CU_SYM(host_alloc, "cuMemAllocHost_v2");
	CU_SYM(host_free, "cuMemFreeHost");
	/* Optional: CUDA IPC and the copy engine's asynchronous copies (device to device). */
	CU_SYM(addr_range, "cuMemGetAddressRange_v2");
	CU_SYM(ipc_get, "cuIpcGetMemHandle");
	CU_SYM(ipc_open, "cuIpcOpenMemHandle_v2");
	CU_SYM(ipc_close, "cuIpcCloseMemHandle");
	CU_SYM(copy_async, "cuMemcpyAsync");
	CU_SYM(copy_2d_async, "cuMemcpy2DAsync_v2");
	CU_SYM(stream_sync, "cuStreamSynchronize");
	CU_SYM(host_view, "fakeCudaHostView");
	DDTX_INFO(FI_LOG_CORE, "hmem: CUDA driver with %d device(s)\n", cu.ndevices);
	cu.ok = true;
	return;
fail:
	dlclose(cu.lib);
	cu.lib = NULL;
}

int ddtx_hmem_cuda_known;

bool ddtx_hmem_cuda_load(void)
{
	pthread_once(&cu.once, cuda_load);
	__atomic_store_n(&ddtx_hmem_cuda_known, cu.ok ? 1 : -1, __ATOMIC_RELEASE);
	return cu.ok;
}

static int use_device(int device);

void ddtx_hmem_detect(const void *addr, struct ddtx_hmem_attr *attr)
{
	unsigned int mem_type = 0, managed = 0;
	int ordinal = -1;
	unsigned long long id = 0;
	cu_deviceptr start = 0;
	size_t size = 0;
	/* The allocation's range in the same query: a caller classifying a list of blocks asks
	 * once per allocation, not once per block (H200, 2026-11-26: 113 ns a query, and a list
	 * of 4096 8-byte blocks paid it on both sides of every transfer). */
	int attrs[] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
			CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_BUFFER_ID,
			CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE };
	void *data[] = { &mem_type, &managed, &ordinal, &id, &start, &size };

	memset(attr, 0, sizeof(*attr));
	attr->iface = DDTX_HMEM_SYSTEM;
	attr->device = -1;
	if (!addr || !ddtx_hmem_cuda_available())
		return;
	/* "invalid value" / "not initialised" for memory CUDA does not know: host memory. */
	if (cu.get_attrs(6, attrs, data, (cu_deviceptr)(uintptr_t)addr) != 0)
		return;
	if (mem_type != CU_MEMORYTYPE_DEVICE || managed)
		return;
	attr->iface = DDTX_HMEM_CUDA;
	attr->device = ordinal;
	attr->managed = false;
	attr->buffer_id = id;
	attr->range_base = start;
	attr->range_size = size;
}

bool ddtx_hmem_attr_covers(const struct ddtx_hmem_attr *attr, const void *addr)
{
	uintptr_t a = (uintptr_t)addr;
	return attr->iface == DDTX_HMEM_CUDA && a >= attr->range_base &&
	       a - attr->range_base < attr->range_size;
}

int ddtx_hmem_dmabuf_fd(const void *addr, size_t len, int *fd, uint64_t *offset)
{
	struct ddtx_hmem_attr a;
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t start, end;
	int handle = -1;

	if (!addr || !len || !fd || !offset || page <= 0)
		return -FI_EINVAL;
	if (!ddtx_hmem_cuda_available() || !cu.get_handle)
		return -FI_ENOSYS;
	ddtx_hmem_detect(addr, &a);
	if (a.iface != DDTX_HMEM_CUDA)
		return -FI_EINVAL;
	/* The export needs a current context (H200, driver 580: EIO from a thread without one). */
	int ret = use_device(a.device);
	if (ret)
		return ret;
	start = (uintptr_t)addr & ~((uintptr_t)page - 1);
	if (len > UINTPTR_MAX - (uintptr_t)addr - (uintptr_t)page)
		return -FI_EINVAL;
	end = ((uintptr_t)addr + len + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
	if (cu.get_handle(&handle, (cu_deviceptr)start, end - start,
			  CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0) != 0 || handle < 0) {
		DDTX_WARN(FI_LOG_MR, "hmem: cuMemGetHandleForAddressRange(%p, %zu) refused\n",
			  (void *)start, (size_t)(end - start));
		return -FI_EIO;
	}
	*fd = handle;
	*offset = (uintptr_t)addr - start;
	return 0;
}

int ddtx_hmem_sync_memops(const void *addr)
{
	unsigned int on = 1;

	if (!ddtx_hmem_cuda_available())
		return -FI_ENOSYS;
	return cu.set_attr(&on, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
			   (cu_deviceptr)(uintptr_t)addr) ? -FI_EIO : 0;
}

int ddtx_hmem_cuda_device_count(void)
{
	return ddtx_hmem_cuda_available() ? cu.ndevices : 0;
}

bool ddtx_hmem_dmabuf_available(void)
{
	return ddtx_hmem_cuda_available() && cu.get_handle;
}

bool ddtx_hmem_host_view_available(void)
{
	/* The stand-in answers (NULL, 0) with non-NULL when its door is open. */
	return ddtx_hmem_cuda_available() && cu.host_view && cu.host_view(NULL, NULL);
}

void *ddtx_hmem_host_view(const void *addr, size_t *len)
{
	return addr && len && *len && ddtx_hmem_host_view_available() ? cu.host_view(addr, len)
								       : NULL;
}

/* Make device's primary context current on this thread (the driver calls below need one). */
static int use_device(int device)
{
	int ret = 0;

	if (!ddtx_hmem_cuda_available())
		return -FI_ENOSYS;
	if (device < 0 || device >= cu.ndevices)
		return -FI_EINVAL;
	pthread_mutex_lock(&cu.ctx_lock);
	if (!cu.ctx[device]) {
		cu_device dev;
		if (cu.device_get(&dev, device) != 0 || cu.ctx_retain(&cu.ctx[device], dev) != 0) {
			cu.ctx[device] = NULL;
			ret = -FI_EIO;
		}
	}
	pthread_mutex_unlock(&cu.ctx_lock);
	if (!ret && cu.ctx_set(cu.ctx[device]) != 0)
		ret = -FI_EIO;
	return ret;
}

int ddtx_hmem_copy(int device, void *dst, const void *src, size_t len, enum ddtx_hmem_dir dir)
{
	int ret = use_device(device);
	cu_result r;

	if (ret || !len)
		return ret;
	switch (dir) {
	case DDTX_HMEM_TO_HOST:
		r = cu.dtoh(dst, (cu_deviceptr)(uintptr_t)src, len);
		break;
	case DDTX_HMEM_TO_DEVICE:
		r = cu.htod((cu_deviceptr)(uintptr_t)dst, src, len);
		break;
	default:
		r = cu.dtod((cu_deviceptr)(uintptr_t)dst, (cu_deviceptr)(uintptr_t)src, len);
		break;
	}
	if (r != 0) {
		DDTX_WARN(FI_LOG_EP_DATA, "hmem: copy of %zu bytes %p -> %p refused (CUresult %d)\n",
			  len, src, dst, r);
		return -FI_EIO;
	}
	return 0;
}

int ddtx_hmem_dev_alloc(int device, size_t len, void **out)
{
	cu_deviceptr p = 0;
	int ret = use_device(device);

	if (ret)
		return ret;
	if (!cu.mem_alloc)
		return -FI_ENOSYS;
	if (cu.mem_alloc(&p, len) != 0)
		return -FI_ENOMEM;
	*out = (void *)(uintptr_t)p;
	return 0;
}

void ddtx_hmem_dev_free(int device, void *p)
{
	if (p && !use_device(device) && cu.mem_free)
		(void)cu.mem_free((cu_deviceptr)(uintptr_t)p);
}

int ddtx_hmem_module_load(int device, const void *image, void **module)
{
	int ret = use_device(device);

	if (ret)
		return ret;
	if (!cu.module_load || !cu.module_function || !cu.launch)
		return -FI_ENOSYS;
	return cu.module_load(module, image) ? -FI_EIO : 0;
}

void ddtx_hmem_module_unload(int device, void *module)
{
	if (module && !use_device(device) && cu.module_unload)
		(void)cu.module_unload(module);
}

int ddtx_hmem_module_function(void *module, const char *name, void **fn)
{
	if (!cu.module_function)
		return -FI_ENOSYS;
	return cu.module_function(fn, module, name) ? -FI_ENOENT : 0;
}

int ddtx_hmem_launch(int device, void *fn, unsigned grid, unsigned threads, void **args)
{
	int ret = use_device(device);

	if (ret)
		return ret;
	if (cu.launch(fn, grid, 1, 1, threads, 1, 1, 0, NULL, args, NULL) != 0)
		return -FI_EIO;
	/* The default stream: the caller's next step (a send of the packed bytes) needs them. */
	return cu.ctx_sync() ? -FI_EIO : 0;
}

int ddtx_hmem_upload_launch(int device, void *dst, const void *src, size_t len, void *fn,
			    unsigned grid, unsigned threads, void **args)
{
	int ret = use_device(device);

	if (ret)
		return ret;
	if (!cu.copy_async)
		return (ret = ddtx_hmem_copy(device, dst, src, len, DDTX_HMEM_TO_DEVICE))
			       ? ret
			       : ddtx_hmem_launch(device, fn, grid, threads, args);
	/* One wait for both: a synchronous upload first cost a round trip of its own. */
	if (cu.copy_async((cu_deviceptr)(uintptr_t)dst, (cu_deviceptr)(uintptr_t)src, len, NULL) ||
	    cu.launch(fn, grid, 1, 1, threads, 1, 1, 0, NULL, args, NULL) != 0) {
		(void)cu.ctx_sync();
		return -FI_EIO;
	}
	return cu.ctx_sync() ? -FI_EIO : 0;
}

/* CUDA_MEMCPY2D (cuda.h), 64-bit layout. */
struct cu_memcpy2d {
	size_t src_x, src_y;
	unsigned int src_type;
	const void *src_host;
	cu_deviceptr src_device;
	void *src_array;
	size_t src_pitch;
	size_t dst_x, dst_y;
	unsigned int dst_type;
	void *dst_host;
	cu_deviceptr dst_device;
	void *dst_array;
	size_t dst_pitch;
	size_t width, height;
};

int ddtx_hmem_copy_2d(int device, void *dst, size_t dpitch, const void *src, size_t spitch,
		      size_t width, size_t height, enum ddtx_hmem_dir dir)
{
	int ret = use_device(device);
	struct cu_memcpy2d d = { .width = width, .height = height, .src_pitch = spitch,
				 .dst_pitch = dpitch };

	if (ret || !width || !height)
		return ret;
	if (!cu.copy_2d)
		return -FI_ENOSYS;
	bool src_dev = dir != DDTX_HMEM_TO_DEVICE, dst_dev = dir != DDTX_HMEM_TO_HOST;
	d.src_type = src_dev ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
	d.dst_type = dst_dev ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
	if (src_dev)
		d.src_device = (cu_deviceptr)(uintptr_t)src;
	else
		d.src_host = src;
	if (dst_dev)
		d.dst_device = (cu_deviceptr)(uintptr_t)dst;
	else
		d.dst_host = dst;
	cu_result r = cu.copy_2d(&d);
	if (r != 0) {
		DDTX_WARN(FI_LOG_EP_DATA, "hmem: 2-D copy of %zu x %zu bytes refused (CUresult %d)\n",
			  height, width, r);
		return -FI_EIO;
	}
	return 0;
}

void *ddtx_hmem_host_alloc(int device, size_t len, bool *pinned)
{
	void *p = NULL;

	*pinned = false;
	if (cu.host_alloc && cu.host_free && !use_device(device) && cu.host_alloc(&p, len) == 0 &&
	    p) {
		*pinned = true;
		return p;
	}
	return malloc(len);
}

void ddtx_hmem_host_free(void *p, bool pinned)
{
	if (pinned)
		(void)cu.host_free(p);
	else
		free(p);
}

_Static_assert(sizeof(struct cu_ipc_handle) == DDTX_HMEM_IPC_HANDLE_BYTES, "CUipcMemHandle");

int ddtx_hmem_ipc_export(const void *addr, struct ddtx_hmem_ipc *out)
{
	struct ddtx_hmem_attr a;
	cu_deviceptr base = 0;
	size_t size = 0;
	int ret;

	if (!ddtx_hmem_cuda_available() || !cu.addr_range || !cu.ipc_get)
		return -FI_ENOSYS;
	ddtx_hmem_detect(addr, &a);
	if (a.iface != DDTX_HMEM_CUDA)
		return -FI_EINVAL;
	if ((ret = use_device(a.device)))
		return ret;
	memset(out, 0, sizeof(*out));
	if (cu.addr_range(&base, &size, (cu_deviceptr)(uintptr_t)addr) != 0 ||
	    cu.ipc_get(out->handle, base) != 0) {
		DDTX_WARN(FI_LOG_EP_DATA, "hmem: no IPC handle for the allocation of %p\n", addr);
		return -FI_EIO;
	}
	out->base = base;
	out->size = size;
	out->buffer_id = a.buffer_id;
	out->device = a.device;
	return 0;
}

int ddtx_hmem_ipc_open(int device, const uint8_t handle[DDTX_HMEM_IPC_HANDLE_BYTES],
		       void **base, size_t *size)
{
	struct cu_ipc_handle h;
	cu_deviceptr p = 0, start = 0;
	int ret = use_device(device);

	if (ret)
		return ret;
	if (!cu.ipc_open || !cu.ipc_close || !cu.addr_range)
		return -FI_ENOSYS;
	memcpy(h.reserved, handle, sizeof(h.reserved));
	cu_result r = cu.ipc_open(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
	if (r != 0 || !p) {
		DDTX_INFO(FI_LOG_EP_DATA, "hmem: IPC handle refused (CUresult %d)\n", r);
		return -FI_EIO;
	}
	*size = 0;
	if (cu.addr_range(&start, size, p) != 0 || start != p) {
		(void)cu.ipc_close(p);
		return -FI_EIO;
	}
	*base = (void *)(uintptr_t)p;
	return 0;
}

int ddtx_hmem_ipc_close(int device, void *base)
{
	int ret = use_device(device);

	if (ret)
		return ret;
	if (!cu.ipc_close)
		return -FI_ENOSYS;
	return cu.ipc_close((cu_deviceptr)(uintptr_t)base) ? -FI_EIO : 0;
}

int ddtx_hmem_copy_batch(int device, const struct ddtx_hmem_copy_op *ops, size_t n)
{
	int ret = use_device(device);
	cu_result r = 0;

	if (ret || !n)
		return ret;
	if (!cu.copy_async || !cu.stream_sync)
		return -FI_ENOSYS;
	/* Queued back to back, waited for once: the copy engine overlaps what the calls cost. */
	for (size_t i = 0; i < n && !r; i++)
		if (ops[i].len)
			r = cu.copy_async((cu_deviceptr)(uintptr_t)ops[i].dst,
					  (cu_deviceptr)(uintptr_t)ops[i].src, ops[i].len, NULL);
	cu_result w = cu.stream_sync(NULL);
	if (r || w) {
		DDTX_WARN(FI_LOG_EP_DATA, "hmem: batch of %zu copies refused (CUresult %d/%d)\n", n,
			  r, w);
		return -FI_EIO;
	}
	return 0;
}

int ddtx_hmem_copy_2d_d2d(int device, void *dst, size_t dpitch, const void *src, size_t spitch,
			  size_t width, size_t height)
{
	int ret = use_device(device);
	struct cu_memcpy2d d = { .width = width, .height = height, .src_pitch = spitch,
				 .dst_pitch = dpitch, .src_type = CU_MEMORYTYPE_UNIFIED,
				 .dst_type = CU_MEMORYTYPE_UNIFIED };

	if (ret || !width || !height)
		return ret;
	if (!cu.copy_2d_async || !cu.stream_sync)
		return -FI_ENOSYS;
	d.src_device = (cu_deviceptr)(uintptr_t)src;
	d.dst_device = (cu_deviceptr)(uintptr_t)dst;
	cu_result r = cu.copy_2d_async(&d, NULL);
	cu_result w = cu.stream_sync(NULL);
	if (r || w) {
		DDTX_WARN(FI_LOG_EP_DATA, "hmem: 2-D device copy of %zu x %zu bytes refused "
			  "(CUresult %d/%d)\n", height, width, r, w);
		return -FI_EIO;
	}
	return 0;
}
