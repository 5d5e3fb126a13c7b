/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Many processes (16 and more), each exchanging with every peer: tagged messages of random
 * sizes (eager and rendezvous, iov lists), partly directed and partly wildcard receives, half
 * posted before the sends and half after; untagged messages matched through FI_SOURCE; RMA
 * writes into and reads from every peer's region.  Every byte is checked.
 */
#include <string.h>

#include "fx.h"

#define TMO 60000
#define K 4 /* messages per ordered pair */

struct mp {
	const char *scheme;
	int nranks;
};

static uint64_t pair_seed(int src, int dst, int seq)
{
	return 0x1000000ull * (uint64_t)(src + 1) + 0x1000ull * (uint64_t)(dst + 1) + (uint64_t)seq;
}

static size_t pair_size(int src, int dst, int seq)
{
	uint64_t s = pair_seed(src, dst, seq) * 0x9E3779B97F4A7C15ull | 1;
	ft_rand(&s);
	switch (ft_rand(&s) % 3) {
	case 0: return fx_rand_size(&s, 0, 4096);
	case 1: return fx_rand_size(&s, 4097, 16384);
	default: return fx_rand_size(&s, 16385, 400000);
	}
}

static uint64_t pair_tag(int src, int seq) { return ((uint64_t)src << 20) | (uint64_t)seq; }

/* ---- tagged all-to-all ---------------------------------------------------------------------- */

static int t_tagged(struct ft_ctx *ctx, void *arg)
{
	const struct mp *m = arg;
	struct fx fx;
	struct fx_opts o = {.caps = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV | FI_SOURCE,
			    .scheme = m->scheme};
	fx_open(ctx, &o, &fx);
	int n = ctx->size, me = ctx->rank;
	int nops = (n - 1) * K;
	struct fx_layout *snd = calloc((size_t)nops, sizeof(*snd));
	struct fx_layout *rcv = calloc((size_t)nops, sizeof(*rcv));
	int *rsrc = calloc((size_t)nops, sizeof(int)), *rseq = calloc((size_t)nops, sizeof(int));
	uint64_t rng = 0x77 + (uint64_t)me;
	/* receives: the first half posted before anyone sends */
	int r = 0;
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1)
			fx_pbarrier(ctx, &fx); /* everyone posted the first half */
		for (int d = 1; d < n; d++) {
			int src = (me + d) % n;
			for (int q = 0; q < K; q++) {
				if ((q < K / 2) != (pass == 0))
					continue;
				size_t sz = pair_size(src, me, q);
				fx_layout_make(&rcv[r], sz, fx_rand_count(&rng, sz < 64 ? sz : 64), 16,
					       &rng);
				fx_layout_canary(&rcv[r], 1);
				rsrc[r] = src;
				rseq[r] = q;
				struct fi_msg_tagged mt = {
					.msg_iov = rcv[r].iov, .desc = rcv[r].desc,
					.iov_count = rcv[r].count,
					.addr = (q & 1) ? fx.peers[src] : FI_ADDR_UNSPEC,
					.tag = pair_tag(src, q), .context = &rcv[r]};
				FX_OK(&fx, fi_trecvmsg(fx.ep, &mt, FI_COMPLETION));
				r++;
			}
		}
		if (pass == 0) {
			fx_pbarrier(ctx, &fx);
			/* all sends */
			int s = 0;
			for (int d = 1; d < n; d++) {
				int dst = (me + n - d) % n;
				for (int q = 0; q < K; q++) {
					size_t sz = pair_size(me, dst, q);
					fx_layout_make(&snd[s], sz,
						       fx_rand_count(&rng, sz < 64 ? sz : 64), 16,
						       &rng);
					fx_layout_canary(&snd[s], 2);
					fx_layout_data(&snd[s], pair_seed(me, dst, q));
					struct fi_msg_tagged mt = {
						.msg_iov = snd[s].iov, .desc = snd[s].desc,
						.iov_count = snd[s].count, .addr = fx.peers[dst],
						.tag = pair_tag(me, q), .context = &snd[s]};
					FX_OK(&fx, fi_tsendmsg(fx.ep, &mt, FI_COMPLETION));
					s++;
				}
			}
		}
	}
	/* all completions: nops sends and nops receives */
	int got_s = 0, got_r = 0;
	for (int i = 0; i < 2 * nops; i++) {
		struct fx_comp c;
		fx_wait(&fx, 1, &c, TMO);
		struct fx_layout *l = c.op_context;
		if (l >= snd && l < snd + nops) {
			got_s++;
			continue;
		}
		FT_CHECK(l >= rcv && l < rcv + nops, "unknown context %p", c.op_context);
		int k = (int)(l - rcv);
		char what[96];
		snprintf(what, sizeof(what), "rank %d: message %d from rank %d (%zu bytes)", me,
			 rseq[k], rsrc[k], l->total);
		FT_CHECK(c.len == l->total, "%s: len %zu", what, c.len);
		FT_CHECK(c.tag == pair_tag(rsrc[k], rseq[k]), "%s: tag", what);
		FT_CHECK(c.src == fx.peers[rsrc[k]], "%s: src_addr %llu want %llu", what,
			 (unsigned long long)c.src, (unsigned long long)fx.peers[rsrc[k]]);
		fx_layout_check(l, pair_seed(rsrc[k], me, rseq[k]), l->total, 1, what);
		got_r++;
	}
	FT_CHECK(got_s == nops && got_r == nops, "sends %d receives %d of %d", got_s, got_r, nops);
	fx_pbarrier(ctx, &fx);
	fx_expect_none(&fx, 20);
	for (int i = 0; i < nops; i++) {
		fx_layout_free(&snd[i]);
		fx_layout_free(&rcv[i]);
	}
	free(snd);
	free(rcv);
	free(rsrc);
	free(rseq);
	fx_close(&fx);
	return 0;
}

/* ---- untagged all-to-all, senders identified through FI_SOURCE ------------------------------ */

static int t_untagged(struct ft_ctx *ctx, void *arg)
{
	const struct mp *m = arg;
	struct fx fx;
	struct fx_opts o = {.caps = FI_MSG | FI_SOURCE, .scheme = m->scheme};
	fx_open(ctx, &o, &fx);
	int n = ctx->size, me = ctx->rank;
	int nops = (n - 1) * K;
	const size_t maxsz = 400000;
	struct fx_rbuf *rb = calloc((size_t)nops, sizeof(*rb));
	uint8_t **sb = calloc((size_t)nops, sizeof(*sb));
	for (int i = 0; i < nops; i++) {
		fx_rbuf_init(&rb[i], maxsz);
		FX_OK(&fx, fi_recv(fx.ep, rb[i].buf, maxsz, NULL, FI_ADDR_UNSPEC, &rb[i]));
	}
	fx_pbarrier(ctx, &fx);
	int s = 0;
	for (int d = 1; d < n; d++) {
		int dst = (me + d) % n;
		for (int q = 0; q < K; q++) {
			size_t sz = pair_size(me, dst, q);
			sb[s] = fx_alloc(sz);
			fx_fill(sb[s], sz, pair_seed(me, dst, q), 0);
			FX_OK(&fx, fi_send(fx.ep, sb[s], sz, NULL, fx.peers[dst], sb[s]));
			s++;
		}
	}
	/* which message it is: the not yet seen one of that source whose size and bytes match
	 * (completion order may differ from match order: rendezvous completes later) */
	bool seen[FX_MAX_RANKS][K] = {{false}};
	for (int i = 0; i < 2 * nops; i++) {
		struct fx_comp c;
		fx_wait(&fx, 1, &c, TMO);
		struct fx_rbuf *r = c.op_context;
		if (!(r >= rb && r < rb + nops))
			continue; /* a send */
		int src = -1;
		for (int p = 0; p < n; p++)
			if (fx.peers[p] == c.src)
				src = p;
		FT_CHECK(src >= 0 && src != me, "rank %d: src_addr %llu is no peer", me,
			 (unsigned long long)c.src);
		int q = -1;
		for (int k = 0; k < K && q < 0; k++)
			if (!seen[src][k] && c.len == pair_size(src, me, k) &&
			    fx_find_bad(r->buf, c.len, pair_seed(src, me, k), 0) == (size_t)-1)
				q = k;
		FT_CHECK(q >= 0,
			 "rank %d: %zu-byte message named as from rank %d matches none of its "
			 "messages (wrong bytes or wrong FI_SOURCE)",
			 me, c.len, src);
		seen[src][q] = true;
		char what[96];
		snprintf(what, sizeof(what), "rank %d: untagged message %d from rank %d", me, q, src);
		fx_rbuf_check(r, pair_seed(src, me, q), c.len, what);
	}
	for (int p = 0; p < n; p++)
		for (int k = 0; k < K; k++)
			FT_CHECK(p == me || seen[p][k], "rank %d: message %d from %d missing", me, k, p);
	fx_pbarrier(ctx, &fx);
	for (int i = 0; i < nops; i++) {
		fx_rbuf_free(&rb[i]);
		free(sb[i]);
	}
	free(rb);
	free(sb);
	fx_close(&fx);
	return 0;
}

/* ---- RMA all-to-all ------------------------------------------------------------------------ */

static int t_rma(struct ft_ctx *ctx, void *arg)
{
	const struct mp *m = arg;
	struct fx fx;
	struct fx_opts o = {.scheme = m->scheme,
			    .caps = FI_RMA | FI_MSG | FI_READ | FI_WRITE | FI_REMOTE_READ |
				    FI_REMOTE_WRITE,
			    .mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR};
	fx_open(ctx, &o, &fx);
	int n = ctx->size, me = ctx->rank;
	const size_t slot = 64 * 1024;
	uint8_t *region = fx_alloc(slot * (size_t)n);
	fx_fill(region, slot * (size_t)n, 5, 0);
	struct fx_rkey mine, *all = malloc((size_t)n * sizeof(*all));
	struct fid_mr *mr = fx_mr_reg(&fx, region, slot * (size_t)n,
				      FI_REMOTE_READ | FI_REMOTE_WRITE, 0, &mine);
	ft_allgather(ctx, &mine, sizeof(mine), all);
	/* write my slot in every peer: 16 rma_iov pieces of slot/16 with the gaps left alone */
	uint8_t *src = fx_alloc(slot);
	fx_fill(src, slot, 100 + (uint64_t)me, 0);
	for (int d = 1; d < n; d++) {
		int dst = (me + d) % n;
		struct fi_rma_iov riov[16];
		struct iovec iov = {src, slot / 2};
		for (int k = 0; k < 16; k++)
			riov[k] = (struct fi_rma_iov){all[dst].base + (size_t)me * slot +
							      (size_t)k * (slot / 16),
						      slot / 32, all[dst].key};
		struct fi_msg_rma mm = {.msg_iov = &iov, .iov_count = 1, .addr = fx.peers[dst],
					.rma_iov = riov, .rma_iov_count = 16, .context = NULL};
		FX_OK(&fx, fi_writemsg(fx.ep, &mm, FI_COMPLETION));
	}
	fx_wait(&fx, (size_t)(n - 1), NULL, TMO);
	fx_pbarrier(ctx, &fx);
	for (int s = 0; s < n; s++) {
		if (s == me)
			continue;
		for (int k = 0; k < 16; k++) {
			uint8_t *p = region + (size_t)s * slot + (size_t)k * (slot / 16);
			FX_CHECK_PATTERN(p, slot / 32, 100 + (uint64_t)s, (size_t)k * (slot / 32),
					 "rank %d: slot of rank %d piece %d", me, s, k);
			FX_CHECK_PATTERN(p + slot / 32, slot / 32, 5,
					 (size_t)s * slot + (size_t)k * (slot / 16) + slot / 32,
					 "rank %d: gap after piece %d of rank %d's slot", me, k, s);
		}
	}
	/* read back my pieces from every peer */
	uint8_t *back = fx_alloc(slot / 2 * (size_t)n);
	for (int d = 1; d < n; d++) {
		int dst = (me + d) % n;
		struct fi_rma_iov riov[16];
		struct iovec iov = {back + (size_t)dst * (slot / 2), slot / 2};
		for (int k = 0; k < 16; k++)
			riov[k] = (struct fi_rma_iov){all[dst].base + (size_t)me * slot +
							      (size_t)k * (slot / 16),
						      slot / 32, all[dst].key};
		struct fi_msg_rma mm = {.msg_iov = &iov, .iov_count = 1, .addr = fx.peers[dst],
					.rma_iov = riov, .rma_iov_count = 16};
		FX_OK(&fx, fi_readmsg(fx.ep, &mm, FI_COMPLETION));
	}
	fx_wait(&fx, (size_t)(n - 1), NULL, TMO);
	for (int d = 1; d < n; d++) {
		int dst = (me + d) % n;
		FX_CHECK_PATTERN(back + (size_t)dst * (slot / 2), slot / 2, 100 + (uint64_t)me, 0,
				 "rank %d: read back from rank %d", me, dst);
	}
	fx_pbarrier(ctx, &fx);
	fi_close(&mr->fid);
	free(region);
	free(src);
	free(back);
	free(all);
	fx_close(&fx);
	return 0;
}

static const struct mp mp16 = {NULL, 16};
static const struct mp mp16_pack = {"pack", 16};
static const struct mp mp17_sgl = {"sgl", 17};
static const struct mp mp16_umr = {"umr", 16};
static const struct mp mp24 = {NULL, 24};

static const struct fx_test tests[] = {
	{"tagged_16", 16, 120, t_tagged, (void *)&mp16},
	{"tagged_16_pack", 16, 120, t_tagged, (void *)&mp16_pack},
	{"tagged_17_sgl", 17, 120, t_tagged, (void *)&mp17_sgl},
	{"tagged_16_umr", 16, 120, t_tagged, (void *)&mp16_umr},
	{"untagged_16", 16, 120, t_untagged, (void *)&mp16},
	{"tagged_24", 24, 120, t_tagged, (void *)&mp24},
	{"rma_16", 16, 120, t_rma, (void *)&mp16},
};

int main(int argc, char **argv)
{
	return fx_main(argc, argv, tests, sizeof(tests) / sizeof(tests[0]));
}
