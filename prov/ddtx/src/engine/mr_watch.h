/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Watches over application memory registrations (fi_mr_reg): tells their owner when the memory
 * a registration was made for goes away, so that its key can be revoked before a peer's RMA
 * lands in whatever is mapped at that address next.
 *
 * A NIC pins the pages of a registration: after munmap and a new mapping at the same address
 * it still writes the old pages, never the new ones.  The shm wire has no pinning (its DMA is
 * process_vm_writev into virtual addresses), so the only way to keep that promise is to revoke
 * the key once the memory monitor (engine/memmon.h) reports any of its pages unmapped,
 * remapped or returned to the system (madvise DONTNEED / FREE / REMOVE: the process then sees
 * fresh pages where a NIC would still write the pinned old ones, so the registration no longer
 * names the memory it was made for either).
 *
 * The monitor's handler thread only fills a ring; events reach registrations when the owner
 * calls ddtx_mr_watch_poll(), which it does at each of its entry points (progress, data calls,
 * registration).  So a revocation takes effect at the owner's first poll after the munmap
 * returned, not at the munmap itself: a peer's write that is accepted before that poll still
 * lands (in whatever is mapped there by then).  If the monitor's ring overflowed between two
 * polls every registration is revoked (nothing tells which ranges went away).
 *
 * Without a monitor (FI_DDTX_MR_MONITOR=0, userfaultfd unavailable, a forked child) and for
 * memory the monitor cannot watch (file or SysV shm mappings, ranges of another userfaultfd),
 * nothing is ever reported: those registrations keep their keys until closed, as on a wire
 * without this module.
 *
 * Threads: not thread safe; the owner serialises every call (the domain lock).  The revocation
 * callback runs inside ddtx_mr_watch_poll() on the caller's thread, with no monitor lock held.
 */
#ifndef DDTX_MR_WATCH_H
#define DDTX_MR_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>

struct ddtx_mr_watch;                   /* one per domain: the monitor subscription, the index */
struct ddtx_mr_watched;                 /* one per registration */

/* monitor false: never watch (ddtx_mr_watch_monitored() false).  -FI_ENOMEM only. */
int ddtx_mr_watch_open(bool monitor, struct ddtx_mr_watch **out);
/* Every registration must have been removed. */
void ddtx_mr_watch_close(struct ddtx_mr_watch *mw);
/* Whether a memory monitor backs this watch (false: add() watches nothing). */
bool ddtx_mr_watch_monitored(const struct ddtx_mr_watch *mw);

/*
 * Watch the pages of iov[0..count) for one registration; gone(arg) is called (once, from a
 * later poll) when any of them goes away.  Polls first, so that events from before this call
 * (an earlier mapping at the same address) are never blamed on the new registration.  *out is
 * always set on success; *complete says whether every non-empty segment is watched (false
 * without a monitor or for unwatchable memory).  -FI_ENOMEM only.
 */
int ddtx_mr_watch_add(struct ddtx_mr_watch *mw, const struct iovec *iov, size_t count,
		      void (*gone)(void *arg), void *arg, struct ddtx_mr_watched **out,
		      bool *complete);
/* Stop watching and free (also after gone() was called). */
void ddtx_mr_watch_remove(struct ddtx_mr_watch *mw, struct ddtx_mr_watched *m);

/* Apply what the monitor saw: gone() for every registration whose memory went away. */
void ddtx_mr_watch_poll(struct ddtx_mr_watch *mw);

#endif /* DDTX_MR_WATCH_H */
