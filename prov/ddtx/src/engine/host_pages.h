/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Pages known to be host memory, so that a data call on a host with the CUDA driver does not
 * ask the driver (cuPointerGetAttributes) about every iov segment: once a segment's first page
 * was classified as host memory it is remembered here, per domain, until the memory monitor
 * reports that page unmapped, remapped or returned to the system (engine/mr_watch.h).  Only
 * the page holding a segment's start is learned: that is the address the driver was asked
 * about, so the cache answers exactly what the driver answered and nothing more.
 *
 * Adjacent pages merge into one run (a vector of many blocks over a buffer becomes one entry).
 * Without a monitor (FI_DDTX_MR_MONITOR=0, no userfaultfd, a forked child) and for memory the
 * monitor cannot watch (file or SysV shm mappings) nothing is learned: every lookup misses and
 * the caller asks the driver, as without this cache.  Device memory is never learned here.
 *
 * Threads: not thread safe; the owner serialises every call (the domain lock), as mr_watch's.
 */
#ifndef DDTX_HOST_PAGES_H
#define DDTX_HOST_PAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ddtx_mr_watch;
struct ddtx_host_pages;

/* Runs kept at most; learning one more when full forgets them all (a rare, safe reset). */
#define DDTX_HOST_PAGES_MAX_RUNS 1024

/* mw: the domain's watch (outlives the cache).  -FI_ENOMEM only. */
int ddtx_host_pages_open(struct ddtx_mr_watch *mw, struct ddtx_host_pages **out);
void ddtx_host_pages_close(struct ddtx_host_pages *hp);

/* Is the page holding addr known to be host memory?  (Applies the monitor's events first
 * only when the caller polled mr_watch; the data calls do, at entry.) */
bool ddtx_host_pages_known(struct ddtx_host_pages *hp, const void *addr);

/* The driver said addr is host memory: remember its page if the monitor can watch it. */
void ddtx_host_pages_learn(struct ddtx_host_pages *hp, const void *addr);

/* For tests and statistics. */
struct ddtx_host_pages_info {
	size_t runs;                    /* disjoint runs of pages now known */
	uint64_t learned;               /* pages learned */
	uint64_t forgotten;             /* runs dropped because the monitor reported them */
	uint64_t resets;                /* whole-cache resets (full, or the monitor went away) */
};
void ddtx_host_pages_info(const struct ddtx_host_pages *hp, struct ddtx_host_pages_info *info);

#endif /* DDTX_HOST_PAGES_H */
