/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Device memory moved by the NIC itself (GPUDirect RDMA).  On a wire whose keys and local SGEs
 * reach CUDA device memory (caps.device_keys: verbs with dma-buf registration; in CI, the shm
 * wire through the driver stand-in's door), a rendezvous send from device buffers and a
 * receive into them go zero copy, SGL, UMR or a pull, straight between the application's
 * buffers: no host staging, no copy on either side.  The send's RTS says so (DDTX_HDR_DEVICE):
 * its receiver must not choose PACK, whose CPU copy cannot read device memory, and a CTS that
 * does is refused (peer_check.c).  What cannot go this way is staged (hmem_stage.c) as on any
 * other wire: eager messages, FI_INJECT, a receive whose sender packs, a registration the NIC
 * refuses.
 *
 * Registrations over device memory are cached as host ones are (the layout cache, the mkey
 * windows), but cuMemFree is invisible to the memory monitor: another allocation at the freed
 * addresses would find the old keys, and the NIC would move the freed pages.  So every direct
 * operation first checks each device allocation it touches against the buffer id recorded
 * here (the driver gives a new allocation a new one); a changed allocation, one overlapping
 * it, or one pushed out of this table takes its registrations and layouts out of the caches.
 */
#include "common/settings.h"
#include "engine/layout.h"
#include "hmem/hmem.h"
#include "proto/proto_internal.h"

bool ddtx_direct_possible(struct ddtx_proto_ep *pep)
{
	return ddtx_settings.hmem_direct && pep->caps->device_keys &&
	       ddtx_scheme_forced(&ddtx_settings, pep->caps) != FI_DDTX_SCHEME_PACK;
}

static void forget(struct ddtx_proto_ep *pep, struct ddtx_direct_alloc *e)
{
	ddtx_layout_cache_invalidate(pep->pd->layouts, (void *)(uintptr_t)e->base, e->size);
	e->size = 0;
}

static void guard_one(struct ddtx_proto_ep *pep, const struct ddtx_hmem_attr *a)
{
	struct ddtx_direct_alloc *t = pep->pd->direct_allocs;
	size_t slot = (a->range_base >> 12) % DDTX_PD_DIRECT_ALLOCS;
	if (a->iface != DDTX_HMEM_CUDA || !a->range_size)
		return;
	if (t[slot].size && t[slot].base == a->range_base && t[slot].size == a->range_size &&
	    t[slot].buffer_id == a->buffer_id)
		return; /* the allocation of the last direct operation here */
	/* New here: whatever the table knew over these addresses was freed since. */
	for (size_t i = 0; i < DDTX_PD_DIRECT_ALLOCS; i++) {
		if (t[i].size && t[i].base < a->range_base + a->range_size &&
		    a->range_base < t[i].base + t[i].size) {
			pep->pd->stats.hmem_direct_stale++;
			forget(pep, &t[i]);
		}
	}
	if (t[slot].size)
		forget(pep, &t[slot]); /* unremembered, its keys could outlive it unseen */
	t[slot] = (struct ddtx_direct_alloc){ a->range_base, a->range_size, a->buffer_id };
}

void ddtx_direct_guard(struct ddtx_proto_ep *pep, const struct iovec *iov, size_t count,
		       const struct ddtx_hmem_attr *attr, const struct ddtx_hmem_attr *one)
{
	if (!attr) {
		guard_one(pep, one);
		return;
	}
	const struct ddtx_hmem_attr *last = NULL;
	for (size_t i = 0; i < count; i++) {
		if (!iov[i].iov_len || (last && attr[i].range_base == last->range_base))
			continue;
		guard_one(pep, &attr[i]);
		last = &attr[i];
	}
}
