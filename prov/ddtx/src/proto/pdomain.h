/*
 * Domain-wide data-path state: the DDT engine's caches, mkey pool and cost model, shared by the
 * endpoints of a domain (all under the domain lock, except what the engine locks itself).
 */
#ifndef DDTX_PDOMAIN_H
#define DDTX_PDOMAIN_H

#include "core/core.h"
#include "engine/cost.h"

struct ddtx_regcache;
struct ddtx_mkey_pool;
struct ddtx_layout_cache;

struct ddtx_proto_domain {
	struct ddtx_regcache *regcache;
	struct ddtx_mkey_pool *pool;
	struct ddtx_layout_cache *layouts;
	struct ddtx_cost_model cost;
	uint64_t zcopy_not_ready;
	uint64_t umr_fallbacks;
	uint64_t rmkey_hits, rmkey_misses;   /* summed from closed endpoints */
};

int ddtx_proto_domain_open(struct ddtx_domain *domain);
void ddtx_proto_domain_close(struct ddtx_domain *domain);
/* Fill the engine fields of *st (caller holds the domain lock). */
void ddtx_proto_domain_stats(struct ddtx_domain *domain, struct fi_ddtx_stats *st);

/* Layout handles of fi_ddtx.h. */
int ddtx_proto_layout_create(struct fid_domain *domain, const struct iovec *blocks, size_t count,
			     struct fi_ddtx_layout **layout);
int ddtx_proto_layout_create_strided(struct fid_domain *domain, size_t block_len, size_t stride,
				     size_t count, struct fi_ddtx_layout **layout);
int ddtx_proto_layout_free(struct fi_ddtx_layout *layout);
size_t ddtx_proto_layout_size(const struct fi_ddtx_layout *layout);

#endif /* DDTX_PDOMAIN_H */
