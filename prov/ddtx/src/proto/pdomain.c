/* SPDX-License-Identifier: BSD-2-Clause */
/* The data path's domain: the wire domain, the DDT engine's caches, pool and cost model. */
#include "proto/pdomain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/layout.h"
#include "engine/mkey_pool.h"
#include "engine/host_pages.h"
#include "engine/mr_watch.h"
#include "engine/regcache.h"
#include "engine/scheme.h"
#include "proto/proto_internal.h"
#include "proto/proto_internal.h"

/*
 * Priors of the cost model, per scheme: t = a + b * (bytes / 4 KiB) + c * blocks (ns), where
 * the fit starts before any transfer was timed.  They come from nc_bw on an idle 2-core
 * development host (shm wire): PACK, which overlaps the sender's gather with the receiver's
 * scatter on two cores, moved 4 KiB blocks at about 7.5 GB/s, one-copy zero copy at about
 * 4.8 GB/s, and a strided process_vm_writev of 64-byte blocks at 0.16 GB/s; so packing wins
 * below about 20 KiB blocks there.  Every timed rendezvous moves the fit towards the wire
 * actually running.
 */
static const struct ddtx_cost_line cost_prior[DDTX_COST_LINES] = {
	/* Eager: two copies through the ring (memcpy at about 16 GB/s each way, a few ns per
	 * block of the iov walk on each side). */
	[FI_DDTX_SCHEME_EAGER] = {300, 500, 10},
	[FI_DDTX_SCHEME_PACK] = {4000, 530, 24},
	[FI_DDTX_SCHEME_SGL] = {6000, 450, 400},
	[FI_DDTX_SCHEME_UMR] = {6000, 450, 380},
	/* A pull of several blocks: SGL's copy, half of it on each core. */
	[DDTX_COST_PULL] = {6000, 225, 100},
};

#define EXPLORE_EVERY 32

int ddtx_proto_ofi_core_name(const char *want, char *name, size_t len)
{
	return ddtx_wire_ofi_core_name(want, ddtx_settings.ofi_ep_msg, name, len);
}

static int open_wire(struct ddtx_proto_domain *pd, const char *ofi_core)
{
	const struct ddtx_wire_params params = {
		.max_sge = ddtx_settings.max_sge,
		.max_mkey_entries = ddtx_settings.max_mkey_entries,
		.ring_slots = ddtx_settings.ring_slots,
		.slot_size = ddtx_settings.slot_size,
		.key_slots = ddtx_settings.key_slots,
		.key_segments = 0, /* wire default */
		.wire = ofi_core ? "ofi" : ddtx_settings.wire,
		.iface = ddtx_settings.iface,
		.fabric_wire = ddtx_settings.fabric_wire,
		.fabric_timeout_ms = ddtx_settings.fabric_timeout_ms,
		.local_off = ddtx_settings.local_wire && !strcmp(ddtx_settings.local_wire, "none"),
		.ofi_provider = ofi_core ? ofi_core : ddtx_settings.ofi_provider,
		.ofi_ep_msg = ddtx_settings.ofi_ep_msg,
	};
	int ret = ddtx_wire_domain_open(&params, &pd->wire);
	if (ret)
		DDTX_WARN(FI_LOG_DOMAIN, "fi_domain: wire domain open failed: %s\n",
			  fi_strerror(-ret));
	return ret;
}

int ddtx_proto_domain_open(struct ddtx_rlock *lock, const char *ofi_core,
			   struct ddtx_proto_domain **out)
{
	struct ddtx_proto_domain *pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -FI_ENOMEM;
	pd->lock = lock;
	ddtx_list_init(&pd->eps);
	ddtx_list_init(&pd->app_mrs);
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
	int ret = open_wire(pd, ofi_core);
	if (ret)
		goto fail;
	ret = ddtx_regcache_open(pd->wire, &rp, &pd->regcache);
	if (ret)
		goto fail_wire;
	ret = ddtx_mkey_pool_open(pd->wire, ddtx_settings.mkey_pool, &pd->pool);
	if (ret)
		goto fail_rc;
	ret = ddtx_layout_cache_open(&lp, pd->wire, pd->regcache, pd->pool, &pd->layouts);
	if (ret)
		goto fail_pool;
	ret = ddtx_mr_watch_open(ddtx_settings.mr_monitor, &pd->mr_watch);
	if (ret)
		goto fail_layouts;
	ret = ddtx_host_pages_open(pd->mr_watch, &pd->host_pages);
	if (ret) {
		ddtx_mr_watch_close(pd->mr_watch);
		goto fail_layouts;
	}
	ddtx_cost_init(&pd->cost, cost_prior, EXPLORE_EVERY);
	ddtx_cost_bias_init(&pd->cost_bias);
	ddtx_store_choice_init(&pd->stores);
	ddtx_contig_choice_init(&pd->contig);
	for (int k = 0; k < DDTX_HMEM_WAY_KINDS; k++)
		ddtx_hmem_way_cost_init(&pd->hmem_way[k], (enum ddtx_hmem_way_kind)k);
	*out = pd;
	return 0;
fail_layouts:
	ddtx_layout_cache_close(pd->layouts);
fail_pool:
	ddtx_mkey_pool_close(pd->pool);
fail_rc:
	ddtx_regcache_close(pd->regcache);
	DDTX_WARN(FI_LOG_DOMAIN, "fi_domain: engine start failed: %s\n", fi_strerror(-ret));
fail_wire:
	ddtx_wire_domain_close(pd->wire);
fail:
	free(pd);
	return ret;
}

void ddtx_proto_domain_set_hmem(struct ddtx_proto_domain *pd, bool on)
{
	pd->hmem = on && ddtx_proto_hmem_offered();
}

void ddtx_proto_domain_close(struct ddtx_proto_domain *pd)
{
	if (!pd)
		return;
	ddtx_ack_timer_stop(pd);
	/* Layouts hold registrations and mkeys: they go first, the wire domain last. */
	ddtx_layout_cache_close(pd->layouts);
	ddtx_mkey_pool_close(pd->pool);
	ddtx_regcache_close(pd->regcache);
	ddtx_host_pages_close(pd->host_pages);
	ddtx_ipc_close_all(pd);
	ddtx_mr_watch_close(pd->mr_watch);
	ddtx_wire_domain_close(pd->wire);
	free(pd);
}

void ddtx_proto_domain_stop_threads(struct ddtx_proto_domain *pd)
{
	if (pd)
		ddtx_ack_timer_stop(pd);
}

void ddtx_proto_domain_progress(struct ddtx_proto_domain *pd)
{
	if (pd)
		ddtx_mr_watch_poll(pd->mr_watch);
}

const char *ddtx_proto_scheme_name(enum fi_ddtx_scheme scheme)
{
	return ddtx_scheme_name(scheme);
}

size_t ddtx_proto_addr_len(struct ddtx_proto_domain *pd)
{
	return ddtx_wire_domain_caps(pd->wire)->addr_len;
}

int ddtx_proto_addr_check(struct ddtx_proto_domain *pd, const void *addr, size_t len)
{
	return ddtx_wire_addr_check(pd->wire, addr, len);
}

void ddtx_proto_domain_stats(struct ddtx_proto_domain *pd, struct fi_ddtx_stats *st)
{
	*st = pd->stats;
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
	struct ddtx_wire_stats ws;
	ddtx_wire_domain_stats(pd->wire, &ws);
	st->nwires = (uint32_t)DDTX_MIN(ws.count, (size_t)FI_DDTX_WIRES_MAX);
	for (uint32_t i = 0; i < st->nwires; i++) {
		snprintf(st->wires[i].name, sizeof(st->wires[i].name), "%s", ws.sub[i].name);
		st->wires[i].peers = ws.sub[i].peers;
		st->wires[i].msgs = ws.sub[i].msgs;
		st->wires[i].msg_bytes = ws.sub[i].msg_bytes;
		st->wires[i].rma_ops = ws.sub[i].rma_ops;
		st->wires[i].rma_bytes = ws.sub[i].rma_bytes;
	}
	st->ofi_ring_msgs = ws.ring_msgs;
	st->ofi_ring_bytes = ws.ring_bytes;
	st->learned_threshold = ddtx_cost_threshold(&pd->cost);
	st->rmkey_hits = pd->rmkey_hits;
	st->rmkey_misses = pd->rmkey_misses;
	struct ddtx_list_entry *it, *tmp;
	ddtx_list_foreach_safe(&pd->eps, it, tmp)
	{
		struct ddtx_proto_ep *pep = ddtx_container_of(it, struct ddtx_proto_ep, pd_entry);
		st->rmkey_hits += pep->rmkeys.hits;
		st->rmkey_misses += pep->rmkeys.misses;
	}
}
