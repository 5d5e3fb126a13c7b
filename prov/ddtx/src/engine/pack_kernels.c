/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Leaf kernels of compiled layouts (dataloop.h): gather and scatter of a segment (any start
 * byte, any length) of the payload.  A segment is found by a binary search over the nodes;
 * inside a vector node the kernels run row by row (count[0] blocks at stride[0]) and pick, once
 * per row, a loop specialised for the block size: fixed-size copies the compiler turns into a
 * few loads and stores, four blocks per iteration, with a prefetch ahead.  What that saves: the
 * iov walk pays a memcpy call with a length test per block (about 5 ns), which for 8 B blocks is
 * all of the time.  Partial blocks at the ends of a segment are plain memcpy.
 */
#include "engine/dataloop.h"
#include "engine/iov.h"
#include "engine/pack_rows_avx512.h"
#include "common/minmax.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#ifdef DDTX_HAVE_AVX512_ROWS
#include <cpuid.h>
#endif

/* Blocks ahead to prefetch: far enough to cover a memory access at a few bytes per cycle. */
#define PF_AHEAD 16
/*
 * The row kernels prefetch only rows whose blocks lie a page or more apart, which the
 * hardware's stride prefetchers do not follow across pages.  Closer blocks they fetch ahead
 * themselves, and our prefetches on top (one or two per four blocks) slowed copies from and to
 * memory: on the AMD EPYC host, test_dataloop bench's 32 MiB rows, compiled against the iov
 * walk, gather of 32 B blocks at stride 64 0.72-0.83x -> 0.98-1.39x, 48 B / 96 0.79-0.90x ->
 * 1.08-1.28x, 8 B / 64 0.79-0.84x -> 1.08-1.19x (three runs each); scatter 32 B / 64
 * 0.76-0.80x -> 1.13-1.14x, 48 B / 96 0.84-0.87x -> 1.11-1.30x, 8 B / 64 0.89-0.90x ->
 * 1.17-1.33x (two runs each); the 256 KiB rows (in cache) unchanged.
 */
#define PF_MIN_STRIDE 4096

/* Pointer arithmetic on addresses that may lie outside the layout (prefetch targets). */
static inline const void *ahead(const void *p, int64_t by)
{
	return (const void *)((uintptr_t)p + (uintptr_t)by);
}

/*
 * Row kernels for block size B: gather_B copies n blocks from s (stride apart) to d (packed),
 * scatter_B the reverse.  memcpy with a constant size compiles to moves, not a call.
 */
#define ROW_KERNELS(B)                                                                         \
	static void gather_##B(uint8_t *restrict d, const uint8_t *restrict s, int64_t stride,  \
			       size_t n)                                                       \
	{                                                                                      \
		size_t i = 0;                                                                  \
		bool pf = stride >= PF_MIN_STRIDE || stride <= -PF_MIN_STRIDE;                 \
		for (; i + 4 <= n; i += 4) {                                                   \
			if (pf) {                                                              \
				__builtin_prefetch(ahead(s, PF_AHEAD * stride));               \
				if (B >= 32)                                                   \
					__builtin_prefetch(ahead(s, (PF_AHEAD + 2) * stride)); \
			}                                                                      \
			memcpy(d, s, B);                                                       \
			memcpy(d + B, s + stride, B);                                          \
			memcpy(d + 2 * B, s + 2 * stride, B);                                  \
			memcpy(d + 3 * B, s + 3 * stride, B);                                  \
			d += 4 * B;                                                            \
			s += 4 * stride;                                                       \
		}                                                                              \
		for (; i < n; i++, d += B, s += stride)                                        \
			memcpy(d, s, B);                                                       \
	}                                                                                      \
	static void scatter_##B(uint8_t *restrict d, int64_t stride, const uint8_t *restrict s, \
				size_t n)                                                      \
	{                                                                                      \
		size_t i = 0;                                                                  \
		bool pf = stride >= PF_MIN_STRIDE || stride <= -PF_MIN_STRIDE;                 \
		for (; i + 4 <= n; i += 4) {                                                   \
			if (pf) {                                                              \
				__builtin_prefetch(ahead(d, PF_AHEAD * stride), 1);            \
				if (B >= 32)                                                   \
					__builtin_prefetch(ahead(d, (PF_AHEAD + 2) * stride),  \
							   1);                                 \
			}                                                                      \
			memcpy(d, s, B);                                                       \
			memcpy(d + stride, s + B, B);                                          \
			memcpy(d + 2 * stride, s + 2 * B, B);                                  \
			memcpy(d + 3 * stride, s + 3 * B, B);                                  \
			d += 4 * stride;                                                       \
			s += 4 * B;                                                            \
		}                                                                              \
		for (; i < n; i++, d += stride, s += B)                                        \
			memcpy(d, s, B);                                                       \
	}                                                                                      \
	/* indexed-block: offsets from the origin instead of a stride */                      \
	static void igather_##B(uint8_t *restrict d, const uint8_t *o, const int64_t *offs,     \
				size_t n)                                                      \
	{                                                                                      \
		size_t i = 0;                                                                  \
		for (; i + 4 <= n; i += 4) {                                                   \
			if (i + PF_AHEAD < n)                                                  \
				__builtin_prefetch(ahead(o, offs[i + PF_AHEAD]));              \
			memcpy(d, o + offs[i], B);                                             \
			memcpy(d + B, o + offs[i + 1], B);                                     \
			memcpy(d + 2 * B, o + offs[i + 2], B);                                 \
			memcpy(d + 3 * B, o + offs[i + 3], B);                                 \
			d += 4 * B;                                                            \
		}                                                                              \
		for (; i < n; i++, d += B)                                                     \
			memcpy(d, o + offs[i], B);                                             \
	}                                                                                      \
	static void iscatter_##B(uint8_t *o, const int64_t *offs, const uint8_t *restrict s,    \
				 size_t n)                                                     \
	{                                                                                      \
		size_t i = 0;                                                                  \
		for (; i + 4 <= n; i += 4) {                                                   \
			if (i + PF_AHEAD < n)                                                  \
				__builtin_prefetch(ahead(o, offs[i + PF_AHEAD]), 1);           \
			memcpy(o + offs[i], s, B);                                             \
			memcpy(o + offs[i + 1], s + B, B);                                     \
			memcpy(o + offs[i + 2], s + 2 * B, B);                                 \
			memcpy(o + offs[i + 3], s + 3 * B, B);                                 \
			s += 4 * B;                                                            \
		}                                                                              \
		for (; i < n; i++, s += B)                                                     \
			memcpy(o + offs[i], s, B);                                             \
	}

/*
 * Tiles of a transpose: a vector whose rows lie closer together than the blocks of a row (FFT2D's
 * receive side: rows 16 B apart, a row's blocks 4 KiB apart).  Row by row, each block lands in
 * a cache line of its own, and the next row writes that line's next bytes only after count[0]
 * other lines, 4 KiB apart: they share one L1 set and the line is gone by then, so every block
 * costs a miss.  A tile takes the g rows that share lines together, block position by block
 * position, so that each line is written (or read) once.  test_dataloop bench, 128 x 128
 * blocks of 16 B 4 KiB apart (256 KiB; the AMD EPYC host idle, and under a compile): scatter
 * row by row 139 and 199 us, an MPI engine's loop (rows outer, a block copy inner) 136 and 131-168,
 * tiled 33-34; gather 39-41, 37-38, 9-10.  256 x 256 blocks of 8 B: scatter 827, 490-800, 30.
 */
#define TILE_LINE 64

#define TILE_KERNELS(B)                                                                        \
	static void tile_scatter_##B(uint8_t *restrict lay, int64_t stride, int64_t row,        \
				     const uint8_t *restrict buf, size_t n, size_t g)           \
	{                                                                                      \
		for (size_t i = 0; i < n; i++, lay += stride, buf += B)                        \
			for (size_t r = 0; r < g; r++)                                         \
				memcpy(lay + (int64_t)r * row, buf + r * n * B, B);            \
	}                                                                                      \
	static void tile_gather_##B(uint8_t *restrict buf, const uint8_t *restrict lay,         \
				    int64_t stride, int64_t row, size_t n, size_t g)            \
	{                                                                                      \
		for (size_t i = 0; i < n; i++, lay += stride, buf += B)                        \
			for (size_t r = 0; r < g; r++)                                         \
				memcpy(buf + r * n * B, lay + (int64_t)r * row, B);            \
	}

#define ALL_SIZES(K) K(1) K(2) K(4) K(8) K(12) K(16) K(24) K(32) K(48) K(64)
ALL_SIZES(TILE_KERNELS)

ROW_KERNELS(1)
ROW_KERNELS(2)
ROW_KERNELS(4)
ROW_KERNELS(8)
ROW_KERNELS(12)
ROW_KERNELS(16)
ROW_KERNELS(24)
ROW_KERNELS(32)
ROW_KERNELS(48)
ROW_KERNELS(64)

/*
 * A block of 17 to 128 bytes without a call: two fixed-size copies from either end, which
 * overlap in the middle (the layout and the buffer never overlap each other), instead of a
 * memcpy call per block: WRF's halo rows of 23 floats (92 B, stride 184, 88 KiB in cache)
 * gather at 29.4 GB/s instead of 24.3, 40 B blocks at 29.5 instead of 19.9 (test_dataloop's
 * bench_case).
 */
static inline void copy_mid(uint8_t *restrict d, const uint8_t *restrict s, size_t n)
{
	if (n > 64) {
		memcpy(d, s, 64);
		memcpy(d + n - 64, s + n - 64, 64);
	} else if (n > 32) {
		memcpy(d, s, 32);
		memcpy(d + n - 32, s + n - 32, 32);
	} else {
		memcpy(d, s, 16);
		memcpy(d + n - 16, s + n - 16, 16);
	}
}

#define MID_MIN 17
#define MID_MAX 128

/* Other sizes: copy_mid up to MID_MAX, then one memcpy per block (a call pays for itself from
 * a few hundred bytes). */
static void gather_any(uint8_t *restrict d, const uint8_t *restrict s, int64_t stride, size_t n,
		       size_t block)
{
	if (block >= MID_MIN && block <= MID_MAX) {
		for (size_t i = 0; i < n; i++, d += block, s += stride) {
			__builtin_prefetch(ahead(s, 4 * stride));
			copy_mid(d, s, block);
		}
		return;
	}
	for (size_t i = 0; i < n; i++, d += block, s += stride) {
		__builtin_prefetch(ahead(s, 2 * stride));
		memcpy(d, s, block);
	}
}

static void scatter_any(uint8_t *restrict d, int64_t stride, const uint8_t *restrict s, size_t n,
			size_t block)
{
	if (block >= MID_MIN && block <= MID_MAX) {
		for (size_t i = 0; i < n; i++, d += stride, s += block) {
			__builtin_prefetch(ahead(d, 4 * stride), 1);
			copy_mid(d, s, block);
		}
		return;
	}
	for (size_t i = 0; i < n; i++, d += stride, s += block) {
		__builtin_prefetch(ahead(d, 2 * stride), 1);
		memcpy(d, s, block);
	}
}

#define DISPATCH(call_fixed, call_any, block)                                                  \
	switch (block) {                                                                       \
	case 1: call_fixed(1); break;                                                          \
	case 2: call_fixed(2); break;                                                          \
	case 4: call_fixed(4); break;                                                          \
	case 8: call_fixed(8); break;                                                          \
	case 12: call_fixed(12); break;                                                        \
	case 16: call_fixed(16); break;                                                        \
	case 24: call_fixed(24); break;                                                        \
	case 32: call_fixed(32); break;                                                        \
	case 48: call_fixed(48); break;                                                        \
	case 64: call_fixed(64); break;                                                        \
	default: call_any; break;                                                              \
	}

/*
 * 64-byte blocks every other line, read from memory (a far node, below): a one-byte load of the
 * line between each two blocks as well, as pack_rows_avx512.c's far loop does, so that the
 * hardware's stream prefetcher sees every line and fetches ahead.  On the AMD EPYC of family 25,
 * a loop of its own timing both in alternate rounds (32 MiB of payload): faster in 9 runs of 9,
 * by 3-32% (6.73-8.47 GB/s against 6.19-7.93 over the runs); gathered into one 64 KiB chunk
 * after another (PACK's), faster by 12-34% in 6 runs of 8, within 2% in the other two.  In the
 * caches the loads cost (pack_rows_avx512.c's far loop), hence far nodes only.
 */
static void gather_64_gaps(uint8_t *restrict d, const uint8_t *restrict s, size_t n)
{
	size_t i = 0;
	for (; i + 5 <= n; i += 4) { /* never a gap after the last block */
		(void)*(volatile const uint8_t *)(s + 64);
		(void)*(volatile const uint8_t *)(s + 192);
		(void)*(volatile const uint8_t *)(s + 320);
		(void)*(volatile const uint8_t *)(s + 448);
		memcpy(d, s, 64);
		memcpy(d + 64, s + 128, 64);
		memcpy(d + 128, s + 256, 64);
		memcpy(d + 192, s + 384, 64);
		d += 256;
		s += 512;
	}
	for (; i < n; i++, d += 64, s += 128)
		memcpy(d, s, 64);
}

/* pack_rows_avx512.c's kernels to run (DDTX_DL_ROWS_*); -1 until asked: the CPU's answer does
 * not change (threads that ask at once store the same value; atomic so that sanitizers see no
 * race). */
static _Atomic int row_kinds = -1;

/* Every kind of row kernel the CPU can run. */
static unsigned cpu_rows(void)
{
#ifdef DDTX_HAVE_AVX512_ROWS
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512vl"))
		return DDTX_DL_ROWS_HALF | DDTX_DL_ROWS_LINE;
#endif
	return 0;
}

/*
 * Those that run by default.  AMD's family 25 (Zen 4) splits each 512-bit move in two: there
 * the 64-byte blocks' one move lost to the baseline's four 16-byte ones (test_dataloop bench,
 * stride 128, three runs, against the baseline: in cache gather 0.80-1.00x, scatter
 * 0.73-0.94x; from memory 0.78-0.83x and 0.86-0.95x), where on family 26 it won (1.09-1.15x in
 * cache, 1.4-2.1x from memory).
 */
static unsigned chosen_rows(void)
{
	unsigned kinds = cpu_rows();
#ifdef DDTX_HAVE_AVX512_ROWS
	unsigned a, b, c, d;
	if ((kinds & DDTX_DL_ROWS_LINE) && __get_cpuid(0, &a, &b, &c, &d) &&
	    b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u && /* "AuthenticAMD" */
	    __get_cpuid(1, &a, &b, &c, &d) && ((a >> 8) & 0xf) + ((a >> 20) & 0xff) == 25)
		kinds &= ~(unsigned)DDTX_DL_ROWS_LINE;
#endif
	return kinds;
}

unsigned ddtx_dl_row_kernels(enum ddtx_dl_kernels which)
{
	unsigned kinds = which == DDTX_DL_KERNELS_ALL ? cpu_rows()
			 : which == DDTX_DL_KERNELS_CHOSEN ? chosen_rows() : 0;
	atomic_store_explicit(&row_kinds, (int)kinds, memory_order_relaxed);
	return kinds;
}

/* One row of a vector: n whole blocks; far: its node spans more than the caches hold. */
static void row_copy(uint8_t *lay, int64_t stride, uint8_t *buf, size_t block, size_t n,
		     bool scatter, bool far)
{
#ifdef DDTX_HAVE_AVX512_ROWS
	int kinds = atomic_load_explicit(&row_kinds, memory_order_relaxed);
	if (kinds < 0) {
		kinds = (int)chosen_rows();
		atomic_store_explicit(&row_kinds, kinds, memory_order_relaxed);
	}
	if (kinds && stride != (int64_t)block) {
		size_t done = ddtx_rows_copy_avx512(lay, stride, buf, block, n, scatter, far,
						    (unsigned)kinds);
		lay += (int64_t)done * stride;
		buf += done * block;
		n -= done;
		if (!n)
			return;
	}
#endif
	if (stride == (int64_t)block) { /* contiguous (a handle may say so) */
		if (scatter)
			memcpy(lay, buf, n * block);
		else
			memcpy(buf, lay, n * block);
		return;
	}
	if (scatter) {
#define SC(B) scatter_##B(lay, stride, buf, n)
		DISPATCH(SC, scatter_any(lay, stride, buf, n, block), block)
#undef SC
	} else if (far && block == 64 && stride == 128) {
		gather_64_gaps(buf, lay, n);
	} else {
#define GA(B) gather_##B(buf, lay, stride, n)
		DISPATCH(GA, gather_any(buf, lay, stride, n, block), block)
#undef GA
	}
}

/* g rows of n blocks each, tiled (above); the rows row bytes apart. */
static void tile_copy(uint8_t *lay, int64_t stride, int64_t row, uint8_t *buf, size_t block,
		      size_t n, size_t g, bool scatter)
{
	if (scatter) {
#define TS(B) tile_scatter_##B(lay, stride, row, buf, n, g)
		DISPATCH(TS, for (size_t r = 0; r < g; r++) row_copy(lay + (int64_t)r * row,
								     stride, buf + r * n * block,
								     block, n, true, false),
			 block)
#undef TS
	} else {
#define TG(B) tile_gather_##B(buf, lay, stride, row, n, g)
		DISPATCH(TG, for (size_t r = 0; r < g; r++) row_copy(lay + (int64_t)r * row,
								     stride, buf + r * n * block,
								     block, n, false, false),
			 block)
#undef TG
	}
}

/*
 * Rows of nd to take together from the start of a row at `at` (1: no tile), at most `rows`: up
 * to the end of the cache line that row starts in, so that the next tile starts a line (a chunk
 * of PACK may start at any row).
 */
static size_t tile_rows(const struct ddtx_dl_node *nd, const uint8_t *at, size_t rows)
{
	int64_t row = nd->stride[1], stride = nd->stride[0];
	if (row < (int64_t)nd->block || 2 * row > TILE_LINE ||
	    (stride < TILE_LINE && stride > -TILE_LINE))
		return 1;
	size_t g = (TILE_LINE - ((uintptr_t)at & (TILE_LINE - 1)) + (size_t)row - 1) / (size_t)row;
	return g < rows ? g : rows;
}

static inline void part_copy(uint8_t *lay, uint8_t *buf, size_t n, bool scatter)
{
	if (scatter)
		memcpy(lay, buf, n);
	else
		memcpy(buf, lay, n);
}

/*
 * A vector node whose outermost loop spans more than FAR_SPAN bytes is read mostly from memory
 * whatever part of it a segment copies (its rows are copied in PACK's chunks, 64 KiB at a time):
 * pack_rows_avx512.c reads such rows differently.  8 MiB is where the two ways crossed on the
 * AMD EPYC host (64-byte blocks at stride 128, a loop of its own: 4 MiB of payload 0.74x and
 * 0.77x memcpy, 8 MiB 0.52x and 0.61x).
 */
#define FAR_SPAN ((uint64_t)8 << 20)

static bool node_far(const struct ddtx_dl_node *nd)
{
	unsigned top = nd->depth - 1;
	int64_t st = nd->stride[top];
	uint64_t step = st < 0 ? (uint64_t)-st : (uint64_t)st;
	return (double)step * (double)nd->count[top] > (double)FAR_SPAN;
}

/* Bytes [in, in + len) of a vector node. */
static void vector_copy(const struct ddtx_dl_node *nd, uint8_t *origin, size_t in, uint8_t *buf,
			size_t len, bool scatter)
{
	size_t block = nd->block, b = in / block, skip = in % block;
	size_t idx[DDTX_DL_DEPTH];
	int64_t a = nd->off;
	for (unsigned l = 0; l < nd->depth; l++) {
		idx[l] = b % nd->count[l];
		b /= nd->count[l];
		a += (int64_t)idx[l] * nd->stride[l];
	}
	size_t done = 0, row_bytes = nd->count[0] * block, g;
	unsigned first;
	for (;;) {
		size_t n;
		if (skip || len - done < block) { /* a partial block at either end */
			n = block - skip < len - done ? block - skip : len - done;
			part_copy(origin + a + skip, buf + done, n, scatter);
			done += n;
			skip = 0;
			n = 1;
		} else if (!idx[0] && nd->depth > 1 &&
			   (g = tile_rows(nd, origin + a, DDTX_MIN(nd->count[1] - idx[1],
								   (len - done) / row_bytes))) > 1) {
			tile_copy(origin + a, nd->stride[0], nd->stride[1], buf + done, block,
				  nd->count[0], g, scatter);
			done += g * row_bytes;
			if (done == len)
				return;
			idx[1] += g;
			a += (int64_t)g * nd->stride[1];
			first = 1;
			goto carry;
		} else {
			size_t left = nd->count[0] - idx[0], whole = (len - done) / block;
			n = left < whole ? left : whole;
			row_copy(origin + a, nd->stride[0], buf + done, block, n, scatter,
				 node_far(nd));
			done += n * block;
		}
		if (done == len)
			return;
		/* Step n blocks; carry into the outer levels at the end of a row. */
		idx[0] += n;
		a += (int64_t)n * nd->stride[0];
		first = 0;
carry:
		for (unsigned l = first; l + 1 < nd->depth && idx[l] == nd->count[l]; l++) {
			a -= (int64_t)nd->count[l] * nd->stride[l];
			idx[l] = 0;
			idx[l + 1]++;
			a += nd->stride[l + 1];
		}
	}
}

/* Bytes [in, in + len) of an indexed-block node. */
static void indexed_block_copy(const struct ddtx_dataloop *dl, const struct ddtx_dl_node *nd,
			       uint8_t *origin, size_t in, uint8_t *buf, size_t len, bool scatter)
{
	size_t block = nd->block, k = in / block, skip = in % block, done = 0;
	const int64_t *offs = dl->offs + nd->first;
	if (skip) {
		done = block - skip < len ? block - skip : len;
		part_copy(origin + offs[k] + skip, buf, done, scatter);
		k++;
	}
	size_t whole = (len - done) / block;
	if (whole) {
		const int64_t *o = offs + k;
		uint8_t *p = buf + done;
		if (scatter) {
#define IS(B) iscatter_##B(origin, o, p, whole)
			DISPATCH(IS, for (size_t i = 0; i < whole; i++)
					     memcpy(origin + o[i], p + i * block, block),
				 block)
#undef IS
		} else {
#define IG(B) igather_##B(p, origin, o, whole)
			DISPATCH(IG, for (size_t i = 0; i < whole; i++)
					     memcpy(p + i * block, origin + o[i], block),
				 block)
#undef IG
		}
		done += whole * block;
		k += whole;
	}
	if (done < len)
		part_copy(origin + offs[k], buf + done, len - done, scatter);
}

/* Bytes [in, in + len) of an indexed node: its entries one by one. */
static void indexed_copy(const struct ddtx_dataloop *dl, const struct ddtx_dl_node *nd,
			 uint8_t *origin, size_t in, uint8_t *buf, size_t len, bool scatter)
{
	size_t k = nd->first, done = 0;
	while (in >= dl->lens[k])
		in -= dl->lens[k++];
	while (done < len) {
		size_t n = dl->lens[k] - in < len - done ? dl->lens[k] - in : len - done;
		part_copy(origin + dl->offs[k] + in, buf + done, n, scatter);
		done += n;
		in = 0;
		k++;
	}
}

/* The node holding payload byte `offset` (< total): the last one starting at or before it. */
static size_t node_at(const struct ddtx_dataloop *dl, size_t offset)
{
	size_t lo = 0, hi = dl->nnodes; /* start[lo] <= offset < start[hi] */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (dl->start[mid] <= offset)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static size_t dl_copy(const struct ddtx_dataloop *dl, uint8_t *origin, size_t offset,
		      uint8_t *buf, size_t len, bool scatter)
{
	if (offset >= dl->total || !len)
		return 0;
	if (len > dl->total - offset)
		len = dl->total - offset;
	size_t done = 0;
	for (size_t i = node_at(dl, offset); done < len; i++) {
		const struct ddtx_dl_node *nd = &dl->nodes[i];
		size_t in = offset + done - dl->start[i];
		size_t n = nd->bytes - in < len - done ? nd->bytes - in : len - done;
		switch (nd->kind) {
		case DDTX_DL_VECTOR:
			vector_copy(nd, origin, in, buf + done, n, scatter);
			break;
		case DDTX_DL_INDEXED_BLOCK:
			indexed_block_copy(dl, nd, origin, in, buf + done, n, scatter);
			break;
		case DDTX_DL_INDEXED:
			indexed_copy(dl, nd, origin, in, buf + done, n, scatter);
			break;
		}
		done += n;
	}
	return done;
}

size_t ddtx_dl_gather(const struct ddtx_dataloop *dl, const void *origin, size_t offset,
		      void *dst, size_t len)
{
	return dl_copy(dl, (uint8_t *)origin, offset, dst, len, false);
}

size_t ddtx_dl_scatter(const struct ddtx_dataloop *dl, void *origin, size_t offset,
		       const void *src, size_t len)
{
	return dl_copy(dl, origin, offset, (uint8_t *)src, len, true);
}

/* A vector node of one level at offset 0 from the vector's first block. */
static size_t vec_copy(const struct ddtx_iov_vec *v, size_t offset, uint8_t *buf, size_t len,
		       bool scatter)
{
	size_t total = v->n * v->block;
	if (offset >= total || !len)
		return 0;
	if (len > total - offset)
		len = total - offset;
	struct ddtx_dl_node nd = {.kind = DDTX_DL_VECTOR, .depth = 1, .block = v->block,
				  .count = {v->n}, .stride = {v->stride}, .n = v->n,
				  .bytes = total};
	vector_copy(&nd, v->base, offset, buf, len, scatter);
	return len;
}

size_t ddtx_vec_gather(const struct ddtx_iov_vec *v, size_t offset, void *dst, size_t len)
{
	return vec_copy(v, offset, dst, len, false);
}

size_t ddtx_vec_scatter(const struct ddtx_iov_vec *v, size_t offset, const void *src, size_t len)
{
	return vec_copy(v, offset, (uint8_t *)src, len, true);
}
