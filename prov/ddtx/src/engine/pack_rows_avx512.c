/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Row kernels on AVX-512 (compiled with -mavx512f -mavx512bw -mavx512vl; pack_kernels.c calls
 * them only where the CPU has those), for the rows where they beat the baseline kernels.
 * Rows whose blocks are half their stride (2, 4 or 8 bytes every 4, 8 or 16: every other
 * element of an array, the real parts of complex numbers) go 64 bytes of payload at a time:
 * two loads and one permute for a gather, one permute and two masked stores for a scatter.
 * The masked stores leave the gaps between blocks, which belong to the application, unwritten;
 * a gather's loads read gaps between blocks, never past a row's last block (the last group's
 * loads are masked).  Blocks of 64 bytes go by one move instead of four 16-byte ones.
 * test_dataloop bench, the AMD EPYC host, 256 KiB in cache (against the baseline kernels):
 * 8 B blocks gather 1.5x, scatter 1.6x; 4 B 2.2-2.7x and 2.9-3.3x; 2 B 5.8-6.5x and 4.7x;
 * 64 B at 128 1.1-1.15x (1.3-1.6x with the gap prefetch below); from memory (32 MiB) 64 B
 * 1.4-1.6x (1.8-2.1x in four runs with the far loop below), the others as fast as before.
 * What did not pay: 16-byte blocks the same way (1.0x), masked loads throughout (from memory
 * 0.65x of the baseline), masked stores without a prefetch for writing ahead (0.55x), 32, 48
 * and 256-byte blocks by wide moves (1.0x).  Those figures are from an AMD EPYC of family 26;
 * on family 25, which splits 512-bit moves, the 64-byte kernels lose (pack_kernels.c does not
 * run them there) and so do the 4 and 8-byte ones from memory (below).
 */
#include "engine/pack_rows_avx512.h"
#include "engine/dataloop.h"

#include <immintrin.h>

/* Bytes ahead of a half-stride scatter to prefetch for writing: masked stores that miss the
 * cache are not prefetched by the hardware (measured above). */
#define SCATTER_AHEAD 1024
/* Blocks a page or more apart keep the baseline kernels, which prefetch them. */
#define LINE_MAX_STRIDE 4096

/*
 * Permute tables of a half-stride row, per element width (the block's).  gather: the packed
 * vector's elements from two 64-byte lines of the layout (indexes 0..2E-1 over both); lo/hi: a
 * line of the layout from the first or the second half of 64 packed bytes (elements the mask
 * leaves out are don't-cares).
 */
static const uint16_t g16[32] = {0,  2,  4,  6,  8,  10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30,
				 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62};
static const uint16_t lo16[32] = {0, 0, 1, 1, 2,  2,  3,  3,  4,  4,  5,  5,  6,  6,  7,  7,
				  8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15};
static const uint16_t hi16[32] = {16, 16, 17, 17, 18, 18, 19, 19, 20, 20, 21, 21, 22, 22, 23, 23,
				  24, 24, 25, 25, 26, 26, 27, 27, 28, 28, 29, 29, 30, 30, 31, 31};
static const uint32_t g32[16] = {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30};
static const uint32_t lo32[16] = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7};
static const uint32_t hi32[16] = {8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15};
static const uint64_t g64[8] = {0, 2, 4, 6, 8, 10, 12, 14};
static const uint64_t lo64[8] = {0, 0, 1, 1, 2, 2, 3, 3};
static const uint64_t hi64[8] = {4, 4, 5, 5, 6, 6, 7, 7};

/*
 * A half-stride row kernel pair for elements of width W (epi16/32/64) whose blocks are B bytes;
 * M: the mask of the blocks' elements in a 64-byte line, MT its type.  Whole groups of 64 / B
 * blocks go here (returns how many blocks); the rest of the row is the caller's.
 */
#define HALF_KERNELS(B, W, MT, M, G, LO, HI)                                                    \
	static size_t half_gather_##B(uint8_t *restrict d, const uint8_t *restrict s, size_t n)  \
	{                                                                                       \
		const __m512i idx = _mm512_loadu_si512(G);                                      \
		size_t groups = n / (64 / B);                                                   \
		for (size_t k = 0; k + 1 < groups; k++, s += 128, d += 64) {                    \
			__m512i a = _mm512_loadu_si512(s);                                      \
			__m512i b = _mm512_loadu_si512(s + 64);                                 \
			_mm512_storeu_si512(d, _mm512_permutex2var_##W(a, idx, b));            \
		}                                                                               \
		if (groups) {                                                                   \
			__m512i a = _mm512_maskz_loadu_##W((MT)(M), s);                         \
			__m512i b = _mm512_maskz_loadu_##W((MT)(M), s + 64);                    \
			_mm512_storeu_si512(d, _mm512_permutex2var_##W(a, idx, b));            \
		}                                                                               \
		return groups * (64 / B);                                                       \
	}                                                                                       \
	static size_t half_scatter_##B(uint8_t *restrict d, const uint8_t *restrict s, size_t n) \
	{                                                                                       \
		const __m512i lo = _mm512_loadu_si512(LO), hi = _mm512_loadu_si512(HI);         \
		size_t groups = n / (64 / B);                                                   \
		for (size_t k = 0; k < groups; k++, s += 64, d += 128) {                        \
			__builtin_prefetch(d + SCATTER_AHEAD, 1);                               \
			__builtin_prefetch(d + SCATTER_AHEAD + 64, 1);                          \
			__m512i v = _mm512_loadu_si512(s);                                      \
			_mm512_mask_storeu_##W(d, (MT)(M), _mm512_permutexvar_##W(lo, v));      \
			_mm512_mask_storeu_##W(d + 64, (MT)(M), _mm512_permutexvar_##W(hi, v)); \
		}                                                                               \
		return groups * (64 / B);                                                       \
	}

HALF_KERNELS(2, epi16, __mmask32, 0x55555555u, g16, lo16, hi16)
HALF_KERNELS(4, epi32, __mmask16, 0x5555u, g32, lo32, hi32)
HALF_KERNELS(8, epi64, __mmask8, 0x55u, g64, lo64, hi64)

/*
 * Blocks of 64 bytes: one move each way instead of four 16-byte ones.  Blocks every other line
 * (stride 128) also prefetch the line between two blocks: the hardware then sees a stream of
 * consecutive lines and fetches ahead, where every other line alone it served more slowly.
 * test_dataloop bench, the AMD EPYC host, against memcpy of the same bytes (four runs before,
 * nine after): 256 KiB in cache, gather 0.61-0.67x -> 0.70-0.89x, scatter 0.65-0.69x ->
 * 0.68-0.95x; from memory (32 MiB) gather 0.46-0.56x -> 0.58-0.68x, scatter within the runs'
 * spread (0.53-0.65x, 0.58-0.69x).  In a loop of its own at stride 192 the same prefetch
 * helped in cache and cost from memory (0.60x -> 0.49x); at 256 it cost in both.
 */
static size_t line_gather(uint8_t *restrict d, const uint8_t *restrict s, int64_t stride,
			  size_t n, bool far)
{
	if (stride == 128 && far) {
		/*
		 * From memory a load of the line between, not a prefetch: the hardware's stream
		 * prefetcher follows loads.  A loop of its own, 32 MiB of payload, against
		 * memcpy: prefetch 0.59-0.62x, a one-byte load 0.67-0.71x, that load with two
		 * blocks an iteration 0.76x (0.81x in PACK's chunks of 1024 blocks; in later
		 * runs 0.60-0.69x against the prefetch's 0.53-0.61x); in the caches (256 KiB-2
		 * MiB) that loop lost to the prefetch (0.46x against 0.61x at 256 KiB, 0.76x
		 * against 0.89x at 2 MiB).
		 */
		size_t i = 0;
		for (; i + 2 < n; i += 2, s += 256, d += 128) { /* never past the last block */
			(void)*(volatile const uint8_t *)(s + 64);
			(void)*(volatile const uint8_t *)(s + 192);
			__m512i a = _mm512_loadu_si512(s), b = _mm512_loadu_si512(s + 128);
			_mm512_storeu_si512(d, a);
			_mm512_storeu_si512(d + 64, b);
		}
		for (; i < n; i++, s += 128, d += 64)
			_mm512_storeu_si512(d, _mm512_loadu_si512(s));
		return n;
	}
	if (stride == 128) {
		for (size_t i = 0; i < n; i++, s += 128, d += 64) {
			__builtin_prefetch(s + 64);
			_mm512_storeu_si512(d, _mm512_loadu_si512(s));
		}
		return n;
	}
	for (size_t i = 0; i < n; i++, s += stride, d += 64)
		_mm512_storeu_si512(d, _mm512_loadu_si512(s));
	return n;
}

static size_t line_scatter(uint8_t *restrict d, int64_t stride, const uint8_t *restrict s,
			   size_t n)
{
	if (stride == 128) {
		for (size_t i = 0; i < n; i++, d += 128, s += 64) {
			__builtin_prefetch(d + 64, 1);
			_mm512_storeu_si512(d, _mm512_loadu_si512(s));
		}
		return n;
	}
	for (size_t i = 0; i < n; i++, d += stride, s += 64)
		_mm512_storeu_si512(d, _mm512_loadu_si512(s));
	return n;
}

size_t ddtx_rows_copy_avx512(uint8_t *lay, int64_t stride, uint8_t *buf, size_t block, size_t n,
			     bool scatter, bool far, unsigned kinds)
{
	if (block == 64 && stride > -LINE_MAX_STRIDE && stride < LINE_MAX_STRIDE)
		return !(kinds & DDTX_DL_ROWS_LINE) ? 0
		       : scatter ? line_scatter(lay, stride, buf, n)
				 : line_gather(buf, lay, stride, n, far);
	/*
	 * From memory the half-stride kernels of 4 and 8-byte blocks lose to the baseline loops
	 * on the AMD EPYC of family 25 (test_dataloop bench, 32 MiB, three runs, against the
	 * baseline: 4 B gather 0.79-0.87x, scatter 0.79-0.87x; 8 B 0.74-0.77x, 0.75-0.88x) and
	 * only tie on family 26 (8 B 0.95x and 1.06x); in the caches they win on both (1.7-2.1x
	 * and 1.0-1.5x on family 25).  2-byte blocks tie from memory and win 3.7-4.5x in cache.
	 */
	if (!(kinds & DDTX_DL_ROWS_HALF) || stride != 2 * (int64_t)block || (far && block != 2))
		return 0;
	switch (block) {
	case 2: return scatter ? half_scatter_2(lay, buf, n) : half_gather_2(buf, lay, n);
	case 4: return scatter ? half_scatter_4(lay, buf, n) : half_gather_4(buf, lay, n);
	case 8: return scatter ? half_scatter_8(lay, buf, n) : half_gather_8(buf, lay, n);
	default: return 0;
	}
}
