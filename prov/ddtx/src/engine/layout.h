/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Layouts and the layout cache (LAH paper).  A layout is an iov list; its identity is a hash of
 * its entries relative to its base (lengths and offsets), so the same shape at the same base is
 * recognised in O(count) without any registration-cache lookup.  A cached layout carries its
 * summary (block count, minimum and average block), a use count, the registrations that make
 * it reachable by the wire, a ready flag set by the registration thread, and its window sets:
 * the local mkey cache of the UMR scheme, keyed by (layout, base, chunk).
 */
#ifndef DDTX_LAYOUT_H
#define DDTX_LAYOUT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "engine/iov.h"
#include "common/list.h"
#include "wire/wire.h"

struct ddtx_regcache;
struct ddtx_reg;
struct ddtx_mkey_pool;
struct ddtx_layout_cache;
struct ddtx_dataloop;

enum ddtx_layout_state {
	DDTX_LAYOUT_NEW = 0,     /* seen, not registered */
	DDTX_LAYOUT_QUEUED,      /* waiting for the registration thread */
	DDTX_LAYOUT_REGISTERING, /* being registered (by the thread, or inline when forced) */
	DDTX_LAYOUT_READY,       /* registered: zero copy possible */
	DDTX_LAYOUT_FAILED,      /* registration failed: PACK only */
};

/*
 * One UMR window set: the layout cut into windows of `chunk` bytes (the last one shorter), each
 * mapped onto an mkey.  `id` is unique for the life of the domain and names the set in a CTS;
 * `sent_to` remembers which peers already hold its key list (their remote mkey cache).
 */
struct ddtx_window_set {
	struct ddtx_list_entry entry;    /* ddtx_layout.wsets */
	struct ddtx_layout *layout;
	uint64_t id;
	size_t chunk;
	size_t n;
	struct ddtx_wire_mkey **mkeys;
	uint64_t *sent_to;               /* bitmap by wire peer */
	size_t sent_words;
	unsigned refs;                   /* transfers using it; never unmapped while > 0 */
};

struct ddtx_layout {
	uint64_t hash;
	uintptr_t base;
	struct iovec *iov;               /* the non-empty entries, absolute addresses */
	size_t count;
	size_t iov_cap;                  /* entries iov has room for */
	struct ddtx_layout_stats st;
	struct ddtx_iov_vec vec;         /* the entries are one vector (n > 0): its shape */
	uint64_t uses;
	_Atomic int state;               /* enum ddtx_layout_state */
	struct ddtx_reg **regs;          /* registrations covering the entries (READY) */
	size_t nregs;
	struct ddtx_list wsets;          /* struct ddtx_window_set */
	struct ddtx_dataloop *dl;        /* compiled form (dataloop.h), once dl_done; may be NULL */
	_Atomic bool dl_done;            /* compiled (or found irregular), or given by a handle */
	unsigned refs;                   /* users: transfers, the registration thread */
	bool dead;                       /* evicted or invalidated: freed at the last put */
	struct ddtx_layout *hash_next;
	struct ddtx_list_entry lru;
	struct ddtx_list_entry queue;    /* registration thread's queue */
};

struct ddtx_layout_cache_stats {
	uint64_t hits, misses, evictions, invalidations;
	uint64_t wset_hits, wset_misses, wset_evictions;
	uint64_t registered;             /* layouts the registration thread made ready */
	uint64_t reg_failures;
	uint64_t reg_ns;                 /* time the registration thread spent registering */
	size_t entries;
};

struct ddtx_layout_cache_params {
	size_t max_entries;              /* layouts kept (LRU beyond) */
	size_t max_blocks;               /* entries of their lists kept in all (LRU beyond) */
	size_t max_wsets;                /* window sets kept in all (LRU beyond) */
	size_t max_wset_keys;            /* mapped keys those sets hold in all (LRU beyond) */
	bool thread;                     /* register in a background thread (else inline) */
};

int ddtx_layout_cache_open(const struct ddtx_layout_cache_params *params,
			   struct ddtx_wire_domain *wire, struct ddtx_regcache *regcache,
			   struct ddtx_mkey_pool *pool, struct ddtx_layout_cache **out);
void ddtx_layout_cache_close(struct ddtx_layout_cache *lc);

/* Identity of an iov list: hash of (offset from base, length) of its non-empty entries. */
uint64_t ddtx_layout_hash(const struct iovec *iov, size_t count, uintptr_t *base);

/*
 * Find the cached layout of iov (hit: O(count), no registration lookups) or enter a new one.
 * Takes a reference; NULL only when out of memory.
 */
struct ddtx_layout *ddtx_layout_get(struct ddtx_layout_cache *lc, const struct iovec *iov,
				    size_t count, bool *hit);
/* The same, for a list ddtx_iov_scan found to be the vector `vec` (or NULL, or n 0): a
 * lookup in O(1) instead of hashing and comparing every entry. */
struct ddtx_layout *ddtx_layout_get_vec(struct ddtx_layout_cache *lc, const struct iovec *iov,
					size_t count, const struct ddtx_iov_vec *vec, bool *hit);
/* The cached layout of the vector vec, referenced, or NULL: nothing is entered on a miss (a
 * receive of a new buffer each time must not fill the cache with layouts it never uses). */
struct ddtx_layout *ddtx_layout_find_vec(struct ddtx_layout_cache *lc,
					 const struct ddtx_iov_vec *vec);
void ddtx_layout_put(struct ddtx_layout_cache *lc, struct ddtx_layout *l);
/* Another reference to a layout known to the caller (a handle's), counted as a hit; false
 * (no reference taken) once it has been evicted or invalidated. */
bool ddtx_layout_ref(struct ddtx_layout_cache *lc, struct ddtx_layout *l);

/*
 * The compiled form of a layout (dataloop.h), made on the first call and kept with it; NULL
 * when the layout has nothing regular (the iov walk serves it) or memory is short.  Valid, like
 * the layout, while the caller holds a reference.
 */
const struct ddtx_dataloop *ddtx_layout_dataloop(struct ddtx_layout_cache *lc,
						 struct ddtx_layout *l);
/* Give a layout the compiled form its handle was built with (relative to the layout's first
 * block), unless it has one already; takes a reference to dl. */
void ddtx_layout_adopt_dataloop(struct ddtx_layout_cache *lc, struct ddtx_layout *l,
				struct ddtx_dataloop *dl);

/* Is the layout registered?  (acquire: its regs are visible once this says yes) */
static inline bool ddtx_layout_ready(const struct ddtx_layout *l)
{
	return atomic_load_explicit(&((struct ddtx_layout *)l)->state, memory_order_acquire) ==
	       DDTX_LAYOUT_READY;
}

/* Ask the registration thread to register it (no-op unless NEW).  Never waits. */
void ddtx_layout_request(struct ddtx_layout_cache *lc, struct ddtx_layout *l);
/* Register now, on this thread (FI_DDTX_SCHEME forcing zero copy).  0 or an error. */
int ddtx_layout_register_now(struct ddtx_layout_cache *lc, struct ddtx_layout *l);

/*
 * The window set of a READY layout for `chunk`: cached (hit), or mapped now from the pool.
 * NULL if the pool cannot supply enough keys (the caller uses another scheme).  Takes a ref.
 */
struct ddtx_window_set *ddtx_layout_windows(struct ddtx_layout_cache *lc, struct ddtx_layout *l,
					    size_t chunk);
void ddtx_window_set_put(struct ddtx_layout_cache *lc, struct ddtx_window_set *ws);
/* Per-peer record of who already holds a window set's key list. */
bool ddtx_window_set_sent(const struct ddtx_window_set *ws, ddtx_peer_t peer);
void ddtx_window_set_mark_sent(struct ddtx_window_set *ws, ddtx_peer_t peer);

/*
 * Cut [0, total) of iov into windows of chunk bytes: fills out[] (up to max_out entries) with
 * the pieces of window `w`, returns their count, or 0 past the end.  Pure: shared by both sides.
 */
size_t ddtx_window_pieces(const struct iovec *iov, size_t count, size_t chunk, size_t w,
			  struct iovec *out, size_t max_out);

void ddtx_layout_cache_stats(struct ddtx_layout_cache *lc, struct ddtx_layout_cache_stats *st);
/* Process pending invalidations from the registration cache (called on the main path). */
void ddtx_layout_cache_flush(struct ddtx_layout_cache *lc);
/* Memory [addr, addr + len) went away although no monitor saw it (a CUDA allocation freed):
 * its registrations and every layout over it leave the caches. */
void ddtx_layout_cache_invalidate(struct ddtx_layout_cache *lc, const void *addr, size_t len);

#endif /* DDTX_LAYOUT_H */
