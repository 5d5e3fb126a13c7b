/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CUDA IPC offers list their segments as runs.  One entry per segment (24 bytes) let an RTS of
 * 64 KiB name about 2700 blocks: NAS_MG's x face (4096 x 8 B) and the OSU vector (8192 x 64 B)
 * did not fit, so the sender packed them with a kernel or staged them, and both processes then
 * used the GPU on every transfer, which on one GPU shared by two processes costs about 140 us a
 * switch (gpu_share, H200).  As runs they fit, and only the receiver touches the GPU.
 */
#include <string.h>

#include "proto/ipc_runs.h"

/* Segment i as the offer names it: its allocation and its offset from the allocation's base. */
struct piece {
	uint32_t alloc;
	uint64_t offset, len;
};

static struct piece piece_of(const struct iovec *iov, size_t i, const uint8_t *alloc_of,
			     const uint64_t *base)
{
	uint32_t k = alloc_of ? alloc_of[i] : 0;
	return (struct piece){ k, (uintptr_t)iov[i].iov_base - base[k], iov[i].iov_len };
}

/* The next non-empty segment from i on (n if none). */
static size_t next_seg(const struct iovec *iov, size_t i, size_t n)
{
	while (i < n && !iov[i].iov_len)
		i++;
	return i;
}

/* Segments from the one at i on that form a vector with it: one allocation, one length, one
 * forward stride (*stride); *end the entry after the last.  At least 1. */
static size_t vector_at(const struct iovec *iov, size_t i, size_t n, const uint8_t *alloc_of,
			const uint64_t *base, uint64_t *stride, size_t *end)
{
	struct piece first = piece_of(iov, i, alloc_of, base), prev = first;
	size_t m = 1, j = next_seg(iov, i + 1, n);
	*stride = 0;
	*end = i + 1;
	for (; j < n; j = next_seg(iov, j + 1, n)) {
		struct piece q = piece_of(iov, j, alloc_of, base);
		if (q.alloc != first.alloc || q.len != first.len || q.offset < prev.offset ||
		    (m > 1 && q.offset - prev.offset != *stride))
			break;
		*stride = q.offset - prev.offset;
		prev = q;
		m++;
		*end = j + 1;
	}
	return m;
}

size_t ddtx_ipc_runs_encode(const struct iovec *iov, size_t n, const uint8_t *alloc_of,
			    const uint64_t *base, void *out, size_t room, uint32_t *nrun)
{
	uint8_t *p = out;
	size_t used = 0, segs = 0;
	struct ddtx_ipc_run *list = NULL; /* the list being gathered, last in out */
	uint32_t listed = 0;              /* its count, written when it ends */

	*nrun = 0;
	/* A window of three segments i < j < k (the next non-empty ones; n past the end), read
	 * from iov where needed, vector_at only where a vector starts: 3.9 ns a segment of a
	 * list of 3225 (this machine), against 5.6 calling vector_at at each segment and 6.1
	 * copying struct pieces along the window (a wide store, then narrow loads of it). */
	size_t i = next_seg(iov, 0, n), j = i < n ? next_seg(iov, i + 1, n) : n;
	size_t k = j < n ? next_seg(iov, j + 1, n) : n;
	while (i < n) {
		struct piece a = piece_of(iov, i, alloc_of, base);
		if (k < n) {
			/* three of one allocation and length at one forward stride: a vector, 32
			 * bytes, where a list would take 8 a segment more */
			struct piece b = piece_of(iov, j, alloc_of, base),
				     c = piece_of(iov, k, alloc_of, base);
			if (b.alloc == a.alloc && c.alloc == a.alloc && b.len == a.len &&
			    c.len == a.len && b.offset >= a.offset && c.offset >= b.offset &&
			    c.offset - b.offset == b.offset - a.offset) {
				uint64_t stride;
				size_t end, m = vector_at(iov, i, n, alloc_of, base, &stride, &end);
				if ((segs += m) > DDTX_IPC_MAX_SEGS ||
				    room - used < sizeof(struct ddtx_ipc_run))
					return 0;
				if (list)
					list->count = listed;
				list = NULL;
				struct ddtx_ipc_run r = { (uint16_t)a.alloc, 0, (uint32_t)m, a.len,
							  a.offset, stride };
				memcpy(p + used, &r, sizeof(r));
				used += sizeof(r);
				(*nrun)++;
				i = next_seg(iov, end, n);
				j = i < n ? next_seg(iov, i + 1, n) : n;
				k = j < n ? next_seg(iov, j + 1, n) : n;
				continue;
			}
		}
		if (!list || list->alloc != a.alloc || list->len != a.len) {
			if (room - used < sizeof(*list))
				return 0;
			if (list)
				list->count = listed;
			list = (struct ddtx_ipc_run *)(p + used);
			*list = (struct ddtx_ipc_run){ (uint16_t)a.alloc, DDTX_IPC_RUN_LIST, 0, a.len,
						       0, 0 };
			listed = 0;
			used += sizeof(*list);
			(*nrun)++;
		}
		if (++segs > DDTX_IPC_MAX_SEGS || room - used < sizeof(uint64_t))
			return 0;
		memcpy(p + used, &a.offset, sizeof(uint64_t));
		used += sizeof(uint64_t);
		listed++;
		i = j;
		j = k;
		k = k < n ? next_seg(iov, k + 1, n) : n;
	}
	if (list)
		list->count = listed;
	return used;
}

size_t ddtx_ipc_runs_encode_vector(uint32_t alloc, uint64_t offset, uint64_t len, size_t n,
				   uint64_t stride, void *out, size_t room, uint32_t *nrun)
{
	/* fewer than three: ddtx_ipc_runs_encode lists them (not worth a special case) */
	*nrun = 0;
	if (n < 3 || n > DDTX_IPC_MAX_SEGS || !len || stride < len ||
	    room < sizeof(struct ddtx_ipc_run))
		return 0;
	struct ddtx_ipc_run r = { (uint16_t)alloc, 0, (uint32_t)n, len, offset, stride };
	memcpy(out, &r, sizeof(r));
	*nrun = 1;
	return sizeof(r);
}

const char *ddtx_ipc_runs_walk(const void *runs, size_t len, uint32_t nrun,
			       const struct ddtx_ipc_alloc *alloc, uint32_t nalloc,
			       void *const *local, struct iovec *out, size_t *nseg,
			       uint64_t *bytes)
{
	const uint8_t *p = runs, *end = p + len;
	size_t segs = 0;
	uint64_t sum = 0;

	if (!nrun)
		return "ipc nrun";
	for (uint32_t k = 0; k < nrun; k++) {
		struct ddtx_ipc_run r;
		uint64_t run_bytes;
		if ((size_t)(end - p) < sizeof(r))
			return "ipc nrun";
		memcpy(&r, p, sizeof(r));
		p += sizeof(r);
		bool list = r.flags & DDTX_IPC_RUN_LIST;
		if (r.alloc >= nalloc || (r.flags & ~DDTX_IPC_RUN_LIST) || !r.count || !r.len ||
		    (list && (r.offset || r.stride)))
			return "ipc run";
		if (r.count > DDTX_IPC_MAX_SEGS - segs)
			return "ipc segments";
		uint64_t size = alloc[r.alloc].size;
		if (r.len > size || __builtin_mul_overflow((uint64_t)r.count, r.len, &run_bytes) ||
		    run_bytes > UINT64_MAX - sum)
			return "ipc segment";
		const uint64_t last = size - r.len; /* the highest offset a segment may start at */
		uint8_t *base = local ? (uint8_t *)local[r.alloc] : NULL;
		if (list) {
			if ((size_t)(end - p) / sizeof(uint64_t) < r.count)
				return "ipc nrun";
			for (uint32_t i = 0; i < r.count; i++, p += sizeof(uint64_t)) {
				uint64_t off;
				memcpy(&off, p, sizeof(off));
				if (off > last)
					return "ipc segment";
				if (out)
					out[segs + i] = (struct iovec){ base + off, r.len };
			}
		} else {
			if (r.offset > last ||
			    (r.count > 1 && r.stride > (last - r.offset) / (r.count - 1)))
				return "ipc segment";
			for (uint32_t i = 0; out && i < r.count; i++)
				out[segs + i] = (struct iovec){ base + r.offset + i * r.stride, r.len };
		}
		segs += r.count;
		sum += run_bytes;
	}
	if (p != end)
		return "ipc offer length";
	*nseg = segs;
	*bytes = sum;
	return NULL;
}
