/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * PACK's copies between a message's layout and contiguous bytes (bounce buffers, the peer's
 * queue): the compiled kernels (pack_kernels.c) when the cached layout compiles to something
 * regular, the iov walk (iov.c) otherwise or when there is no cached layout.  Both take a
 * segment, so chunks start at any byte.
 */
#ifndef DDTX_ENGINE_PACK_H
#define DDTX_ENGINE_PACK_H

#include <stddef.h>
#include <sys/uio.h>

struct ddtx_layout_cache;
struct ddtx_layout;

/* iov/count: the message's list, whose non-empty entries are the layout's (l may be NULL). */
size_t ddtx_pack_gather(struct ddtx_layout_cache *lc, struct ddtx_layout *l,
			const struct iovec *iov, size_t count, size_t offset, void *dst, size_t len);
/*
 * The same gather, written to dst with streaming (non-temporal) stores (engine/store_choice.h
 * says when that is faster): the bytes are gathered a piece at a time into a buffer in this
 * core's cache and streamed from there, so the layout's kernels stay as they are.  Where the
 * CPU has no such stores, an ordinary gather.
 */
size_t ddtx_pack_gather_streaming(struct ddtx_layout_cache *lc, struct ddtx_layout *l,
				  const struct iovec *iov, size_t count, size_t offset, void *dst,
				  size_t len);
/* len contiguous bytes from src to dst by streaming stores, fenced (an ordinary copy where the
 * CPU has none). */
void ddtx_copy_streaming(void *dst, const void *src, size_t len);
size_t ddtx_pack_scatter(struct ddtx_layout_cache *lc, struct ddtx_layout *l,
			 const struct iovec *iov, size_t count, size_t offset, const void *src,
			 size_t len);

#endif /* DDTX_ENGINE_PACK_H */
