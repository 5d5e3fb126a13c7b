#include "proto/pdomain.h"

#include <stdlib.h>

#include "engine/layout.h"
#include "engine/mkey_pool.h"
#include "engine/regcache.h"
#include "proto/proto.h"

/*
 * Priors of the cost model, per scheme: t = a + b * (bytes / 4 KiB) + c * blocks (ns), where
 * the fit starts before any transfer was timed.  They come from nc_bw on an idle 2-core
 * development host (shm wire): PACK, which overlaps the sender's gather with the receiver's
 * scatter on two cores, moved 4 KiB blocks at about 7.5 GB/s, one-copy zero copy at about
 * 4.8 GB/s, and a strided process_vm_writev of 64-byte blocks at 0.16 GB/s; so packing wins
 * below about 20 KiB blocks there.  Every timed rendezvous moves the fit towards the wire
 * actually running.
 */
static const struct ddtx_cost_line cost_prior[FI_DDTX_SCHEME_COUNT] = {
	[FI_DDTX_SCHEME_PACK] = {4000, 530, 24},
	[FI_DDTX_SCHEME_SGL] = {6000, 450, 400},
	[FI_DDTX_SCHEME_UMR] = {6000, 450, 380},
};

#define EXPLORE_EVERY 32

int ddtx_proto_domain_open(struct ddtx_domain *domain)
{
	struct ddtx_proto_domain *pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -FI_ENOMEM;
	const struct ddtx_regcache_params rp = {
		.max_bytes = ddtx_settings.mr_cache_max_size,
		.max_count = ddtx_settings.mr_cache_max_count,
		.monitor = ddtx_settings.mr_monitor,
	};
	const struct ddtx_layout_cache_params lp = {
		.max_entries = ddtx_settings.layout_cache_size,
		.max_wsets = 0,
		.thread = ddtx_settings.reg_thread,
	};
	int ret = ddtx_regcache_open(domain->wire, &rp, &pd->regcache);
	if (ret)
		goto fail;
	ret = ddtx_mkey_pool_open(domain->wire, ddtx_settings.mkey_pool, &pd->pool);
	if (ret)
		goto fail_rc;
	ret = ddtx_layout_cache_open(&lp, domain->wire, pd->regcache, pd->pool, &pd->layouts);
	if (ret)
		goto fail_pool;
	ddtx_cost_init(&pd->cost, cost_prior, EXPLORE_EVERY);
	domain->proto = pd;
	return 0;
fail_pool:
	ddtx_mkey_pool_close(pd->pool);
fail_rc:
	ddtx_regcache_close(pd->regcache);
fail:
	free(pd);
	return ret;
}

void ddtx_proto_domain_close(struct ddtx_domain *domain)
{
	struct ddtx_proto_domain *pd = domain->proto;
	if (!pd)
		return;
	/* Layouts hold registrations and mkeys: they go first. */
	ddtx_layout_cache_close(pd->layouts);
	ddtx_mkey_pool_close(pd->pool);
	ddtx_regcache_close(pd->regcache);
	free(pd);
	domain->proto = NULL;
}

void ddtx_proto_domain_stats(struct ddtx_domain *domain, struct fi_ddtx_stats *st)
{
	struct ddtx_proto_domain *pd = domain->proto;
	if (!pd)
		return;
	struct ddtx_layout_cache_stats ls;
	struct ddtx_regcache_stats rs;
	struct ddtx_mkey_pool_stats ps;
	ddtx_layout_cache_stats(pd->layouts, &ls);
	ddtx_regcache_stats(pd->regcache, &rs);
	ddtx_mkey_pool_stats(pd->pool, &ps);
	st->layout_hits = ls.hits;
	st->layout_misses = ls.misses;
	st->layout_evictions = ls.evictions;
	st->layout_invalidations = ls.invalidations;
	st->reg_hits = rs.hits;
	st->reg_misses = rs.misses;
	st->reg_evictions = rs.evictions;
	st->reg_invalidations = rs.invalidations;
	st->mkey_hits = ls.wset_hits;
	st->mkey_misses = ls.wset_misses;
	st->mkey_evictions = ls.wset_evictions;
	st->pool_level = ps.level;
	st->pool_capacity = ps.capacity;
	st->pool_created = ps.created;
	st->pool_refills = ps.refills;
	st->pool_empty = ps.empty;
	st->regthread_layouts = ls.registered;
	st->regthread_ns = ls.reg_ns;
	st->regthread_failures = ls.reg_failures;
	st->zcopy_not_ready = pd->zcopy_not_ready;
	st->umr_fallbacks = pd->umr_fallbacks;
	st->explorations = pd->cost.explorations;
	st->learned_threshold = ddtx_cost_threshold(&pd->cost);
	st->rmkey_hits = pd->rmkey_hits;
	st->rmkey_misses = pd->rmkey_misses;
	struct ddtx_list_entry *it, *tmp;
	ddtx_list_foreach_safe(&domain->eps, it, tmp)
	{
		struct ddtx_ep *ep = ddtx_container_of(it, struct ddtx_ep, domain_entry);
		uint64_t hits, misses;
		ddtx_proto_ep_rmkey_stats(ep, &hits, &misses);
		st->rmkey_hits += hits;
		st->rmkey_misses += misses;
	}
}
