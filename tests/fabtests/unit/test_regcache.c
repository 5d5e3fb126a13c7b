/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Registration cache and memory monitor, against the real shm wire (a software HCA with a key
 * table).  Whether a key is still registered is asked of the wire itself: an endpoint that
 * inserted its own address checks (space, key, range) with ddtx_wire_rma_check(), exactly as a
 * peer's write would.
 *
 * Usage: test_regcache <case>; exit 77 = skip (no memory monitor where one is required).
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_errno.h>
#include "common/itree.h"
#include "engine/host_pages.h"
#include "engine/memmon.h"
#include "engine/mr_watch.h"
#include "engine/regcache.h"
#include "wire/wire.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#include "unit_check.h"

#define RW (DDTX_ACC_LOCAL_READ | DDTX_ACC_LOCAL_WRITE)
#define ALL (RW | DDTX_ACC_REMOTE_READ | DDTX_ACC_REMOTE_WRITE)

static size_t pg;
static struct ddtx_wire_domain *dom;
static struct ddtx_wire_ep *ep;
static ddtx_peer_t self_peer;

static void on_recv(void *arg, ddtx_peer_t src, const void *buf, size_t len) {}
static void on_complete(void *arg, void *ctx, int status) {}

static void wire_open(void)
{
	static const struct ddtx_wire_handlers h = { on_recv, on_complete };
	char addr[256];
	size_t alen = sizeof(addr);
	int ret;

	pg = (size_t)sysconf(_SC_PAGESIZE);
	ret = ddtx_wire_domain_open(&(struct ddtx_wire_params){ 0 }, &dom);
	if (ret) {
		fprintf(stderr, "wire domain: %d\n", ret);
		exit(1);
	}
	ret = ddtx_wire_ep_open(dom, &h, NULL, &ep);
	if (!ret)
		ret = ddtx_wire_ep_getname(ep, addr, &alen);
	if (!ret)
		ret = ddtx_wire_peer_insert(ep, addr, alen, &self_peer);
	if (ret) {
		fprintf(stderr, "wire endpoint: %d\n", ret);
		exit(1);
	}
}

static void wire_close(void)
{
	ddtx_wire_ep_close(ep);
	ddtx_wire_domain_close(dom);
}

/*
 * Is (INTERNAL, key) registered in our own key table?  The wire answers -FI_EKEYREJECTED for
 * a key that does not exist, -FI_EACCES for missing rights or bounds (the regions here are
 * mostly local-access only), 0 for an acceptable write.
 */
static bool key_live(uint64_t key, uintptr_t addr, size_t len)
{
	int ret = ddtx_wire_rma_check(ep, self_peer, DDTX_KEY_INTERNAL, key, addr, len, true);

	if (ret && ret != -FI_EKEYREJECTED && ret != -FI_EACCES)
		fprintf(stderr, "rma_check: unexpected %d\n", ret);
	return ret != -FI_EKEYREJECTED;
}

/* ---- listener: records every call ---- */

#define MAX_CALLS 100000
static pthread_mutex_t lis_lock = PTHREAD_MUTEX_INITIALIZER;
static struct call {
	uint64_t key;
	uintptr_t addr;
	size_t len;
	enum ddtx_reg_state state;
	bool key_was_live;
} calls[MAX_CALLS];
static size_t ncalls;
static bool check_live_in_listener;

static void listener(void *arg, const struct ddtx_reg *reg)
{
	bool live = check_live_in_listener ? key_live(reg->mr->key, reg->addr, reg->len) : true;

	pthread_mutex_lock(&lis_lock);
	if (ncalls < MAX_CALLS)
		calls[ncalls++] = (struct call){ reg->mr->key, reg->addr, reg->len,
						 ddtx_reg_state(reg), live };
	pthread_mutex_unlock(&lis_lock);
}

static size_t calls_for(uint64_t key)
{
	size_t n = 0;

	pthread_mutex_lock(&lis_lock);
	for (size_t i = 0; i < ncalls; i++)
		n += calls[i].key == key;
	pthread_mutex_unlock(&lis_lock);
	return n;
}

static struct call *call_for(uint64_t key)
{
	for (size_t i = 0; i < ncalls; i++)
		if (calls[i].key == key)
			return &calls[i];
	return NULL;
}

static struct ddtx_regcache *open_cache(size_t max_bytes, size_t max_count, bool monitor)
{
	struct ddtx_regcache_params p = { max_bytes, max_count, monitor };
	struct ddtx_regcache *rc;
	int ret = ddtx_regcache_open(dom, &p, &rc);

	if (ret) {
		fprintf(stderr, "regcache_open: %d\n", ret);
		exit(1);
	}
	ddtx_regcache_set_listener(rc, listener, NULL);
	check_live_in_listener = true;
	ncalls = 0;
	return rc;
}

static void stats(struct ddtx_regcache *rc, struct ddtx_regcache_stats *st)
{
	ddtx_regcache_stats(rc, st);
}

static void *map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	memset(p, 0x5a, len);
	return p;
}

static struct ddtx_reg *get(struct ddtx_regcache *rc, const void *a, size_t len, uint32_t acc)
{
	struct ddtx_reg *r = NULL;
	int ret = ddtx_regcache_get(rc, a, len, acc, &r);

	CHECK(ret == 0 && r, "get(%p, %zu) = %d", a, len, ret);
	if (ret)
		exit(1);
	CHECK(r->addr <= (uintptr_t)a && r->addr + r->len >= (uintptr_t)a + len &&
	      (r->access & acc) == acc && r->addr % pg == 0 && r->len % pg == 0,
	      "region [%#lx,+%zu) acc %#x does not cover [%p,+%zu) acc %#x",
	      (unsigned long)r->addr, r->len, r->access, a, len, acc);
	CHECK(key_live(r->mr->key, r->addr, r->len), "returned key not registered");
	return r;
}

static bool require_monitor(struct ddtx_regcache *rc)
{
	if (!ddtx_regcache_monitored(rc)) {
		printf("SKIP: no memory monitor in this environment\n");
		ddtx_regcache_close(rc);
		wire_close();
		return false;
	}
	return true;
}

/* ---- itree against a brute-force reference ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

struct tnode {
	struct ddtx_itree_node n;
	bool in;
};

static int count_fn(void *arg, struct ddtx_itree_node *n)
{
	(*(size_t *)arg)++;
	return 0;
}

static int test_itree(void)
{
	enum { N = 2000 };
	static struct tnode nodes[N];
	struct ddtx_itree t;
	size_t in = 0;

	ddtx_itree_init(&t);
	for (int step = 0; step < 200000; step++) {
		struct tnode *x = &nodes[rnd() % N];

		if (x->in) {
			ddtx_itree_remove(&t, &x->n);
			x->in = false;
			in--;
		} else {
			x->n.start = rnd() % 100000;
			x->n.end = x->n.start + 1 + rnd() % (rnd() % 4 ? 100 : 5000);
			ddtx_itree_insert(&t, &x->n);
			x->in = true;
			in++;
		}
		if (step % 97)
			continue;
		uintptr_t s = rnd() % 101000, e = s + 1 + rnd() % 300;
		size_t ref_overlap = 0, got = 0;
		bool ref_cover = false;
		for (int i = 0; i < N; i++) {
			if (!nodes[i].in)
				continue;
			ref_overlap += nodes[i].n.start < e && nodes[i].n.end > s;
			ref_cover |= nodes[i].n.start <= s && nodes[i].n.end >= e;
		}
		ddtx_itree_visit(&t, s, e, count_fn, &got);
		CHECK(got == ref_overlap, "visit [%lu,%lu): %zu, reference %zu", (unsigned long)s,
		      (unsigned long)e, got, ref_overlap);
		struct ddtx_itree_node *c = ddtx_itree_find_covering(&t, s, e, NULL, NULL);
		CHECK(!!c == ref_cover && (!c || (c->start <= s && c->end >= e)),
		      "covering [%lu,%lu)", (unsigned long)s, (unsigned long)e);
		CHECK(t.count == in, "count %zu, reference %zu", t.count, in);
	}
	return 0;
}

/* ---- hit, miss, merge ---- */

static int test_basic(void)
{
	struct ddtx_regcache_stats st;
	struct ddtx_regcache *rc;
	struct ddtx_reg *a, *b, *c, *d, *e;
	uint8_t *buf;

	wire_open();
	rc = open_cache(0, 0, true);
	if (!require_monitor(rc))
		return 77;
	buf = map(64 * pg);

	/* miss, then hits for anything inside with no more access */
	a = get(rc, buf + 100, 1000, RW);
	CHECK(a->addr == (uintptr_t)buf && a->len == pg, "page aligned: [%#lx,+%zu)",
	      (unsigned long)a->addr, a->len);
	b = get(rc, buf + 5, 10, DDTX_ACC_LOCAL_READ);
	CHECK(b == a, "hit returns the same region");
	stats(rc, &st);
	CHECK(st.misses == 1 && st.hits == 1 && st.registered_count == 1 &&
	      st.registered_bytes == pg, "stats %lu/%lu/%lu/%lu", (unsigned long)st.misses,
	      (unsigned long)st.hits, (unsigned long)st.registered_count,
	      (unsigned long)st.registered_bytes);
	ddtx_regcache_put(rc, b);
	ddtx_regcache_put(rc, a);

	/* more access than the region has: a new region with the union, the old one MERGED */
	uint64_t ka = a->mr->key;
	c = get(rc, buf + 100, 10, DDTX_ACC_REMOTE_WRITE);
	CHECK(c != a && c->access == (RW | DDTX_ACC_REMOTE_WRITE), "access union %#x", c->access);
	CHECK(calls_for(ka) == 1 && call_for(ka)->state == DDTX_REG_MERGED &&
	      call_for(ka)->key_was_live, "merged region reported once, while still registered");
	CHECK(!key_live(ka, (uintptr_t)buf, pg), "merged unreferenced region deregistered");
	ddtx_regcache_put(rc, c);

	/* adjacent: merged into one region spanning both */
	uint64_t kc = c->mr->key;
	d = get(rc, buf + pg, pg, RW);
	CHECK(d->addr == (uintptr_t)buf && d->len == 2 * pg, "adjacent merge [%#lx,+%zu)",
	      (unsigned long)d->addr, d->len);
	CHECK(calls_for(kc) == 1, "adjacent region reported once");
	/* overlapping a region in use: not merged (that would register its pages twice); the
	 * new region covers the request alone and both stay in the cache */
	e = get(rc, buf + pg + 10, 3 * pg, RW);
	CHECK(e->addr == (uintptr_t)buf + pg && e->len == 4 * pg, "no merge with a region in "
	      "use: [%#lx,+%zu)", (unsigned long)e->addr, e->len);
	CHECK(ddtx_reg_state(d) == DDTX_REG_LIVE && ddtx_reg_state(e) == DDTX_REG_LIVE,
	      "both live");
	ddtx_regcache_put(rc, d);
	ddtx_regcache_put(rc, e);
	a = get(rc, buf + 2 * pg, 100, DDTX_ACC_LOCAL_READ);
	CHECK(a == e, "hit inside the second region");
	b = get(rc, buf + 10, 100, RW);
	CHECK(b == d, "hit inside the first region");
	ddtx_regcache_put(rc, a);
	ddtx_regcache_put(rc, b);
	/* now both unused: a request overlapping both merges all three into one */
	uint64_t kd = d->mr->key, ke = e->mr->key;
	c = get(rc, buf + 4 * pg, 2 * pg, RW);
	CHECK(c->addr == (uintptr_t)buf && c->len == 6 * pg, "merge of unused neighbours "
	      "[%#lx,+%zu)", (unsigned long)c->addr, c->len);
	CHECK(calls_for(kd) == 1 && calls_for(ke) == 1, "both reported once");
	CHECK(!key_live(kd, (uintptr_t)buf, pg) && !key_live(ke, (uintptr_t)buf + pg, pg),
	      "merged unused regions deregistered");
	/* a new region that contains one in use replaces it in the cache: MERGED, still
	 * registered for its holder until the last put, reported once */
	d = get(rc, buf + 8 * pg, pg, RW);
	e = get(rc, buf + 7 * pg, 3 * pg, RW);
	CHECK(e != d && e->addr == (uintptr_t)buf + 7 * pg && e->len == 3 * pg,
	      "contains the region in use");
	CHECK(ddtx_reg_state(d) == DDTX_REG_MERGED && key_live(d->mr->key, d->addr, d->len),
	      "referenced merged region stays registered");
	kd = d->mr->key;
	CHECK(calls_for(kd) == 1 && call_for(kd)->state == DDTX_REG_MERGED, "reported MERGED");
	b = get(rc, buf + 8 * pg, 10, RW);
	CHECK(b == e, "lookups go to the new region");
	ddtx_regcache_put(rc, b);
	ddtx_regcache_put(rc, d);
	CHECK(!key_live(kd, (uintptr_t)buf + 8 * pg, pg), "released at last put");
	CHECK(calls_for(kd) == 1, "not reported again (%zu)", calls_for(kd));
	ddtx_regcache_put(rc, e);
	ddtx_regcache_put(rc, c);

	/* a merge that is not cheap: a 4 KiB request next to a 16 MiB region stays separate */
	uint8_t *big = map(16 * 1024 * 1024 + 2 * pg);
	a = get(rc, big, 16 * 1024 * 1024, RW);
	b = get(rc, big + 16 * 1024 * 1024, 100, RW);
	CHECK(b != a && b->len == pg, "no merge into a big region (len %zu)", b->len);
	CHECK(ddtx_reg_state(a) == DDTX_REG_LIVE, "big region untouched");
	ddtx_regcache_put(rc, a);
	ddtx_regcache_put(rc, b);

	/* bad arguments */
	CHECK(ddtx_regcache_get(rc, NULL, 10, RW, &a) == -FI_EINVAL, "NULL");
	CHECK(ddtx_regcache_get(rc, buf, 0, RW, &a) == -FI_EINVAL, "zero length");
	CHECK(ddtx_regcache_get(rc, buf, 10, 1u << 9, &a) == -FI_EINVAL, "bad access");
	CHECK(ddtx_regcache_get(rc, (void *)(UINTPTR_MAX - 10), 100, RW, &a) == -FI_EINVAL,
	      "wrap");

	stats(rc, &st);
	CHECK(st.merges == 5, "merges %lu", (unsigned long)st.merges);
	ddtx_regcache_close(rc);
	munmap(buf, 64 * pg);
	munmap(big, 16 * 1024 * 1024 + 2 * pg);
	wire_close();
	return 0;
}

/* ---- eviction ---- */

static int test_evict(void)
{
	struct ddtx_regcache_stats st;
	struct ddtx_regcache *rc;
	struct ddtx_reg *r[8];
	uint64_t k[8];
	uint8_t *buf;

	wire_open();
	/* by count: 4 regions; distinct pages two apart so nothing merges */
	rc = open_cache(0, 4, true);
	if (!require_monitor(rc))
		return 77;
	buf = map(64 * pg);
	for (int i = 0; i < 4; i++) {
		r[i] = get(rc, buf + 2 * i * pg, 10, RW);
		k[i] = r[i]->mr->key;
		ddtx_regcache_put(rc, r[i]);
	}
	/* touch 0 so 1 is now the least recently used */
	ddtx_regcache_put(rc, get(rc, buf, 10, RW));
	r[4] = get(rc, buf + 8 * pg, 10, RW);
	k[4] = r[4]->mr->key;
	ddtx_regcache_put(rc, r[4]);
	r[5] = get(rc, buf + 10 * pg, 10, RW);
	k[5] = r[5]->mr->key;
	ddtx_regcache_put(rc, r[5]);
	CHECK(ncalls == 2 && calls[0].key == k[1] && calls[1].key == k[2] &&
	      calls[0].state == DDTX_REG_EVICTED, "LRU order: evicted %zu: %#lx %#lx", ncalls,
	      ncalls > 0 ? (unsigned long)calls[0].key : 0,
	      ncalls > 1 ? (unsigned long)calls[1].key : 0);
	CHECK(!key_live(k[1], (uintptr_t)buf + 2 * pg, pg) &&
	      !key_live(k[2], (uintptr_t)buf + 4 * pg, pg), "evicted keys deregistered");
	CHECK(key_live(k[0], (uintptr_t)buf, pg) && key_live(k[3], (uintptr_t)buf + 6 * pg, pg),
	      "others kept");
	stats(rc, &st);
	CHECK(st.evictions == 2 && st.registered_count == 4, "evictions %lu count %lu",
	      (unsigned long)st.evictions, (unsigned long)st.registered_count);

	/* referenced regions are never evicted, even far over the limit */
	ncalls = 0;
	struct ddtx_reg *held[6];
	for (int i = 0; i < 6; i++)
		held[i] = get(rc, buf + (20 + 2 * i) * pg, 10, RW);
	stats(rc, &st);
	CHECK(st.registered_count == 6, "6 held regions registered (%lu)",
	      (unsigned long)st.registered_count);
	for (int i = 0; i < 6; i++)
		CHECK(key_live(held[i]->mr->key, held[i]->addr, pg) &&
		      ddtx_reg_state(held[i]) == DDTX_REG_LIVE, "held region %d kept", i);
	/* each put now evicts right away (LRU is that region alone) */
	uint64_t k0 = held[0]->mr->key;
	ddtx_regcache_put(rc, held[0]);
	CHECK(calls_for(k0) == 1 && !key_live(k0, (uintptr_t)buf + 20 * pg, pg),
	      "put over the limit evicts");
	for (int i = 1; i < 6; i++)
		ddtx_regcache_put(rc, held[i]);
	stats(rc, &st);
	CHECK(st.registered_count == 4, "back to the limit (%lu)",
	      (unsigned long)st.registered_count);
	ddtx_regcache_close(rc);

	/* by bytes: 8 pages */
	rc = open_cache(8 * pg, 0, true);
	r[0] = get(rc, buf, 3 * pg, RW);
	r[1] = get(rc, buf + 4 * pg, 3 * pg, RW);
	ddtx_regcache_put(rc, r[0]);
	ddtx_regcache_put(rc, r[1]);
	k[0] = r[0]->mr->key;
	k[1] = r[1]->mr->key;
	r[2] = get(rc, buf + 8 * pg, 3 * pg, RW);      /* 9 pages: the oldest goes */
	ddtx_regcache_put(rc, r[2]);
	CHECK(ncalls == 1 && calls[0].key == k[0], "byte limit evicts the oldest");
	stats(rc, &st);
	CHECK(st.registered_bytes == 6 * pg, "bytes %lu", (unsigned long)st.registered_bytes);
	r[3] = get(rc, buf + 12 * pg, 9 * pg, RW);     /* bigger than the limit alone */
	stats(rc, &st);
	CHECK(st.registered_count == 1 && ddtx_reg_state(r[3]) == DDTX_REG_LIVE,
	      "only the referenced oversize region left (%lu)", (unsigned long)st.registered_count);
	ddtx_regcache_put(rc, r[3]);
	stats(rc, &st);
	CHECK(st.registered_count == 0, "oversize region evicted at put");
	ddtx_regcache_close(rc);
	munmap(buf, 64 * pg);
	wire_close();
	return 0;
}

/* ---- invalidation ---- */

/*
 * The common pattern: register [p, p+len) and release it, let `op` make the memory go away
 * (and come back at the same address where it can), then check that the next get returns a
 * NEW key, that the old key is gone from the wire, that the listener heard of it exactly once
 * and that the statistics and generation moved.
 */
static int check_invalidated(struct ddtx_regcache *rc, const char *what, uint64_t old_key,
			     uintptr_t old_addr, size_t old_len, const void *p, size_t len,
			     uint64_t inval_before, uint64_t gen_before)
{
	struct ddtx_regcache_stats st;
	struct ddtx_reg *r;

	CHECK(ddtx_regcache_generation(rc) > gen_before, "%s: generation moved before flush",
	      what);
	r = get(rc, p, len, RW);
	CHECK(r->mr->key != old_key, "%s: same key after the memory went away", what);
	CHECK(!key_live(old_key, old_addr, old_len), "%s: old key still registered", what);
	CHECK(calls_for(old_key) == 1, "%s: listener called %zu times", what, calls_for(old_key));
	CHECK(call_for(old_key) && call_for(old_key)->state == DDTX_REG_INVALIDATED &&
	      call_for(old_key)->key_was_live, "%s: reported as invalidated, before dereg", what);
	stats(rc, &st);
	CHECK(st.invalidations == inval_before + 1, "%s: invalidations %lu, before %lu", what,
	      (unsigned long)st.invalidations, (unsigned long)inval_before);
	ddtx_regcache_put(rc, r);
	return 0;
}

#define BEFORE(rc)                                                                         \
	struct ddtx_regcache_stats st0;                                                    \
	stats(rc, &st0);                                                                   \
	uint64_t gen0 = ddtx_regcache_generation(rc)

static void *remap_at(void *want, size_t len, char fill)
{
	void *p = mmap(want, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (p == MAP_FAILED)
		p = mmap(want, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(p, fill, len);
	return p;
}

static int test_invalidate(void)
{
	struct ddtx_regcache *rc;
	struct ddtx_reg *r;
	uint64_t k;
	uint8_t *p;

	wire_open();
	rc = open_cache(0, 0, true);
	if (!require_monitor(rc))
		return 77;

	/* munmap, then a new mapping at the same address with new contents */
	{
		p = map(16 * pg);
		r = get(rc, p + pg, 4 * pg, RW);
		k = r->mr->key;
		ddtx_regcache_put(rc, r);
		BEFORE(rc);
		munmap(p, 16 * pg);
		uint8_t *q = remap_at(p, 16 * pg, 0x77);
		if (q != p)     /* e.g. a sanitizer's allocator took it meanwhile */
			printf("note: could not map the same address again (%p, %p)\n", (void *)q,
			       (void *)p);
		check_invalidated(rc, "munmap+mmap", k, (uintptr_t)p + pg, 4 * pg, q + pg, 4 * pg,
				  st0.invalidations, gen0);
		munmap(q, 16 * pg);
	}
	/* munmap of one page inside a region */
	{
		p = map(16 * pg);
		r = get(rc, p, 16 * pg, RW);
		k = r->mr->key;
		ddtx_regcache_put(rc, r);
		BEFORE(rc);
		munmap(p + 5 * pg, pg);
		check_invalidated(rc, "partial munmap", k, (uintptr_t)p, 16 * pg, p, 4 * pg,
				  st0.invalidations, gen0);
		munmap(p, 16 * pg);
	}
	/* mmap(MAP_FIXED) straight over a registered range */
	{
		p = map(16 * pg);
		r = get(rc, p, 8 * pg, RW);
		k = r->mr->key;
		ddtx_regcache_put(rc, r);
		BEFORE(rc);
		mmap(p + 2 * pg, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		     -1, 0);
		check_invalidated(rc, "MAP_FIXED over", k, (uintptr_t)p, 8 * pg, p, 8 * pg,
				  st0.invalidations, gen0);
		munmap(p, 16 * pg);
	}
	/* mremap: moved away; new memory at the old address */
	{
		uint8_t *area = map(64 * pg);
		munmap(area + 16 * pg, 48 * pg);
		p = area;
		r = get(rc, p, 16 * pg, RW);
		k = r->mr->key;
		ddtx_regcache_put(rc, r);
		BEFORE(rc);
		void *moved = mremap(p, 16 * pg, 16 * pg, MREMAP_MAYMOVE | MREMAP_FIXED, p + 32 * pg);
		CHECK(moved == p + 32 * pg, "mremap");
		uint8_t *q = remap_at(p, 16 * pg, 0x33);
		check_invalidated(rc, "mremap", k, (uintptr_t)p, 16 * pg, q, 16 * pg,
				  st0.invalidations, gen0);
		munmap(q, 16 * pg);
		munmap(moved, 16 * pg);
	}
	/* mremap shrink */
	{
		p = map(16 * pg);
		r = get(rc, p + 8 * pg, 4 * pg, RW);
		k = r->mr->key;
		ddtx_regcache_put(rc, r);
		BEFORE(rc);
		CHECK(mremap(p, 16 * pg, 4 * pg, 0) == p, "mremap shrink");
		uint8_t *q = remap_at(p + 4 * pg, 12 * pg, 0x44);
		check_invalidated(rc, "mremap shrink", k, (uintptr_t)p + 8 * pg, 4 * pg,
				  p + 8 * pg, 4 * pg, st0.invalidations, gen0);
		munmap(p, 4 * pg);
		munmap(q, 12 * pg);
	}
	/* madvise DONTNEED and FREE: still mapped, pages returned to the system */
	for (int adv = 0; adv < 2; adv++) {
		p = map(16 * pg);
		r = get(rc, p, 16 * pg, RW);
		k = r->mr->key;
		ddtx_regcache_put(rc, r);
		BEFORE(rc);
		madvise(p + 3 * pg, pg, adv ? MADV_FREE : MADV_DONTNEED);
		check_invalidated(rc, adv ? "MADV_FREE" : "MADV_DONTNEED", k, (uintptr_t)p, 16 * pg,
				  p, 16 * pg, st0.invalidations, gen0);
		munmap(p, 16 * pg);
	}
	/* madvise REMOVE on shared memory (memfd) */
	{
		FILE *f = tmpfile();
		int fd = memfd_create("regcache", 0);
		CHECK(fd >= 0 && ftruncate(fd, 16 * pg) == 0, "memfd");
		p = mmap(NULL, 16 * pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		memset(p, 1, 16 * pg);
		r = get(rc, p, 16 * pg, RW);
		k = r->mr->key;
		if (ddtx_reg_state(r) != DDTX_REG_LIVE) {
			/* kernel without write-protect mode for shmem: such memory is uncached */
			printf("note: shmem cannot be watched here (state %d)\n", ddtx_reg_state(r));
			CHECK(ddtx_reg_state(r) == DDTX_REG_UNCACHED, "shmem uncached");
			ddtx_regcache_put(rc, r);
		} else {
			ddtx_regcache_put(rc, r);
			BEFORE(rc);
			madvise(p + pg, pg, MADV_REMOVE);
			check_invalidated(rc, "memfd MADV_REMOVE", k, (uintptr_t)p, 16 * pg, p,
					  16 * pg, st0.invalidations, gen0);
		}
		munmap(p, 16 * pg);
		close(fd);
		fclose(f);
	}
	/* free() of a large malloc block (glibc munmaps it internally), then malloc again */
	{
		size_t len = 4 << 20;
		mallopt(M_MMAP_THRESHOLD, 128 << 10);  /* fixed: the next malloc mmaps again */
		uint8_t *m = malloc(len);
		memset(m, 1, len);
		r = get(rc, m, len, RW);
		k = r->mr->key;
		uintptr_t ra = r->addr;
		size_t rl = r->len;
		ddtx_regcache_put(rc, r);
		BEFORE(rc);
		free(m);
		if (msync((void *)ra, pg, MS_ASYNC) == 0) {
			/* A sanitizer's allocator keeps freed blocks (quarantine): the memory was
			 * not returned, so the region rightly stays. */
			printf("note: free() kept the block mapped; nothing to invalidate\n");
			ddtx_regcache_flush(rc);
			CHECK(calls_for(k) == 0 && key_live(k, ra, rl), "free(large) kept mapped");
		} else {
			uint8_t *m2 = malloc(len);
			memset(m2, 2, len);
			if ((uintptr_t)m2 > ra + pg || (uintptr_t)m2 < ra)
				printf("note: malloc returned a different address (%#lx, %p)\n",
				       (unsigned long)ra, (void *)m2);
			check_invalidated(rc, "free(large)", k, ra, rl, m2, len, st0.invalidations,
					  gen0);
			free(m2);
		}
	}
	/* a referenced region whose memory goes away: marked dead, unlisted at once, reported,
	 * still registered for its holder until the last put */
	{
		struct ddtx_regcache_stats st;
		p = map(16 * pg);
		r = get(rc, p, 16 * pg, RW);
		k = r->mr->key;
		munmap(p, 16 * pg);
		ddtx_regcache_flush(rc);
		CHECK(ddtx_reg_state(r) == DDTX_REG_INVALIDATED && !ddtx_reg_valid(r),
		      "held region marked dead");
		CHECK(calls_for(k) == 1, "held region reported once at flush");
		CHECK(key_live(k, (uintptr_t)p, 16 * pg), "held dead region still registered");
		uint8_t *q = remap_at(p, 16 * pg, 9);
		struct ddtx_reg *r2 = get(rc, q, 16 * pg, RW);
		CHECK(r2 != r && r2->mr->key != k, "dead held region not returned");
		ddtx_regcache_put(rc, r);
		CHECK(!key_live(k, (uintptr_t)p, 16 * pg), "dead region deregistered at last put");
		CHECK(calls_for(k) == 1, "and not reported again");
		ddtx_regcache_put(rc, r2);
		munmap(q, 16 * pg);
		stats(rc, &st);
		CHECK(st.registered_count == st.cached_count, "no leftovers (%lu vs %lu)",
		      (unsigned long)st.registered_count, (unsigned long)st.cached_count);
	}
	/* a MERGED region, still referenced, whose memory then goes away: reported a second
	 * time, as INVALIDATED */
	{
		p = map(16 * pg);
		struct ddtx_reg *small = get(rc, p, pg, RW);
		struct ddtx_reg *bigger = get(rc, p, 4 * pg, RW);
		uint64_t ks = small->mr->key, kb = bigger->mr->key;
		CHECK(ddtx_reg_state(small) == DDTX_REG_MERGED, "merged");
		CHECK(calls_for(ks) == 1, "merged region reported");
		munmap(p, 16 * pg);
		ddtx_regcache_flush(rc);
		CHECK(ddtx_reg_state(small) == DDTX_REG_INVALIDATED &&
		      ddtx_reg_state(bigger) == DDTX_REG_INVALIDATED, "both dead");
		CHECK(calls_for(ks) == 2 && calls[ncalls - 1].state == DDTX_REG_INVALIDATED,
		      "merged region reported again as invalidated (%zu)", calls_for(ks));
		CHECK(calls_for(kb) == 1, "the bigger one once");
		ddtx_regcache_put(rc, small);
		ddtx_regcache_put(rc, bigger);
		CHECK(calls_for(ks) == 2 && calls_for(kb) == 1, "no more reports at put");
		CHECK(!key_live(ks, (uintptr_t)p, pg) && !key_live(kb, (uintptr_t)p, 4 * pg),
		      "both deregistered at last put");
	}
	/* explicit invalidation */
	{
		p = map(4 * pg);
		r = get(rc, p, 4 * pg, RW);
		k = r->mr->key;
		ddtx_regcache_put(rc, r);
		BEFORE(rc);
		ddtx_regcache_invalidate(rc, p + pg, 1);
		check_invalidated(rc, "explicit", k, (uintptr_t)p, 4 * pg, p, 4 * pg,
				  st0.invalidations, gen0);
		munmap(p, 4 * pg);
	}
	/* unrelated unmaps do not disturb a cached region */
	{
		p = map(4 * pg);
		r = get(rc, p, 4 * pg, RW);
		ddtx_regcache_put(rc, r);
		void *other = map(4 * pg);
		munmap(other, 4 * pg);
		struct ddtx_reg *r2 = get(rc, p, 4 * pg, RW);
		CHECK(r2 == r, "still cached");
		ddtx_regcache_put(rc, r2);
		munmap(p, 4 * pg);
	}
	ddtx_regcache_close(rc);
	struct ddtx_memmon_info mi;
	ddtx_memmon_info(&mi);
	CHECK(!mi.running && mi.watches == 0, "monitor stopped with the last cache (%d, %lu)",
	      mi.running, (unsigned long)mi.watches);
	/* with the monitor stopped, munmap of previously watched memory does not block */
	p = map(4 * pg);
	munmap(p, 4 * pg);
	wire_close();
	return 0;
}

/* Two caches (two domains) watching the same memory share the one monitor: closing one must
 * not stop the other from hearing about an unmap. */
static int test_twocaches(void)
{
	struct ddtx_regcache *rc1, *rc2;
	struct ddtx_reg *r1, *r2;

	wire_open();
	rc1 = open_cache(0, 0, true);
	if (!require_monitor(rc1))
		return 77;
	rc2 = open_cache(0, 0, true);
	uint8_t *p = map(16 * pg);
	r1 = get(rc1, p, 8 * pg, RW);
	r2 = get(rc2, p + 4 * pg, 8 * pg, RW);
	uint64_t k2 = r2->mr->key;
	ddtx_regcache_put(rc1, r1);
	ddtx_regcache_put(rc2, r2);
	ddtx_regcache_close(rc1);          /* unwatches [p, p+8pg) but not what rc2 watches */
	munmap(p + 5 * pg, pg);
	ddtx_regcache_flush(rc2);
	CHECK(calls_for(k2) == 1 && !key_live(k2, (uintptr_t)p + 4 * pg, 8 * pg),
	      "second cache still hears the unmap");
	/* and a page only the closed cache watched no longer makes munmap wait for anyone */
	struct ddtx_memmon_info mi;
	ddtx_memmon_info(&mi);
	CHECK(mi.running && mi.watches == 0, "monitor running, nothing watched (%lu)",
	      (unsigned long)mi.watches);
	uint64_t ev = mi.events;
	munmap(p, 4 * pg);
	ddtx_memmon_info(&mi);
	CHECK(mi.events == ev, "no event for unwatched memory (%lu -> %lu)", (unsigned long)ev,
	      (unsigned long)mi.events);
	ddtx_regcache_close(rc2);
	munmap(p, 16 * pg);
	wire_close();
	return 0;
}

/* SysV shm: shmdt sends no event, so such memory is never cached (released at last put). */
static int test_shm(void)
{
	struct ddtx_regcache_stats st;
	struct ddtx_regcache *rc;
	struct ddtx_reg *r, *r2;

	wire_open();
	rc = open_cache(0, 0, true);
	if (!require_monitor(rc))
		return 77;
	int id = shmget(IPC_PRIVATE, 16 * pg, IPC_CREAT | 0600);
	CHECK(id >= 0, "shmget: %s", strerror(errno));
	uint8_t *p = shmat(id, NULL, 0);
	shmctl(id, IPC_RMID, NULL);
	memset(p, 1, 16 * pg);
	r = get(rc, p, 16 * pg, RW);
	uint64_t k = r->mr->key;
	CHECK(ddtx_reg_state(r) == DDTX_REG_UNCACHED, "SysV shm is not cached");
	r2 = get(rc, p, 16 * pg, RW);
	CHECK(r2 != r && r2->mr->key != k, "an uncached region is never shared");
	ddtx_regcache_put(rc, r2);
	ddtx_regcache_put(rc, r);
	CHECK(!key_live(k, (uintptr_t)p, 16 * pg), "released at last put");
	shmdt(p);
	int id2 = shmget(IPC_PRIVATE, 16 * pg, IPC_CREAT | 0600);
	uint8_t *q = shmat(id2, p, 0);
	if (q == (void *)-1)
		q = shmat(id2, NULL, 0);
	shmctl(id2, IPC_RMID, NULL);
	memset(q, 2, 16 * pg);
	r = get(rc, q, 16 * pg, RW);
	CHECK(r->mr->key != k, "after shmdt: a new key (same address: %d)", q == p);
	ddtx_regcache_put(rc, r);
	shmdt(q);
	CHECK(ncalls == 0, "uncached regions are never reported (%zu)", ncalls);
	stats(rc, &st);
	CHECK(st.uncached == 3 && st.registered_count == 0, "uncached %lu, count %lu",
	      (unsigned long)st.uncached, (unsigned long)st.registered_count);

	/* a regular file mapping: likewise uncached */
	FILE *f = tmpfile();
	CHECK(f && ftruncate(fileno(f), 4 * pg) == 0, "tmpfile");
	p = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_SHARED, fileno(f), 0);
	r = get(rc, p, 4 * pg, RW);
	CHECK(ddtx_reg_state(r) == DDTX_REG_UNCACHED, "file mapping is not cached");
	ddtx_regcache_put(rc, r);
	munmap(p, 4 * pg);
	fclose(f);
	ddtx_regcache_close(rc);
	wire_close();
	return 0;
}

/* brk shrink (run alone: it moves the program break under malloc's feet otherwise). */
static int test_brk(void)
{
	struct ddtx_regcache *rc;
	struct ddtx_reg *r;

	/* Keep malloc off the break during the test: its top chunk has room and is not trimmed. */
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	free(malloc(8 << 20));
	wire_open();
	rc = open_cache(0, 0, true);
	if (!require_monitor(rc))
		return 77;
	mallopt(M_MMAP_THRESHOLD, 128 << 10);
	uint8_t *cur = sbrk(0);
	uint8_t *top = (uint8_t *)(((uintptr_t)cur + pg - 1) & ~(uintptr_t)(pg - 1));
	size_t grow = (size_t)(top - cur) + 16 * pg;
	CHECK(sbrk((intptr_t)grow) == cur, "sbrk grow");
	memset(top, 1, 16 * pg);
	r = get(rc, top + 8 * pg, 8 * pg, RW);
	uint64_t k = r->mr->key;
	ddtx_regcache_put(rc, r);
	BEFORE(rc);
	CHECK(sbrk(-(intptr_t)(8 * pg)) != (void *)-1, "sbrk shrink");
	CHECK(sbrk((intptr_t)(8 * pg)) != (void *)-1, "sbrk grow again");
	memset(top + 8 * pg, 2, 8 * pg);
	check_invalidated(rc, "brk shrink", k, (uintptr_t)top + 8 * pg, 8 * pg, top + 8 * pg,
			  8 * pg, st0.invalidations, gen0);
	ddtx_regcache_close(rc);
	sbrk(-(intptr_t)grow);
	wire_close();
	return 0;
}

/* No monitor: nothing is kept beyond its references, so nothing stale can come back. */
static int test_nomonitor(void)
{
	struct ddtx_regcache_stats st;
	struct ddtx_regcache *rc;
	struct ddtx_reg *r, *r2;

	wire_open();
	for (int round = 0; round < 2; round++) {
		if (round == 1)
			ddtx_memmon_test_set_unavailable(true);   /* as when userfaultfd is refused */
		rc = open_cache(0, 0, round == 1);
		CHECK(!ddtx_regcache_monitored(rc), "round %d: not monitored", round);
		uint8_t *p = map(8 * pg);
		r = get(rc, p, 8 * pg, RW);
		uint64_t k = r->mr->key;
		CHECK(ddtx_reg_state(r) == DDTX_REG_UNCACHED, "uncached");
		ddtx_regcache_put(rc, r);
		CHECK(!key_live(k, (uintptr_t)p, 8 * pg), "deregistered at last put");
		munmap(p, 8 * pg);
		uint8_t *q = remap_at(p, 8 * pg, 3);
		r2 = get(rc, q, 8 * pg, RW);
		CHECK(r2->mr->key != k, "new key after munmap+mmap");
		ddtx_regcache_put(rc, r2);
		munmap(q, 8 * pg);
		stats(rc, &st);
		CHECK(st.hits == 0 && st.misses == 2 && st.uncached == 2 &&
		      st.registered_count == 0 && ncalls == 0, "round %d stats", round);
		ddtx_regcache_close(rc);
	}
	ddtx_memmon_test_set_unavailable(false);
	wire_close();
	return 0;
}

/* fork: the child must not block on munmap, must not touch the parent's keys, still works. */
static int test_fork(void)
{
	struct ddtx_regcache *rc;
	struct ddtx_reg *r;

	wire_open();
	rc = open_cache(0, 0, true);
	if (!require_monitor(rc))
		return 77;
	uint8_t *p = map(16 * pg);
	r = get(rc, p, 16 * pg, RW);
	uint64_t k = r->mr->key;
	ddtx_regcache_put(rc, r);
	fflush(NULL);
	pid_t c = fork();
	if (c == 0) {
		alarm(10);
		munmap(p, 8 * pg);                     /* must not block: no reader here */
		struct ddtx_reg *cr;
		uint8_t *q = map(4 * pg);
		int ret = ddtx_regcache_get(rc, q, 4 * pg, RW, &cr);
		int ok = ret == 0 && ddtx_reg_state(cr) == DDTX_REG_UNCACHED &&
			 !ddtx_regcache_monitored(rc);
		if (!ret)
			ddtx_regcache_put(rc, cr);
		ddtx_regcache_close(rc);               /* must not deregister the parent's keys */
		_exit(ok ? 0 : 3);
	}
	int status;
	waitpid(c, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	CHECK(key_live(k, (uintptr_t)p, 16 * pg), "parent's key untouched by the child");
	r = get(rc, p, 16 * pg, RW);
	CHECK(r->mr->key == k && ddtx_regcache_monitored(rc), "parent still caches");
	ddtx_regcache_put(rc, r);
	munmap(p, 16 * pg);
	ddtx_regcache_flush(rc);
	CHECK(calls_for(k) == 1, "parent still monitored");
	ddtx_regcache_close(rc);
	wire_close();
	return 0;
}

/* ---- concurrency: 4 get/put threads, one mapping/unmapping thread ---- */

enum { SLOTS = 8, SLOT_PAGES = 8, GETTERS = 4 };

static struct slot {
	pthread_rwlock_t lock;
	uint8_t *addr;
	uint64_t epoch;
} slots[SLOTS];

/* key -> (slot, epoch) at first sight; open addressing. */
#define KMAP 65536
static struct kent {
	uint64_t key;
	int slot;
	uint64_t epoch;
} kmap[KMAP];
static size_t kmap_used;
static pthread_mutex_t kmap_lock = PTHREAD_MUTEX_INITIALIZER;
static int stale_hits, dead_hits, dup_reports;
static int stop_flag;          /* atomic */
static struct ddtx_regcache *crc;

static void see_key(uint64_t key, int slot, uint64_t epoch)
{
	pthread_mutex_lock(&kmap_lock);
	size_t i = (size_t)(key * 0x9e3779b97f4a7c15ull >> 40) & (KMAP - 1);
	for (;; i = (i + 1) & (KMAP - 1)) {
		if (!kmap[i].key) {
			if (kmap_used < KMAP / 2) {      /* full enough: stop recording */
				kmap[i] = (struct kent){ key, slot, epoch };
				kmap_used++;
			}
			break;
		}
		if (kmap[i].key == key) {
			if (kmap[i].slot == slot && kmap[i].epoch != epoch) {
				if (stale_hits++ < 5)
					fprintf(stderr, "stale: key %#lx slot %d first seen in epoch "
						"%lu, again in %lu\n", (unsigned long)key, slot,
						(unsigned long)kmap[i].epoch, (unsigned long)epoch);
			}
			break;
		}
	}
	pthread_mutex_unlock(&kmap_lock);
}

static void *getter(void *arg)
{
	uint64_t seed = (uintptr_t)arg * 7919 + 1;
	long n = 0;

	while (!__atomic_load_n(&stop_flag, __ATOMIC_RELAXED)) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		int s = (int)(seed % SLOTS);
		size_t off = (seed >> 8) % (SLOT_PAGES * pg - 1);
		size_t len = 1 + (seed >> 24) % (SLOT_PAGES * pg - off);
		uint32_t acc = (seed >> 40) & 1 ? RW : ALL;
		struct ddtx_reg *r;

		pthread_rwlock_rdlock(&slots[s].lock);
		int ret = ddtx_regcache_get(crc, slots[s].addr + off, len, acc, &r);
		if (ret == 0) {
			if (r->addr > (uintptr_t)slots[s].addr + off ||
			    r->addr + r->len < (uintptr_t)slots[s].addr + off + len)
				__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
			/* Only regions inside this slot can be attributed to its epoch (one merged
			 * with a neighbouring mapping may die while we hold it, legitimately). */
			if (r->addr >= (uintptr_t)slots[s].addr &&
			    r->addr + r->len <= (uintptr_t)slots[s].addr + SLOT_PAGES * pg) {
				if (!ddtx_reg_valid(r))
					__atomic_add_fetch(&dead_hits, 1, __ATOMIC_RELAXED);
				else if (ddtx_reg_state(r) == DDTX_REG_LIVE)
					see_key(r->mr->key, s, slots[s].epoch);
			}
			ddtx_regcache_put(crc, r);
		} else {
			__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
		}
		pthread_rwlock_unlock(&slots[s].lock);
		n++;
	}
	return (void *)n;
}

static void *mapper(void *arg)
{
	uint64_t seed = 42;
	long n = 0;

	while (!__atomic_load_n(&stop_flag, __ATOMIC_RELAXED)) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		int s = (int)(seed % SLOTS);

		pthread_rwlock_wrlock(&slots[s].lock);
		uint8_t *old = slots[s].addr;
		switch (seed >> 32 & 3) {
		case 0:
			munmap(old, SLOT_PAGES * pg);
			slots[s].addr = remap_at(old, SLOT_PAGES * pg, (char)n);
			break;
		case 1:
			madvise(old, SLOT_PAGES * pg, MADV_DONTNEED);
			break;
		case 2:
			mmap(old, SLOT_PAGES * pg, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
			break;
		default: {
			uint8_t *fresh = map(SLOT_PAGES * pg);
			munmap(old, SLOT_PAGES * pg);
			slots[s].addr = fresh;
		}
		}
		slots[s].epoch++;
		pthread_rwlock_unlock(&slots[s].lock);
		/* unrelated traffic too */
		void *x = map(2 * pg);
		munmap(x, 2 * pg);
		n++;
		usleep(200);
	}
	return (void *)n;
}

/* Each region is reported once, or twice when it left MERGED and died INVALIDATED later. */
static void dup_listener(void *arg, const struct ddtx_reg *reg)
{
	static struct {
		uint64_t key;
		int state;
		int n;
	} seen[1 << 16];
	static size_t nseen;
	int st = ddtx_reg_state(reg);
	size_t i;

	pthread_mutex_lock(&lis_lock);
	for (i = 0; i < nseen; i++)
		if (seen[i].key == reg->mr->key)
			break;
	if (i < nseen) {
		if (seen[i].state != DDTX_REG_MERGED || st != DDTX_REG_INVALIDATED || seen[i].n > 1)
			dup_reports++;
		seen[i].state = st;
		seen[i].n++;
	} else if (nseen < (1 << 16)) {
		seen[nseen].key = reg->mr->key;
		seen[nseen].state = st;
		seen[nseen++].n = 1;
	}
	ncalls++;
	pthread_mutex_unlock(&lis_lock);
}

static int test_concurrent(void)
{
	pthread_t g[GETTERS], m;
	long ops = 0, maps;
	struct ddtx_regcache_stats st;
	const char *env = getenv("REGCACHE_SECONDS");
	int seconds = env ? atoi(env) : 3;

	wire_open();
	crc = open_cache(0, 6, true);
	if (!require_monitor(crc))
		return 77;
	ddtx_regcache_set_listener(crc, dup_listener, NULL);
	for (int i = 0; i < SLOTS; i++) {
		pthread_rwlock_init(&slots[i].lock, NULL);
		slots[i].addr = map(SLOT_PAGES * pg);
	}
	for (int i = 0; i < GETTERS; i++)
		pthread_create(&g[i], NULL, getter, (void *)(uintptr_t)(i + 1));
	pthread_create(&m, NULL, mapper, NULL);
	sleep(seconds);
	__atomic_store_n(&stop_flag, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < GETTERS; i++) {
		void *n;
		pthread_join(g[i], &n);
		ops += (long)n;
	}
	void *mn;
	pthread_join(m, &mn);
	maps = (long)mn;
	ddtx_regcache_flush(crc);
	stats(crc, &st);
	printf("concurrent: %ld get/put, %ld map changes, hits %lu misses %lu evictions %lu "
	       "invalidations %lu merges %lu, listener calls %zu\n", ops, maps,
	       (unsigned long)st.hits, (unsigned long)st.misses, (unsigned long)st.evictions,
	       (unsigned long)st.invalidations, (unsigned long)st.merges, ncalls);
	CHECK(stale_hits == 0, "%d stale regions returned", stale_hits);
	CHECK(dead_hits == 0, "%d dead regions returned", dead_hits);
	CHECK(dup_reports == 0, "%d regions reported twice", dup_reports);
	CHECK(st.invalidations > 0 && st.hits > 0, "the test exercised hits and invalidations");
	CHECK(st.registered_count == st.cached_count && st.cached_count <= 6,
	      "only cached regions remain (%lu, %lu)", (unsigned long)st.registered_count,
	      (unsigned long)st.cached_count);
	ddtx_regcache_close(crc);
	for (int i = 0; i < SLOTS; i++)
		munmap(slots[i].addr, SLOT_PAGES * pg);
	wire_close();
	return 0;
}

/* ---- micro-benchmark (printed, not asserted) ---- */

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static int test_bench(void)
{
	struct ddtx_regcache *rc;
	struct ddtx_reg *r;
	enum { N = 1000000, REGIONS = 1024 };

	wire_open();
	rc = open_cache(0, 0, true);
	bool mon = ddtx_regcache_monitored(rc);
	uint8_t *buf = map(REGIONS * 2 * pg);
	for (int i = 0; i < REGIONS; i++) {
		r = get(rc, buf + 2 * i * pg, pg, RW);
		if (mon)
			ddtx_regcache_put(rc, r);
	}
	double t0 = now_ns();
	for (int i = 0; i < N; i++) {
		ddtx_regcache_get(rc, buf + 2 * (i % REGIONS) * pg + 8, 64, RW, &r);
		ddtx_regcache_put(rc, r);
	}
	double t1 = now_ns();
	printf("bench: cache hit (get+put, %d regions in the tree, monitor %s): %.1f ns\n",
	       REGIONS, mon ? "on" : "off", (t1 - t0) / N);
	t0 = now_ns();
	for (int i = 0; i < N; i++)
		(void)ddtx_regcache_generation(rc);
	t1 = now_ns();
	printf("bench: ddtx_regcache_generation: %.1f ns\n", (t1 - t0) / N);
	/* miss cost: register + watch + deregister + unwatch */
	ddtx_regcache_close(rc);
	rc = open_cache(0, 1, true);
	t0 = now_ns();
	for (int i = 0; i < 20000; i++) {
		ddtx_regcache_get(rc, buf + 2 * (i % REGIONS) * pg, pg, RW, &r);
		ddtx_regcache_put(rc, r);
	}
	t1 = now_ns();
	printf("bench: cache miss with eviction (register, watch, deregister, unwatch): %.1f ns\n",
	       (t1 - t0) / 20000);
	ddtx_regcache_close(rc);
	munmap(buf, REGIONS * 2 * pg);
	wire_close();
	return 0;
}

/* ---- host pages: what the CUDA driver called host memory, forgotten when the memory goes ---- */

static void hp_info(struct ddtx_host_pages *hp, struct ddtx_host_pages_info *i)
{
	ddtx_host_pages_info(hp, i);
}

static int test_host_pages(void)
{
	struct ddtx_mr_watch *mw;
	struct ddtx_host_pages *hp;
	struct ddtx_host_pages_info in;

	pg = (size_t)sysconf(_SC_PAGESIZE);
	/* No monitor: nothing is learned, every lookup misses. */
	CHECK(ddtx_mr_watch_open(false, &mw) == 0 && ddtx_host_pages_open(mw, &hp) == 0, "open");
	uint8_t *p = map(8 * pg);
	ddtx_host_pages_learn(hp, p);
	CHECK(!ddtx_host_pages_known(hp, p), "learned without a monitor");
	ddtx_host_pages_close(hp);
	ddtx_mr_watch_close(mw);

	CHECK(ddtx_mr_watch_open(true, &mw) == 0 && ddtx_host_pages_open(mw, &hp) == 0, "open");
	if (!ddtx_mr_watch_monitored(mw)) {
		printf("SKIP: no memory monitor in this environment\n");
		ddtx_host_pages_close(hp);
		ddtx_mr_watch_close(mw);
		return 77;
	}
	/* The page of the address asked about, and only it. */
	ddtx_host_pages_learn(hp, p + pg + 100);
	CHECK(ddtx_host_pages_known(hp, p + pg), "page start");
	CHECK(ddtx_host_pages_known(hp, p + 2 * pg - 1), "page end");
	CHECK(!ddtx_host_pages_known(hp, p + 2 * pg), "next page known");
	CHECK(!ddtx_host_pages_known(hp, p + pg - 1), "previous page known");
	/* Neighbours merge: pages 1, 3, then 2 joins them, 0 extends the run. */
	ddtx_host_pages_learn(hp, p + 3 * pg);
	hp_info(hp, &in);
	CHECK(in.runs == 2 && in.learned == 2, "two runs (%zu)", in.runs);
	ddtx_host_pages_learn(hp, p + 2 * pg + 7);
	hp_info(hp, &in);
	CHECK(in.runs == 1, "pages 1..3 one run (%zu)", in.runs);
	ddtx_host_pages_learn(hp, p);
	ddtx_host_pages_learn(hp, p + 5);        /* known already: nothing new */
	hp_info(hp, &in);
	CHECK(in.runs == 1 && in.learned == 4, "pages 0..3 one run (%zu runs, %llu learned)",
	      in.runs, (unsigned long long)in.learned);
	for (size_t i = 0; i < 4 * pg; i += 512)
		CHECK(ddtx_host_pages_known(hp, p + i), "byte %zu of the run", i);
	CHECK(!ddtx_host_pages_known(hp, p + 4 * pg), "past the run");

	/* munmap of one page: the whole run is forgotten at the next poll, not before. */
	CHECK(munmap(p + 2 * pg, pg) == 0, "munmap");
	ddtx_mr_watch_poll(mw);
	CHECK(!ddtx_host_pages_known(hp, p) && !ddtx_host_pages_known(hp, p + 3 * pg),
	      "unmapped run still known");
	hp_info(hp, &in);
	CHECK(in.runs == 0 && in.forgotten == 1, "forgotten (%zu runs, %llu)", in.runs,
	      (unsigned long long)in.forgotten);
	/* A new mapping there is learned afresh (the driver is asked again first). */
	uint8_t *q = remap_at(p + 2 * pg, pg, 1);
	ddtx_host_pages_learn(hp, q);
	CHECK(ddtx_host_pages_known(hp, q), "relearned");

	/* madvise(DONTNEED) counts as gone, as for registrations. */
	ddtx_host_pages_learn(hp, p + 5 * pg);
	CHECK(ddtx_host_pages_known(hp, p + 5 * pg), "page 5");
	CHECK(madvise(p + 5 * pg, pg, MADV_DONTNEED) == 0, "madvise");
	ddtx_mr_watch_poll(mw);
	CHECK(!ddtx_host_pages_known(hp, p + 5 * pg), "page 5 after DONTNEED");

	/* SysV shm cannot be watched: never learned. */
	int id = shmget(IPC_PRIVATE, pg, IPC_CREAT | 0600);
	if (id >= 0) {
		uint8_t *shm = shmat(id, NULL, 0);
		shmctl(id, IPC_RMID, NULL);
		if (shm != (void *)-1) {
			ddtx_host_pages_learn(hp, shm);
			CHECK(!ddtx_host_pages_known(hp, shm), "SysV shm learned");
			shmdt(shm);
		}
	}

	/* Full: learning one more run forgets them all. */
	munmap(q, pg);
	ddtx_mr_watch_poll(mw);
	hp_info(hp, &in);
	CHECK(in.runs == 0, "empty before filling (%zu runs)", in.runs);
	size_t n = DDTX_HOST_PAGES_MAX_RUNS + 1;
	uint8_t *big = map(2 * n * pg);
	hp_info(hp, &in);
	uint64_t resets = in.resets;
	for (size_t i = 0; i < n; i++)
		ddtx_host_pages_learn(hp, big + 2 * i * pg);     /* every other page: no merges */
	hp_info(hp, &in);
	CHECK(in.resets == resets + 1 && in.runs == 1, "full: %llu resets, %zu runs",
	      (unsigned long long)(in.resets - resets), in.runs);
	CHECK(ddtx_host_pages_known(hp, big + 2 * (n - 1) * pg), "the newest run kept");
	munmap(big, 2 * n * pg);
	ddtx_mr_watch_poll(mw);

	/* A forked child: no monitor there, so nothing it knew is trusted. */
	ddtx_host_pages_learn(hp, p + 6 * pg);
	pid_t pid = fork();
	if (pid == 0) {
		ddtx_mr_watch_poll(mw);                 /* notices the fork */
		_exit(ddtx_host_pages_known(hp, p + 6 * pg) ? 1 : 0);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child trusted its parent's pages");
	CHECK(ddtx_host_pages_known(hp, p + 6 * pg), "parent forgot after fork");

	ddtx_host_pages_close(hp);
	ddtx_mr_watch_close(mw);
	munmap(p, 2 * pg);
	munmap(p + 3 * pg, 5 * pg);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(void);
	} cases[] = {
		{ "itree", test_itree },       { "basic", test_basic },
		{ "evict", test_evict },       { "invalidate", test_invalidate },
		{ "shm", test_shm },           { "brk", test_brk },
		{ "twocaches", test_twocaches },
		{ "nomonitor", test_nomonitor }, { "fork", test_fork },
		{ "concurrent", test_concurrent }, { "bench", test_bench },
		{ "host_pages", test_host_pages },
	};
	int ran = 0, ret = 0;

	setvbuf(stdout, NULL, _IONBF, 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (argc > 1 && strcmp(argv[1], cases[i].name))
			continue;
		ran++;
		ret = cases[i].fn();
		if (ret == 77)
			return 77;
	}
	if (!ran) {
		fprintf(stderr, "unknown case %s\n", argv[1]);
		return 2;
	}
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("regcache %s: passed\n", argc > 1 ? argv[1] : "all");
	return ret;
}
