/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hmem: which memory an address belongs to (host or a CUDA device), and what a wire needs to
 * register device memory (a dma-buf file descriptor).  CUDA is reached through dlopen of
 * libcuda.so.1 only: no build or run dependency; without it every address is host memory.
 */
#ifndef DDTX_HMEM_H
#define DDTX_HMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ddtx_hmem_iface {
	DDTX_HMEM_SYSTEM = 0,
	DDTX_HMEM_CUDA = 1,
};

struct ddtx_hmem_attr {
	enum ddtx_hmem_iface iface;
	int device;                     /* CUDA device ordinal (-1 for host memory) */
	bool managed;                   /* CUDA managed memory (registered as host memory) */
	uint64_t buffer_id;             /* CUDA buffer id: changes when the range is reallocated */
	uint64_t range_base, range_size; /* the allocation holding the address (device memory) */
};

/* Is the CUDA driver loaded and initialised?  (The first call tries dlopen + cuInit.)  Asked
 * twice per message, so the answer once known is a load (pthread_once was 16 instructions of
 * each 8 B message). */
extern int ddtx_hmem_cuda_known;        /* 0: not asked yet; 1: available; -1: not */
bool ddtx_hmem_cuda_load(void);
static inline bool ddtx_hmem_cuda_available(void)
{
	int known = __atomic_load_n(&ddtx_hmem_cuda_known, __ATOMIC_ACQUIRE);
	return known ? known > 0 : ddtx_hmem_cuda_load();
}

/* Classify addr.  Always succeeds: anything CUDA does not claim is host memory. */
void ddtx_hmem_detect(const void *addr, struct ddtx_hmem_attr *attr);

/* Does addr lie in the device allocation attr was detected in (the same memory, then)? */
bool ddtx_hmem_attr_covers(const struct ddtx_hmem_attr *attr, const void *addr);

/*
 * A dma-buf file descriptor for the device range holding [addr, addr + len): the range is
 * widened to whole pages; *offset is addr's offset in it.  The caller closes *fd.
 * -FI_ENOSYS without CUDA (or a driver without cuMemGetHandleForAddressRange), -FI_EINVAL if
 * the range is not device memory, -FI_EIO if the driver refuses.
 */
int ddtx_hmem_dmabuf_fd(const void *addr, size_t len, int *fd, uint64_t *offset);

/* Make device memory synchronous for RDMA (CU_POINTER_ATTRIBUTE_SYNC_MEMOPS); 0 or -FI_E*. */
int ddtx_hmem_sync_memops(const void *addr);

/* CUDA devices the driver sees (0 without CUDA). */
int ddtx_hmem_cuda_device_count(void);
/* Can device memory be exported as dma-buf (cuMemGetHandleForAddressRange), so that a NIC
 * registers it (ibv_reg_dmabuf_mr)? */
bool ddtx_hmem_dmabuf_available(void);
/*
 * The test stand-in's door (tests/fabtests/fakecuda, fakeCudaHostView): the host address where
 * the bytes at device address addr can be read and written, *len cut to those that lie in its
 * allocation, or NULL (not device memory, or a real driver, which has no such call).  What lets
 * the shm wire's software HCA act as a NIC that reaches device memory, as a NIC does through
 * dma-buf, so that the protocols' zero-copy path for device memory runs in CI.  Never true on
 * a GPU.
 */
bool ddtx_hmem_host_view_available(void);
void *ddtx_hmem_host_view(const void *addr, size_t *len);

enum ddtx_hmem_dir {
	DDTX_HMEM_TO_HOST,              /* device -> host */
	DDTX_HMEM_TO_DEVICE,            /* host -> device */
	DDTX_HMEM_DEVICE_TO_DEVICE,
};

/*
 * Synchronous copy through the driver (cuMemcpy{DtoH,HtoD,DtoD}) in the primary context of
 * `device`: what host staging moves device memory with.  0, -FI_ENOSYS without CUDA, -FI_EINVAL
 * for a device the driver does not see, -FI_EIO if the driver refuses (freed memory, say).
 */
int ddtx_hmem_copy(int device, void *dst, const void *src, size_t len, enum ddtx_hmem_dir dir);

/*
 * A 2-D copy (cuMemcpy2D): height rows of width bytes, rows spitch apart at src and dpitch
 * apart at dst; which side is device memory as dir says.  -FI_ENOSYS without the call.
 */
int ddtx_hmem_copy_2d(int device, void *dst, size_t dpitch, const void *src, size_t spitch,
		      size_t width, size_t height, enum ddtx_hmem_dir dir);

/*
 * Host memory for bounce buffers: page-locked through the driver (cuMemAllocHost: device copies
 * to and from it run at the copy engine's speed, not through the driver's own staging), else
 * plain malloc.  *pinned says which, for ddtx_hmem_host_free.
 */
void *ddtx_hmem_host_alloc(int device, size_t len, bool *pinned);
void ddtx_hmem_host_free(void *p, bool pinned);

/* Device memory for kernel arguments and bounce buffers (cuMemAlloc/cuMemFree). */
int ddtx_hmem_dev_alloc(int device, size_t len, void **out);
void ddtx_hmem_dev_free(int device, void *p);

/*
 * Kernels: a fatbin image loaded into device's primary context (cuModuleLoadData), a function
 * of it (cuModuleGetFunction), launched on a 1-D grid in the default stream and waited for
 * (cuLaunchKernel + cuCtxSynchronize).  -FI_ENOSYS when the driver lacks the calls.
 */
int ddtx_hmem_module_load(int device, const void *image, void **module);
void ddtx_hmem_module_unload(int device, void *module);
int ddtx_hmem_module_function(void *module, const char *name, void **fn);
int ddtx_hmem_launch(int device, void *fn, unsigned grid, unsigned threads, void **args);
/* The same after a copy of len bytes from host src (page-locked, for the copy to overlap) to
 * device dst, both queued in the default stream and waited for once. */
int ddtx_hmem_upload_launch(int device, void *dst, const void *src, size_t len, void *fn,
			    unsigned grid, unsigned threads, void **args);

/*
 * CUDA IPC: another process of this host maps a device allocation of ours.  The handle is the
 * driver's opaque CUipcMemHandle (64 bytes); it names a whole allocation, so it travels with
 * the allocation's base and size and its buffer id (which changes when the range is freed and
 * allocated again: how a peer tells a stale handle from a live one).
 */
#define DDTX_HMEM_IPC_HANDLE_BYTES 64

struct ddtx_hmem_ipc {
	uint8_t handle[DDTX_HMEM_IPC_HANDLE_BYTES];
	uint64_t base;                  /* the allocation holding the address, in our space */
	uint64_t size;
	uint64_t buffer_id;
	int device;
};

/*
 * Export the allocation holding addr (cuMemGetAddressRange + cuIpcGetMemHandle).  -FI_ENOSYS
 * without CUDA or without the IPC calls, -FI_EINVAL if addr is not device memory, -FI_EIO if
 * the driver refuses (memory not exportable, e.g. from a pool or a VMM mapping).
 */
int ddtx_hmem_ipc_export(const void *addr, struct ddtx_hmem_ipc *out);

/*
 * Map a peer's exported allocation into this process (cuIpcOpenMemHandle, in device's primary
 * context, peer access enabled lazily): *base is where its first byte is here, *size the
 * allocation's size as the driver knows it (cuMemGetAddressRange).  -FI_ENOSYS
 * without the calls, -FI_EINVAL for a device the driver does not see, -FI_EIO when the driver
 * refuses the handle (forged, of a freed allocation, of a device this one cannot reach).
 */
int ddtx_hmem_ipc_open(int device, const uint8_t handle[DDTX_HMEM_IPC_HANDLE_BYTES],
		       void **base, size_t *size);
/* Unmap what ddtx_hmem_ipc_open mapped (cuIpcCloseMemHandle). */
int ddtx_hmem_ipc_close(int device, void *base);

/*
 * Device-to-device copies queued on the default stream of device's primary context and then
 * waited for: n plain copies (cuMemcpyAsync, unified addressing: either side may be a peer's
 * mapping or host memory), or one 2-D copy (cuMemcpy2DAsync, unified addressing as well) of
 * height rows of width bytes.
 * 0, -FI_ENOSYS without the calls, -FI_EIO when the driver refuses any of them (the bytes of
 * the copies before it may have moved).
 */
struct ddtx_hmem_copy_op {
	void *dst;
	const void *src;
	size_t len;
};
int ddtx_hmem_copy_batch(int device, const struct ddtx_hmem_copy_op *ops, size_t n);
int ddtx_hmem_copy_2d_d2d(int device, void *dst, size_t dpitch, const void *src, size_t spitch,
			  size_t width, size_t height);

#endif /* DDTX_HMEM_H */
