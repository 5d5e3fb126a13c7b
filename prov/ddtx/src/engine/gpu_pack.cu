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
#include "gpu_piece_word.h"

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

// Pieces (gpu_pieces.h): any list of (dst, src, len) in one launch, one group per thread block.
template <typename T>
__device__ __forceinline__ void piece_copy(const ddtx_gpu_piece &q, uint64_t first,
					   uint64_t step)
{
	uint8_t *d = reinterpret_cast<uint8_t *>(q.dst);
	const uint8_t *s = reinterpret_cast<const uint8_t *>(q.src);
	for (uint64_t k = first; k < q.len / sizeof(T); k += step)
		copy_word<T>(d + k * sizeof(T), s + k * sizeof(T));
}

__device__ __forceinline__ void piece_words(const ddtx_gpu_piece &q, uint64_t first,
					    uint64_t step)
{
	switch (ddtx_gpu_piece_width(q.dst, q.src, q.len)) {
	case 16: piece_copy<uint4>(q, first, step); break;
	case 8: piece_copy<uint64_t>(q, first, step); break;
	case 4: piece_copy<uint32_t>(q, first, step); break;
	default: piece_copy<uint8_t>(q, first, step); break;
	}
}

extern "C" __global__ void ddtx_pieces(const ddtx_gpu_piece *p, const uint32_t *group)
{
	const uint32_t first = group[blockIdx.x], end = group[blockIdx.x + 1];
	// short pieces: a thread each
	for (uint32_t i = first + threadIdx.x; i < end; i += blockDim.x)
		if (p[i].len <= DDTX_GPU_PIECE_SHORT)
			piece_words(p[i], 0, 1);
	// longer ones: the whole block on each
	for (uint32_t i = first; i < end; i++)
		if (p[i].len > DDTX_GPU_PIECE_SHORT)
			piece_words(p[i], threadIdx.x, blockDim.x);
}
