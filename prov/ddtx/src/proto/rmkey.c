/* SPDX-License-Identifier: BSD-2-Clause */
#include "proto/rmkey.h"

#include <stdlib.h>
#include <string.h>

void ddtx_rmkey_init(struct ddtx_rmkey_cache *c, size_t max)
{
	ddtx_list_init(&c->lru);
	c->count = 0;
	c->max = max ? max : 1;
	c->hits = c->misses = 0;
}

void ddtx_rmkey_fini(struct ddtx_rmkey_cache *c)
{
	struct ddtx_list_entry *it;
	while ((it = ddtx_list_pop_front(&c->lru)))
		free(ddtx_container_of(it, struct ddtx_rmkey_entry, lru));
	c->count = 0;
}

/* A linear scan: the cache holds a few hundred entries and is read once per UMR transfer. */
const struct ddtx_rmkey_entry *ddtx_rmkey_find(struct ddtx_rmkey_cache *c, ddtx_peer_t peer,
					       uint64_t wset_id)
{
	struct ddtx_list_entry *it, *tmp;
	ddtx_list_foreach_safe(&c->lru, it, tmp)
	{
		struct ddtx_rmkey_entry *e = ddtx_container_of(it, struct ddtx_rmkey_entry, lru);
		if (e->peer == peer && e->wset_id == wset_id) {
			ddtx_list_remove(&e->lru);
			ddtx_list_push_front(&c->lru, &e->lru);
			c->hits++;
			return e;
		}
	}
	c->misses++;
	return NULL;
}

void ddtx_rmkey_insert(struct ddtx_rmkey_cache *c, ddtx_peer_t peer, uint64_t wset_id,
		       size_t chunk, const uint64_t *keys, size_t n)
{
	struct ddtx_rmkey_entry *e = malloc(sizeof(*e) + n * sizeof(*keys));
	if (!e)
		return; /* the next CTS simply carries the list again */
	e->peer = peer;
	e->wset_id = wset_id;
	e->chunk = chunk;
	e->n = n;
	memcpy(e->keys, keys, n * sizeof(*keys));
	ddtx_list_push_front(&c->lru, &e->lru);
	if (++c->count > c->max) {
		struct ddtx_list_entry *last = c->lru.head.prev;
		ddtx_list_remove(last);
		free(ddtx_container_of(last, struct ddtx_rmkey_entry, lru));
		c->count--;
	}
}
