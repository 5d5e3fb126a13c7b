// SPDX-License-Identifier: BSD-2-Clause
//
// Device pack/unpack kernels of compiled layouts, built by nvcc into a fatbin embedded in the
// provider (engine/gpu_fatbin.S) and loaded with cuModuleLoadData (engine/gpu_kernels.c): no
// CUDA runtime.  One thread block per run of blocks (gpu_runs.h); its threads copy words of
// `w` bytes (16, 8, 4 or 1: the widest that divides every block, stride, offset and the segment)
// so that 16-byte-aligned layouts move as uint4 loads and stores.  The index arithmetic is
// engine/gpu_run_word.h, which the host twin ddtx_gpu_runs_apply shares.
#include <stdint.h>

#include "gpu_runs.h"
#include "gpu_run_word.h"

template <typename T>
__device__ __forceinline__ void copy_word(uint8_t *dst, const uint8_t *src)
{
	*reinterpret_cast<T *>(dst) = *reinterpret_cast<const T *>(src);
}

template <typename T>
__device__ void run_copy(uint64_t payload, int64_t off, uint64_t block, int64_t stride,
			 uint64_t n, uint8_t *origin, uint8_t *packed, uint64_t lo, uint64_t hi,
			 int gather)
{
	const unsigned w = sizeof(T);
	uint64_t words = n * block / w;

	for (uint64_t k = threadIdx.x; k < words; k += blockDim.x) {
		int64_t lay;
		uint64_t pay;
		ddtx_gpu_run_word(payload, off, block, stride, k, w, &lay, &pay);
		if (pay < lo || pay >= hi)
			continue;
		if (gather)
			copy_word<T>(packed + (pay - lo), origin + lay);
		else
			copy_word<T>(origin + lay, packed + (pay - lo));
	}
}

template <typename T>
__device__ void runs_body(const ddtx_gpu_run *runs, uint64_t first, uint8_t *origin,
			  uint8_t *packed, uint64_t lo, uint64_t hi, int gather)
{
	const ddtx_gpu_run r = runs[first + blockIdx.x];
	run_copy<T>(r.payload, r.off, r.block, r.stride, r.n, origin, packed, lo, hi, gather);
}

// Runs read from the descriptor table (any compiled layout).
#define RUNS_KERNEL(name, T)                                                                  \
	extern "C" __global__ void name(const ddtx_gpu_run *runs, uint64_t first,             \
					uint8_t *origin, uint8_t *packed, uint64_t lo,        \
					uint64_t hi, int gather)                              \
	{                                                                                     \
		runs_body<T>(runs, first, origin, packed, lo, hi, gather);                    \
	}
RUNS_KERNEL(ddtx_runs_w16, uint4)
RUNS_KERNEL(ddtx_runs_w8, uint64_t)
RUNS_KERNEL(ddtx_runs_w4, uint32_t)
RUNS_KERNEL(ddtx_runs_w1, uint8_t)
