/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Layout handles (fi_ddtx.h): a runtime describes a layout once, relative to a base, and
 * passes the handle as desc[0] with a single {base, size} iov.  The handle keeps the absolute
 * list of the last base it was used at and the cached layout behind it, so a repeated send from
 * the same buffer costs neither hashing nor flattening.
 */
#include <stdlib.h>
#include <string.h>

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
	return 0;
}

int ddtx_proto_layout_free(struct fi_ddtx_layout *h)
{
	if (!h || h->fid.fclass != FI_DDTX_CLASS_LAYOUT)
		return -FI_EINVAL;
	struct ddtx_proto_domain *pd = h->pd;
	pthread_mutex_lock(pd->lock);
	if (h->cached)
		ddtx_layout_put(pd->layouts, h->cached);
	pthread_mutex_unlock(pd->lock);
	h->fid.fclass = FI_CLASS_UNSPEC;
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

int ddtx_handle_expand(struct fi_ddtx_layout *h, const struct iovec *iov,
		       const struct iovec **out, size_t *count)
{
	if (iov[0].iov_len != h->size || (!iov[0].iov_base && h->size))
		return -FI_EINVAL;
	uintptr_t base = (uintptr_t)iov[0].iov_base;
	if (!h->have_abs || h->base != base) {
		for (size_t i = 0; i < h->count; i++) {
			h->abs[i].iov_base = (void *)(base + (uintptr_t)h->rel[i].iov_base);
			h->abs[i].iov_len = h->rel[i].iov_len;
		}
		h->base = base;
		h->have_abs = true;
		if (h->cached) {
			ddtx_layout_put(h->pd->layouts, h->cached);
			h->cached = NULL;
		}
	}
	*out = h->abs;
	*count = h->count;
	return 0;
}

struct ddtx_layout *ddtx_handle_layout(struct fi_ddtx_layout *h)
{
	struct ddtx_layout_cache *lc = h->pd->layouts;
	if (h->cached && ddtx_layout_ref(lc, h->cached))
		return h->cached;
	if (h->cached) {
		ddtx_layout_put(lc, h->cached);
		h->cached = NULL;
	}
	bool hit;
	struct ddtx_layout *l = ddtx_layout_get(lc, h->abs, h->count, &hit);
	if (l && ddtx_layout_ref(lc, l))
		h->cached = l; /* the handle keeps one reference of its own */
	return l;
}
