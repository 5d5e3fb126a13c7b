/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The layout cache: layouts by identity (entries relative to their base), references, eviction,
 * and invalidation when their memory goes away.  Locking: see layout_cache.h.
 */
#include "engine/layout.h"

#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include "common/log.h"
#include "common/clock.h"
#include "common/minmax.h"
#include "engine/dataloop.h"
#include "engine/mkey_pool.h"
#include "engine/regcache.h"
#include "engine/layout_cache.h"

/* Entries of all cached lists, by default: 256 MiB of them.  A stream of 32 MiB of 8-byte
 * blocks in 16384-entry lists, sent and received in turn, holds 8M entries on each side; a
 * bound of 4M made each message evict and rebuild a layout (2.5x slower, nc_bw). */
#define LAYOUT_BLOCKS_MAX ((size_t)1 << 24)

/* ---- identity ---- */

static inline uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
	h *= 0xBF58476D1CE4E5B9ull;
	return h ^ (h >> 31);
}

/* The identity of a vector list, from its shape alone (see identity()). */
static uint64_t vector_identity(size_t block, int64_t stride, size_t n)
{
	return mix(mix(mix(0x7665637400000000ull, block), (uint64_t)stride), n);
}

/* The identity of one block: its length (a list of one non-empty entry and empties too). */
static uint64_t one_block_identity(size_t len)
{
	return mix(0x636f6e7469670000ull, len);
}

/*
 * One pass computes the identity and the summary.  Four independent lanes (entries i mod 4)
 * keep the multiplier busy instead of waiting on one long dependency chain: a few cycles per
 * entry, which is the whole cost of a layout-cache hit besides the final comparison.  A list
 * whose non-empty entries are one vector gets the identity of its shape instead, so that a
 * caller who knows the shape already (ddtx_iov_scan) finds it without reading the list: a
 * 64 KiB message of 64 B blocks hashed and compared 1024 entries on each side (5.5% of a
 * perf profile of nc_bw -b 64).  *vecp: that shape (n 0 if none), relative to the base.
 */
static uint64_t identity(const struct iovec *iov, size_t count, uintptr_t *basep,
			 struct ddtx_layout_stats *st, struct ddtx_iov_vec *vecp)
{
	/* One block (every contiguous rendezvous, on both sides): its length is its shape. */
	if (count == 1 && iov[0].iov_len) {
		size_t len = iov[0].iov_len;
		if (basep)
			*basep = (uintptr_t)iov[0].iov_base;
		if (st)
			*st = (struct ddtx_layout_stats){.total = len, .nblocks = 1, .min_block = len,
							 .avg_block = len};
		if (vecp)
			*vecp = (struct ddtx_iov_vec){.base = iov[0].iov_base, .block = len};
		return one_block_identity(len);
	}
	const uint64_t k1 = 0x9E3779B97F4A7C15ull, k2 = 0xC2B2AE3D27D4EB4Full;
	uint64_t h[4] = {1, 2, 3, 4};
	uintptr_t base = 0, prev = 0, vstride = 0, off_vec = 0;
	size_t n = 0, total = 0, min = 0, len0 = 0;
	for (size_t i = 0; i < count; i++) {
		size_t len = iov[i].iov_len;
		if (!len)
			continue;
		uintptr_t a = (uintptr_t)iov[i].iov_base;
		if (!n) {
			base = prev = a;
			len0 = len;
		}
		uintptr_t d = a - prev;
		if (n == 1)
			vstride = d;
		off_vec |= (len ^ len0) | (d - vstride);
		prev = a;
		uint64_t v = ((uint64_t)(a - base) * k1) ^ len;
		uint64_t *lane = &h[n & 3];
		*lane = (*lane ^ v) * k2;
		*lane ^= *lane >> 29;
		total += len;
		if (!min || len < min)
			min = len;
		n++;
	}
	if (basep)
		*basep = base;
	if (st) {
		st->total = total;
		st->nblocks = n;
		st->min_block = min;
		st->avg_block = n ? total / n : 0;
	}
	if (n == 1)
		return one_block_identity(len0);
	bool vec = n >= 2 && !off_vec;
	if (vecp)
		*vecp = (struct ddtx_iov_vec){.base = (uint8_t *)base, .block = len0,
					      .stride = (int64_t)vstride, .n = vec ? n : 0};
	if (vec)
		return vector_identity(len0, (int64_t)vstride, n);
	return mix(mix(mix(h[0], h[1]), h[2]), h[3] ^ n);
}

uint64_t ddtx_layout_hash(const struct iovec *iov, size_t count, uintptr_t *basep)
{
	return identity(iov, count, basep, NULL, NULL);
}

static size_t bucket_of(const struct ddtx_layout_cache *lc, uint64_t hash, uintptr_t base)
{
	return (size_t)mix(hash, base) & (lc->nbuckets - 1);
}

/* Does the cached layout hold exactly the non-empty entries of iov? */
static bool same_entries(const struct ddtx_layout *l, const struct iovec *iov, size_t count)
{
	/* As many entries as the layout's non-empty ones: equal only if no entry is empty and all
	 * match, which one memcmp decides (vectorised; the entry-by-entry loop below was 3.2% of
	 * a perf profile of 64 B blocks over the ofi wire, 1024-entry lists). */
	if (count == 1 && l->count == 1)
		return l->iov[0].iov_base == iov[0].iov_base && l->iov[0].iov_len == iov[0].iov_len;
	if (count == l->count)
		return !memcmp(l->iov, iov, count * sizeof(*iov));
	size_t j = 0;
	for (size_t i = 0; i < count; i++) {
		if (!iov[i].iov_len)
			continue;
		if (j == l->count || l->iov[j].iov_base != iov[i].iov_base ||
		    l->iov[j].iov_len != iov[i].iov_len)
			return false;
		j++;
	}
	return j == l->count;
}


/* Release what registration gave a layout (lock not held; l is private to the caller). */
static void unregister_layout(struct ddtx_layout_cache *lc, struct ddtx_layout *l)
{
	for (size_t i = 0; i < l->nregs; i++)
		ddtx_regcache_put(lc->regcache, l->regs[i]);
	free(l->regs);
	l->regs = NULL;
	l->nregs = 0;
}

/*
 * One freed list is kept for the next new layout.  Where the lists in use outgrow the cache,
 * each new layout evicts one of the same size, and a list from malloc came back as pages to
 * fault in and zero again.  Both under lc->lock.
 */
static void list_keep(struct ddtx_layout_cache *lc, struct iovec *v, size_t cap)
{
	if (v && cap > lc->spare_cap) {
		struct iovec *old = lc->spare_list;
		lc->spare_list = v;
		lc->spare_cap = cap;
		v = old;
	}
	free(v);
}

static struct iovec *list_take(struct ddtx_layout_cache *lc, size_t n, size_t *cap)
{
	struct iovec *v = NULL;
	if (lc->spare_list && lc->spare_cap >= n && lc->spare_cap <= 2 * n) {
		v = lc->spare_list;
		*cap = lc->spare_cap;
		lc->spare_list = NULL;
		lc->spare_cap = 0;
	}
	return v;
}

static void layout_free(struct ddtx_layout_cache *lc, struct ddtx_layout *l)
{
	struct ddtx_list_entry *it;
	while ((it = ddtx_list_pop_front(&l->wsets)))
		ddtx_wset_free(lc, ddtx_container_of(it, struct ddtx_window_set, entry));
	unregister_layout(lc, l);
	ddtx_dl_put(l->dl);
	ddtx_rlock_lock(&lc->lock);
	list_keep(lc, l->iov, l->iov_cap);
	ddtx_rlock_unlock(&lc->lock);
	free(l);
}

static void unhash(struct ddtx_layout_cache *lc, struct ddtx_layout *l)
{
	struct ddtx_layout **pp = &lc->buckets[bucket_of(lc, l->hash, l->base)];
	while (*pp && *pp != l)
		pp = &(*pp)->hash_next;
	if (*pp)
		*pp = l->hash_next;
	ddtx_list_remove(&l->lru);
	lc->entries--;
	lc->blocks -= l->count;
}

/* A layout leaving the cache takes its window sets (and their keys) out of the totals. */
static void forget_wsets(struct ddtx_layout_cache *lc, const struct ddtx_layout *l)
{
	for (const struct ddtx_list_entry *e = l->wsets.head.next; e != &l->wsets.head;
	     e = e->next) {
		lc->wset_count--;
		lc->wset_keys -= ddtx_container_of(e, struct ddtx_window_set, entry)->n;
	}
}

static inline bool over_limits(const struct ddtx_layout_cache *lc)
{
	return lc->entries > lc->params.max_entries || lc->blocks > lc->params.max_blocks;
}

/* Evict idle layouts beyond the limit; returns them in `out` for freeing unlocked. */
static void evict(struct ddtx_layout_cache *lc, struct ddtx_list *out)
{
	struct ddtx_list_entry *it = lc->lru.head.prev;
	while (over_limits(lc) && it != &lc->lru.head) {
		struct ddtx_layout *l = ddtx_container_of(it, struct ddtx_layout, lru);
		it = it->prev;
		if (l->refs)
			continue;
		unhash(lc, l);
		forget_wsets(lc, l);
		l->dead = true;
		lc->st.evictions++;
		ddtx_list_push_back(out, &l->lru);
	}
}

static void free_list_of_layouts(struct ddtx_layout_cache *lc, struct ddtx_list *l)
{
	struct ddtx_list_entry *it;
	while ((it = ddtx_list_pop_front(l)))
		layout_free(lc, ddtx_container_of(it, struct ddtx_layout, lru));
}

/*
 * Memory unmapped since the last look must reach the layouts before one is handed out: a hit
 * on a recycled address would otherwise reuse a dead registration.  One atomic read when
 * nothing happened.
 */
static void sync_invalidations(struct ddtx_layout_cache *lc)
{
	uint64_t g = ddtx_regcache_generation(lc->regcache);
	if (g == atomic_load_explicit(&lc->seen_gen, memory_order_acquire))
		return;
	ddtx_regcache_flush(lc->regcache); /* calls on_reg_invalidate for each dead region */
	atomic_store_explicit(&lc->seen_gen, g, memory_order_release);
}

/* Is l the vector v (whose base is absolute)? */
static bool same_vector(const struct ddtx_layout *l, const struct ddtx_iov_vec *v)
{
	return l->vec.n == v->n && l->vec.block == v->block && l->vec.stride == v->stride &&
	       l->base == (uintptr_t)v->base;
}

/* The cached layout of these entries (or of the vector vec, when vec->n), referenced; NULL. */
static struct ddtx_layout *lookup(struct ddtx_layout_cache *lc, uint64_t hash, uintptr_t base,
				  const struct ddtx_layout_stats *st,
				  const struct ddtx_iov_vec *vec, const struct iovec *iov,
				  size_t count)
{
	ddtx_rlock_lock(&lc->lock);
	for (struct ddtx_layout *l = lc->buckets[bucket_of(lc, hash, base)]; l; l = l->hash_next) {
		if (l->hash != hash || l->base != base || l->count != st->nblocks ||
		    l->st.total != st->total ||
		    !(vec->n ? same_vector(l, vec) : same_entries(l, iov, count)))
			continue;
		l->refs++;
		l->uses++;
		if (lc->lru.head.next != &l->lru) {
			ddtx_list_remove(&l->lru);
			ddtx_list_push_front(&lc->lru, &l->lru);
		}
		lc->st.hits++;
		ddtx_rlock_unlock(&lc->lock);
		return l;
	}
	ddtx_rlock_unlock(&lc->lock);
	return NULL;
}

/* A vector's summary and identity, without reading its list. */
static uint64_t vector_summary(const struct ddtx_iov_vec *v, struct ddtx_layout_stats *st)
{
	*st = (struct ddtx_layout_stats){.total = v->n * v->block, .nblocks = v->n,
					 .min_block = v->block, .avg_block = v->block};
	return vector_identity(v->block, v->stride, v->n);
}

struct ddtx_layout *ddtx_layout_find_vec(struct ddtx_layout_cache *lc,
					 const struct ddtx_iov_vec *vec)
{
	struct ddtx_layout_stats st;
	if (vec->n < 2)
		return NULL;
	sync_invalidations(lc);
	uint64_t hash = vector_summary(vec, &st);
	return lookup(lc, hash, (uintptr_t)vec->base, &st, vec, NULL, 0);
}

struct ddtx_layout *ddtx_layout_get(struct ddtx_layout_cache *lc, const struct iovec *iov,
				    size_t count, bool *hit)
{
	return ddtx_layout_get_vec(lc, iov, count, NULL, hit);
}

struct ddtx_layout *ddtx_layout_get_vec(struct ddtx_layout_cache *lc, const struct iovec *iov,
					size_t count, const struct ddtx_iov_vec *known, bool *hit)
{
	uintptr_t base;
	sync_invalidations(lc);
	struct ddtx_layout_stats st;
	struct ddtx_iov_vec vec;
	uint64_t hash;
	if (known && known->n >= 2) {
		/* What identity() would find, without reading the list. */
		vec = *known;
		base = (uintptr_t)vec.base;
		hash = vector_summary(&vec, &st);
	} else {
		hash = identity(iov, count, &base, &st, &vec);
	}

	struct ddtx_layout *found = lookup(lc, hash, base, &st, &vec, iov, count);
	*hit = found != NULL;
	if (found)
		return found;
	ddtx_rlock_lock(&lc->lock);
	lc->st.misses++;
	ddtx_rlock_unlock(&lc->lock);
	*hit = false;

	struct ddtx_layout *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->iov_cap = DDTX_MAX(st.nblocks, (size_t)1);
	ddtx_rlock_lock(&lc->lock);
	l->iov = list_take(lc, l->iov_cap, &l->iov_cap);
	ddtx_rlock_unlock(&lc->lock);
	if (!l->iov)
		l->iov = malloc(l->iov_cap * sizeof(*l->iov));
	if (!l->iov) {
		free(l);
		return NULL;
	}
	for (size_t i = 0, j = 0; i < count; i++)
		if (iov[i].iov_len)
			l->iov[j++] = iov[i];
	l->hash = hash;
	l->base = base;
	l->vec = vec;
	l->count = st.nblocks;
	l->st = st;
	l->uses = 1;
	l->refs = 1;
	ddtx_list_init(&l->wsets);

	struct ddtx_list victims;
	ddtx_list_init(&victims);
	ddtx_rlock_lock(&lc->lock);
	size_t b = bucket_of(lc, hash, base);
	l->hash_next = lc->buckets[b];
	lc->buckets[b] = l;
	ddtx_list_push_front(&lc->lru, &l->lru);
	lc->entries++;
	lc->blocks += l->count;
	evict(lc, &victims);
	ddtx_rlock_unlock(&lc->lock);
	free_list_of_layouts(lc, &victims);
	return l;
}

bool ddtx_layout_ref(struct ddtx_layout_cache *lc, struct ddtx_layout *l)
{
	sync_invalidations(lc);
	ddtx_rlock_lock(&lc->lock);
	bool live = !l->dead;
	if (live) {
		l->refs++;
		l->uses++;
		lc->st.hits++;
		ddtx_list_remove(&l->lru);
		ddtx_list_push_front(&lc->lru, &l->lru);
	}
	ddtx_rlock_unlock(&lc->lock);
	return live;
}

void ddtx_layout_put(struct ddtx_layout_cache *lc, struct ddtx_layout *l)
{
	ddtx_rlock_lock(&lc->lock);
	/* Without a memory monitor nothing would tell us the memory went away: a layout (and
	 * its registrations) lives only while in use. */
	if (l->refs == 1 && !l->dead && !lc->monitored) {
		unhash(lc, l);
		forget_wsets(lc, l);
		l->dead = true;
	}
	bool last = --l->refs == 0 && l->dead;
	struct ddtx_list victims;
	ddtx_list_init(&victims);
	if (!last && over_limits(lc)) /* the call alone was 18 instructions of every put */
		evict(lc, &victims);
	ddtx_rlock_unlock(&lc->lock);
	if (last)
		layout_free(lc, l);
	free_list_of_layouts(lc, &victims);
}

/*
 * Compiled on first use rather than on entry: only PACK reads it, and a layout moved by zero
 * copy (or seen once, without a memory monitor) would pay an O(count) pass for nothing.
 */
const struct ddtx_dataloop *ddtx_layout_dataloop(struct ddtx_layout_cache *lc,
						 struct ddtx_layout *l)
{
	if (atomic_load_explicit(&l->dl_done, memory_order_acquire))
		return l->dl;
	struct ddtx_dataloop *dl = ddtx_dl_compile(l->iov, l->count, l->base);
	ddtx_layout_adopt_dataloop(lc, l, dl);
	ddtx_dl_put(dl);
	return l->dl;
}

void ddtx_layout_adopt_dataloop(struct ddtx_layout_cache *lc, struct ddtx_layout *l,
				struct ddtx_dataloop *dl)
{
	ddtx_rlock_lock(&lc->lock);
	if (!atomic_load_explicit(&l->dl_done, memory_order_relaxed)) {
		l->dl = ddtx_dl_get(dl);
		atomic_store_explicit(&l->dl_done, true, memory_order_release);
	}
	ddtx_rlock_unlock(&lc->lock);
}

static bool uses_reg(const struct ddtx_layout *l, const void *reg)
{
	for (size_t i = 0; i < l->nregs; i++)
		if (l->regs[i] == reg)
			return true;
	return false;
}

static bool touches_range(const struct ddtx_layout *l, const void *range)
{
	const struct iovec *r = range;
	uintptr_t a = (uintptr_t)r->iov_base, end = a + r->iov_len;
	for (size_t i = 0; i < l->count; i++) {
		uintptr_t b = (uintptr_t)l->iov[i].iov_base;
		if (b < end && b + l->iov[i].iov_len > a)
			return true;
	}
	return false;
}

/* Layouts `hit` names leave the cache: new lookups build fresh entries; users finish with the
 * old ones. */
static void kill_layouts(struct ddtx_layout_cache *lc,
			 bool (*hit)(const struct ddtx_layout *l, const void *arg), const void *arg)
{
	struct ddtx_list victims;
	ddtx_list_init(&victims);
	ddtx_rlock_lock(&lc->lock);
	struct ddtx_list_entry *it, *tmp;
	ddtx_list_foreach_safe(&lc->lru, it, tmp)
	{
		struct ddtx_layout *l = ddtx_container_of(it, struct ddtx_layout, lru);
		if (!hit(l, arg))
			continue;
		/* Unlist it: new lookups build a fresh entry; users finish with the old one. */
		unhash(lc, l);
		forget_wsets(lc, l);
		l->dead = true;
		lc->st.invalidations++;
		if (!l->refs)
			ddtx_list_push_back(&victims, &l->lru);
	}
	ddtx_rlock_unlock(&lc->lock);
	free_list_of_layouts(lc, &victims);
}

/*
 * A registration died (memory unmapped, or evicted): every layout using it goes back to NEW
 * and gives up its window sets, so a recycled address is registered afresh before it is used
 * for zero copy again.  Runs on a user thread inside a registration-cache call.
 */
static void on_reg_invalidate(void *arg, const struct ddtx_reg *reg)
{
	/* A region merged into a larger one stays registered while we hold it; if its memory
	 * goes away later we hear about it again as INVALIDATED. */
	if (ddtx_reg_state(reg) != DDTX_REG_MERGED)
		kill_layouts(arg, uses_reg, reg);
}

void ddtx_layout_cache_invalidate(struct ddtx_layout_cache *lc, const void *addr, size_t len)
{
	struct iovec range = { (void *)addr, len };
	ddtx_regcache_invalidate(lc->regcache, addr, len);
	/* Regions the monitor could not watch (UNCACHED) are not the regcache's to report. */
	kill_layouts(lc, touches_range, &range);
}

void ddtx_layout_cache_flush(struct ddtx_layout_cache *lc)
{
	ddtx_regcache_flush(lc->regcache);
}

int ddtx_layout_cache_open(const struct ddtx_layout_cache_params *params,
			   struct ddtx_wire_domain *wire, struct ddtx_regcache *regcache,
			   struct ddtx_mkey_pool *pool, struct ddtx_layout_cache **out)
{
	struct ddtx_layout_cache *lc = calloc(1, sizeof(*lc));
	if (!lc)
		return -FI_ENOMEM;
	lc->params = *params;
	if (!lc->params.max_entries)
		lc->params.max_entries = 1024;
	/* 1024 layouts of DDTX_IOV_LIMIT entries would keep 256 MiB. */
	if (!lc->params.max_blocks)
		lc->params.max_blocks = LAYOUT_BLOCKS_MAX;
	if (!lc->params.max_wsets)
		lc->params.max_wsets = 256;
	if (!lc->params.max_wset_keys)
		lc->params.max_wset_keys = 4096;
	lc->nbuckets = 1;
	while (lc->nbuckets < 2 * lc->params.max_entries)
		lc->nbuckets *= 2;
	lc->buckets = calloc(lc->nbuckets, sizeof(*lc->buckets));
	if (!lc->buckets) {
		free(lc);
		return -FI_ENOMEM;
	}
	lc->wire = wire;
	lc->caps = ddtx_wire_domain_caps(wire);
	lc->regcache = regcache;
	lc->pool = pool;
	ddtx_rlock_init(&lc->lock);
	ddtx_rlock_cond_init(&lc->wake);
	ddtx_list_init(&lc->lru);
	ddtx_list_init(&lc->queue);
	ddtx_regcache_set_listener(regcache, on_reg_invalidate, lc);
	atomic_init(&lc->seen_gen, ddtx_regcache_generation(regcache));
	lc->monitored = ddtx_regcache_monitored(regcache);
	if (!lc->monitored)
		DDTX_INFO(FI_LOG_DOMAIN, "no memory monitor: layouts are not cached, zero copy "
			  "only when forced\n");
	if (params->thread && !pthread_create(&lc->thread, NULL, ddtx_layout_reg_thread, lc))
		lc->thread_started = true;
	*out = lc;
	return 0;
}

void ddtx_layout_cache_close(struct ddtx_layout_cache *lc)
{
	if (!lc)
		return;
	ddtx_rlock_lock(&lc->lock);
	lc->stop = true;
	ddtx_rlock_wake(&lc->wake);
	ddtx_rlock_unlock(&lc->lock);
	if (lc->thread_started)
		pthread_join(lc->thread, NULL);
	ddtx_regcache_set_listener(lc->regcache, NULL, NULL);
	struct ddtx_list_entry *it;
	while ((it = ddtx_list_pop_front(&lc->queue))) {
		struct ddtx_layout *l = ddtx_container_of(it, struct ddtx_layout, queue);
		l->refs--;
	}
	while ((it = ddtx_list_pop_front(&lc->lru)))
		layout_free(lc, ddtx_container_of(it, struct ddtx_layout, lru));
	ddtx_rlock_cond_destroy(&lc->wake);
	ddtx_rlock_destroy(&lc->lock);
	free(lc->spare_list);
	free(lc->buckets);
	free(lc);
}

void ddtx_layout_cache_stats(struct ddtx_layout_cache *lc, struct ddtx_layout_cache_stats *st)
{
	ddtx_rlock_lock(&lc->lock);
	*st = lc->st;
	st->entries = lc->entries;
	ddtx_rlock_unlock(&lc->lock);
}
