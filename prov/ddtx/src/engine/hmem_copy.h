/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * How host staging moves the device part of an operation between device memory and its host
 * bounce buffer (proto/hmem_stage.c):
 *   SEGMENTS  one driver copy per segment (cuMemcpyDtoH / HtoD): anything, any mix of host and
 *             device segments; costs a driver call per segment
 *   COPY2D    one cuMemcpy2D for a vector (equal blocks at one stride, going up in memory): the
 *             copy engine strides, one call
 *   KERNEL    the device pack kernel (engine/gpu_kernels.h) packs every segment into device
 *             scratch, then one copy: many small blocks in one launch
 * COPY2D and KERNEL need every segment to be memory of one device.  The choice is a fixed cost
 * line (below), not learned from measured transfers yet; FI_DDTX_HMEM_COPY forces one.
 */
#ifndef DDTX_ENGINE_HMEM_COPY_H
#define DDTX_ENGINE_HMEM_COPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

enum ddtx_hmem_copy {
	DDTX_HMEM_COPY_AUTO = 0,        /* as a setting: let the cost line choose */
	DDTX_HMEM_COPY_SEGMENTS,
	DDTX_HMEM_COPY_2D,
	DDTX_HMEM_COPY_KERNEL,
	DDTX_HMEM_COPY_COUNT,
};

const char *ddtx_hmem_copy_name(enum ddtx_hmem_copy c);

/* What the choice looks at. */
struct ddtx_hmem_copy_shape {
	size_t segments;                /* non-empty segments */
	bool one_device;                /* every one of them device memory of one device */
	bool vector;                    /* equal lengths at a constant stride >= length, going up */
	size_t block;                   /* the vector's block length */
	int64_t stride;
	bool kernels;                   /* the pack kernels loaded for that device */
};

/* Describe iov (count entries; device[i]: segment i is device memory of device dev; device
 * NULL: all of one device). */
void ddtx_hmem_copy_shape_of(const struct iovec *iov, size_t count, const int *device,
			     struct ddtx_hmem_copy_shape *out);
/* The same for n non-empty segments of block bytes at stride, all of one device. */
void ddtx_hmem_copy_shape_of_vec(size_t n, size_t block, int64_t stride,
				 struct ddtx_hmem_copy_shape *out);

/*
 * The way to use: `forced` when it is possible for this shape, else the cheapest by the cost
 * line: a driver call costs about DDTX_HMEM_CALL_NS, a kernel launch with its scratch about
 * DDTX_HMEM_KERNEL_NS (estimates from CUDA's published launch and copy latencies).  Measured on
 * an H200 (2026-11-26, nc_gpu_bw): a staged driver copy about 7 us a segment, a kernel call
 * 30 us alone on the GPU and about 150 us after another process used it; either way the
 * choice (a kernel beyond a handful of segments) stands.  *fell_back: forced was impossible.
 * (Under auto, host staging takes the learned choice of hmem_way_cost.h, whose priors are
 * this cost line; this one serves forced ways and their fallback.)
 */
enum ddtx_hmem_copy ddtx_hmem_copy_choose(const struct ddtx_hmem_copy_shape *s,
					  enum ddtx_hmem_copy forced, bool *fell_back);

#define DDTX_HMEM_CALL_NS 4000
#define DDTX_HMEM_KERNEL_NS 20000

#endif /* DDTX_ENGINE_HMEM_COPY_H */
