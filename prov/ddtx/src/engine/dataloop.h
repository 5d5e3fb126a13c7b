/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Compiled layouts (the dataloops of Ross, Miller and Gropp): a layout's blocks described by a
 * few loop nodes instead of one entry per block, so that packing runs fixed-size copies in tight
 * loops (pack_kernels.c) instead of walking an iov list.
 *
 *   VECTOR         count[0] blocks of `block` bytes at stride[0], that shape repeated count[1]
 *                  times at stride[1], ... (depth levels; a contiguous block is a vector of one)
 *   INDEXED_BLOCK  n blocks of one length at listed offsets
 *   INDEXED        n blocks of their own lengths at listed offsets (what is left)
 *
 * Offsets are relative to the origin, the address of the layout's first non-empty block (a
 * cached layout's base), and may be negative: an iov list need not go up in memory.  A compiled
 * form is immutable and shared by reference (a layout handle builds one from its description and
 * hands it to the cached layout behind it).
 */
#ifndef DDTX_ENGINE_DATALOOP_H
#define DDTX_ENGINE_DATALOOP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Vector levels one node may nest: a 5-dimensional subarray (its rows are the blocks). */
#define DDTX_DL_DEPTH 4

enum ddtx_dl_kind {
	DDTX_DL_VECTOR = 1,
	DDTX_DL_INDEXED_BLOCK,
	DDTX_DL_INDEXED,
};

struct ddtx_dl_node {
	enum ddtx_dl_kind kind;
	unsigned depth;                  /* VECTOR: levels in use, 1..DDTX_DL_DEPTH */
	size_t block;                    /* VECTOR, INDEXED_BLOCK: bytes per block */
	int64_t off;                     /* VECTOR: first block from the origin */
	size_t count[DDTX_DL_DEPTH];     /* VECTOR: count[0] is the innermost loop */
	int64_t stride[DDTX_DL_DEPTH];
	size_t first;                    /* INDEXED*: first entry in offs[] (and lens[]) */
	size_t n;                        /* blocks in the node */
	size_t bytes;                    /* payload bytes in the node */
};

struct ddtx_dataloop {
	_Atomic unsigned refs;
	size_t nnodes;
	struct ddtx_dl_node *nodes;
	size_t *start;                   /* payload offset where node i begins; [nnodes] = total */
	int64_t *offs;                   /* INDEXED*: block offsets from the origin */
	size_t *lens;                    /* INDEXED: block lengths */
	size_t total;                    /* payload bytes */
	size_t nblocks;                  /* blocks after merging touching ones */
};

/*
 * Compile count entries whose addresses are iov_base - origin (iov_base holds offsets when
 * origin is 0); empty entries are skipped, touching ones merged.  Returns NULL when the list
 * has nothing regular enough to pay for itself (fewer than half of its blocks in vectors or
 * indexed-block runs) or memory is short: the caller keeps the iov path.  The result's offsets
 * are relative to the first non-empty entry.
 */
struct ddtx_dataloop *ddtx_dl_compile(const struct iovec *iov, size_t count, uintptr_t origin);

/*
 * Built straight from a description (layout handles), never from a list of blocks.
 * Nested vector: block bytes, counts[0..ndims) blocks at strides[0..ndims), innermost first,
 * ndims <= DDTX_DL_DEPTH.  Indexed block: count blocks of block bytes at offsets[] (in order of
 * the payload).  Offsets are from the handle's base; the result is relative to its first block.
 * NULL if memory is short or the description is empty.
 */
struct ddtx_dataloop *ddtx_dl_vector(size_t block, unsigned ndims, const size_t *counts,
				     const int64_t *strides);
struct ddtx_dataloop *ddtx_dl_indexed_block(size_t block, const size_t *offsets, size_t count);

struct ddtx_dataloop *ddtx_dl_get(struct ddtx_dataloop *dl);
void ddtx_dl_put(struct ddtx_dataloop *dl);

/* Blocks of the node kinds (what a test or a log reports about a compiled form). */
size_t ddtx_dl_blocks_of(const struct ddtx_dataloop *dl, enum ddtx_dl_kind kind);

/*
 * pack_kernels.c: copy len bytes of the payload from byte offset (a segment: PACK chunks and
 * the pipeline start anywhere) between the layout at origin and contiguous memory.  Returns the
 * bytes copied, less than len only past the end of the payload.
 */
size_t ddtx_dl_gather(const struct ddtx_dataloop *dl, const void *origin, size_t offset,
		      void *dst, size_t len);
size_t ddtx_dl_scatter(const struct ddtx_dataloop *dl, void *origin, size_t offset,
		       const void *src, size_t len);

/*
 * Which row kernels the copies above run.  Beside the baseline instruction set's loops, on a CPU
 * with AVX-512 F, BW and VL: DDTX_DL_ROWS_HALF (2, 4 and 8-byte blocks at twice their size
 * apart) and DDTX_DL_ROWS_LINE (64-byte blocks).  DDTX_DL_KERNELS_CHOSEN (the default) runs
 * those that measured faster on this CPU's kind, DDTX_DL_KERNELS_ALL every one it can run,
 * DDTX_DL_KERNELS_BASELINE none; returns the DDTX_DL_ROWS_* that run now.  For tests and
 * benchmarks that compare them (a copy running at the time may take either).
 */
enum { DDTX_DL_ROWS_HALF = 1, DDTX_DL_ROWS_LINE = 2 };
enum ddtx_dl_kernels { DDTX_DL_KERNELS_BASELINE, DDTX_DL_KERNELS_CHOSEN, DDTX_DL_KERNELS_ALL };
unsigned ddtx_dl_row_kernels(enum ddtx_dl_kernels which);

/*
 * The same kernels for a list that is one vector (ddtx_iov_scan found it so): the eager path
 * copies such a list without reading its entries again and without compiling it.
 */
struct ddtx_iov_vec;
size_t ddtx_vec_gather(const struct ddtx_iov_vec *v, size_t offset, void *dst, size_t len);
size_t ddtx_vec_scatter(const struct ddtx_iov_vec *v, size_t offset, const void *src, size_t len);

#endif /* DDTX_ENGINE_DATALOOP_H */
