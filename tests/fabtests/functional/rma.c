/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RMA: fi_write/writev/writemsg/read/readv/readmsg with up to 1024 local iov and 1024 rma_iov
 * entries, inject writes, writedata (remote CQ data at the target), FI_DELIVERY_COMPLETE,
 * counters, fi_mr_regv/regattr, 256 MiB transfers, in each key mode (caller keys with bit 63
 * set and offsets; provider keys with virtual addresses; and the two mixed modes).
 * Rank 0 initiates, rank 1 is the target; every byte of the target region is checked after
 * each operation (written bytes hold the data, all others the canary).
 */
#include <string.h>

#include "fx.h"

#define TMO 20000
#define TSEED 0x7A6E7 /* target canary */

#define KEY_BASE 0x8000000000000000ull /* caller keys with bit 63 set, as MPICH's */

static struct fx_opts ropts(void *arg)
{
	struct fx_opts o = {.caps = FI_RMA | FI_MSG | FI_READ | FI_WRITE | FI_REMOTE_READ |
				    FI_REMOTE_WRITE};
	o.mr_mode = (uint64_t)(uintptr_t)arg;
	return o;
}

static void open_rma(struct ft_ctx *ctx, void *arg, struct fx *fx, bool cntr)
{
	struct fx_opts o = ropts(arg);
	o.cntr = cntr;
	fx_open(ctx, &o, fx);
	uint64_t want = (uint64_t)(uintptr_t)arg;
	uint64_t got = (uint64_t)fx->info->domain_attr->mr_mode;
	FT_CHECK((got & (FI_MR_PROV_KEY | FI_MR_VIRT_ADDR)) == want,
		 "asked mr_mode 0x%llx, domain has 0x%llx", (unsigned long long)want,
		 (unsigned long long)got);
	FT_CHECK(fx->info->tx_attr->rma_iov_limit >= 1024, "rma_iov_limit %zu < 1024",
		 fx->info->tx_attr->rma_iov_limit);
}

/* The target's region: `len` bytes registered for remote read and write, canary-filled. */
struct region {
	uint8_t *mem;
	size_t len;
	struct fid_mr *mr;
	struct fx_rkey rk; /* the target's, known to both ranks */
};

static void region_open(struct ft_ctx *ctx, struct fx *fx, struct region *r, size_t len,
			uint8_t *mem)
{
	memset(r, 0, sizeof(*r));
	struct fx_rkey mine = {0};
	r->len = len;
	if (ctx->rank == 1) {
		r->mem = mem ? mem : fx_alloc(len);
		fx_fill(r->mem, len, TSEED, 0);
		r->mr = fx_mr_reg(fx, r->mem, len, FI_REMOTE_READ | FI_REMOTE_WRITE,
				  KEY_BASE | 0x5150, &mine);
	}
	struct fx_rkey all[2];
	ft_allgather(ctx, &mine, sizeof(mine), all);
	r->rk = all[1];
}

static void region_close(struct ft_ctx *ctx, struct region *r, bool owned)
{
	if (r->mr) {
		int ret = fi_close(&r->mr->fid);
		FT_CHECK(ret == 0, "closing MR: %s", fi_strerror(-ret));
	}
	if (owned && ctx->rank == 1)
		free(r->mem);
}

/* Target side: region holds stream bytes (dseed) at the given ranges, canary elsewhere;
 * then restore the canary on those ranges. */
struct range {
	size_t off, len;
};
static void region_check(struct region *r, const struct range *rg, size_t n, uint64_t dseed,
			 const char *what)
{
	size_t pos = 0, s = 0;
	for (size_t i = 0; i < n; i++) {
		FT_CHECK(rg[i].off >= pos, "ranges must be sorted");
		size_t bad = fx_find_bad(r->mem + pos, rg[i].off - pos, TSEED, pos);
		FT_CHECK(bad == (size_t)-1, "%s: target byte %zu (outside the written ranges) changed",
			 what, pos + bad);
		bad = fx_find_bad(r->mem + rg[i].off, rg[i].len, dseed, s);
		FT_CHECK(bad == (size_t)-1,
			 "%s: target byte %zu (rma_iov %zu of %zu, byte %zu) wrong: 0x%02x want 0x%02x",
			 what, rg[i].off + bad, i, n, bad, r->mem[rg[i].off + bad],
			 ft_pattern(dseed, s + bad));
		s += rg[i].len;
		pos = rg[i].off + rg[i].len;
	}
	size_t bad = fx_find_bad(r->mem + pos, r->len - pos, TSEED, pos);
	FT_CHECK(bad == (size_t)-1, "%s: target byte %zu (after the written ranges) changed", what,
		 pos + bad);
	for (size_t i = 0; i < n; i++)
		fx_fill(r->mem + rg[i].off, rg[i].len, TSEED, rg[i].off);
}
/* Target side: put stream bytes into the ranges (for reads). */
static void region_put(struct region *r, const struct range *rg, size_t n, uint64_t dseed)
{
	size_t s = 0;
	for (size_t i = 0; i < n; i++) {
		fx_fill(r->mem + rg[i].off, rg[i].len, dseed, s);
		s += rg[i].len;
	}
}

/* Random rma_iov ranges: `total` bytes cut into `count` sorted pieces inside [0, limit). */
static size_t make_ranges(struct range *rg, size_t total, size_t count, size_t limit,
			  uint64_t *rng)
{
	struct fx_layout l;
	size_t gap = (limit - total) / (count + 1);
	if (gap > 8192)
		gap = 8192;
	fx_layout_make(&l, total, count, gap, rng);
	FT_CHECK(l.backing <= limit, "ranges do not fit");
	size_t shift = ft_rand(rng) % (limit - l.backing + 1);
	for (size_t i = 0; i < l.count; i++) {
		rg[i].off = l.off[i] + shift;
		rg[i].len = l.len[i];
	}
	size_t n = l.count;
	fx_layout_free(&l);
	return n;
}

static void check_rma_comp(const struct fx_comp *c, void *ctx, uint64_t kind, const char *what)
{
	FT_CHECK(c->op_context == ctx, "%s: context %p want %p", what, c->op_context, ctx);
	FT_CHECK((c->flags & (FI_RMA | kind)) == (FI_RMA | kind), "%s: flags 0x%llx lack FI_RMA|%s",
		 what, (unsigned long long)c->flags, kind == FI_WRITE ? "FI_WRITE" : "FI_READ");
}

static void rma_stats_check(struct fx *fx, const struct fi_ddtx_stats *s0, uint64_t nops,
			    uint64_t nbytes, const char *what)
{
	struct fi_ddtx_stats s1;
	fx_stats(fx, &s1);
	uint64_t d = s1.ops[FI_DDTX_SCHEME_RMA] - s0->ops[FI_DDTX_SCHEME_RMA];
	uint64_t b = s1.bytes[FI_DDTX_SCHEME_RMA] - s0->bytes[FI_DDTX_SCHEME_RMA];
	FT_CHECK(d == nops && b == nbytes,
		 "%s: initiator stats rma ops +%llu bytes +%llu, want +%llu / +%llu", what,
		 (unsigned long long)d, (unsigned long long)b, (unsigned long long)nops,
		 (unsigned long long)nbytes);
}

/* ---- fi_write / fi_read, contiguous ----------------------------------------------------- */

static int t_basic(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	open_rma(ctx, arg, &fx, false);
	const size_t rlen = 24u << 20;
	struct region reg;
	region_open(ctx, &fx, &reg, rlen, NULL);
	static const size_t sizes[] = {1, 7, 4096, 16385, 1 << 20, 16u << 20};
	static const size_t offs[] = {0, 4093, 123456, 1, 7u << 20, (24u << 20) - (16u << 20)};
	/* a registered local buffer: its desc is passed on the even rounds */
	uint8_t *lbuf = NULL;
	struct fid_mr *lmr = NULL;
	if (ctx->rank == 0) {
		lbuf = fx_alloc((16u << 20) + 128);
		lmr = fx_mr_reg(&fx, lbuf, (16u << 20) + 128, FI_READ | FI_WRITE, KEY_BASE | 0x10,
				NULL);
	}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct range rg = {offs[i], sizes[i]};
		char what[96];
		snprintf(what, sizeof(what), "fi_write %zu bytes at offset %zu", sizes[i], offs[i]);
		uint64_t seed = 10000 + i;
		if (ctx->rank == 0) {
			struct fi_ddtx_stats s0;
			struct fx_comp c;
			void *desc = (i & 1) ? NULL : fi_mr_desc(lmr);
			uint8_t *b = lbuf + 64;
			fx_fill(b, sizes[i], seed, 0);
			fx_stats(&fx, &s0);
			FX_OK(&fx, fi_write(fx.ep, b, sizes[i], desc, fx.peers[1],
					    fx_raddr(&reg.rk, offs[i]), reg.rk.key, &rg));
			fx_wait(&fx, 1, &c, TMO);
			check_rma_comp(&c, &rg, FI_WRITE, what);
			rma_stats_check(&fx, &s0, 1, sizes[i], what);
			fx_pbarrier(ctx, &fx); /* target checks */
			fx_pbarrier(ctx, &fx); /* target filled the range for the read */
			snprintf(what, sizeof(what), "fi_read %zu bytes at offset %zu", sizes[i],
				 offs[i]);
			fx_fill(lbuf, sizes[i] + 128, FX_CSEED, 0);
			fx_stats(&fx, &s0);
			FX_OK(&fx, fi_read(fx.ep, b, sizes[i], desc, fx.peers[1],
					   fx_raddr(&reg.rk, offs[i]), reg.rk.key, &rg));
			fx_wait(&fx, 1, &c, TMO);
			check_rma_comp(&c, &rg, FI_READ, what);
			rma_stats_check(&fx, &s0, 1, sizes[i], what);
			struct fx_rbuf rb = {lbuf, b, sizes[i]};
			fx_rbuf_check(&rb, seed + 100, sizes[i], what);
			fx_pbarrier(ctx, &fx);
		} else {
			fx_pbarrier(ctx, &fx);
			region_check(&reg, &rg, 1, seed, what);
			region_put(&reg, &rg, 1, seed + 100);
			fx_pbarrier(ctx, &fx);
			fx_pbarrier(ctx, &fx); /* read done */
			snprintf(what, sizeof(what), "target after fi_read at %zu", offs[i]);
			region_check(&reg, &rg, 1, seed + 100, what); /* reads change nothing */
		}
		fx_pbarrier(ctx, &fx);
	}
	if (lmr)
		fi_close(&lmr->fid);
	free(lbuf);
	fx_pbarrier(ctx, &fx);
	region_close(ctx, &reg, true);
	fx_close(&fx);
	return 0;
}

/* ---- vectors: writev/readv (local iov) and writemsg/readmsg (local iov + rma_iov) --------- */

struct vc {
	size_t total, lcount, rcount;
};
static const struct vc vcases[] = {
	{1, 1, 1},          {64, 64, 1},        {100, 7, 13},      {4096, 1024, 1024},
	{16385, 3, 1024},   {200000, 1024, 5},  {1 << 20, 1000, 1024}, {3 << 20, 17, 333},
	{8 << 20, 1024, 1024},
};

static int t_vector(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	open_rma(ctx, arg, &fx, false);
	const size_t rlen = 16u << 20;
	struct region reg;
	region_open(ctx, &fx, &reg, rlen, NULL);
	uint64_t rng = 0xFEED;
	struct range *rg = malloc(1024 * sizeof(*rg));
	struct fi_rma_iov *riov = malloc(1024 * sizeof(*riov));
	for (size_t i = 0; i < sizeof(vcases) / sizeof(vcases[0]); i++) {
		for (int kind = 0; kind < 4; kind++) { /* writev, writemsg, readv, readmsg */
			const struct vc *v = &vcases[i];
			bool is_msg = kind & 1, is_read = kind >= 2;
			size_t rcount = is_msg ? v->rcount : 1;
			size_t nr = make_ranges(rg, v->total, rcount, rlen, &rng);
			struct fx_layout l;
			fx_layout_make(&l, v->total, v->lcount, 29, &rng);
			char what[160];
			static const char *names[] = {"fi_writev", "fi_writemsg", "fi_readv",
						      "fi_readmsg"};
			snprintf(what, sizeof(what), "%s %zu bytes, %zu local iov, %zu rma_iov",
				 names[kind], v->total, l.count, nr);
			uint64_t seed = 20000 + i * 4 + (uint64_t)kind;
			if (ctx->rank == 0) {
				struct fi_ddtx_stats s0;
				struct fx_comp c;
				for (size_t k = 0; k < nr; k++) {
					riov[k].addr = fx_raddr(&reg.rk, rg[k].off);
					riov[k].len = rg[k].len;
					riov[k].key = reg.rk.key;
				}
				fx_layout_canary(&l, 3);
				if (!is_read)
					fx_layout_data(&l, seed);
				fx_pbarrier(ctx, &fx); /* target ready */
				fx_stats(&fx, &s0);
				struct fi_msg_rma m = {.msg_iov = l.iov, .desc = l.desc,
						       .iov_count = l.count, .addr = fx.peers[1],
						       .rma_iov = riov, .rma_iov_count = nr,
						       .context = &l};
				if (kind == 0)
					FX_OK(&fx, fi_writev(fx.ep, l.iov, l.desc, l.count,
							     fx.peers[1], riov[0].addr, reg.rk.key,
							     &l));
				else if (kind == 1)
					FX_OK(&fx, fi_writemsg(fx.ep, &m, FI_COMPLETION));
				else if (kind == 2)
					FX_OK(&fx, fi_readv(fx.ep, l.iov, l.desc, l.count,
							    fx.peers[1], riov[0].addr, reg.rk.key, &l));
				else
					FX_OK(&fx, fi_readmsg(fx.ep, &m, FI_COMPLETION));
				fx_wait(&fx, 1, &c, TMO);
				check_rma_comp(&c, &l, is_read ? FI_READ : FI_WRITE, what);
				rma_stats_check(&fx, &s0, 1, v->total, what);
				if (is_read)
					fx_layout_check(&l, seed, v->total, 3, what);
				else
					fx_layout_check(&l, seed, v->total, 3,
							"write source after the write");
				fx_pbarrier(ctx, &fx);
			} else {
				if (is_read)
					region_put(&reg, rg, nr, seed);
				fx_pbarrier(ctx, &fx);
				fx_pbarrier(ctx, &fx);
				region_check(&reg, rg, nr, seed, what);
			}
			fx_layout_free(&l);
		}
	}
	free(rg);
	free(riov);
	fx_pbarrier(ctx, &fx);
	region_close(ctx, &reg, true);
	fx_close(&fx);
	return 0;
}

/* ---- fi_inject_write / fi_inject_writedata ------------------------------------------------ */

static int t_inject(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	open_rma(ctx, arg, &fx, false);
	FT_CHECK(fx.info->tx_attr->inject_size >= 4096, "inject_size %zu",
		 fx.info->tx_attr->inject_size);
	const size_t rlen = 1 << 20;
	struct region reg;
	region_open(ctx, &fx, &reg, rlen, NULL);
	static const size_t sizes[] = {1, 8, 100, 4095, 4096};
	for (size_t i = 0; i < 5; i++) {
		struct range rg = {1000 + i * 50000, sizes[i]};
		uint64_t seed = 30000 + i;
		bool with_data = i & 1;
		char what[96];
		snprintf(what, sizeof(what), "fi_inject_write%s %zu bytes", with_data ? "data" : "",
			 sizes[i]);
		if (ctx->rank == 0) {
			uint8_t *b = fx_alloc(sizes[i]);
			fx_fill(b, sizes[i], seed, 0);
			if (with_data)
				FX_OK(&fx, fi_inject_writedata(fx.ep, b, sizes[i], 0xDA7A00 + i,
							       fx.peers[1],
							       fx_raddr(&reg.rk, rg.off), reg.rk.key));
			else
				FX_OK(&fx, fi_inject_write(fx.ep, b, sizes[i], fx.peers[1],
							   fx_raddr(&reg.rk, rg.off), reg.rk.key));
			memset(b, 0xEE, sizes[i]); /* reusable at once */
			free(b);
			fx_pbarrier(ctx, &fx);
			fx_expect_none(&fx, 50); /* no completion for inject */
		} else {
			if (with_data) {
				struct fx_comp c;
				fx_wait(&fx, 1, &c, TMO);
				FT_CHECK(c.flags & FI_REMOTE_CQ_DATA, "%s: flags 0x%llx", what,
					 (unsigned long long)c.flags);
				FT_CHECK(c.data == 0xDA7A00 + i, "%s: data 0x%llx", what,
					 (unsigned long long)c.data);
			} else {
				/* wait until the bytes arrive (keep progressing) */
				double t0 = ft_now();
				while (fx_find_bad(reg.mem + rg.off, rg.len, seed, 0) != (size_t)-1) {
					fx_progress(&fx);
					FT_CHECK(ft_now() - t0 < 10,
						 "%s: bytes not at the target after 10 s", what);
				}
			}
			fx_pbarrier(ctx, &fx);
			region_check(&reg, &rg, 1, seed, what);
		}
		/* The target has checked the whole region before the next write may land in it
		 * (without this, a target delayed 50 ms under load saw the next size's bytes: CI's
		 * ASan stage, "fi_inject_writedata 4095 bytes: target byte 201000 ... changed"). */
		fx_pbarrier(ctx, &fx);
	}
	fx_pbarrier(ctx, &fx);
	region_close(ctx, &reg, true);
	fx_close(&fx);
	return 0;
}

/* ---- remote CQ data: fi_writedata, fi_writemsg(FI_REMOTE_CQ_DATA) -------------------------- */

static int t_writedata(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	open_rma(ctx, arg, &fx, false);
	const size_t rlen = 8u << 20;
	struct region reg;
	region_open(ctx, &fx, &reg, rlen, NULL);
	uint64_t rng = 5;
	struct range rg[100];
	struct fi_rma_iov riov[100];
	static const size_t sizes[] = {0, 100, 16385, 4u << 20};
	for (size_t i = 0; i < 8; i++) {
		size_t size = sizes[i % 4];
		bool msg = i >= 4;
		size_t nr = size ? make_ranges(rg, size, msg ? 100 : 1, rlen, &rng) : 0;
		if (!size) {
			rg[0].off = 4096;
			rg[0].len = 0;
			nr = 1;
		}
		uint64_t data = 0xC0DA000000000000ull + i;
		uint64_t seed = 40000 + i;
		char what[96];
		snprintf(what, sizeof(what), "%s %zu bytes (%zu rma_iov)",
			 msg ? "fi_writemsg+FI_REMOTE_CQ_DATA" : "fi_writedata", size, nr);
		if (ctx->rank == 0) {
			uint8_t *b = fx_alloc(size);
			fx_fill(b, size, seed, 0);
			for (size_t k = 0; k < nr; k++)
				riov[k] = (struct fi_rma_iov){fx_raddr(&reg.rk, rg[k].off), rg[k].len,
							      reg.rk.key};
			if (msg) {
				struct iovec iov = {b, size};
				struct fi_msg_rma m = {.msg_iov = &iov, .iov_count = 1,
						       .addr = fx.peers[1], .rma_iov = riov,
						       .rma_iov_count = nr, .context = b,
						       .data = data};
				FX_OK(&fx, fi_writemsg(fx.ep, &m, FI_COMPLETION | FI_REMOTE_CQ_DATA));
			} else {
				FX_OK(&fx, fi_writedata(fx.ep, b, size, NULL, data, fx.peers[1],
							riov[0].addr, reg.rk.key, b));
			}
			struct fx_comp c;
			fx_wait(&fx, 1, &c, TMO);
			check_rma_comp(&c, b, FI_WRITE, what);
			free(b);
		} else {
			struct fx_comp c;
			fx_wait(&fx, 1, &c, TMO);
			FT_CHECK(c.flags & FI_REMOTE_CQ_DATA, "%s: target flags 0x%llx lack FI_REMOTE_CQ_DATA",
				 what, (unsigned long long)c.flags);
			FT_CHECK(c.flags & FI_REMOTE_WRITE, "%s: target flags 0x%llx lack FI_REMOTE_WRITE",
				 what, (unsigned long long)c.flags);
			FT_CHECK(c.data == data, "%s: data 0x%llx want 0x%llx", what,
				 (unsigned long long)c.data, (unsigned long long)data);
			FT_CHECK(c.len == size, "%s: target completion len %zu want %zu", what, c.len,
				 size);
			/* the data is there when the target's completion is */
			region_check(&reg, rg, nr, seed, what);
		}
		fx_pbarrier(ctx, &fx);
	}
	fx_pbarrier(ctx, &fx);
	region_close(ctx, &reg, true);
	fx_close(&fx);
	return 0;
}

/* ---- FI_DELIVERY_COMPLETE: data visible at the target when the initiator completes ------- */

static int t_delivery(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	open_rma(ctx, arg, &fx, false);
	/* the target registers shared memory the initiator can look at directly */
	const size_t rlen = 32u << 20;
	struct region reg;
	region_open(ctx, &fx, &reg, rlen, fx_shmem);
	fx_pbarrier(ctx, &fx);
	uint64_t rng = 9;
	struct range rg[64];
	struct fi_rma_iov riov[64];
	static const size_t sizes[] = {1, 5000, 100000, 24u << 20};
	for (size_t i = 0; i < 4; i++) {
		size_t nr = make_ranges(rg, sizes[i], 1 + i * 20, rlen, &rng);
		uint64_t seed = 50000 + i;
		if (ctx->rank == 0) {
			uint8_t *b = fx_alloc(sizes[i]);
			fx_fill(b, sizes[i], seed, 0);
			for (size_t k = 0; k < nr; k++)
				riov[k] = (struct fi_rma_iov){fx_raddr(&reg.rk, rg[k].off), rg[k].len,
							      reg.rk.key};
			struct iovec iov = {b, sizes[i]};
			struct fi_msg_rma m = {.msg_iov = &iov, .iov_count = 1, .addr = fx.peers[1],
					       .rma_iov = riov, .rma_iov_count = nr, .context = b};
			FX_OK(&fx, fi_writemsg(fx.ep, &m, FI_COMPLETION | FI_DELIVERY_COMPLETE));
			struct fx_comp c;
			fx_wait(&fx, 1, &c, TMO);
			check_rma_comp(&c, b, FI_WRITE, "FI_DELIVERY_COMPLETE write");
			/* look at the target's memory (same pages) right now */
			size_t s = 0;
			for (size_t k = 0; k < nr; k++) {
				FX_CHECK_PATTERN(fx_shmem + rg[k].off, rg[k].len, seed, s,
						 "FI_DELIVERY_COMPLETE: %zu-byte write, rma_iov %zu "
						 "not in place at completion",
						 sizes[i], k);
				s += rg[k].len;
			}
			free(b);
			fx_pbarrier(ctx, &fx);
		} else {
			fx_pbarrier(ctx, &fx);
			region_check(&reg, rg, nr, seed, "FI_DELIVERY_COMPLETE write");
		}
		fx_pbarrier(ctx, &fx);
	}
	region_close(ctx, &reg, false);
	fx_close(&fx);
	return 0;
}

/* ---- counters ------------------------------------------------------------------------- */

static int t_cntr(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	open_rma(ctx, arg, &fx, true);
	const size_t rlen = 4u << 20;
	struct region reg;
	region_open(ctx, &fx, &reg, rlen, NULL);
	enum { NW = 20, NR = 13 };
	if (ctx->rank == 0) {
		uint8_t *b = fx_alloc(rlen);
		fx_fill(b, rlen, 60000, 0);
		FT_CHECK(fi_cntr_read(fx.cntr) == 0, "counter starts at %llu",
			 (unsigned long long)fi_cntr_read(fx.cntr));
		for (int i = 0; i < NW; i++) {
			size_t len = 1000 + (size_t)i * 7000;
			FX_OK(&fx, fi_write(fx.ep, b + (size_t)i * 100000, len, NULL, fx.peers[1],
					    fx_raddr(&reg.rk, (size_t)i * 100000), reg.rk.key, NULL));
		}
		for (int i = 0; i < NR; i++)
			FX_OK(&fx, fi_read(fx.ep, b + 3000000 + (size_t)i * 1000, 1000, NULL,
					   fx.peers[1], fx_raddr(&reg.rk, (size_t)i * 100000),
					   reg.rk.key, NULL));
		/* fi_cntr_wait drives progress */
		int ret = fi_cntr_wait(fx.cntr, NW + NR, 10000);
		FT_CHECK(ret == 0, "fi_cntr_wait(%d): %s (counter %llu)", NW + NR, fi_strerror(-ret),
			 (unsigned long long)fi_cntr_read(fx.cntr));
		FT_CHECK(fi_cntr_read(fx.cntr) == NW + NR, "counter %llu want %d",
			 (unsigned long long)fi_cntr_read(fx.cntr), NW + NR);
		FT_CHECK(fi_cntr_readerr(fx.cntr) == 0, "error counter %llu",
			 (unsigned long long)fi_cntr_readerr(fx.cntr));
		fx_wait(&fx, NW + NR, NULL, TMO); /* the CQ has them too */
		/* read back check: the reads fetched what the writes put */
		for (int i = 0; i < NR; i++)
			FX_CHECK_PATTERN(b + 3000000 + (size_t)i * 1000, 1000, 60000,
					 (size_t)i * 100000, "read %d after writes", i);
		/* an error (wrong key) counts in the error counter, not the success counter */
		FX_OK(&fx, fi_write(fx.ep, b, 100, NULL, fx.peers[1], fx_raddr(&reg.rk, 0),
				    reg.rk.key ^ 0x5a5a5a5a00ull, NULL));
		struct fi_cq_err_entry e;
		fx_wait_err(&fx, &e, TMO);
		FT_CHECK(fi_cntr_readerr(fx.cntr) == 1, "error counter %llu after a failed write",
			 (unsigned long long)fi_cntr_readerr(fx.cntr));
		FT_CHECK(fi_cntr_read(fx.cntr) == NW + NR, "success counter moved on an error");
		/* fi_cntr_wait times out when the threshold is not reached */
		double t0 = ft_now();
		ret = fi_cntr_wait(fx.cntr, NW + NR + 1, 300);
		double dt = ft_now() - t0;
		FT_CHECK(ret == -FI_ETIMEDOUT, "fi_cntr_wait past the count returned %d (%s)", ret,
			 fi_strerror(-ret));
		FT_CHECK(dt > 0.25 && dt < 3, "fi_cntr_wait(300 ms) took %.3f s", dt);
		free(b);
		fx_pbarrier(ctx, &fx);
	} else {
		fx_pbarrier(ctx, &fx);
		/* writes landed where they should; the failed one changed nothing */
		for (int i = 0; i < NW; i++) {
			size_t len = 1000 + (size_t)i * 7000;
			FX_CHECK_PATTERN(reg.mem + (size_t)i * 100000, len, 60000,
					 (size_t)i * 100000, "counted write %d", i);
		}
	}
	fx_pbarrier(ctx, &fx);
	region_close(ctx, &reg, true);
	fx_close(&fx);
	return 0;
}

/* ---- fi_mr_regv / fi_mr_regattr: one key over several buffers ------------------------------ */

static int t_regv(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	open_rma(ctx, arg, &fx, false);
	uint64_t mode = (uint64_t)(uintptr_t)arg;
	static const size_t plen[3] = {5000, 3, 70000};
	const size_t total = 5000 + 3 + 70000;
	uint8_t *piece[3] = {NULL, NULL, NULL};
	struct fid_mr *mr = NULL, *mr2 = NULL;
	struct fx_rkey mine[2] = {{0}}, all[4];
	if (ctx->rank == 1) {
		struct iovec iov[3];
		for (int i = 0; i < 3; i++) {
			piece[i] = fx_alloc(plen[i] + 128);
			fx_fill(piece[i], plen[i] + 128, TSEED + (uint64_t)i, 0);
			iov[i].iov_base = piece[i] + 64;
			iov[i].iov_len = plen[i];
		}
		int ret = fi_mr_regv(fx.domain, iov, 3, FI_REMOTE_WRITE | FI_REMOTE_READ, 0,
				     KEY_BASE | 0xAA, 0, &mr, NULL);
		FT_CHECK(ret == 0, "fi_mr_regv: %s", fi_strerror(-ret));
		mine[0].key = fi_mr_key(mr);
		mine[0].base = (mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)iov[0].iov_base : 0;
		/* regattr over the last two pieces */
		struct fi_mr_attr attr = {.mr_iov = &iov[1], .iov_count = 2,
					  .access = FI_REMOTE_WRITE | FI_REMOTE_READ,
					  .requested_key = KEY_BASE | 0xBB};
		ret = fi_mr_regattr(fx.domain, &attr, 0, &mr2);
		FT_CHECK(ret == 0, "fi_mr_regattr: %s", fi_strerror(-ret));
		mine[1].key = fi_mr_key(mr2);
		mine[1].base = (mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)iov[1].iov_base : 0;
		if (!(mode & FI_MR_PROV_KEY))
			FT_CHECK(mine[0].key == (KEY_BASE | 0xAA) && mine[1].key == (KEY_BASE | 0xBB),
				 "caller keys not honoured");
	}
	ft_allgather(ctx, mine, sizeof(mine), all);
	struct fx_rkey rk = all[2], rk2 = all[3];
	/* write the whole concatenation through the regv key, in pieces that straddle the
	 * buffer boundaries; then read it back through the regattr key */
	if (ctx->rank == 0) {
		uint8_t *b = fx_alloc(total);
		fx_fill(b, total, 70000, 0);
		struct iovec iov = {b, total};
		struct fi_rma_iov r[3] = {{rk.base + 0, 4000, rk.key},
					  {rk.base + 4000, 1010, rk.key},
					  {rk.base + 5010, total - 5010, rk.key}};
		struct fi_msg_rma m = {.msg_iov = &iov, .iov_count = 1, .addr = fx.peers[1],
				       .rma_iov = r, .rma_iov_count = 3, .context = b};
		FX_OK(&fx, fi_writemsg(fx.ep, &m, FI_COMPLETION));
		fx_wait(&fx, 1, NULL, TMO);
		uint8_t *rb = fx_alloc(total);
		memset(rb, 0, total);
		FX_OK(&fx, fi_read(fx.ep, rb, 70003, NULL, fx.peers[1], rk2.base, rk2.key, rb));
		fx_wait(&fx, 1, NULL, TMO);
		FX_CHECK_PATTERN(rb, 70003, 70000, 5000, "read through the fi_mr_regattr key");
		free(rb);
		free(b);
		fx_pbarrier(ctx, &fx);
	} else {
		fx_pbarrier(ctx, &fx);
		size_t s = 0;
		for (int i = 0; i < 3; i++) {
			FX_CHECK_PATTERN(piece[i], 64, TSEED + (uint64_t)i, 0,
					 "before regv piece %d", i);
			FX_CHECK_PATTERN(piece[i] + 64, plen[i], 70000, s, "regv piece %d", i);
			FX_CHECK_PATTERN(piece[i] + 64 + plen[i], 64, TSEED + (uint64_t)i,
					 64 + plen[i], "after regv piece %d", i);
			s += plen[i];
		}
		fi_close(&mr->fid);
		fi_close(&mr2->fid);
		for (int i = 0; i < 3; i++)
			free(piece[i]);
	}
	fx_pbarrier(ctx, &fx);
	fx_close(&fx);
	return 0;
}

/* ---- 256 MiB write and read with 1024 rma_iov ----------------------------------------------- */

static int t_big(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	open_rma(ctx, arg, &fx, false);
	const size_t total = 256u << 20, rlen = total + (4u << 20);
	struct region reg;
	region_open(ctx, &fx, &reg, rlen, NULL);
	uint64_t rng = 256;
	struct range *rg = malloc(1024 * sizeof(*rg));
	size_t nr = make_ranges(rg, total, 1024, rlen, &rng);
	if (ctx->rank == 0) {
		struct fi_rma_iov *riov = malloc(nr * sizeof(*riov));
		for (size_t k = 0; k < nr; k++)
			riov[k] = (struct fi_rma_iov){fx_raddr(&reg.rk, rg[k].off), rg[k].len,
						      reg.rk.key};
		struct fx_layout l;
		fx_layout_make(&l, total, 1000, 4096, &rng);
		fx_layout_canary(&l, 4);
		fx_layout_data(&l, 80000);
		struct fi_msg_rma m = {.msg_iov = l.iov, .desc = l.desc, .iov_count = l.count,
				       .addr = fx.peers[1], .rma_iov = riov, .rma_iov_count = nr,
				       .context = &l};
		double t0 = ft_now();
		FX_OK(&fx, fi_writemsg(fx.ep, &m, FI_COMPLETION));
		fx_wait(&fx, 1, NULL, 60000);
		double dt = ft_now() - t0;
		printf("  256 MiB fi_writemsg (%zu local, %zu rma_iov): %.1f ms\n", l.count, nr,
		       dt * 1e3);
		fx_pbarrier(ctx, &fx); /* target checks; fills for the read */
		fx_pbarrier(ctx, &fx);
		fx_layout_canary(&l, 4);
		t0 = ft_now();
		FX_OK(&fx, fi_readmsg(fx.ep, &m, FI_COMPLETION));
		fx_wait(&fx, 1, NULL, 60000);
		dt = ft_now() - t0;
		printf("  256 MiB fi_readmsg: %.1f ms\n", dt * 1e3);
		fx_layout_check(&l, 80001, total, 4, "256 MiB fi_readmsg");
		fx_layout_free(&l);
		free(riov);
		fx_pbarrier(ctx, &fx);
	} else {
		fx_pbarrier(ctx, &fx);
		region_check(&reg, rg, nr, 80000, "256 MiB fi_writemsg");
		region_put(&reg, rg, nr, 80001);
		fx_pbarrier(ctx, &fx);
		fx_pbarrier(ctx, &fx);
	}
	free(rg);
	fx_pbarrier(ctx, &fx);
	region_close(ctx, &reg, true);
	fx_close(&fx);
	return 0;
}


/* ---- ordering the provider advertises: FI_ORDER_WAW, RAW, WAR, SAW ------------------------ */

static int t_order(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	struct fx_opts o = ropts(arg);
	o.caps |= FI_TAGGED;
	o.msg_order = FI_ORDER_RAW | FI_ORDER_WAW | FI_ORDER_WAR | FI_ORDER_SAW;
	fx_open(ctx, &o, &fx);
	uint64_t got = fx.info->tx_attr->msg_order;
	FT_CHECK((got & o.msg_order) == o.msg_order, "msg_order 0x%llx lacks RAW|WAW|WAR|SAW",
		 (unsigned long long)got);
	static const size_t sizes[] = {100, 5000, 1 << 20, 6u << 20};
	const size_t rlen = 8u << 20;
	struct region reg;
	region_open(ctx, &fx, &reg, rlen, NULL);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		uint64_t a = 90000 + 10 * i, b = a + 1, e = a + 2, f = a + 3, d = a + 4;
		uint64_t addr = fx_raddr(&reg.rk, 4096);
		char what[96];
		if (ctx->rank == 0) {
			uint8_t *A = fx_alloc(n), *B = fx_alloc(n), *R = fx_alloc(n), *F = fx_alloc(n),
				*D = fx_alloc(n);
			fx_fill(A, n, a, 0);
			fx_fill(B, n, b, 0);
			fx_fill(F, n, f, 0);
			fx_fill(D, n, d, 0);
			/* WAW then RAW: write A, write B, read back - all posted before any wait */
			FX_OK(&fx, fi_write(fx.ep, A, n, NULL, fx.peers[1], addr, reg.rk.key, A));
			FX_OK(&fx, fi_write(fx.ep, B, n, NULL, fx.peers[1], addr, reg.rk.key, B));
			FX_OK(&fx, fi_read(fx.ep, R, n, NULL, fx.peers[1], addr, reg.rk.key, R));
			fx_wait(&fx, 3, NULL, TMO);
			snprintf(what, sizeof(what), "FI_ORDER_WAW+RAW, %zu bytes: read after two writes", n);
			FX_CHECK_PATTERN(R, n, b, 0, "%s", what);
			fx_pbarrier(ctx, &fx); /* target checks B, then fills E */
			fx_pbarrier(ctx, &fx);
			/* WAR: read (must see E) then write F, posted back to back */
			FX_OK(&fx, fi_read(fx.ep, R, n, NULL, fx.peers[1], addr, reg.rk.key, R));
			FX_OK(&fx, fi_write(fx.ep, F, n, NULL, fx.peers[1], addr, reg.rk.key, F));
			fx_wait(&fx, 2, NULL, TMO);
			snprintf(what, sizeof(what), "FI_ORDER_WAR, %zu bytes: read before a write", n);
			FX_CHECK_PATTERN(R, n, e, 0, "%s", what);
			/* SAW: write D then send; the target checks D when the message arrives */
			FX_OK(&fx, fi_write(fx.ep, D, n, NULL, fx.peers[1], addr, reg.rk.key, D));
			FX_OK(&fx, fi_tsend(fx.ep, &n, sizeof(n), NULL, fx.peers[1], 7, &n));
			fx_wait(&fx, 2, NULL, TMO);
			fx_pbarrier(ctx, &fx);
			free(A);
			free(B);
			free(R);
			free(F);
			free(D);
		} else {
			fx_pbarrier(ctx, &fx);
			FX_CHECK_PATTERN(reg.mem + 4096, n, b, 0, "FI_ORDER_WAW, %zu bytes: target", n);
			fx_fill(reg.mem + 4096, n, e, 0);
			size_t got_n = 0;
			FX_OK(&fx, fi_trecv(fx.ep, &got_n, sizeof(got_n), NULL, FI_ADDR_UNSPEC, 7, 0, &got_n));
			fx_pbarrier(ctx, &fx);
			fx_wait(&fx, 1, NULL, TMO);
			FX_CHECK_PATTERN(reg.mem + 4096, n, d, 0,
					 "FI_ORDER_SAW, %zu bytes: target at the message's arrival", n);
			fx_pbarrier(ctx, &fx);
			fx_fill(reg.mem + 4096, n, TSEED, 4096);
		}
		fx_pbarrier(ctx, &fx);
	}
	region_close(ctx, &reg, true);
	fx_close(&fx);
	return 0;
}

#define CALLER ((void *)(uintptr_t)0)
#define PROV ((void *)(uintptr_t)(FI_MR_PROV_KEY | FI_MR_VIRT_ADDR))
#define PROV_OFF ((void *)(uintptr_t)(FI_MR_PROV_KEY))
#define CALLER_VIRT ((void *)(uintptr_t)(FI_MR_VIRT_ADDR))

static const struct fx_test tests[] = {
	{"basic_caller_key", 2, 60, t_basic, CALLER},
	{"basic_prov_key", 2, 60, t_basic, PROV},
	{"basic_prov_key_offset", 2, 60, t_basic, PROV_OFF},
	{"basic_caller_key_virt", 2, 60, t_basic, CALLER_VIRT},
	{"vector_caller_key", 2, 90, t_vector, CALLER},
	{"vector_prov_key", 2, 90, t_vector, PROV},
	{"inject_caller_key", 2, 30, t_inject, CALLER},
	{"inject_prov_key", 2, 30, t_inject, PROV},
	{"writedata_caller_key", 2, 30, t_writedata, CALLER},
	{"writedata_prov_key", 2, 30, t_writedata, PROV},
	{"delivery_complete_caller_key", 2, 30, t_delivery, CALLER},
	{"delivery_complete_prov_key", 2, 30, t_delivery, PROV},
	{"cntr_caller_key", 2, 30, t_cntr, CALLER},
	{"cntr_prov_key", 2, 30, t_cntr, PROV},
	{"regv_caller_key", 2, 30, t_regv, CALLER},
	{"regv_prov_key_offset", 2, 30, t_regv, PROV_OFF},
	{"order_caller_key", 2, 60, t_order, CALLER},
	{"order_prov_key", 2, 60, t_order, PROV},
	{"rma_256m_caller_key", 2, 120, t_big, CALLER},
	{"rma_256m_prov_key", 2, 120, t_big, PROV},
};

int main(int argc, char **argv)
{
	return fx_main(argc, argv, tests, sizeof(tests) / sizeof(tests[0]));
}
