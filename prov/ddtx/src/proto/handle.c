/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Layout handles (fi_ddtx.h): a runtime describes a layout once, relative to a base, and
 * passes the handle as desc[0] with a single {base, size} iov.  The handle keeps the cached
 * layouts of the last DDTX_HANDLE_BASES buffers it was used at (each holds its absolute list),
 * so a repeated send from, or receive into, one of them costs neither hashing nor flattening.  Each handle also carries its compiled
 * form (engine/dataloop.h), built from its description when it is a vector, a subarray or an
 * indexed-block layout, compiled from its blocks otherwise, and handed to the cached layout.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/dataloop.h"
#include "engine/layout.h"
#include "proto/proto_internal.h"

#define DDTX_HANDLE_BLOCKS_MAX ((size_t)1 << 22)

static int handle_new(struct ddtx_proto_domain *pd, size_t count, struct fi_ddtx_layout **out)
{
	/* A handle may describe more blocks than an iov list may carry: that is its point. */
	if (!pd || !out || !count || count > DDTX_HANDLE_BLOCKS_MAX)
		return -FI_EINVAL;
	struct fi_ddtx_layout *h = calloc(1, sizeof(*h));
	if (!h || !(h->rel = calloc(count, sizeof(*h->rel))) ||
	    !(h->abs = calloc(count, sizeof(*h->abs)))) {
		if (h)
			free(h->rel);
		free(h);
		return -FI_ENOMEM;
	}
	h->fid.fclass = FI_DDTX_CLASS_LAYOUT;
	h->pd = pd;
	h->count = count;
	*out = h;
	return 0;
}

int ddtx_proto_layout_create(struct ddtx_proto_domain *pd, const struct iovec *blocks, size_t count,
			     struct fi_ddtx_layout **out)
{
	if (!blocks)
		return -FI_EINVAL;
	int ret = handle_new(pd, count, out);
	if (ret)
		return ret;
	struct fi_ddtx_layout *h = *out;
	for (size_t i = 0; i < count; i++) {
		size_t off = (size_t)(uintptr_t)blocks[i].iov_base;
		if (blocks[i].iov_len > SIZE_MAX - off) {
			ddtx_proto_layout_free(h);
			return -FI_EINVAL;
		}
		h->rel[i] = blocks[i];
		h->size = DDTX_MAX(h->size, off + blocks[i].iov_len);
		h->total += blocks[i].iov_len;
	}
	h->dl = ddtx_dl_compile(h->rel, count, 0); /* NULL: nothing regular, the iov walk packs */
	return 0;
}

int ddtx_proto_layout_create_strided(struct ddtx_proto_domain *pd, size_t block_len, size_t stride,
				     size_t count, struct fi_ddtx_layout **out)
{
	if (!block_len || stride < block_len || (count && stride > SIZE_MAX / count))
		return -FI_EINVAL;
	int ret = handle_new(pd, count, out);
	if (ret)
		return ret;
	struct fi_ddtx_layout *h = *out;
	for (size_t i = 0; i < count; i++) {
		h->rel[i].iov_base = (void *)(uintptr_t)(i * stride);
		h->rel[i].iov_len = block_len;
	}
	h->size = (count - 1) * stride + block_len;
	h->total = count * block_len;
	int64_t st = (int64_t)stride;
	h->dl = ddtx_dl_vector(block_len, 1, &count, &st);
	return 0;
}

/* Blocks a nested vector holds, 0 when invalid (an overflow, a zero count, too many). */
static size_t nested_blocks(size_t block_len, size_t ndims, const size_t *counts,
			    const size_t *strides)
{
	if (!block_len || !ndims || ndims > DDTX_DL_DEPTH || !counts || !strides)
		return 0;
	size_t n = 1;
	for (size_t l = 0; l < ndims; l++) {
		if (!counts[l] || counts[l] > DDTX_HANDLE_BLOCKS_MAX ||
		    n > DDTX_HANDLE_BLOCKS_MAX / counts[l])
			return 0;
		n *= counts[l];
	}
	return n;
}

int ddtx_proto_layout_create_vector(struct ddtx_proto_domain *pd, size_t offset, size_t block_len,
				    size_t ndims, const size_t *counts, const size_t *strides,
				    struct fi_ddtx_layout **out)
{
	size_t n = nested_blocks(block_len, ndims, counts, strides);
	if (!n)
		return -FI_EINVAL;
	/* Extent: offset plus, at each level, (count - 1) strides, plus the block; and strides
	 * that fit in an int64_t (the compiled form's). */
	size_t size = offset;
	for (size_t l = 0; l < ndims; l++) {
		if (strides[l] > (size_t)INT64_MAX / counts[l] ||
		    (counts[l] - 1) * strides[l] > SIZE_MAX - size)
			return -FI_EINVAL;
		size += (counts[l] - 1) * strides[l];
	}
	if (block_len > SIZE_MAX - size || size + block_len > (size_t)INT64_MAX)
		return -FI_EINVAL;
	int ret = handle_new(pd, n, out);
	if (ret)
		return ret;
	struct fi_ddtx_layout *h = *out;
	size_t idx[DDTX_DL_DEPTH] = {0};
	size_t off = offset;
	for (size_t i = 0; i < n; i++) {
		h->rel[i].iov_base = (void *)(uintptr_t)off;
		h->rel[i].iov_len = block_len;
		/* next block: odometer over the levels, innermost first */
		for (size_t l = 0; l < ndims; l++) {
			off += strides[l];
			if (++idx[l] < counts[l])
				break;
			off -= counts[l] * strides[l];
			idx[l] = 0;
		}
	}
	h->size = size + block_len;
	h->total = n * block_len;
	int64_t st[DDTX_DL_DEPTH];
	for (size_t l = 0; l < ndims; l++)
		st[l] = (int64_t)strides[l];
	h->dl = ddtx_dl_vector(block_len, (unsigned)ndims, counts, st);
	return 0;
}

int ddtx_proto_layout_create_subarray(struct ddtx_proto_domain *pd, size_t ndims,
				      const size_t *sizes, const size_t *subsizes,
				      const size_t *starts, size_t elem_size,
				      struct fi_ddtx_layout **out)
{
	if (!ndims || ndims > DDTX_DL_DEPTH + 1 || !sizes || !subsizes || !starts || !elem_size)
		return -FI_EINVAL;
	/* Byte stride of each dimension (C order: the last one varies fastest). */
	size_t stride[DDTX_DL_DEPTH + 1];
	size_t s = elem_size;
	for (size_t d = ndims; d-- > 0;) {
		if (!subsizes[d] || subsizes[d] > sizes[d] || starts[d] > sizes[d] - subsizes[d])
			return -FI_EINVAL;
		stride[d] = s;
		if (sizes[d] && s > SIZE_MAX / sizes[d])
			return -FI_EINVAL;
		s *= sizes[d];
	}
	size_t offset = 0;
	for (size_t d = 0; d < ndims; d++)
		offset += starts[d] * stride[d]; /* < the array's bytes: no overflow */
	/* The block: the last dimension's run, widened while a dimension is taken whole (its
	 * rows touch); the dimensions above become vector levels, innermost first, those of one
	 * row dropped. */
	size_t d = ndims - 1, block = subsizes[d] * elem_size;
	while (d > 0 && subsizes[d] == sizes[d]) {
		d--;
		block *= subsizes[d];
	}
	size_t counts[DDTX_DL_DEPTH], strides[DDTX_DL_DEPTH], levels = 0;
	for (size_t k = d; k-- > 0;) {
		if (subsizes[k] == 1)
			continue;
		counts[levels] = subsizes[k];
		strides[levels] = stride[k];
		levels++;
	}
	if (!levels) {
		counts[0] = 1;
		strides[0] = block;
		levels = 1;
	}
	return ddtx_proto_layout_create_vector(pd, offset, block, levels, counts, strides, out);
}

int ddtx_proto_layout_create_indexed_block(struct ddtx_proto_domain *pd, size_t block_len,
					   const size_t *offsets, size_t count,
					   struct fi_ddtx_layout **out)
{
	if (!block_len || !offsets || (count && block_len > SIZE_MAX / count))
		return -FI_EINVAL;
	for (size_t i = 0; i < count; i++)
		if (offsets[i] > (size_t)INT64_MAX - block_len)
			return -FI_EINVAL;
	int ret = handle_new(pd, count, out);
	if (ret)
		return ret;
	struct fi_ddtx_layout *h = *out;
	for (size_t i = 0; i < count; i++) {
		h->rel[i].iov_base = (void *)(uintptr_t)offsets[i];
		h->rel[i].iov_len = block_len;
		h->size = DDTX_MAX(h->size, offsets[i] + block_len);
	}
	h->total = count * block_len;
	h->dl = ddtx_dl_indexed_block(block_len, offsets, count);
	return 0;
}

int ddtx_proto_layout_free(struct fi_ddtx_layout *h)
{
	if (!h || h->fid.fclass != FI_DDTX_CLASS_LAYOUT)
		return -FI_EINVAL;
	struct ddtx_proto_domain *pd = h->pd;
	ddtx_rlock_lock(pd->lock);
	for (int i = 0; i < DDTX_HANDLE_BASES; i++)
		if (h->bases[i].layout)
			ddtx_layout_put(pd->layouts, h->bases[i].layout);
	ddtx_rlock_unlock(pd->lock);
	h->fid.fclass = FI_CLASS_UNSPEC;
	ddtx_dl_put(h->dl);
	free(h->rel);
	free(h->abs);
	free(h);
	return 0;
}

size_t ddtx_proto_layout_size(const struct fi_ddtx_layout *h)
{
	return h ? h->size : 0;
}

struct fi_ddtx_layout *ddtx_handle_of(void **desc, const struct iovec *iov, size_t count)
{
	if (count != 1 || !desc || !desc[0] || !iov)
		return NULL;
	struct fi_ddtx_layout *h = desc[0];
	return h->fid.fclass == FI_DDTX_CLASS_LAYOUT ? h : NULL;
}

int ddtx_handle_use(struct fi_ddtx_layout *h, const struct iovec *iov, struct ddtx_layout **layout,
		    const struct iovec **out, size_t *count)
{
	if (iov[0].iov_len != h->size || (!iov[0].iov_base && h->size))
		return -FI_EINVAL;
	struct ddtx_layout_cache *lc = h->pd->layouts;
	uintptr_t base = (uintptr_t)iov[0].iov_base;
	struct ddtx_handle_base *slot = &h->bases[0];
	h->uses++;
	h->pd->stats.handle_ops++;
	for (int i = 0; i < DDTX_HANDLE_BASES; i++) {
		struct ddtx_handle_base *b = &h->bases[i];
		if (b->layout && b->base == base) {
			if (ddtx_layout_ref(lc, b->layout)) {
				b->last_use = h->uses;
				*layout = b->layout;
				*out = b->layout->iov;
				*count = b->layout->count;
				return 0;
			}
			/* Evicted or invalidated (the buffer was unmapped): build it again. */
			ddtx_layout_put(lc, b->layout);
			b->layout = NULL;
		}
		if (!b->layout || (slot->layout && b->last_use < slot->last_use))
			slot = b; /* a free entry, else the least recently used */
	}
	for (size_t i = 0; i < h->count; i++) {
		h->abs[i].iov_base = (void *)(base + (uintptr_t)h->rel[i].iov_base);
		h->abs[i].iov_len = h->rel[i].iov_len;
	}
	bool hit;
	struct ddtx_layout *l = ddtx_layout_get(lc, h->abs, h->count, &hit);
	if (slot->layout)
		ddtx_layout_put(lc, slot->layout);
	slot->layout = NULL;
	if (l && h->dl)
		ddtx_layout_adopt_dataloop(lc, l, h->dl);
	if (l && ddtx_layout_ref(lc, l)) {
		slot->layout = l; /* the handle keeps one reference of its own */
		slot->base = base;
		slot->last_use = h->uses;
	}
	*layout = l;
	*out = l ? l->iov : h->abs;
	*count = l ? l->count : h->count;
	return 0;
}
