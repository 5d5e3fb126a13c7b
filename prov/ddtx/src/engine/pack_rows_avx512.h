/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Row kernels on AVX-512 (pack_rows_avx512.c, compiled for it; pack_kernels.c calls them only
 * where the CPU has AVX-512 F, BW and VL).
 */
#ifndef DDTX_ENGINE_PACK_ROWS_AVX512_H
#define DDTX_ENGINE_PACK_ROWS_AVX512_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The first blocks of a row of n blocks of `block` bytes `stride` apart (pack_kernels.c's
 * row_copy), gathered into buf or scattered from it, where these kernels are faster than the
 * baseline ones; returns how many (0: none), the caller copies the rest.  far: the row's layout
 * spans more than the caches hold (its bytes come from memory).  kinds: the DDTX_DL_ROWS_* of
 * dataloop.h that may run.
 */
size_t ddtx_rows_copy_avx512(uint8_t *lay, int64_t stride, uint8_t *buf, size_t block, size_t n,
			     bool scatter, bool far, unsigned kinds);

#endif
