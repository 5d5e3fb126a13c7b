/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Domain-wide data-path state: the DDT engine's caches, mkey pool and cost model, shared by the
 * endpoints of a domain (all under the domain lock, except what the engine locks itself).
 */
#ifndef DDTX_PDOMAIN_H
#define DDTX_PDOMAIN_H

#include <stdatomic.h>

#include "common/list.h"
#include "common/rlock.h"
#include "engine/contig_choice.h"
#include "engine/cost.h"
#include "engine/cost_bias.h"
#include "engine/hmem_way_cost.h"
#include "engine/store_choice.h"
#include "proto/proto.h"

struct ddtx_regcache;
struct ddtx_mkey_pool;
struct ddtx_layout_cache;
struct ddtx_mr_watch;
struct ddtx_host_pages;
struct ddtx_ipc_cache;

/* Devices whose CUDA IPC caches a domain keeps (hmem_ipc.c); others are staged. */
#define DDTX_PD_IPC_DEVICES 8
/* Device allocations whose buffer ids direct transfers remember (proto/hmem_direct.c). */
#define DDTX_PD_DIRECT_ALLOCS 64

struct ddtx_direct_alloc {
	uint64_t base, size, buffer_id; /* size 0: a free entry */
};

struct ddtx_proto_domain {
	struct ddtx_rlock *lock;            /* the owner's domain lock */
	struct ddtx_wire_domain *wire;
	struct ddtx_list eps;               /* struct ddtx_proto_ep.pd_entry */
	struct fi_ddtx_stats stats;         /* operation counts; engine fields filled on demand */
	struct ddtx_regcache *regcache;
	struct ddtx_mkey_pool *pool;
	struct ddtx_layout_cache *layouts;
	struct ddtx_mr_watch *mr_watch;     /* application MRs revoked when their memory goes */
	struct ddtx_host_pages *host_pages; /* pages the CUDA driver called host memory */
	struct ddtx_ipc_cache *ipc[DDTX_PD_IPC_DEVICES]; /* CUDA IPC handles, per device */
	struct ddtx_direct_alloc direct_allocs[DDTX_PD_DIRECT_ALLOCS];
	struct ddtx_list app_mrs;           /* struct ddtx_proto_mr: what a peer's key names here */
	bool hmem;                          /* opened with FI_HMEM: device memory accepted */
	struct ddtx_cost_model cost;
	struct ddtx_cost_bias cost_bias;    /* the lines' corrections per layout shape */
	struct ddtx_contig_choice contig;   /* how contiguous rendezvous move below 1 MiB (choose.c) */
	/* contiguous rendezvous tried by the pull (SGL) and by PACK, per size class (choose.c):
	 * timed, and decided and not yet finished */
	uint8_t contig_timed[2][64];
	uint8_t contig_trying[2][64];
	struct ddtx_store_choice stores;    /* PACK's stores per layout shape (pack_stores.c) */
	/* how device memory is copied (IPC receives, host staging), learned per kind of copy */
	struct ddtx_hmem_way_cost hmem_way[DDTX_HMEM_WAY_KINDS];
	uint64_t zcopy_not_ready;
	uint64_t umr_fallbacks;
	uint64_t rmkey_hits, rmkey_misses;   /* summed from closed endpoints */
	uint64_t unexp_held;                /* credit.c: unexpected payload bytes held now */
	/* ack.c: the ACK timer (started at the first ACK owed; under lock but its thread) */
	pthread_t ack_timer;
	struct ddtx_rlock_cond ack_wake;
	bool ack_timer_on, ack_timer_failed, ack_parked;
	atomic_bool ack_stop;               /* set without the lock at exit (unload) */
};

#endif /* DDTX_PDOMAIN_H */
