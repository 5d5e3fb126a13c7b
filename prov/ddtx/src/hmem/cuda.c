/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CUDA driver API through dlopen("libcuda.so.1").  Only the few entry points the wires need are
 * resolved; the constants below are the driver API's (cuda.h), defined here so that nothing
 * of CUDA is needed at build time.  Absent library, missing symbol or failed cuInit: CUDA is
 * "not available" and every address is host memory.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include <rdma/fi_errno.h>
#include "common/log.h"
#include "hmem/hmem.h"

typedef int cu_result;                           /* CUresult; 0 = CUDA_SUCCESS */
typedef unsigned long long cu_deviceptr;         /* CUdeviceptr (64-bit builds) */

enum {
	CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
	CU_POINTER_ATTRIBUTE_SYNC_MEMOPS = 6,
	CU_POINTER_ATTRIBUTE_BUFFER_ID = 7,
	CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
	CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
	CU_MEMORYTYPE_HOST = 1,
	CU_MEMORYTYPE_DEVICE = 2,
	CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 1,
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
} cu = { .once = PTHREAD_ONCE_INIT };

static void cuda_load(void)
{
	cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!cu.lib) {
		DDTX_INFO(FI_LOG_CORE, "hmem: no CUDA driver (%s): host memory only\n", dlerror());
		return;
	}
	*(void **)&cu.init = dlsym(cu.lib, "cuInit");
	*(void **)&cu.get_attrs = dlsym(cu.lib, "cuPointerGetAttributes");
	*(void **)&cu.set_attr = dlsym(cu.lib, "cuPointerSetAttribute");
	*(void **)&cu.get_handle = dlsym(cu.lib, "cuMemGetHandleForAddressRange");
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
	cu.ok = true;
	return;
fail:
	dlclose(cu.lib);
	cu.lib = NULL;
}

bool ddtx_hmem_cuda_available(void)
{
	pthread_once(&cu.once, cuda_load);
	return cu.ok;
}

void ddtx_hmem_detect(const void *addr, struct ddtx_hmem_attr *attr)
{
	unsigned int mem_type = 0, managed = 0;
	int ordinal = -1;
	unsigned long long id = 0;
	int attrs[] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
			CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_BUFFER_ID };
	void *data[] = { &mem_type, &managed, &ordinal, &id };

	memset(attr, 0, sizeof(*attr));
	attr->iface = DDTX_HMEM_SYSTEM;
	attr->device = -1;
	if (!addr || !ddtx_hmem_cuda_available())
		return;
	/* "invalid value" / "not initialised" for memory CUDA does not know: host memory. */
	if (cu.get_attrs(4, attrs, data, (cu_deviceptr)(uintptr_t)addr) != 0)
		return;
	if (mem_type != CU_MEMORYTYPE_DEVICE || managed)
		return;
	attr->iface = DDTX_HMEM_CUDA;
	attr->device = ordinal;
	attr->managed = false;
	attr->buffer_id = id;
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
