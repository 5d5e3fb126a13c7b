/*
 * Layout cache, registration thread and local mkey cache (window sets).
 *
 * Locking: lc->lock guards the hash table, the LRU lists, reference counts, window sets and
 * the registration queue.  It is never held across a call into the registration cache (whose
 * invalidation listener takes lc->lock) nor across a wire mkey map (slow on hardware).
 */
#include "engine/layout.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include "common/log.h"
#include "common/clock.h"
#include "common/minmax.h"
#include "engine/mkey_pool.h"
#include "engine/regcache.h"

struct ddtx_layout_cache {
	struct ddtx_layout_cache_params params;
	struct ddtx_wire_domain *wire;
	const struct ddtx_wire_caps *caps;
	struct ddtx_regcache *regcache;
	struct ddtx_mkey_pool *pool;
	pthread_mutex_t lock;
	struct ddtx_layout **buckets;
	size_t nbuckets;                 /* power of two */
	size_t entries;
	struct ddtx_list lru;            /* layouts, most recent first */
	size_t wset_count;               /* window sets of all layouts */
	uint64_t next_wset_id;
	_Atomic uint64_t seen_gen;       /* registration-cache generation last synced with */
	bool monitored;                  /* unmapped memory is reported: layouts may be kept */
	struct ddtx_layout_cache_stats st;
	/* registration thread */
	pthread_t thread;
	bool thread_started, stop;
	pthread_cond_t wake;
	struct ddtx_list queue;
};

/* ---- identity ---- */

static inline uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
	h *= 0xBF58476D1CE4E5B9ull;
	return h ^ (h >> 31);
}

/*
 * One pass computes the identity and the summary.  Four independent lanes (entries i mod 4)
 * keep the multiplier busy instead of waiting on one long dependency chain: a few cycles per
 * entry, which is the whole cost of a layout-cache hit besides the final comparison.
 */
static uint64_t identity(const struct iovec *iov, size_t count, uintptr_t *basep,
			 struct ddtx_layout_stats *st)
{
	const uint64_t k1 = 0x9E3779B97F4A7C15ull, k2 = 0xC2B2AE3D27D4EB4Full;
	uint64_t h[4] = {1, 2, 3, 4};
	uintptr_t base = 0;
	size_t n = 0, total = 0, min = 0;
	for (size_t i = 0; i < count; i++) {
		size_t len = iov[i].iov_len;
		if (!len)
			continue;
		uintptr_t a = (uintptr_t)iov[i].iov_base;
		if (!n)
			base = a;
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
	return mix(mix(mix(h[0], h[1]), h[2]), h[3] ^ n);
}

uint64_t ddtx_layout_hash(const struct iovec *iov, size_t count, uintptr_t *basep)
{
	return identity(iov, count, basep, NULL);
}

static size_t bucket_of(const struct ddtx_layout_cache *lc, uint64_t hash, uintptr_t base)
{
	return (size_t)mix(hash, base) & (lc->nbuckets - 1);
}

/* Does the cached layout hold exactly the non-empty entries of iov? */
static bool same_entries(const struct ddtx_layout *l, const struct iovec *iov, size_t count)
{
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

/* ---- window sets ---- */

size_t ddtx_window_pieces(const struct iovec *iov, size_t count, size_t chunk, size_t w,
			  struct iovec *out, size_t max_out)
{
	struct ddtx_iov_cursor c;
	ddtx_iov_cursor_init(&c, iov, count);
	ddtx_iov_cursor_seek(&c, w * chunk);
	if (ddtx_iov_cursor_done(&c))
		return 0;
	size_t n;
	ddtx_iov_cursor_take(&c, chunk, max_out, out, &n);
	/* Still inside this window after max_out pieces: it needs more entries than allowed. */
	if (!ddtx_iov_cursor_done(&c) && c.pos % chunk != 0)
		return max_out + 1;
	return n;
}

static const struct ddtx_wire_mr *reg_covering(const struct ddtx_layout *l, const struct iovec *p)
{
	uintptr_t a = (uintptr_t)p->iov_base;
	for (size_t i = 0; i < l->nregs; i++) {
		const struct ddtx_reg *r = l->regs[i];
		if (a >= r->addr && a + p->iov_len <= r->addr + r->len)
			return r->mr;
	}
	return NULL;
}

static void wset_free(struct ddtx_layout_cache *lc, struct ddtx_window_set *ws)
{
	for (size_t i = 0; i < ws->n; i++)
		if (ws->mkeys[i])
			ddtx_mkey_pool_put(lc->pool, ws->mkeys[i]);
	free(ws->mkeys);
	free(ws->sent_to);
	free(ws);
}

/* Unlink and return the least recently used idle window set of any layout (lock held). */
static struct ddtx_window_set *wset_victim(struct ddtx_layout_cache *lc)
{
	struct ddtx_list_entry *it;
	for (it = lc->lru.head.prev; it != &lc->lru.head; it = it->prev) {
		struct ddtx_layout *l = ddtx_container_of(it, struct ddtx_layout, lru);
		struct ddtx_list_entry *w;
		for (w = l->wsets.head.prev; w != &l->wsets.head; w = w->prev) {
			struct ddtx_window_set *ws = ddtx_container_of(w, struct ddtx_window_set, entry);
			if (!ws->refs) {
				ddtx_list_remove(&ws->entry);
				lc->wset_count--;
				lc->st.wset_evictions++;
				return ws;
			}
		}
	}
	return NULL;
}

/* Map a new window set outside the lock; NULL if keys run short or a map fails. */
static struct ddtx_window_set *wset_map(struct ddtx_layout_cache *lc, struct ddtx_layout *l,
					size_t chunk)
{
	size_t m = lc->caps->max_mkey_entries;
	size_t n = (l->st.total + chunk - 1) / chunk;
	if (!m || !n)
		return NULL;
	struct ddtx_window_set *ws = calloc(1, sizeof(*ws));
	if (!ws)
		return NULL;
	ws->layout = l;
	ws->chunk = chunk;
	ws->n = n;
	ws->mkeys = calloc(n, sizeof(*ws->mkeys));
	struct iovec pieces[m + 1];
	struct ddtx_wire_mkey_entry entries[m];
	if (!ws->mkeys)
		goto fail;
	for (size_t w = 0; w < n; w++) {
		size_t np = ddtx_window_pieces(l->iov, l->count, chunk, w, pieces, m);
		if (!np || np > m)
			goto fail;
		for (size_t i = 0; i < np; i++) {
			entries[i].mr = reg_covering(l, &pieces[i]);
			entries[i].addr = (uintptr_t)pieces[i].iov_base;
			entries[i].len = pieces[i].iov_len;
		}
		ws->mkeys[w] = ddtx_mkey_pool_get(lc->pool);
		if (!ws->mkeys[w])
			goto fail;
		if (ddtx_wire_mkey_map(lc->wire, ws->mkeys[w], entries, np,
				       DDTX_ACC_LOCAL_READ | DDTX_ACC_LOCAL_WRITE |
					       DDTX_ACC_REMOTE_READ | DDTX_ACC_REMOTE_WRITE))
			goto fail;
	}
	return ws;
fail:
	wset_free(lc, ws);
	return NULL;
}

struct ddtx_window_set *ddtx_layout_windows(struct ddtx_layout_cache *lc, struct ddtx_layout *l,
					    size_t chunk)
{
	if (!ddtx_layout_ready(l) || !chunk)
		return NULL;
	pthread_mutex_lock(&lc->lock);
	struct ddtx_list_entry *it, *tmp;
	ddtx_list_foreach_safe(&l->wsets, it, tmp)
	{
		struct ddtx_window_set *ws = ddtx_container_of(it, struct ddtx_window_set, entry);
		if (ws->chunk == chunk) {
			ws->refs++;
			ddtx_list_remove(&ws->entry);
			ddtx_list_push_front(&l->wsets, &ws->entry);
			lc->st.wset_hits++;
			pthread_mutex_unlock(&lc->lock);
			return ws;
		}
	}
	lc->st.wset_misses++;
	/* Make room: idle window sets give their keys back before a new set takes some. */
	size_t need = (l->st.total + chunk - 1) / chunk;
	struct ddtx_list freed;
	ddtx_list_init(&freed);
	while (lc->wset_count && (lc->wset_count >= lc->params.max_wsets ||
				  ddtx_mkey_pool_level(lc->pool) < need)) {
		struct ddtx_window_set *v = wset_victim(lc);
		if (!v)
			break;
		ddtx_list_push_back(&freed, &v->entry);
	}
	l->refs++; /* keep l while unlocked */
	pthread_mutex_unlock(&lc->lock);
	while ((it = ddtx_list_pop_front(&freed)))
		wset_free(lc, ddtx_container_of(it, struct ddtx_window_set, entry));

	struct ddtx_window_set *ws = wset_map(lc, l, chunk);

	pthread_mutex_lock(&lc->lock);
	if (ws) {
		ws->id = ++lc->next_wset_id;
		ws->refs = 1;
		ddtx_list_push_front(&l->wsets, &ws->entry);
		lc->wset_count++;
	}
	pthread_mutex_unlock(&lc->lock);
	ddtx_layout_put(lc, l);
	return ws;
}

void ddtx_window_set_put(struct ddtx_layout_cache *lc, struct ddtx_window_set *ws)
{
	pthread_mutex_lock(&lc->lock);
	ws->refs--;
	pthread_mutex_unlock(&lc->lock);
}

bool ddtx_window_set_sent(const struct ddtx_window_set *ws, ddtx_peer_t peer)
{
	size_t w = peer / 64;
	return w < ws->sent_words && (ws->sent_to[w] >> (peer % 64)) & 1;
}

void ddtx_window_set_mark_sent(struct ddtx_window_set *ws, ddtx_peer_t peer)
{
	size_t w = peer / 64;
	if (w >= ws->sent_words) {
		size_t nw = DDTX_MAX(w + 1, ws->sent_words * 2);
		uint64_t *v = realloc(ws->sent_to, nw * sizeof(*v));
		if (!v)
			return; /* only costs a resend of the list */
		memset(v + ws->sent_words, 0, (nw - ws->sent_words) * sizeof(*v));
		ws->sent_to = v;
		ws->sent_words = nw;
	}
	ws->sent_to[w] |= 1ull << (peer % 64);
}

/* ---- layouts ---- */

/* Release what registration gave a layout (lock not held; l is private to the caller). */
static void unregister_layout(struct ddtx_layout_cache *lc, struct ddtx_layout *l)
{
	for (size_t i = 0; i < l->nregs; i++)
		ddtx_regcache_put(lc->regcache, l->regs[i]);
	free(l->regs);
	l->regs = NULL;
	l->nregs = 0;
}

static void layout_free(struct ddtx_layout_cache *lc, struct ddtx_layout *l)
{
	struct ddtx_list_entry *it;
	while ((it = ddtx_list_pop_front(&l->wsets)))
		wset_free(lc, ddtx_container_of(it, struct ddtx_window_set, entry));
	unregister_layout(lc, l);
	free(l->iov);
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
}

/* Count the window sets a layout takes with it. */
static size_t wset_len(const struct ddtx_layout *l)
{
	size_t n = 0;
	for (const struct ddtx_list_entry *e = l->wsets.head.next; e != &l->wsets.head; e = e->next)
		n++;
	return n;
}

/* Evict idle layouts beyond the limit; returns them in `out` for freeing unlocked. */
static void evict(struct ddtx_layout_cache *lc, struct ddtx_list *out)
{
	struct ddtx_list_entry *it = lc->lru.head.prev;
	while (lc->entries > lc->params.max_entries && it != &lc->lru.head) {
		struct ddtx_layout *l = ddtx_container_of(it, struct ddtx_layout, lru);
		it = it->prev;
		if (l->refs)
			continue;
		unhash(lc, l);
		lc->wset_count -= wset_len(l);
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

struct ddtx_layout *ddtx_layout_get(struct ddtx_layout_cache *lc, const struct iovec *iov,
				    size_t count, bool *hit)
{
	uintptr_t base;
	sync_invalidations(lc);
	struct ddtx_layout_stats st;
	uint64_t hash = identity(iov, count, &base, &st);

	pthread_mutex_lock(&lc->lock);
	for (struct ddtx_layout *l = lc->buckets[bucket_of(lc, hash, base)]; l; l = l->hash_next) {
		if (l->hash != hash || l->base != base || l->count != st.nblocks ||
		    l->st.total != st.total || !same_entries(l, iov, count))
			continue;
		l->refs++;
		l->uses++;
		ddtx_list_remove(&l->lru);
		ddtx_list_push_front(&lc->lru, &l->lru);
		lc->st.hits++;
		pthread_mutex_unlock(&lc->lock);
		*hit = true;
		return l;
	}
	lc->st.misses++;
	pthread_mutex_unlock(&lc->lock);
	*hit = false;

	struct ddtx_layout *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->iov = malloc(DDTX_MAX(st.nblocks, (size_t)1) * sizeof(*l->iov));
	if (!l->iov) {
		free(l);
		return NULL;
	}
	for (size_t i = 0, j = 0; i < count; i++)
		if (iov[i].iov_len)
			l->iov[j++] = iov[i];
	l->hash = hash;
	l->base = base;
	l->count = st.nblocks;
	l->st = st;
	l->uses = 1;
	l->refs = 1;
	ddtx_list_init(&l->wsets);

	struct ddtx_list victims;
	ddtx_list_init(&victims);
	pthread_mutex_lock(&lc->lock);
	size_t b = bucket_of(lc, hash, base);
	l->hash_next = lc->buckets[b];
	lc->buckets[b] = l;
	ddtx_list_push_front(&lc->lru, &l->lru);
	lc->entries++;
	evict(lc, &victims);
	pthread_mutex_unlock(&lc->lock);
	free_list_of_layouts(lc, &victims);
	return l;
}

bool ddtx_layout_ref(struct ddtx_layout_cache *lc, struct ddtx_layout *l)
{
	sync_invalidations(lc);
	pthread_mutex_lock(&lc->lock);
	bool live = !l->dead;
	if (live) {
		l->refs++;
		l->uses++;
		lc->st.hits++;
		ddtx_list_remove(&l->lru);
		ddtx_list_push_front(&lc->lru, &l->lru);
	}
	pthread_mutex_unlock(&lc->lock);
	return live;
}

void ddtx_layout_put(struct ddtx_layout_cache *lc, struct ddtx_layout *l)
{
	pthread_mutex_lock(&lc->lock);
	/* Without a memory monitor nothing would tell us the memory went away: a layout (and
	 * its registrations) lives only while in use. */
	if (l->refs == 1 && !l->dead && !lc->monitored) {
		unhash(lc, l);
		lc->wset_count -= wset_len(l);
		l->dead = true;
	}
	bool last = --l->refs == 0 && l->dead;
	struct ddtx_list victims;
	ddtx_list_init(&victims);
	if (!last)
		evict(lc, &victims);
	pthread_mutex_unlock(&lc->lock);
	if (last)
		layout_free(lc, l);
	free_list_of_layouts(lc, &victims);
}

/* ---- registration ---- */

/*
 * Register the memory of a layout.  A dense layout is registered as its whole span (one
 * region, as MPI libraries do); a sparse one entry by entry (the registration cache merges
 * neighbours).  Then the window set for the layout's own block size is mapped, so that a peer
 * with the same shape finds it ready.
 */
static int register_layout(struct ddtx_layout_cache *lc, struct ddtx_layout *l)
{
	/* Exactly one registrant: whoever moves QUEUED to REGISTERING. */
	int expected = DDTX_LAYOUT_QUEUED;
	if (!atomic_compare_exchange_strong(&l->state, &expected, DDTX_LAYOUT_REGISTERING))
		return 0;
	uint64_t t0 = ddtx_time_ns();
	const uint32_t access = DDTX_ACC_LOCAL_READ | DDTX_ACC_LOCAL_WRITE | DDTX_ACC_REMOTE_READ |
				DDTX_ACC_REMOTE_WRITE;
	uintptr_t lo = (uintptr_t)l->iov[0].iov_base;
	uintptr_t hi = (uintptr_t)l->iov[l->count - 1].iov_base + l->iov[l->count - 1].iov_len;
	/* A span of up to 16 MiB is one region even when sparse: one key instead of one per
	 * block (if part of it cannot be registered, the entries are registered one by one). */
	bool span = hi > lo && (hi - lo <= 8 * l->st.total || hi - lo <= ((size_t)16 << 20));
	size_t n = span ? 1 : l->count;
	struct ddtx_reg **regs = calloc(n, sizeof(*regs));
	int ret = regs ? 0 : -FI_ENOMEM;
	size_t got = 0;
	if (span && regs && ddtx_regcache_get(lc->regcache, (const void *)lo, hi - lo, access,
					       &regs[0])) {
		/* Holes in the span (unmapped pages): register the entries instead. */
		free(regs);
		span = false;
		n = l->count;
		regs = calloc(n, sizeof(*regs));
		ret = regs ? 0 : -FI_ENOMEM;
	} else if (span) {
		got = 1;
	}
	for (; !ret && got < n; got++) {
		ret = ddtx_regcache_get(lc->regcache, l->iov[got].iov_base, l->iov[got].iov_len,
					access, &regs[got]);
		if (ret)
			break;
	}
	if (ret) {
		for (size_t i = 0; i < got; i++)
			ddtx_regcache_put(lc->regcache, regs[i]);
		free(regs);
		atomic_store_explicit(&l->state, DDTX_LAYOUT_FAILED, memory_order_release);
		pthread_mutex_lock(&lc->lock);
		lc->st.reg_failures++;
		pthread_mutex_unlock(&lc->lock);
		return ret;
	}
	l->regs = regs;
	l->nregs = n;
	atomic_store_explicit(&l->state, DDTX_LAYOUT_READY, memory_order_release);
	size_t m = lc->caps->max_mkey_entries;
	if (m > 1) {
		struct ddtx_window_set *ws = ddtx_layout_windows(lc, l, (m - 1) * l->st.min_block);
		if (ws)
			ddtx_window_set_put(lc, ws);
	}
	pthread_mutex_lock(&lc->lock);
	lc->st.registered++;
	lc->st.reg_ns += ddtx_time_ns() - t0;
	pthread_mutex_unlock(&lc->lock);
	return 0;
}

int ddtx_layout_register_now(struct ddtx_layout_cache *lc, struct ddtx_layout *l)
{
	int expected = DDTX_LAYOUT_NEW;
	atomic_compare_exchange_strong(&l->state, &expected, DDTX_LAYOUT_QUEUED);
	register_layout(lc, l); /* no-op if the thread got there first */
	/* The thread may be mid-way through this layout: registration is short, wait for it. */
	int st;
	while ((st = atomic_load_explicit(&l->state, memory_order_acquire)) ==
		       DDTX_LAYOUT_REGISTERING ||
	       st == DDTX_LAYOUT_QUEUED) {
		if (st == DDTX_LAYOUT_QUEUED)
			register_layout(lc, l);
		else
			sched_yield();
	}
	return st == DDTX_LAYOUT_READY ? 0 : -FI_ENOMEM;
}

void ddtx_layout_request(struct ddtx_layout_cache *lc, struct ddtx_layout *l)
{
	int expected = DDTX_LAYOUT_NEW;
	if (!atomic_compare_exchange_strong(&l->state, &expected, DDTX_LAYOUT_QUEUED))
		return;
	if (!lc->thread_started) {
		register_layout(lc, l);
		return;
	}
	pthread_mutex_lock(&lc->lock);
	l->refs++;
	ddtx_list_push_back(&lc->queue, &l->queue);
	pthread_cond_signal(&lc->wake);
	pthread_mutex_unlock(&lc->lock);
}

/* The registration thread (LAH paper, Algorithm 2): the main thread never waits for it. */
static void *reg_thread(void *arg)
{
	struct ddtx_layout_cache *lc = arg;
	pthread_mutex_lock(&lc->lock);
	while (!lc->stop) {
		struct ddtx_list_entry *e = ddtx_list_pop_front(&lc->queue);
		if (!e) {
			pthread_cond_wait(&lc->wake, &lc->lock);
			continue;
		}
		struct ddtx_layout *l = ddtx_container_of(e, struct ddtx_layout, queue);
		bool skip = l->dead;
		pthread_mutex_unlock(&lc->lock);
		if (!skip)
			register_layout(lc, l);
		ddtx_layout_put(lc, l);
		pthread_mutex_lock(&lc->lock);
	}
	pthread_mutex_unlock(&lc->lock);
	return NULL;
}

/*
 * A registration died (memory unmapped, or evicted): every layout using it goes back to NEW
 * and gives up its window sets, so a recycled address is registered afresh before it is used
 * for zero copy again.  Runs on a user thread inside a registration-cache call.
 */
static void on_reg_invalidate(void *arg, const struct ddtx_reg *reg)
{
	struct ddtx_layout_cache *lc = arg;
	/* A region merged into a larger one stays registered while we hold it; if its memory
	 * goes away later we hear about it again as INVALIDATED. */
	if (ddtx_reg_state(reg) == DDTX_REG_MERGED)
		return;
	struct ddtx_list victims;
	ddtx_list_init(&victims);
	pthread_mutex_lock(&lc->lock);
	struct ddtx_list_entry *it, *tmp;
	ddtx_list_foreach_safe(&lc->lru, it, tmp)
	{
		struct ddtx_layout *l = ddtx_container_of(it, struct ddtx_layout, lru);
		bool uses = false;
		for (size_t i = 0; i < l->nregs && !uses; i++)
			uses = l->regs[i] == reg;
		if (!uses)
			continue;
		/* Unlist it: new lookups build a fresh entry; users finish with the old one. */
		unhash(lc, l);
		lc->wset_count -= wset_len(l);
		l->dead = true;
		lc->st.invalidations++;
		if (!l->refs)
			ddtx_list_push_back(&victims, &l->lru);
	}
	pthread_mutex_unlock(&lc->lock);
	free_list_of_layouts(lc, &victims);
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
	if (!lc->params.max_wsets)
		lc->params.max_wsets = 256;
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
	pthread_mutex_init(&lc->lock, NULL);
	pthread_cond_init(&lc->wake, NULL);
	ddtx_list_init(&lc->lru);
	ddtx_list_init(&lc->queue);
	ddtx_regcache_set_listener(regcache, on_reg_invalidate, lc);
	atomic_init(&lc->seen_gen, ddtx_regcache_generation(regcache));
	lc->monitored = ddtx_regcache_monitored(regcache);
	if (!lc->monitored)
		DDTX_INFO(FI_LOG_DOMAIN, "no memory monitor: layouts are not cached, zero copy "
			  "only when forced\n");
	if (params->thread && !pthread_create(&lc->thread, NULL, reg_thread, lc))
		lc->thread_started = true;
	*out = lc;
	return 0;
}

void ddtx_layout_cache_close(struct ddtx_layout_cache *lc)
{
	if (!lc)
		return;
	pthread_mutex_lock(&lc->lock);
	lc->stop = true;
	pthread_cond_signal(&lc->wake);
	pthread_mutex_unlock(&lc->lock);
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
	pthread_cond_destroy(&lc->wake);
	pthread_mutex_destroy(&lc->lock);
	free(lc->buckets);
	free(lc);
}

void ddtx_layout_cache_stats(struct ddtx_layout_cache *lc, struct ddtx_layout_cache_stats *st)
{
	pthread_mutex_lock(&lc->lock);
	*st = lc->st;
	st->entries = lc->entries;
	pthread_mutex_unlock(&lc->lock);
}
