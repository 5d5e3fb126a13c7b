/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Registered-region index and SGE list building (pure: no device, no rdma-core).
 *
 * A gather list for an RDMA write/read, or the entry list of a UMR mkey window, names memory by
 * (lkey, addr, length): every entry must lie inside one registered region.  The index keeps
 * the regions sorted by address; ddtx_vsge_take() walks an iov list and cuts it into entries
 * at region boundaries, at the entry limit and at the byte limit, merging contiguous bytes of
 * one region.
 */
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "wire/verbs/verbs_pure.h"

void ddtx_vregion_index_init(struct ddtx_vregion_index *idx)
{
	memset(idx, 0, sizeof(*idx));
}

void ddtx_vregion_index_fini(struct ddtx_vregion_index *idx)
{
	free(idx->v);
	memset(idx, 0, sizeof(*idx));
}

/* First index whose region starts above addr. */
static size_t upper_bound(const struct ddtx_vregion_index *idx, uint64_t addr)
{
	size_t lo = 0, hi = idx->count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (idx->v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int ddtx_vregion_index_insert(struct ddtx_vregion_index *idx, const struct ddtx_vregion *r)
{
	size_t pos;

	if (!r || !r->len || r->len > UINT64_MAX - r->addr || !r->owner)
		return -FI_EINVAL;
	for (size_t i = 0; i < idx->count; i++)
		if (idx->v[i].owner == r->owner)
			return -FI_EINVAL;
	if (idx->count == idx->cap) {
		size_t ncap = idx->cap ? 2 * idx->cap : 16;
		struct ddtx_vregion *v = realloc(idx->v, ncap * sizeof(*v));
		if (!v)
			return -FI_ENOMEM;
		idx->v = v;
		idx->cap = ncap;
	}
	pos = upper_bound(idx, r->addr);
	memmove(&idx->v[pos + 1], &idx->v[pos], (idx->count - pos) * sizeof(*idx->v));
	idx->v[pos] = *r;
	idx->count++;
	if (r->len > idx->max_len)
		idx->max_len = r->len;
	return 0;
}

int ddtx_vregion_index_remove(struct ddtx_vregion_index *idx, const void *owner)
{
	for (size_t i = 0; i < idx->count; i++) {
		if (idx->v[i].owner != owner)
			continue;
		memmove(&idx->v[i], &idx->v[i + 1], (idx->count - i - 1) * sizeof(*idx->v));
		idx->count--;
		if (!idx->count)
			idx->max_len = 0;
		return 0;
	}
	return -FI_ENOENT;
}

const struct ddtx_vregion *ddtx_vregion_index_find(const struct ddtx_vregion_index *idx,
						   uint64_t addr, uint32_t need)
{
	const struct ddtx_vregion *best = NULL;
	uint64_t best_end = 0;

	/* Regions starting at or below addr, nearest first; none further than max_len back. */
	for (size_t i = upper_bound(idx, addr); i > 0; i--) {
		const struct ddtx_vregion *r = &idx->v[i - 1];
		uint64_t end = r->addr + r->len;

		if (addr - r->addr >= idx->max_len)
			break;
		if (addr < end && end > best_end && (r->flags & need) == need) {
			best = r;
			best_end = end;
		}
	}
	return best;
}

void ddtx_vsge_cursor_init(struct ddtx_vsge_cursor *c, const struct iovec *iov, size_t count)
{
	c->iov = iov;
	c->count = count;
	c->idx = 0;
	c->off = 0;
}

bool ddtx_vsge_cursor_done(struct ddtx_vsge_cursor *c)
{
	while (c->idx < c->count && c->off >= c->iov[c->idx].iov_len) {
		c->idx++;
		c->off = 0;
	}
	return c->idx >= c->count;
}

uint64_t ddtx_vsge_cursor_addr(const struct ddtx_vsge_cursor *c)
{
	return (uint64_t)(uintptr_t)c->iov[c->idx].iov_base + c->off;
}

size_t ddtx_vsge_take(struct ddtx_vsge_cursor *c, const struct ddtx_vregion_index *idx,
		      uint32_t need, size_t max_sge, size_t max_bytes, struct ddtx_vsge *out,
		      size_t *n, bool *uncovered)
{
	size_t bytes = 0, k = 0;

	*uncovered = false;
	while (bytes < max_bytes && !ddtx_vsge_cursor_done(c)) {
		uint64_t addr = ddtx_vsge_cursor_addr(c);
		const struct ddtx_vregion *r = ddtx_vregion_index_find(idx, addr, need);
		uint64_t seg;

		if (!r) {
			*uncovered = true;
			break;
		}
		seg = c->iov[c->idx].iov_len - c->off;
		seg = DDTX_VSGE_MIN(seg, r->addr + r->len - addr);
		seg = DDTX_VSGE_MIN(seg, max_bytes - bytes);
		if (k && out[k - 1].lkey == r->lkey && out[k - 1].addr + out[k - 1].length == addr &&
		    out[k - 1].length < DDTX_VSGE_MAX_LEN) {
			seg = DDTX_VSGE_MIN(seg, DDTX_VSGE_MAX_LEN - out[k - 1].length);
			out[k - 1].length += (uint32_t)seg;
		} else {
			if (k == max_sge)
				break;
			seg = DDTX_VSGE_MIN(seg, DDTX_VSGE_MAX_LEN);
			out[k].addr = addr;
			out[k].length = (uint32_t)seg;
			out[k].lkey = r->lkey;
			k++;
		}
		c->off += (size_t)seg;
		bytes += (size_t)seg;
	}
	*n = k;
	return bytes;
}
