/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_addr <-> wire peer.  The owner's AV maps fi_addr to address blobs; the wire endpoint maps
 * blobs to peer handles.  Both directions are cached per endpoint and dropped when the AV
 * removes entries (its generation changes), so a removed fi_addr never reaches the peer it named.
 */
#include <stdlib.h>
#include <string.h>

#include "proto/proto_internal.h"

/* The AV removed entries since the caches were filled: they are emptied. */
static void forget(struct ddtx_proto_ep *pep, uint64_t gen)
{
	for (size_t i = 0; i < pep->peer_of_addr_len; i++)
		pep->peer_of_addr[i] = DDTX_PEER_INVALID;
	for (size_t i = 0; i < pep->addr_of_peer_len; i++)
		pep->addr_of_peer[i] = FI_ADDR_NOTAVAIL;
	pep->av_generation = gen;
}

static void revalidate(struct ddtx_proto_ep *pep)
{
	const uint64_t *g = pep->attr.av_generation;
	uint64_t gen = g ? __atomic_load_n(g, __ATOMIC_RELAXED) : 0;
	if (pep->av_generation != gen)
		forget(pep, gen);
}

/* Grow a cache array to hold index idx; new slots get fill (4 or 8 byte elements). */
static void *cache_grow(void *arr, size_t *len, size_t idx, size_t elem, uint64_t fill)
{
	size_t n = DDTX_MAX(idx + 1, 2 * *len);
	uint8_t *p = realloc(arr, n * elem);

	if (!p)
		return NULL;
	for (size_t i = *len; i < n; i++)
		memcpy(p + i * elem, &fill, elem); /* little and big endian: fill is all ones */
	*len = n;
	return p;
}

int ddtx_peer_lookup(struct ddtx_proto_ep *pep, fi_addr_t addr, ddtx_peer_t *peer)
{
	const void *blob;
	size_t len;
	ddtx_peer_t p;
	int ret;

	if (!pep->wire)
		return -FI_EINVAL;
	revalidate(pep);
	if (addr < pep->peer_of_addr_len && pep->peer_of_addr[addr] != DDTX_PEER_INVALID) {
		*peer = pep->peer_of_addr[addr];
		return 0;
	}
	if (pep->owner_ops->av_lookup(pep->owner, addr, &blob, &len)) {
		DDTX_INFO(FI_LOG_EP_DATA, "fi_addr %llu is not in the AV\n",
			  (unsigned long long)addr);
		return -FI_EINVAL;
	}
	ret = ddtx_wire_peer_insert(pep->wire, blob, len, &p);
	if (ret)
		return ret;
	if (addr >= pep->peer_of_addr_len) {
		ddtx_peer_t *c = cache_grow(pep->peer_of_addr, &pep->peer_of_addr_len, addr,
					    sizeof(*c), UINT64_MAX);
		if (c)
			pep->peer_of_addr = c;
	}
	if (addr < pep->peer_of_addr_len)
		pep->peer_of_addr[addr] = p;
	*peer = p;
	return 0;
}

fi_addr_t ddtx_addr_lookup(struct ddtx_proto_ep *pep, ddtx_peer_t peer)
{
	uint8_t blob[256];
	size_t len = sizeof(blob);
	fi_addr_t fa;

	if (!pep->wire || peer == DDTX_PEER_INVALID)
		return FI_ADDR_NOTAVAIL;
	revalidate(pep);
	if (peer < pep->addr_of_peer_len && pep->addr_of_peer[peer] != FI_ADDR_NOTAVAIL)
		return pep->addr_of_peer[peer];
	if (ddtx_wire_peer_addr(pep->wire, peer, blob, &len))
		return FI_ADDR_NOTAVAIL;
	fa = pep->owner_ops->av_reverse(pep->owner, blob, len);
	/* Only hits are cached: the peer may be inserted into the AV later. */
	if (fa == FI_ADDR_NOTAVAIL)
		return fa;
	if (peer >= pep->addr_of_peer_len) {
		fi_addr_t *c = cache_grow(pep->addr_of_peer, &pep->addr_of_peer_len, peer,
					  sizeof(*c), UINT64_MAX);
		if (c)
			pep->addr_of_peer = c;
	}
	if (peer < pep->addr_of_peer_len)
		pep->addr_of_peer[peer] = fa;
	return fa;
}

void ddtx_addr_cache_fini(struct ddtx_proto_ep *pep)
{
	free(pep->peer_of_addr);
	free(pep->addr_of_peer);
	pep->peer_of_addr = NULL;
	pep->addr_of_peer = NULL;
	pep->peer_of_addr_len = pep->addr_of_peer_len = 0;
}

int ddtx_proto_ep_bind(struct ddtx_proto_ep *pep, const struct ddtx_name_addr *name)
{
	return pep && pep->wire ? ddtx_wire_ep_bind(pep->wire, name) : -FI_EINVAL;
}

int ddtx_proto_name_resolve(struct ddtx_proto_domain *pd, const struct ddtx_name_addr *name,
			    int timeout_ms, void *addr, size_t *len)
{
	return pd ? ddtx_wire_name_resolve(pd->wire, name, timeout_ms, addr, len) : -FI_EINVAL;
}
