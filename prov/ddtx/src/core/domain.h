/* SPDX-License-Identifier: BSD-2-Clause */
/* fi_domain: the lock every call of its objects takes, its endpoints, and proto's domain. */
#ifndef DDTX_CORE_DOMAIN_H
#define DDTX_CORE_DOMAIN_H

#include <pthread.h>

#include "common/list.h"
#include "common/rlock.h"
#include "core/fabric.h"
#include "proto/proto.h"

struct ddtx_domain {
	struct fid_domain fid;
	struct ddtx_fabric *fabric;
	atomic_int ref;                  /* endpoints, AVs, CQs, counters, MRs opened on it */
	struct fi_info *info;            /* the fi_info it was opened with (fi_dupinfo) */
	uint64_t mr_mode;
	enum fi_threading threading;
	/*
	 * One lock serialises the data path and progress of everything opened on the domain.
	 * FI_THREAD_DOMAIN callers pay one uncontended lock per call; FI_THREAD_SAFE is then
	 * trivially correct.  Recursive because CQ reads progress endpoints that write CQs.
	 */
	struct ddtx_rlock lock;
	struct ddtx_list eps;            /* struct ddtx_ep.domain_entry: progressed by CQ reads */
	struct ddtx_proto_domain *proto; /* the data path: engine and wire domain (proto/proto.h) */
	struct ddtx_list_entry open_entry; /* in the list of open domains (FI_DDTX_STATS at exit) */
};

/* FI_DDTX_STATS: print the statistics of every domain still open (provider cleanup). */
void ddtx_domain_stats_at_exit(void);
/* fi_fini unloads the provider: stop the threads of domains never closed (their code goes). */
void ddtx_domain_stop_threads_at_exit(void);

int ddtx_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		     struct fid_domain **domain, void *context);
/* The ddtx domain behind a fid_domain, or NULL (with a warning) if it is not one. */
struct ddtx_domain *ddtx_domain_of(struct fid_domain *domain);
/* Progress every enabled endpoint of the domain; takes the domain lock. */
void ddtx_domain_progress(struct ddtx_domain *domain);
/* The same with the domain lock already held: a CQ poll takes the (recursive) lock once, not
 * twice; the second lock/unlock pair was 15% of an idle poll loop's samples (perf, 1 KiB
 * ping-pong). */
void ddtx_domain_progress_locked(struct ddtx_domain *domain);

static inline void ddtx_domain_lock(struct ddtx_domain *d)
{
	ddtx_rlock_lock(&d->lock);
}

static inline void ddtx_domain_unlock(struct ddtx_domain *d)
{
	ddtx_rlock_unlock(&d->lock);
}

#endif /* DDTX_CORE_DOMAIN_H */
