/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The memory monitor: tells registration caches when registered memory is unmapped or returned
 * to the system, so that a freed and re-mapped address never reaches a stale registration.
 *
 * One monitor per process (a VMA can belong to only one userfaultfd context), shared by every
 * cache (subscriber).  It is a userfaultfd in write-protect mode that never write-protects
 * anything, so it delivers no page faults at all, only the events UNMAP (munmap, mremap shrink,
 * brk shrink, glibc free() of an mmapped chunk, mmap MAP_FIXED over a range), REMOVE
 * (madvise DONTNEED / FREE / REMOVE) and REMAP (mremap move), read by one handler thread into a
 * ring.  See memmon.c for the evidence behind this choice.
 *
 * Guarantee: once munmap() (or madvise, mremap, ...) of a watched range has returned in some
 * thread, ddtx_memmon_seq() called afterwards by any thread that synchronises with it returns a
 * larger value, and ddtx_memmon_drain() reports the range.
 *
 * Lock rules: the handler thread takes only the monitor's ring lock and never allocates, frees,
 * unmaps or logs; nothing here calls back into a subscriber except ddtx_memmon_drain()'s fn,
 * on the caller's thread.  Callers may hold their own locks around every call.
 */
#ifndef DDTX_MEMMON_H
#define DDTX_MEMMON_H

#include <stdbool.h>
#include <stdint.h>

#include "common/itree.h"

struct ddtx_memmon_sub;

/* A watched range, embedded in the caller's object (one per registered region). */
struct ddtx_memmon_watch {
	struct ddtx_itree_node node;
	bool active;
};

/*
 * Subscribe to the process-wide monitor, starting it on first use.  -FI_ENOSYS (with one
 * logged warning per process) when userfaultfd is unavailable: kernel without it or without
 * write-protect mode, seccomp, no permission.  FI_DDTX_MEMMON-style opt-outs are the caller's.
 */
int ddtx_memmon_subscribe(struct ddtx_memmon_sub **out);
/* Leave; the last subscriber stops the thread and releases every watched range. */
void ddtx_memmon_unsubscribe(struct ddtx_memmon_sub *sub);

/*
 * Watch [start, end) (page aligned).  0 when watched; -FI_EINVAL when this memory cannot be
 * watched (file-backed or SysV shm mapping, hugetlbfs misaligned, owned by another userfaultfd,
 * not mapped): the caller must then not cache it.  -FI_ENOSYS in a forked child.
 */
int ddtx_memmon_watch(struct ddtx_memmon_sub *sub, struct ddtx_memmon_watch *w,
		      uintptr_t start, uintptr_t end);
/* Stop watching (releases the kernel registration of pages no other watch covers). */
void ddtx_memmon_unwatch(struct ddtx_memmon_sub *sub, struct ddtx_memmon_watch *w);

/*
 * Count of events the monitor has received (monotonic; waits out an event being read right
 * now, so a munmap that has returned is always counted).  A subscriber compares it with the
 * value its last drain returned: different exactly when there is something to drain.
 * Lock-free: two atomic loads in the common case.  Start from its value at subscription.
 */
uint64_t ddtx_memmon_seq(struct ddtx_memmon_sub *sub);

/*
 * Report every range that went away since event number `from` (a value returned by
 * ddtx_memmon_seq or by the previous drain): fn(arg, start, end), called with the ring lock held
 * (fn must not call into the monitor, sleep or unmap).  If `from` fell out of the ring, fn gets
 * [0, UINTPTR_MAX) once: everything may be gone.  Returns the sequence number to pass next time.
 */
uint64_t ddtx_memmon_drain(struct ddtx_memmon_sub *sub,
			   void (*fn)(void *arg, uintptr_t start, uintptr_t end), void *arg,
			   uint64_t from);

/* Incremented in every forked child: a subscriber that sees it change must stop trusting
 * (and stop deregistering) what its parent registered. */
uint64_t ddtx_memmon_fork_epoch(void);

/* For tests: events received, watch count, whether the handler thread runs. */
struct ddtx_memmon_info {
	bool running;
	uint64_t events;
	uint64_t watches;
	uint64_t features;
};
void ddtx_memmon_info(struct ddtx_memmon_info *info);
/* For tests: make the next start of the monitor fail as if userfaultfd were unavailable. */
void ddtx_memmon_test_set_unavailable(bool unavailable);

#endif /* DDTX_MEMMON_H */
