/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Pieces: what the device copy kernel (gpu_pack.cu, ddtx_pieces) reads to copy any list of
 * (dst, src, len) pieces of device memory in one launch: the receiver of a CUDA IPC offer
 * copying from the sender's blocks straight into its own (engine/ipc_copy.h).  The driver's
 * own ways were slow there on an H200 (2026-11-26): one cuMemcpy2D of 64 rows of 3 KiB took
 * 150 us, a batch of cuMemcpyAsync costs a driver call per piece.
 *
 * Pieces longer than DDTX_GPU_PIECE_MAX_BYTES are cut; the pieces are then grouped, one
 * group per thread block, at most DDTX_GPU_PIECES_PER_GROUP pieces and about
 * DDTX_GPU_PIECE_MAX_BYTES bytes a group.  In a thread block, each short piece (at most
 * DDTX_GPU_PIECE_SHORT bytes) is one thread's, each longer one the whole block's.  The words
 * are the widest (16, 8, 4 or 1 bytes) that divide the piece's addresses and length.
 * ddtx_gpu_pieces_apply is that algorithm on the host, for the unit test.
 */
#ifndef DDTX_ENGINE_GPU_PIECES_H
#define DDTX_ENGINE_GPU_PIECES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/gpu_piece_word.h"
#include "hmem/hmem.h"

#define DDTX_GPU_PIECE_MAX_BYTES ((uint64_t)16 << 10)
#define DDTX_GPU_PIECES_PER_GROUP 256

struct ddtx_gpu_pieces {
	size_t npieces, ngroups;
	struct ddtx_gpu_piece *p;
	uint32_t *group;        /* ngroups + 1 entries: group g is pieces [group[g], group[g+1]) */
	size_t bytes;
};

/* Cut and group ops (n of them, empty ones skipped).  0 or -FI_ENOMEM. */
int ddtx_gpu_pieces_build(const struct ddtx_hmem_copy_op *ops, size_t n,
			  struct ddtx_gpu_pieces *out);
/* The same into the caller's memory: p for ddtx_gpu_pieces_count(ops, n) pieces, group for
 * one entry more (out->p and out->group point there; not to be freed). */
size_t ddtx_gpu_pieces_count(const struct ddtx_hmem_copy_op *ops, size_t n);
void ddtx_gpu_pieces_fill(const struct ddtx_hmem_copy_op *ops, size_t n,
			  struct ddtx_gpu_piece *p, uint32_t *group, struct ddtx_gpu_pieces *out);
void ddtx_gpu_pieces_free(struct ddtx_gpu_pieces *pc);

/* The kernel's loops on the host (addresses are host pointers here).  Returns bytes copied. */
size_t ddtx_gpu_pieces_apply(const struct ddtx_gpu_pieces *pc);

#endif /* DDTX_ENGINE_GPU_PIECES_H */
