/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The index arithmetic of one word of a run (gpu_runs.h), shared by the device kernels
 * (gpu_pack.cu, compiled by nvcc) and their host twin (ddtx_gpu_runs_apply), so that the unit
 * test of the host twin checks the very code the kernels run.  Plain C that nvcc also reads.
 */
#ifndef DDTX_ENGINE_GPU_RUN_WORD_H
#define DDTX_ENGINE_GPU_RUN_WORD_H

#ifdef __CUDACC__
#define DDTX_GPU_FN __device__ __forceinline__
#else
#define DDTX_GPU_FN static inline
#endif

/* Word k (w bytes wide) of a run of n blocks of `block` bytes at `stride` from `off`:
 * its offset in the layout (from the origin) and in the payload. */
DDTX_GPU_FN void ddtx_gpu_run_word(uint64_t payload, int64_t off, uint64_t block,
				   int64_t stride, uint64_t k, unsigned w, int64_t *lay,
				   uint64_t *pay)
{
	uint64_t per = block / w;
	uint64_t j = k / per;
	uint64_t b = (k - j * per) * w;

	*lay = off + (int64_t)j * stride + (int64_t)b;
	*pay = payload + k * w;
}

#endif /* DDTX_ENGINE_GPU_RUN_WORD_H */
