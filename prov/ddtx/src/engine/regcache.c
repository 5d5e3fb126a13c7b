/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The registration cache of regcache.h.
 *
 * Structures, all under rc->lock:
 *   index     interval tree of LIVE regions (may overlap when a merge was not worth it);
 *   lru       LIVE regions with no reference, least recently used first;
 *   retired   MERGED regions still referenced (so a later unmap still finds them);
 *   pending   candidates being registered with the lock released (an unmap seen meanwhile dooms
 *             them: the registration may cover pages that are gone);
 *   all       everything the cache owns, for close.
 *
 * A get that misses: (1) under the lock, choose the span (merging neighbours) and list the
 * candidate as pending; (2) unlocked, watch the span with the monitor, then register it with
 * the wire (watch first: an unmap after the watch is always seen; one before it means the wire
 * registers what is mapped now); (3) under the lock, drain events (which may doom it), and
 * publish it unless another thread published a covering region meanwhile.
 *
 * Work that must not run under the lock (listener calls, wire deregistration, unwatch) is
 * collected on a local list while locked and carried out by finish() after unlocking.
 */
#include "engine/regcache.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include <rdma/fi_errno.h>
#include "common/log.h"
#include "common/minmax.h"
#include "common/rlock.h"

enum { W_NONE = 0, W_INDEX, W_RETIRED, W_PENDING };

#define ACC_ALL (DDTX_ACC_LOCAL_READ | DDTX_ACC_LOCAL_WRITE | DDTX_ACC_REMOTE_READ | \
		 DDTX_ACC_REMOTE_WRITE)
#define MAX_ATTEMPTS 4
#define MERGE_SLACK_MIN ((size_t)1 << 20)

struct ddtx_regcache {
	struct ddtx_rlock lock;         /* a futex word, as the layout cache's (layout_cache.h) */
	struct ddtx_wire_domain *wire;
	struct ddtx_regcache_params params;
	struct ddtx_memmon_sub *mon;    /* NULL: no monitor, every region UNCACHED */
	uint64_t mon_seq;               /* monitor events drained so far */
	uint64_t fork_epoch;
	uint64_t gen_base;              /* atomic: explicit invalidations + events of a lost monitor */
	struct ddtx_itree index, retired;
	struct ddtx_list lru, pending, all;
	void (*listener)(void *arg, const struct ddtx_reg *reg);
	void *listener_arg;
	struct ddtx_regcache_stats st;
	size_t page;
	struct ddtx_reg *last_hit;      /* in the index: looked at before the tree (hit_locked) */
};

struct work {
	struct ddtx_list list;
	void (*listener)(void *arg, const struct ddtx_reg *reg);
	void *listener_arg;
};

#define REG_OF(p, member) ddtx_container_of(p, struct ddtx_reg, member)

static inline void set_state(struct ddtx_reg *r, enum ddtx_reg_state s)
{
	__atomic_store_n(&r->priv.state, (int)s, __ATOMIC_RELEASE);
}

static inline void entry_init(struct ddtx_list_entry *e)
{
	e->next = e->prev = e;
}

static inline void work_init(struct work *w)
{
	ddtx_list_init(&w->list);
	w->listener = NULL;
	w->listener_arg = NULL;
}

/* The region will be deregistered by finish(); account for it now. */
static void commit_dereg(struct ddtx_regcache *rc, struct ddtx_reg *r, struct work *w)
{
	if (r->priv.where == W_RETIRED)
		ddtx_itree_remove(&rc->retired, &r->priv.node);
	r->priv.where = W_NONE;
	ddtx_list_remove(&r->priv.all);
	if (!r->priv.orphan) {
		rc->st.registered_bytes -= r->len;
		rc->st.registered_count--;
	}
	r->priv.dereg = true;
	ddtx_list_push_back(&w->list, &r->priv.link);
}

/*
 * A LIVE region leaves the index (evicted, merged or invalidated).  The listener is owed a
 * call; an unreferenced region is deregistered after it, a referenced one is protected by a
 * temporary reference until the call is over.
 */
static void unlist(struct ddtx_regcache *rc, struct ddtx_reg *r, enum ddtx_reg_state why,
		   struct work *w)
{
	ddtx_itree_remove(&rc->index, &r->priv.node);
	r->priv.where = W_NONE;
	if (rc->last_hit == r)
		rc->last_hit = NULL;
	rc->st.cached_count--;
	if (!r->priv.refs)
		ddtx_list_remove(&r->priv.lru);
	set_state(r, why);
	r->priv.notify = true;
	if (!r->priv.refs) {
		commit_dereg(rc, r, w);
		return;
	}
	if (why == DDTX_REG_MERGED) {
		ddtx_itree_insert(&rc->retired, &r->priv.node);
		r->priv.where = W_RETIRED;
	}
	r->priv.refs++;
	r->priv.tempref = true;
	ddtx_list_push_back(&w->list, &r->priv.link);
}

/* ---- invalidation ---- */

struct inval_ctx {
	struct ddtx_regcache *rc;
	struct work *w;
	struct ddtx_list hits;
};

static int collect_fn(void *arg, struct ddtx_itree_node *n)
{
	struct ddtx_list *l = arg;
	struct ddtx_reg *r = REG_OF(n, priv.node);

	ddtx_list_push_back(l, &r->priv.scan);
	return 0;
}

static void invalidate_range_locked(struct ddtx_regcache *rc, uintptr_t s, uintptr_t e,
				    struct work *w)
{
	struct ddtx_list hits;
	struct ddtx_list_entry *it;

	if (s >= e)
		return;
	/* LIVE regions: out of the index, listener owed. */
	ddtx_list_init(&hits);
	ddtx_itree_visit(&rc->index, s, e, collect_fn, &hits);
	while ((it = ddtx_list_pop_front(&hits))) {
		struct ddtx_reg *r = REG_OF(it, priv.scan);

		unlist(rc, r, DDTX_REG_INVALIDATED, w);
		rc->st.invalidations++;
	}
	/* MERGED but referenced: now unusable; reported a second time (holders that kept it
	 * after the MERGED report learn that it is dead), freed at the last put. */
	ddtx_itree_visit(&rc->retired, s, e, collect_fn, &hits);
	while ((it = ddtx_list_pop_front(&hits))) {
		struct ddtx_reg *r = REG_OF(it, priv.scan);

		ddtx_itree_remove(&rc->retired, &r->priv.node);
		r->priv.where = W_NONE;
		set_state(r, DDTX_REG_INVALIDATED);
		rc->st.invalidations++;
		if (!r->priv.tempref) {
			/* (else its MERGED report is still queued: that one call will see the
			 * INVALIDATED state) */
			r->priv.notify = true;
			r->priv.refs++;
			r->priv.tempref = true;
			ddtx_list_push_back(&w->list, &r->priv.link);
		}
	}
	/* Candidates being registered right now. */
	for (it = rc->pending.head.next; it != &rc->pending.head; it = it->next) {
		struct ddtx_reg *r = REG_OF(it, priv.link);

		if (r->addr < e && r->addr + r->len > s)
			r->priv.doomed = true;
	}
}

static void event_fn(void *arg, uintptr_t s, uintptr_t e)
{
	struct inval_ctx *c = arg;

	invalidate_range_locked(c->rc, s, e, c->w);
}

static void orphan_locked(struct ddtx_regcache *rc);

/* Apply what the monitor reported (and notice a fork). */
static void sync_locked(struct ddtx_regcache *rc, struct work *w)
{
	struct inval_ctx c = { .rc = rc, .w = w };

	if (!rc->mon)
		return;
	if (ddtx_memmon_fork_epoch() != rc->fork_epoch) {
		orphan_locked(rc);
		return;
	}
	if (ddtx_memmon_seq(rc->mon) != rc->mon_seq)
		rc->mon_seq = ddtx_memmon_drain(rc->mon, event_fn, &c, rc->mon_seq);
}

/*
 * In a forked child: the regions are the parent's (on the shm wire its key table is shared
 * memory), so forget them without deregistering, and stop caching.
 */
static void orphan_locked(struct ddtx_regcache *rc)
{
	struct ddtx_list_entry *it, *next;

	for (it = rc->all.head.next; it != &rc->all.head; it = next) {
		struct ddtx_reg *r = REG_OF(it, priv.all);

		next = it->next;
		r->priv.orphan = true;
		r->priv.watch.active = false;
		if (r->priv.where == W_INDEX && !r->priv.refs)
			ddtx_list_remove(&r->priv.lru);
		r->priv.where = W_NONE;
		ddtx_list_remove(&r->priv.all);
		if (!r->priv.refs)
			free(r);
	}
	ddtx_itree_init(&rc->index);
	ddtx_itree_init(&rc->retired);
	ddtx_list_init(&rc->lru);
	rc->last_hit = NULL;
	rc->st.registered_bytes = rc->st.registered_count = rc->st.cached_count = 0;
	__atomic_add_fetch(&rc->gen_base, ddtx_memmon_seq(rc->mon) + 1, __ATOMIC_RELEASE);
	ddtx_memmon_unsubscribe(rc->mon);
	__atomic_store_n(&rc->mon, NULL, __ATOMIC_RELEASE);
}

/* ---- eviction ---- */

static bool over_limits(struct ddtx_regcache *rc)
{
	return (rc->params.max_bytes && rc->st.registered_bytes > rc->params.max_bytes) ||
	       (rc->params.max_count && rc->st.registered_count > rc->params.max_count);
}

static void evict_one(struct ddtx_regcache *rc, struct work *w)
{
	struct ddtx_reg *r = REG_OF(ddtx_list_first(&rc->lru), priv.lru);

	unlist(rc, r, DDTX_REG_EVICTED, w);
	rc->st.evictions++;
}

static void evict_locked(struct ddtx_regcache *rc, struct work *w)
{
	while (over_limits(rc) && !ddtx_list_empty(&rc->lru))
		evict_one(rc, w);
}

/* The wire is out of keys (-FI_ENOSPC): every idle region gives its key back.  true if any. */
static bool evict_idle_locked(struct ddtx_regcache *rc, struct work *w)
{
	if (ddtx_list_empty(&rc->lru))
		return false;
	while (!ddtx_list_empty(&rc->lru))
		evict_one(rc, w);
	return true;
}

/* ---- deferred work ---- */

static void dereg_now(struct ddtx_regcache *rc, struct ddtx_reg *r)
{
	int ret;

	if (!r->priv.orphan) {
		if (rc->mon)
			ddtx_memmon_unwatch(rc->mon, &r->priv.watch);
		ret = ddtx_wire_mr_dereg(rc->wire, r->mr);
		if (ret)
			DDTX_WARN(FI_LOG_MR, "regcache: deregistering [%#lx, +%zu) failed: %d\n",
				  (unsigned long)r->addr, r->len, ret);
	}
	free(r);
}

static void finish(struct ddtx_regcache *rc, struct work *w)
{
	struct ddtx_list_entry *it;
	struct ddtx_list done;

	ddtx_list_init(&done);
	while (!ddtx_list_empty(&w->list)) {
		struct ddtx_list again;
		bool temps = false;

		/* Listener calls, unlocked.  A region carrying a temporary reference cannot be
		 * freed meanwhile, and nobody else reports it while we hold that reference. */
		for (it = w->list.head.next; it != &w->list.head; it = it->next) {
			struct ddtx_reg *r = REG_OF(it, priv.link);

			if (r->priv.notify) {
				r->priv.notify = false;
				r->priv.reported = ddtx_reg_state(r);
				if (w->listener)
					w->listener(w->listener_arg, r);
			}
			temps |= r->priv.tempref;
		}
		if (!temps) {
			while ((it = ddtx_list_pop_front(&w->list)))
				ddtx_list_push_back(&done, it);
			break;
		}
		/* Drop the temporary references; a last one commits the deregistration.  A region
		 * reported MERGED that died meanwhile is reported again, as INVALIDATED. */
		ddtx_list_init(&again);
		ddtx_rlock_lock(&rc->lock);
		while ((it = ddtx_list_pop_front(&w->list))) {
			struct ddtx_reg *r = REG_OF(it, priv.link);

			if (!r->priv.tempref) {
				ddtx_list_push_back(&done, it);
				continue;
			}
			if (ddtx_reg_state(r) == DDTX_REG_INVALIDATED &&
			    r->priv.reported != DDTX_REG_INVALIDATED) {
				r->priv.notify = true;
				ddtx_list_push_back(&again, it);
				continue;
			}
			r->priv.tempref = false;
			if (--r->priv.refs)
				continue;
			if (r->priv.orphan) {
				r->priv.dereg = true;
				ddtx_list_push_back(&done, it);
			} else {
				struct work w2;

				work_init(&w2);
				commit_dereg(rc, r, &w2);
				ddtx_list_pop_front(&w2.list);
				ddtx_list_push_back(&done, it);
			}
		}
		ddtx_rlock_unlock(&rc->lock);
		while ((it = ddtx_list_pop_front(&again)))
			ddtx_list_push_back(&w->list, it);
	}
	while ((it = ddtx_list_pop_front(&done))) {
		struct ddtx_reg *r = REG_OF(it, priv.link);

		if (r->priv.dereg)
			dereg_now(rc, r);
	}
}

static void lock_and_sync(struct ddtx_regcache *rc, struct work *w)
{
	ddtx_rlock_lock(&rc->lock);
	w->listener = rc->listener;
	w->listener_arg = rc->listener_arg;
	sync_locked(rc, w);
}

/* ---- API ---- */

int ddtx_regcache_open(struct ddtx_wire_domain *wire, const struct ddtx_regcache_params *p,
		       struct ddtx_regcache **out)
{
	struct ddtx_regcache *rc;
	int ret;

	if (!wire || !out)
		return -FI_EINVAL;
	rc = calloc(1, sizeof(*rc));
	if (!rc)
		return -FI_ENOMEM;
	ret = ddtx_rlock_init(&rc->lock);
	if (ret) {
		free(rc);
		return -FI_ENOMEM;
	}
	rc->wire = wire;
	if (p)
		rc->params = *p;
	rc->page = (size_t)sysconf(_SC_PAGESIZE);
	ddtx_itree_init(&rc->index);
	ddtx_itree_init(&rc->retired);
	ddtx_list_init(&rc->lru);
	rc->last_hit = NULL;
	ddtx_list_init(&rc->pending);
	ddtx_list_init(&rc->all);
	if (rc->params.monitor) {
		rc->fork_epoch = ddtx_memmon_fork_epoch();
		if (ddtx_memmon_subscribe(&rc->mon))
			rc->mon = NULL;         /* logged once by the monitor */
		else
			rc->mon_seq = ddtx_memmon_seq(rc->mon);
	}
	*out = rc;
	return 0;
}

void ddtx_regcache_close(struct ddtx_regcache *rc)
{
	struct ddtx_list_entry *it;
	size_t busy = 0;

	if (!rc)
		return;
	ddtx_rlock_lock(&rc->lock);
	if (rc->mon && ddtx_memmon_fork_epoch() != rc->fork_epoch)
		orphan_locked(rc);
	while ((it = ddtx_list_pop_front(&rc->all))) {
		struct ddtx_reg *r = REG_OF(it, priv.all);

		busy += r->priv.refs != 0;
		ddtx_rlock_unlock(&rc->lock);
		dereg_now(rc, r);
		ddtx_rlock_lock(&rc->lock);
	}
	ddtx_rlock_unlock(&rc->lock);
	if (busy)
		DDTX_WARN(FI_LOG_MR, "regcache: closed with %zu regions still referenced\n", busy);
	ddtx_memmon_unsubscribe(rc->mon);
	ddtx_rlock_destroy(&rc->lock);
	free(rc);
}

struct acc_ctx {
	uint32_t access;
};

static int access_ok(void *arg, struct ddtx_itree_node *n)
{
	const struct acc_ctx *a = arg;

	return (REG_OF(n, priv.node)->access & a->access) == a->access;
}

struct span_ctx {
	uintptr_t s, e;
	uint32_t access;
};

static int span_fn(void *arg, struct ddtx_itree_node *n)
{
	struct span_ctx *c = arg;

	/* Merging with a region in use would not free it: both would stay registered, and a
	 * layout registered entry by entry would pin its memory over and over. */
	if (REG_OF(n, priv.node)->priv.refs)
		return 0;

	c->s = DDTX_MIN(c->s, n->start);
	c->e = DDTX_MAX(c->e, n->end);
	c->access |= REG_OF(n, priv.node)->access;
	return 0;
}

/* LIVE regions fully inside the new one, with no more access: it replaces them. */
struct supersede_ctx {
	struct ddtx_reg *by;
	struct ddtx_list victims;
};

static int supersede_fn(void *arg, struct ddtx_itree_node *n)
{
	struct supersede_ctx *c = arg;
	struct ddtx_reg *r = REG_OF(n, priv.node);

	if (r != c->by && n->start >= c->by->addr && n->end <= c->by->addr + c->by->len &&
	    (r->access & c->by->access) == r->access)
		ddtx_list_push_back(&c->victims, &r->priv.scan);
	return 0;
}

static struct ddtx_reg *hit_locked(struct ddtx_regcache *rc, uintptr_t s, uintptr_t e,
				   uint32_t access)
{
	/*
	 * The region of the last hit first: a sender's buffer is sent from again and again (the
	 * tree's search was a third of a hit: callgrind, nc_overhead -s 96K, 2026-11-30).  Any
	 * covering region with the access will do, as the tree's answer would.
	 */
	struct ddtx_reg *r = rc->last_hit;
	if (!r || r->priv.node.start > s || r->priv.node.end < e ||
	    (r->access & access) != access) {
		struct acc_ctx a = { access };
		struct ddtx_itree_node *n =
			ddtx_itree_find_covering(&rc->index, s, e, access_ok, &a);
		if (!n)
			return NULL;
		r = rc->last_hit = REG_OF(n, priv.node);
	}
	if (!r->priv.refs++)
		ddtx_list_remove(&r->priv.lru);
	rc->st.hits++;
	return r;
}

/* Miss, phase 1 (lock held): the span to register; LIVE neighbours are merged in while the
 * union stays cheap, so that a chain of touching regions becomes one. */
static struct span_ctx choose_span(struct ddtx_regcache *rc, uintptr_t s, uintptr_t e,
				   uint32_t access, bool merge)
{
	struct span_ctx span = { s, e, access };
	if (!rc->mon || !merge)
		return span;
	uintptr_t ps, pe;
	do {
		ps = span.s;
		pe = span.e;
		ddtx_itree_visit(&rc->index, ps ? ps - 1 : 0, pe + 1, span_fn, &span);
	} while ((span.s != ps || span.e != pe) &&
		 (span.e - span.s) - (e - s) <= DDTX_MAX(e - s, MERGE_SLACK_MIN));
	if ((span.e - span.s) - (e - s) > DDTX_MAX(e - s, MERGE_SLACK_MIN))
		span = (struct span_ctx){ s, e, access };
	return span;
}

/* Miss, phase 1 (lock held): a pending candidate for the span, seen by invalidations while it
 * is registered unlocked. */
static struct ddtx_reg *candidate_new(struct ddtx_regcache *rc, const struct span_ctx *span)
{
	struct ddtx_reg *cand = calloc(1, sizeof(*cand));
	if (!cand)
		return NULL;
	cand->addr = span->s;
	cand->len = span->e - span->s;
	cand->access = span->access;
	cand->priv.refs = 1;
	cand->priv.where = W_PENDING;
	entry_init(&cand->priv.lru);
	entry_init(&cand->priv.all);
	entry_init(&cand->priv.scan);
	ddtx_list_push_back(&rc->pending, &cand->priv.link);
	return cand;
}

/* Miss, phase 2 (lock released): watch the candidate's pages, then register them.  A merged
 * span that cannot be watched shrinks back to the request [s, e).  *watched says whether the
 * memory monitor will report an unmap of it. */
static int watch_and_register(struct ddtx_regcache *rc, struct ddtx_reg *cand, uintptr_t s,
			      uintptr_t e, uint32_t access, bool *watched)
{
	*watched = false;
	if (rc->mon) {
		*watched = !ddtx_memmon_watch(rc->mon, &cand->priv.watch, cand->addr,
					      cand->addr + cand->len);
		if (!*watched && (cand->addr != s || cand->addr + cand->len != e)) {
			cand->addr = s;
			cand->len = e - s;
			cand->access = access;
			*watched = !ddtx_memmon_watch(rc->mon, &cand->priv.watch, s, e);
		}
	}
	struct iovec iov = { (void *)cand->addr, cand->len };
	return ddtx_wire_mr_reg(rc->wire, &iov, 1, DDTX_KEY_INTERNAL, NULL, cand->addr,
				cand->access, &cand->mr);
}

/* Miss, phase 3 (lock held): index a registered, watched candidate as LIVE; the regions it
 * covers are superseded (MERGED). */
static void index_live(struct ddtx_regcache *rc, struct ddtx_reg *cand, struct work *w)
{
	struct supersede_ctx sc = { .by = cand };
	struct ddtx_list_entry *it;
	ddtx_list_init(&sc.victims);
	ddtx_itree_visit(&rc->index, cand->addr, cand->addr + cand->len, supersede_fn, &sc);
	while ((it = ddtx_list_pop_front(&sc.victims))) {
		unlist(rc, REG_OF(it, priv.scan), DDTX_REG_MERGED, w);
		rc->st.merges++;
	}
	cand->priv.node.start = cand->addr;
	cand->priv.node.end = cand->addr + cand->len;
	ddtx_itree_insert(&rc->index, &cand->priv.node);
	cand->priv.where = W_INDEX;
	set_state(cand, DDTX_REG_LIVE);
	rc->st.cached_count++;
	evict_locked(rc, w);
}

/* Finish the deferred work, take the lock again and look for a region that now covers [s, e). */
static struct ddtx_reg *relock_and_hit(struct ddtx_regcache *rc, struct work *w, uintptr_t s,
				       uintptr_t e, uint32_t access)
{
	ddtx_rlock_unlock(&rc->lock);
	finish(rc, w);
	work_init(w);
	lock_and_sync(rc, w);
	return hit_locked(rc, s, e, access);
}

int ddtx_regcache_get(struct ddtx_regcache *rc, const void *addr, size_t len, uint32_t access,
		      struct ddtx_reg **out)
{
	uintptr_t a = (uintptr_t)addr, s, e;
	struct ddtx_reg *r, *cand;
	struct work w;
	int ret = 0;

	if (!rc || !out || !addr || !len || (access & ~ACC_ALL) || len > UINTPTR_MAX - a ||
	    a + len > UINTPTR_MAX - rc->page)
		return -FI_EINVAL;
	s = a & ~(uintptr_t)(rc->page - 1);
	e = (a + len + rc->page - 1) & ~(uintptr_t)(rc->page - 1);

	work_init(&w);
	lock_and_sync(rc, &w);
	r = hit_locked(rc, s, e, access);
	if (!r)
		rc->st.misses++;

	bool merge = true, shrunk = false;
	for (int attempt = 0; !r; attempt++) {
		struct span_ctx span = choose_span(rc, s, e, access, merge);
		cand = candidate_new(rc, &span);
		if (!cand) {
			ret = -FI_ENOMEM;
			break;
		}
		ddtx_rlock_unlock(&rc->lock);
		bool watched;
		ret = watch_and_register(rc, cand, s, e, access, &watched);

		ddtx_rlock_lock(&rc->lock);
		ddtx_list_remove(&cand->priv.link);
		cand->priv.where = W_NONE;
		if (ret) {
			bool merged = cand->addr != s || cand->len != e - s;
			ddtx_rlock_unlock(&rc->lock);
			if (rc->mon)
				ddtx_memmon_unwatch(rc->mon, &cand->priv.watch);
			free(cand);
			ddtx_rlock_lock(&rc->lock);
			if (ret == -FI_ENOSPC && !shrunk && evict_idle_locked(rc, &w)) {
				/* Keys held only by the cache are cheaper to give back than a
				 * transfer is to lose its zero copy: once, then try again. */
				shrunk = true;
				ret = 0;
				r = relock_and_hit(rc, &w, s, e, access);
				continue;
			}
			if (!merged || ret == -FI_ENOMEM)
				break;
			/* The union failed where the request alone may not: try that. */
			ret = 0;
			merge = false;
			r = relock_and_hit(rc, &w, s, e, access);
			continue;
		}
		ddtx_list_push_back(&rc->all, &cand->priv.all);
		rc->st.registered_bytes += cand->len;
		rc->st.registered_count++;
		sync_locked(rc, &w);
		if (!rc->mon)
			watched = false; /* forked meanwhile */
		if (cand->priv.doomed) {
			/* Part of it was unmapped while we registered: the key may cover pages that
			 * are gone.  Throw it away and start again. */
			cand->priv.refs = 0;
			commit_dereg(rc, cand, &w);
			if (attempt + 1 >= MAX_ATTEMPTS) {
				ret = -FI_EAGAIN;
				break;
			}
			r = relock_and_hit(rc, &w, s, e, access);
			continue;
		}
		if (!watched) {
			set_state(cand, DDTX_REG_UNCACHED);
			rc->st.uncached++;
			evict_locked(rc, &w);
			r = cand;
			break;
		}
		/* Another thread may have published a covering region meanwhile. */
		r = hit_locked(rc, s, e, access);
		if (r) {
			rc->st.hits--; /* this call was counted as a miss */
			cand->priv.refs = 0;
			commit_dereg(rc, cand, &w);
			break;
		}
		index_live(rc, cand, &w);
		r = cand;
	}
	ddtx_rlock_unlock(&rc->lock);
	finish(rc, &w);
	if (ret)
		return ret;
	*out = r;
	return 0;
}

void ddtx_regcache_put(struct ddtx_regcache *rc, struct ddtx_reg *reg)
{
	struct work w;

	if (!rc || !reg)
		return;
	work_init(&w);
	lock_and_sync(rc, &w);
	if (!reg->priv.refs) {
		ddtx_rlock_unlock(&rc->lock);
		DDTX_WARN(FI_LOG_MR, "regcache: put of an unreferenced region\n");
		finish(rc, &w);
		return;
	}
	if (--reg->priv.refs == 0) {
		if (reg->priv.orphan) {
			ddtx_rlock_unlock(&rc->lock);
			finish(rc, &w);
			free(reg);
			return;
		}
		if (reg->priv.where == W_INDEX) {
			ddtx_list_push_back(&rc->lru, &reg->priv.lru);
			evict_locked(rc, &w);
		} else {
			commit_dereg(rc, reg, &w);
		}
	}
	ddtx_rlock_unlock(&rc->lock);
	finish(rc, &w);
}

void ddtx_regcache_set_listener(struct ddtx_regcache *rc,
				void (*on_invalidate)(void *arg, const struct ddtx_reg *reg),
				void *arg)
{
	if (!rc)
		return;
	ddtx_rlock_lock(&rc->lock);
	rc->listener = on_invalidate;
	rc->listener_arg = arg;
	ddtx_rlock_unlock(&rc->lock);
}

void ddtx_regcache_flush(struct ddtx_regcache *rc)
{
	struct work w;

	if (!rc)
		return;
	work_init(&w);
	lock_and_sync(rc, &w);
	evict_locked(rc, &w);
	ddtx_rlock_unlock(&rc->lock);
	finish(rc, &w);
}

void ddtx_regcache_invalidate(struct ddtx_regcache *rc, const void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;
	struct work w;

	if (!rc || !len)
		return;
	work_init(&w);
	lock_and_sync(rc, &w);
	invalidate_range_locked(rc, a & ~(uintptr_t)(rc->page - 1),
				len > UINTPTR_MAX - a ? UINTPTR_MAX : a + len, &w);
	__atomic_add_fetch(&rc->gen_base, 1, __ATOMIC_RELEASE);
	ddtx_rlock_unlock(&rc->lock);
	finish(rc, &w);
}

uint64_t ddtx_regcache_generation(struct ddtx_regcache *rc)
{
	struct ddtx_memmon_sub *mon = __atomic_load_n(&rc->mon, __ATOMIC_ACQUIRE);
	uint64_t g = __atomic_load_n(&rc->gen_base, __ATOMIC_ACQUIRE);

	return g + (mon ? ddtx_memmon_seq(mon) : 0);
}

void ddtx_regcache_stats(struct ddtx_regcache *rc, struct ddtx_regcache_stats *st)
{
	ddtx_rlock_lock(&rc->lock);
	*st = rc->st;
	ddtx_rlock_unlock(&rc->lock);
	st->generation = ddtx_regcache_generation(rc);
}

bool ddtx_regcache_monitored(struct ddtx_regcache *rc)
{
	bool m;

	ddtx_rlock_lock(&rc->lock);
	m = rc->mon != NULL;
	ddtx_rlock_unlock(&rc->lock);
	return m;
}
