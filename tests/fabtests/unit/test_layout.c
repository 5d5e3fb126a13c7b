/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The layout cache, local mkey cache (window sets), mkey pool and registration thread against
 * a real shm wire domain and registration cache: hits, misses, evictions, invalidation after
 * munmap, window sets mapped from the pool and cached, and the pool refilled in the background.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/clock.h"
#include "engine/layout.h"
#include "engine/layout_cache.h"
#include "engine/mkey_pool.h"
#include "engine/regcache.h"

#include "unit_check.h"

struct env {
	struct ddtx_wire_domain *wire;
	struct ddtx_regcache *rc;
	struct ddtx_mkey_pool *pool;
	struct ddtx_layout_cache *lc;
};

static size_t env_max_blocks; /* list entries the next cache keeps in all (0: default) */

static void env_open_with(struct env *e, size_t pool_cap, size_t max_layouts, size_t max_wsets,
			  bool thread, size_t max_wset_keys, size_t key_slots)
{
	struct ddtx_wire_params wp = {.key_slots = key_slots};
	struct ddtx_regcache_params rp = {.max_bytes = 1 << 30, .max_count = 4096, .monitor = true};
	struct ddtx_layout_cache_params lp = {.max_entries = max_layouts, .max_wsets = max_wsets,
					      .max_wset_keys = max_wset_keys, .thread = thread,
					      .max_blocks = env_max_blocks};
	if (ddtx_wire_domain_open(&wp, &e->wire) || ddtx_regcache_open(e->wire, &rp, &e->rc) ||
	    ddtx_mkey_pool_open(e->wire, pool_cap, &e->pool) ||
	    ddtx_layout_cache_open(&lp, e->wire, e->rc, e->pool, &e->lc)) {
		fprintf(stderr, "cannot open the engine\n");
		exit(1);
	}
}

static void env_open(struct env *e, size_t pool_cap, size_t max_layouts, size_t max_wsets,
		     bool thread)
{
	env_open_with(e, pool_cap, max_layouts, max_wsets, thread, 0, 0);
}

static void env_close(struct env *e)
{
	ddtx_layout_cache_close(e->lc);
	ddtx_mkey_pool_close(e->pool);
	ddtx_regcache_close(e->rc);
	ddtx_wire_domain_close(e->wire);
}

/* count blocks of blen bytes, stride apart, from base. */
static void strided(struct iovec *iov, void *base, size_t count, size_t blen, size_t stride)
{
	for (size_t i = 0; i < count; i++) {
		iov[i].iov_base = (char *)base + i * stride;
		iov[i].iov_len = blen;
	}
}

static void test_hits_and_evictions(void)
{
	struct env e;
	env_open(&e, 8, 4, 16, false);
	static char buf[1 << 20];
	struct iovec iov[64];
	bool hit;
	strided(iov, buf, 64, 512, 1024);
	struct ddtx_layout *l = ddtx_layout_get(e.lc, iov, 64, &hit);
	CHECK(l && !hit, "first lookup misses");
	CHECK(l->count == 64 && l->st.min_block == 512 && l->st.avg_block == 512 &&
		      l->st.total == 64 * 512, "summary %zu %zu %zu", l->count, l->st.min_block,
	      l->st.avg_block);
	ddtx_layout_put(e.lc, l);
	struct ddtx_layout *l2 = ddtx_layout_get(e.lc, iov, 64, &hit);
	CHECK(l2 == l && hit && l2->uses == 2, "second lookup hits (uses %llu)",
	      (unsigned long long)l2->uses);
	ddtx_layout_put(e.lc, l2);
	/* Same shape, other base: a different layout. */
	strided(iov, buf + 4096, 64, 512, 1024);
	l2 = ddtx_layout_get(e.lc, iov, 64, &hit);
	CHECK(l2 != l && !hit, "another base misses");
	ddtx_layout_put(e.lc, l2);
	/* Beyond 4 layouts the least recently used go. */
	for (int i = 0; i < 6; i++) {
		strided(iov, buf + 8192 * (i + 2), 16, 256 + i, 512);
		ddtx_layout_put(e.lc, ddtx_layout_get(e.lc, iov, 16, &hit));
	}
	struct ddtx_layout_cache_stats st;
	ddtx_layout_cache_stats(e.lc, &st);
	CHECK(st.hits == 1 && st.misses == 8 && st.evictions == 4 && st.entries == 4,
	      "hits %llu misses %llu evictions %llu entries %zu", (unsigned long long)st.hits,
	      (unsigned long long)st.misses, (unsigned long long)st.evictions, st.entries);
	env_close(&e);
}

/* The entry comparison behind a hash match: empty entries do not count, any other change does. */
static void test_same_entries(void)
{
	struct env e;
	env_open(&e, 8, 8, 16, false);
	static char buf[1 << 16];
	struct iovec iov[17];
	bool hit;
	strided(iov, buf, 16, 64, 128);
	struct ddtx_layout *l = ddtx_layout_get(e.lc, iov, 16, &hit);
	CHECK(l && !hit, "first lookup misses");
	ddtx_layout_put(e.lc, l);
	/* The same entries with an empty one between them: the same layout. */
	memmove(&iov[9], &iov[8], 8 * sizeof(*iov));
	iov[8] = (struct iovec){NULL, 0};
	struct ddtx_layout *l2 = ddtx_layout_get(e.lc, iov, 17, &hit);
	CHECK(l2 == l && hit, "an empty entry in the list still hits");
	ddtx_layout_put(e.lc, l2);
	/* As many entries, one of them a byte shorter: another layout. */
	strided(iov, buf, 16, 64, 128);
	iov[15].iov_len = 63;
	l2 = ddtx_layout_get(e.lc, iov, 16, &hit);
	CHECK(l2 && l2 != l && !hit && l2->st.total == 16 * 64 - 1, "a shorter last entry misses");
	ddtx_layout_put(e.lc, l2);
	env_close(&e);
}

/*
 * A vector found without being entered on a miss (what a receive asks before lending a list),
 * the cache bounded by the entries of its lists in all, and an evicted layout's list reused by
 * the next new layout.
 */
static void test_find_vec_and_block_bound(void)
{
	struct env e;
	env_max_blocks = 100;
	env_open(&e, 8, 64, 16, false);
	env_max_blocks = 0;
	static char buf[1 << 16];
	struct iovec iov[40];
	struct ddtx_layout_cache_stats st;
	struct ddtx_iov_vec v = {(uint8_t *)buf, 16, 64, 40};
	bool hit;
	CHECK(!ddtx_layout_find_vec(e.lc, &v), "a vector never seen is found");
	ddtx_layout_cache_stats(e.lc, &st);
	CHECK(st.entries == 0, "a find that missed entered a layout (%zu)", st.entries);
	strided(iov, buf, 40, 16, 64);
	struct ddtx_layout *l = ddtx_layout_get_vec(e.lc, iov, 40, &v, &hit);
	CHECK(l && !hit && l->count == 40 && l->vec.n == 40, "the vector entered");
	struct iovec *list = l->iov;
	struct ddtx_layout *f = ddtx_layout_find_vec(e.lc, &v);
	CHECK(f == l, "the vector entered is found");
	ddtx_layout_put(e.lc, f);
	struct ddtx_iov_vec w = v;
	w.stride = 48;
	CHECK(!ddtx_layout_find_vec(e.lc, &w), "another stride at the same base is found");
	ddtx_layout_put(e.lc, l);
	/* 40 + 40 entries fit in 100: a third list of 40 evicts the least recently used. */
	for (int i = 1; i <= 2; i++) {
		strided(iov, buf + 4096 * i, 40, 16, 64);
		ddtx_layout_put(e.lc, ddtx_layout_get(e.lc, iov, 40, &hit));
	}
	ddtx_layout_cache_stats(e.lc, &st);
	CHECK(st.entries == 2 && st.evictions == 1, "entries %zu evictions %llu", st.entries,
	      (unsigned long long)st.evictions);
	CHECK(!ddtx_layout_find_vec(e.lc, &v), "the least recently used vector is still there");
	/* The next new layout gets the evicted one's list instead of fresh pages. */
	strided(iov, buf + 4096 * 3, 40, 16, 64);
	l = ddtx_layout_get(e.lc, iov, 40, &hit);
	CHECK(l && !hit && l->iov == list && l->iov[39].iov_base == iov[39].iov_base,
	      "the evicted layout's list was not reused");
	ddtx_layout_put(e.lc, l);
	env_close(&e);
}

static void test_windows_and_invalidation(void)
{
	struct env e;
	env_open(&e, 16, 64, 2, false);
	size_t len = 1 << 20;
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(buf, 1, len);
	struct iovec iov[32];
	strided(iov, buf, 32, 1024, 4096);
	bool hit;
	struct ddtx_layout *l = ddtx_layout_get(e.lc, iov, 32, &hit);
	CHECK(!ddtx_layout_ready(l), "not registered yet");
	CHECK(ddtx_layout_windows(e.lc, l, 31 * 1024) == NULL, "no windows before registration");
	ddtx_layout_request(e.lc, l); /* no thread: registers inline */
	CHECK(ddtx_layout_ready(l), "registered");
	/* Registration pre-maps the set for its own block size: (32 - 1) x 1024. */
	struct ddtx_window_set *ws = ddtx_layout_windows(e.lc, l, 31 * 1024);
	CHECK(ws && ws->n == 2, "window set of 2 windows");
	struct ddtx_window_set *ws2 = ddtx_layout_windows(e.lc, l, 4 * 1024);
	CHECK(ws2 && ws2->n == 8 && ws2 != ws && ws2->id != ws->id, "second chunk: its own set");
	/* Keys out of the pool (the refill thread may be topping the stock up meanwhile). */
	struct ddtx_mkey_pool_stats ps;
	ddtx_mkey_pool_stats(e.pool, &ps);
	CHECK(ps.created - ps.level == 10, "2 + 8 keys taken from the pool (%llu)",
	      (unsigned long long)(ps.created - ps.level));
	/* Keys: distinct, mapped over the right bytes. */
	CHECK(ws2->mkeys[0]->len == 4096 && ws2->mkeys[0]->nentries == 4, "window 0 maps 4 blocks");
	CHECK(!ddtx_window_set_sent(ws2, 3), "not sent to peer 3 yet");
	ddtx_window_set_mark_sent(ws2, 3);
	ddtx_window_set_mark_sent(ws2, 200);
	CHECK(ddtx_window_set_sent(ws2, 3) && ddtx_window_set_sent(ws2, 200) &&
		      !ddtx_window_set_sent(ws2, 4), "per-peer record");
	ddtx_window_set_put(e.lc, ws);
	ddtx_window_set_put(e.lc, ws2);
	/* A third set with max_wsets 2 evicts the least recently used idle one. */
	struct ddtx_window_set *ws3 = ddtx_layout_windows(e.lc, l, 2 * 1024);
	CHECK(ws3, "third set");
	ddtx_window_set_put(e.lc, ws3);
	struct ddtx_layout_cache_stats st;
	ddtx_layout_cache_stats(e.lc, &st);
	CHECK(st.wset_hits == 1 && st.wset_misses >= 3 && st.wset_evictions >= 1,
	      "wset hits %llu misses %llu evictions %llu", (unsigned long long)st.wset_hits,
	      (unsigned long long)st.wset_misses, (unsigned long long)st.wset_evictions);
	ddtx_layout_put(e.lc, l);

	/* Unmap and map again at the same address: the cached layout must not come back. */
	munmap(buf, len);
	char *again = mmap(buf, len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (again == buf) {
		struct ddtx_layout *l3 = ddtx_layout_get(e.lc, iov, 32, &hit);
		CHECK(!hit, "recycled address: a fresh layout, not a hit");
		CHECK(!ddtx_layout_ready(l3), "and it is not registered");
		ddtx_layout_cache_stats(e.lc, &st);
		CHECK(st.invalidations == 1, "one invalidation (%llu)",
		      (unsigned long long)st.invalidations);
		ddtx_layout_put(e.lc, l3);
		munmap(again, len);
	} else {
		printf("  (address not reusable here: invalidation part skipped)\n");
		if (again != MAP_FAILED)
			munmap(again, len);
	}
	env_close(&e);
}

/*
 * Idle window sets hold at most max_wset_keys mapped keys: the pool refills itself, so before
 * this bound sets of 3-entry keys filled the shm wire's key table and registrations failed.
 * Four layouts of 8 windows each against a budget of 20 keys.
 */
static void test_wset_key_budget(void)
{
	struct env e;
	env_open_with(&e, 64, 64, 256, false, 20, 0);
	size_t len = 1 << 20;
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(buf, 1, len);
	struct iovec iov[32];
	struct ddtx_layout *l[4];
	bool hit;
	for (int i = 0; i < 4; i++) {
		strided(iov, buf + i * 131072, 32, 1024, 4096);
		l[i] = ddtx_layout_get(e.lc, iov, 32, &hit);
		CHECK(ddtx_layout_register_now(e.lc, l[i]) == 0, "layout %d registered", i);
		struct ddtx_window_set *ws = ddtx_layout_windows(e.lc, l[i], 4 * 1024);
		CHECK(ws && ws->n == 8, "layout %d: a set of 8 windows", i);
		if (ws)
			ddtx_window_set_put(e.lc, ws);
		CHECK(e.lc->wset_keys <= 20, "after layout %d: %zu keys in idle sets, budget 20", i,
		      e.lc->wset_keys);
	}
	struct ddtx_layout_cache_stats st;
	ddtx_layout_cache_stats(e.lc, &st);
	CHECK(st.wset_evictions >= 2, "sets evicted for the key budget: %llu",
	      (unsigned long long)st.wset_evictions);
	for (int i = 0; i < 4; i++)
		ddtx_layout_put(e.lc, l[i]);
	munmap(buf, len);
	env_close(&e);
}

/*
 * A wire out of keys (-FI_ENOSPC) gets the keys of idle cached regions back before a
 * registration fails: 64 key slots, 64 idle regions of one page each, then one more.
 */
static void test_keys_run_out(void)
{
	struct env e;
	env_open_with(&e, 0, 64, 0, false, 0, 64);
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	char *buf = mmap(NULL, 160 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			 0);
	struct ddtx_reg *r;
	int ret = 0, i;
	for (i = 0; i < 80 && !ret; i++) { /* pages two apart: nothing merges */
		ret = ddtx_regcache_get(e.rc, buf + 2 * i * pg, 16, DDTX_ACC_LOCAL_READ, &r);
		if (!ret)
			ddtx_regcache_put(e.rc, r);
	}
	CHECK(!ret, "80 regions in turn in a table of 64 keys: %d at region %d", ret, i - 1);
	struct ddtx_regcache_stats st;
	ddtx_regcache_stats(e.rc, &st);
	CHECK(st.evictions >= 16, "idle regions gave their keys back: %llu evictions",
	      (unsigned long long)st.evictions);
	/* Held regions are never taken: with every key held, the next one fails. */
	struct ddtx_reg *held[80];
	int n = 0;
	while (n < 80 && !ddtx_regcache_get(e.rc, buf + 2 * n * pg, 16, DDTX_ACC_LOCAL_READ,
					    &held[n]))
		n++;
	CHECK(n > 0 && n < 80, "%d held regions, then -FI_ENOSPC", n);
	while (n--)
		ddtx_regcache_put(e.rc, held[n]);
	munmap(buf, 160 * pg);
	env_close(&e);
}

static void test_pool_refill_and_thread(void)
{
	struct env e;
	env_open(&e, 16, 64, 64, true);
	struct ddtx_wire_mkey *taken[12];
	for (int i = 0; i < 12; i++)
		CHECK((taken[i] = ddtx_mkey_pool_get(e.pool)) != NULL, "get %d", i);
	/* Under half: the refill thread tops the stock up without anyone waiting for it. */
	for (int i = 0; i < 2000 && ddtx_mkey_pool_level(e.pool) < 8; i++)
		usleep(1000);
	struct ddtx_mkey_pool_stats ps;
	ddtx_mkey_pool_stats(e.pool, &ps);
	CHECK(ps.level >= 8 && ps.refills >= 1 && ps.created - ps.level == 12,
	      "level %zu refills %llu created %llu", ps.level, (unsigned long long)ps.refills,
	      (unsigned long long)ps.created);
	for (int i = 0; i < 12; i++)
		ddtx_mkey_pool_put(e.pool, taken[i]);

	/* The registration thread makes a requested layout ready; the caller never waits. */
	static char buf[1 << 18];
	struct iovec iov[16];
	strided(iov, buf, 16, 4096, 8192);
	bool hit;
	struct ddtx_layout *l = ddtx_layout_get(e.lc, iov, 16, &hit);
	ddtx_layout_request(e.lc, l);
	for (int i = 0; i < 2000 && !ddtx_layout_ready(l); i++)
		usleep(1000);
	CHECK(ddtx_layout_ready(l), "the thread registered it");
	struct ddtx_layout_cache_stats st;
	ddtx_layout_cache_stats(e.lc, &st);
	CHECK(st.registered == 1, "registered %llu", (unsigned long long)st.registered);
	ddtx_layout_put(e.lc, l);
	env_close(&e);
}

/* Printed, not asserted: the cost of a layout-cache hit and of a miss, per block. */
static void bench_hit_cost(void)
{
	struct env e;
	env_open(&e, 0, 4096, 16, false);
	static char buf[1 << 22];
	static struct iovec iov[1024];
	for (size_t blocks = 16; blocks <= 1024; blocks *= 4) {
		strided(iov, buf, blocks, 64, 128);
		bool hit;
		ddtx_layout_put(e.lc, ddtx_layout_get(e.lc, iov, blocks, &hit));
		int iters = 200000 / (int)blocks + 100;
		uint64_t t0 = ddtx_time_ns();
		for (int i = 0; i < iters; i++)
			ddtx_layout_put(e.lc, ddtx_layout_get(e.lc, iov, blocks, &hit));
		double hit_ns = (double)(ddtx_time_ns() - t0) / iters / blocks;
		t0 = ddtx_time_ns();
		for (int i = 0; i < iters; i++) {
			strided(iov, buf + 64 * (size_t)(i % 2048), blocks, 64, 128);
			ddtx_layout_put(e.lc, ddtx_layout_get(e.lc, iov, blocks, &hit));
		}
		double miss_ns = (double)(ddtx_time_ns() - t0) / iters / blocks;
		printf("  layout cache, %4zu blocks: hit %.2f ns/block, miss %.2f ns/block\n", blocks,
		       hit_ns, miss_ns);
	}
	env_close(&e);
}

int main(void)
{
	bench_hit_cost();
	test_hits_and_evictions();
	test_same_entries();
	test_find_vec_and_block_bound();
	test_windows_and_invalidation();
	test_pool_refill_and_thread();
	test_wset_key_budget();
	test_keys_run_out();
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("layout cache, window sets, pool and registration thread: passed\n");
	return 0;
}
