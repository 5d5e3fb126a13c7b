/* SPDX-License-Identifier: BSD-2-Clause */
/* Registering a layout's memory, now or on the registration thread. */
#include <sched.h>
#include <stdlib.h>

#include <rdma/fi_errno.h>
#include "common/log.h"
#include "common/clock.h"
#include "common/minmax.h"
#include "engine/mkey_pool.h"
#include "engine/regcache.h"
#include "engine/layout_cache.h"

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
		/* Counted before it is published: whoever sees the state also sees the count. */
		ddtx_rlock_lock(&lc->lock);
		lc->st.reg_failures++;
		ddtx_rlock_unlock(&lc->lock);
		atomic_store_explicit(&l->state, DDTX_LAYOUT_FAILED, memory_order_release);
		return ret;
	}
	l->regs = regs;
	l->nregs = n;
	ddtx_rlock_lock(&lc->lock);
	lc->st.registered++;
	ddtx_rlock_unlock(&lc->lock);
	atomic_store_explicit(&l->state, DDTX_LAYOUT_READY, memory_order_release);
	size_t m = lc->caps->max_mkey_entries;
	if (m > 1) {
		struct ddtx_window_set *ws = ddtx_layout_windows(lc, l, (m - 1) * l->st.min_block);
		if (ws)
			ddtx_window_set_put(lc, ws);
	}
	ddtx_rlock_lock(&lc->lock);
	lc->st.reg_ns += ddtx_time_ns() - t0;
	ddtx_rlock_unlock(&lc->lock);
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
	ddtx_rlock_lock(&lc->lock);
	l->refs++;
	ddtx_list_push_back(&lc->queue, &l->queue);
	ddtx_rlock_wake(&lc->wake);
	ddtx_rlock_unlock(&lc->lock);
}

/* The registration thread (LAH paper, Algorithm 2): the main thread never waits for it. */
void *ddtx_layout_reg_thread(void *arg)
{
	struct ddtx_layout_cache *lc = arg;
	ddtx_rlock_lock(&lc->lock);
	while (!lc->stop) {
		struct ddtx_list_entry *e = ddtx_list_pop_front(&lc->queue);
		if (!e) {
			ddtx_rlock_wait(&lc->lock, &lc->wake, 1000);
			continue;
		}
		struct ddtx_layout *l = ddtx_container_of(e, struct ddtx_layout, queue);
		bool skip = l->dead;
		ddtx_rlock_unlock(&lc->lock);
		if (!skip)
			register_layout(lc, l);
		ddtx_layout_put(lc, l);
		ddtx_rlock_lock(&lc->lock);
	}
	ddtx_rlock_unlock(&lc->lock);
	return NULL;
}
