/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Tagged messages: the tsend/trecv families, posted and unexpected queues, ignore bits,
 * directed receive among several senders (with FI_SOURCE), FI_PEEK (FI_ENOMSG when absent),
 * FI_PEEK|FI_CLAIM then FI_CLAIM (into an iov and into a layout handle), FI_DISCARD, fi_cancel,
 * truncation under each scheme.
 */
#include <string.h>

#include "fx.h"

#define TMO 20000

static const struct fx_opts topts = {.caps = FI_TAGGED | FI_MSG};

static void check_trx(const struct fx_comp *c, void *ctx, size_t len, uint64_t tag,
		      const char *what)
{
	FT_CHECK(c->op_context == ctx, "%s: rx context %p, want %p", what, c->op_context, ctx);
	FT_CHECK((c->flags & (FI_RECV | FI_TAGGED)) == (FI_RECV | FI_TAGGED),
		 "%s: rx flags 0x%llx lack FI_RECV|FI_TAGGED", what, (unsigned long long)c->flags);
	FT_CHECK(c->len == len, "%s: rx len %zu, want %zu", what, c->len, len);
	FT_CHECK(c->tag == tag, "%s: rx tag 0x%llx, want 0x%llx", what,
		 (unsigned long long)c->tag, (unsigned long long)tag);
}
static void check_ttx(const struct fx_comp *c, void *ctx, const char *what)
{
	FT_CHECK(c->op_context == ctx, "%s: tx context %p, want %p", what, c->op_context, ctx);
	FT_CHECK((c->flags & (FI_SEND | FI_TAGGED)) == (FI_SEND | FI_TAGGED),
		 "%s: tx flags 0x%llx lack FI_SEND|FI_TAGGED", what, (unsigned long long)c->flags);
}

/* ---- every tagged call, eager and rendezvous ---------------------------------------------- */

enum { OP_TSEND, OP_TSENDV, OP_TSENDMSG, OP_TSENDDATA, OP_TSENDMSG_DATA, OP_TINJECT,
       OP_TINJECTDATA, OP_COUNT };
static const char *op_names[] = {"fi_tsend", "fi_tsendv", "fi_tsendmsg", "fi_tsenddata",
				 "fi_tsendmsg+FI_REMOTE_CQ_DATA", "fi_tinject", "fi_tinjectdata"};
enum { RX_TRECV, RX_TRECVV, RX_TRECVMSG, RX_COUNT };
static const char *rx_names[] = {"fi_trecv", "fi_trecvv", "fi_trecvmsg"};

static int t_family(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	fx_open(ctx, &topts, &fx);
	static const size_t sizes[] = {0, 1, 4096, 16384, 16385, 200000, 1 << 20};
	uint64_t rng = 0x7a6;
	int idx = 0;
	for (int op = 0; op < OP_COUNT; op++) {
		for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
			size_t size = sizes[si];
			bool inject = op == OP_TINJECT || op == OP_TINJECTDATA;
			if (inject && size > 4096)
				continue;
			int rx = idx % RX_COUNT;
			bool has_data = op == OP_TSENDDATA || op == OP_TSENDMSG_DATA ||
					op == OP_TINJECTDATA;
			uint64_t tag = 0x100000000ull * (uint64_t)(op + 1) + si;
			uint64_t data = 0xDA7A000000000000ull | (uint64_t)idx;
			uint64_t seed = 1100 + (uint64_t)idx;
			struct fx_layout s, r;
			bool vec_tx = op == OP_TSENDV || op == OP_TSENDMSG || op == OP_TSENDMSG_DATA;
			fx_layout_make(&s, size, vec_tx ? fx_rand_count(&rng, 1024) : 1, 33, &rng);
			fx_layout_make(&r, size, rx != RX_TRECV ? fx_rand_count(&rng, 1024) : 1, 45,
				       &rng);
			char what[160];
			snprintf(what, sizeof(what), "%s (%zu entries) -> %s (%zu entries), %zu bytes",
				 op_names[op], s.count, rx_names[rx], r.count, size);
			bool unexpected = idx & 1;
			idx++;
			struct fx_comp c;
			if (ctx->rank == 0) {
				fx_layout_canary(&s, 5);
				fx_layout_data(&s, seed);
				if (!unexpected)
					fx_pbarrier(ctx, &fx);
				fi_addr_t dst = fx.peers[1];
				ssize_t ret;
				struct fi_msg_tagged m = {.msg_iov = s.iov, .desc = s.desc,
							  .iov_count = s.count, .addr = dst,
							  .tag = tag, .context = &s, .data = data};
				switch (op) {
				case OP_TSEND:
					ret = FX_POST(&fx, fi_tsend(fx.ep, s.iov[0].iov_base, size,
								    NULL, dst, tag, &s));
					break;
				case OP_TSENDV:
					ret = FX_POST(&fx, fi_tsendv(fx.ep, s.iov, s.desc, s.count,
								     dst, tag, &s));
					break;
				case OP_TSENDMSG:
					ret = FX_POST(&fx, fi_tsendmsg(fx.ep, &m, FI_COMPLETION));
					break;
				case OP_TSENDDATA:
					ret = FX_POST(&fx, fi_tsenddata(fx.ep, s.iov[0].iov_base, size,
									NULL, data, dst, tag, &s));
					break;
				case OP_TSENDMSG_DATA:
					ret = FX_POST(&fx, fi_tsendmsg(fx.ep, &m,
								       FI_COMPLETION |
									       FI_REMOTE_CQ_DATA));
					break;
				case OP_TINJECT:
					ret = FX_POST(&fx, fi_tinject(fx.ep, s.iov[0].iov_base, size,
								      dst, tag));
					break;
				default:
					ret = FX_POST(&fx, fi_tinjectdata(fx.ep, s.iov[0].iov_base,
									  size, data, dst, tag));
					break;
				}
				FT_CHECK(ret == 0, "%s: %s", what, fi_strerror((int)-ret));
				if (inject) /* buffer reusable at once */
					memset(s.base, 0x5A, s.backing);
				if (unexpected)
					fx_pbarrier(ctx, &fx);
				if (!inject) {
					fx_wait(&fx, 1, &c, TMO);
					check_ttx(&c, &s, what);
					fx_layout_check(&s, seed, size, 5, "send buffer after send");
				}
			} else {
				fx_layout_canary(&r, 6);
				if (unexpected)
					fx_pbarrier(ctx, &fx);
				ssize_t ret;
				struct fi_msg_tagged m = {.msg_iov = r.iov, .desc = r.desc,
							  .iov_count = r.count,
							  .addr = FI_ADDR_UNSPEC, .tag = tag,
							  .context = &r};
				if (rx == RX_TRECV)
					ret = FX_POST(&fx, fi_trecv(fx.ep, r.iov[0].iov_base, size,
								    NULL, FI_ADDR_UNSPEC, tag, 0,
								    &r));
				else if (rx == RX_TRECVV)
					ret = FX_POST(&fx, fi_trecvv(fx.ep, r.iov, r.desc, r.count,
								     FI_ADDR_UNSPEC, tag, 0, &r));
				else
					ret = FX_POST(&fx, fi_trecvmsg(fx.ep, &m, FI_COMPLETION));
				FT_CHECK(ret == 0, "%s: posting receive: %s", what,
					 fi_strerror((int)-ret));
				if (!unexpected)
					fx_pbarrier(ctx, &fx);
				fx_wait(&fx, 1, &c, TMO);
				check_trx(&c, &r, size, tag, what);
				fx_layout_check(&r, seed, size, 6, what);
				if (has_data) {
					FT_CHECK(c.flags & FI_REMOTE_CQ_DATA,
						 "%s: FI_REMOTE_CQ_DATA flag missing", what);
					FT_CHECK(c.data == data, "%s: data 0x%llx want 0x%llx", what,
						 (unsigned long long)c.data,
						 (unsigned long long)data);
				} else {
					FT_CHECK(!(c.flags & FI_REMOTE_CQ_DATA),
						 "%s: FI_REMOTE_CQ_DATA without data", what);
				}
			}
			fx_layout_free(&s);
			fx_layout_free(&r);
		}
	}
	fx_pbarrier(ctx, &fx);
	fx_expect_none(&fx, 100); /* tinject produced no completions */
	fx_close(&fx);
	return 0;
}

/* ---- posted vs unexpected queues with many tags ------------------------------------------ */

static int t_queues(struct ft_ctx *ctx, void *arg)
{
	int mode = (int)(intptr_t)arg; /* 0 posted, 1 unexpected, 2 half and half */
	struct fx fx;
	fx_open(ctx, &topts, &fx);
	enum { N = 48 };
	size_t sizes[N];
	uint64_t rng = 4242 + (uint64_t)mode;
	for (int i = 0; i < N; i++)
		sizes[i] = (i % 3 == 0) ? fx_rand_size(&rng, 16385, 3 << 20)
					: fx_rand_size(&rng, 0, 16384);
	/* receive order: a permutation */
	int perm[N];
	for (int i = 0; i < N; i++)
		perm[i] = i;
	for (int i = N - 1; i > 0; i--) {
		int j = (int)(ft_rand(&rng) % (uint64_t)(i + 1));
		int t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	if (ctx->rank == 0) {
		uint8_t *buf[N];
		fx_pbarrier(ctx, &fx); /* receiver posted (all, none or half) */
		for (int i = 0; i < N; i++) {
			buf[i] = fx_alloc(sizes[i]);
			fx_fill(buf[i], sizes[i], 2000 + i, 0);
			FX_OK(&fx, fi_tsend(fx.ep, buf[i], sizes[i], NULL, fx.peers[1],
					    0xABC00000ull + i, buf[i]));
		}
		fx_pbarrier(ctx, &fx); /* all sent (eager ones are unexpected now) */
		fx_wait(&fx, N, NULL, TMO);
		for (int i = 0; i < N; i++)
			free(buf[i]);
	} else {
		struct fx_rbuf r[N];
		int first = mode == 0 ? N : mode == 1 ? 0 : N / 2;
		for (int k = 0; k < first; k++) {
			int i = perm[k];
			fx_rbuf_init(&r[i], sizes[i]);
			FX_OK(&fx, fi_trecv(fx.ep, r[i].buf, sizes[i], NULL, FI_ADDR_UNSPEC,
					    0xABC00000ull + i, 0, &r[i]));
		}
		fx_pbarrier(ctx, &fx);
		fx_pbarrier(ctx, &fx);
		for (int k = first; k < N; k++) {
			int i = perm[k];
			fx_rbuf_init(&r[i], sizes[i]);
			FX_OK(&fx, fi_trecv(fx.ep, r[i].buf, sizes[i], NULL, FI_ADDR_UNSPEC,
					    0xABC00000ull + i, 0, &r[i]));
		}
		struct fx_comp c[N];
		fx_wait(&fx, N, c, TMO);
		bool seen[N] = {false};
		for (int k = 0; k < N; k++) {
			int i = (int)((struct fx_rbuf *)c[k].op_context - r);
			FT_CHECK(i >= 0 && i < N && !seen[i], "bad or repeated context");
			seen[i] = true;
			char what[64];
			snprintf(what, sizeof(what), "tag %d (%zu bytes)", i, sizes[i]);
			check_trx(&c[k], &r[i], sizes[i], 0xABC00000ull + i, what);
			fx_rbuf_check(&r[i], 2000 + i, sizes[i], what);
		}
		for (int i = 0; i < N; i++)
			fx_rbuf_free(&r[i]);
	}
	fx_pbarrier(ctx, &fx);
	fx_close(&fx);
	return 0;
}

/* ---- ignore bits ------------------------------------------------------------------------ */

static int t_ignore(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	fx_open(ctx, &topts, &fx);
	/* sent in this order; receives: A = 0x1200/ignore 0xff (posted first), B = exact 0x1300,
	 * C = 0x5500000000000000 / ignore 0x00ffffffffffffff */
	static const uint64_t stags[] = {0x1300, 0x1234, 0x55000000deadbeefull, 0x12ff};
	static const size_t ssize[] = {1000, 50000, 20000, 10};
	if (ctx->rank == 0) {
		fx_pbarrier(ctx, &fx);
		for (int i = 0; i < 4; i++) {
			uint8_t *b = fx_alloc(ssize[i]);
			fx_fill(b, ssize[i], 3000 + i, 0);
			FX_OK(&fx, fi_tsend(fx.ep, b, ssize[i], NULL, fx.peers[1], stags[i], b));
			struct fx_comp c;
			fx_wait(&fx, 1, &c, TMO);
			free(b);
		}
	} else {
		struct fx_rbuf a, b, c, d;
		fx_rbuf_init(&a, 60000);
		fx_rbuf_init(&b, 60000);
		fx_rbuf_init(&c, 60000);
		fx_rbuf_init(&d, 60000);
		FX_OK(&fx, fi_trecv(fx.ep, a.buf, a.len, NULL, FI_ADDR_UNSPEC, 0x1200, 0xff, &a));
		FX_OK(&fx, fi_trecv(fx.ep, b.buf, b.len, NULL, FI_ADDR_UNSPEC, 0x1300, 0, &b));
		FX_OK(&fx, fi_trecv(fx.ep, c.buf, c.len, NULL, FI_ADDR_UNSPEC,
				    0x5500000000000000ull, 0x00ffffffffffffffull, &c));
		FX_OK(&fx, fi_trecv(fx.ep, d.buf, d.len, NULL, FI_ADDR_UNSPEC, 0x1200, 0xff, &d));
		fx_pbarrier(ctx, &fx);
		struct fx_comp e[4];
		fx_wait(&fx, 4, e, TMO);
		for (int i = 0; i < 4; i++) {
			/* expected receive of send i: 0x1300 -> b, 0x1234 -> a, 0x55.. -> c,
			 * 0x12ff -> d */
			struct fx_rbuf *want = i == 0 ? &b : i == 1 ? &a : i == 2 ? &c : &d;
			struct fx_comp *got = NULL;
			for (int k = 0; k < 4; k++)
				if (e[k].op_context == want)
					got = &e[k];
			FT_CHECK(got, "no completion for the receive of send %d", i);
			char what[64];
			snprintf(what, sizeof(what), "send with tag 0x%llx",
				 (unsigned long long)stags[i]);
			check_trx(got, want, ssize[i], stags[i], what);
			fx_rbuf_check(want, 3000 + i, ssize[i], what);
		}
		fx_rbuf_free(&a);
		fx_rbuf_free(&b);
		fx_rbuf_free(&c);
		fx_rbuf_free(&d);
	}
	fx_pbarrier(ctx, &fx);
	fx_close(&fx);
	return 0;
}

/* ---- FI_DIRECTED_RECV among 3 senders, with FI_SOURCE ----------------------------------- */

static int t_directed(struct ft_ctx *ctx, void *arg)
{
	size_t size = (size_t)(intptr_t)arg;
	struct fx fx;
	struct fx_opts o = topts;
	o.caps = FI_TAGGED | FI_MSG | FI_DIRECTED_RECV | FI_SOURCE;
	fx_open(ctx, &o, &fx);
	FT_CHECK((fx.info->caps & (FI_DIRECTED_RECV | FI_SOURCE)) == (FI_DIRECTED_RECV | FI_SOURCE),
		 "FI_DIRECTED_RECV|FI_SOURCE not granted");
	const uint64_t tag = 77;
	for (int round = 0; round < 2; round++) { /* 0: receives posted first; 1: unexpected */
		if (ctx->rank != 0) {
			uint8_t *b = fx_alloc(size);
			fx_fill(b, size, 4000 + 10 * round + ctx->rank, 0);
			if (round == 0)
				fx_pbarrier(ctx, &fx);
			FX_OK(&fx, fi_tsend(fx.ep, b, size, NULL, fx.peers[0], tag, b));
			if (round == 1)
				fx_pbarrier(ctx, &fx);
			struct fx_comp c;
			fx_wait(&fx, 1, &c, TMO);
			free(b);
		} else {
			static const int order[2][3] = {{2, 3, 1}, {3, 1, 2}};
			struct fx_rbuf r[4];
			if (round == 1)
				fx_pbarrier(ctx, &fx);
			for (int k = 0; k < 3; k++) {
				int src = order[round][k];
				fx_rbuf_init(&r[src], size);
				FX_OK(&fx, fi_trecv(fx.ep, r[src].buf, size, NULL, fx.peers[src], tag,
						    0, &r[src]));
			}
			if (round == 0)
				fx_pbarrier(ctx, &fx);
			for (int k = 0; k < 3; k++) {
				struct fx_comp c;
				fx_wait(&fx, 1, &c, TMO);
				int src = (int)((struct fx_rbuf *)c.op_context - r);
				FT_CHECK(src >= 1 && src <= 3, "bad context");
				char what[96];
				snprintf(what, sizeof(what), "directed receive from rank %d (%s, %zu B)",
					 src, round ? "unexpected" : "posted", size);
				check_trx(&c, &r[src], size, tag, what);
				FT_CHECK(c.src == fx.peers[src], "%s: src_addr %llu, want %llu", what,
					 (unsigned long long)c.src,
					 (unsigned long long)fx.peers[src]);
				fx_rbuf_check(&r[src], 4000 + 10 * round + src, size, what);
			}
			for (int k = 1; k <= 3; k++)
				fx_rbuf_free(&r[k]);
		}
		fx_pbarrier(ctx, &fx);
	}
	fx_close(&fx);
	return 0;
}

/* ---- FI_PEEK ----------------------------------------------------------------------------- */

/* Peek until found (the message may still be on its way); returns the completion. */
static void peek_found(struct fx *fx, uint64_t tag, uint64_t flags, struct fi_context *pctx,
		       struct fx_comp *out, void *buf, size_t len)
{
	double t0 = ft_now();
	for (;;) {
		struct iovec iov = {buf, len};
		struct fi_msg_tagged m = {.msg_iov = &iov, .iov_count = buf ? 1 : 0,
					  .addr = FI_ADDR_UNSPEC, .tag = tag, .context = pctx};
		FX_OK(fx, fi_trecvmsg(fx->ep, &m, FI_PEEK | flags));
		struct fi_cq_err_entry e;
		int r = fx_wait_any(fx, out, &e, TMO);
		FT_CHECK(r != -FI_ETIMEDOUT, "FI_PEEK produced no completion");
		if (r == 1) {
			FT_CHECK(out->op_context == pctx, "peek completion context %p want %p",
				 out->op_context, (void *)pctx);
			return;
		}
		FT_CHECK(e.err == FI_ENOMSG, "FI_PEEK error %d (%s), want FI_ENOMSG", e.err,
			 fi_strerror(e.err));
		FT_CHECK(e.op_context == pctx, "FI_PEEK error context %p want %p", e.op_context,
			 (void *)pctx);
		FT_CHECK(ft_now() - t0 < 10, "FI_PEEK did not find a sent message within 10 s");
	}
}

static void peek_absent(struct fx *fx, uint64_t tag, const char *what)
{
	struct fi_context pc;
	struct fi_msg_tagged m = {.addr = FI_ADDR_UNSPEC, .tag = tag, .context = &pc};
	FX_OK(fx, fi_trecvmsg(fx->ep, &m, FI_PEEK));
	struct fi_cq_err_entry e;
	fx_wait_err(fx, &e, TMO);
	FT_CHECK(e.err == FI_ENOMSG, "%s: FI_PEEK error %d (%s), want FI_ENOMSG", what, e.err,
		 fi_strerror(e.err));
	FT_CHECK(e.op_context == &pc, "%s: FI_PEEK error context", what);
}

static int t_peek(struct ft_ctx *ctx, void *arg)
{
	size_t size = (size_t)(intptr_t)arg;
	struct fx fx;
	fx_open(ctx, &topts, &fx);
	const uint64_t tag = 0x9eec;
	const uint64_t data = 0x1234567890abcdefull;
	if (ctx->rank == 0) {
		uint8_t *b = fx_alloc(size);
		fx_fill(b, size, 5000, 0);
		fx_pbarrier(ctx, &fx); /* receiver peeked at nothing */
		FX_OK(&fx, fi_tsenddata(fx.ep, b, size, NULL, data, fx.peers[1], tag, b));
		fx_pbarrier(ctx, &fx);
		struct fx_comp c;
		fx_wait(&fx, 1, &c, TMO);
		free(b);
	} else {
		peek_absent(&fx, tag, "peek before anything was sent");
		fx_pbarrier(ctx, &fx);
		fx_pbarrier(ctx, &fx);
		peek_absent(&fx, tag + 1, "peek at another tag");
		struct fi_context pc;
		struct fx_comp c;
		peek_found(&fx, tag, 0, &pc, &c, NULL, 0);
		FT_CHECK((c.flags & (FI_RECV | FI_TAGGED)) == (FI_RECV | FI_TAGGED),
			 "peek flags 0x%llx", (unsigned long long)c.flags);
		FT_CHECK(c.len == size, "peek len %zu, want the message size %zu", c.len, size);
		FT_CHECK(c.tag == tag, "peek tag 0x%llx", (unsigned long long)c.tag);
		FT_CHECK((c.flags & FI_REMOTE_CQ_DATA) && c.data == data,
			 "peek: remote CQ data missing (flags 0x%llx data 0x%llx)",
			 (unsigned long long)c.flags, (unsigned long long)c.data);
		/* a peek does not consume */
		peek_found(&fx, tag, 0, &pc, &c, NULL, 0);
		FT_CHECK(c.len == size, "second peek len %zu", c.len);
		struct fx_rbuf r;
		fx_rbuf_init(&r, size);
		FX_OK(&fx, fi_trecv(fx.ep, r.buf, size, NULL, FI_ADDR_UNSPEC, tag, 0, &r));
		fx_wait(&fx, 1, &c, TMO);
		check_trx(&c, &r, size, tag, "receive after peek");
		fx_rbuf_check(&r, 5000, size, "receive after peek");
		peek_absent(&fx, tag, "peek after the message was received");
		fx_rbuf_free(&r);
	}
	fx_pbarrier(ctx, &fx);
	fx_close(&fx);
	return 0;
}

/* ---- FI_PEEK|FI_CLAIM, then FI_CLAIM; FI_DISCARD ------------------------------------------ */

static int t_claim(struct ft_ctx *ctx, void *arg)
{
	size_t size = (size_t)(intptr_t)arg;
	struct fx fx;
	fx_open(ctx, &topts, &fx);
	const uint64_t tag = 0xC1A1;
	/* sends A, B (tag), X (tag+1) */
	if (ctx->rank == 0) {
		uint8_t *b[3];
		for (int i = 0; i < 3; i++) {
			b[i] = fx_alloc(size + (size_t)i);
			fx_fill(b[i], size + (size_t)i, 6000 + i, 0);
			FX_OK(&fx, fi_tsend(fx.ep, b[i], size + (size_t)i, NULL, fx.peers[1],
					    i == 2 ? tag + 1 : tag, b[i]));
		}
		fx_pbarrier(ctx, &fx);
		fx_wait(&fx, 3, NULL, TMO);
		for (int i = 0; i < 3; i++)
			free(b[i]);
	} else {
		fx_pbarrier(ctx, &fx);
		struct fi_context cc;
		struct fx_comp c;
		peek_found(&fx, tag, FI_CLAIM, &cc, &c, NULL, 0);
		FT_CHECK(c.len == size && c.tag == tag, "peek|claim found len %zu tag 0x%llx, want A",
			 c.len, (unsigned long long)c.tag);
		/* a plain receive on the same tag must skip the claimed A and get B */
		struct fx_rbuf rb, ra;
		fx_rbuf_init(&rb, size + 1);
		fx_rbuf_init(&ra, size);
		FX_OK(&fx, fi_trecv(fx.ep, rb.buf, rb.len, NULL, FI_ADDR_UNSPEC, tag, 0, &rb));
		fx_wait(&fx, 1, &c, TMO);
		check_trx(&c, &rb, size + 1, tag, "plain receive next to a claimed message");
		fx_rbuf_check(&rb, 6001, size + 1, "plain receive next to a claimed message");
		/* now retrieve the claimed one */
		struct iovec iov = {ra.buf, ra.len};
		struct fi_msg_tagged m = {.msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
					  .tag = tag, .context = &cc};
		FX_OK(&fx, fi_trecvmsg(fx.ep, &m, FI_CLAIM));
		fx_wait(&fx, 1, &c, TMO);
		check_trx(&c, &cc, size, tag, "FI_CLAIM receive");
		fx_rbuf_check(&ra, 6000, size, "FI_CLAIM receive");
		peek_absent(&fx, tag, "after claim");
		/* X is still there and receivable */
		struct fx_rbuf rx;
		fx_rbuf_init(&rx, size + 2);
		FX_OK(&fx, fi_trecv(fx.ep, rx.buf, rx.len, NULL, FI_ADDR_UNSPEC, tag + 1, 0, &rx));
		fx_wait(&fx, 1, &c, TMO);
		fx_rbuf_check(&rx, 6002, size + 2, "other tag");
		fx_rbuf_free(&ra);
		fx_rbuf_free(&rb);
		fx_rbuf_free(&rx);
	}
	fx_pbarrier(ctx, &fx);
	fx_close(&fx);
	return 0;
}

/*
 * FI_CLAIM into a layout handle (desc[0]), as MPICH's MPI_Mrecv of a datatype it hands ddtx as a
 * handle: the claimed bytes go to the handle's blocks, the gaps between them stay untouched
 * (they were written contiguously from the base before the claim path took the handle).
 */
static int t_claim_handle(struct ft_ctx *ctx, void *arg)
{
	size_t size = (size_t)(intptr_t)arg;
	size_t block = size < 10000 ? 40 : 1000, count = size / block, stride = block * 5 / 2;
	struct fx fx;
	fx_open(ctx, &topts, &fx);
	const uint64_t tag = 0xC1A2;
	if (ctx->rank == 0) {
		uint8_t *b = fx_alloc(size);
		fx_fill(b, size, 6100, 0);
		FX_OK(&fx, fi_tsend(fx.ep, b, size, NULL, fx.peers[1], tag, b));
		fx_pbarrier(ctx, &fx);
		fx_wait(&fx, 1, NULL, TMO);
		free(b);
	} else {
		fx_stats(&fx, &(struct fi_ddtx_stats){0}); /* opens the extension ops */
		struct fi_ddtx_layout *h = NULL;
		FX_OK(&fx, fx.ops->layout_create_strided(fx.domain, block, stride, count, &h));
		size_t span = fx.ops->layout_size(h);
		FT_CHECK(span == (count - 1) * stride + block, "layout_size %zu", span);
		uint8_t *buf = fx_alloc(span);
		memset(buf, 0xA5, span);
		fx_pbarrier(ctx, &fx);
		struct fi_context cc;
		struct fx_comp c;
		peek_found(&fx, tag, FI_CLAIM, &cc, &c, NULL, 0);
		FT_CHECK(c.len == size, "peek|claim len %zu, want %zu", c.len, size);
		struct iovec iov = {buf, span};
		void *desc = h;
		struct fi_msg_tagged m = {.msg_iov = &iov, .desc = &desc, .iov_count = 1,
					  .addr = FI_ADDR_UNSPEC, .tag = tag, .context = &cc};
		FX_OK(&fx, fi_trecvmsg(fx.ep, &m, FI_CLAIM));
		fx_wait(&fx, 1, &c, TMO);
		check_trx(&c, &cc, size, tag, "FI_CLAIM receive into a layout handle");
		for (size_t i = 0; i < count; i++) {
			FX_CHECK_PATTERN(buf + i * stride, block, 6100, i * block,
					 "block %zu of %zu (%zu B, stride %zu) after FI_CLAIM", i,
					 count, block, stride);
			for (size_t g = i * stride + block; g < (i + 1) * stride && g < span; g++)
				FT_CHECK(buf[g] == 0xA5, "FI_CLAIM into a handle wrote gap byte %zu",
					 g);
		}
		FX_OK(&fx, fx.ops->layout_free(h));
		free(buf);
	}
	fx_pbarrier(ctx, &fx);
	fx_close(&fx);
	return 0;
}

static int t_discard(struct ft_ctx *ctx, void *arg)
{
	size_t size = (size_t)(intptr_t)arg;
	struct fx fx;
	fx_open(ctx, &topts, &fx);
	const uint64_t tag = 0xD15C;
	/* sends A, B, C with the same tag */
	if (ctx->rank == 0) {
		uint8_t *b[3];
		for (int i = 0; i < 3; i++) {
			b[i] = fx_alloc(size);
			fx_fill(b[i], size, 7000 + i, 0);
			FX_OK(&fx, fi_tsend(fx.ep, b[i], size, NULL, fx.peers[1], tag, b[i]));
		}
		fx_pbarrier(ctx, &fx);
		/* discarded sends complete normally at the sender */
		fx_wait(&fx, 3, NULL, TMO);
		for (int i = 0; i < 3; i++)
			free(b[i]);
	} else {
		fx_pbarrier(ctx, &fx);
		struct fi_context cc;
		struct fx_comp c;
		struct fx_rbuf junk;
		fx_rbuf_init(&junk, size);
		/* A: peek|claim, then claim|discard (buffer given but must stay untouched) */
		peek_found(&fx, tag, FI_CLAIM, &cc, &c, NULL, 0);
		FT_CHECK(c.len == size, "peek|claim len %zu", c.len);
		struct iovec iov = {junk.buf, junk.len};
		struct fi_msg_tagged m = {.msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
					  .tag = tag, .context = &cc};
		FX_OK(&fx, fi_trecvmsg(fx.ep, &m, FI_CLAIM | FI_DISCARD));
		fx_wait(&fx, 1, &c, TMO);
		FT_CHECK(c.op_context == &cc, "FI_CLAIM|FI_DISCARD completion context");
		/* B: peek|discard */
		struct fi_context pd;
		peek_found(&fx, tag, FI_DISCARD, &pd, &c, NULL, 0);
		/* len is not checked: with FI_DISCARD libfabric's rxm reports 0, others the size */
		FT_CHECK(c.tag == tag && (c.flags & (FI_RECV | FI_TAGGED)) == (FI_RECV | FI_TAGGED),
			 "peek|discard completion: tag 0x%llx flags 0x%llx", (unsigned long long)c.tag,
			 (unsigned long long)c.flags);
		/* C is the only one left */
		struct fx_rbuf r;
		fx_rbuf_init(&r, size);
		FX_OK(&fx, fi_trecv(fx.ep, r.buf, size, NULL, FI_ADDR_UNSPEC, tag, 0, &r));
		fx_wait(&fx, 1, &c, TMO);
		check_trx(&c, &r, size, tag, "receive after two discards");
		fx_rbuf_check(&r, 7002, size, "receive after two discards (must be the 3rd message)");
		fx_rbuf_check(&junk, 0, 0, "buffer passed with FI_DISCARD");
		peek_absent(&fx, tag, "after discards");
		fx_rbuf_free(&r);
		fx_rbuf_free(&junk);
	}
	fx_pbarrier(ctx, &fx);
	fx_close(&fx);
	return 0;
}

/* ---- fi_cancel ---------------------------------------------------------------------------- */

static int t_cancel(struct ft_ctx *ctx, void *arg)
{
	size_t size = (size_t)(intptr_t)arg;
	struct fx fx;
	fx_open(ctx, &topts, &fx);
	const uint64_t tag = 0xCA;
	if (ctx->rank == 0) {
		fx_pbarrier(ctx, &fx); /* receives cancelled */
		uint8_t *b = fx_alloc(size);
		fx_fill(b, size, 8000, 0);
		FX_OK(&fx, fi_tsend(fx.ep, b, size, NULL, fx.peers[1], tag, b));
		FX_OK(&fx, fi_send(fx.ep, b, size, NULL, fx.peers[1], b + 1));
		fx_wait(&fx, 2, NULL, TMO);
		free(b);
	} else {
		struct fx_rbuf t, u, t2, u2;
		fx_rbuf_init(&t, size);
		fx_rbuf_init(&u, size);
		fx_rbuf_init(&t2, size);
		fx_rbuf_init(&u2, size);
		FX_OK(&fx, fi_trecv(fx.ep, t.buf, size, NULL, FI_ADDR_UNSPEC, tag, 0, &t));
		FX_OK(&fx, fi_recv(fx.ep, u.buf, size, NULL, FI_ADDR_UNSPEC, &u));
		int ret = (int)fi_cancel(&fx.ep->fid, &t);
		FT_CHECK(ret == 0, "fi_cancel(tagged receive): %s", fi_strerror(-ret));
		ret = (int)fi_cancel(&fx.ep->fid, &u);
		FT_CHECK(ret == 0, "fi_cancel(untagged receive): %s", fi_strerror(-ret));
		for (int i = 0; i < 2; i++) {
			struct fi_cq_err_entry e;
			fx_wait_err(&fx, &e, TMO);
			FT_CHECK(e.err == FI_ECANCELED, "cancel: err %d (%s), want FI_ECANCELED",
				 e.err, fi_strerror(e.err));
			FT_CHECK(e.op_context == (i ? (void *)&u : (void *)&t) ||
					 e.op_context == (i ? (void *)&t : (void *)&u),
				 "cancel: context %p", e.op_context);
		}
		fx_expect_none(&fx, 50);
		fx_pbarrier(ctx, &fx);
		FX_OK(&fx, fi_trecv(fx.ep, t2.buf, size, NULL, FI_ADDR_UNSPEC, tag, 0, &t2));
		FX_OK(&fx, fi_recv(fx.ep, u2.buf, size, NULL, FI_ADDR_UNSPEC, &u2));
		struct fx_comp c[2];
		fx_wait(&fx, 2, c, TMO);
		for (int i = 0; i < 2; i++)
			FT_CHECK(c[i].op_context == &t2 || c[i].op_context == &u2,
				 "message landed in a cancelled receive (ctx %p)", c[i].op_context);
		fx_rbuf_check(&t2, 8000, size, "tagged receive after cancel");
		fx_rbuf_check(&u2, 8000, size, "untagged receive after cancel");
		fx_rbuf_check(&t, 0, 0, "cancelled tagged receive buffer");
		fx_rbuf_check(&u, 0, 0, "cancelled untagged receive buffer");
		fx_rbuf_free(&t);
		fx_rbuf_free(&u);
		fx_rbuf_free(&t2);
		fx_rbuf_free(&u2);
	}
	fx_pbarrier(ctx, &fx);
	fx_close(&fx);
	return 0;
}

/* ---- truncation ------------------------------------------------------------------------ */

static int t_trunc(struct ft_ctx *ctx, void *arg)
{
	const char *scheme = arg;
	struct fx fx;
	struct fx_opts o = topts;
	o.scheme = scheme;
	fx_open(ctx, &o, &fx);
	struct tc {
		size_t msg, rcv, scount, rcount;
	};
	static const struct tc cases[] = {
		{100, 1, 1, 1},           {16384, 16383, 1, 1},   {16385, 16384, 1, 1},
		{200000, 40000, 1, 1},    {200000, 40000, 64, 37}, {1 << 20, 12345, 1024, 3},
		{3 << 20, 2 << 20, 200, 900}, {50000, 0, 1, 1},
	};
	uint64_t rng = 99;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct tc *tc = &cases[i];
		struct fx_layout s, r;
		fx_layout_make(&s, tc->msg, tc->scount, 17, &rng);
		fx_layout_make(&r, tc->rcv, tc->rcount, 19, &rng);
		char what[128];
		snprintf(what, sizeof(what), "%zu B (%zu entries) into %zu B (%zu entries), scheme %s",
			 tc->msg, s.count, tc->rcv, r.count, scheme ? scheme : "(env)");
		uint64_t tag = 0x7700 + i;
		if (ctx->rank == 0) {
			fx_layout_canary(&s, 1);
			fx_layout_data(&s, 9000 + i);
			fx_pbarrier(ctx, &fx);
			struct fi_msg_tagged m = {.msg_iov = s.iov, .desc = s.desc,
						  .iov_count = s.count, .addr = fx.peers[1],
						  .tag = tag, .context = &s};
			FX_OK(&fx, fi_tsendmsg(fx.ep, &m, FI_COMPLETION));
			struct fx_comp c;
			struct fi_cq_err_entry e;
			int rr = fx_wait_any(&fx, &c, &e, TMO);
			FT_CHECK(rr != -FI_ETIMEDOUT, "%s: the send never completed", what);
			/* truncation is the receiver's error; the sender may only see FI_ETRUNC */
			FT_CHECK(rr == 1 || e.err == FI_ETRUNC, "%s: sender error %d (%s)", what,
				 e.err, fi_strerror(e.err));
		} else {
			fx_layout_canary(&r, 2);
			struct fi_msg_tagged m = {.msg_iov = r.iov, .desc = r.desc,
						  .iov_count = r.count, .addr = FI_ADDR_UNSPEC,
						  .tag = tag, .context = &r};
			FX_OK(&fx, fi_trecvmsg(fx.ep, &m, FI_COMPLETION));
			fx_pbarrier(ctx, &fx);
			struct fi_cq_err_entry e;
			fx_wait_err(&fx, &e, TMO);
			FT_CHECK(e.err == FI_ETRUNC, "%s: err %d (%s), want FI_ETRUNC", what, e.err,
				 fi_strerror(e.err));
			FT_CHECK(e.op_context == &r, "%s: context", what);
			FT_CHECK(e.olen == tc->msg - tc->rcv, "%s: olen %zu, want %zu", what, e.olen,
				 tc->msg - tc->rcv);
			FT_CHECK(e.len == tc->rcv, "%s: len %zu, want %zu", what, e.len, tc->rcv);
			FT_CHECK(e.tag == tag, "%s: tag 0x%llx", what, (unsigned long long)e.tag);
			fx_layout_check(&r, 9000 + i, tc->rcv, 2, what);
		}
		fx_pbarrier(ctx, &fx);
		fx_layout_free(&s);
		fx_layout_free(&r);
	}
	/* the endpoint still works */
	if (ctx->rank == 0) {
		uint8_t b[64];
		fx_fill(b, 64, 1, 0);
		FX_OK(&fx, fi_tsend(fx.ep, b, 64, NULL, fx.peers[1], 1, b));
		fx_wait(&fx, 1, NULL, TMO);
	} else {
		struct fx_rbuf r;
		fx_rbuf_init(&r, 64);
		FX_OK(&fx, fi_trecv(fx.ep, r.buf, 64, NULL, FI_ADDR_UNSPEC, 1, 0, &r));
		fx_wait(&fx, 1, NULL, TMO);
		fx_rbuf_check(&r, 1, 64, "message after truncations");
		fx_rbuf_free(&r);
	}
	fx_pbarrier(ctx, &fx);
	fx_close(&fx);
	return 0;
}


/* ---- all 64 tag bits (mem_tag_format), ignore masks on high bits ------------------------- */

static int t_tag_bits(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	fx_open(ctx, &topts, &fx);
	static const uint64_t tags[] = {0, 1, 0xFFFFFFFFFFFFFFFFull, 0x8000000000000000ull,
					0x7FFFFFFFFFFFFFFFull, 0xFFFFFFFF00000000ull,
					0x00000000FFFFFFFFull, 0xAAAAAAAAAAAAAAAAull};
	const int n = sizeof(tags) / sizeof(tags[0]);
	if (ctx->rank == 0) {
		fx_pbarrier(ctx, &fx);
		for (int i = 0; i < n; i++) {
			uint8_t b[32];
			fx_fill(b, 32, 1500 + (uint64_t)i, 0);
			FX_OK(&fx, fi_tsend(fx.ep, b, 32, NULL, fx.peers[1], tags[i], b));
			fx_wait(&fx, 1, NULL, TMO);
		}
	} else {
		struct fx_rbuf r[8];
		/* posted in reverse, exact tags; one more with ignore on the top half posted first
		 * must not steal any (its tag 0x1234... matches none in the low half) */
		struct fx_rbuf w;
		fx_rbuf_init(&w, 32);
		FX_OK(&fx, fi_trecv(fx.ep, w.buf, 32, NULL, FI_ADDR_UNSPEC, 0x0000000012345678ull,
				    0xFFFFFFFF00000000ull, &w));
		for (int i = n - 1; i >= 0; i--) {
			fx_rbuf_init(&r[i], 32);
			FX_OK(&fx, fi_trecv(fx.ep, r[i].buf, 32, NULL, FI_ADDR_UNSPEC, tags[i], 0, &r[i]));
		}
		fx_pbarrier(ctx, &fx);
		for (int k = 0; k < n; k++) {
			struct fx_comp c;
			fx_wait(&fx, 1, &c, TMO);
			int i = (int)((struct fx_rbuf *)c.op_context - r);
			FT_CHECK(i >= 0 && i < n, "a message with tag 0x%llx matched the wrong receive",
				 (unsigned long long)c.tag);
			FT_CHECK(c.tag == tags[i], "tag 0x%llx want 0x%llx", (unsigned long long)c.tag,
				 (unsigned long long)tags[i]);
			char what[64];
			snprintf(what, sizeof(what), "tag 0x%llx", (unsigned long long)tags[i]);
			fx_rbuf_check(&r[i], 1500 + (uint64_t)i, 32, what);
			fx_rbuf_free(&r[i]);
		}
		FT_CHECK(fi_cancel(&fx.ep->fid, &w) == 0, "cancel");
		struct fi_cq_err_entry e;
		fx_wait_err(&fx, &e, TMO);
		fx_rbuf_free(&w);
	}
	fx_pbarrier(ctx, &fx);
	fx_close(&fx);
	return 0;
}

/* ---- floods: many unexpected eager messages, many outstanding rendezvous sends ----------- */

static int t_flood(struct ft_ctx *ctx, void *arg)
{
	bool rndv = arg != NULL;
	struct fx fx;
	fx_open(ctx, &topts, &fx);
	const int n = rndv ? 400 : 20000;
	const size_t maxsz = rndv ? 60000 : 2000;
	size_t *sz = malloc((size_t)n * sizeof(size_t));
	uint64_t rng = 31337 + rndv;
	for (int i = 0; i < n; i++)
		sz[i] = rndv ? fx_rand_size(&rng, 16385, maxsz) : fx_rand_size(&rng, 0, maxsz);
	if (ctx->rank == 0) {
		uint8_t **b = malloc((size_t)n * sizeof(*b));
		for (int i = 0; i < n; i++) {
			b[i] = fx_alloc(sz[i]);
			fx_fill(b[i], sz[i], (uint64_t)i, 0);
			/* the ring fills up: FX_POST progresses while -FI_EAGAIN; the receiver keeps
			 * progressing in its barrier, moving messages to its unexpected queue */
			FX_OK(&fx, fi_tsend(fx.ep, b[i], sz[i], NULL, fx.peers[1], (uint64_t)i, b[i]));
		}
		fx_pbarrier(ctx, &fx); /* everything posted; nothing received yet */
		fx_wait(&fx, (size_t)n, NULL, 120000);
		for (int i = 0; i < n; i++)
			free(b[i]);
		free(b);
	} else {
		fx_pbarrier(ctx, &fx);
		uint8_t *r = fx_alloc(maxsz * 64);
		/* receive in reverse order, 64 at a time */
		for (int base = n - 1; base >= 0; base -= 64) {
			int cnt = base + 1 < 64 ? base + 1 : 64;
			for (int k = 0; k < cnt; k++) {
				int i = base - k;
				FX_OK(&fx, fi_trecv(fx.ep, r + (size_t)k * maxsz, maxsz, NULL, FI_ADDR_UNSPEC,
						    (uint64_t)i, 0, r + (size_t)k * maxsz));
			}
			struct fx_comp c[64];
			fx_wait(&fx, (size_t)cnt, c, 120000);
			for (int k = 0; k < cnt; k++) {
				int slot = (int)(((uint8_t *)c[k].op_context - r) / (ptrdiff_t)maxsz);
				int i = base - slot;
				FT_CHECK(c[k].tag == (uint64_t)i && c[k].len == sz[i],
					 "flood: receive for %d got tag %llu len %zu", i,
					 (unsigned long long)c[k].tag, c[k].len);
				FX_CHECK_PATTERN(r + (size_t)slot * maxsz, sz[i], (uint64_t)i, 0,
						 "flood message %d", i);
			}
		}
		free(r);
	}
	free(sz);
	fx_pbarrier(ctx, &fx);
	fx_close(&fx);
	return 0;
}

/*
 * Flow control (proto/credit.c): 11000 messages of 1000 B (always eager by size: 10.5 MiB) sent
 * while the receiver progresses without receives, then received in order.  The receiver held at
 * most 8 MiB of them at once (DDTX_CREDIT_BYTES; it held all of them before), the rest went as
 * rendezvous without payload; every byte arrives, in order.  Then, the credit given back once
 * everything matched, 4000 more go eagerly without a wait.
 */
enum { CR_FIRST = 11000, CR_SECOND = 4000, CR_LEN = 1000, CR_WINDOW = 64 };
#define CR_CREDIT (8u << 20)

static void credit_round(struct ft_ctx *ctx, struct fx *fx, int n, uint64_t seed)
{
	if (ctx->rank == 0) {
		uint8_t *b = fx_alloc((size_t)n * CR_LEN);
		for (int i = 0; i < n; i++) {
			fx_fill(b + (size_t)i * CR_LEN, CR_LEN, seed + (uint64_t)i, 0);
			FX_OK(fx, fi_tsend(fx->ep, b + (size_t)i * CR_LEN, CR_LEN, NULL, fx->peers[1],
					   (uint64_t)i, NULL));
		}
		fx_pbarrier(ctx, fx); /* everything posted; the receiver took it in unexpected */
		fx_wait(fx, (size_t)n, NULL, 120000);
		free(b);
	} else {
		fx_pbarrier(ctx, fx);
		uint8_t *r = fx_alloc((size_t)CR_WINDOW * CR_LEN);
		for (int base = 0; base < n; base += CR_WINDOW) {
			int cnt = n - base < CR_WINDOW ? n - base : CR_WINDOW;
			for (int k = 0; k < cnt; k++)
				FX_OK(fx, fi_trecv(fx->ep, r + (size_t)k * CR_LEN, CR_LEN, NULL,
						   FI_ADDR_UNSPEC, (uint64_t)(base + k), 0,
						   r + (size_t)k * CR_LEN));
			struct fx_comp c[CR_WINDOW];
			fx_wait(fx, (size_t)cnt, c, 120000);
			for (int k = 0; k < cnt; k++) {
				int slot = (int)(((uint8_t *)c[k].op_context - r) / CR_LEN);
				int i = base + slot;
				FT_CHECK(c[k].tag == (uint64_t)i && c[k].len == CR_LEN,
					 "credit: receive %d got tag %llu len %zu", i,
					 (unsigned long long)c[k].tag, c[k].len);
				FX_CHECK_PATTERN(r + (size_t)slot * CR_LEN, CR_LEN, seed + (uint64_t)i,
						 0, "credit: message %d", i);
			}
		}
		free(r);
	}
	fx_pbarrier(ctx, fx);
}

static int t_credit(struct ft_ctx *ctx, void *arg)
{
	(void)arg;
	struct fx fx;
	fx_open(ctx, &topts, &fx);
	struct fi_ddtx_stats s0, s1, s2;
	fx_stats(&fx, &s0);
	credit_round(ctx, &fx, CR_FIRST, 70000);
	fx_stats(&fx, &s1);
	credit_round(ctx, &fx, CR_SECOND, 80000);
	fx_stats(&fx, &s2);
	unsigned long long waits1 = s1.credit_waits - s0.credit_waits,
			   waits2 = s2.credit_waits - s1.credit_waits;
	if (ctx->rank == 0) {
		printf("  sender: %llu of %d sends waited for credit, then %llu of %d\n", waits1,
		       CR_FIRST, waits2, CR_SECOND);
		FT_CHECK(waits1 >= CR_FIRST - CR_CREDIT / CR_LEN,
			 "%llu sends waited for credit, want at least %u", waits1,
			 CR_FIRST - CR_CREDIT / CR_LEN);
		FT_CHECK(waits2 == 0, "%llu sends waited once the credit came back", waits2);
	} else {
		printf("  receiver: at most %llu unexpected payload bytes held\n",
		       (unsigned long long)s2.unexp_bytes_max);
		FT_CHECK(s2.unexp_bytes_max <= CR_CREDIT, "held %llu unexpected bytes, want at "
			 "most 8 MiB", (unsigned long long)s2.unexp_bytes_max);
		FT_CHECK(s2.unexp_bytes_max >= CR_CREDIT - (1u << 20), "held only %llu unexpected "
			 "bytes: the flood did not happen", (unsigned long long)s2.unexp_bytes_max);
	}
	fx_close(&fx);
	return 0;
}

#define SZ(x) ((void *)(intptr_t)(x))
static const struct fx_test tests[] = {
	{"family", 2, 60, t_family, NULL},
	{"queues_posted", 2, 60, t_queues, SZ(0)},
	{"queues_unexpected", 2, 60, t_queues, SZ(1)},
	{"queues_mixed", 2, 60, t_queues, SZ(2)},
	{"ignore", 2, 30, t_ignore, NULL},
	{"tag_bits", 2, 30, t_tag_bits, NULL},
	{"flood_unexpected_eager", 2, 120, t_flood, NULL},
	{"flood_rndv_sends", 2, 120, t_flood, SZ(1)},
	{"credit", 2, 120, t_credit, NULL},
	{"directed_eager", 4, 30, t_directed, SZ(1000)},
	{"directed_rndv", 4, 30, t_directed, SZ(200000)},
	{"peek_eager", 2, 30, t_peek, SZ(1000)},
	{"peek_rndv", 2, 30, t_peek, SZ(200000)},
	{"claim_eager", 2, 30, t_claim, SZ(1000)},
	{"claim_rndv", 2, 30, t_claim, SZ(200000)},
	{"claim_handle_eager", 2, 30, t_claim_handle, SZ(1000)},
	{"claim_handle_rndv", 2, 30, t_claim_handle, SZ(200000)},
	{"discard_eager", 2, 30, t_discard, SZ(1000)},
	{"discard_rndv", 2, 30, t_discard, SZ(200000)},
	{"cancel", 2, 30, t_cancel, SZ(1000)},
	{"cancel_rndv_size", 2, 30, t_cancel, SZ(200000)},
	{"trunc", 2, 60, t_trunc, NULL},
	{"trunc_pack", 2, 60, t_trunc, "pack"},
	{"trunc_sgl", 2, 60, t_trunc, "sgl"},
	{"trunc_umr", 2, 60, t_trunc, "umr"},
};

int main(int argc, char **argv)
{
	return fx_main(argc, argv, tests, sizeof(tests) / sizeof(tests[0]));
}
