/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The watches of mr_watch.h.  Each non-empty segment of a registration is watched on its
 * page-aligned span: a monitor watch (the kernel registration) plus a node in our own interval
 * index, which maps an event's range back to the registrations it touches.  A poll drains the
 * monitor into a list of hit registrations (the drain callback runs under the monitor's ring
 * lock, where nothing may call into the monitor), then releases their watches and calls gone()
 * with no monitor lock held.  The same pattern as the registration cache's (regcache.c).
 */
#include "engine/mr_watch.h"

#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <rdma/fi_errno.h>
#include "common/itree.h"
#include "common/list.h"
#include "common/log.h"
#include "engine/memmon.h"

struct seg {
	struct ddtx_memmon_watch mon;   /* the monitor's watch (kernel registration) */
	struct ddtx_itree_node node;    /* our index: range -> registration */
	struct ddtx_mr_watched *owner;
	bool indexed;
};

struct ddtx_mr_watched {
	struct seg *segs;
	size_t nsegs;
	void (*gone)(void *arg);
	void *arg;
	bool hit;                       /* on the poll's hit list */
	struct ddtx_list_entry link;
};

struct ddtx_mr_watch {
	struct ddtx_memmon_sub *mon;    /* NULL: unmonitored */
	uint64_t seq;                   /* monitor events drained so far */
	uint64_t fork_epoch;
	struct ddtx_itree index;
	struct ddtx_list hits;          /* during a poll */
	uintptr_t page;
};

int ddtx_mr_watch_open(bool monitor, struct ddtx_mr_watch **out)
{
	struct ddtx_mr_watch *mw = calloc(1, sizeof(*mw));

	if (!mw)
		return -FI_ENOMEM;
	ddtx_itree_init(&mw->index);
	ddtx_list_init(&mw->hits);
	mw->page = (uintptr_t)sysconf(_SC_PAGESIZE);
	if (monitor) {
		mw->fork_epoch = ddtx_memmon_fork_epoch();
		if (ddtx_memmon_subscribe(&mw->mon))
			mw->mon = NULL;         /* logged once by the monitor */
		else
			mw->seq = ddtx_memmon_seq(mw->mon);
	}
	*out = mw;
	return 0;
}

void ddtx_mr_watch_close(struct ddtx_mr_watch *mw)
{
	if (!mw)
		return;
	if (mw->index.count)
		DDTX_WARN(FI_LOG_MR, "mr_watch: closed with %zu ranges still watched\n",
			  mw->index.count);
	ddtx_memmon_unsubscribe(mw->mon);
	free(mw);
}

bool ddtx_mr_watch_monitored(const struct ddtx_mr_watch *mw)
{
	return mw && mw->mon;
}

static void release(struct ddtx_mr_watch *mw, struct ddtx_mr_watched *m)
{
	for (size_t i = 0; i < m->nsegs; i++) {
		struct seg *s = &m->segs[i];

		if (s->indexed) {
			ddtx_itree_remove(&mw->index, &s->node);
			s->indexed = false;
		}
		/* (a no-op in a forked child, whose monitor is gone) */
		ddtx_memmon_unwatch(mw->mon, &s->mon);
	}
}

static int hit_fn(void *arg, struct ddtx_itree_node *n)
{
	struct ddtx_mr_watch *mw = arg;
	struct ddtx_mr_watched *m = ddtx_container_of(n, struct seg, node)->owner;

	if (!m->hit) {
		m->hit = true;
		ddtx_list_push_back(&mw->hits, &m->link);
	}
	return 0;
}

/* Under the monitor's ring lock: only look up and list (fn of ddtx_memmon_drain). */
static void event_fn(void *arg, uintptr_t start, uintptr_t end)
{
	struct ddtx_mr_watch *mw = arg;

	ddtx_itree_visit(&mw->index, start, end, hit_fn, mw);
}

/* Apart from the poll's checks: with the drain in the same function its frame (registers
 * saved and restored) was 16 of the 25 instructions of a poll that finds nothing, and each
 * small message polls three times (callgrind). */
static __attribute__((noinline)) void poll_events(struct ddtx_mr_watch *mw)
{
	struct ddtx_list_entry *it;

	if (ddtx_memmon_fork_epoch() != mw->fork_epoch) {
		/* A forked child: the monitor does not run here; what the parent registered is
		 * the parent's to revoke.  Stop watching (the index goes with the removes). */
		ddtx_memmon_unsubscribe(mw->mon);
		mw->mon = NULL;
		return;
	}
	mw->seq = ddtx_memmon_drain(mw->mon, event_fn, mw, mw->seq);
	while ((it = ddtx_list_pop_front(&mw->hits))) {
		struct ddtx_mr_watched *m = ddtx_container_of(it, struct ddtx_mr_watched, link);

		/* Released before gone(): never reported twice, and gone() may remove it. */
		release(mw, m);
		m->hit = false;
		m->gone(m->arg);
	}
}

void ddtx_mr_watch_poll(struct ddtx_mr_watch *mw)
{
	if (mw && mw->mon &&
	    (ddtx_memmon_fork_epoch() != mw->fork_epoch || ddtx_memmon_seq(mw->mon) != mw->seq))
		poll_events(mw);
}

int ddtx_mr_watch_add(struct ddtx_mr_watch *mw, const struct iovec *iov, size_t count,
		      void (*gone)(void *arg), void *arg, struct ddtx_mr_watched **out,
		      bool *complete)
{
	struct ddtx_mr_watched *m;

	ddtx_mr_watch_poll(mw);
	m = calloc(1, sizeof(*m));
	if (!m)
		return -FI_ENOMEM;
	m->segs = count ? calloc(count, sizeof(*m->segs)) : NULL;
	if (count && !m->segs) {
		free(m);
		return -FI_ENOMEM;
	}
	m->nsegs = count;
	m->gone = gone;
	m->arg = arg;
	*complete = true;
	for (size_t i = 0; i < count; i++) {
		uintptr_t base = (uintptr_t)iov[i].iov_base, len = iov[i].iov_len;
		uintptr_t s = base & ~(mw->page - 1), e;
		struct seg *sg = &m->segs[i];

		sg->owner = m;
		if (!len)
			continue;
		if (!mw->mon || base + len < base || base + len > UINTPTR_MAX - mw->page) {
			*complete = false;
			continue;
		}
		e = (base + len + mw->page - 1) & ~(mw->page - 1);
		if (ddtx_memmon_watch(mw->mon, &sg->mon, s, e)) {
			*complete = false;      /* file or SysV shm mapping, another userfaultfd */
			continue;
		}
		sg->node.start = s;
		sg->node.end = e;
		ddtx_itree_insert(&mw->index, &sg->node);
		sg->indexed = true;
	}
	*out = m;
	return 0;
}

void ddtx_mr_watch_remove(struct ddtx_mr_watch *mw, struct ddtx_mr_watched *m)
{
	if (!m)
		return;
	release(mw, m);
	free(m->segs);
	free(m);
}
