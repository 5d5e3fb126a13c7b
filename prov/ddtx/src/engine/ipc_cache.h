/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CUDA IPC handle caches for device memory moved between processes of one host.
 *
 * Imports: a peer's device allocations mapped into this process (cuIpcOpenMemHandle costs tens
 * of microseconds and a mapping is good for as long as the allocation lives), keyed by peer (an
 * owner, the endpoint, and its peer handle) and the allocation's buffer id.  The buffer id is what says the allocation changed: the peer
 * sends the id with the handle, and a cached mapping of the same peer whose range overlaps a
 * handle with another id (or other handle bytes) is closed before the new one is opened, so a
 * freed and re-allocated range never reaches the old mapping.  Bounded: the least recently
 * used mapping is closed when a new one would exceed the bound.
 *
 * Exports: our own allocations' handles (cuIpcGetMemHandle), keyed by the allocation's base and
 * checked against the buffer id the driver gives the address now (a freed and re-allocated base
 * gets a new id, so a stale handle is never sent).
 *
 * The driver is reached through ops (hmem's in the provider, counting stand-ins in the unit
 * tests).  Not thread safe: the owner serialises every call (the domain lock).
 */
#ifndef DDTX_IPC_CACHE_H
#define DDTX_IPC_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hmem/hmem.h"

struct ddtx_ipc_ops {
	int (*open)(void *arg, int device, const uint8_t handle[DDTX_HMEM_IPC_HANDLE_BYTES],
		    void **base, size_t *size);
	int (*close)(void *arg, int device, void *base);
	int (*export_handle)(void *arg, const void *addr, struct ddtx_hmem_ipc *out);
	void *arg;
};

/* hmem's driver calls. */
extern const struct ddtx_ipc_ops ddtx_ipc_hmem_ops;

struct ddtx_ipc_cache_stats {
	uint64_t hits, opens, open_failures;
	uint64_t stale;                 /* mappings closed because the peer's allocation changed */
	uint64_t evictions;             /* closed for room */
	uint64_t exports, export_hits;
	size_t mapped;                  /* mappings held now */
};

struct ddtx_ipc_cache;

/* device: where mappings are opened (the receiver's device).  max: mappings held at most. */
int ddtx_ipc_cache_open(const struct ddtx_ipc_ops *ops, int device, size_t max,
			struct ddtx_ipc_cache **out);
/* Closes every mapping. */
void ddtx_ipc_cache_close(struct ddtx_ipc_cache *c);

/*
 * The peer's allocation r mapped here: *local is where r->base is in this process.  A hit when
 * a mapping of this peer with r's buffer id and handle is held; otherwise overlapping mappings
 * of the peer are closed (stale) and r is opened.  -FI_EINVAL for an empty or wrapping range,
 * or one larger than the allocation the handle maps (a peer may claim any size; reads past the
 * mapping must never be planned), or what ops->open returned (the handle is then not cached:
 * a later call tries again).
 */
int ddtx_ipc_cache_map(struct ddtx_ipc_cache *c, const void *owner, uint64_t peer,
		       const struct ddtx_hmem_ipc *r, void **local);
/* The peer went away: close its mappings. */
void ddtx_ipc_cache_drop_peer(struct ddtx_ipc_cache *c, const void *owner, uint64_t peer);
/* The owner (an endpoint) closes: close the mappings of all its peers. */
void ddtx_ipc_cache_drop_owner(struct ddtx_ipc_cache *c, const void *owner);

/*
 * The handle of our allocation holding addr, exported once per allocation: *out names the
 * allocation (base, size, buffer id).  A base whose buffer id changed is exported again.
 * -FI_E* as ops->export_handle.
 */
int ddtx_ipc_cache_export(struct ddtx_ipc_cache *c, const void *addr, uint64_t buffer_id,
			  struct ddtx_hmem_ipc *out);

void ddtx_ipc_cache_stats(const struct ddtx_ipc_cache *c, struct ddtx_ipc_cache_stats *st);

#endif /* DDTX_IPC_CACHE_H */
