/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Randomised property test: the sender's and the receiver's iov lists cut the same byte stream
 * differently (1 to 1024 entries each side, random gaps, random sizes from 1 B to a few MiB,
 * eager and rendezvous), for untagged messages, tagged messages, fi_writemsg and fi_readmsg
 * (random local iov and random rma_iov lists over a registered target), under each forced
 * scheme.  Every delivered byte is checked; every gap byte, every byte past the delivered
 * length and the whole source must be untouched.  Messages also check the scheme the receiver
 * used (eager up to the eager limit, else the forced one).
 *
 * Environment:
 *   FT_PROP_SEED     run seed (default: random, printed)
 *   FT_PROP_CASES    cases per operation per scheme (default 800)
 *   FT_PROP_FIRST    index of the first case (default 0)
 *   FT_PROP_OPS      subset of "msg,tagged,write,read,batch" (batch: 2 to 8 tagged messages
 *                    in flight at once, posted in another order than sent)
 *   FT_PROP_MAX      largest total size in bytes (default 4 MiB)
 * A case depends only on (seed, operation, index), so the same cases run under every scheme
 * and one case can be replayed alone with FT_PROP_FIRST=i FT_PROP_CASES=1 FT_PROP_OPS=op.
 */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fx.h"

#define TMO 30000

enum { OP_MSG, OP_TAGGED, OP_WRITE, OP_READ, OP_BATCH, OP_COUNT };
static const char *op_names[] = {"msg", "tagged", "write", "read", "batch"};

static uint64_t run_seed;
static long ncases, first_case;
static size_t max_total;
static bool op_enabled[OP_COUNT];

#define STREAM_PAD (1u << 16)
static uint8_t *stream;   /* max_total + STREAM_PAD pattern bytes shared by both ranks */
static uint8_t *canary;   /* CANARY_LEN pattern bytes for gaps and untouched memory */
static size_t canary_len;

/* ---- what a case is ---------------------------------------------------------------------- */

struct pcase {
	int op;
	long idx;
	uint64_t seed;
	size_t total;        /* bytes sent / written / read */
	size_t extra;        /* receive buffer beyond total (messages) */
	size_t scount, rcount;
	size_t sgap, rgap;   /* max gaps */
	size_t soff;         /* offset of the data in the stream */
	bool unexpected;     /* messages: send before the receive is posted */
	bool cq_data;
	bool repeat;         /* reuse the previous case's layouts (same op) */
	uint64_t tag, data;
	uint64_t rng;        /* layouts are drawn from here, identically on both ranks */
};

static size_t pick_gap(uint64_t *rng)
{
	switch (ft_rand(rng) % 4) {
	case 0: return 0;
	case 1: return 1 + ft_rand(rng) % 16;
	case 2: return 17 + ft_rand(rng) % 240;
	default: return 257 + ft_rand(rng) % 3840;
	}
}

static void make_case(struct pcase *c, int op, long idx)
{
	memset(c, 0, sizeof(*c));
	c->op = op;
	c->idx = idx;
	uint64_t s = run_seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(idx + 1)) ^
		     ((uint64_t)(op + 1) << 56);
	for (int i = 0; i < 4; i++)
		ft_rand(&s);
	if (!s)
		s = 1;
	c->seed = s;
	size_t eager = fx_eager_size();
	unsigned r = (unsigned)(ft_rand(&s) % 100);
	if (r < 10)
		c->total = 1 + ft_rand(&s) % 64;
	else if (r < 40)
		c->total = fx_rand_size(&s, 1, eager);
	else if (r < 48)
		c->total = eager - 4 + ft_rand(&s) % 9;
	else
		c->total = fx_rand_size(&s, eager + 1, max_total);
	if (c->total > max_total)
		c->total = max_total;
	size_t lim = c->total < 1024 ? c->total : 1024;
	/* counts: log-uniform, with some weight on the extremes */
	for (int side = 0; side < 2; side++) {
		size_t n;
		unsigned k = (unsigned)(ft_rand(&s) % 10);
		if (k == 0)
			n = 1;
		else if (k == 1)
			n = lim;
		else
			n = fx_rand_count(&s, lim);
		if (side == 0)
			c->scount = n;
		else
			c->rcount = n;
	}
	c->sgap = pick_gap(&s);
	c->rgap = pick_gap(&s);
	c->extra = (op <= OP_TAGGED && ft_rand(&s) % 6 == 0) ? 1 + ft_rand(&s) % 1000 : 0;
	c->soff = ft_rand(&s) % STREAM_PAD;
	c->unexpected = ft_rand(&s) & 1;
	c->cq_data = ft_rand(&s) % 4 == 0;
	c->repeat = ft_rand(&s) % 4 == 0;
	c->tag = ft_rand(&s) & 0x00ffffffffffffffull;
	c->data = ft_rand(&s);
	c->rng = ft_rand(&s) | 1;
}

static char case_desc[512];
static const char *cur_scheme;

static void describe(const struct pcase *c, const struct fx_layout *s, const struct fx_layout *r)
{
	snprintf(case_desc, sizeof(case_desc),
		 "case %s #%ld: %zu bytes, %zu -> %zu entries (max gaps %zu / %zu), extra %zu, %s, "
		 "cq_data %d, repeat %d, scheme %s\n  replay the run:  FT_PROP_SEED=0x%llx ft_property prop_%s\n"
		 "  replay the case: FT_PROP_SEED=0x%llx FT_PROP_FIRST=%ld FT_PROP_CASES=1 "
		 "FT_PROP_OPS=%s ft_property prop_%s",
		 op_names[c->op], c->idx, c->total, s ? s->count : 0, r ? r->count : 0, c->sgap,
		 c->rgap, c->extra, c->unexpected ? "unexpected" : "posted", c->cq_data, c->repeat, cur_scheme,
		 (unsigned long long)run_seed, cur_scheme, (unsigned long long)run_seed, c->idx,
		 op_names[c->op], cur_scheme);
}

static void print_case_at_exit(void)
{
	if (case_desc[0])
		fprintf(stderr, "FAILED IN %s\n", case_desc);
}

/* ---- layout helpers on the shared stream / canary --------------------------------------- */

static void lay_canary(struct fx_layout *l)
{
	FT_CHECK(l->backing <= canary_len, "layout larger than the canary");
	memcpy(l->base, canary, l->backing);
}

static void lay_data(struct fx_layout *l, const uint8_t *src)
{
	size_t s = 0;
	for (size_t i = 0; i < l->count; i++) {
		memcpy(l->base + l->off[i], src + s, l->len[i]);
		s += l->len[i];
	}
}

/* Check: stream bytes [0, nbytes) of src in the entries, canary everywhere else. */
static void lay_verify(const struct fx_layout *l, const uint8_t *src, size_t nbytes,
		       const char *what)
{
	size_t s = 0, pos = 0;
	for (size_t i = 0; i < l->count; i++) {
		if (memcmp(l->base + pos, canary + pos, l->off[i] - pos)) {
			size_t b = pos;
			while (l->base[b] == canary[b])
				b++;
			FT_CHECK(0, "%s: gap byte at offset %zu (before entry %zu) overwritten", what, b,
				 i);
		}
		size_t d = nbytes > s ? (nbytes - s < l->len[i] ? nbytes - s : l->len[i]) : 0;
		if (memcmp(l->base + l->off[i], src + s, d)) {
			size_t b = 0;
			while (l->base[l->off[i] + b] == src[s + b])
				b++;
			FT_CHECK(0,
				 "%s: stream byte %zu wrong (entry %zu of %zu at offset %zu, byte %zu of "
				 "%zu): got 0x%02x want 0x%02x",
				 what, s + b, i, l->count, l->off[i], b, l->len[i],
				 l->base[l->off[i] + b], src[s + b]);
		}
		if (memcmp(l->base + l->off[i] + d, canary + l->off[i] + d, l->len[i] - d)) {
			size_t b = d;
			while (l->base[l->off[i] + b] == canary[l->off[i] + b])
				b++;
			FT_CHECK(0, "%s: byte %zu of entry %zu beyond the %zu delivered bytes written",
				 what, b, i, nbytes);
		}
		s += l->len[i];
		pos = l->off[i] + l->len[i];
	}
	if (memcmp(l->base + pos, canary + pos, l->backing - pos)) {
		size_t b = pos;
		while (l->base[b] == canary[b])
			b++;
		FT_CHECK(0, "%s: tail byte at offset %zu overwritten", what, b);
	}
}

/* ---- the per-scheme run ------------------------------------------------------------------ */

struct prun {
	struct ft_ctx *ctx;
	struct fx fx;
	int forced;
	/* RMA target region on rank 1 */
	uint8_t *region;
	size_t region_len;
	struct fid_mr *mr;
	struct fx_rkey rk;
	/* counts */
	uint64_t cases[OP_COUNT];
	uint64_t bytes;
	uint64_t scheme_seen[FI_DDTX_SCHEME_COUNT];
	uint64_t zero_copy_entries_max;
};

/* The previous case's layouts per op, kept for repeats. */
static struct fx_layout prev_a[OP_COUNT], prev_b[OP_COUNT];
static size_t prev_shift[OP_COUNT];
static bool have_prev[OP_COUNT];

/* Layouts of this case: new ones, or the previous case's (same addresses) for a repeat. */
static void case_layouts(struct pcase *c, struct fx_layout *a, struct fx_layout *b, size_t btotal,
			 uint64_t *rng)
{
	if (c->repeat && have_prev[c->op]) {
		*a = prev_a[c->op];
		*b = prev_b[c->op];
		c->total = a->total;
		c->extra = b->total - a->total;
		c->scount = a->count;
		c->rcount = b->count;
		return;
	}
	if (have_prev[c->op]) {
		fx_layout_free(&prev_a[c->op]);
		fx_layout_free(&prev_b[c->op]);
		have_prev[c->op] = false;
	}
	fx_layout_make(a, c->total, c->scount, c->sgap, rng);
	fx_layout_make(b, btotal, c->rcount, c->rgap, rng);
}

static void keep_layouts(const struct pcase *c, const struct fx_layout *a,
			 const struct fx_layout *b)
{
	prev_a[c->op] = *a;
	prev_b[c->op] = *b;
	have_prev[c->op] = true;
}

static void run_msg(struct prun *p, struct pcase *c)
{
	struct fx *fx = &p->fx;
	struct fx_layout s, r;
	uint64_t rng = c->rng;
	case_layouts(c, &s, &r, c->total + c->extra, &rng);
	describe(c, &s, &r);
	const uint8_t *src = stream + c->soff;
	bool tagged = c->op == OP_TAGGED;
	if (p->ctx->rank == 0) {
		lay_canary(&s);
		lay_data(&s, src);
		if (!c->unexpected)
			fx_pbarrier(p->ctx, fx);
		uint64_t flags = FI_COMPLETION | (c->cq_data ? FI_REMOTE_CQ_DATA : 0);
		if (tagged) {
			struct fi_msg_tagged m = {.msg_iov = s.iov, .desc = s.desc, .iov_count = s.count,
						  .addr = fx->peers[1], .tag = c->tag, .context = &s,
						  .data = c->data};
			FX_OK(fx, fi_tsendmsg(fx->ep, &m, flags));
		} else {
			struct fi_msg m = {.msg_iov = s.iov, .desc = s.desc, .iov_count = s.count,
					   .addr = fx->peers[1], .context = &s, .data = c->data};
			FX_OK(fx, fi_sendmsg(fx->ep, &m, flags));
		}
		if (c->unexpected)
			fx_pbarrier(p->ctx, fx);
		struct fx_comp cc;
		fx_wait(fx, 1, &cc, TMO);
		FT_CHECK(cc.op_context == &s, "send completion context");
		lay_verify(&s, src, c->total, "send buffer after the send (must be unchanged)");
	} else {
		struct fi_ddtx_stats s0, s1;
		lay_canary(&r);
		fx_stats(fx, &s0);
		if (c->unexpected)
			fx_pbarrier(p->ctx, fx);
		if (tagged) {
			struct fi_msg_tagged m = {.msg_iov = r.iov, .desc = r.desc, .iov_count = r.count,
						  .addr = FI_ADDR_UNSPEC, .tag = c->tag,
						  .context = &r};
			FX_OK(fx, fi_trecvmsg(fx->ep, &m, FI_COMPLETION));
		} else {
			struct fi_msg m = {.msg_iov = r.iov, .desc = r.desc, .iov_count = r.count,
					   .addr = FI_ADDR_UNSPEC, .context = &r};
			FX_OK(fx, fi_recvmsg(fx->ep, &m, FI_COMPLETION));
		}
		if (!c->unexpected)
			fx_pbarrier(p->ctx, fx);
		struct fx_comp cc;
		fx_wait(fx, 1, &cc, TMO);
		FT_CHECK(cc.op_context == &r, "receive completion context");
		FT_CHECK(cc.len == c->total, "receive completion len %zu, want %zu", cc.len, c->total);
		FT_CHECK(cc.flags & FI_RECV, "receive flags 0x%llx", (unsigned long long)cc.flags);
		if (tagged)
			FT_CHECK(cc.tag == c->tag, "tag 0x%llx", (unsigned long long)cc.tag);
		if (c->cq_data)
			FT_CHECK((cc.flags & FI_REMOTE_CQ_DATA) && cc.data == c->data,
				 "remote CQ data: flags 0x%llx data 0x%llx", (unsigned long long)cc.flags,
				 (unsigned long long)cc.data);
		lay_verify(&r, src, c->total, "receive buffer");
		fx_stats(fx, &s1);
		fx_check_scheme(&s0, &s1, c->total, p->forced, "scheme");
		p->scheme_seen[s1.last_scheme]++;
	}
	p->bytes += c->total;
	keep_layouts(c, &s, &r);
}

static void run_rma(struct prun *p, struct pcase *c)
{
	struct fx *fx = &p->fx;
	struct fx_layout l, rl;
	uint64_t rng = c->rng;
	bool rep = c->repeat && have_prev[c->op];
	case_layouts(c, &l, &rl, c->total, &rng);
	FT_CHECK(rl.backing <= p->region_len, "remote layout larger than the region");
	size_t shift = rep ? prev_shift[c->op] : ft_rand(&rng) % (p->region_len - rl.backing + 1);
	prev_shift[c->op] = shift;
	describe(c, &l, &rl);
	const uint8_t *src = stream + c->soff;
	bool is_read = c->op == OP_READ;
	if (p->ctx->rank == 0) {
		struct fi_rma_iov *riov = malloc(rl.count * sizeof(*riov));
		for (size_t k = 0; k < rl.count; k++)
			riov[k] = (struct fi_rma_iov){fx_raddr(&p->rk, shift + rl.off[k]), rl.len[k],
						      p->rk.key};
		lay_canary(&l);
		if (!is_read)
			lay_data(&l, src);
		fx_pbarrier(p->ctx, fx); /* A: the target is ready */
		struct fi_msg_rma m = {.msg_iov = l.iov, .desc = l.desc, .iov_count = l.count,
				       .addr = fx->peers[1], .rma_iov = riov,
				       .rma_iov_count = rl.count, .context = &l};
		if (is_read)
			FX_OK(fx, fi_readmsg(fx->ep, &m, FI_COMPLETION));
		else
			FX_OK(fx, fi_writemsg(fx->ep, &m, FI_COMPLETION));
		struct fx_comp cc;
		fx_wait(fx, 1, &cc, TMO);
		FT_CHECK(cc.op_context == &l, "RMA completion context");
		lay_verify(&l, src, c->total, is_read ? "fi_readmsg destination"
						       : "fi_writemsg source (must be unchanged)");
		fx_pbarrier(p->ctx, fx); /* B: the target may check */
		fx_pbarrier(p->ctx, fx); /* C: the target restored its region */
		free(riov);
	} else {
		/* rl.base is unused on the target: the region is the backing, at `shift` */
		uint8_t *win = p->region + shift;
		if (is_read) {
			size_t s = 0;
			for (size_t k = 0; k < rl.count; k++) {
				memcpy(win + rl.off[k], src + s, rl.len[k]);
				s += rl.len[k];
			}
		}
		fx_pbarrier(p->ctx, fx); /* A */
		fx_pbarrier(p->ctx, fx); /* B */
		/* the window must hold the stream in the rma_iov ranges and the canary elsewhere
		 * (the canary of the region is the canary pattern at region offsets) */
		struct fx_layout view = rl;
		uint8_t *save = view.base;
		view.base = win;
		/* lay_verify compares against canary[offset] with offsets relative to base; the
		 * region's canary is canary[shift + offset]: compare through a shifted copy */
		uint8_t *tmp = canary;
		canary = tmp + shift;
		lay_verify(&view, src, c->total,
			   is_read ? "target region after fi_readmsg (must be unchanged)"
				   : "target region after fi_writemsg");
		canary = tmp;
		view.base = save;
		/* every 32 cases, the whole region */
		if (c->idx % 32 == 31 || c->idx == first_case + ncases - 1) {
			memcpy(win, canary + shift, rl.backing); /* restore first */
			if (memcmp(p->region, canary, p->region_len)) {
				size_t b = 0;
				while (p->region[b] == canary[b])
					b++;
				FT_CHECK(0, "target region byte %zu changed outside every rma_iov", b);
			}
		}
		memcpy(win, canary + shift, rl.backing);
		fx_pbarrier(p->ctx, fx); /* C */
	}
	p->bytes += c->total;
	keep_layouts(c, &l, &rl);
}

/* 2 to 8 tagged messages in flight at once, received in another order than sent. */
static void run_batch(struct prun *p, struct pcase *c)
{
	struct fx *fx = &p->fx;
	uint64_t rng = c->rng;
	int n = 2 + (int)(ft_rand(&rng) % 7);
	struct fx_layout s[8], r[8];
	size_t soff[8];
	int sorder[8], rorder[8];
	size_t sum = 0;
	for (int j = 0; j < n; j++) {
		size_t eager = fx_eager_size();
		size_t t = (ft_rand(&rng) & 1) ? fx_rand_size(&rng, 1, eager)
					       : fx_rand_size(&rng, eager + 1, max_total / 4);
		size_t lim = t < 1024 ? t : 1024;
		fx_layout_make(&s[j], t, fx_rand_count(&rng, lim), pick_gap(&rng), &rng);
		fx_layout_make(&r[j], t, fx_rand_count(&rng, lim), pick_gap(&rng), &rng);
		soff[j] = ft_rand(&rng) % STREAM_PAD;
		sorder[j] = rorder[j] = j;
		sum += t;
	}
	for (int j = n - 1; j > 0; j--) {
		int a = (int)(ft_rand(&rng) % (uint64_t)(j + 1)), b = (int)(ft_rand(&rng) % (uint64_t)(j + 1));
		int t = sorder[j]; sorder[j] = sorder[a]; sorder[a] = t;
		t = rorder[j]; rorder[j] = rorder[b]; rorder[b] = t;
	}
	c->total = sum;
	c->scount = (size_t)n;
	c->rcount = (size_t)n;
	describe(c, NULL, NULL);
	if (p->ctx->rank == 0) {
		if (!c->unexpected)
			fx_pbarrier(p->ctx, fx);
		for (int k = 0; k < n; k++) {
			int j = sorder[k];
			lay_canary(&s[j]);
			lay_data(&s[j], stream + soff[j]);
			struct fi_msg_tagged m = {.msg_iov = s[j].iov, .desc = s[j].desc,
						  .iov_count = s[j].count, .addr = fx->peers[1],
						  .tag = c->tag + (uint64_t)j, .context = &s[j]};
			FX_OK(fx, fi_tsendmsg(fx->ep, &m, FI_COMPLETION));
		}
		if (c->unexpected)
			fx_pbarrier(p->ctx, fx);
		struct fx_comp cc[8];
		fx_wait(fx, (size_t)n, cc, TMO);
		for (int j = 0; j < n; j++)
			lay_verify(&s[j], stream + soff[j], s[j].total, "batch send buffer");
	} else {
		if (c->unexpected)
			fx_pbarrier(p->ctx, fx);
		for (int k = 0; k < n; k++) {
			int j = rorder[k];
			lay_canary(&r[j]);
			struct fi_msg_tagged m = {.msg_iov = r[j].iov, .desc = r[j].desc,
						  .iov_count = r[j].count, .addr = FI_ADDR_UNSPEC,
						  .tag = c->tag + (uint64_t)j, .context = &r[j]};
			FX_OK(fx, fi_trecvmsg(fx->ep, &m, FI_COMPLETION));
		}
		if (!c->unexpected)
			fx_pbarrier(p->ctx, fx);
		struct fx_comp cc[8];
		fx_wait(fx, (size_t)n, cc, TMO);
		for (int k = 0; k < n; k++) {
			int j = (int)((struct fx_layout *)cc[k].op_context - r);
			FT_CHECK(j >= 0 && j < n, "batch: bad context");
			FT_CHECK(cc[k].len == r[j].total && cc[k].tag == c->tag + (uint64_t)j,
				 "batch message %d: len %zu tag 0x%llx", j, cc[k].len,
				 (unsigned long long)cc[k].tag);
			char what[64];
			snprintf(what, sizeof(what), "batch message %d of %d (%zu bytes, %zu -> %zu)", j,
				 n, r[j].total, s[j].count, r[j].count);
			lay_verify(&r[j], stream + soff[j], r[j].total, what);
		}
	}
	p->bytes += sum;
	for (int j = 0; j < n; j++) {
		fx_layout_free(&s[j]);
		fx_layout_free(&r[j]);
	}
}

static int t_prop(struct ft_ctx *ctx, void *arg)
{
	const char *scheme = arg;
	cur_scheme = scheme;
	atexit(print_case_at_exit);
	struct prun *p = calloc(1, sizeof(*p));
	p->ctx = ctx;
	p->forced = fx_scheme_of(scheme);
	struct fx_opts o = {.caps = FI_MSG | FI_TAGGED | FI_RMA | FI_READ | FI_WRITE |
				    FI_REMOTE_READ | FI_REMOTE_WRITE,
			    .scheme = scheme,
			    /* caller keys and offsets (as MPICH) under auto and pack, provider
			     * keys and virtual addresses under sgl and umr */
			    .mr_mode = (p->forced == FI_DDTX_SCHEME_SGL ||
					p->forced == FI_DDTX_SCHEME_UMR)
					       ? FI_MR_PROV_KEY | FI_MR_VIRT_ADDR
					       : 0};
	fx_open(ctx, &o, &p->fx);

	/* shared stream and canary: identical in both ranks */
	stream = fx_alloc(max_total + STREAM_PAD);
	fx_fill(stream, max_total + STREAM_PAD, run_seed, 0);
	canary_len = 2 * max_total + 1024 * 4096 + (1u << 20);
	canary = fx_alloc(canary_len);
	fx_fill(canary, canary_len, run_seed ^ 0xCA1A5Full, 0);
	p->region_len = canary_len;
	struct fx_rkey mine = {0}, all[2];
	if (ctx->rank == 1) {
		p->region = fx_alloc(p->region_len);
		memcpy(p->region, canary, p->region_len);
		p->mr = fx_mr_reg(&p->fx, p->region, p->region_len, FI_REMOTE_READ | FI_REMOTE_WRITE,
				  0x8000000000000000ull | 0xB0B, &mine);
	}
	ft_allgather(ctx, &mine, sizeof(mine), all);
	p->rk = all[1];

	double t0 = ft_now();
	for (long i = first_case; i < first_case + ncases; i++) {
		for (int op = 0; op < OP_COUNT; op++) {
			if (!op_enabled[op])
				continue;
			struct pcase c;
			make_case(&c, op, i);
			if (op <= OP_TAGGED)
				run_msg(p, &c);
			else if (op == OP_BATCH)
				run_batch(p, &c);
			else
				run_rma(p, &c);
			p->cases[op]++;
			case_desc[0] = 0;
		}
	}
	fx_pbarrier(ctx, &p->fx);
	double dt = ft_now() - t0;
	if (ctx->rank == 1) {
		printf("  scheme %s: %llu msg, %llu tagged, %llu write, %llu read, %llu batch cases, %.1f MiB, "
		       "%.1f s; receiver schemes: eager %llu pack %llu sgl %llu umr %llu\n",
		       scheme, (unsigned long long)p->cases[0], (unsigned long long)p->cases[1],
		       (unsigned long long)p->cases[2], (unsigned long long)p->cases[3],
		       (unsigned long long)p->cases[4], p->bytes / 1048576.0, dt, (unsigned long long)p->scheme_seen[0],
		       (unsigned long long)p->scheme_seen[1], (unsigned long long)p->scheme_seen[2],
		       (unsigned long long)p->scheme_seen[3]);
		fi_close(&p->mr->fid);
	}
	fx_pbarrier(ctx, &p->fx);
	fx_close(&p->fx);
	return 0;
}

static const struct fx_test tests[] = {
	{"prop_auto", 2, 300, t_prop, "auto"},
	{"prop_pack", 2, 300, t_prop, "pack"},
	{"prop_sgl", 2, 300, t_prop, "sgl"},
	{"prop_umr", 2, 300, t_prop, "umr"},
};

int main(int argc, char **argv)
{
	fx_apply_env_args(argc, argv);
	const char *s = getenv("FT_PROP_SEED");
	if (s && *s) {
		run_seed = strtoull(s, NULL, 0);
	} else {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		run_seed = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)ts.tv_sec ^
			   ((uint64_t)getpid() << 32);
	}
	ncases = fx_env_long("FT_PROP_CASES", 800);
	first_case = fx_env_long("FT_PROP_FIRST", 0);
	max_total = (size_t)fx_env_long("FT_PROP_MAX", 4 << 20);
	if (max_total < fx_eager_size() + 16)
		max_total = fx_eager_size() + 16;
	const char *ops = getenv("FT_PROP_OPS");
	for (int op = 0; op < OP_COUNT; op++)
		op_enabled[op] = !ops || !*ops || strstr(ops, op_names[op]);
	printf("property test: FT_PROP_SEED=0x%llx FT_PROP_CASES=%ld FT_PROP_FIRST=%ld "
	       "FT_PROP_MAX=%zu FT_PROP_OPS=%s\n",
	       (unsigned long long)run_seed, ncases, first_case, max_total, ops ? ops : "(all)");
	return fx_main(argc, argv, tests, sizeof(tests) / sizeof(tests[0]));
}
