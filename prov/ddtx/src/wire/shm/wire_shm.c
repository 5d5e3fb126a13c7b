/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shm wire's entry points (wire/wire.h): a software HCA on one host.
 *
 *  domain   : owns the domain region (key table + segment pool) and the caps
 *  endpoint : owns the endpoint region (header + receive ring), the peer table and a queue of
 *             finished work requests whose completions the next progress call delivers
 *
 * Work requests execute synchronously inside the post call (the copy is done by the kernel
 * through CMA), but their completions are only reported from ddtx_wire_ep_progress().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/iov_check.h"
#include "hmem/hmem.h"
#include "fault.h"
#include "shm.h"

#define PEER_CHECK_NS (100ull * 1000 * 1000)
/* A full ring asks whether its reader's process still lives at most this often: the check
 * reads /proc (tens of us), and a full ring is common, not a sign of death (a PACK transfer of
 * 4096 8-byte blocks, its CTS retried on a full ring: 10.9% of the time in /proc, half the rate
 * of eager messages of the same blocks). */
#define PEER_FULL_CHECK_NS (10ull * 1000 * 1000)

static size_t round_pow2(size_t v)
{
	size_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

static int apply_params(const struct ddtx_wire_params *in, struct ddtx_wire_params *p)
{
	if (in)
		*p = *in;
	else
		memset(p, 0, sizeof(*p));
	if (!p->max_sge)
		p->max_sge = DDTX_SHM_DEF_MAX_SGE;
	if (!p->max_mkey_entries)
		p->max_mkey_entries = DDTX_SHM_DEF_MKEY_ENTRIES;
	if (!p->ring_slots)
		p->ring_slots = DDTX_SHM_DEF_RING_SLOTS;
	if (!p->slot_size)
		p->slot_size = DDTX_SHM_DEF_SLOT_SIZE;
	if (!p->key_slots)
		p->key_slots = DDTX_SHM_DEF_KEY_SLOTS;
	if (!p->key_segments)
		p->key_segments = DDTX_SHM_DEF_KEY_SEGS;

	if (p->ring_slots > DDTX_SHM_MAX_RING_SLOTS || p->slot_size > DDTX_SHM_MAX_SLOT_SIZE ||
	    p->key_slots > DDTX_SHM_MAX_KEY_SLOTS / 2 || p->key_segments > DDTX_SHM_MAX_KEY_SEGS ||
	    p->max_sge > DDTX_SHM_MAX_SGE || p->max_mkey_entries > DDTX_SHM_MAX_KEY_SEGS) {
		DDTX_WARN(FI_LOG_CORE, "shm: parameter out of range (ring_slots %zu <= %u, "
			  "slot_size %zu <= %u, key_slots %zu <= %u, key_segments %zu <= %u, "
			  "max_sge %zu <= %u)\n",
			  p->ring_slots, DDTX_SHM_MAX_RING_SLOTS, p->slot_size,
			  DDTX_SHM_MAX_SLOT_SIZE, p->key_slots, DDTX_SHM_MAX_KEY_SLOTS / 2,
			  p->key_segments, DDTX_SHM_MAX_KEY_SEGS, p->max_sge, DDTX_SHM_MAX_SGE);
		return -FI_EINVAL;
	}
	if (p->ring_slots & (p->ring_slots - 1)) {
		DDTX_INFO(FI_LOG_CORE, "shm: ring_slots %zu rounded up to a power of two\n",
			  p->ring_slots);
		p->ring_slots = round_pow2(p->ring_slots);
	}
	if (p->ring_slots < 2)
		p->ring_slots = 2;
	if (p->slot_size < DDTX_SHM_SLOT_HDR + 64)
		p->slot_size = DDTX_SHM_SLOT_HDR + 64;
	p->slot_size = (p->slot_size + 63) & ~(size_t)63;
	if (p->ring_slots * p->slot_size > DDTX_SHM_MAX_RING_BYTES) {
		DDTX_WARN(FI_LOG_CORE, "shm: ring of %zu x %zu bytes is too large\n", p->ring_slots,
			  p->slot_size);
		return -FI_EINVAL;
	}
	return 0;
}

static void region_hdr_init(struct ddtx_shm_region_hdr *r, uint64_t magic, size_t size,
			    uint32_t hdr_size, uint64_t start_time, uint64_t uid)
{
	r->version = DDTX_SHM_VERSION;
	r->hdr_size = hdr_size;
	r->region_size = size;
	r->pid = (uint32_t)getpid();
	r->pidns = ddtx_shm_pidns();
	r->start_time = start_time;
	r->uid = uid;
	atomic_thread_fence(memory_order_release);
	r->magic = magic;                        /* last: the header is complete */
}

/* ---- domain ---- */

static int shm_domain_open(const struct ddtx_wire_params *params, struct ddtx_wire_domain **out)
{
	struct ddtx_shm_domain *dom;
	uint8_t rand[DDTX_SHM_RAND_BYTES];
	uint64_t nslots, uid;
	size_t size;
	int ret;

	if (!out)
		return -FI_EINVAL;
	ddtx_shm_cleanup_stale();
	dom = calloc(1, sizeof(*dom));
	if (!dom)
		return -FI_ENOMEM;
	ret = apply_params(params, &dom->params);
	if (ret)
		goto err_free;

	dom->caps.name = "shm";
	dom->caps.kind = DDTX_WIRE_KIND_SHM;
	dom->caps.max_sge = dom->params.max_sge;
	dom->caps.max_mkey_entries = dom->params.max_mkey_entries;
	dom->caps.max_send_size = dom->params.slot_size - DDTX_SHM_SLOT_HDR;
	dom->caps.max_rma_size = DDTX_SHM_MAX_RMA;
	dom->caps.inline_size = dom->caps.max_send_size;
	dom->caps.addr_len = DDTX_SHM_ADDR_LEN;
	dom->caps.strided_mkeys = false;
	dom->caps.recv_scatter = false;
	/* Only against the test stand-in's door (hmem.h, ddtx_hmem_host_view): process_vm
	 * cannot reach a GPU's memory. */
	dom->caps.device_keys = ddtx_hmem_host_view_available();
	/* An ACK is one ring slot; carried on the reply instead, it made the reply arrive before
	 * the sender posted its receive (unexpected: a copy more), MPICH's nas_lu-y 2.8 -> 3.3 us. */
	dom->caps.carry_acks = false;
	dom->caps.pack_stores = true;
	dom->start_time = ddtx_shm_self_start_time();

	nslots = round_pow2(2 * dom->params.key_slots);    /* load factor <= 1/2 */
	size = ddtx_shm_keytab_region_size(nslots, dom->params.key_segments);
	ret = ddtx_shm_region_create(size, &dom->map, rand);
	if (ret)
		goto err_free;
	ret = ddtx_shm_random(&uid, sizeof(uid));
	if (ret)
		goto err_region;
	ret = ddtx_shm_keytab_init(&dom->keys, dom->map.addr, size, dom->params.key_slots, nslots,
				   dom->params.key_segments);
	if (ret)
		goto err_region;
	region_hdr_init(&dom->keys.hdr->r, DDTX_SHM_DOM_MAGIC, size, dom->keys.hdr->r.hdr_size,
			dom->start_time, uid);
	ret = pthread_mutex_init(&dom->lock, NULL);
	if (ret) {
		ret = -ret;
		goto err_keys;
	}
	DDTX_INFO(FI_LOG_CORE, "shm: domain region %s: %zu keys, %zu segments, max_sge %zu, "
		  "max_mkey_entries %zu\n", dom->map.name, dom->params.key_slots,
		  dom->params.key_segments, dom->caps.max_sge, dom->caps.max_mkey_entries);
	dom->base.impl = &ddtx_shm_wire_impl;
	*out = &dom->base;
	return 0;
err_keys:
	ddtx_shm_keytab_fini(&dom->keys);
err_region:
	ddtx_shm_region_destroy(&dom->map);
err_free:
	free(dom);
	return ret;
}

static void shm_domain_close(struct ddtx_wire_domain *wdom)
{
	struct ddtx_shm_domain *dom = ddtx_shm_domain_of(wdom);
	if (!dom)
		return;
	if (dom->keys.live)
		DDTX_WARN(FI_LOG_CORE, "shm: closing a domain with %llu keys still registered\n",
			  (unsigned long long)dom->keys.live);
	ddtx_shm_keytab_fini(&dom->keys);
	ddtx_shm_region_destroy(&dom->map);
	pthread_mutex_destroy(&dom->lock);
	free(dom);
}

static const struct ddtx_wire_caps *shm_domain_caps(struct ddtx_wire_domain *wdom)
{
	struct ddtx_shm_domain *dom = ddtx_shm_domain_of(wdom);
	return dom ? &dom->caps : NULL;
}

static int shm_addr_check(struct ddtx_wire_domain *wdom, const void *addr, size_t len)
{
	(void)wdom;
	return ddtx_shm_addr_check(addr, len);
}

/*
 * Device memory on a domain with device keys (the test stand-in's door, hmem.h): each segment
 * as the host views of the allocations it lies in, so that process_vm reaches the bytes as a
 * NIC reaches them through dma-buf.  Host memory stays as it is.  *out is NULL when nothing
 * changed; otherwise the caller frees it.
 */
static int device_view(const struct iovec *iov, size_t count, struct iovec **out, size_t *n)
{
	size_t pieces = 0, k = 0;
	bool device = false;
	*out = NULL;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < count; i++) {
			uint8_t *a = iov[i].iov_base;
			size_t left = iov[i].iov_len;
			do {
				size_t len = left;
				void *v = ddtx_hmem_host_view(a, &len);
				device |= v != NULL;
				if (!v)
					len = left; /* host memory: the rest of the segment */
				if (pass)
					(*out)[k++] = (struct iovec){ v ? v : a, len };
				else
					pieces++;
				a += len;
				left -= len;
			} while (left);
		}
		if (!pass && (!device || !(*out = calloc(pieces, sizeof(**out)))))
			return device ? -FI_ENOMEM : 0;
	}
	*n = pieces;
	return 0;
}

int ddtx_shm_mr_reg(struct ddtx_wire_domain *wdom, const struct iovec *iov, size_t count,
		     enum ddtx_key_space space, const uint64_t *requested_key, uint64_t iova,
		     uint32_t access, struct ddtx_wire_mr **out)
{
	struct ddtx_shm_domain *dom = ddtx_shm_domain_of(wdom);
	const uint32_t all = DDTX_ACC_LOCAL_READ | DDTX_ACC_LOCAL_WRITE | DDTX_ACC_REMOTE_READ |
			     DDTX_ACC_REMOTE_WRITE;
	struct ddtx_shm_mr *mr;
	uint64_t len = 0, key;
	uint32_t slot;
	int ret;

	if (!dom || !out || (count && !iov) || (space != DDTX_KEY_APP && space != DDTX_KEY_INTERNAL)
	    || (access & ~all)) {
		DDTX_WARN(FI_LOG_CORE, "shm: mr_reg: bad argument (space %d access %#x)\n",
			  (int)space, access);
		return -FI_EINVAL;
	}
	if (count > dom->caps.max_mkey_entries && space != DDTX_KEY_APP) {
		DDTX_WARN(FI_LOG_CORE, "shm: mr_reg: %zu entries exceed max_mkey_entries %zu\n",
			  count, dom->caps.max_mkey_entries);
		return -FI_EINVAL;
	}
	if (count > dom->params.key_segments || count > UINT32_MAX) {
		DDTX_WARN(FI_LOG_CORE, "shm: mr_reg: %zu entries exceed the segment pool (%zu)\n",
			  count, dom->params.key_segments);
		return -FI_EINVAL;
	}
	for (size_t i = 0; i < count; i++) {
		uint64_t a = (uint64_t)(uintptr_t)iov[i].iov_base, l = iov[i].iov_len;
		if ((l && !a) || l > UINT64_MAX - a || l > UINT64_MAX - len) {
			DDTX_WARN(FI_LOG_CORE, "shm: mr_reg: entry %zu (%p, %zu) is invalid\n", i,
				  iov[i].iov_base, iov[i].iov_len);
			return -FI_EINVAL;
		}
		len += l;
	}
	if (len > UINT64_MAX - iova) {
		DDTX_WARN(FI_LOG_CORE, "shm: mr_reg: iova %#llx + %llu bytes overflows\n",
			  (unsigned long long)iova, (unsigned long long)len);
		return -FI_EINVAL;
	}
	struct iovec *view = NULL;
	size_t nview = count;
	if (dom->caps.device_keys && (ret = device_view(iov, count, &view, &nview)))
		return ret;
	if (nview > dom->params.key_segments) {
		free(view);
		return -FI_EINVAL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		free(view);
		return -FI_ENOMEM;
	}
	pthread_mutex_lock(&dom->lock);
	ret = ddtx_shm_keytab_insert(&dom->keys, view ? view : iov, nview, (uint32_t)space,
				     requested_key, iova, len, access, &key, &slot);
	pthread_mutex_unlock(&dom->lock);
	free(view);
	if (ret) {
		free(mr);
		return ret;
	}
	mr->slot = slot;
	mr->pub.key = key;
	mr->pub.space = space;
	mr->pub.iova = iova;
	mr->pub.len = (size_t)len;
	mr->pub.access = access;
	mr->pub.wire_priv = mr;
	*out = &mr->pub;
	return 0;
}

int ddtx_shm_mr_dereg(struct ddtx_wire_domain *wdom, struct ddtx_wire_mr *pub)
{
	struct ddtx_shm_domain *dom = ddtx_shm_domain_of(wdom);
	struct ddtx_shm_mr *mr;
	int ret;

	if (!dom || !pub || !pub->wire_priv) {
		DDTX_WARN(FI_LOG_CORE, "shm: mr_dereg: bad argument\n");
		return -FI_EINVAL;
	}
	mr = pub->wire_priv;
	if (&mr->pub != pub)
		return -FI_EINVAL;
	pthread_mutex_lock(&dom->lock);
	ret = ddtx_shm_keytab_remove(&dom->keys, mr->slot, (uint32_t)pub->space, pub->key);
	pthread_mutex_unlock(&dom->lock);
	if (ret)
		return ret;
	mr->pub.wire_priv = NULL;
	free(mr);
	return 0;
}

static int shm_key_check(struct ddtx_wire_domain *wdom, enum ddtx_key_space space, uint64_t key,
			 uint64_t addr, uint64_t len, uint32_t access)
{
	struct ddtx_shm_domain *dom = ddtx_shm_domain_of(wdom);
	pthread_mutex_lock(&dom->lock);
	int ret = ddtx_shm_keytab_check(&dom->keys, (uint32_t)space, key, addr, len, access);
	pthread_mutex_unlock(&dom->lock);
	return ret;
}

/* ---- endpoint ---- */

static int shm_ep_open(struct ddtx_wire_domain *wdom, const struct ddtx_wire_handlers *handlers,
		      void *handler_arg, struct ddtx_wire_ep **out)
{
	struct ddtx_shm_domain *dom = ddtx_shm_domain_of(wdom);
	struct ddtx_shm_ep *ep;
	struct ddtx_shm_ep_hdr *hdr;
	size_t stamp_off = (sizeof(struct ddtx_shm_ep_hdr) + 63) & ~(size_t)63;
	size_t ring_off = (stamp_off + dom->params.ring_slots * sizeof(uint64_t) + 63) & ~(size_t)63;
	size_t size;
	int ret;

	if (!dom || !handlers || !out)
		return -FI_EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->dom = dom;
	ep->handlers = *handlers;
	ep->handler_arg = handler_arg;
	ddtx_shm_peers_init(&ep->peers);

	size = ring_off + dom->params.ring_slots * dom->params.slot_size;
	ret = ddtx_shm_region_create(size, &ep->map, ep->addr.rand);
	if (ret)
		goto err_free;
	ddtx_shm_region_touch(&ep->map, size, true);
	do {
		ret = ddtx_shm_random(&ep->addr.uid, sizeof(ep->addr.uid));
	} while (!ret && !ep->addr.uid);
	if (ret)
		goto err_region;
	ep->addr.magic = DDTX_SHM_ADDR_MAGIC;
	ep->addr.version = DDTX_SHM_VERSION;
	ep->addr.pid = (uint32_t)getpid();
	ep->addr.start_time = dom->start_time;

	hdr = ep->hdr = ep->map.addr;
	snprintf(hdr->dom_name, sizeof(hdr->dom_name), "%s", dom->map.name);
	hdr->ring_slots = (uint32_t)dom->params.ring_slots;
	hdr->slot_size = (uint32_t)dom->params.slot_size;
	hdr->ring_off = ring_off;
	hdr->stamp_off = stamp_off;
	atomic_store_explicit(&hdr->tail, 0, memory_order_relaxed);
	_Atomic uint64_t *stamps = (_Atomic uint64_t *)((uint8_t *)ep->map.addr + stamp_off);
	ddtx_shm_ring_init(&ep->ring, hdr, stamps, (uint8_t *)ep->map.addr + ring_off,
			   hdr->ring_slots, hdr->slot_size);
	for (uint32_t i = 0; i < hdr->ring_slots; i++) {
		struct ddtx_shm_slot_hdr *s = ddtx_shm_ring_slot(&ep->ring, i);
		atomic_store_explicit(&stamps[i], 0, memory_order_relaxed);
		atomic_store_explicit(&s->seq, i, memory_order_relaxed);
	}
	atomic_store_explicit(&hdr->alive, 1, memory_order_relaxed);
	region_hdr_init(&hdr->r, DDTX_SHM_EP_MAGIC, size, (uint32_t)ring_off, dom->start_time,
			ep->addr.uid);
	DDTX_INFO(FI_LOG_CORE, "shm: endpoint region %s: ring %zu x %zu bytes\n", ep->map.name,
		  dom->params.ring_slots, dom->params.slot_size);
	ep->base.impl = &ddtx_shm_wire_impl;
	*out = &ep->base;
	return 0;
err_region:
	ddtx_shm_region_destroy(&ep->map);
err_free:
	free(ep);
	return ret;
}

static void shm_ep_close(struct ddtx_wire_ep *wep)
{
	struct ddtx_shm_ep *ep = ddtx_shm_ep_of(wep);
	if (!ep)
		return;
	if (ep->hdr)
		atomic_store_explicit(&ep->hdr->alive, 0, memory_order_release);
	if (ep->cq_count)
		DDTX_INFO(FI_LOG_EP_DATA, "shm: closing an endpoint with %zu undelivered "
			  "completions\n", ep->cq_count);
	ddtx_shm_name_unbind(ep);
	ddtx_shm_peers_fini(&ep->peers);
	ddtx_shm_region_destroy(&ep->map);
	free(ep->cq);
	free(ep->riov);
	free(ep);
}

static int shm_ep_getname(struct ddtx_wire_ep *wep, void *addr, size_t *len)
{
	struct ddtx_shm_ep *ep = ddtx_shm_ep_of(wep);
	if (!ep || !len)
		return -FI_EINVAL;
	if (*len < DDTX_SHM_ADDR_LEN || !addr) {
		*len = DDTX_SHM_ADDR_LEN;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, &ep->addr, DDTX_SHM_ADDR_LEN);
	*len = DDTX_SHM_ADDR_LEN;
	return 0;
}

static int shm_peer_insert(struct ddtx_wire_ep *wep, const void *addr, size_t len,
			  ddtx_peer_t *peer)
{
	struct ddtx_shm_ep *ep = ddtx_shm_ep_of(wep);
	struct ddtx_shm_addr a;
	int ret;

	if (!ep || !peer)
		return -FI_EINVAL;
	ret = ddtx_shm_addr_check(addr, len);
	if (ret)
		return ret;
	memcpy(&a, addr, sizeof(a));
	return ddtx_shm_peers_insert(&ep->peers, &a, peer);
}

static int shm_peer_addr(struct ddtx_wire_ep *wep, ddtx_peer_t peer, void *addr, size_t *len)
{
	struct ddtx_shm_ep *ep = ddtx_shm_ep_of(wep);
	struct ddtx_shm_peer *p;

	if (!ep || !len)
		return -FI_EINVAL;
	p = ddtx_shm_peers_get(&ep->peers, peer);
	if (!p)
		return -FI_EINVAL;
	if (*len < DDTX_SHM_ADDR_LEN || !addr) {
		*len = DDTX_SHM_ADDR_LEN;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, &p->addr, DDTX_SHM_ADDR_LEN);
	*len = DDTX_SHM_ADDR_LEN;
	return 0;
}

static bool shm_peer_alive(struct ddtx_wire_ep *wep, ddtx_peer_t peer)
{
	struct ddtx_shm_ep *ep = ddtx_shm_ep_of(wep);
	struct ddtx_shm_peer *p = ep ? ddtx_shm_peers_get(&ep->peers, peer) : NULL;

	return p && ddtx_shm_peer_check(p);
}

/* The peer is usable for traffic: mapped, its endpoint open, its process recently seen. */
static int peer_ready(struct ddtx_shm_peer *p)
{
	int ret;

	if (p->dead)
		return -FI_EIO;
	/* Mapped already (every send but the first): no call (23 instructions a send). */
	if (!p->mapped && (ret = ddtx_shm_peer_map(p)))
		return ret;
	if (!atomic_load_explicit(&p->ep_hdr->alive, memory_order_acquire)) {
		ddtx_shm_peer_mark_dead(p, "it closed its endpoint");
		return -FI_EIO;
	}
	if (ddtx_shm_now_ns() - p->last_check_ns > PEER_CHECK_NS && !ddtx_shm_peer_check(p))
		return -FI_EIO;
	return 0;
}


/* On a full ring: is its reader gone?  (Checked at most every PEER_FULL_CHECK_NS.) */
static bool full_ring_reader_gone(struct ddtx_shm_peer *p)
{
	if (ddtx_shm_now_ns() - p->last_check_ns < PEER_FULL_CHECK_NS)
		return false;
	return !ddtx_shm_peer_check(p);
}

/* The protocol's message type, as the fault plan filters on it (test builds). */
static inline int first_byte(const void *hdr, size_t hdr_len, const struct iovec *iov,
			     size_t count)
{
	if (hdr_len)
		return *(const uint8_t *)hdr;
	for (size_t i = 0; i < count; i++)
		if (iov[i].iov_len)
			return *(const uint8_t *)iov[i].iov_base;
	return -1;
}

static int shm_send(struct ddtx_wire_ep *wep, ddtx_peer_t peer, const void *hdr, size_t hdr_len,
		   const struct iovec *iov, size_t count)
{
	struct ddtx_shm_ep *ep = ddtx_shm_ep_of(wep);
	struct ddtx_shm_peer *p;
	size_t total = hdr_len;
	int ret;

	if (!ep || !(p = ddtx_shm_peers_get(&ep->peers, peer)) || (hdr_len && !hdr) ||
	    ddtx_iov_check(iov, count, ep->dom->caps.max_sge, &total)) {
		DDTX_WARN(FI_LOG_EP_DATA, "shm: send: bad argument (peer %u, %zu iov entries, "
			  "max_sge %zu)\n", peer, count, ep ? ep->dom->caps.max_sge : 0);
		return -FI_EINVAL;
	}
	if (total > ep->dom->caps.max_send_size) {
		DDTX_WARN(FI_LOG_EP_DATA, "shm: send of %zu bytes exceeds max_send_size %zu\n",
			  total, ep->dom->caps.max_send_size);
		return -FI_EMSGSIZE;
	}
	ret = peer_ready(p);
	if (ret)
		return ret;
	if (total > p->ring.slot_size - DDTX_SHM_SLOT_HDR) {
		DDTX_WARN(FI_LOG_EP_DATA, "shm: send of %zu bytes exceeds the peer's slots (%zu)\n",
			  total, (size_t)p->ring.slot_size - DDTX_SHM_SLOT_HDR);
		return -FI_EMSGSIZE;
	}
	int type = first_byte(hdr, hdr_len, iov, count);
	struct ddtx_shm_fault f = ddtx_shm_fault_hit(DDTX_SHM_FP_SEND, type);
	if (f.action == DDTX_SHM_FA_DIE)
		ddtx_shm_fault_die("before posting a message");
	if (ddtx_shm_fault_window(DDTX_SHM_FA_FULL))
		return -FI_EAGAIN;
	ret = ddtx_shm_ring_push(&p->ring, &ep->addr, hdr, hdr_len, iov, count, total);
	if (ret == -FI_EAGAIN)
		ddtx_shm_fault_unhit(DDTX_SHM_FP_SEND, type);   /* the retry is this message */
	if (ret == -FI_EAGAIN && full_ring_reader_gone(p))
		return -FI_EIO;                  /* do not spin on the full ring of a dead peer */
	if (!ret && f.action == DDTX_SHM_FA_DIE_AFTER)
		ddtx_shm_fault_die("after posting a message");
	return ret;
}

static int shm_send_claim(struct ddtx_wire_ep *wep, ddtx_peer_t peer, size_t min_len,
			 struct ddtx_wire_send_buf *buf)
{
	struct ddtx_shm_ep *ep = ddtx_shm_ep_of(wep);
	struct ddtx_shm_peer *p;
	struct ddtx_shm_slot_hdr *slot;
	uint64_t pos;
	int ret;

	if (!ep || !buf || !(p = ddtx_shm_peers_get(&ep->peers, peer)))
		return -FI_EINVAL;
	ret = peer_ready(p);
	if (ret)
		return ret;
	size_t cap = DDTX_MIN(ep->dom->caps.max_send_size, p->ring.slot_size - DDTX_SHM_SLOT_HDR);
	if (min_len > cap)
		return -FI_EMSGSIZE;
	if (ddtx_shm_fault_window(DDTX_SHM_FA_FULL))
		return -FI_EAGAIN;
	ret = ddtx_shm_ring_claim(&p->ring, &ep->addr, &slot, &pos);
	if (ret == -FI_EAGAIN && full_ring_reader_gone(p))
		return -FI_EIO;
	if (ret)
		return ret;
	buf->data = (uint8_t *)slot + DDTX_SHM_SLOT_HDR;
	buf->cap = cap;
	buf->wire_priv = slot;
	buf->wire_pos = pos;
	return 0;
}

/* A full ring of a reader that is gone is "room": the send then reports the peer gone. */
static bool shm_send_room(struct ddtx_wire_ep *wep, ddtx_peer_t peer)
{
	struct ddtx_shm_ep *ep = ddtx_shm_ep_of(wep);
	struct ddtx_shm_peer *p;
	if (!ep || !(p = ddtx_shm_peers_get(&ep->peers, peer)) || p->dead || !p->mapped)
		return true;
	return !ddtx_shm_ring_full(&p->ring) || full_ring_reader_gone(p);
}

static void shm_send_commit(struct ddtx_wire_ep *wep, struct ddtx_wire_send_buf *buf, size_t len)
{
	struct ddtx_shm_ep *ep = ddtx_shm_ep_of(wep);
	/* die here leaves a claimed slot never published: the ring skips it after a grace */
	struct ddtx_shm_fault f = ddtx_shm_fault_hit(DDTX_SHM_FP_SEND,
						     len ? *(const uint8_t *)buf->data : -1);
	if (f.action == DDTX_SHM_FA_DIE)
		ddtx_shm_fault_die("before publishing a claimed message");
	ddtx_shm_ring_publish(buf->wire_priv, buf->wire_pos, &ep->addr, DDTX_MIN(len, buf->cap));
	if (f.action == DDTX_SHM_FA_DIE_AFTER)
		ddtx_shm_fault_die("after posting a message");
}

static int shm_rma_check(struct ddtx_wire_ep *wep, ddtx_peer_t peer, enum ddtx_key_space space,
			uint64_t rkey, uint64_t raddr, size_t len, bool write)
{
	struct ddtx_shm_ep *ep = ddtx_shm_ep_of(wep);
	struct ddtx_shm_peer *p;
	size_t rcount = 0;
	int ret;

	if (!ep || !(p = ddtx_shm_peers_get(&ep->peers, peer)))
		return -FI_EINVAL;
	if (!len)
		return 0;
	ret = peer_ready(p);
	if (ret)
		return ret;
	return ddtx_shm_remote_keytab_translate(&p->keys, (uint32_t)space, rkey, raddr, len,
						write ? DDTX_ACC_REMOTE_WRITE : DDTX_ACC_REMOTE_READ,
						&ep->riov, &ep->riov_cap, &rcount);
}

static int cq_reserve(struct ddtx_shm_ep *ep)
{
	struct ddtx_shm_compl *v;
	size_t ncap;

	if (ep->cq_count < ep->cq_cap)
		return 0;
	ncap = ep->cq_cap ? 2 * ep->cq_cap : 64;
	v = malloc(ncap * sizeof(*v));
	if (!v)
		return -FI_ENOMEM;
	for (size_t i = 0; i < ep->cq_count; i++)
		v[i] = ep->cq[(ep->cq_head + i) % ep->cq_cap];
	free(ep->cq);
	ep->cq = v;
	ep->cq_cap = ncap;
	ep->cq_head = 0;
	return 0;
}

static void cq_push(struct ddtx_shm_ep *ep, void *ctx, int status)
{
	ep->cq[(ep->cq_head + ep->cq_count) % ep->cq_cap] = (struct ddtx_shm_compl){ ctx, status };
	ep->cq_count++;
}

/* The copy, the local side through device_view's door where the domain has device keys. */
static int dma(const struct ddtx_shm_domain *dom, pid_t pid, bool write,
	       const struct iovec *local, size_t lcount, const struct iovec *remote, size_t rcount,
	       size_t len)
{
	if (!dom->caps.device_keys || !lcount)
		return ddtx_shm_dma(pid, write, local, lcount, remote, rcount, len);
	/* Each local entry lies in one allocation (the protocols' check); one that does not stays
	 * as it is and fails the work request as a bad address would. */
	struct iovec view[lcount];
	for (size_t i = 0; i < lcount; i++) {
		size_t vlen = local[i].iov_len;
		void *v = ddtx_hmem_host_view(local[i].iov_base, &vlen);
		view[i].iov_base = v && vlen == local[i].iov_len ? v : local[i].iov_base;
		view[i].iov_len = local[i].iov_len;
	}
	return ddtx_shm_dma(pid, write, view, lcount, remote, rcount, len);
}

static int rma(struct ddtx_shm_ep *ep, ddtx_peer_t peer, const struct iovec *local,
	       size_t lcount, enum ddtx_key_space space, uint64_t rkey, uint64_t raddr, size_t len,
	       void *wr_context, bool write, bool from_mkey)
{
	const char *op = write ? "write" : "read";
	/* One work request gathers max_sge SGEs, or the entries of one mkey. */
	size_t max_local = from_mkey ? ep->dom->caps.max_mkey_entries : ep->dom->caps.max_sge;
	struct ddtx_shm_peer *p;
	size_t total = 0, rcount = 0;
	int ret, status;

	if (!ep || !(p = ddtx_shm_peers_get(&ep->peers, peer)) ||
	    ddtx_iov_check(local, lcount, max_local, &total) ||
	    (space != DDTX_KEY_APP && space != DDTX_KEY_INTERNAL)) {
		DDTX_WARN(FI_LOG_EP_DATA, "shm: %s: bad argument (peer %u, %zu local entries, "
			  "max_sge %zu)\n", op, peer, lcount, ep ? ep->dom->caps.max_sge : 0);
		return -FI_EINVAL;
	}
	if (total != len || len > ep->dom->caps.max_rma_size) {
		DDTX_WARN(FI_LOG_EP_DATA, "shm: %s: local iov holds %zu bytes for a %zu-byte "
			  "transfer (max %zu)\n", op, total, len, ep->dom->caps.max_rma_size);
		return -FI_EINVAL;
	}
	ret = cq_reserve(ep);
	if (ret)
		return ret;

	if (!len) {
		status = 0;                      /* like an HCA: no key check for zero bytes */
		goto done;
	}
	status = peer_ready(p);
	if (status) {
		if (status != -FI_EIO)
			return status;           /* local resource trouble: nothing posted */
		goto done;
	}
	status = ddtx_shm_remote_keytab_translate(&p->keys, (uint32_t)space, rkey, raddr, len,
						  write ? DDTX_ACC_REMOTE_WRITE :
							  DDTX_ACC_REMOTE_READ,
						  &ep->riov, &ep->riov_cap, &rcount);
	if (!status && ddtx_shm_fault_hit(DDTX_SHM_FP_KEY, -1).action == DDTX_SHM_FA_REVOKE)
		status = -FI_EKEYREJECTED;       /* as if the owner had just removed the key */
	if (status == -FI_ENOMEM)
		return status;
	if (status) {
		DDTX_INFO(FI_LOG_EP_DATA, "shm: %s of %zu bytes at %#llx with key %#llx (space %d) "
			  "to peer %u refused: %s\n", op, len, (unsigned long long)raddr,
			  (unsigned long long)rkey, (int)space, peer, fi_strerror(-status));
		goto done;
	}
	status = dma(ep->dom, (pid_t)p->addr.pid, write, local, lcount, ep->riov, rcount, len);
	if (status == -DDTX_SHM_ESRCH || status == -FI_EPERM) {
		/* Only a peer whose process is really gone is dead; a live one that refused this
		 * access fails the work request alone, so both sides of the transfer learn of it
		 * (marked dead, the peer's control messages were dropped and its receive hung). */
		if (ddtx_shm_peer_check(p))
			DDTX_WARN(FI_LOG_EP_DATA, "shm: %s to live peer pid %u refused: %s\n", op,
				  p->addr.pid, fi_strerror(-status));
		status = status == -FI_EPERM ? -FI_EACCES : -FI_EIO;
	}
done:
	cq_push(ep, wr_context, status);
	return 0;
}

static int shm_write(struct ddtx_wire_ep *wep, ddtx_peer_t peer, const struct iovec *local,
		    size_t lcount, enum ddtx_key_space space, uint64_t rkey, uint64_t raddr,
		    size_t len, void *wr_context)
{
	struct ddtx_shm_ep *ep = ddtx_shm_ep_of(wep);
	return rma(ep, peer, local, lcount, space, rkey, raddr, len, wr_context, true, false);
}

static int shm_read(struct ddtx_wire_ep *wep, ddtx_peer_t peer, const struct iovec *local,
		   size_t lcount, enum ddtx_key_space space, uint64_t rkey, uint64_t raddr,
		   size_t len, void *wr_context)
{
	struct ddtx_shm_ep *ep = ddtx_shm_ep_of(wep);
	return rma(ep, peer, local, lcount, space, rkey, raddr, len, wr_context, false, false);
}

/* The local side of a UMR write: the mkey's entries from loff, as an iov list for CMA. */
static int shm_write_mkey(struct ddtx_wire_ep *wep, ddtx_peer_t peer,
			  const struct ddtx_wire_mkey *local, uint64_t loff,
			  enum ddtx_key_space space, uint64_t rkey, uint64_t raddr, size_t len,
			  void *wr_context)
{
	struct ddtx_shm_ep *ep = ddtx_shm_ep_of(wep);
	const struct ddtx_shm_mkey *mk = local->wire_priv;
	if (!mk || !local->nentries || loff > local->len || len > local->len - loff)
		return -FI_EINVAL;
	struct iovec liov[local->nentries];
	size_t n = 0;
	uint64_t pos = 0;
	for (size_t i = 0; i < local->nentries && pos < loff + len; i++) {
		uint64_t elen = mk->entries[i].len;
		if (pos + elen > loff) {
			uint64_t skip = loff > pos ? loff - pos : 0;
			uint64_t take = DDTX_MIN(elen - skip, loff + len - (pos + skip));
			liov[n].iov_base = (void *)(uintptr_t)(mk->entries[i].addr + skip);
			liov[n].iov_len = take;
			n++;
		}
		pos += elen;
	}
	return rma(ep, peer, liov, n, space, rkey, raddr, len, wr_context, true, true);
}

/* The completions queued so far (their callbacks may queue more: those wait for the next
 * round, so a chain of synchronous operations cannot recurse). */
static inline int deliver_completions(struct ddtx_shm_ep *ep)
{
	int n = 0;
	for (size_t k = ep->cq_count; k; k--) {
		struct ddtx_shm_compl c = ep->cq[ep->cq_head];
		ep->cq_head = (ep->cq_head + 1) % ep->cq_cap;
		ep->cq_count--;
		if (ep->handlers.on_complete)
			ep->handlers.on_complete(ep->handler_arg, c.ctx, c.status);
		n++;
	}
	return n;
}

/*
 * The peer a message's source address names, checked and admitted (mapped) the first time.  The
 * blob of the last source is kept: a stream from one peer is compared with it, 48 bytes, instead
 * of checked and looked up again (a hundred instructions of a small message's 3200, callgrind,
 * nc_overhead 8 B).  A blob equal to one admitted before gets the same answer: the check reads
 * only the blob and a peer's handle never changes.
 */
static int source_peer(struct ddtx_shm_ep *ep, const struct ddtx_shm_addr *src,
		       ddtx_peer_t *handle)
{
	if (ep->last_src_ok && !memcmp(src, &ep->last_src, sizeof(*src))) {
		*handle = ep->last_src_peer;
		return 0;
	}
	int ret = ddtx_shm_addr_check(src, sizeof(*src));
	if (!ret)
		ret = ddtx_shm_peers_admit(&ep->peers, src, handle);
	if (!ret) {
		ep->last_src = *src;
		ep->last_src_peer = *handle;
		ep->last_src_ok = true;
	}
	return ret;
}

static int shm_ep_progress(struct ddtx_wire_ep *wep)
{
	struct ddtx_shm_ep *ep = ddtx_shm_ep_of(wep);
	struct ddtx_shm_slot_hdr *slot;
	struct ddtx_shm_addr src;
	ddtx_peer_t handle;
	uint8_t *msg;
	uint32_t len;
	int n = 0;

	if (!ep || ep->in_progress)
		return 0;
	ep->in_progress = true;

	n += deliver_completions(ep);

	for (uint32_t budget = ep->ring.nslots; budget; budget--) {
		if (ddtx_shm_fault_window(DDTX_SHM_FA_STALL))
			break;                   /* test: a consumer that stopped draining */
		enum ddtx_shm_pop r = ddtx_shm_ring_peek(&ep->ring, &ep->cons, &slot, &msg, &len);
		if (r == DDTX_SHM_POP_EMPTY)
			break;
		if (r == DDTX_SHM_POP_SKIP)
			continue;
		struct ddtx_shm_fault f = ddtx_shm_fault_hit(DDTX_SHM_FP_RECV, len ? *msg : -1);
		if (f.action == DDTX_SHM_FA_DIE)
			ddtx_shm_fault_die("on receiving a message");
		if (f.action == DDTX_SHM_FA_STALL)
			break;                   /* this message waits in the ring until the end */
		memcpy(&src, &slot->src, sizeof(src));
		int ret = source_peer(ep, &src, &handle);
		if (ret) {
			/* Warn about the first and then every 1000th: a flood must not flood the log. */
			if (ep->dropped++ % 1000 == 0)
				DDTX_WARN(FI_LOG_EP_DATA, "shm: dropping a message from pid %u: "
					  "source address refused: %s (%llu so far)\n",
					  src.pid, fi_strerror(-ret), (unsigned long long)ep->dropped);
		} else {
			if (ep->handlers.on_recv)
				ep->handlers.on_recv(ep->handler_arg, handle, msg, len);
			n++;
		}
		ddtx_shm_ring_release(&ep->ring, &ep->cons);
	}
	/* The messages above posted reads and writes, done already (CMA is synchronous): their
	 * completions now rather than at the next call (issue 12: a pulled receive was reported
	 * one application poll after its read). */
	if (ep->cq_count)
		n += deliver_completions(ep);
	ep->in_progress = false;
	return n;
}

const struct ddtx_wire_impl ddtx_shm_wire_impl = {
	.name = "shm",
	.available = NULL,               /* any Linux host */
	.cleanup_stale = ddtx_shm_cleanup_stale,
	.domain_open = shm_domain_open,
	.domain_close = shm_domain_close,
	.domain_caps = shm_domain_caps,
	.addr_check = shm_addr_check,
	.mr_reg = ddtx_shm_mr_reg,
	.mr_dereg = ddtx_shm_mr_dereg,
	.key_check = shm_key_check,
	.ep_open = shm_ep_open,
	.ep_close = shm_ep_close,
	.ep_getname = shm_ep_getname,
	.ep_bind = ddtx_shm_ep_bind,
	.name_resolve = ddtx_shm_name_resolve,
	.peer_insert = shm_peer_insert,
	.peer_addr = shm_peer_addr,
	.peer_alive = shm_peer_alive,
	.send = shm_send,
	.send_claim = shm_send_claim,
	.send_commit = shm_send_commit,
	.send_room = shm_send_room,
	.rma_check = shm_rma_check,
	.write = shm_write,
	.read = shm_read,
	.ep_progress = shm_ep_progress,
	.mkey_create = ddtx_shm_mkey_create,
	.mkey_destroy = ddtx_shm_mkey_destroy,
	.mkey_map = ddtx_shm_mkey_map,
	.mkey_invalidate = ddtx_shm_mkey_invalidate,
	.write_mkey = shm_write_mkey,
};
