/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The layout cache's state, shared by its three files: layout.c (the cache: lookup, references,
 * eviction, invalidation), window_set.c (mkey windows over a layout) and layout_reg.c
 * (registering a layout's memory, and the registration thread).  Not for other floors.
 *
 * Locking: lc->lock guards the hash table, the LRU lists, reference counts, window sets and
 * the registration queue.  It is never held across a call into the registration cache (whose
 * invalidation listener takes lc->lock) nor across a wire mkey map (slow on hardware).
 */
#ifndef DDTX_ENGINE_LAYOUT_CACHE_H
#define DDTX_ENGINE_LAYOUT_CACHE_H

#include <pthread.h>

#include "common/rlock.h"

#include "engine/layout.h"

struct ddtx_layout_cache {
	struct ddtx_layout_cache_params params;
	struct ddtx_wire_domain *wire;
	const struct ddtx_wire_caps *caps;
	struct ddtx_regcache *regcache;
	struct ddtx_mkey_pool *pool;
	/* A futex word (common/rlock.h), not glibc's mutex: a contiguous rendezvous takes it four
	 * times and the registration cache's twice, 212 of its 7325 instructions in glibc's
	 * (callgrind, util/bench-instructions.sh -s 96K, 2026-11-30). */
	struct ddtx_rlock lock;
	struct ddtx_layout **buckets;
	size_t nbuckets;                 /* power of two */
	size_t entries;
	size_t blocks;                   /* entries of the cached layouts' lists */
	struct iovec *spare_list;        /* a freed layout's list, for the next new one */
	size_t spare_cap;
	struct ddtx_list lru;            /* layouts, most recent first */
	size_t wset_count;               /* window sets of all layouts */
	size_t wset_keys;                /* mapped keys those window sets hold */
	uint64_t next_wset_id;
	_Atomic uint64_t seen_gen;       /* registration-cache generation last synced with */
	bool monitored;                  /* unmapped memory is reported: layouts may be kept */
	struct ddtx_layout_cache_stats st;
	/* registration thread */
	pthread_t thread;
	bool thread_started, stop;
	struct ddtx_rlock_cond wake;
	struct ddtx_list queue;
};

/* window_set.c: give a window set's mkeys back and free it (lock not needed: ws is unlinked). */
void ddtx_wset_free(struct ddtx_layout_cache *lc, struct ddtx_window_set *ws);

/* layout_reg.c: the registration thread's body (arg: the cache). */
void *ddtx_layout_reg_thread(void *arg);

#endif /* DDTX_ENGINE_LAYOUT_CACHE_H */
