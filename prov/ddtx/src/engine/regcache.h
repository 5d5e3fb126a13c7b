/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Registration cache: registered memory regions of one wire domain (key space
 * DDTX_KEY_INTERNAL), kept in an interval tree, reference counted, evicted least recently used
 * beyond a byte / count limit, and invalidated when their memory is unmapped or returned to the
 * system (engine/memmon.h), so that a freed and re-mapped address never reaches a stale key.
 *
 * Threads: every function may be called from any thread (main and registration thread); one
 * mutex guards the cache.  Wire registration and deregistration, monitor (un)watching and
 * listener calls all happen with that mutex released, so a slow registration never blocks
 * another thread's hit.
 *
 * Region life cycle (reg->state, read with ddtx_reg_state()):
 *   LIVE         in the cache; get() may return it.
 *   UNCACHED     memory the monitor cannot watch (SysV shm, file mappings, another userfaultfd,
 *                no monitor at all): registered for this get only, never returned by another
 *                get, deregistered at its last put.  Never reported to the listener.
 *   EVICTED      left the cache unreferenced under the size/count limit (deregistered at once).
 *   MERGED       replaced by a larger region covering it; still registered and valid for its
 *                holders until their last put.
 *   INVALIDATED  its memory went away (munmap, mremap, madvise, free, brk shrink, ...): its key
 *                must not be used again; deregistered at its last put.  A MERGED region whose
 *                memory goes away while still referenced becomes INVALIDATED too.
 *
 * Listener: called once for every region that leaves the cache (EVICTED, MERGED or
 * INVALIDATED from LIVE), and once more if a region that left MERGED while referenced later
 * becomes INVALIDATED (so a holder may keep a MERGED region and still hear of its death; treat
 * calls as idempotent).  Called from get / put / flush / invalidate on the calling user
 * thread, never from the monitor thread, with the cache mutex released: the listener may call
 * any function of this cache except close, and may take its own locks (do not call into the
 * cache while holding a lock the listener takes).  The region's mr is still registered during
 * the call and the pointer is valid until the call returns (or until the holder's last put, if
 * the dependent holds references).  UNCACHED regions are never reported; nothing is reported
 * at close.
 *
 * Generation: ddtx_regcache_generation() increases whenever a region may have become
 * INVALIDATED (it counts monitor events as soon as they are read, before any flush), so a
 * dependent that recorded the value can skip revalidation while it is unchanged; when it has
 * changed, call ddtx_regcache_flush() and check ddtx_reg_valid() of the regions it uses.
 *
 * Without a monitor (params.monitor false, userfaultfd unavailable, or in a forked child) every
 * region is UNCACHED: each get registers, each last put deregisters.  Nothing stale can be
 * returned, but a holder keeping a reference across the application's free() of that memory
 * keeps a stale key: do not keep long-lived references when ddtx_regcache_monitored() is false.
 */
#ifndef DDTX_REGCACHE_H
#define DDTX_REGCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/itree.h"
#include "common/list.h"
#include "engine/memmon.h"
#include "wire/wire.h"

enum ddtx_reg_state {
	DDTX_REG_LIVE = 0,
	DDTX_REG_UNCACHED,
	DDTX_REG_EVICTED,
	DDTX_REG_MERGED,
	DDTX_REG_INVALIDATED,
};

struct ddtx_regcache;

struct ddtx_reg {                       /* one registered region, public read-only fields */
	uintptr_t addr;                 /* page-aligned start actually registered */
	size_t len;                     /* page-aligned length */
	uint32_t access;                /* DDTX_ACC_* it was registered with */
	struct ddtx_wire_mr *mr;        /* the wire registration (key space DDTX_KEY_INTERNAL) */

	struct {                        /* private to regcache.c */
		struct ddtx_itree_node node;    /* in the index (LIVE) or the retired tree */
		struct ddtx_list_entry lru;     /* LIVE and unreferenced */
		struct ddtx_list_entry all;     /* every region the cache owns */
		struct ddtx_list_entry link;    /* a batch: candidates, deferred work */
		struct ddtx_list_entry scan;    /* a scan under the lock */
		struct ddtx_memmon_watch watch;
		uint64_t refs;
		int state;                      /* enum ddtx_reg_state (atomic) */
		int reported;                   /* state the listener last saw */
		uint8_t where;
		bool doomed, notify, tempref, dereg, orphan;
	} priv;
};

struct ddtx_regcache_stats {
	uint64_t hits, misses, evictions, invalidations, registered_bytes, registered_count;
	uint64_t merges;                /* regions replaced by a larger one */
	uint64_t uncached;              /* gets served with an UNCACHED region */
	uint64_t generation;            /* ddtx_regcache_generation() */
	uint64_t cached_count;          /* LIVE regions */
};

struct ddtx_regcache_params {
	size_t max_bytes;               /* registered bytes beyond which LRU regions go; 0 = no limit */
	size_t max_count;               /* registered regions beyond which LRU regions go; 0 = no limit */
	bool monitor;                   /* watch for unmapped memory (false: every region UNCACHED) */
};

int ddtx_regcache_open(struct ddtx_wire_domain *wire, const struct ddtx_regcache_params *p,
		       struct ddtx_regcache **out);
/* Deregisters everything (regions still referenced are deregistered too, with a warning). */
void ddtx_regcache_close(struct ddtx_regcache *rc);

/*
 * Find a LIVE region covering [addr, addr+len) with at least `access`, or register one
 * (page-aligned; merged with the chain of overlapping/adjacent LIVE regions that nobody
 * references when the union is at most max(len, 1 MiB) bigger than the request; a region in
 * use is never merged, it would stay registered twice), and take a reference.  Returns 0, -FI_EINVAL (NULL,
 * zero length, wrap-around, unknown access bits), -FI_ENOMEM, -FI_EAGAIN (the memory kept
 * being unmapped while it was being registered), or the wire's error.
 */
int ddtx_regcache_get(struct ddtx_regcache *rc, const void *addr, size_t len, uint32_t access,
		      struct ddtx_reg **out);
void ddtx_regcache_put(struct ddtx_regcache *rc, struct ddtx_reg *reg);

void ddtx_regcache_set_listener(struct ddtx_regcache *rc,
				void (*on_invalidate)(void *arg, const struct ddtx_reg *reg),
				void *arg);
/* Apply pending invalidations now (also done at the start of every get and put). */
void ddtx_regcache_flush(struct ddtx_regcache *rc);
/* Invalidate every region overlapping [addr, addr+len) as if its memory had gone away. */
void ddtx_regcache_invalidate(struct ddtx_regcache *rc, const void *addr, size_t len);
void ddtx_regcache_stats(struct ddtx_regcache *rc, struct ddtx_regcache_stats *st);
/* Lock-free; see "Generation" above. */
uint64_t ddtx_regcache_generation(struct ddtx_regcache *rc);
/* Whether a memory monitor backs this cache (false: every region is UNCACHED). */
bool ddtx_regcache_monitored(struct ddtx_regcache *rc);

static inline enum ddtx_reg_state ddtx_reg_state(const struct ddtx_reg *reg)
{
	return (enum ddtx_reg_state)__atomic_load_n(&reg->priv.state, __ATOMIC_ACQUIRE);
}

/* False once the region's memory has gone away (meaningful after a flush). */
static inline bool ddtx_reg_valid(const struct ddtx_reg *reg)
{
	return ddtx_reg_state(reg) != DDTX_REG_INVALIDATED;
}

#endif /* DDTX_REGCACHE_H */
