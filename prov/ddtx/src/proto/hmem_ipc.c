/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Device memory on the shm wire through CUDA IPC: no host staging.  A rendezvous send whose
 * segments are all device memory of one device offers them in its RTS (DDTX_HDR_IPC): the
 * driver's handle of each allocation, then the segments as runs (proto/ipc_runs.h).  The
 * receiver that takes the offer maps the allocations (engine/ipc_cache.h: per peer, by buffer
 * id) and copies from the sender's blocks straight into its own, device to device or device to
 * host (engine/ipc_copy.h: one 2-D copy, the copy kernel or a batch of copies, the way learned
 * per kind of destination, engine/hmem_way_cost.h), then answers ACK with DDTX_HDR_IPC, which
 * completes the send.  A receiver
 * that cannot take it (the driver refuses a handle: devices without peer access, a stale or
 * forged handle; a multi-receive buffer) answers with an ordinary CTS instead, and the sender
 * stages its device data into the bounce buffer it set aside then (proto/hmem_stage.c) and goes
 * on as any rendezvous: host staging stays the fallback.
 */
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "engine/gpu_kernels.h"
#include "engine/ipc_cache.h"
#include "engine/ipc_copy.h"
#include "hmem/hmem.h"
#include "proto/ipc_runs.h"
#include "proto/proto_internal.h"

/* Mappings of peers' allocations kept per device. */
#define IPC_MAPPINGS_KEPT 64
/* Pieces an offer into host memory is taken with, unless one 2-D copy moves them (below). */
#define IPC_HOST_PIECES_MAX 16

struct ddtx_ipc_cache *ddtx_ipc_cache_of(struct ddtx_proto_domain *pd, int device)
{
	if (device < 0 || device >= DDTX_PD_IPC_DEVICES)
		return NULL;
	if (!pd->ipc[device] &&
	    ddtx_ipc_cache_open(&ddtx_ipc_hmem_ops, device, IPC_MAPPINGS_KEPT, &pd->ipc[device]))
		pd->ipc[device] = NULL;
	return pd->ipc[device];
}

void ddtx_ipc_drop(struct ddtx_proto_ep *pep, bool all_peers, ddtx_peer_t peer)
{
	for (int d = 0; d < DDTX_PD_IPC_DEVICES; d++) {
		if (!pep->pd->ipc[d])
			continue;
		if (all_peers)
			ddtx_ipc_cache_drop_owner(pep->pd->ipc[d], pep);
		else
			ddtx_ipc_cache_drop_peer(pep->pd->ipc[d], pep, peer);
	}
}

void ddtx_ipc_close_all(struct ddtx_proto_domain *pd)
{
	for (int d = 0; d < DDTX_PD_IPC_DEVICES; d++) {
		ddtx_ipc_cache_close(pd->ipc[d]);
		pd->ipc[d] = NULL;
	}
}

/* Export the allocation holding addr into the offer's next entry. */
static int offer_alloc(struct ddtx_ipc_cache *c, const void *addr, uint64_t buffer_id,
		       struct ddtx_ipc_alloc *out)
{
	struct ddtx_hmem_ipc h;
	int ret = ddtx_ipc_cache_export(c, addr, buffer_id, &h);
	if (ret)
		return ret;
	memcpy(out->handle, h.handle, sizeof(out->handle));
	out->base = h.base;
	out->size = h.size;
	out->buffer_id = h.buffer_id;
	return 0;
}

int ddtx_ipc_offer_build(struct ddtx_proto_ep *pep, const struct iovec *iov, size_t count,
			 const struct ddtx_iov_vec *vec, const struct ddtx_hmem_attr *attr,
			 const struct ddtx_hmem_attr *one, int device, void **out, size_t *len,
			 size_t room)
{
	struct ddtx_ipc_cache *c = ddtx_ipc_cache_of(pep->pd, device);
	struct ddtx_ipc_alloc allocs[DDTX_IPC_MAX_ALLOCS];
	uint64_t base[DDTX_IPC_MAX_ALLOCS];
	uint32_t nalloc = 0;
	size_t first = 0;
	int ret;

	if (!c)
		return -FI_ENOSYS;
	while (first < count && !iov[first].iov_len)
		first++;
	if (first == count || room < sizeof(struct ddtx_ipc_offer))
		return -FI_EMSGSIZE;
	uint8_t *msg = malloc(room), *alloc_of = attr ? malloc(count) : NULL;
	if (!msg || (attr && !alloc_of)) {
		ret = -FI_ENOMEM;
		goto fail;
	}
	if (!attr) {
		/* all in one allocation (the stage checked each segment lies inside it) */
		ret = one->iface != DDTX_HMEM_CUDA || one->device != device
			      ? -FI_EOPNOTSUPP
			      : offer_alloc(c, iov[first].iov_base, one->buffer_id, &allocs[0]);
		if (ret)
			goto fail;
		nalloc = 1;
	}
	for (size_t i = first; attr && i < count; i++) {
		if (!iov[i].iov_len)
			continue;
		uint64_t a = (uintptr_t)iov[i].iov_base;
		uint32_t k;
		if (attr[i].iface != DDTX_HMEM_CUDA || attr[i].device != device) {
			ret = -FI_EOPNOTSUPP; /* host memory or another device: staged */
			goto fail;
		}
		for (k = 0; k < nalloc; k++)
			if (a >= allocs[k].base && a - allocs[k].base < allocs[k].size)
				break;
		if (k == nalloc) {
			if (nalloc == DDTX_IPC_MAX_ALLOCS) {
				ret = -FI_EMSGSIZE;
				goto fail;
			}
			if ((ret = offer_alloc(c, iov[i].iov_base, attr[i].buffer_id, &allocs[k])))
				goto fail;
			nalloc++;
		}
		if (iov[i].iov_len > allocs[k].size - (a - allocs[k].base)) {
			ret = -FI_EINVAL; /* runs past its allocation: not ours to offer */
			goto fail;
		}
		alloc_of[i] = (uint8_t)k;
	}
	for (uint32_t k = 0; k < nalloc; k++)
		base[k] = allocs[k].base;
	size_t head = sizeof(struct ddtx_ipc_offer) + nalloc * sizeof(allocs[0]);
	uint32_t nrun = 0;
	size_t body = 0;
	/* One vector in one allocation: its run without reading the list again (512 blocks:
	 * 1.4 us of a 5.3 us send call read them). */
	if (room > head && !attr && vec && vec->n == count && vec->stride > 0)
		body = ddtx_ipc_runs_encode_vector(0, (uintptr_t)vec->base - base[0], vec->block,
						   vec->n, (uint64_t)vec->stride, msg + head,
						   room - head, &nrun);
	if (room > head && !nrun)
		body = ddtx_ipc_runs_encode(iov, count, alloc_of, base, msg + head, room - head,
					    &nrun);
	if (!body) {
		ret = -FI_EMSGSIZE;
		goto fail;
	}
	struct ddtx_ipc_offer *o = (struct ddtx_ipc_offer *)msg;
	o->nalloc = nalloc;
	o->nrun = nrun;
	memcpy(o + 1, allocs, nalloc * sizeof(allocs[0]));
	free(alloc_of);
	*out = msg;
	*len = head + body;
	return 0;
fail:
	free(msg);
	free(alloc_of);
	return ret;
}

static void send_ipc_ack(struct ddtx_proto_ep *pep, ddtx_peer_t peer, uint32_t tx_id, int status)
{
	struct ddtx_hdr_ack h;
	ddtx_hdr_init(&h.base, DDTX_MSG_ACK, DDTX_HDR_IPC);
	h.tx_id = tx_id;
	h.status = status;
	ddtx_ctrl_send(pep, peer, &h, sizeof(h));
}

static void count_cache(struct fi_ddtx_stats *st, const struct ddtx_ipc_cache *c,
			const struct ddtx_ipc_cache_stats *before)
{
	struct ddtx_ipc_cache_stats now;
	ddtx_ipc_cache_stats(c, &now);
	st->hmem_ipc_opens += now.opens - before->opens;
	st->hmem_ipc_hits += now.hits - before->hits;
	st->hmem_ipc_stale += now.stale - before->stale;
}

/* The runs of an offer (checked when the RTS came, ddtx_check_ipc_offer) and their length. */
static const void *offer_runs(const struct ddtx_ipc_offer *o, size_t offer_len, size_t *len)
{
	const struct ddtx_ipc_alloc *allocs = (const void *)(o + 1);
	*len = offer_len - sizeof(*o) - o->nalloc * sizeof(*allocs);
	return allocs + o->nalloc;
}

/* Map the offer's allocations (local[k]: allocation k here).  -FI_E* when a mapping is
 * refused: the offer is declined. */
static int map_offer(struct ddtx_ipc_cache *c, struct ddtx_proto_ep *pep, ddtx_peer_t src,
		     const struct ddtx_ipc_offer *o, void **local)
{
	const struct ddtx_ipc_alloc *allocs = (const void *)(o + 1);

	for (uint32_t k = 0; k < o->nalloc; k++) {
		struct ddtx_hmem_ipc h = { .base = allocs[k].base, .size = allocs[k].size,
					   .buffer_id = allocs[k].buffer_id };
		memcpy(h.handle, allocs[k].handle, sizeof(h.handle));
		int ret = ddtx_ipc_cache_map(c, pep, src, &h, &local[k]);
		if (ret)
			return ret;
	}
	return 0;
}

/* The sender's segments in our mappings (*out, *nseg entries, from the endpoint's spares:
 * *cap). */
static int list_offer(struct ddtx_proto_ep *pep, const struct ddtx_ipc_offer *o,
		      size_t offer_len, void *const *local, struct iovec **out, size_t *nseg,
		      size_t *cap)
{
	size_t len;
	const void *runs = offer_runs(o, offer_len, &len);
	const struct ddtx_ipc_alloc *allocs = (const void *)(o + 1);
	uint64_t bytes;

	if (ddtx_ipc_runs_walk(runs, len, o->nrun, allocs, o->nalloc, NULL, NULL, nseg, &bytes))
		return -FI_EINVAL;
	struct iovec *v = ddtx_iov_take(pep, *nseg, cap);
	if (!v)
		return -FI_ENOMEM;
	ddtx_ipc_runs_walk(runs, len, o->nrun, allocs, o->nalloc, local, v, nseg, &bytes);
	*out = v;
	return 0;
}

/* The copy plan into dst: straight from the offer when it is one vector and so is dst, else
 * from its segments listed (*src, given back by the caller). */
static int plan_offer(struct ddtx_proto_ep *pep, const struct ddtx_ipc_offer *o,
		      size_t offer_len, void *const *local, const struct iovec *dst, size_t ndst,
		      size_t accepted, struct ddtx_ipc_plan *plan, struct iovec **src,
		      size_t *src_cap)
{
	size_t len, nsrc;
	const void *runs = offer_runs(o, offer_len, &len);
	struct ddtx_ipc_run r;
	int ret = -FI_EAGAIN;

	memcpy(&r, runs, sizeof(r));
	if (o->nrun == 1 && !(r.flags & DDTX_IPC_RUN_LIST) && r.count > 1)
		ret = ddtx_ipc_plan_from_vector(dst, ndst, (uint8_t *)local[r.alloc] + r.offset,
						r.stride, r.len, r.count, accepted, plan);
	if (ret != -FI_EAGAIN)
		return ret;
	if ((ret = list_offer(pep, o, offer_len, local, src, &nsrc, src_cap)))
		return ret;
	return ddtx_ipc_plan_build(dst, ndst, *src, nsrc, accepted, plan);
}

bool ddtx_ipc_take(struct ddtx_proto_ep *pep, struct ddtx_rx *rx, const void *offer,
		   size_t offer_len)
{
	struct fi_ddtx_stats *st = &pep->pd->stats;
	uint64_t t_arrived = ddtx_time_ns();
	const struct ddtx_ipc_offer *o = offer;
	struct ddtx_stage *stage = ddtx_stage_of(pep, rx->context);
	const struct iovec *dst = rx->iov;
	size_t ndst = rx->count;
	int device = 0;
	struct iovec *src = NULL;
	size_t src_cap = 0;
	struct ddtx_ipc_plan plan;

	if (stage)
		ddtx_stage_target(stage, &dst, &ndst, &device);
	struct ddtx_ipc_cache *c = ddtx_settings.hmem_ipc && rx->accepted && !rx->parent &&
						   device >= 0 && ddtx_hmem_cuda_available()
					   ? ddtx_ipc_cache_of(pep->pd, device)
					   : NULL;
	if (!c) {
		st->hmem_ipc_declined++;
		return false;
	}
	struct ddtx_ipc_cache_stats before;
	void *local[DDTX_IPC_MAX_ALLOCS];
	ddtx_ipc_cache_stats(c, &before);
	int ret = map_offer(c, pep, rx->peer, o, local);
	count_cache(st, c, &before);
	if (!ret && (ret = plan_offer(pep, o, offer_len, local, dst, ndst, rx->accepted, &plan,
				      &src, &src_cap)))
		ddtx_iov_give(pep, src, src_cap);
	/* The copy kernel writes device memory only: into host memory, the copy engine, which
	 * takes a driver copy per piece unless the plan is one 2-D copy (34 us a piece on an
	 * H200: MILC's 64 blocks took 2.2 ms).  Declined, the sender packs many pieces with
	 * its kernel and stages them instead. */
	enum ddtx_hmem_copy want = (enum ddtx_hmem_copy)ddtx_settings.hmem_copy;
	bool on_device = stage && ddtx_stage_on_device(stage);
	if (!ret && !on_device && want == DDTX_HMEM_COPY_AUTO && !plan.two_d &&
	    plan.nops > IPC_HOST_PIECES_MAX) {
		ddtx_ipc_plan_free(&plan);
		ddtx_iov_give(pep, src, src_cap);
		ret = -FI_EMSGSIZE;
	}
	if (ret) {
		DDTX_INFO(FI_LOG_EP_DATA, "receive %u: CUDA IPC offer of peer %u declined (%s): "
			  "staged\n", rx->id, rx->peer, fi_strerror(-ret));
		st->hmem_ipc_declined++;
		return false;
	}
	/* auto: the way the model of this kind of destination predicts fastest (or one to try
	 * again); a forced kernel into host memory takes the copy engine. */
	struct ddtx_hmem_way_cost *model =
		&pep->pd->hmem_way[on_device ? DDTX_HMEM_WAY_IPC_TO_DEVICE : DDTX_HMEM_WAY_IPC_TO_HOST];
	bool learn = want == DDTX_HMEM_COPY_AUTO;
	if (learn) {
		unsigned possible = 1u << DDTX_HMEM_COPY_SEGMENTS;
		if (plan.two_d)
			possible |= 1u << DDTX_HMEM_COPY_2D;
		if (on_device && plan.nops > 1 && ddtx_gpu_kernels_ready(device))
			possible |= 1u << DDTX_HMEM_COPY_KERNEL;
		want = ddtx_hmem_way_choose(model, possible, plan.bytes, plan.nops);
	} else if (want == DDTX_HMEM_COPY_KERNEL && !on_device) {
		want = DDTX_HMEM_COPY_2D;
	}
	uint64_t t0 = ddtx_time_ns();
	enum ddtx_hmem_copy way = ddtx_ipc_plan_run(device, &plan, want, &ret);
	uint64_t t1 = ddtx_time_ns();
	if (learn && !ret)
		ddtx_hmem_way_observe(model, way, plan.bytes, plan.nops, t1 - t0);
	st->hmem_ipc_plan_ns += t0 - t_arrived;
	st->hmem_ipc_copy_ns += t1 - t0;
	st->hmem_ipc_copy_2d += way == DDTX_HMEM_COPY_2D;
	st->hmem_ipc_copy_batched += way == DDTX_HMEM_COPY_SEGMENTS;
	st->hmem_ipc_copy_kernel += way == DDTX_HMEM_COPY_KERNEL;
	ddtx_ipc_plan_free(&plan);
	ddtx_iov_give(pep, src, src_cap);
	/* The sender's completion: delivered, or the error the copy ended with. */
	send_ipc_ack(pep, rx->peer, rx->tx_id, ret ? ret : 0);
	if (ret) {
		st->hmem_ipc_errors++;
		ddtx_rx_fail(pep, rx, -ret);
		return true;
	}
	st->hmem_ipc_rx++;
	st->hmem_ipc_bytes += rx->accepted;
	if (stage)
		ddtx_stage_delivered(stage);
	ddtx_list_remove(&rx->entry);
	ddtx_rx_report(pep, rx, rx->offered, rx->accepted, rx->msg_tag, rx->msg_data,
		       rx->hdr_flags, rx->from, NULL, 0);
	ddtx_rx_free(pep, rx);
	return true;
}
