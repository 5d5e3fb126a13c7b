/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The cache of host_pages.h: an interval tree of disjoint runs of pages, each run watched
 * through mr_watch, whose gone() drops the run.  A one-run hint answers the common case (the
 * segments of one buffer, one after another) without a tree walk.
 */
#include "engine/host_pages.h"

#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

#include <rdma/fi_errno.h>
#include "common/itree.h"
#include "common/list.h"
#include "engine/mr_watch.h"

struct run {
	struct ddtx_itree_node node;    /* [start, end), page aligned */
	struct ddtx_host_pages *hp;
	struct ddtx_mr_watched *watched;
};

struct ddtx_host_pages {
	struct ddtx_mr_watch *mw;
	struct ddtx_itree runs;
	struct run *hint;               /* the run that answered last */
	uintptr_t page;
	struct ddtx_host_pages_info info;
};

int ddtx_host_pages_open(struct ddtx_mr_watch *mw, struct ddtx_host_pages **out)
{
	struct ddtx_host_pages *hp = calloc(1, sizeof(*hp));

	if (!hp)
		return -FI_ENOMEM;
	hp->mw = mw;
	ddtx_itree_init(&hp->runs);
	hp->page = (uintptr_t)sysconf(_SC_PAGESIZE);
	*out = hp;
	return 0;
}

static void run_drop(struct ddtx_host_pages *hp, struct run *r)
{
	if (hp->hint == r)
		hp->hint = NULL;
	ddtx_itree_remove(&hp->runs, &r->node);
	ddtx_mr_watch_remove(hp->mw, r->watched);
	free(r);
}

static void drop_all(struct ddtx_host_pages *hp)
{
	while (hp->runs.root)
		run_drop(hp, ddtx_container_of(hp->runs.root, struct run, node));
}

void ddtx_host_pages_close(struct ddtx_host_pages *hp)
{
	if (!hp)
		return;
	drop_all(hp);
	free(hp);
}

/* mr_watch's gone(): some page of the run was unmapped or replaced. */
static void run_gone(void *arg)
{
	struct run *r = arg;

	r->hp->info.forgotten++;
	run_drop(r->hp, r);
}

static struct run *run_at(struct ddtx_host_pages *hp, uintptr_t p)
{
	struct ddtx_itree_node *n = ddtx_itree_find_covering(&hp->runs, p, p + 1, NULL, NULL);

	return n ? ddtx_container_of(n, struct run, node) : NULL;
}

bool ddtx_host_pages_known(struct ddtx_host_pages *hp, const void *addr)
{
	uintptr_t p = (uintptr_t)addr;
	struct run *r = hp->hint;

	if (!hp->runs.count)
		return false;
	if (!ddtx_mr_watch_monitored(hp->mw)) {
		/* A forked child: nothing reports unmaps any more. */
		hp->info.resets++;
		drop_all(hp);
		return false;
	}
	if (r && p >= r->node.start && p < r->node.end)
		return true;
	if (!(r = run_at(hp, p)))
		return false;
	hp->hint = r;
	return true;
}

void ddtx_host_pages_learn(struct ddtx_host_pages *hp, const void *addr)
{
	uintptr_t s = (uintptr_t)addr & ~(hp->page - 1), e;
	struct run *left, *right, *r;
	bool complete;

	if (!ddtx_mr_watch_monitored(hp->mw) || s > UINTPTR_MAX - 2 * hp->page ||
	    run_at(hp, s))
		return;
	if (hp->runs.count >= DDTX_HOST_PAGES_MAX_RUNS) {
		hp->info.resets++;
		drop_all(hp);
	}
	e = s + hp->page;
	/* Merge with the runs just before and after: their bounds, not the runs themselves,
	 * since adding the watch applies pending monitor events (which may drop them). */
	uintptr_t ls = 0, re = 0;
	if (s && (left = run_at(hp, s - 1)))
		ls = left->node.start;
	if ((right = run_at(hp, e)))
		re = right->node.end;
	if (!(r = calloc(1, sizeof(*r))))
		return;
	r->hp = hp;
	r->node.start = ls ? ls : s;
	r->node.end = re ? re : e;
	struct iovec span = { (void *)r->node.start, r->node.end - r->node.start };
	if (ddtx_mr_watch_add(hp->mw, &span, 1, run_gone, r, &r->watched, &complete)) {
		free(r);
		return;
	}
	/* Unwatchable (file or shm mapping), or a neighbour went away meanwhile: its pages may
	 * hold something else now, so nothing of the span is trusted. */
	left = ls ? run_at(hp, ls) : NULL;
	right = re ? run_at(hp, re - 1) : NULL;
	if (!complete || (ls && (!left || left->node.start != ls)) ||
	    (re && (!right || right->node.end != re))) {
		ddtx_mr_watch_remove(hp->mw, r->watched);
		free(r);
		return;
	}
	/* The new watch is in place before the old ones go: no unmap falls between them. */
	if (left)
		run_drop(hp, left);
	if (right)
		run_drop(hp, right);
	ddtx_itree_insert(&hp->runs, &r->node);
	hp->hint = r;
	hp->info.learned++;
}

void ddtx_host_pages_info(const struct ddtx_host_pages *hp, struct ddtx_host_pages_info *info)
{
	*info = hp->info;
	info->runs = hp->runs.count;
}
