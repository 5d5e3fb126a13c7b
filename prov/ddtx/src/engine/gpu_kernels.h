/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The device pack kernels (gpu_pack.cu): whether this build carries them, and packing a segment
 * of a compiled layout in device memory into a device buffer (and back) with them.  The fatbin
 * is embedded in the provider and loaded per device on first use through hmem/ (dlopened
 * driver API).  Never run on a GPU so far: see fi_ddtx(7), GPU memory.
 */
#ifndef DDTX_ENGINE_GPU_KERNELS_H
#define DDTX_ENGINE_GPU_KERNELS_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/gpu_runs.h"

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

/* Threads per thread block of the pack kernels: a warp multiple that covers a 4 KiB row of
 * 16-byte words in one pass. */
#define DDTX_GPU_PACK_THREADS 256

#endif /* DDTX_ENGINE_GPU_KERNELS_H */
