/* SPDX-License-Identifier: BSD-2-Clause */
#include "common/hindex.h"

#include <stdlib.h>
#include <string.h>
#include <rdma/fi_errno.h>

void ddtx_hindex_fini(struct ddtx_hindex *h)
{
	free(h->slot);
	ddtx_hindex_init(h);
}

static void put(uint32_t *slot, uint32_t mask, uint64_t hash, uint32_t pos)
{
	uint32_t s = (uint32_t)hash & mask;
	while (slot[s])
		s = (s + 1) & mask;
	slot[s] = pos + 1;
}

int ddtx_hindex_reserve(struct ddtx_hindex *h, uint32_t entries, uint32_t npos,
			ddtx_hindex_hash_fn hash_of, const void *owner, bool force)
{
	uint64_t nslots = 16;
	uint32_t *slot, used = 0;

	if (!force && h->slot && 2 * (uint64_t)entries <= (uint64_t)h->mask + 1)
		return 0;
	while (nslots < 2 * (uint64_t)entries)
		nslots <<= 1;
	if (nslots > (1ull << 31))
		return -FI_ENOMEM;
	slot = calloc(nslots, sizeof(*slot));
	if (!slot)
		return -FI_ENOMEM;
	for (uint32_t pos = 0; pos < npos; pos++) {
		uint64_t hash;
		if (hash_of(owner, pos, &hash)) {
			put(slot, (uint32_t)(nslots - 1), hash, pos);
			used++;
		}
	}
	free(h->slot);
	h->slot = slot;
	h->mask = (uint32_t)(nslots - 1);
	h->used = used;
	return 0;
}

void ddtx_hindex_add(struct ddtx_hindex *h, uint64_t hash, uint32_t pos)
{
	put(h->slot, h->mask, hash, pos);
	h->used++;
}

/* FNV-1a over the bytes, finished by the 64-bit mixer so the low bits (the slot) are spread. */
uint64_t ddtx_hash_bytes(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return ddtx_hash_u64(h);
}
