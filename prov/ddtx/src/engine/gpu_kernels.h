/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The device pack kernels (gpu_pack.cu): whether this build carries them, and packing a segment
 * of a compiled layout in device memory into a device buffer (and back) with them.  The fatbin
 * is embedded in the provider and loaded per device on first use through hmem/ (dlopened
 * driver API).  First run on a GPU (an H200) on 2026-11-26: see fi_ddtx(7), GPU memory.
 */
#ifndef DDTX_ENGINE_GPU_KERNELS_H
#define DDTX_ENGINE_GPU_KERNELS_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/gpu_runs.h"
#include "hmem/hmem.h"

/* Did nvcc build the kernels into this provider (-Dcuda)?  What to say about it (fi_info -v). */
bool ddtx_gpu_kernels_built(void);
const char *ddtx_gpu_kernels_describe(void);

/* A compiled layout's runs, uploaded to one device for the kernels. */
struct ddtx_gpu_layout {
	int device;
	struct ddtx_gpu_runs runs;
	void *dev_runs;                  /* the runs in device memory */
};

/* Are the kernels loaded on device (the first call loads them)? */
bool ddtx_gpu_kernels_ready(int device);

/* 0, -FI_ENOSYS (no kernels, no CUDA), -FI_ENOMEM, -FI_EIO.  _upload takes runs over. */
int ddtx_gpu_layout_make(const struct ddtx_dataloop *dl, int device, struct ddtx_gpu_layout *out);
int ddtx_gpu_layout_upload(struct ddtx_gpu_runs *runs, int device, struct ddtx_gpu_layout *out);
void ddtx_gpu_layout_free(struct ddtx_gpu_layout *gl);

/*
 * Payload bytes [lo, lo + len) between the layout at origin (device memory) and packed (device
 * memory): gather packs, else unpacks.  Synchronous.  0 or -FI_E*.
 */
int ddtx_gpu_pack(struct ddtx_gpu_layout *gl, void *origin, size_t lo, void *packed, size_t len,
		  bool gather);

/*
 * Copy n (dst, src, len) pieces of device memory in one launch of the copy kernel
 * (engine/gpu_pieces.h): any list, e.g. a peer's blocks mapped by CUDA IPC into ours.
 * Synchronous.  0, -FI_ENOSYS (no kernels), -FI_ENOMEM, -FI_EIO.
 */
int ddtx_gpu_copy_pieces(int device, const struct ddtx_hmem_copy_op *ops, size_t n);

/*
 * Pack (gather) or unpack the first len bytes of an iov list of device memory into/from packed
 * (device memory) with the pack kernel, its runs uploaded into descriptor memory kept per
 * device (no allocation per call).  Synchronous.  0 or -FI_E*.
 */
int ddtx_gpu_pack_iov(int device, const struct iovec *iov, size_t count, void *packed,
		      size_t len, bool gather);

/* Threads per thread block of the pack kernels: a warp multiple that covers a 4 KiB row of
 * 16-byte words in one pass. */
#define DDTX_GPU_PACK_THREADS 256

#endif /* DDTX_ENGINE_GPU_KERNELS_H */
