/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * engine: the DDT engine seen through the public API (issue 3), real processes, every byte
 * checked (gaps included):
 *
 *   reuse_after_free_*   free-then-reuse of an address: a cached (zero-copy) buffer is unmapped,
 *                        new memory with new contents is mapped at the same address, and the
 *                        next message carries the new contents (sender side and receiver side)
 *   pack_to_zcopy        a fresh large-block layout under auto (a fixed crossover,
 *                        FI_DDTX_THRESHOLD) goes PACK while the registration thread works
 *                        (zcopy_not_ready), then SGL/UMR (regthread_layouts)
 *   umr_caches           repeated sends of one layout under umr: local and remote mkey caches
 *                        hit after the first (the CTS omits the key list)
 *   umr_pool_pressure    more windows in flight than the mkey pool's stock: all complete, the
 *                        pool is refilled
 *   layout_handle_bases_* one handle cycled over more buffers than it caches, both directions
 *   layout_handle_*      fi_ddtx_ops layout_create / layout_create_strided on either side,
 *                        counted as layout-cache hits
 *   layout_loops_*       the loop constructors (subarray -> indexed-block, -> nested vector),
 *                        packed by compiled kernels; invalid descriptions refused
 *   threads              FI_THREAD_SAFE: 4 threads send different layouts on one endpoint while
 *                        4 threads receive them (run under ThreadSanitizer by the lead)
 */
#include "fx.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define TMO 60000
#define CSEED 0xCA11

/* ---- helpers --------------------------------------------------------------------------- */

/* Statistics of both ranks, published through the shared test area. */
static struct fi_ddtx_stats *pub(int rank)
{
	return (struct fi_ddtx_stats *)(fx_shmem + (size_t)rank * 4096);
}

/* Both ranks snapshot their statistics; out[r] holds rank r's. */
static void stats_both(struct ft_ctx *ctx, struct fx *fx, struct fi_ddtx_stats out[2])
{
	fx_pbarrier(ctx, fx);
	fx_stats(fx, pub(ctx->rank));
	fx_pbarrier(ctx, fx);
	out[0] = *pub(0);
	out[1] = *pub(1);
	fx_pbarrier(ctx, fx);
}

#define D(a, b, f) ((unsigned long long)((b).f - (a).f))

static void *map_at(void *want, size_t len)
{
	void *p = mmap(want, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | (want ? MAP_FIXED_NOREPLACE : 0), -1, 0);
	FT_CHECK(p != MAP_FAILED, "mmap(%p, %zu): %s", want, len, strerror(errno));
	FT_CHECK(!want || p == want, "mmap gave %p instead of %p", p, want);
	return p;
}

/* A strided layout: count blocks of block bytes, stride apart, at base. */
struct slay {
	uint8_t *base;
	size_t block, count, stride, span;
	struct iovec *iov;
};

static void slay_init(struct slay *l, uint8_t *base, size_t block, size_t count, size_t stride)
{
	l->block = block;
	l->count = count;
	l->stride = stride;
	l->span = (count - 1) * stride + block;
	l->iov = calloc(count, sizeof(*l->iov));
	FT_CHECK(l->iov, "calloc");
	l->base = base;
	for (size_t i = 0; i < count; i++) {
		l->iov[i].iov_base = base + i * stride;
		l->iov[i].iov_len = block;
	}
}

static void slay_data(const struct slay *l, uint64_t seed)
{
	for (size_t i = 0; i < l->count; i++)
		fx_fill(l->base + i * l->stride, l->block, seed, i * l->block);
}

static void slay_canary(const struct slay *l)
{
	fx_fill(l->base, l->span, CSEED, 0);
}

static void slay_check(const struct slay *l, uint64_t seed, const char *what)
{
	for (size_t i = 0; i < l->count; i++) {
		size_t off = i * l->stride;
		size_t bad = fx_find_bad(l->base + off, l->block, seed, i * l->block);
		FT_CHECK(bad == (size_t)-1, "%s: block %zu of %zu, byte %zu: 0x%02x, expected 0x%02x",
			 what, i, l->count, bad, l->base[off + bad],
			 ft_pattern(seed, i * l->block + bad));
		if (i + 1 < l->count) {
			bad = fx_find_bad(l->base + off + l->block, l->stride - l->block, CSEED,
					  off + l->block);
			FT_CHECK(bad == (size_t)-1, "%s: gap after block %zu overwritten at byte %zu",
				 what, i, bad);
		}
	}
}

static void tsend_iov(struct fx *fx, const struct iovec *iov, size_t n, uint64_t tag, void *ctx)
{
	struct fi_msg_tagged m = {.msg_iov = iov, .iov_count = n, .addr = fx->peers[1 - fx->rank],
				  .tag = tag, .context = ctx};
	FX_OK(fx, fi_tsendmsg(fx->ep, &m, FI_COMPLETION));
}

static void trecv_iov(struct fx *fx, const struct iovec *iov, size_t n, uint64_t tag, void *ctx)
{
	struct fi_msg_tagged m = {.msg_iov = iov, .iov_count = n, .addr = fx->peers[1 - fx->rank],
				  .tag = tag, .ignore = 0, .context = ctx};
	FX_OK(fx, fi_trecvmsg(fx->ep, &m, FI_COMPLETION));
}

static int zc_ops(const struct fi_ddtx_stats *s)
{
	return (int)(s->ops[FI_DDTX_SCHEME_SGL] + s->ops[FI_DDTX_SCHEME_UMR]);
}

static void print_stats(const char *when, const struct fi_ddtx_stats st[2])
{
	if (!fx_sh || atomic_fetch_add(&fx_sh->flag[63], 1) % 2) /* one of the two ranks prints */
		return;
	for (int r = 0; r < 2; r++)
		printf("  %s rank %d: ops pack %llu sgl %llu umr %llu; layout hit/miss/inval %llu/%llu/"
		       "%llu; reg hit/miss/inval %llu/%llu/%llu; mkey hit/miss %llu/%llu; rmkey "
		       "hit/miss %llu/%llu; pool level/cap/refills %llu/%llu/%llu; regthread %llu; "
		       "zcopy_not_ready %llu\n",
		       when, r, (unsigned long long)st[r].ops[FI_DDTX_SCHEME_PACK],
		       (unsigned long long)st[r].ops[FI_DDTX_SCHEME_SGL],
		       (unsigned long long)st[r].ops[FI_DDTX_SCHEME_UMR],
		       (unsigned long long)st[r].layout_hits, (unsigned long long)st[r].layout_misses,
		       (unsigned long long)st[r].layout_invalidations,
		       (unsigned long long)st[r].reg_hits, (unsigned long long)st[r].reg_misses,
		       (unsigned long long)st[r].reg_invalidations,
		       (unsigned long long)st[r].mkey_hits, (unsigned long long)st[r].mkey_misses,
		       (unsigned long long)st[r].rmkey_hits, (unsigned long long)st[r].rmkey_misses,
		       (unsigned long long)st[r].pool_level, (unsigned long long)st[r].pool_capacity,
		       (unsigned long long)st[r].pool_refills,
		       (unsigned long long)st[r].regthread_layouts,
		       (unsigned long long)st[r].zcopy_not_ready);
}

/* One message of layout s (rank 0) into layout r (rank 1); the receive is posted first. */
static void one_message(struct ft_ctx *ctx, struct fx *fx, struct slay *s, struct slay *r,
			uint64_t seed, uint64_t tag, const char *what)
{
	if (ctx->rank == 1) {
		slay_canary(r);
		trecv_iov(fx, r->iov, r->count, tag, r);
	}
	fx_pbarrier(ctx, fx);
	struct fx_comp c;
	if (ctx->rank == 0) {
		tsend_iov(fx, s->iov, s->count, tag, s);
		fx_wait(fx, 1, &c, TMO);
		FT_CHECK(c.op_context == s, "%s: send completion for %p", what, c.op_context);
	} else {
		fx_wait(fx, 1, &c, TMO);
		FT_CHECK(c.op_context == r, "%s: receive completion for %p", what, c.op_context);
		FT_CHECK(c.len == s->count * s->block, "%s: received %zu bytes", what, c.len);
		slay_check(r, seed, what);
	}
	fx_pbarrier(ctx, fx);
}

/* ---- free-then-reuse of an address ----------------------------------------------------- */

struct reuse_arg {
	const char *scheme;
	int side;          /* rank whose buffer is unmapped and replaced */
};

static int t_reuse_after_free(struct ft_ctx *ctx, void *varg)
{
	const struct reuse_arg *a = varg;
	struct fx fx;
	struct fx_opts o = {.scheme = a->scheme};
	fx_open(ctx, &o, &fx);
	const size_t block = 65536, count = 16, stride = 2 * 65536;
	const size_t span = (count - 1) * stride + block;
	uint8_t *buf = map_at(NULL, span);
	struct slay mine;
	slay_init(&mine, buf, block, count, stride);
	int forced = fx_scheme_of(a->scheme);
	struct fi_ddtx_stats s0[2], s1[2], s2[2];
	stats_both(ctx, &fx, s0);
	char what[160];

	/* The same buffer and layout three times: registered and cached on both sides (auto:
	 * until the layout has gone zero copy, which takes the registration thread's time). */
	int sent = 0;
	for (;; sent++) {
		if (ctx->rank == 0)
			slay_data(&mine, 100 + (uint64_t)sent);
		snprintf(what, sizeof(what), "%s, send %d before the remap", a->scheme, sent);
		one_message(ctx, &fx, &mine, &mine, 100 + (uint64_t)sent, (uint64_t)sent, what);
		stats_both(ctx, &fx, s1);
		if (sent >= 2 && (forced >= 0 || zc_ops(&s1[1]) > zc_ops(&s0[1])))
			break;
		FT_CHECK(sent < 200, "%s: 200 sends of one large-block layout, none zero copy",
			 a->scheme);
		if (forced < 0)
			usleep(2000);
	}
	sent++;
	if (forced >= 0)
		FT_CHECK(s1[1].ops[forced] - s0[1].ops[forced] == 3,
			 "%s: %llu of 3 messages went %s before the remap", a->scheme,
			 D(s0[1], s1[1], ops[forced]), a->scheme);

	/* Free it; map new memory with other contents at the very same address. */
	if (ctx->rank == a->side) {
		FT_CHECK(munmap(buf, span) == 0, "munmap: %s", strerror(errno));
		uint8_t *again = map_at(buf, span);
		FT_CHECK(again == buf, "remap at %p failed", (void *)buf);
		/* New contents: the old pattern must not come back from anywhere. */
		fx_fill(buf, span, 0xDEAD, 0);
	}
	for (int i = sent; i < sent + 2; i++) {
		if (ctx->rank == 0)
			slay_data(&mine, 200 + (uint64_t)i);
		snprintf(what, sizeof(what), "%s, send %d after rank %d remapped its buffer",
			 a->scheme, i, a->side);
		one_message(ctx, &fx, &mine, &mine, 200 + (uint64_t)i, (uint64_t)i, what);
	}
	stats_both(ctx, &fx, s2);
	print_stats("after", s2);
	if (forced >= 0)
		FT_CHECK(s2[1].ops[forced] - s1[1].ops[forced] == 2,
			 "%s: %llu of 2 messages went %s after the remap", a->scheme,
			 D(s1[1], s2[1], ops[forced]), a->scheme);
	/* The rank that unmapped must have dropped what it had cached for that memory. */
	unsigned long long inval = D(s1[a->side], s2[a->side], layout_invalidations) +
				   D(s1[a->side], s2[a->side], reg_invalidations);
	FT_CHECK(inval >= 1,
		 "rank %d unmapped a cached buffer but its layout_invalidations + reg_invalidations "
		 "did not grow",
		 a->side);
	free(mine.iov);
	munmap(buf, span);
	fx_close(&fx);
	return 0;
}

/* ---- PACK until the registration thread is done, then zero copy ------------------------ */

static int t_pack_to_zcopy(struct ft_ctx *ctx, void *varg)
{
	struct fx fx;
	struct fx_opts o = {.scheme = "auto"};
	/*
	 * The switch is checked, not the learned crossover: where PACK measures faster at these
	 * blocks (this 2-core host when both processes share one core's caches), auto rightly
	 * comes back to PACK after the switch (2026-12-01: 28 of 44 messages by zero copy, the
	 * test failing in 3-5 of 16 runs of dde5eba and later).  A fixed crossover keeps what is
	 * checked: PACK while the registration thread works, zero copy once it is done.
	 */
	setenv("FI_DDTX_THRESHOLD", "4096", 1);
	fx_open(ctx, &o, &fx);
	/* 64 KiB blocks: far above the threshold, zero copy once registered. */
	const size_t block = 65536, count = 16, stride = 2 * 65536;
	const size_t span = (count - 1) * stride + block;
	const int window = 4;
	/* Rank 0: one send buffer; rank 1: `window` receive buffers used in turn. */
	struct slay lay[4];
	int nlay = ctx->rank == 0 ? 1 : window;
	for (int i = 0; i < nlay; i++)
		slay_init(&lay[i], map_at(NULL, span), block, count, stride);
	struct fi_ddtx_stats st[2], prev[2], first[2];
	memset(first, 0, sizeof(first)); /* set in round 0, which always runs */
	stats_both(ctx, &fx, st);
	prev[0] = st[0];
	prev[1] = st[1];
	int round = 0, switched_at = -1;
	double deadline = ft_now() + 30;
	char what[160];
	for (;; round++) {
		uint64_t seed = 1000 + (uint64_t)round;
		/* `window` messages in flight, all of the same (sender) layout. */
		if (ctx->rank == 1)
			for (int w = 0; w < window; w++) {
				slay_canary(&lay[w]);
				trecv_iov(&fx, lay[w].iov, count, (uint64_t)round * window + w, &lay[w]);
			}
		else
			slay_data(&lay[0], seed);
		fx_pbarrier(ctx, &fx);
		if (ctx->rank == 0) {
			for (int w = 0; w < window; w++)
				tsend_iov(&fx, lay[0].iov, count, (uint64_t)round * window + w, &lay[w]);
			fx_wait(&fx, window, NULL, TMO);
		} else {
			fx_wait(&fx, window, NULL, TMO);
			for (int w = 0; w < window; w++) {
				snprintf(what, sizeof(what), "round %d message %d", round, w);
				slay_check(&lay[w], seed, what);
			}
		}
		struct fi_ddtx_stats now[2];
		stats_both(ctx, &fx, now);
		if (round == 0) {
			/* A fresh layout: nothing is registered yet, so PACK, counted as such. */
			first[0] = now[0];
			first[1] = now[1];
			print_stats("round 0", now);
			FT_CHECK(D(st[1], now[1], ops[FI_DDTX_SCHEME_PACK]) >= 1,
				 "the first messages of a fresh layout did not go PACK (receiver ops: "
				 "pack +%llu sgl +%llu umr +%llu)",
				 D(st[1], now[1], ops[FI_DDTX_SCHEME_PACK]),
				 D(st[1], now[1], ops[FI_DDTX_SCHEME_SGL]),
				 D(st[1], now[1], ops[FI_DDTX_SCHEME_UMR]));
			FT_CHECK(D(st[0], now[0], zcopy_not_ready) + D(st[1], now[1], zcopy_not_ready) >=
					 1,
				 "zcopy_not_ready did not grow for the PACK messages of a fresh "
				 "large-block layout");
		}
		int zc = zc_ops(&now[1]) - zc_ops(&prev[1]);
		prev[0] = now[0];
		prev[1] = now[1];
		if (switched_at < 0 && zc > 0) {
			switched_at = round;
			printf("  zero copy from round %d on (%d of %d messages of that round)\n", round,
			       zc, window);
		}
		int stop = switched_at >= 0 ? round - switched_at >= 10 : ft_now() > deadline;
		int all[2];
		ft_allgather(ctx, &stop, sizeof(stop), all);
		if (all[0])
			break;
		if (switched_at < 0)
			usleep(2000); /* give the registration thread the CPU now and then */
	}
	print_stats("end", prev);
	FT_CHECK(switched_at >= 0, "no message went zero copy within 30 s (%d rounds of %d)",
		 round + 1, window);
	/* "PACK first" is checked on round 0 above (a PACK op and zcopy_not_ready); on an idle
	 * machine the registration thread may finish inside round 0, so later messages of that
	 * same round may already go zero copy: switched_at == 0 is legitimate. */
	FT_CHECK(prev[0].regthread_layouts >= 1 && prev[1].regthread_layouts >= 1,
		 "regthread_layouts: rank 0 %llu, rank 1 %llu (both must have registered their "
		 "layout in the background)",
		 (unsigned long long)prev[0].regthread_layouts,
		 (unsigned long long)prev[1].regthread_layouts);
	/* After the switch: the 10 rounds that followed it went (almost all) zero copy; a few
	 * explorations of another scheme are allowed. */
	int after = zc_ops(&prev[1]) - zc_ops(&first[1]);
	FT_CHECK(after >= 8 * window, "only %d of the last %d messages went zero copy", after,
		 11 * window);
	for (int i = 0; i < nlay; i++) {
		munmap(lay[i].base, span);
		free(lay[i].iov);
	}
	fx_close(&fx);
	return 0;
}

/* ---- UMR: local and remote mkey caches ------------------------------------------------- */

static int t_umr_caches(struct ft_ctx *ctx, void *varg)
{
	struct fx fx;
	struct fx_opts o = {.scheme = "umr"};
	fx_open(ctx, &o, &fx);
	/* 256 blocks of 4 KiB: with 32 entries per key, 8 windows of 128 KiB. */
	const size_t block = 4096, count = 256, stride = 8192;
	const size_t span = (count - 1) * stride + block;
	const int n = 8;
	struct slay l;
	slay_init(&l, map_at(NULL, span), block, count, stride);
	struct fi_ddtx_stats s0[2], s1[2], s2[2];
	stats_both(ctx, &fx, s0);
	char what[96];
	for (int i = 0; i < n; i++) {
		if (ctx->rank == 0)
			slay_data(&l, 500 + (uint64_t)i);
		snprintf(what, sizeof(what), "umr send %d of %d", i, n);
		one_message(ctx, &fx, &l, &l, 500 + (uint64_t)i, (uint64_t)i, what);
		if (i == 0)
			stats_both(ctx, &fx, s1);
	}
	stats_both(ctx, &fx, s2);
	print_stats("first", s1);
	print_stats("end", s2);
	FT_CHECK(D(s0[1], s2[1], ops[FI_DDTX_SCHEME_UMR]) == (unsigned long long)n,
		 "%llu of %d messages went umr", D(s0[1], s2[1], ops[FI_DDTX_SCHEME_UMR]), n);
	unsigned long long mk = D(s1[0], s2[0], mkey_hits) + D(s1[1], s2[1], mkey_hits);
	unsigned long long rmk = D(s1[0], s2[0], rmkey_hits) + D(s1[1], s2[1], rmkey_hits);
	FT_CHECK(mk >= (unsigned long long)(n - 1),
		 "local mkey cache: %llu hits over %d repeated sends (rank 0 +%llu, rank 1 +%llu)",
		 mk, n - 1, D(s1[0], s2[0], mkey_hits), D(s1[1], s2[1], mkey_hits));
	FT_CHECK(rmk >= (unsigned long long)(n - 1),
		 "remote mkey cache: %llu hits over %d repeated sends (rank 0 +%llu, rank 1 +%llu): "
		 "the CTS still carries the key list",
		 rmk, n - 1, D(s1[0], s2[0], rmkey_hits), D(s1[1], s2[1], rmkey_hits));
	munmap(l.base, span);
	free(l.iov);
	fx_close(&fx);
	return 0;
}

/* ---- UMR: pool refill under pressure --------------------------------------------------- */

static int t_umr_pool_pressure(struct ft_ctx *ctx, void *varg)
{
	struct fx fx;
	struct fx_opts o = {.scheme = "umr"};
	fx_open(ctx, &o, &fx);
	struct fi_ddtx_stats s0[2], s1[2];
	stats_both(ctx, &fx, s0);
	unsigned long long cap = s0[0].pool_capacity > s0[1].pool_capacity ? s0[0].pool_capacity
									    : s0[1].pool_capacity;
	FT_CHECK(cap > 0, "pool_capacity is 0 on both ranks: no mkey pool to put under pressure");
	/* 1024 blocks of 256 B: 32 windows of 32 entries per layout, per side. */
	const size_t block = 256, count = 1024, stride = 512;
	const size_t span = (count - 1) * stride + block;
	const size_t windows = count / 32;
	size_t nl = (size_t)(2 * cap / windows + 2);
	if (nl < 8)
		nl = 8;
	FT_CHECK(nl <= 512, "pool capacity %llu too large for this test", cap);
	if (ctx->rank == 0)
		printf("  pool capacity %llu: %zu distinct layouts of %zu windows in flight (%zu "
		       "windows per side)\n",
		       cap, nl, windows, nl * windows);
	struct slay *ls = calloc(nl, sizeof(*ls));
	FT_CHECK(ls, "calloc");
	for (size_t i = 0; i < nl; i++)
		slay_init(&ls[i], map_at(NULL, span), block, count, stride);
	char what[96];
	for (int round = 0; round < 2; round++) {
		if (ctx->rank == 1)
			for (size_t i = 0; i < nl; i++) {
				slay_canary(&ls[i]);
				trecv_iov(&fx, ls[i].iov, count, (uint64_t)i, &ls[i]);
			}
		else
			for (size_t i = 0; i < nl; i++)
				slay_data(&ls[i], 7000 + (uint64_t)round * 1000 + i);
		fx_pbarrier(ctx, &fx);
		if (ctx->rank == 0)
			for (size_t i = 0; i < nl; i++)
				tsend_iov(&fx, ls[i].iov, count, (uint64_t)i, &ls[i]);
		fx_wait(&fx, nl, NULL, 2 * TMO);
		if (ctx->rank == 1)
			for (size_t i = 0; i < nl; i++) {
				snprintf(what, sizeof(what), "round %d layout %zu of %zu", round, i, nl);
				slay_check(&ls[i], 7000 + (uint64_t)round * 1000 + i, what);
			}
		fx_pbarrier(ctx, &fx);
	}
	/* The refill thread runs in the background: give it a moment to report. */
	double deadline = ft_now() + 5;
	int done;
	do {
		usleep(20000);
		stats_both(ctx, &fx, s1);
		int mine = D(s0[0], s1[0], pool_refills) + D(s0[1], s1[1], pool_refills) > 0 ||
			   ft_now() > deadline;
		int all[2];
		ft_allgather(ctx, &mine, sizeof(mine), all);
		done = all[0];
	} while (!done);
	print_stats("end", s1);
	FT_CHECK(D(s0[1], s1[1], ops[FI_DDTX_SCHEME_UMR]) + D(s0[1], s1[1], ops[FI_DDTX_SCHEME_SGL]) ==
			 2 * nl,
		 "%llu umr + %llu sgl messages, expected %zu",
		 D(s0[1], s1[1], ops[FI_DDTX_SCHEME_UMR]), D(s0[1], s1[1], ops[FI_DDTX_SCHEME_SGL]),
		 2 * nl);
	FT_CHECK(D(s0[0], s1[0], pool_refills) + D(s0[1], s1[1], pool_refills) >= 1,
		 "pool_refills did not grow with %zu windows in flight per side (capacity %llu)",
		 nl * windows, cap);
	for (size_t i = 0; i < nl; i++) {
		munmap(ls[i].base, span);
		free(ls[i].iov);
	}
	free(ls);
	fx_close(&fx);
	return 0;
}

/* ---- layout handles -------------------------------------------------------------------- */

static struct fi_ddtx_ops *ext_ops(struct fx *fx)
{
	struct fi_ddtx_stats st;
	fx_stats(fx, &st); /* opens fx->ops */
	struct fi_ddtx_ops *ops = fx->ops;
	FT_CHECK(ops->size >= offsetof(struct fi_ddtx_ops, layout_size) + sizeof(ops->layout_size),
		 "fi_ddtx_ops of size %zu has no layout handles", ops->size);
	FT_CHECK(ops->layout_create && ops->layout_create_strided && ops->layout_free &&
			 ops->layout_size,
		 "fi_ddtx_ops: layout handle functions missing (create %p, strided %p, free %p, "
		 "size %p)",
		 (void *)ops->layout_create, (void *)ops->layout_create_strided,
		 (void *)ops->layout_free, (void *)ops->layout_size);
	return ops;
}

static int t_layout_handle(struct ft_ctx *ctx, void *varg)
{
	const char *scheme = varg;
	struct fx fx;
	struct fx_opts o = {.scheme = scheme};
	fx_open(ctx, &o, &fx);
	struct fi_ddtx_ops *ops = ext_ops(&fx);
	const size_t total = 300000;
	/* Sender: an irregular layout (random lengths and gaps); receiver: the strided form. */
	uint64_t rng = 0x1a40u;
	struct fx_layout s;
	fx_layout_make(&s, total, 200, 3000, &rng);
	const size_t rblock = 2000, rcount = total / 2000, rstride = 3000;
	const size_t rspan = (rcount - 1) * rstride + rblock;
	struct slay r;
	slay_init(&r, map_at(NULL, rspan), rblock, rcount, rstride);

	struct fi_ddtx_layout *h = NULL;
	size_t hsize = 0;
	if (ctx->rank == 0) {
		struct iovec *blocks = calloc(s.count, sizeof(*blocks));
		for (size_t i = 0; i < s.count; i++) {
			blocks[i].iov_base = (void *)(uintptr_t)s.off[i];
			blocks[i].iov_len = s.len[i];
		}
		int ret = ops->layout_create(fx.domain, blocks, s.count, &h);
		FT_CHECK(ret == 0 && h, "layout_create(%zu blocks): %s", s.count, fi_strerror(-ret));
		free(blocks);
		hsize = ops->layout_size(h);
		size_t want = s.off[s.count - 1] + s.len[s.count - 1];
		FT_CHECK(hsize == want, "layout_size %zu, expected %zu", hsize, want);
	} else {
		int ret = ops->layout_create_strided(fx.domain, rblock, rstride, rcount, &h);
		FT_CHECK(ret == 0 && h, "layout_create_strided: %s", fi_strerror(-ret));
		hsize = ops->layout_size(h);
		FT_CHECK(hsize == rspan, "strided layout_size %zu, expected %zu", hsize, rspan);
	}
	/* Modes: 0 handle -> handle, 1 iov -> handle, 2 handle -> iov; three messages each. */
	struct fi_ddtx_stats st0[2], st1[2];
	int uses[2] = {0, 0};
	stats_both(ctx, &fx, st0);
	char what[128];
	int k = 0;
	for (int mode = 0; mode < 3; mode++)
		for (int rep = 0; rep < 3; rep++, k++) {
			bool send_h = mode != 1, recv_h = mode != 2;
			uint64_t seed = 3000 + (uint64_t)k;
			snprintf(what, sizeof(what), "%s: %s -> %s, message %d", scheme ? scheme : "auto",
				 send_h ? "handle" : "iov", recv_h ? "handle" : "iov", rep);
			void *desc = h;
			struct iovec one;
			struct fi_msg_tagged m = {.addr = fx.peers[1 - ctx->rank], .tag = (uint64_t)k};
			if (ctx->rank == 1) {
				slay_canary(&r);
				if (recv_h) {
					one = (struct iovec){r.base, hsize};
					m.msg_iov = &one;
					m.desc = &desc;
					m.iov_count = 1;
					uses[1]++;
				} else {
					m.msg_iov = r.iov;
					m.iov_count = r.count;
				}
				m.context = &r;
				FX_OK(&fx, fi_trecvmsg(fx.ep, &m, FI_COMPLETION));
			} else {
				fx_layout_canary(&s, CSEED + 1);
				fx_layout_data(&s, seed);
			}
			fx_pbarrier(ctx, &fx);
			struct fx_comp c;
			if (ctx->rank == 0) {
				if (send_h) {
					one = (struct iovec){s.base, hsize};
					m.msg_iov = &one;
					m.desc = &desc;
					m.iov_count = 1;
					uses[0]++;
				} else {
					m.msg_iov = s.iov;
					m.iov_count = s.count;
				}
				m.context = &s;
				FX_OK(&fx, fi_tsendmsg(fx.ep, &m, FI_COMPLETION));
				fx_wait(&fx, 1, &c, TMO);
				fx_layout_check(&s, seed, total, CSEED + 1, "send buffer after the send");
			} else {
				fx_wait(&fx, 1, &c, TMO);
				FT_CHECK(c.len == total, "%s: received %zu bytes, expected %zu", what, c.len,
					 total);
				slay_check(&r, seed, what);
			}
			fx_pbarrier(ctx, &fx);
		}
	stats_both(ctx, &fx, st1);
	print_stats("end", st1);
	for (int rk = 0; rk < 2; rk++) {
		int n = rk == 0 ? 6 : 6; /* both sides used their handle in 6 of the 9 messages */
		FT_CHECK(D(st0[rk], st1[rk], layout_hits) >= (unsigned long long)n,
			 "rank %d used its layout handle %d times but layout_hits grew by %llu", rk,
			 n, D(st0[rk], st1[rk], layout_hits));
	}
	FT_CHECK(ops->layout_free(h) == 0, "layout_free");
	fx_layout_free(&s);
	munmap(r.base, rspan);
	free(r.iov);
	fx_close(&fx);
	return 0;
}

/*
 * One layout handle used at more buffers than it remembers (DDTX_HANDLE_BASES is 4), for sends
 * and receives alternately, as a runtime uses one datatype for many buffers; one buffer is
 * unmapped and mapped again between rounds.  Every message arrives whole, gaps untouched: the
 * lists the sends and receives borrow from the handle's cached layouts are the right ones.
 */
#define HB_BUFS 5
static int t_layout_handle_bases(struct ft_ctx *ctx, void *varg)
{
	const char *scheme = varg;
	struct fx fx;
	struct fx_opts o = {.scheme = scheme};
	fx_open(ctx, &o, &fx);
	struct fi_ddtx_ops *ops = ext_ops(&fx);
	const size_t block = 8, stride = 24, count = 20000; /* 160 000 B: a rendezvous */
	struct fi_ddtx_layout *h = NULL;
	int ret = ops->layout_create_strided(fx.domain, block, stride, count, &h);
	FT_CHECK(ret == 0 && h, "layout_create_strided: %s", fi_strerror(-ret));
	size_t hsize = ops->layout_size(h);
	struct slay b[HB_BUFS];
	for (int i = 0; i < HB_BUFS; i++)
		slay_init(&b[i], map_at(NULL, (count - 1) * stride + block), block, count, stride);
	void *desc = h;
	char what[128];
	for (int k = 0; k < 14; k++) {
		if (k == 7) { /* a buffer goes away and comes back (same address if free) */
			void *old = b[2].base;
			munmap(old, b[2].span);
			b[2].base = map_at(NULL, b[2].span);
			for (size_t i = 0; i < count; i++)
				b[2].iov[i].iov_base = b[2].base + i * stride;
		}
		/* Round k: 0 -> 1 then 1 -> 0, each side at a different buffer every time. */
		for (int dir = 0; dir < 2; dir++) {
			int sender = dir;
			struct slay *mine = &b[(ctx->rank == sender ? k + dir : 2 * k + 1 + dir) % HB_BUFS];
			uint64_t seed = 7000 + (uint64_t)(2 * k + dir);
			snprintf(what, sizeof(what), "%s: round %d, %d -> %d", scheme, k, sender,
				 1 - sender);
			struct iovec one = {mine->base, hsize};
			struct fi_msg_tagged m = {.msg_iov = &one, .desc = &desc, .iov_count = 1,
						  .addr = fx.peers[1 - ctx->rank],
						  .tag = (uint64_t)(2 * k + dir), .context = mine};
			struct fx_comp c;
			if (ctx->rank != sender) {
				slay_canary(mine);
				FX_OK(&fx, fi_trecvmsg(fx.ep, &m, FI_COMPLETION));
				fx_pbarrier(ctx, &fx);
				fx_wait(&fx, 1, &c, TMO);
				FT_CHECK(c.len == block * count, "%s: received %zu bytes", what, c.len);
				slay_check(mine, seed, what);
			} else {
				slay_data(mine, seed);
				fx_pbarrier(ctx, &fx);
				FX_OK(&fx, fi_tsendmsg(fx.ep, &m, FI_COMPLETION));
				fx_wait(&fx, 1, &c, TMO);
			}
			fx_pbarrier(ctx, &fx);
		}
	}
	FT_CHECK(ops->layout_free(h) == 0, "layout_free");
	for (int i = 0; i < HB_BUFS; i++) {
		munmap(b[i].base, b[i].span);
		free(b[i].iov);
	}
	fx_close(&fx);
	return 0;
}

/* ---- layout handles described by their loops ------------------------------------------ */

/* Byte k of message `seed`'s payload. */
static uint8_t payload_byte(uint64_t seed, size_t k)
{
	uint64_t x = (seed + k) * 0x9E3779B97F4A7C15ull;
	return (uint8_t)(x >> 56);
}

/* The sender's array: 24 x 48 x 96 elements of 8 B; the subarray 20 x 30 x 6 from (2, 9, 50):
 * blocks of 48 B (6 elements), rows 768 B apart, planes 36 KiB apart. */
static const size_t sa_sizes[3] = {24, 48, 96}, sa_sub[3] = {20, 30, 6}, sa_start[3] = {2, 9, 50};
#define SA_ELEM 8
#define SA_BYTES (20 * 30 * 6 * SA_ELEM)

/* Offset of payload byte k in the sender's array (C order over the subarray). */
static size_t sa_offset(size_t k)
{
	size_t e = k / SA_ELEM, in = k % SA_ELEM;
	size_t x = e % sa_sub[2], y = (e / sa_sub[2]) % sa_sub[1], z = e / (sa_sub[2] * sa_sub[1]);
	return (((z + sa_start[0]) * sa_sizes[1] + y + sa_start[1]) * sa_sizes[2] + x +
		sa_start[2]) * SA_ELEM + in;
}

/* Receivers: an indexed-block layout (16 B blocks, pairs swapped: the payload does not go up in
 * memory) and a nested vector (24 B blocks, 3 levels), both SA_BYTES. */
#define IB_BLOCK 16
#define IB_COUNT (SA_BYTES / IB_BLOCK)
static size_t ib_offset(size_t i)
{
	size_t j = i ^ 1; /* pairs swapped */
	return j * 32 + (j % 3) * 8;
}
static const size_t nv_counts[3] = {10, 20, 15}, nv_strides[3] = {40, 500, 11000};
#define NV_BLOCK 24
static size_t nv_offset(size_t b) /* block b of the nested vector */
{
	return 64 + (b % 10) * 40 + ((b / 10) % 20) * 500 + (b / 200) * 11000;
}

static int t_layout_loops(struct ft_ctx *ctx, void *varg)
{
	const char *scheme = varg;
	struct fx fx;
	struct fx_opts o = {.scheme = scheme};
	fx_open(ctx, &o, &fx);
	struct fi_ddtx_ops *ops = ext_ops(&fx);
	FT_CHECK(ops->size >= offsetof(struct fi_ddtx_ops, layout_create_indexed_block) +
				      sizeof(ops->layout_create_indexed_block) &&
			 ops->layout_create_vector && ops->layout_create_subarray &&
			 ops->layout_create_indexed_block,
		 "fi_ddtx_ops of size %zu lacks the loop constructors", ops->size);
	/* Invalid descriptions fail cleanly. */
	struct fi_ddtx_layout *bad = NULL;
	size_t c1[1] = {4}, s1[1] = {8}, zero[3] = {0, 0, 0};
	FT_CHECK(ops->layout_create_vector(fx.domain, 0, 8, 0, c1, s1, &bad) == -FI_EINVAL &&
			 ops->layout_create_vector(fx.domain, 0, 8, 5, c1, s1, &bad) == -FI_EINVAL &&
			 ops->layout_create_subarray(fx.domain, 3, sa_sizes, sa_sizes, sa_start,
						     SA_ELEM, &bad) == -FI_EINVAL &&
			 ops->layout_create_subarray(fx.domain, 3, sa_sizes, zero, zero, SA_ELEM,
						     &bad) == -FI_EINVAL &&
			 ops->layout_create_indexed_block(fx.domain, 0, s1, 1, &bad) == -FI_EINVAL &&
			 !bad,
		 "invalid loop descriptions accepted");

	const size_t sa_span = sa_sizes[0] * sa_sizes[1] * sa_sizes[2] * SA_ELEM;
	const size_t ib_span = IB_COUNT * 32 + 64, nv_span = 64 + 14 * 11000 + 19 * 500 + 9 * 40 + 24;
	struct fi_ddtx_layout *hs = NULL, *hib = NULL, *hnv = NULL;
	uint8_t *buf;
	int ret;
	if (ctx->rank == 0) {
		buf = map_at(NULL, sa_span);
		ret = ops->layout_create_subarray(fx.domain, 3, sa_sizes, sa_sub, sa_start, SA_ELEM,
						  &hs);
		FT_CHECK(ret == 0 && hs, "layout_create_subarray: %s", fi_strerror(-ret));
		size_t want = sa_offset(SA_BYTES - 1) + 1;
		FT_CHECK(ops->layout_size(hs) == want, "subarray layout_size %zu, expected %zu",
			 ops->layout_size(hs), want);
	} else {
		buf = map_at(NULL, ib_span > nv_span ? ib_span : nv_span);
		size_t *offs = malloc(IB_COUNT * sizeof(*offs));
		for (size_t i = 0; i < IB_COUNT; i++)
			offs[i] = ib_offset(i);
		ret = ops->layout_create_indexed_block(fx.domain, IB_BLOCK, offs, IB_COUNT, &hib);
		FT_CHECK(ret == 0 && hib, "layout_create_indexed_block: %s", fi_strerror(-ret));
		free(offs);
		ret = ops->layout_create_vector(fx.domain, 64, NV_BLOCK, 3, nv_counts, nv_strides,
						&hnv);
		FT_CHECK(ret == 0 && hnv, "layout_create_vector: %s", fi_strerror(-ret));
		FT_CHECK(ops->layout_size(hnv) == nv_span, "vector layout_size %zu, expected %zu",
			 ops->layout_size(hnv), nv_span);
	}
	struct fi_ddtx_stats st0[2], st1[2];
	stats_both(ctx, &fx, st0);
	/* Messages: subarray -> indexed-block, subarray -> nested vector, twice each. */
	for (int k = 0; k < 4; k++) {
		uint64_t seed = 7000 + (uint64_t)k;
		bool to_nv = k & 1;
		struct fi_ddtx_layout *h = ctx->rank == 0 ? hs : to_nv ? hnv : hib;
		size_t span = ctx->rank == 0 ? sa_span : to_nv ? nv_span : ib_span;
		void *desc = h;
		struct iovec one = {buf, ops->layout_size(h)};
		struct fi_msg_tagged m = {.msg_iov = &one, .desc = &desc, .iov_count = 1,
					  .addr = fx.peers[1 - ctx->rank], .tag = (uint64_t)k,
					  .context = &one};
		memset(buf, 0xC5, span);
		if (ctx->rank == 0)
			for (size_t b = 0; b < SA_BYTES; b++)
				buf[sa_offset(b)] = payload_byte(seed, b);
		else
			FX_OK(&fx, fi_trecvmsg(fx.ep, &m, FI_COMPLETION));
		fx_pbarrier(ctx, &fx);
		struct fx_comp c;
		if (ctx->rank == 0) {
			FX_OK(&fx, fi_tsendmsg(fx.ep, &m, FI_COMPLETION));
			fx_wait(&fx, 1, &c, TMO);
		} else {
			fx_wait(&fx, 1, &c, TMO);
			FT_CHECK(c.len == SA_BYTES, "message %d: received %zu bytes, expected %d", k,
				 c.len, SA_BYTES);
			/* Every payload byte where the layout says, nothing else touched. */
			uint8_t *want = malloc(span);
			memset(want, 0xC5, span);
			size_t blk = to_nv ? NV_BLOCK : IB_BLOCK;
			for (size_t b = 0; b < SA_BYTES; b++) {
				size_t at = (to_nv ? nv_offset(b / blk) : ib_offset(b / blk)) + b % blk;
				want[at] = payload_byte(seed, b);
			}
			size_t bad_at = span;
			for (size_t i = 0; i < span && bad_at == span; i++)
				if (buf[i] != want[i])
					bad_at = i;
			FT_CHECK(bad_at == span, "message %d (%s): byte %zu of the receive buffer is "
				 "%#x, expected %#x", k, to_nv ? "nested vector" : "indexed-block",
				 bad_at, bad_at < span ? buf[bad_at] : 0,
				 bad_at < span ? want[bad_at] : 0);
			free(want);
		}
		fx_pbarrier(ctx, &fx);
	}
	stats_both(ctx, &fx, st1);
	print_stats("end", st1);
	if (scheme && !strcmp(scheme, "pack"))
		FT_CHECK(D(st0[1], st1[1], bytes[FI_DDTX_SCHEME_PACK]) == 4ull * SA_BYTES,
			 "the receiver counted %llu PACK bytes, expected %d",
			 D(st0[1], st1[1], bytes[FI_DDTX_SCHEME_PACK]), 4 * SA_BYTES);
	if (hs)
		FT_CHECK(ops->layout_free(hs) == 0, "layout_free");
	if (hib)
		FT_CHECK(ops->layout_free(hib) == 0 && ops->layout_free(hnv) == 0, "layout_free");
	munmap(buf, ctx->rank == 0 ? sa_span : (ib_span > nv_span ? ib_span : nv_span));
	fx_close(&fx);
	return 0;
}

/* ---- several threads on one endpoint --------------------------------------------------- */

#define NTHREADS 4
#define THREAD_ITERS 24

struct top {
	_Atomic int done;
	int err;
};

struct tstate {
	struct fx *fx;
	int rank, tid;
	struct slay lay;
	int fail;
	char msg[200];
};

static const size_t tblock[NTHREADS] = {64, 1024, 16384, 65536};
static const size_t tcount[NTHREADS] = {512, 300, 40, 8};

/* Read completions for whoever they belong to. */
static void drain(struct fx *fx)
{
	struct fi_cq_tagged_entry e[8];
	ssize_t n = fi_cq_read(fx->cq, e, 8);
	if (n > 0) {
		for (ssize_t i = 0; i < n; i++)
			atomic_store(&((struct top *)e[i].op_context)->done, 1);
	} else if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry ee = {0};
		if (fi_cq_readerr(fx->cq, &ee, 0) == 1 && ee.op_context) {
			((struct top *)ee.op_context)->err = ee.err ? ee.err : FI_EOTHER;
			atomic_store(&((struct top *)ee.op_context)->done, 1);
		}
	}
}

static void *thread_main(void *varg)
{
	struct tstate *t = varg;
	struct fx *fx = t->fx;
	for (int it = 0; it < THREAD_ITERS; it++) {
		uint64_t seed = 9000 + (uint64_t)t->tid * 100 + (uint64_t)it;
		uint64_t tag = ((uint64_t)t->tid << 32) | (uint64_t)it;
		struct top op = {0};
		struct fi_msg_tagged m = {.msg_iov = t->lay.iov, .iov_count = t->lay.count,
					  .addr = fx->peers[1 - t->rank], .tag = tag, .ignore = 0,
					  .context = &op};
		if (t->rank == 0)
			slay_data(&t->lay, seed);
		else
			slay_canary(&t->lay);
		ssize_t r;
		double t0 = ft_now();
		while ((r = t->rank == 0 ? fi_tsendmsg(fx->ep, &m, FI_COMPLETION)
					 : fi_trecvmsg(fx->ep, &m, FI_COMPLETION)) == -FI_EAGAIN) {
			drain(fx);
			if (ft_now() - t0 > 60)
				break;
		}
		if (r) {
			snprintf(t->msg, sizeof(t->msg), "thread %d iter %d: post: %s", t->tid, it,
				 fi_strerror((int)-r));
			t->fail = 1;
			return NULL;
		}
		while (!atomic_load(&op.done)) {
			drain(fx);
			if (ft_now() - t0 > 60) {
				snprintf(t->msg, sizeof(t->msg), "thread %d iter %d: no completion in 60 s",
					 t->tid, it);
				t->fail = 1;
				return NULL;
			}
		}
		if (op.err) {
			snprintf(t->msg, sizeof(t->msg), "thread %d iter %d: error completion %s",
				 t->tid, it, fi_strerror(op.err));
			t->fail = 1;
			return NULL;
		}
		if (t->rank == 1) {
			char what[64];
			snprintf(what, sizeof(what), "thread %d message %d", t->tid, it);
			slay_check(&t->lay, seed, what); /* dies on a bad byte */
		}
	}
	return NULL;
}

static int t_threads(struct ft_ctx *ctx, void *varg)
{
	struct fx fx;
	struct fx_opts o = {.threading = FI_THREAD_SAFE, .scheme = "auto"};
	fx_open(ctx, &o, &fx);
	FT_CHECK(fx.info->domain_attr->threading == FI_THREAD_SAFE, "threading %d",
		 fx.info->domain_attr->threading);
	struct tstate ts[NTHREADS];
	pthread_t th[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		ts[i] = (struct tstate){.fx = &fx, .rank = ctx->rank, .tid = i};
		size_t stride = tblock[i] + 64 + (size_t)i * 8;
		size_t span = (tcount[i] - 1) * stride + tblock[i];
		slay_init(&ts[i].lay, map_at(NULL, span), tblock[i], tcount[i], stride);
	}
	fx_pbarrier(ctx, &fx);
	for (int i = 0; i < NTHREADS; i++)
		FT_CHECK(pthread_create(&th[i], NULL, thread_main, &ts[i]) == 0, "pthread_create");
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < NTHREADS; i++)
		FT_CHECK(!ts[i].fail, "rank %d: %s", ctx->rank, ts[i].msg);
	struct fi_ddtx_stats st[2];
	stats_both(ctx, &fx, st);
	print_stats("end", st);
	FT_CHECK(st[1].rx_ops >= NTHREADS * THREAD_ITERS, "rx_ops %llu",
		 (unsigned long long)st[1].rx_ops);
	for (int i = 0; i < NTHREADS; i++) {
		munmap(ts[i].lay.base, ts[i].lay.span);
		free(ts[i].lay.iov);
	}
	fx_close(&fx);
	return 0;
}

/* ---- table ----------------------------------------------------------------------------- */

static const struct reuse_arg reuse_send_sgl = {"sgl", 0}, reuse_recv_sgl = {"sgl", 1},
			      reuse_send_umr = {"umr", 0}, reuse_recv_umr = {"umr", 1},
			      reuse_send_auto = {"auto", 0}, reuse_recv_auto = {"auto", 1};

static const struct fx_test tests[] = {
	{"reuse_after_free_send_sgl", 2, 60, t_reuse_after_free, (void *)&reuse_send_sgl},
	{"reuse_after_free_recv_sgl", 2, 60, t_reuse_after_free, (void *)&reuse_recv_sgl},
	{"reuse_after_free_send_umr", 2, 60, t_reuse_after_free, (void *)&reuse_send_umr},
	{"reuse_after_free_recv_umr", 2, 60, t_reuse_after_free, (void *)&reuse_recv_umr},
	{"reuse_after_free_send_auto", 2, 60, t_reuse_after_free, (void *)&reuse_send_auto},
	{"reuse_after_free_recv_auto", 2, 60, t_reuse_after_free, (void *)&reuse_recv_auto},
	{"pack_to_zcopy", 2, 90, t_pack_to_zcopy, NULL},
	{"umr_caches", 2, 60, t_umr_caches, NULL},
	{"umr_pool_pressure", 2, 120, t_umr_pool_pressure, NULL},
	{"layout_handle_auto", 2, 60, t_layout_handle, "auto"},
	{"layout_handle_pack", 2, 60, t_layout_handle, "pack"},
	{"layout_handle_sgl", 2, 60, t_layout_handle, "sgl"},
	{"layout_handle_umr", 2, 60, t_layout_handle, "umr"},
	{"layout_handle_bases_pack", 2, 60, t_layout_handle_bases, "pack"},
	{"layout_handle_bases_auto", 2, 60, t_layout_handle_bases, "auto"},
	{"layout_loops_pack", 2, 60, t_layout_loops, "pack"},
	{"layout_loops_auto", 2, 60, t_layout_loops, "auto"},
	{"threads", 2, 120, t_threads, NULL},
};

int main(int argc, char **argv)
{
	return fx_main(argc, argv, tests, sizeof(tests) / sizeof(tests[0]));
}
