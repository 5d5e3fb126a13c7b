/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CUDA IPC building blocks (engine/ipc_copy.h, engine/ipc_cache.h, hmem's IPC calls):
 *   plan     the copy engine's plan between two segment lists, run on host memory with
 *            memcpy, against the plain gather/scatter, byte for byte, over random lists; 2-D
 *            for vector shapes, merged pieces otherwise
 *   cache    the import and export caches against counting stand-ins of the driver: hits,
 *            stale mappings closed when the peer's buffer id or handle changes, per-peer drop,
 *            eviction, failed opens not cached, everything closed at the end
 *   offer    peer_check's checks of a CUDA IPC offer (an RTS with DDTX_HDR_IPC): a valid one
 *            passes, each malformed field is named
 *   runs     the offer's segments as runs (proto/ipc_runs.c): encoded and walked back, every
 *            segment where it was, for the benchmark's layouts and random lists; runs of the
 *            many-block layouts as small as vectors make them; what does not fit refused
 *   process  two real processes through the driver (the test-only libcuda.so.1 stand-in, or
 *            a GPU): one exports a device allocation, the other maps it through the cache and
 *            copies device to device with the plan into its own device memory; every byte
 *            checked; then a forged handle and the handle of the freed allocation: -FI_EIO,
 *            no crash.  Exit 77 without a driver and a device.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "engine/gpu_kernels.h"
#include "engine/ipc_cache.h"
#include "engine/ipc_copy.h"
#include "proto/ipc_runs.h"
#include "proto/proto_internal.h"
#include "unit_check.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A random list over buf: vector (kind 0), contiguous (1), irregular (2); returns count. */
static size_t make_list(uint8_t *buf, size_t cap, int kind, size_t want, size_t block,
			struct iovec *v, size_t max)
{
	size_t n = 0, pos = 0, total = 0;

	if (kind == 1) {
		v[0] = (struct iovec){ buf, want };
		return 1;
	}
	size_t stride = block + next() % 256;
	while (total < want && n < max) {
		size_t len = kind == 0 ? block : next() % 300;
		size_t gap = kind == 0 ? stride - block : next() % 64;
		if (len > want - total)
			len = want - total;
		if (pos + len + gap > cap)
			break;
		v[n++] = (struct iovec){ buf + pos, len };
		pos += len + gap;
		total += len;
	}
	return total == want ? n : 0;
}

static void run_on_host(const struct ddtx_ipc_plan *p)
{
	if (p->two_d) {
		for (size_t r = 0; r < p->d2.height; r++)
			memcpy((uint8_t *)p->d2.dst + r * p->d2.dpitch,
			       (const uint8_t *)p->d2.src + r * p->d2.spitch, p->d2.width);
		return;
	}
	for (size_t i = 0; i < p->nops; i++)
		memcpy(p->ops[i].dst, p->ops[i].src, p->ops[i].len);
}

/* Plan len bytes of src into dst (into *p, kept for the caller's checks), check its pieces
 * (none empty, adjacent ones merged, len in all), run it on the host and compare with a
 * reference gather and scatter.  The buffers are plan_src and plan_dst. */
enum { CAP = 1 << 18, MAX = 4096 };
static uint8_t plan_src[CAP], plan_dst[CAP];

static void plan_and_check(const struct iovec *dv, size_t nd, const struct iovec *sv, size_t ns,
			   size_t len, struct ddtx_ipc_plan *p, int iter)
{
	static uint8_t want[CAP], stream[CAP];
	for (size_t i = 0; i < CAP; i++) {
		plan_src[i] = (uint8_t)next();
		plan_dst[i] = (uint8_t)(i * 7);
	}
	/* reference: gather len bytes of src, scatter into a copy of dst */
	size_t q = 0;
	for (size_t i = 0; i < ns && q < len; i++) {
		size_t n = sv[i].iov_len < len - q ? sv[i].iov_len : len - q;
		memcpy(stream + q, sv[i].iov_base, n);
		q += n;
	}
	memcpy(want, plan_dst, CAP);
	q = 0;
	for (size_t i = 0; i < nd && q < len; i++) {
		size_t n = dv[i].iov_len < len - q ? dv[i].iov_len : len - q;
		memcpy(want + ((uint8_t *)dv[i].iov_base - plan_dst), stream + q, n);
		q += n;
	}
	CHECK(ddtx_ipc_plan_build(dv, nd, sv, ns, len, p) == 0, "build");
	CHECK(p->bytes == len, "plan bytes");
	size_t sum = 0;
	for (size_t i = 0; i < p->nops; i++) {
		sum += p->ops[i].len;
		CHECK(p->ops[i].len, "empty piece");
		if (i)
			CHECK((uint8_t *)p->ops[i - 1].dst + p->ops[i - 1].len !=
				      (uint8_t *)p->ops[i].dst ||
			      (const uint8_t *)p->ops[i - 1].src + p->ops[i - 1].len !=
				      (const uint8_t *)p->ops[i].src,
			      "pieces %zu and %zu not merged", i - 1, i);
	}
	CHECK(sum == len, "pieces cover %zu of %zu", sum, len);
	run_on_host(p);
	CHECK(!memcmp(plan_dst, want, CAP), "iter %d (%zu -> %zu segments, %zu bytes): bytes differ",
	      iter, ns, nd, len);
}

static void test_plan(void)
{
	uint8_t *sbuf = plan_src, *dbuf = plan_dst;
	static struct iovec sv[MAX], dv[MAX];
	size_t two_d = 0, batches = 0;

	for (int iter = 0; iter < 3000; iter++) {
		int sk = next() % 3, dk = next() % 3;
		size_t block = 1 + next() % 512, total = 1 + next() % 20000;
		if (sk == 0 && iter % 2) /* whole blocks: the vector shapes 2-D copies take */
			total = block * (1 + next() % 40);
		size_t ns = make_list(sbuf, CAP, sk, total, block, sv, MAX);
		size_t nd = make_list(dbuf, CAP, dk, total, block, dv, MAX);
		if (!ns || !nd)
			continue;
		/* a vector on both sides with the same block: always 2-D */
		if (sk == 0 && dk == 0 && iter % 2) {
			size_t b = sv[0].iov_len, st = ns > 1 ? (size_t)((uint8_t *)sv[1].iov_base -
								    (uint8_t *)sv[0].iov_base) : b;
			for (size_t i = 0; i < ns; i++)
				dv[i] = (struct iovec){ dbuf + i * (st + 8), sv[i].iov_len };
			nd = ns;
			(void)b;
		}
		size_t len = iter % 5 ? total : next() % (total + 1); /* truncated sometimes */
		struct ddtx_ipc_plan p;
		plan_and_check(dv, nd, sv, ns, len, &p, iter);
		if (sk == 0 && dk == 0 && iter % 2 && ns > 2 && len == total &&
		    sv[ns - 1].iov_len == sv[0].iov_len)
			CHECK(p.two_d, "vector into vector, %zu blocks: not 2-D", ns);
		if (sk == 0 && dk == 1 && ns > 2 && len == total && sv[ns - 1].iov_len == sv[0].iov_len &&
		    sv[1].iov_base != (uint8_t *)sv[0].iov_base + sv[0].iov_len)
			CHECK(p.two_d, "vector into a contiguous buffer: not 2-D");
		two_d += p.two_d;
		batches += !p.two_d;
		ddtx_ipc_plan_free(&p);
	}
	CHECK(two_d > 100 && batches > 100, "%zu 2-D plans, %zu batches", two_d, batches);
	/* Lists of equal lengths pair by pair for a while (one layout on both sides), empty and
	 * adjacent entries among them, then the destination's rest split otherwise: the pairs'
	 * quick pass, then the walk from where it stopped. */
	for (int iter = 0; iter < 500; iter++) {
		size_t n = 1 + next() % 300, same = next() % (n + 1), sat = 0, dat = 0;
		size_t total = 0, paired = 0, ns = 0, nd = 0;
		for (size_t i = 0; i < n; i++) {
			size_t l = next() % 8 ? 1 + next() % 64 : 0;
			sv[ns++] = (struct iovec){ sbuf + sat, l };
			sat += l + next() % 3 * 16;
			total += l;
			if (i < same) {
				dv[nd++] = (struct iovec){ dbuf + dat, l };
				dat += l + next() % 3 * 16;
				paired += l;
			}
		}
		for (size_t rest = total - paired; rest;) {
			size_t l = 1 + next() % 100;
			l = l < rest ? l : rest;
			dv[nd++] = (struct iovec){ dbuf + dat, l };
			dat += l + next() % 2 * 8;
			rest -= l;
		}
		struct ddtx_ipc_plan p;
		plan_and_check(dv, nd, sv, ns, iter % 4 ? total : next() % (total + 1), &p,
			       3000 + iter);
		ddtx_ipc_plan_free(&p);
	}
	/* Adjacent segments on both sides merge into one piece. */
	struct iovec a[4], b[1] = { { dbuf, 400 } };
	for (int i = 0; i < 4; i++)
		a[i] = (struct iovec){ sbuf + 100 * i, 100 };
	struct ddtx_ipc_plan p;
	CHECK(ddtx_ipc_plan_build(b, 1, a, 4, 400, &p) == 0 && p.nops == 1 && !p.two_d &&
	      p.ops[0].len == 400, "adjacent segments: %zu pieces", p.nops);
	ddtx_ipc_plan_free(&p);
	CHECK(ddtx_ipc_plan_build(b, 1, a, 4, 401, &p) == -FI_EINVAL, "len past the lists");
	printf("plan: %zu 2-D, %zu batched\n", two_d, batches);

	/* A source that is one vector (an offer of one run): the same 2-D copy as from its
	 * blocks listed, without the list; its pieces listed only when a way asks for them. */
	for (size_t i = 0; i < 100; i++) {
		sv[i] = (struct iovec){ sbuf + 64 + i * 200, 48 };
		dv[i] = (struct iovec){ dbuf + 8 + i * 96, 48 };
	}
	struct ddtx_ipc_plan pv, pl;
	CHECK(ddtx_ipc_plan_from_vector(dv, 100, sbuf + 64, 200, 48, 100, 90 * 48, &pv) == 0 &&
		      ddtx_ipc_plan_build(dv, 100, sv, 100, 90 * 48, &pl) == 0, "vector plans");
	CHECK(pv.two_d && pl.two_d && !pv.ops && pv.nops == 90 && pl.nops == 90 &&
		      !memcmp(&pv.d2, &pl.d2, sizeof(pv.d2)), "from a vector: not the listed plan");
	for (size_t i = 0; i < 100 * 200 + 64; i++)
		sbuf[i] = (uint8_t)next();
	memset(dbuf, 0, 100 * 96 + 8);
	int ret = 1;
	CHECK(ddtx_ipc_plan_run(0, &pv, DDTX_HMEM_COPY_SEGMENTS, &ret) == DDTX_HMEM_COPY_SEGMENTS &&
		      pv.ops && pv.ops[89].src == sbuf + 64 + 89 * 200 && pv.ops[89].dst == dbuf + 8 +
		      89 * 96, "pieces listed for the batch");
	ddtx_ipc_plan_free(&pv);
	ddtx_ipc_plan_free(&pl);
	/* not a vector into a vector of that block, part of a block, contiguous both ways: no */
	dv[7].iov_len = 47;
	CHECK(ddtx_ipc_plan_from_vector(dv, 100, sbuf, 200, 48, 100, 48 * 5, &pv) == -FI_EAGAIN,
	      "dst no vector");
	dv[7].iov_len = 48;
	CHECK(ddtx_ipc_plan_from_vector(dv, 100, sbuf, 200, 48, 100, 48 * 5 + 1, &pv) ==
		      -FI_EAGAIN, "part of a block");
	CHECK(ddtx_ipc_plan_from_vector(dv, 100, sbuf, 200, 48, 4, 48 * 5, &pv) == -FI_EAGAIN,
	      "more than the source has");
	for (size_t i = 0; i < 100; i++)
		dv[i] = (struct iovec){ dbuf + i * 48, 48 };
	CHECK(ddtx_ipc_plan_from_vector(dv, 100, sbuf, 48, 48, 100, 48 * 100, &pv) == -FI_EAGAIN,
	      "contiguous both ways");
}

/* ---- the caches against counting stand-ins ---- */

static int opens, closes, fail_next_open, exports_made;
static uint64_t next_export_id = 7;

static int c_open(void *arg, int device, const uint8_t h[DDTX_HMEM_IPC_HANDLE_BYTES], void **base,
		  size_t *size)
{
	(void)arg;
	(void)device;
	if (fail_next_open) {
		fail_next_open = 0;
		return -FI_EIO;
	}
	opens++;
	*base = (void *)(uintptr_t)(0x10000000ull * (1 + h[0]));
	*size = h[1] ? h[1] : 0x10000; /* handle byte 1: a small allocation */
	return 0;
}

static int c_close(void *arg, int device, void *base)
{
	(void)arg;
	(void)device;
	(void)base;
	closes++;
	return 0;
}

static int c_export(void *arg, const void *addr, struct ddtx_hmem_ipc *out)
{
	(void)arg;
	memset(out, 0, sizeof(*out));
	out->base = (uintptr_t)addr & ~(uint64_t)0xffff;
	out->size = 0x10000;
	out->buffer_id = next_export_id;
	out->handle[0] = (uint8_t)exports_made++;
	return 0;
}

static struct ddtx_hmem_ipc remote(uint8_t h, uint64_t base, uint64_t size, uint64_t id)
{
	struct ddtx_hmem_ipc r = { .base = base, .size = size, .buffer_id = id };
	r.handle[0] = h;
	return r;
}

static int ep_a, ep_b; /* two endpoints (owners of mappings) */

static void test_cache(void)
{
	const struct ddtx_ipc_ops ops = { c_open, c_close, c_export, NULL };
	struct ddtx_ipc_cache *c;
	struct ddtx_ipc_cache_stats st;
	void *l1, *l2;

	CHECK(ddtx_ipc_cache_open(&ops, 0, 3, &c) == 0, "open");
	struct ddtx_hmem_ipc a = remote(1, 0x100000, 0x10000, 11);
	CHECK(ddtx_ipc_cache_map(c, &ep_a, 5, &a, &l1) == 0 && opens == 1, "first map opens");
	CHECK(ddtx_ipc_cache_map(c, &ep_a, 5, &a, &l2) == 0 && opens == 1 && l2 == l1, "hit");
	/* the same allocation of another peer: its own mapping */
	CHECK(ddtx_ipc_cache_map(c, &ep_a, 6, &a, &l2) == 0 && opens == 2, "per peer");
	/* peer 5 freed and re-allocated the range: new id -> the old mapping is closed */
	struct ddtx_hmem_ipc a2 = remote(2, 0x100000, 0x8000, 12);
	CHECK(ddtx_ipc_cache_map(c, &ep_a, 5, &a2, &l2) == 0 && opens == 3 && closes == 1, "stale id");
	/* same id but other handle bytes (forged or confused): not trusted either */
	struct ddtx_hmem_ipc a3 = remote(3, 0x100000, 0x8000, 12);
	CHECK(ddtx_ipc_cache_map(c, &ep_a, 5, &a3, &l2) == 0 && opens == 4 && closes == 2, "stale handle");
	ddtx_ipc_cache_stats(c, &st);
	CHECK(st.hits == 1 && st.opens == 4 && st.stale == 2 && st.mapped == 2, "stats");
	/* a failed open is not cached: the next call tries again */
	struct ddtx_hmem_ipc b = remote(4, 0x200000, 0x1000, 20);
	fail_next_open = 1;
	CHECK(ddtx_ipc_cache_map(c, &ep_a, 5, &b, &l1) == -FI_EIO, "failed open");
	CHECK(ddtx_ipc_cache_map(c, &ep_a, 5, &b, &l1) == 0 && opens == 5, "retried");
	/* bound 3: a fourth mapping evicts the least recently used (peer 6's) */
	struct ddtx_hmem_ipc d = remote(5, 0x300000, 0x1000, 30);
	CHECK(ddtx_ipc_cache_map(c, &ep_a, 5, &d, &l1) == 0 && closes == 3, "evicted");
	ddtx_ipc_cache_stats(c, &st);
	CHECK(st.evictions == 1 && st.mapped == 3, "eviction stats");
	CHECK(ddtx_ipc_cache_map(c, &ep_a, 6, &a, &l1) == 0 && opens == 7 && closes == 4,
	      "evicted one reopened (evicting the next)");
	/* bad ranges */
	struct ddtx_hmem_ipc bad = remote(6, UINT64_MAX - 10, 100, 1);
	CHECK(ddtx_ipc_cache_map(c, &ep_a, 5, &bad, &l1) == -FI_EINVAL, "wrapping range");
	bad.size = 0;
	CHECK(ddtx_ipc_cache_map(c, &ep_a, 5, &bad, &l1) == -FI_EINVAL, "empty range");
	/* a size beyond what the handle maps: refused, the mapping closed again */
	struct ddtx_hmem_ipc big = remote(7, 0x700000, 0x10000, 40);
	big.handle[1] = 16;
	int o0 = opens, c0 = closes;
	CHECK(ddtx_ipc_cache_map(c, &ep_a, 5, &big, &l1) == -FI_EINVAL && opens == o0 + 1 &&
	      closes == c0 + 1, "claimed size past the mapping");
	/* the same peer handle of another endpoint: its own mapping, dropped with that endpoint */
	int o1 = opens, c1 = closes;
	CHECK(ddtx_ipc_cache_map(c, &ep_b, 5, &d, &l2) == 0 && opens == o1 + 1 &&
	      closes == c1 + 1, "another owner's peer 5: own mapping (evicting one)");
	ddtx_ipc_cache_drop_owner(c, &ep_b);
	CHECK(closes == c1 + 2, "owner dropped");
	CHECK(ddtx_ipc_cache_map(c, &ep_a, 6, &a, &l1) == 0, "peer 6 mapped again");
	/* a peer goes: its mappings close */
	int before = closes;
	ddtx_ipc_cache_drop_peer(c, &ep_a, 6);
	CHECK(closes == before + 1, "drop peer closed %d", closes - before);

	/* exports: once per allocation and buffer id */
	struct ddtx_hmem_ipc e1, e2;
	CHECK(ddtx_ipc_cache_export(c, (void *)0x500010, 7, &e1) == 0 && exports_made == 1, "export");
	CHECK(ddtx_ipc_cache_export(c, (void *)0x50ff00, 7, &e2) == 0 && exports_made == 1 &&
	      !memcmp(&e1, &e2, sizeof(e1)), "same allocation: cached");
	next_export_id = 8; /* freed and allocated again at the same base */
	CHECK(ddtx_ipc_cache_export(c, (void *)0x500010, 8, &e2) == 0 && exports_made == 2 &&
	      e2.buffer_id == 8 && e2.handle[0] != e1.handle[0], "new id: exported again");
	CHECK(ddtx_ipc_cache_export(c, (void *)0x500010, 9, &e2) == -FI_EAGAIN,
	      "id changed under the caller");
	ddtx_ipc_cache_stats(c, &st);
	CHECK(st.exports == 2 && st.export_hits == 1, "export stats");
	before = closes;
	ddtx_ipc_cache_close(c);
	CHECK(closes == before + 1, "close closed %d of 1", closes - before);
	printf("cache: %d opens, %d closes\n", opens, closes);
}

/* ---- the offer as peer_check sees it ---- */

/* Two allocations; a vector of two segments in the first, a list of one in the second. */
struct offer_msg {
	struct ddtx_ipc_offer o;
	struct ddtx_ipc_alloc a[2];
	struct ddtx_ipc_run v;
	struct ddtx_ipc_run l;
	uint64_t l_off[1];
};

static void offer_ok(struct ddtx_hdr_rts *rts, struct offer_msg *m)
{
	memset(m, 0, sizeof(*m));
	memset(rts, 0, sizeof(*rts));
	rts->total_len = 300;
	m->o = (struct ddtx_ipc_offer){ 2, 2 };
	m->a[0] = (struct ddtx_ipc_alloc){ .base = 0x10000, .size = 4096, .buffer_id = 1 };
	m->a[1] = (struct ddtx_ipc_alloc){ .base = 0x90000, .size = 100, .buffer_id = 2 };
	m->v = (struct ddtx_ipc_run){ 0, 0, 2, 100, 0, 3996 };
	m->l = (struct ddtx_ipc_run){ 1, DDTX_IPC_RUN_LIST, 1, 100, 0, 0 };
	m->l_off[0] = 0;
}

static void test_offer(void)
{
	struct ddtx_hdr_rts rts;
	struct offer_msg m;
	const char *bad;

	offer_ok(&rts, &m);
	CHECK((bad = ddtx_check_ipc_offer(&rts, &m, sizeof(m))) == NULL, "valid: %s", bad);
	size_t len;
#define BAD(want, ...)                                                                      \
	do {                                                                                \
		offer_ok(&rts, &m);                                                         \
		len = sizeof(m);                                                            \
		__VA_ARGS__;                                                                \
		bad = ddtx_check_ipc_offer(&rts, &m, len);                                  \
		CHECK(bad && !strcmp(bad, want), "%s: got %s", #__VA_ARGS__, bad ? bad : "ok"); \
	} while (0)
	BAD("ipc offer length", len = 4);
	BAD("ipc nalloc", m.o.nalloc = 0);
	BAD("ipc nalloc", m.o.nalloc = DDTX_IPC_MAX_ALLOCS + 1);
	BAD("ipc nalloc", m.o.nalloc = 2, len = sizeof(m.o) + 100);
	BAD("ipc nrun", m.o.nrun = 0);
	BAD("ipc nrun", m.o.nrun = 3);
	BAD("ipc nrun", len = sizeof(m) - 1);
	BAD("ipc nrun", m.o.nrun = UINT32_MAX);
	BAD("ipc offer length", m.o.nrun = 1);
	BAD("ipc allocation", m.a[1].size = 0);
	BAD("ipc allocation", m.a[1].base = UINT64_MAX - 10);
	BAD("ipc run", m.l.alloc = 2);
	BAD("ipc run", m.v.len = 0);
	BAD("ipc run", m.v.count = 0);
	BAD("ipc run", m.v.flags = 2);
	BAD("ipc run", m.l.offset = 1);
	BAD("ipc run", m.l.stride = 8);
	BAD("ipc segment", m.v.stride = 3997);
	BAD("ipc segment", m.v.offset = 1);
	BAD("ipc segment", m.v.offset = UINT64_MAX);
	BAD("ipc segment", m.v.stride = UINT64_MAX / 2);
	BAD("ipc segment", m.v.len = UINT64_MAX);
	BAD("ipc segment", m.l_off[0] = 1);
	BAD("ipc segment", m.l_off[0] = UINT64_MAX);
	BAD("ipc segment", m.l.len = 101, m.l_off[0] = 0, rts.total_len = 301);
	BAD("ipc segments", m.v.count = DDTX_IPC_MAX_SEGS, m.v.stride = 0);
	BAD("ipc segment lengths", rts.total_len = 299);
	BAD("ipc segment lengths", rts.total_len = 301);
	/* a vector of stride 0 (one block sent again and again) is a valid one */
	offer_ok(&rts, &m);
	m.v = (struct ddtx_ipc_run){ 0, 0, 3, 100, 3996, 0 };
	rts.total_len = 400;
	CHECK((bad = ddtx_check_ipc_offer(&rts, &m, sizeof(m))) == NULL, "stride 0: %s", bad);
#undef BAD
	printf("offer: checks passed\n");
}

/* ---- runs: the sender's encoding, read back by the receiver's walk ---- */

/* A segment of the sender's: allocation, offset in it, length (0: an empty iov entry). */
struct seg {
	uint32_t alloc;
	uint64_t offset, len;
};

static void runs_round_trip(const struct seg *seg, size_t n, size_t room, uint32_t want_runs,
			    const char *what)
{
	static uint8_t buf[1 << 20], alloc_of[DDTX_IPC_MAX_SEGS + 1];
	static struct iovec iov[DDTX_IPC_MAX_SEGS + 1], got[DDTX_IPC_MAX_SEGS];
	struct ddtx_ipc_alloc alloc[2] = { { .size = 1ull << 40 }, { .size = 1ull << 40 } };
	const uint64_t base[2] = { 0x100000000ull, 0x900000000ull }; /* the sender's */
	void *local[2] = { (void *)(uintptr_t)0x200000000ull, (void *)(uintptr_t)0xa00000000ull };
	uint32_t nrun;
	size_t nseg, nonempty = 0;
	uint64_t bytes, total = 0;

	for (size_t i = 0; i < n; i++) {
		iov[i] = (struct iovec){ (void *)(uintptr_t)(base[seg[i].alloc] + seg[i].offset),
					 seg[i].len };
		alloc_of[i] = (uint8_t)seg[i].alloc;
	}
	size_t used = ddtx_ipc_runs_encode(iov, n, alloc_of, base, buf, room, &nrun);
	CHECK(used && used <= room, "%s: encoded in %zu of %zu bytes", what, used, room);
	if (!used)
		return;
	CHECK(!want_runs || nrun == want_runs, "%s: %u runs, want %u", what, nrun, want_runs);
	const char *bad = ddtx_ipc_runs_walk(buf, used, nrun, alloc, 2, local, got, &nseg, &bytes);
	for (size_t i = 0; !bad && i < n; i++) {
		if (!seg[i].len)
			continue;
		total += seg[i].len;
		uint8_t *want = (uint8_t *)local[seg[i].alloc] + seg[i].offset;
		CHECK(nonempty < nseg && got[nonempty].iov_base == want &&
		      got[nonempty].iov_len == seg[i].len, "%s: segment %zu moved", what, i);
		nonempty++;
	}
	CHECK(!bad && nseg == nonempty, "%s: walk %s, %zu segments of %zu", what,
	      bad ? bad : "ok", nseg, nonempty);
	CHECK(bad || bytes == total, "%s: %llu bytes, want %llu", what, (unsigned long long)bytes,
	      (unsigned long long)total);
}

static void test_runs(void)
{
	static struct seg seg[DDTX_IPC_MAX_SEGS + 1];
	static struct iovec iov[DDTX_IPC_MAX_SEGS + 1];
	const uint64_t base[1] = { 0x100000000ull };
	uint8_t buf[256];
	uint32_t nrun;

	/* NAS_MG x face: 64 rows of 64 x 8 B, 1040 B apart in a row, rows 68640 apart */
	for (size_t r = 0, n = 0; r < 64; r++)
		for (size_t b = 0; b < 64; b++, n++)
			seg[n] = (struct seg){ 0, r * 68640 + b * 1040, 8 };
	runs_round_trip(seg, 4096, 64 * sizeof(struct ddtx_ipc_run), 64, "NAS_MG x");
	/* OSU vector: one run */
	for (size_t i = 0; i < 8192; i++)
		seg[i] = (struct seg){ 0, i * 128, 64 };
	runs_round_trip(seg, 8192, sizeof(struct ddtx_ipc_run), 1, "OSU vector");
	/* random 4 B blocks (SPECFEM3D_oc): one list, 8 B a block */
	for (size_t i = 0; i < 3225; i++)
		seg[i] = (struct seg){ 0, (next() % 88881) * 4, 4 };
	runs_round_trip(seg, 3225, sizeof(struct ddtx_ipc_run) + 3225 * 8, 0, "random 4 B");
	/* one segment; two (a list of two); backwards; both allocations; lengths changing */
	seg[0] = (struct seg){ 1, 77, 5 };
	runs_round_trip(seg, 1, 40, 1, "one");
	seg[1] = (struct seg){ 1, 99, 5 };
	runs_round_trip(seg, 2, 48, 1, "two");
	for (size_t i = 0; i < 10; i++)
		seg[i] = (struct seg){ (uint32_t)(i & 1), 1000 - i * 50, 10 + i % 3 };
	runs_round_trip(seg, 10, 4096, 10, "backwards, alternating");
	/* random lists of any shape, vectors among them */
	for (int t = 0; t < 200; t++) {
		size_t n = 1 + next() % 3000;
		for (size_t i = 0; i < n;) {
			size_t m = 1 + next() % 8, len = 1 + next() % 64, stride = next() % 200;
			uint64_t at = next() % 100000;
			uint32_t alloc = next() % 2;
			for (size_t k = 0; k < m && i < n; k++, i++)
				seg[i] = (struct seg){ alloc, at + k * stride,
						       next() % 16 ? len : 0 };
		}
		runs_round_trip(seg, n, sizeof(buf) > n * 40 ? sizeof(buf) : n * 40, 0, "random");
	}
	/* what does not fit: 0 */
	for (size_t i = 0; i < DDTX_IPC_MAX_SEGS + 1; i++)
		iov[i] = (struct iovec){ (void *)(uintptr_t)(base[0] + i * 7919 % 1000), 8 };
	CHECK(!ddtx_ipc_runs_encode(iov, 100, NULL, base, buf, sizeof(buf), &nrun),
	      "100 blocks in 256 B");
	static uint8_t big[1 << 20];
	CHECK(!ddtx_ipc_runs_encode(iov, DDTX_IPC_MAX_SEGS + 1, NULL, base, big, sizeof(big),
				    &nrun), "over DDTX_IPC_MAX_SEGS");
	/* one allocation, no allocation list: a vector of 8192 as one run */
	for (size_t i = 0; i < 8192; i++)
		iov[i] = (struct iovec){ (void *)(uintptr_t)(base[0] + 64 + i * 128), 64 };
	CHECK(ddtx_ipc_runs_encode(iov, 8192, NULL, base, buf, sizeof(buf), &nrun) ==
		      sizeof(struct ddtx_ipc_run) && nrun == 1, "one allocation: %u runs", nrun);
	/* a vector known as one (the send's scan): the very bytes of the list's encoding, and
	 * none where the list's encoding is no single run */
	uint8_t from_vec[sizeof(buf)];
	uint32_t nrun_vec;
	CHECK(ddtx_ipc_runs_encode_vector(0, 64, 64, 8192, 128, from_vec, sizeof(from_vec),
					  &nrun_vec) == sizeof(struct ddtx_ipc_run) &&
		      nrun_vec == 1 && !memcmp(from_vec, buf, sizeof(struct ddtx_ipc_run)),
	      "vector of 8192: not the list's encoding");
	CHECK(!ddtx_ipc_runs_encode_vector(0, 64, 64, 8192, 32, from_vec, sizeof(from_vec),
					   &nrun_vec) && !nrun_vec, "overlapping blocks");
	CHECK(!ddtx_ipc_runs_encode_vector(0, 64, 64, 2, 128, from_vec, sizeof(from_vec),
					   &nrun_vec), "two blocks");
	CHECK(!ddtx_ipc_runs_encode_vector(0, 64, 64, DDTX_IPC_MAX_SEGS + 1, 128, from_vec,
					   sizeof(from_vec), &nrun_vec), "over DDTX_IPC_MAX_SEGS");
	CHECK(!ddtx_ipc_runs_encode_vector(0, 64, 64, 8192, 128, from_vec,
					   sizeof(struct ddtx_ipc_run) - 1, &nrun_vec), "no room");
	printf("runs: round trips passed\n");
}

/* ---- two processes through the driver ---- */

typedef int cu_result;
typedef unsigned long long cu_ptr;
static struct {
	cu_result (*alloc)(cu_ptr *, size_t);
	cu_result (*free)(cu_ptr);
	cu_result (*htod)(cu_ptr, const void *, size_t);
	cu_result (*dtoh)(void *, cu_ptr, size_t);
} cu;

static bool cu_syms(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return false;
	*(void **)&cu.alloc = dlsym(lib, "cuMemAlloc_v2");
	*(void **)&cu.free = dlsym(lib, "cuMemFree_v2");
	*(void **)&cu.htod = dlsym(lib, "cuMemcpyHtoD_v2");
	*(void **)&cu.dtoh = dlsym(lib, "cuMemcpyDtoH_v2");
	return cu.alloc && cu.free && cu.htod && cu.dtoh;
}

enum { SPAN = 1 << 20 };

/* The owner: allocate, fill, export, wait; then free and say so. */
static int owner(int to_peer, int from_peer)
{
	static uint8_t img[SPAN];
	void *dev;
	struct ddtx_hmem_ipc h;
	char go;

	if (ddtx_hmem_dev_alloc(0, SPAN, &dev)) {
		fprintf(stderr, "owner: cuMemAlloc failed\n");
		return 1;
	}
	for (size_t i = 0; i < SPAN; i++)
		img[i] = (uint8_t)(i * 131 + 7);
	CHECK(ddtx_hmem_copy(0, dev, img, SPAN, DDTX_HMEM_TO_DEVICE) == 0, "fill");
	/* export an address inside the allocation: the handle names the whole allocation */
	CHECK(ddtx_hmem_ipc_export((uint8_t *)dev + 4096, &h) == 0, "export");
	CHECK(h.base == (uintptr_t)dev && h.size == SPAN && h.device == 0, "exported range");
	CHECK(write(to_peer, &h, sizeof(h)) == sizeof(h), "send handle");
	CHECK(read(from_peer, &go, 1) == 1, "wait for the copy");
	ddtx_hmem_dev_free(0, dev);
	CHECK(write(to_peer, "f", 1) == 1, "freed");
	CHECK(read(from_peer, &go, 1) == 1, "wait for the end");
	return failures ? 1 : 0;
}

static int importer(int to_peer, int from_peer)
{
	static uint8_t img[SPAN], got[SPAN];
	struct ddtx_hmem_ipc h;
	struct ddtx_ipc_cache *c;
	struct ddtx_ipc_cache_stats st;
	void *mine, *theirs;
	char go;

	for (size_t i = 0; i < SPAN; i++)
		img[i] = (uint8_t)(i * 131 + 7);
	CHECK(read(from_peer, &h, sizeof(h)) == sizeof(h), "handle");
	CHECK(ddtx_hmem_dev_alloc(0, SPAN, &mine) == 0, "alloc");
	CHECK(ddtx_hmem_copy(0, mine, got, SPAN, DDTX_HMEM_TO_DEVICE) == 0, "zero");
	CHECK(ddtx_ipc_cache_open(&ddtx_ipc_hmem_ops, 0, 8, &c) == 0, "cache");
	CHECK(ddtx_ipc_cache_map(c, &ep_a, 1, &h, &theirs) == 0, "map the peer's allocation");
	/* their vector of 512 B blocks at 1 KiB -> our vector at 2 KiB (2-D), then an irregular
	 * list -> our contiguous tail (batch) */
	static struct iovec sv[512], dv[512], vv[256];
	for (size_t i = 0; i < 256; i++) {
		vv[i] = (struct iovec){ (uint8_t *)theirs + 1024 * i, 512 };
		dv[i] = (struct iovec){ (uint8_t *)mine + 2048 * i, 512 };
	}
	struct ddtx_ipc_plan p;
	CHECK(ddtx_ipc_plan_build(dv, 256, vv, 256, 256 * 512, &p) == 0 && p.two_d, "2-D plan");
	int r2;
	CHECK(ddtx_ipc_plan_run(0, &p, DDTX_HMEM_COPY_2D, &r2) == DDTX_HMEM_COPY_2D && r2 == 0,
	      "2-D copy");
	ddtx_ipc_plan_free(&p);
	size_t n = 0, total = 0;
	for (size_t off = 600000; n < 300; n++) {
		size_t len = 1 + (n * 37) % 700;
		sv[n] = (struct iovec){ (uint8_t *)theirs + off, len };
		off += len + (n * 13) % 50;
		total += len;
	}
	struct iovec tail = { (uint8_t *)mine + 600000, total };
	CHECK(ddtx_ipc_plan_build(&tail, 1, sv, n, total, &p) == 0 && !p.two_d, "batch plan");
	CHECK(ddtx_ipc_plan_run(0, &p, DDTX_HMEM_COPY_SEGMENTS, &r2) == DDTX_HMEM_COPY_SEGMENTS &&
	      r2 == 0, "batched copies");
	ddtx_ipc_plan_free(&p);
	CHECK(ddtx_hmem_copy(0, got, mine, SPAN, DDTX_HMEM_TO_HOST) == 0, "read back");
	static uint8_t want[SPAN];
	memset(want, 0, SPAN);
	for (size_t i = 0; i < 256; i++)
		memcpy(want + 2048 * i, img + 1024 * i, 512);
	uint8_t *q = want + 600000;
	for (size_t i = 0; i < n; i++) {
		memcpy(q, img + ((uint8_t *)sv[i].iov_base - (uint8_t *)theirs), sv[i].iov_len);
		q += sv[i].iov_len;
	}
	size_t bad = 0;
	for (size_t i = 0; i < SPAN; i++)
		bad += got[i] != want[i];
	CHECK(bad == 0, "%zu of %d bytes wrong", bad, SPAN);
	/* The same two plans by the device copy kernel, where the kernels load (a real GPU). */
	if (ddtx_gpu_kernels_ready(0)) {
		static uint8_t zero[SPAN];
		CHECK(ddtx_hmem_copy(0, mine, zero, SPAN, DDTX_HMEM_TO_DEVICE) == 0, "zero again");
		CHECK(ddtx_ipc_plan_build(dv, 256, vv, 256, 256 * 512, &p) == 0 &&
		      ddtx_ipc_plan_run(0, &p, DDTX_HMEM_COPY_KERNEL, &r2) == DDTX_HMEM_COPY_KERNEL &&
		      r2 == 0, "vector by the copy kernel");
		ddtx_ipc_plan_free(&p);
		CHECK(ddtx_ipc_plan_build(&tail, 1, sv, n, total, &p) == 0 &&
		      ddtx_ipc_plan_run(0, &p, DDTX_HMEM_COPY_AUTO, &r2) == DDTX_HMEM_COPY_KERNEL &&
		      r2 == 0, "irregular list by the copy kernel");
		ddtx_ipc_plan_free(&p);
		CHECK(ddtx_hmem_copy(0, got, mine, SPAN, DDTX_HMEM_TO_HOST) == 0, "read back");
		bad = 0;
		for (size_t i = 0; i < SPAN; i++)
			bad += got[i] != want[i];
		CHECK(bad == 0, "copy kernel: %zu of %d bytes wrong", bad, SPAN);
		printf("  the copy kernel: the vector and the irregular list, every byte right\n");
		/* What each way costs here, the owner idle (no other process using the GPU):
		 * printed for the record, nothing asserted. */
		struct iovec one_s = { theirs, 256 * 512 }, one_d = { mine, 256 * 512 };
		struct { const char *name; const struct iovec *d, *s; size_t nd, ns;
			 enum ddtx_hmem_copy way; } ways[] = {
			{ "vector 256 x 512 B, copy kernel", dv, vv, 256, 256, DDTX_HMEM_COPY_KERNEL },
			{ "vector 256 x 512 B, 2-D copy", dv, vv, 256, 256, DDTX_HMEM_COPY_2D },
			{ "contiguous 128 KiB, one copy", &one_d, &one_s, 1, 1, DDTX_HMEM_COPY_SEGMENTS },
		};
		for (size_t w = 0; w < sizeof(ways) / sizeof(ways[0]); w++) {
			struct timespec t0, t1;
			CHECK(ddtx_ipc_plan_build(ways[w].d, ways[w].nd, ways[w].s, ways[w].ns,
						  256 * 512, &p) == 0, "plan");
			ddtx_ipc_plan_run(0, &p, ways[w].way, &r2);
			clock_gettime(CLOCK_MONOTONIC, &t0);
			for (int k = 0; k < 50; k++)
				ddtx_ipc_plan_run(0, &p, ways[w].way, &r2);
			clock_gettime(CLOCK_MONOTONIC, &t1);
			ddtx_ipc_plan_free(&p);
			printf("  %-36s %8.1f us\n", ways[w].name,
			       ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 50e3);
		}
	}
	/* mapped again: a hit, no second open */
	void *again;
	CHECK(ddtx_ipc_cache_map(c, &ep_a, 1, &h, &again) == 0 && again == theirs, "hit");
	ddtx_ipc_cache_stats(c, &st);
	CHECK(st.opens == 1 && st.hits == 1, "one open");
	/* a forged handle */
	struct ddtx_hmem_ipc forged = h;
	forged.handle[9] ^= 0x5a;
	forged.buffer_id++;
	/* The driver either refuses it or (a byte it does not check) opens the same allocation:
	 * what a peer can reach with a forged handle is memory it exported itself. */
	int r = ddtx_ipc_cache_map(c, &ep_a, 2, &forged, &again);
	if (r == 0) {
		static uint8_t through[4096];
		CHECK(ddtx_hmem_copy(0, through, again, sizeof(through), DDTX_HMEM_TO_HOST) == 0 &&
		      !memcmp(through, img, sizeof(through)),
		      "a forged handle opened memory other than the owner's allocation");
		printf("  a handle with byte 9 changed opened the owner's allocation (the driver does "
		       "not check that byte)\n");
	} else {
		CHECK(r == -FI_EIO, "forged handle: %s", fi_strerror(-r));
	}
	memset(forged.handle, 0xee, sizeof(forged.handle));
	size_t sz;
	CHECK(ddtx_hmem_ipc_open(0, forged.handle, &again, &sz) == -FI_EIO, "garbage handle opened");
	/* the right handle claiming a larger allocation */
	struct ddtx_hmem_ipc bigger = h;
	bigger.size = 2 * SPAN;
	bigger.buffer_id++;
	CHECK(ddtx_ipc_cache_map(c, &ep_a, 3, &bigger, &again) == -FI_EINVAL, "size past the mapping");
	/* the owner frees: its handle is stale */
	CHECK(write(to_peer, "c", 1) == 1, "copied");
	CHECK(read(from_peer, &go, 1) == 1, "owner freed");
	/* our mappings closed first: an open mapping keeps the allocation alive in the driver */
	ddtx_ipc_cache_close(c);
	r = ddtx_hmem_ipc_open(0, h.handle, &again, &sz);
	CHECK(r == -FI_EIO, "stale handle: %s", r ? fi_strerror(-r) : "opened");
	ddtx_hmem_dev_free(0, mine);
	CHECK(write(to_peer, "e", 1) == 1, "end");
	return failures ? 1 : 0;
}

static int test_process(void)
{
	int a[2], b[2];

	/* Fork before the driver starts (CUDA does not survive fork); probe in a child. */
	pid_t probe = fork();
	if (probe == 0)
		_exit(cu_syms() && ddtx_hmem_cuda_available() ? 0 : 77);
	int status = 0;
	waitpid(probe, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		printf("SKIP: no CUDA driver with a device\n");
		return 77;
	}
	if (pipe(a) || pipe(b))
		return 1;
	pid_t pid = fork();
	if (pid == 0)
		_exit(cu_syms() ? owner(a[1], b[0]) : 1);
	int ret = cu_syms() ? importer(b[1], a[0]) : 1;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "owner process failed");
	return ret || failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *which = argc > 1 ? argv[1] : "plan";

	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(which, "plan"))
		test_plan();
	else if (!strcmp(which, "cache"))
		test_cache();
	else if (!strcmp(which, "offer"))
		test_offer();
	else if (!strcmp(which, "runs"))
		test_runs();
	else if (!strcmp(which, "process")) {
		int ret = test_process();
		if (ret)
			return ret;
	}
	else
		return 2;
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("ipc %s: passed\n", which);
	return 0;
}
