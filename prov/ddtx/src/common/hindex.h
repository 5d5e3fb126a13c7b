/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A hash index over a dense array: maps a key's 64-bit hash to the array positions whose key may
 * match, by open addressing with linear probing.  The caller owns the array and the keys and
 * compares them while walking the candidates, so one index serves blobs (AV addresses), uids
 * (wire peers) or anything else without copying keys into the table.  Slots hold position + 1
 * (0 = empty); the table keeps at most half of its slots used, so a probe ends in a few steps.
 * Positions are never removed one by one: an owner that drops entries rebuilds the index.
 * No locking: the owner serialises access.
 */
#ifndef DDTX_COMMON_HINDEX_H
#define DDTX_COMMON_HINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DDTX_HINDEX_END UINT32_MAX

struct ddtx_hindex {
	uint32_t *slot;
	uint32_t mask;                  /* slots - 1 (0 with no table yet) */
	uint32_t used;
};

/* The hash of position pos, or false if pos holds no entry (it is then left out). */
typedef bool (*ddtx_hindex_hash_fn)(const void *owner, uint32_t pos, uint64_t *hash);

static inline void ddtx_hindex_init(struct ddtx_hindex *h)
{
	h->slot = NULL;
	h->mask = 0;
	h->used = 0;
}

void ddtx_hindex_fini(struct ddtx_hindex *h);

/*
 * Make room for `entries` indexed positions: rebuilds (from positions 0..npos-1 through hash_of)
 * if the table would be more than half full, or always when force is set (after removals).
 * 0 or -FI_ENOMEM (the old table stays usable).
 */
int ddtx_hindex_reserve(struct ddtx_hindex *h, uint32_t entries, uint32_t npos,
			ddtx_hindex_hash_fn hash_of, const void *owner, bool force);

/* Index position pos under hash (room must have been reserved). */
void ddtx_hindex_add(struct ddtx_hindex *h, uint64_t hash, uint32_t pos);

/* Mix a 64-bit value into a well-spread hash; hash a byte string. */
static inline uint64_t ddtx_hash_u64(uint64_t v)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdull;
	v ^= v >> 33;
	v *= 0xc4ceb9fe1a85ec53ull;
	v ^= v >> 33;
	return v;
}
uint64_t ddtx_hash_bytes(const void *data, size_t len);

/*
 * Walk the candidates of a hash: first returns a position (or DDTX_HINDEX_END) and sets *cursor;
 * next continues from *cursor.  The caller compares keys and stops at its match.
 */
static inline uint32_t ddtx_hindex_next(const struct ddtx_hindex *h, uint32_t *cursor)
{
	if (!h->slot)
		return DDTX_HINDEX_END;
	uint32_t s = *cursor;
	uint32_t v = h->slot[s];
	if (!v)
		return DDTX_HINDEX_END;
	*cursor = (s + 1) & h->mask;
	return v - 1;
}

static inline uint32_t ddtx_hindex_first(const struct ddtx_hindex *h, uint64_t hash,
					 uint32_t *cursor)
{
	*cursor = (uint32_t)hash & h->mask;
	return ddtx_hindex_next(h, cursor);
}

#endif /* DDTX_COMMON_HINDEX_H */
