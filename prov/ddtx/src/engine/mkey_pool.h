/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The mkey pool: multi-entry keys are slow to create on hardware (about 200 us each), so a
 * stock is created when the domain opens and a background thread refills it whenever a get
 * leaves it under half full.  The data path only takes and returns keys; it never creates one.
 */
#ifndef DDTX_MKEY_POOL_H
#define DDTX_MKEY_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "wire/wire.h"

struct ddtx_mkey_pool;

struct ddtx_mkey_pool_stats {
	size_t level;           /* keys in stock now */
	size_t capacity;        /* target stock */
	uint64_t created;       /* keys created in all */
	uint64_t refills;       /* times the refill thread started topping the stock up */
	uint64_t empty;         /* gets that found the stock empty */
};

/* capacity 0, or a wire without multi-entry keys, gives a pool that is always empty. */
int ddtx_mkey_pool_open(struct ddtx_wire_domain *wire, size_t capacity,
			struct ddtx_mkey_pool **out);
/* Destroys the stock; every key taken must have been put back. */
void ddtx_mkey_pool_close(struct ddtx_mkey_pool *pool);
/* A key (unmapped), or NULL when the stock is empty (the caller falls back). */
struct ddtx_wire_mkey *ddtx_mkey_pool_get(struct ddtx_mkey_pool *pool);
/* Return a key; it is invalidated first if still mapped. */
void ddtx_mkey_pool_put(struct ddtx_mkey_pool *pool, struct ddtx_wire_mkey *mkey);
size_t ddtx_mkey_pool_level(struct ddtx_mkey_pool *pool);
void ddtx_mkey_pool_stats(struct ddtx_mkey_pool *pool, struct ddtx_mkey_pool_stats *st);

#endif /* DDTX_MKEY_POOL_H */
