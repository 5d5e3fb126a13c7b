/* SPDX-License-Identifier: BSD-2-Clause */
/* The copy plan of ipc_copy.h. */
#include "engine/ipc_copy.h"

#include <stdint.h>
#include <stdlib.h>

#include <rdma/fi_errno.h>

#include "engine/gpu_kernels.h"

static size_t total_of(const struct iovec *v, size_t n)
{
	size_t t = 0;

	for (size_t i = 0; i < n; i++) {
		if (v[i].iov_len > SIZE_MAX - t)
			return SIZE_MAX;
		t += v[i].iov_len;
	}
	return t;
}

/* Equal pieces at one stride per side (strides may be anything but must repeat)? */
static bool is_vector(const struct ddtx_ipc_plan *p)
{
	if (p->nops < 2)
		return false;
	const struct ddtx_hmem_copy_op *o = p->ops;
	intptr_t ds = (intptr_t)((uintptr_t)o[1].dst - (uintptr_t)o[0].dst);
	intptr_t ss = (intptr_t)((uintptr_t)o[1].src - (uintptr_t)o[0].src);
	/* cuMemcpy2D: rows go up in memory and do not overlap (pitch >= width). */
	if (ds < (intptr_t)o[0].len || ss < (intptr_t)o[0].len)
		return false;
	for (size_t i = 1; i < p->nops; i++)
		if (o[i].len != o[0].len ||
		    (uintptr_t)o[i].dst - (uintptr_t)o[i - 1].dst != (uintptr_t)ds ||
		    (uintptr_t)o[i].src - (uintptr_t)o[i - 1].src != (uintptr_t)ss)
			return false;
	return true;
}

/* The plan's pieces (a vector, is_vector) as one 2-D copy. */
static void set_2d(struct ddtx_ipc_plan *p)
{
	p->two_d = true;
	p->d2.dst = p->ops[0].dst;
	p->d2.src = p->ops[0].src;
	p->d2.width = p->ops[0].len;
	p->d2.height = p->nops;
	p->d2.dpitch = (uintptr_t)p->ops[1].dst - (uintptr_t)p->ops[0].dst;
	p->d2.spitch = (uintptr_t)p->ops[1].src - (uintptr_t)p->ops[0].src;
}

/* iov as one vector: every segment *block bytes, each *stride after the one before (going up,
 * not overlapping), none empty.  A tight pass: most layouts sent from device memory are. */
static bool vector_of(const struct iovec *v, size_t n, size_t *block, uintptr_t *stride)
{
	if (n < 2 || !v[0].iov_len)
		return false;
	*block = v[0].iov_len;
	*stride = (uintptr_t)v[1].iov_base - (uintptr_t)v[0].iov_base;
	if ((intptr_t)*stride < (intptr_t)*block)
		return false;
	for (size_t i = 1; i < n; i++)
		if (v[i].iov_len != *block ||
		    (uintptr_t)v[i].iov_base - (uintptr_t)v[i - 1].iov_base != *stride)
			return false;
	return true;
}

/* A vector into a vector of the same block, whole blocks: the pieces are the blocks, listed in
 * one pass without the general walk (8192 blocks: 50 us a transfer before). */
static bool plan_vectors(const struct iovec *dst, size_t ndst, const struct iovec *src,
			 size_t nsrc, size_t len, struct ddtx_ipc_plan *p)
{
	size_t db, sb;
	uintptr_t ds, ss;
	if (!vector_of(dst, ndst, &db, &ds) || !vector_of(src, nsrc, &sb, &ss) || db != sb ||
	    (ds == db && ss == sb) || len % db || len / db < 2 || len / db > ndst ||
	    len / db > nsrc)
		return false; /* (contiguous on both sides: the walk merges it into one copy) */
	size_t rows = len / db;
	if (!(p->ops = malloc(rows * sizeof(*p->ops))))
		return false; /* the general walk reports it */
	for (size_t i = 0; i < rows; i++)
		p->ops[i] = (struct ddtx_hmem_copy_op){ (uint8_t *)dst[0].iov_base + i * ds,
							(const uint8_t *)src[0].iov_base + i * ss,
							db };
	p->nops = rows;
	return true;
}

int ddtx_ipc_plan_build(const struct iovec *dst, size_t ndst, const struct iovec *src,
			size_t nsrc, size_t len, struct ddtx_ipc_plan *p)
{
	/* Each piece but the last ends where a segment of one side does: at most ndst + nsrc - 1
	 * of them, so no growing on the way (8192 blocks: 50 us with doubling). */
	size_t di = 0, si = 0, doff = 0, soff = 0, cap = ndst + nsrc ? ndst + nsrc : 1;

	*p = (struct ddtx_ipc_plan){ 0 };
	if (len > total_of(dst, ndst) || len > total_of(src, nsrc))
		return -FI_EINVAL;
	if (plan_vectors(dst, ndst, src, nsrc, len, p)) {
		p->bytes = len;
		set_2d(p);
		return 0;
	}
	if (!(p->ops = malloc(cap * sizeof(*p->ops))))
		return -FI_ENOMEM;
	size_t left = len;
	/* Segments of equal lengths on both sides, pair by pair (the sender's layout and ours
	 * alike, as most are): a piece a pair, without the walk's bookkeeping (3225 pieces of 4 B,
	 * against the driver stand-in: 12.1-12.8 us planned by the walk alone, 8.3 so). */
	for (; left && di < ndst && di < nsrc && dst[di].iov_len == src[di].iov_len &&
	       dst[di].iov_len <= left;
	     di++) {
		size_t n = dst[di].iov_len;
		uint8_t *d = dst[di].iov_base;
		const uint8_t *s = src[di].iov_base;
		struct ddtx_hmem_copy_op *last = p->nops ? &p->ops[p->nops - 1] : NULL;
		if (!n)
			continue;
		if (last && (uint8_t *)last->dst + last->len == d &&
		    (const uint8_t *)last->src + last->len == s)
			last->len += n; /* continues on both sides */
		else
			p->ops[p->nops++] = (struct ddtx_hmem_copy_op){ d, s, n };
		left -= n;
	}
	si = di;
	while (left) {
		while (doff == dst[di].iov_len) {
			di++;
			doff = 0;
		}
		while (soff == src[si].iov_len) {
			si++;
			soff = 0;
		}
		size_t n = dst[di].iov_len - doff;
		if (src[si].iov_len - soff < n)
			n = src[si].iov_len - soff;
		if (left < n)
			n = left;
		uint8_t *d = (uint8_t *)dst[di].iov_base + doff;
		const uint8_t *s = (const uint8_t *)src[si].iov_base + soff;
		struct ddtx_hmem_copy_op *last = p->nops ? &p->ops[p->nops - 1] : NULL;
		if (last && (uint8_t *)last->dst + last->len == d &&
		    (const uint8_t *)last->src + last->len == s) {
			last->len += n; /* continues on both sides */
		} else {
			if (p->nops == cap) {
				void *grown = realloc(p->ops, 2 * cap * sizeof(*p->ops));
				if (!grown) {
					ddtx_ipc_plan_free(p);
					return -FI_ENOMEM;
				}
				p->ops = grown;
				cap *= 2;
			}
			p->ops[p->nops++] = (struct ddtx_hmem_copy_op){ d, s, n };
		}
		doff += n;
		soff += n;
		left -= n;
	}
	p->bytes = len;
	if (is_vector(p))
		set_2d(p);
	return 0;
}

int ddtx_ipc_plan_from_vector(const struct iovec *dst, size_t ndst, const void *src,
			      size_t stride, size_t block, size_t count, size_t len,
			      struct ddtx_ipc_plan *p)
{
	size_t db;
	uintptr_t ds;

	*p = (struct ddtx_ipc_plan){ 0 };
	if (!block || len % block || len / block < 2 || len / block > count ||
	    len / block > ndst || stride < block || !vector_of(dst, ndst, &db, &ds) ||
	    db != block || (ds == block && stride == block))
		return -FI_EAGAIN;
	/* OSU's 8192 blocks: listing and walking them took 24 us a transfer on the receiver */
	p->two_d = true;
	p->d2.dst = dst[0].iov_base;
	p->d2.src = src;
	p->d2.width = block;
	p->d2.height = len / block;
	p->d2.dpitch = ds;
	p->d2.spitch = stride;
	p->nops = p->d2.height;
	p->bytes = len;
	return 0;
}

/* The pieces of a 2-D plan built without them. */
static int plan_ops(struct ddtx_ipc_plan *p)
{
	if (p->ops)
		return 0;
	if (!(p->ops = malloc(p->nops * sizeof(*p->ops))))
		return -FI_ENOMEM;
	for (size_t i = 0; i < p->nops; i++)
		p->ops[i] = (struct ddtx_hmem_copy_op){ (uint8_t *)p->d2.dst + i * p->d2.dpitch,
							(const uint8_t *)p->d2.src +
								i * p->d2.spitch,
							p->d2.width };
	return 0;
}

void ddtx_ipc_plan_free(struct ddtx_ipc_plan *p)
{
	free(p->ops);
	p->ops = NULL;
	p->nops = 0;
}

enum ddtx_hmem_copy ddtx_ipc_plan_run(int device, struct ddtx_ipc_plan *p,
				      enum ddtx_hmem_copy way, int *ret)
{
	/* AUTO: one 2-D copy for a vector, the copy kernel for any other list of pieces.  On an
	 * H200 (2026-11-26, test_ipc, nothing else on the GPU) a 2-D copy of 256 rows of 512 B
	 * took 11.9 us, the copy kernel 37.8 (its descriptors uploaded, a launch, a wait), and a
	 * batch costs a driver call per piece (64 rows of 3 KiB: 2 ms). */
	if ((way == DDTX_HMEM_COPY_KERNEL || (way == DDTX_HMEM_COPY_AUTO && !p->two_d)) &&
	    p->nops > 1 && ddtx_gpu_kernels_ready(device)) {
		if ((*ret = plan_ops(p)))
			return DDTX_HMEM_COPY_KERNEL;
		*ret = ddtx_gpu_copy_pieces(device, p->ops, p->nops);
		if (*ret != -FI_ENOSYS)
			return DDTX_HMEM_COPY_KERNEL;
	}
	if (p->two_d && way != DDTX_HMEM_COPY_SEGMENTS) {
		*ret = ddtx_hmem_copy_2d_d2d(device, p->d2.dst, p->d2.dpitch, p->d2.src,
					     p->d2.spitch, p->d2.width, p->d2.height);
		if (*ret != -FI_ENOSYS)
			return DDTX_HMEM_COPY_2D;
	}
	if (!(*ret = plan_ops(p)))
		*ret = ddtx_hmem_copy_batch(device, p->ops, p->nops);
	return DDTX_HMEM_COPY_SEGMENTS;
}
