/* SPDX-License-Identifier: BSD-2-Clause */
#include "engine/pack.h"

#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "engine/dataloop.h"
#include "engine/iov.h"
#include "engine/layout.h"

size_t ddtx_pack_gather(struct ddtx_layout_cache *lc, struct ddtx_layout *l,
			const struct iovec *iov, size_t count, size_t offset, void *dst, size_t len)
{
	const struct ddtx_dataloop *dl = l ? ddtx_layout_dataloop(lc, l) : NULL;
	if (dl)
		return ddtx_dl_gather(dl, (const void *)l->base, offset, dst, len);
	return ddtx_iov_gather(iov, count, offset, dst, len);
}

#if defined(__x86_64__)
/* Pieces gathered before they are streamed out: a PACK chunk of a message under a few MiB in
 * one piece (send.c's PACK_MID_CHUNK), since each gather of an iov list that did not compile
 * walks it from its start. */
#define STREAM_PIECE 16384

/* Copy len bytes to dst with streaming stores of whole 16-byte words (the ends as usual). */
static void copy_streaming(uint8_t *dst, const uint8_t *src, size_t len)
{
	size_t head = (size_t)(-(uintptr_t)dst & 15);
	if (head > len)
		head = len;
	memcpy(dst, src, head);
	size_t k = head;
	for (; k + 64 <= len; k += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)(src + k));
		__m128i b = _mm_loadu_si128((const __m128i *)(src + k + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(src + k + 32));
		__m128i d = _mm_loadu_si128((const __m128i *)(src + k + 48));
		_mm_stream_si128((__m128i *)(dst + k), a);
		_mm_stream_si128((__m128i *)(dst + k + 16), b);
		_mm_stream_si128((__m128i *)(dst + k + 32), c);
		_mm_stream_si128((__m128i *)(dst + k + 48), d);
	}
	for (; k + 16 <= len; k += 16)
		_mm_stream_si128((__m128i *)(dst + k), _mm_loadu_si128((const __m128i *)(src + k)));
	memcpy(dst + k, src + k, len - k);
}

void ddtx_copy_streaming(void *dst, const void *src, size_t len)
{
	copy_streaming(dst, src, len);
	_mm_sfence();
}

size_t ddtx_pack_gather_streaming(struct ddtx_layout_cache *lc, struct ddtx_layout *l,
				  const struct iovec *iov, size_t count, size_t offset, void *dst,
				  size_t len)
{
	_Alignas(64) uint8_t piece[STREAM_PIECE];
	size_t done = 0;
	while (done < len) {
		size_t want = len - done < STREAM_PIECE ? len - done : STREAM_PIECE;
		size_t got = ddtx_pack_gather(lc, l, iov, count, offset + done, piece, want);
		copy_streaming((uint8_t *)dst + done, piece, got);
		done += got;
		if (got < want)
			break;
	}
	/* The stores are weakly ordered: done before whatever publishes the chunk. */
	_mm_sfence();
	return done;
}
#else
void ddtx_copy_streaming(void *dst, const void *src, size_t len)
{
	memcpy(dst, src, len);
}

size_t ddtx_pack_gather_streaming(struct ddtx_layout_cache *lc, struct ddtx_layout *l,
				  const struct iovec *iov, size_t count, size_t offset, void *dst,
				  size_t len)
{
	return ddtx_pack_gather(lc, l, iov, count, offset, dst, len);
}
#endif

size_t ddtx_pack_scatter(struct ddtx_layout_cache *lc, struct ddtx_layout *l,
			 const struct iovec *iov, size_t count, size_t offset, const void *src,
			 size_t len)
{
	const struct ddtx_dataloop *dl = l ? ddtx_layout_dataloop(lc, l) : NULL;
	if (dl)
		return ddtx_dl_scatter(dl, (void *)l->base, offset, src, len);
	return ddtx_iov_scatter(iov, count, offset, src, len);
}
