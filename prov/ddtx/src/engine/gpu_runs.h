/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Runs: what the device pack kernels (gpu_pack.cu) read.  A compiled layout (dataloop.h) is
 * flattened into runs of equal blocks at a constant stride; the pack kernel gives each run one
 * thread block, whose threads copy the run's bytes.  A run holds at most max_blocks blocks and
 * DDTX_GPU_RUN_MAX_BYTES bytes so that the work per thread block stays bounded (a 1M-row vector
 * or one 1 MiB block is cut into many runs, which the GPU spreads over its SMs).  The layout of
 * struct ddtx_gpu_run is shared with the kernel: only fixed-width fields, no pointers.
 *
 * ddtx_gpu_runs_apply is the kernel's algorithm on the host, byte for byte: the unit test
 * checks the runs against the dataloop's own gather/scatter through it, and the host-staging
 * path never needs it.
 */
#ifndef DDTX_ENGINE_GPU_RUNS_H
#define DDTX_ENGINE_GPU_RUNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct ddtx_dataloop;

struct ddtx_gpu_run {
	uint64_t payload;   /* payload offset of the run's first byte */
	int64_t off;        /* address of the first block, from the layout's origin */
	uint64_t block;     /* bytes per block */
	int64_t stride;     /* from one block to the next */
	uint64_t n;         /* blocks */
};

struct ddtx_gpu_runs {
	size_t nruns;
	struct ddtx_gpu_run *runs;
	size_t total;       /* payload bytes */
	unsigned width;     /* widest word (1, 4, 8, 16) dividing every block, stride and offset */
};

/* Blocks per run, at most: 64 KiB of 8-byte blocks keep one thread block busy a few us. */
#define DDTX_GPU_RUN_MAX_BLOCKS 8192
/* Bytes per run, at most (a longer block is cut in pieces): on an H200 a vector of 512 4 KiB
 * blocks as one run, one thread block, packed in 450 us, a single SM's copy rate. */
#define DDTX_GPU_RUN_MAX_BYTES ((uint64_t)16 << 10)

/*
 * Flatten dl into runs of at most max_blocks blocks (0: DDTX_GPU_RUN_MAX_BLOCKS).  Runs are in
 * payload order and adjacent blocks of one length and one stride share a run.  0 or -FI_ENOMEM.
 */
int ddtx_gpu_runs_build(const struct ddtx_dataloop *dl, size_t max_blocks,
			struct ddtx_gpu_runs *out);
void ddtx_gpu_runs_free(struct ddtx_gpu_runs *r);
/* The same from an iov list at origin (any list, nothing compiled: host staging's segments). */
int ddtx_gpu_runs_from_iov(const struct iovec *iov, size_t count, uintptr_t origin,
			   size_t max_blocks, struct ddtx_gpu_runs *out);

/* The runs [*first, *first + *count) that hold payload bytes [lo, hi). */
void ddtx_gpu_runs_span(const struct ddtx_gpu_runs *r, size_t lo, size_t hi, size_t *first,
			size_t *count);

/*
 * What the kernel does, on the host: copy payload bytes [lo, lo + len) between the layout at
 * origin and packed (gather: layout -> packed; else packed -> layout).  Returns bytes copied.
 */
size_t ddtx_gpu_runs_apply(const struct ddtx_gpu_runs *r, void *origin, size_t lo, void *packed,
			   size_t len, bool gather);

#endif /* DDTX_ENGINE_GPU_RUNS_H */
