/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Device memory (FI_HMEM_CUDA) moved by host staging: a send copies its device segments into a
 * host bounce buffer (cuMemcpyDtoH) and sends the bounce buffer, packed; a receive lands in a
 * host bounce buffer and is copied into its device segments (cuMemcpyHtoD) before its
 * completion is reported.  The operation underneath is an ordinary host-memory one (any wire,
 * any scheme), its context the stage; the stage is found again in ddtx_report, the one place
 * every completion passes, which restores the caller's context and swallows the completion
 * the caller did not ask for (the stage always asks for one, so that it is freed).
 *
 * The device part is copied in one of the ways of engine/hmem_copy.h (a driver copy per
 * segment, one 2-D copy of a vector, or the device pack kernel into device scratch and one
 * copy), chosen per operation.  Staging is what works on every wire.  It costs a copy through
 * host memory on each side.  On the shm wire a rendezvous send may avoid both (hmem_ipc.c): its
 * stage is then deferred (the bounce buffer set aside, filled only if the receiver declines the
 * IPC offer), and a receive the peer's offer reached is delivered straight into the caller's
 * segments (nothing copied at completion).
 */
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/settings.h"
#include "engine/gpu_kernels.h"
#include "engine/host_pages.h"
#include "engine/hmem_copy.h"
#include "engine/layout.h"
#include "hmem/hmem.h"
#include "proto/proto_internal.h"

struct ddtx_stage {
	struct ddtx_list_entry entry;    /* ddtx_proto_ep.stages */
	void *context;                   /* the caller's */
	bool report;                     /* did the caller ask for a completion? */
	bool rx;
	struct iovec *iov;               /* the caller's segments (device and host) */
	size_t count, iov_cap;           /* iov from the endpoint's spares (iov_spare.c) */
	struct ddtx_hmem_attr *attr;     /* memory of each segment, or NULL: */
	struct ddtx_hmem_attr one;       /* every segment in this device allocation */
	struct ddtx_iov_vec vec;         /* iov as one vector (n 0: it is not, or not known) */
	struct iovec bounce;             /* host memory the operation underneath uses */
	size_t bounce_cap;               /* its size as allocated */
	bool bounce_pinned;
	enum ddtx_hmem_copy way;         /* how the device part is copied */
	bool way_chosen;                 /* (a receive chooses when it first copies) */
	bool way_learnt;                 /* chosen by the learned model: its copies are timed */
	size_t pieces;                   /* non-empty segments, for that model */
	int device;                      /* the device, for the 2D and kernel ways */
	bool deferred;                   /* send: bounce not filled yet (CUDA IPC offered, or
					  * direct) */
	bool direct;                     /* the NIC may move iov itself (hmem_direct.c) */
	struct ddtx_dev_bounce dev;      /* device bounce buffer (packed on the device), or none */
	bool delivered;                  /* receive: bytes placed in iov directly (CUDA IPC) */
	bool dev_target;                 /* receive: zero copy into dev, unpacked by the kernel
					  * at completion (ddtx_stage_direct_segments) */
	struct iovec dev_iov;            /* dev as the one segment the NIC moves */
};

bool ddtx_proto_hmem_offered(void)
{
	return ddtx_hmem_cuda_device_count() > 0;
}

const char *ddtx_proto_hmem_describe(void)
{
	return ddtx_gpu_kernels_describe();
}

/*
 * Bounce buffers: page-locked where the driver gives them (hmem), sized in powers of two from
 * 64 KiB, and the last few kept per endpoint, since pinning costs far more than a copy and a
 * buffer used again keeps its registrations in the engine's caches.
 */
#define BOUNCE_MIN ((size_t)64 << 10)

/* The size of a new bounce buffer for len bytes: the power of two from BOUNCE_MIN; 0 if none. */
static size_t bounce_size(size_t len)
{
	size_t cap = BOUNCE_MIN;
	while (cap < len && cap <= SIZE_MAX / 2)
		cap *= 2;
	return cap < len ? 0 : cap;
}

static int bounce_take(struct ddtx_proto_ep *pep, int device, struct ddtx_stage *s, size_t len)
{
	for (unsigned i = 0; i < pep->nbounce_free; i++) {
		struct ddtx_bounce *b = &pep->bounce_free[i];
		if (b->cap >= len && b->cap / 4 <= (len > BOUNCE_MIN ? len : BOUNCE_MIN)) {
			s->bounce.iov_base = b->p;
			s->bounce_cap = b->cap;
			s->bounce_pinned = b->pinned;
			*b = pep->bounce_free[--pep->nbounce_free];
			return 0;
		}
	}
	size_t cap = bounce_size(len);
	if (!cap)
		return -FI_ENOMEM;
	s->bounce.iov_base = ddtx_hmem_host_alloc(device >= 0 ? device : 0, cap,
						  &s->bounce_pinned);
	s->bounce_cap = cap;
	return s->bounce.iov_base ? 0 : -FI_ENOMEM;
}

static void bounce_give(struct ddtx_proto_ep *pep, struct ddtx_stage *s)
{
	if (!s->bounce.iov_base)
		return;
	if (pep->nbounce_free == DDTX_BOUNCE_KEEP) {
		struct ddtx_bounce *old = &pep->bounce_free[0];
		ddtx_hmem_host_free(old->p, old->pinned);
		*old = pep->bounce_free[--pep->nbounce_free];
	}
	pep->bounce_free[pep->nbounce_free++] =
		(struct ddtx_bounce){ s->bounce.iov_base, s->bounce_cap, s->bounce_pinned };
	s->bounce.iov_base = NULL;
}

/*
 * Device bounce buffers (device memory packed by the kernel: CUDA IPC offers of many blocks,
 * and kernel staging): kept per endpoint like the host ones, sized in powers of two.  Kept,
 * not freed: cuMemFree waits for the device, and a buffer used again keeps its IPC handle,
 * which the peer then finds mapped already.
 */
static int dev_bounce_take(struct ddtx_proto_ep *pep, struct ddtx_stage *s, size_t len)
{
	for (unsigned i = 0; i < pep->ndev_bounce_free; i++) {
		struct ddtx_dev_bounce *b = &pep->dev_bounce_free[i];
		if (b->device == s->device && b->cap >= len) {
			s->dev = *b;
			*b = pep->dev_bounce_free[--pep->ndev_bounce_free];
			return 0;
		}
	}
	size_t cap = bounce_size(len);
	if (!cap)
		return -FI_ENOMEM;
	s->dev = (struct ddtx_dev_bounce){ NULL, cap, s->device };
	int ret = ddtx_hmem_dev_alloc(s->device, cap, &s->dev.p);
	if (ret)
		s->dev.p = NULL;
	return ret;
}

static void dev_bounce_free_one(struct ddtx_proto_ep *pep, struct ddtx_dev_bounce *b)
{
	/* The NIC's keys over it must not outlive it (hmem_direct.c): another allocation may take
	 * its addresses, and no memory monitor sees cuMemFree. */
	if (pep->caps->device_keys)
		ddtx_layout_cache_invalidate(pep->pd->layouts, b->p, b->cap);
	ddtx_hmem_dev_free(b->device, b->p);
	b->p = NULL;
}

static void dev_bounce_give(struct ddtx_proto_ep *pep, struct ddtx_stage *s)
{
	if (!s->dev.p)
		return;
	if (pep->ndev_bounce_free == DDTX_BOUNCE_KEEP) {
		/* the smallest goes */
		unsigned k = 0;
		for (unsigned i = 1; i < DDTX_BOUNCE_KEEP; i++)
			if (pep->dev_bounce_free[i].cap < pep->dev_bounce_free[k].cap)
				k = i;
		dev_bounce_free_one(pep, &pep->dev_bounce_free[k]);
		pep->dev_bounce_free[k] = pep->dev_bounce_free[--pep->ndev_bounce_free];
	}
	pep->dev_bounce_free[pep->ndev_bounce_free++] = s->dev;
	s->dev.p = NULL;
}

static void stage_free(struct ddtx_proto_ep *pep, struct ddtx_stage *s)
{
	bounce_give(pep, s);
	dev_bounce_give(pep, s);
	if (s->iov)
		ddtx_iov_give(pep, s->iov, s->iov_cap);
	free(s->attr);
	free(s);
}

/* Do all n segments lie in attr's device allocation?  One tight pass: no entry per segment;
 * none for a vector (vec->n: the list, scanned by the caller), whose span says it. */
static bool in_one_allocation(const struct ddtx_hmem_attr *attr, const struct iovec *iov,
			      size_t n, const struct ddtx_iov_vec *vec)
{
	const uintptr_t base = attr->range_base, size = attr->range_size;
	if (!size)
		return false;
	if (vec && vec->n == n) {
		/* the scan checked the span does not wrap around */
		uintptr_t last = (uintptr_t)vec->base + (uintptr_t)(vec->stride * (int64_t)(n - 1));
		uintptr_t lo = vec->stride < 0 ? last : (uintptr_t)vec->base;
		uintptr_t hi = (vec->stride < 0 ? (uintptr_t)vec->base : last) + vec->block;
		return lo >= base && hi - base <= size;
	}
	for (size_t i = 0; i < n; i++) {
		uintptr_t at = (uintptr_t)iov[i].iov_base - base;
		if (iov[i].iov_len && (at >= size || iov[i].iov_len > size - at))
			return false;
	}
	return true;
}

/*
 * Which of iov's segments are device memory: 0 when none is (or CUDA is absent: the common
 * case costs one test), 1 when some are, -FI_EINVAL when some are but the domain was opened
 * without FI_HMEM or one runs past its allocation.  attr (count entries) is filled when 1 is
 * returned, unless every segment lies in the first one's device allocation: then *attr is NULL
 * and *uniform that allocation (8192 blocks cost 30 us a side in per-segment entries).
 * Segments starting in a page the domain already knows as host memory
 * (engine/host_pages.h) skip the driver: on a GPU host a host-only job would otherwise pay a
 * driver call per iov entry per operation.  So do segments in the device allocation of the one
 * before (one query per allocation per call).
 */
static int classify(struct ddtx_proto_ep *pep, const struct iovec *iov, size_t count,
		    const struct ddtx_iov_vec *vec, struct ddtx_hmem_attr **attr,
		    struct ddtx_hmem_attr *uniform)
{
	struct ddtx_hmem_attr *a = NULL, last = { .iface = DDTX_HMEM_SYSTEM, .device = -1 };
	bool device = false;

	*attr = NULL;
	if (!ddtx_hmem_cuda_available())
		return 0;
	for (size_t i = 0; i < count; i++) {
		struct ddtx_hmem_attr one;
		if (!iov[i].iov_len)
			continue;
		if (ddtx_hmem_attr_covers(&last, iov[i].iov_base)) {
			one = last; /* the allocation of the segment before: no driver query */
		} else if (ddtx_host_pages_known(pep->pd->host_pages, iov[i].iov_base)) {
			pep->pd->stats.hmem_ptr_cached++;
			if (!a)
				continue;
			memset(&one, 0, sizeof(one));
			one.device = -1;
		} else {
			ddtx_hmem_detect(iov[i].iov_base, &one);
			pep->pd->stats.hmem_ptr_queries++;
			if (one.iface == DDTX_HMEM_SYSTEM)
				ddtx_host_pages_learn(pep->pd->host_pages, iov[i].iov_base);
			else
				last = one;
			if (!a && one.iface == DDTX_HMEM_CUDA &&
			    in_one_allocation(&one, iov, count, vec)) {
				if (!pep->pd->hmem) {
					device = true;
					break; /* refused below */
				}
				*uniform = one;
				return 1;
			}
		}
		if (one.iface == DDTX_HMEM_SYSTEM && !a)
			continue;
		/* A device segment running past its allocation would fault a copy kernel, which
		 * leaves the process's context unusable, where a driver copy only fails. */
		uintptr_t at = (uintptr_t)iov[i].iov_base;
		if (one.iface == DDTX_HMEM_CUDA && one.range_size &&
		    iov[i].iov_len > one.range_base + one.range_size - at) {
			DDTX_WARN(FI_LOG_EP_DATA, "segment %zu (%zu bytes) runs past its device "
				  "allocation\n", i, iov[i].iov_len);
			free(a);
			return -FI_EINVAL;
		}
		if (!a && !(a = calloc(count, sizeof(*a))))
			return -FI_ENOMEM;
		a[i] = one;
		device |= one.iface != DDTX_HMEM_SYSTEM;
	}
	if (!device) {
		free(a);
		return 0;
	}
	if (!pep->pd->hmem) {
		DDTX_WARN(FI_LOG_EP_DATA, "device memory in a data call of a domain opened without "
			  "FI_HMEM\n");
		free(a);
		return -FI_EINVAL;
	}
	*attr = a;
	return 1;
}

/* The memory segment i lies in. */
static const struct ddtx_hmem_attr *seg_attr(const struct ddtx_stage *s, size_t i)
{
	return s->attr ? &s->attr[i] : &s->one;
}

/* 2D: rows of the vector in one call, a last partial row (a truncated receive) on its own. */
static int copy_2d(struct ddtx_stage *s, size_t len, bool to_bounce)
{
	const struct iovec *v = s->iov;
	size_t i0 = 0;
	while (!v[i0].iov_len)
		i0++;
	size_t block = v[i0].iov_len, rows = len / block, rem = len % block;
	size_t stride = 0;
	for (size_t i = i0 + 1; i < s->count && !stride; i++)
		if (v[i].iov_len)
			stride = (uintptr_t)v[i].iov_base - (uintptr_t)v[i0].iov_base;
	uint8_t *dev = v[i0].iov_base, *b = s->bounce.iov_base;
	int ret = to_bounce ? ddtx_hmem_copy_2d(s->device, b, block, dev, stride, block, rows,
						DDTX_HMEM_TO_HOST)
			    : ddtx_hmem_copy_2d(s->device, dev, stride, b, block, block, rows,
						DDTX_HMEM_TO_DEVICE);
	if (ret || !rem)
		return ret;
	dev += rows * stride;
	b += rows * block;
	return to_bounce ? ddtx_hmem_copy(s->device, b, dev, rem, DDTX_HMEM_TO_HOST)
			 : ddtx_hmem_copy(s->device, dev, b, rem, DDTX_HMEM_TO_DEVICE);
}

/* KERNEL: the pack kernel between the segments and a device bounce buffer, one copy to/from
 * it. */
static int copy_kernel(struct ddtx_proto_ep *pep, struct ddtx_stage *s, size_t len,
		       bool to_bounce)
{
	int ret = s->dev.p ? 0 : dev_bounce_take(pep, s, len ? len : 1);

	if (ret)
		return ret;
	if (to_bounce) {
		if (!(ret = ddtx_gpu_pack_iov(s->device, s->iov, s->count, s->dev.p, len, true)))
			ret = ddtx_hmem_copy(s->device, s->bounce.iov_base, s->dev.p, len,
					     DDTX_HMEM_TO_HOST);
	} else if (!(ret = ddtx_hmem_copy(s->device, s->dev.p, s->bounce.iov_base, len,
					  DDTX_HMEM_TO_DEVICE))) {
		ret = ddtx_gpu_pack_iov(s->device, s->iov, s->count, s->dev.p, len, false);
	}
	return ret;
}

/* SEGMENTS: a copy per segment (host segments by memcpy). */
static int copy_segments(struct ddtx_stage *s, size_t len, bool to_bounce)
{
	uint8_t *b = s->bounce.iov_base;

	for (size_t i = 0; i < s->count && len; i++) {
		size_t n = s->iov[i].iov_len < len ? s->iov[i].iov_len : len;
		void *seg = s->iov[i].iov_base;
		int ret = 0;
		if (!n)
			continue;
		const struct ddtx_hmem_attr *a = seg_attr(s, i);
		if (a->iface == DDTX_HMEM_SYSTEM) {
			if (to_bounce)
				memcpy(b, seg, n);
			else
				memcpy(seg, b, n);
		} else if (to_bounce) {
			ret = ddtx_hmem_copy(a->device, b, seg, n, DDTX_HMEM_TO_HOST);
		} else {
			ret = ddtx_hmem_copy(a->device, seg, b, n, DDTX_HMEM_TO_DEVICE);
		}
		if (ret)
			return ret;
		b += n;
		len -= n;
	}
	return 0;
}

/* The learned model of this stage's copies: a send's out of the device, a receive's in. */
static struct ddtx_hmem_way_cost *stage_model(struct ddtx_proto_ep *pep,
					      const struct ddtx_stage *s)
{
	return &pep->pd->hmem_way[s->rx ? DDTX_HMEM_WAY_STAGE_IN : DDTX_HMEM_WAY_STAGE_OUT];
}

/* The way to copy this stage's device part (engine/hmem_copy.h), FI_DDTX_HMEM_COPY first. */
static int choose_way(struct ddtx_proto_ep *pep, struct ddtx_stage *s)
{
	struct fi_ddtx_stats *st = &pep->pd->stats;
	struct ddtx_hmem_copy_shape shape;
	int *dev = NULL;
	bool fell_back;

	if (s->attr) {
		if (!(dev = malloc(s->count * sizeof(int))))
			return -FI_ENOMEM;
		for (size_t i = 0; i < s->count; i++)
			dev[i] = s->attr[i].iface == DDTX_HMEM_CUDA ? s->attr[i].device : -1;
	}
	if (!s->attr && s->vec.n == s->count)
		ddtx_hmem_copy_shape_of_vec(s->vec.n, s->vec.block, s->vec.stride, &shape);
	else
		ddtx_hmem_copy_shape_of(s->iov, s->count, dev, &shape);
	free(dev);
	/* Loading the kernels costs a module load once: only asked when they could be used. */
	shape.kernels = shape.one_device && shape.segments > 1 && s->device >= 0 &&
			(ddtx_settings.hmem_copy == DDTX_HMEM_COPY_KERNEL ||
			 ddtx_settings.hmem_copy == DDTX_HMEM_COPY_AUTO) &&
			ddtx_gpu_kernels_ready(s->device);
	enum ddtx_hmem_copy forced = (enum ddtx_hmem_copy)ddtx_settings.hmem_copy;
	s->pieces = shape.segments;
	s->way_learnt = forced == DDTX_HMEM_COPY_AUTO;
	if (s->way_learnt) {
		/* auto: the learned model of this direction (engine/hmem_way_cost.h), whose
		 * priors are the cost line of ddtx_hmem_copy_choose */
		unsigned possible = 1u << DDTX_HMEM_COPY_SEGMENTS;
		if (shape.one_device && shape.vector)
			possible |= 1u << DDTX_HMEM_COPY_2D;
		if (shape.kernels)
			possible |= 1u << DDTX_HMEM_COPY_KERNEL;
		s->way = ddtx_hmem_way_choose(stage_model(pep, s), possible, s->bounce.iov_len,
					      shape.segments);
	} else {
		s->way = ddtx_hmem_copy_choose(&shape, forced, &fell_back);
		if (fell_back)
			st->hmem_copy_fallbacks++;
	}
	s->way_chosen = true;
	return 0;
}

/* The device of the first non-empty device segment (-1: none). */
static int stage_device(const struct ddtx_stage *s)
{
	if (!s->attr)
		return s->one.device;
	for (size_t i = 0; i < s->count; i++)
		if (s->iov[i].iov_len && s->attr[i].iface == DDTX_HMEM_CUDA)
			return s->attr[i].device;
	return -1;
}

/* Copy between the caller's segments and the bounce buffer (to_bounce: send side), up to len;
 * a way the driver turns out not to have falls back to segments. */
static int stage_copy(struct ddtx_proto_ep *pep, struct ddtx_stage *s, size_t len,
		      bool to_bounce)
{
	struct fi_ddtx_stats *st = &pep->pd->stats;
	int ret = -FI_ENOSYS;

	if (!s->way_chosen && (ret = choose_way(pep, s)))
		return ret;
	uint64_t t0 = ddtx_time_ns();
	ret = -FI_ENOSYS;
	if (s->way == DDTX_HMEM_COPY_2D)
		ret = copy_2d(s, len, to_bounce);
	else if (s->way == DDTX_HMEM_COPY_KERNEL)
		ret = copy_kernel(pep, s, len, to_bounce);
	if (ret == -FI_ENOSYS) {
		if (s->way != DDTX_HMEM_COPY_SEGMENTS)
			st->hmem_copy_fallbacks++;
		s->way = DDTX_HMEM_COPY_SEGMENTS;
		ret = copy_segments(s, len, to_bounce);
	}
	if (!ret) {
		st->hmem_copy_ops[s->way - DDTX_HMEM_COPY_SEGMENTS]++;
		st->hmem_staged_bytes += len;
		if (s->way_learnt)
			ddtx_hmem_way_observe(stage_model(pep, s), s->way, len, s->pieces,
					      ddtx_time_ns() - t0);
	}
	return ret;
}

/* Could this send go by CUDA IPC?  The shm wire (peers on this host), every segment device
 * memory of one device, a call that lets the data stay where it is (not FI_INJECT). */
static bool ipc_possible(struct ddtx_proto_ep *pep, const struct ddtx_stage *s, uint64_t flags)
{
	if (!ddtx_settings.hmem_ipc || (flags & FI_INJECT) || pep->caps->kind != DDTX_WIRE_KIND_SHM)
		return false;
	if (!s->attr)
		return true; /* all in one device allocation */
	int device = -1;
	for (size_t i = 0; i < s->count; i++) {
		if (!s->iov[i].iov_len)
			continue;
		if (s->attr[i].iface != DDTX_HMEM_CUDA || (device >= 0 && s->attr[i].device != device))
			return false;
		device = s->attr[i].device;
	}
	return device >= 0;
}

int ddtx_stage_begin_device(struct ddtx_proto_ep *pep, bool rx, const struct iovec **iov,
			    size_t *count, const struct ddtx_iov_vec *vec, void **context,
			    uint64_t *flags, bool report, struct ddtx_stage **out)
{
	struct ddtx_hmem_attr *attr, one;
	if (vec && vec->n != *count)
		vec = NULL;
	int ret = classify(pep, *iov, *count, vec, &attr, &one);

	*out = NULL;
	if (ret <= 0)
		return ret;
	if (*flags & (FI_MULTI_RECV | FI_CLAIM | FI_DISCARD | FI_PEEK)) {
		DDTX_WARN(FI_LOG_EP_DATA, "device memory with FI_MULTI_RECV, FI_PEEK, FI_CLAIM or "
			  "FI_DISCARD is not supported\n");
		free(attr);
		return -FI_EOPNOTSUPP;
	}
	struct ddtx_stage *s = calloc(1, sizeof(*s));
	size_t total = ddtx_iov_total(*iov, *count);
	int device = attr ? -1 : one.device;
	for (size_t i = 0; attr && i < *count && device < 0; i++)
		device = attr[i].iface == DDTX_HMEM_CUDA ? attr[i].device : -1;
	if (!s || !(s->iov = ddtx_iov_take(pep, *count, &s->iov_cap)) ||
	    bounce_take(pep, device, s, total)) {
		if (s && s->iov)
			ddtx_iov_give(pep, s->iov, s->iov_cap);
		free(s);
		free(attr);
		return -FI_ENOMEM;
	}
	memcpy(s->iov, *iov, *count * sizeof(**iov));
	s->count = *count;
	s->attr = attr;
	s->one = one;
	if (vec)
		s->vec = *vec;
	s->bounce.iov_len = total;
	s->context = *context;
	s->report = report;
	s->rx = rx;
	struct fi_ddtx_stats *st = &pep->pd->stats;
	/* A send that may go by CUDA IPC, or by the NIC from the caller's segments, copies
	 * nothing yet (ddtx_stage_fill does, if needed). */
	s->deferred = !rx && ipc_possible(pep, s, *flags);
	s->direct = !s->deferred && !(*flags & FI_INJECT) && ddtx_direct_possible(pep);
	if (s->direct) {
		ddtx_direct_guard(pep, s->iov, s->count, s->attr, &s->one);
		s->deferred = !rx;
	}
	s->device = stage_device(s);
	/* A receive's way waits for its first copy: one taken by CUDA IPC needs none (a pass
	 * over 8192 blocks cost 11 us). */
	if ((!rx && (ret = choose_way(pep, s))) ||
	    (!rx && !s->deferred && (ret = stage_copy(pep, s, total, true)))) {
		stage_free(pep, s);
		return ret;
	}
	*iov = &s->bounce;
	*count = 1;
	*context = s;
	*flags = (*flags & ~(uint64_t)DDTX_PROTO_NO_COMPLETION) | FI_COMPLETION;
	if (rx)
		st->hmem_rx_staged++;
	else if (!s->direct)
		st->hmem_tx_staged++; /* a direct one when ddtx_stage_fill copies it */
	ddtx_list_push_back(&pep->stages, &s->entry);
	*out = s;
	return 0;
}

void ddtx_stage_abort(struct ddtx_proto_ep *pep, struct ddtx_stage *s)
{
	if (!s)
		return;
	ddtx_list_remove(&s->entry);
	stage_free(pep, s);
}

bool ddtx_stage_complete(struct ddtx_proto_ep *pep, struct ddtx_proto_completion *c)
{
	struct ddtx_list_entry *it, *tmp;
	struct ddtx_stage *s = NULL;

	ddtx_list_foreach_safe(&pep->stages, it, tmp)
	{
		struct ddtx_stage *x = ddtx_container_of(it, struct ddtx_stage, entry);
		if (x == c->context) {
			s = x;
			break;
		}
	}
	if (!s)
		return true;
	if (s->rx && c->len && (s->dev_target || !s->delivered)) { /* truncated ones' bytes too */
		int ret = s->dev_target ? ddtx_gpu_pack_iov(s->device, s->iov, s->count, s->dev.p,
							    c->len, false)
					: stage_copy(pep, s, c->len, false);
		if (s->dev_target && !ret)
			pep->pd->stats.hmem_direct_kernel++;
		if (ret) {
			pep->pd->stats.hmem_copy_errors++;
			c->err = -ret;
			c->len = 0;
		}
	}
	c->buf = NULL; /* FI_MULTI_RECV is refused: no buffer to name */
	c->context = s->context;
	bool pass = s->report || c->err;
	ddtx_list_remove(&s->entry);
	stage_free(pep, s);
	return pass;
}

void *ddtx_stage_find(struct ddtx_proto_ep *pep, void *context)
{
	struct ddtx_list_entry *it, *tmp;

	ddtx_list_foreach_safe(&pep->stages, it, tmp)
	{
		struct ddtx_stage *s = ddtx_container_of(it, struct ddtx_stage, entry);
		if (s->context == context && s->rx)
			return s;
	}
	return context;
}

void ddtx_stage_free_all(struct ddtx_proto_ep *pep)
{
	struct ddtx_list_entry *it;

	while ((it = ddtx_list_pop_front(&pep->stages)))
		stage_free(pep, ddtx_container_of(it, struct ddtx_stage, entry));
	while (pep->nbounce_free) {
		struct ddtx_bounce *b = &pep->bounce_free[--pep->nbounce_free];
		ddtx_hmem_host_free(b->p, b->pinned);
	}
	while (pep->ndev_bounce_free)
		dev_bounce_free_one(pep, &pep->dev_bounce_free[--pep->ndev_bounce_free]);
}

bool ddtx_stage_deferred(const struct ddtx_stage *s)
{
	return s && s->deferred;
}

/* Staged, such a send would run the pack kernel here and the receiver its unpack: both
 * processes on the GPU each transfer, about 140 us a switch on one GPU shared by two (H200,
 * gpu_share); offered, only the receiver copies. */
bool ddtx_stage_prefers_ipc(const struct ddtx_stage *s)
{
	return s && s->deferred && !s->direct && s->way == DDTX_HMEM_COPY_KERNEL;
}

bool ddtx_stage_direct(const struct ddtx_stage *s)
{
	return s && s->direct;
}

/*
 * Many small device blocks would cost the NIC a work-request entry (or a UMR entry) each, where
 * the pack kernel gathers them at memory speed: the hybrid of the UMR-GPU design.  Where
 * staging would take the kernel (the learned way of this direction, engine/hmem_way_cost.h),
 * the NIC moves one device bounce buffer instead, packed now by a send, unpacked at
 * completion by a receive.
 */
int ddtx_stage_direct_segments(struct ddtx_proto_ep *pep, struct ddtx_stage *s,
			       const struct iovec **iov, size_t *count)
{
	int ret = s->way_chosen ? 0 : choose_way(pep, s);
	*iov = s->iov;
	*count = s->count;
	if (ret || s->way != DDTX_HMEM_COPY_KERNEL || s->count < 2 ||
	    !ddtx_stage_on_device(s) || !ddtx_gpu_kernels_ready(s->device))
		return ret;
	size_t len = s->bounce.iov_len;
	if ((ret = s->dev.p ? 0 : dev_bounce_take(pep, s, len ? len : 1)))
		return ret;
	if (!s->rx) {
		if ((ret = ddtx_gpu_pack_iov(s->device, s->iov, s->count, s->dev.p, len, true)))
			return ret;
		pep->pd->stats.hmem_direct_kernel++;
	}
	s->dev_iov = (struct iovec){ s->dev.p, len };
	s->dev_target = s->rx;
	*iov = &s->dev_iov;
	*count = 1;
	return 0;
}

void ddtx_stage_direct_undo(struct ddtx_stage *s)
{
	s->dev_target = false;
}

int ddtx_stage_fill(struct ddtx_proto_ep *pep, struct ddtx_stage *s)
{
	if (!s || !s->deferred)
		return 0;
	s->deferred = false;
	if (s->direct)
		pep->pd->stats.hmem_tx_staged++;
	return stage_copy(pep, s, s->bounce.iov_len, true);
}

int ddtx_stage_ipc_offer(struct ddtx_proto_ep *pep, struct ddtx_stage *s, void **offer,
			 size_t *len, size_t room)
{
	int ret = ddtx_ipc_offer_build(pep, s->iov, s->count, s->vec.n ? &s->vec : NULL, s->attr,
				       &s->one, s->device, offer, len, room);
	if (ret != -FI_EMSGSIZE || s->count < 2 || s->device < 0 ||
	    s->way != DDTX_HMEM_COPY_KERNEL || !ddtx_gpu_kernels_ready(s->device))
		return ret;
	/* Too many blocks to list in the RTS, and staging would pack them with the kernel anyway:
	 * pack them on the device into a bounce buffer of ours and offer that one segment (the
	 * receiver's copy kernel scatters it), which spares both trips through host memory
	 * (H200, NAS_MG x face, 4096 x 8 B: 622 us against 722 staged).  A vector stages by 2-D
	 * copies instead: two processes launching kernels on one GPU made the packed offer the
	 * slower way there (OSU vector 64 B x 8192: 789 us against 352 staged by 2-D copies;
	 * docs/benchmark-results.md). */
	size_t total = s->bounce.iov_len;
	struct ddtx_hmem_attr a;
	if ((ret = dev_bounce_take(pep, s, total)) ||
	    (ret = ddtx_gpu_pack_iov(s->device, s->iov, s->count, s->dev.p, total, true)))
		return ret;
	struct iovec one = { s->dev.p, total };
	ddtx_hmem_detect(s->dev.p, &a);
	ret = ddtx_ipc_offer_build(pep, &one, 1, NULL, &a, NULL, s->device, offer, len, room);
	if (!ret)
		pep->pd->stats.hmem_ipc_tx_packed++;
	return ret;
}

struct ddtx_stage *ddtx_stage_of(struct ddtx_proto_ep *pep, void *context)
{
	struct ddtx_list_entry *it, *tmp;

	ddtx_list_foreach_safe(&pep->stages, it, tmp)
	{
		struct ddtx_stage *s = ddtx_container_of(it, struct ddtx_stage, entry);
		if (s == context)
			return s;
	}
	return NULL;
}

void ddtx_stage_target(const struct ddtx_stage *s, const struct iovec **iov, size_t *count,
		       int *device)
{
	*iov = s->iov;
	*count = s->count;
	*device = s->device;
}

bool ddtx_stage_on_device(const struct ddtx_stage *s)
{
	if (!s->attr)
		return s->one.iface == DDTX_HMEM_CUDA && s->device >= 0;
	for (size_t i = 0; i < s->count; i++)
		if (s->iov[i].iov_len &&
		    (s->attr[i].iface != DDTX_HMEM_CUDA || s->attr[i].device != s->device))
			return false;
	return s->device >= 0;
}

void ddtx_stage_delivered(struct ddtx_stage *s)
{
	s->delivered = true;
}
