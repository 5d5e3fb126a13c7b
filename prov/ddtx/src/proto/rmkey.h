/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The remote mkey cache (UMR paper): per endpoint, the key lists of peers' window sets, so a
 * repeated CTS can omit its list.  Keyed by (peer, window-set id); ids are never reused by the
 * peer, so an entry can only be stale by being unused, and LRU eviction bounds the memory.
 */
#ifndef DDTX_RMKEY_H
#define DDTX_RMKEY_H

#include <stddef.h>
#include <stdint.h>

#include "common/list.h"
#include "wire/wire.h"

struct ddtx_rmkey_entry {
	struct ddtx_list_entry lru;
	ddtx_peer_t peer;
	uint64_t wset_id;
	size_t chunk;
	size_t n;
	uint64_t keys[];
};

struct ddtx_rmkey_cache {
	struct ddtx_list lru;            /* most recent first */
	size_t count, max;
	uint64_t hits, misses;
};

void ddtx_rmkey_init(struct ddtx_rmkey_cache *c, size_t max);
void ddtx_rmkey_fini(struct ddtx_rmkey_cache *c);
const struct ddtx_rmkey_entry *ddtx_rmkey_find(struct ddtx_rmkey_cache *c, ddtx_peer_t peer,
					       uint64_t wset_id);
void ddtx_rmkey_insert(struct ddtx_rmkey_cache *c, ddtx_peer_t peer, uint64_t wset_id,
		       size_t chunk, const uint64_t *keys, size_t n);

#endif /* DDTX_RMKEY_H */
