/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A piece of a copy and its word width (gpu_pieces.h), shared by the device copy kernel and
 * its host twin (ddtx_gpu_pieces_apply): the widest of 16, 8, 4 bytes dividing both addresses
 * and the length, else 1.  Plain C that nvcc also reads.
 */
#ifndef DDTX_ENGINE_GPU_PIECE_WORD_H
#define DDTX_ENGINE_GPU_PIECE_WORD_H

#include <stdint.h>

#include "gpu_run_word.h"

/* One piece: len bytes from src to dst, device addresses (the kernel's descriptor). */
struct ddtx_gpu_piece {
	uint64_t dst, src, len;
};

/* A piece of at most this many bytes is one thread's; a longer one its thread block's. */
#define DDTX_GPU_PIECE_SHORT 256

DDTX_GPU_FN unsigned ddtx_gpu_piece_width(uint64_t dst, uint64_t src, uint64_t len)
{
	uint64_t a = dst | src | len;
	return (a & 15) == 0 ? 16 : (a & 7) == 0 ? 8 : (a & 3) == 0 ? 4 : 1;
}

#endif /* DDTX_ENGINE_GPU_PIECE_WORD_H */
