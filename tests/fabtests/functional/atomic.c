/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Atomics (fi_atomic(3)) and RMA events (FI_RMA_EVENT) between real processes.  The target
 * (rank 1) registers part of fx_shmem, which every rank maps at the same address, so the
 * initiator sets up and checks the target's memory directly around each operation; the target
 * only progresses (manual progress: it executes the requests) until the closing barrier.
 *
 *  valid       fi_atomicvalid / fi_fetch_atomicvalid / fi_compare_atomicvalid and fi_query_atomic
 *              against fi_atomic(3)'s table, for every op and datatype of libfabric 1.17
 *  ops         every valid op x datatype x family: the values that land, the old values fetched,
 *              compare-swaps that succeed and that fail
 *  vector      fi_atomicmsg / fi_fetch_atomicmsg / fi_compare_atomicmsg with several segments on
 *              both sides, fi_inject_atomic, FI_ATOMIC_READ without an operand
 *  concurrent  two initiators add to one counter and fetch-add another: exact sum, and every old
 *              value fetched exactly once
 *  errors      bad key, out of bounds, read-only MR: the completion error, target memory intact;
 *              ops not offered and oversize counts refused at post time
 *  rma_event   FI_RMA_EVENT: the target's endpoint counters (remote write / read) and the
 *              counters bound to each MR count writes, reads (one per segment) and atomics
 */
#include <complex.h>
#include <stdatomic.h>
#include <string.h>
#include <rdma/fi_atomic.h>

#include "fx.h"

#define TMO 20000
#define KEY 0x8000000000000a70ull
#define RO_KEY 0x8000000000000a71ull
#define NTYPES (FI_UINT128 + 1)

static struct fx_opts aopts(void)
{
	return (struct fx_opts){.caps = FI_ATOMIC | FI_RMA | FI_MSG};
}

/* The target's window: the first WIN bytes of fx_shmem, registered by rank 1. */
#define WIN 65536
struct window {
	struct fid_mr *mr, *ro_mr;
	struct fx_rkey rk, ro;             /* read-write and read-only parts */
};

static void window_open(struct ft_ctx *ctx, struct fx *fx, struct window *w)
{
	memset(w, 0, sizeof(*w));
	struct fx_rkey mine[2] = {0};
	if (ctx->rank == 1) {
		w->mr = fx_mr_reg(fx, fx_shmem, WIN / 2, FI_REMOTE_READ | FI_REMOTE_WRITE, KEY,
				  &mine[0]);
		w->ro_mr = fx_mr_reg(fx, fx_shmem + WIN / 2, WIN / 2, FI_REMOTE_READ, RO_KEY,
				     &mine[1]);
	}
	struct fx_rkey all[FX_MAX_RANKS][2];
	ft_allgather(ctx, mine, sizeof(mine), all);
	w->rk = all[1][0];
	w->ro = all[1][1];
}

static void window_close(struct window *w)
{
	if (w->mr)
		FT_CHECK(fi_close(&w->mr->fid) == 0, "closing MR");
	if (w->ro_mr)
		FT_CHECK(fi_close(&w->ro_mr->fid) == 0, "closing MR");
}

/* ---- what fi_atomic(3) defines: the test's own table, independent of the provider ---- */

static bool is_complex(int dt)
{
	return dt == FI_FLOAT_COMPLEX || dt == FI_DOUBLE_COMPLEX || dt == FI_LONG_DOUBLE_COMPLEX;
}

static bool is_int(int dt)
{
	return dt <= FI_UINT64 || dt == FI_INT128 || dt == FI_UINT128;
}

enum family { F_WRITE, F_FETCH, F_COMPARE };

static bool expect_valid(enum family f, int dt, int op)
{
	bool in_family = f == F_WRITE   ? op <= FI_BXOR || op == FI_ATOMIC_WRITE
			 : f == F_FETCH ? op <= FI_ATOMIC_WRITE
					: op >= FI_CSWAP && op <= FI_MSWAP;
	bool ordered = op == FI_MIN || op == FI_MAX || (op >= FI_CSWAP_LE && op <= FI_CSWAP_GT);
	bool bitwise = op == FI_BOR || op == FI_BAND || op == FI_BXOR || op == FI_MSWAP;
	return in_family && !(ordered && is_complex(dt)) && !(bitwise && !is_int(dt));
}

static size_t type_size(int dt)
{
	static const size_t sz[NTYPES] = {
		[FI_INT8] = 1, [FI_UINT8] = 1, [FI_INT16] = 2, [FI_UINT16] = 2, [FI_INT32] = 4,
		[FI_UINT32] = 4, [FI_INT64] = 8, [FI_UINT64] = 8, [FI_FLOAT] = sizeof(float),
		[FI_DOUBLE] = sizeof(double), [FI_FLOAT_COMPLEX] = sizeof(float complex),
		[FI_DOUBLE_COMPLEX] = sizeof(double complex),
		[FI_LONG_DOUBLE] = sizeof(long double),
		[FI_LONG_DOUBLE_COMPLEX] = sizeof(long double complex), [FI_INT128] = 16,
		[FI_UINT128] = 16};
	return sz[dt];
}

/* Store / load element i of datatype dt as a complex number (integers and reals: imaginary 0). */
static void put(int dt, void *base, size_t i, long double re, long double im)
{
	uint8_t *p = (uint8_t *)base + i * type_size(dt);
#define PUT(T, v)                                                                                \
	do {                                                                                     \
		T x_ = (T)(v);                                                                   \
		memcpy(p, &x_, sizeof(x_));                                                      \
	} while (0)
	switch (dt) {
	case FI_INT8: PUT(int8_t, re); break;
	case FI_UINT8: PUT(uint8_t, re); break;
	case FI_INT16: PUT(int16_t, re); break;
	case FI_UINT16: PUT(uint16_t, re); break;
	case FI_INT32: PUT(int32_t, re); break;
	case FI_UINT32: PUT(uint32_t, re); break;
	case FI_INT64: PUT(int64_t, re); break;
	case FI_UINT64: PUT(uint64_t, re); break;
	case FI_INT128: PUT(__int128, re); break;
	case FI_UINT128: PUT(unsigned __int128, re); break;
	case FI_FLOAT: PUT(float, re); break;
	case FI_DOUBLE: PUT(double, re); break;
	case FI_LONG_DOUBLE: PUT(long double, re); break;
	case FI_FLOAT_COMPLEX: PUT(float complex, CMPLXL(re, im)); break;
	case FI_DOUBLE_COMPLEX: PUT(double complex, CMPLXL(re, im)); break;
	case FI_LONG_DOUBLE_COMPLEX: PUT(long double complex, CMPLXL(re, im)); break;
	}
#undef PUT
}

static long double complex get(int dt, const void *base, size_t i)
{
	const uint8_t *p = (const uint8_t *)base + i * type_size(dt);
#define GET(T)                                                                                   \
	({                                                                                       \
		T x_;                                                                            \
		memcpy(&x_, p, sizeof(x_));                                                      \
		(long double complex)x_;                                                         \
	})
	switch (dt) {
	case FI_INT8: return GET(int8_t);
	case FI_UINT8: return GET(uint8_t);
	case FI_INT16: return GET(int16_t);
	case FI_UINT16: return GET(uint16_t);
	case FI_INT32: return GET(int32_t);
	case FI_UINT32: return GET(uint32_t);
	case FI_INT64: return GET(int64_t);
	case FI_UINT64: return GET(uint64_t);
	case FI_INT128: return (long double)GET(__int128);
	case FI_UINT128: return (long double)GET(unsigned __int128);
	case FI_FLOAT: return GET(float);
	case FI_DOUBLE: return GET(double);
	case FI_LONG_DOUBLE: return GET(long double);
	case FI_FLOAT_COMPLEX: return GET(float complex);
	case FI_DOUBLE_COMPLEX: return GET(double complex);
	case FI_LONG_DOUBLE_COMPLEX: return GET(long double complex);
	}
#undef GET
	return 0;
}

/*
 * One case: the target holds t, the operand is s, the compare value c; want is what the target
 * holds afterwards.  Real types: t = 6, s = 3 (in binary 110 and 011); complex: t = 6+2i,
 * s = 3+1i.  Values worked out by hand from fi_atomic(3)'s definitions.
 */
struct acase {
	int op;
	long double complex c, want;
};

static const struct acase real_cases[] = {
	{FI_MIN, 0, 3},        {FI_MAX, 0, 6},      {FI_SUM, 0, 9},       {FI_PROD, 0, 18},
	{FI_LOR, 0, 1},        {FI_LAND, 0, 1},     {FI_BOR, 0, 7},       {FI_BAND, 0, 2},
	{FI_LXOR, 0, 0},       {FI_BXOR, 0, 5},     {FI_ATOMIC_READ, 0, 6}, {FI_ATOMIC_WRITE, 0, 3},
	{FI_CSWAP, 6, 3},      {FI_CSWAP, 5, 6},    /* equal: swapped; not equal: kept */
	{FI_CSWAP_NE, 5, 3},   {FI_CSWAP_NE, 6, 6},
	{FI_CSWAP_LE, 6, 3},   {FI_CSWAP_LE, 7, 6}, /* compare <= target */
	{FI_CSWAP_LT, 5, 3},   {FI_CSWAP_LT, 6, 6},
	{FI_CSWAP_GE, 7, 3},   {FI_CSWAP_GE, 5, 6},
	{FI_CSWAP_GT, 7, 3},   {FI_CSWAP_GT, 6, 6},
	{FI_MSWAP, 5, 3},      {FI_MSWAP, 0, 6},    /* (3 & 101) | (110 & 010) = 011; mask 0 keeps */
};

#define C(re, im) CMPLXL(re, im)
static const struct acase complex_cases[] = {
	{FI_SUM, 0, C(9, 3)},           {FI_PROD, 0, C(16, 12)},  /* (6+2i)(3+i) = 16+12i */
	{FI_LOR, 0, 1},                 {FI_LAND, 0, 1},         {FI_LXOR, 0, 0},
	{FI_ATOMIC_READ, 0, C(6, 2)},   {FI_ATOMIC_WRITE, 0, C(3, 1)},
	{FI_CSWAP, C(6, 2), C(3, 1)},   {FI_CSWAP, C(6, 0), C(6, 2)},
	{FI_CSWAP_NE, C(6, 0), C(3, 1)}, {FI_CSWAP_NE, C(6, 2), C(6, 2)},
};

static enum family family_of(int op)
{
	return op >= FI_CSWAP ? F_COMPARE : op == FI_ATOMIC_READ ? F_FETCH : F_WRITE;
}

/* ---- valid ---- */

static int t_valid(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	struct fx_opts o = aopts();
	fx_open(ctx, &o, &fx);
	static const char *const fname[] = {"fi_atomicvalid", "fi_fetch_atomicvalid",
					    "fi_compare_atomicvalid"};
	static const uint64_t qflags[] = {0, FI_FETCH_ATOMIC, FI_COMPARE_ATOMIC};
	size_t nvalid = 0;
	for (int f = F_WRITE; f <= F_COMPARE; f++) {
		for (int dt = 0; dt < NTYPES; dt++) {
			for (int op = 0; op < FI_ATOMIC_OP_LAST; op++) {
				size_t count = 0;
				int ret = f == F_WRITE ? fi_atomicvalid(fx.ep, dt, op, &count)
					  : f == F_FETCH ? fi_fetch_atomicvalid(fx.ep, dt, op, &count)
							 : fi_compare_atomicvalid(fx.ep, dt, op, &count);
				bool want = expect_valid(f, dt, op);
				FT_CHECK(want ? ret == 0 && count >= 1 : ret == -FI_EOPNOTSUPP,
					 "%s(datatype %d, op %d): %d (%s), count %zu; want %s", fname[f],
					 dt, op, ret, fi_strerror(-ret), count,
					 want ? "valid" : "-FI_EOPNOTSUPP");
				struct fi_atomic_attr attr = {0};
				ret = fi_query_atomic(fx.domain, dt, op, &attr, qflags[f]);
				FT_CHECK(want ? ret == 0 && attr.size == type_size(dt) &&
							attr.count == count
					      : ret == -FI_EOPNOTSUPP,
					 "fi_query_atomic(datatype %d, op %d, flags 0x%llx): %d, size "
					 "%zu count %zu", dt, op, (unsigned long long)qflags[f], ret,
					 attr.size, attr.count);
				nvalid += want;
			}
		}
	}
	/* fabtests' count: at least one element of the largest type */
	size_t count = 0;
	FT_CHECK(fi_compare_atomicvalid(fx.ep, FI_LONG_DOUBLE_COMPLEX, FI_CSWAP, &count) == 0 &&
		 count * type_size(FI_LONG_DOUBLE_COMPLEX) >= 1024, "count %zu", count);
	FT_CHECK(nvalid > 300, "only %zu valid pairs", nvalid);
	fx_close(&fx);
	return 0;
}

/* ---- ops ---- */

#define N 3 /* elements per operation */

static void run_case(struct fx *fx, const struct window *w, int dt, const struct acase *k,
		     enum family f, size_t slot)
{
	bool cplx = is_complex(dt);
	size_t sz = type_size(dt);
	size_t off = (slot * N * 32) % (WIN / 2 - N * 32);
	uint8_t *target = fx_shmem + off;
	uint8_t buf[N * 32], cmp[N * 32], res[N * 32];
	for (size_t i = 0; i < N; i++) {
		put(dt, target, i, 6, cplx ? 2 : 0);
		put(dt, buf, i, 3, cplx ? 1 : 0);
		put(dt, cmp, i, creall(k->c), cimagl(k->c));
		put(dt, res, i, 99, 0);
	}
	uint64_t addr = fx_raddr(&w->rk, off);
	if (f == F_WRITE)
		FX_OK(fx, fi_atomic(fx->ep, buf, N, NULL, fx->peers[1], addr, w->rk.key, dt, k->op,
				    buf));
	else if (f == F_FETCH)
		FX_OK(fx, fi_fetch_atomic(fx->ep, buf, N, NULL, res, NULL, fx->peers[1], addr,
					  w->rk.key, dt, k->op, buf));
	else
		FX_OK(fx, fi_compare_atomic(fx->ep, buf, N, NULL, cmp, NULL, res, NULL, fx->peers[1],
					    addr, w->rk.key, dt, k->op, buf));
	struct fx_comp c;
	fx_wait(fx, 1, &c, TMO);
	FT_CHECK(c.op_context == buf, "completion context %p, want %p", c.op_context, (void *)buf);
	uint64_t want_flags = FI_ATOMIC | (f == F_WRITE ? FI_WRITE : FI_READ);
	FT_CHECK((c.flags & want_flags) == want_flags, "completion flags 0x%llx",
		 (unsigned long long)c.flags);
	for (size_t i = 0; i < N; i++) {
		long double complex got = get(dt, target, i);
		FT_CHECK(got == k->want, "datatype %d op %d family %d compare %Lg%+Lgi: element %zu "
			 "holds %Lg%+Lgi, want %Lg%+Lgi", dt, k->op, f, creall(k->c), cimagl(k->c),
			 i, creall(got), cimagl(got), creall(k->want), cimagl(k->want));
		if (f != F_WRITE) {
			long double complex old = get(dt, res, i);
			FT_CHECK(old == C(6, cplx ? 2 : 0), "datatype %d op %d: fetched %Lg%+Lgi "
				 "for element %zu, want the old 6", dt, k->op, creall(old),
				 cimagl(old), i);
		}
	}
	(void)sz;
}

static int t_ops(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	struct fx_opts o = aopts();
	fx_open(ctx, &o, &fx);
	struct window w;
	window_open(ctx, &fx, &w);
	if (ctx->rank == 0) {
		size_t slot = 0, ran = 0;
		for (int dt = 0; dt < NTYPES; dt++) {
			const struct acase *cases = is_complex(dt) ? complex_cases : real_cases;
			size_t n = is_complex(dt) ? sizeof(complex_cases) / sizeof(complex_cases[0])
						  : sizeof(real_cases) / sizeof(real_cases[0]);
			for (size_t i = 0; i < n; i++) {
				/* Every family that offers the op runs it (fetch runs the
				 * updates too, returning the old values). */
				for (int f = F_WRITE; f <= F_COMPARE; f++) {
					if (!expect_valid(f, dt, cases[i].op) ||
					    (f == F_WRITE && family_of(cases[i].op) != F_WRITE))
						continue;
					run_case(&fx, &w, dt, &cases[i], f, slot++);
					ran++;
				}
			}
		}
		FT_CHECK(ran > 350, "only %zu cases ran", ran);
	}
	fx_pbarrier(ctx, &fx);
	window_close(&w);
	fx_close(&fx);
	return 0;
}

/* ---- vector ---- */

static int t_vector(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	struct fx_opts o = aopts();
	fx_open(ctx, &o, &fx);
	struct window w;
	window_open(ctx, &fx, &w);
	if (ctx->rank == 0) {
		int64_t *t = (int64_t *)fx_shmem;
		for (int i = 0; i < 16; i++)
			t[i] = 100 * i;
		/* 5 operands from two ioc entries onto segments [2,4) and [9,12) */
		int64_t a[2] = {1, 2}, b[3] = {3, 4, 5};
		struct fi_ioc iov[2] = {{a, 2}, {b, 3}};
		struct fi_rma_ioc rma[2] = {{fx_raddr(&w.rk, 2 * 8), 2, w.rk.key},
					    {fx_raddr(&w.rk, 9 * 8), 3, w.rk.key}};
		struct fi_msg_atomic m = {.msg_iov = iov, .iov_count = 2, .addr = fx.peers[1],
					  .rma_iov = rma, .rma_iov_count = 2, .datatype = FI_INT64,
					  .op = FI_SUM, .context = a};
		FX_OK(&fx, fi_atomicmsg(fx.ep, &m, FI_COMPLETION));
		fx_wait(&fx, 1, NULL, TMO);
		static const int64_t after_sum[16] = {0,   100, 201, 302, 400,  500,  600,  700,
						      800, 903, 1004, 1105, 1200, 1300, 1400, 1500};
		for (int i = 0; i < 16; i++)
			FT_CHECK(t[i] == after_sum[i], "fi_atomicmsg: element %d = %lld, want %lld",
				 i, (long long)t[i], (long long)after_sum[i]);
		/* fetch: FI_ATOMIC_WRITE (swap) of the same segments, old values into 3 pieces */
		int64_t r1[1], r2[3], r3[1];
		struct fi_ioc res[3] = {{r1, 1}, {r2, 3}, {r3, 1}};
		int64_t nv[5] = {-1, -2, -3, -4, -5};
		struct fi_ioc nio = {nv, 5};
		m.msg_iov = &nio;
		m.iov_count = 1;
		m.op = FI_ATOMIC_WRITE;
		FX_OK(&fx, fi_fetch_atomicmsg(fx.ep, &m, res, NULL, 3, FI_COMPLETION));
		fx_wait(&fx, 1, NULL, TMO);
		FT_CHECK(r1[0] == 201 && r2[0] == 302 && r2[1] == 903 && r2[2] == 1004 &&
			 r3[0] == 1105, "fetched %lld %lld %lld %lld %lld", (long long)r1[0],
			 (long long)r2[0], (long long)r2[1], (long long)r2[2], (long long)r3[0]);
		FT_CHECK(t[2] == -1 && t[3] == -2 && t[9] == -3 && t[10] == -4 && t[11] == -5 &&
			 t[4] == 400 && t[8] == 800, "after the swap: %lld %lld %lld %lld %lld",
			 (long long)t[2], (long long)t[3], (long long)t[9], (long long)t[10],
			 (long long)t[11]);
		/* compare: CSWAP where the compare list matches elements 0 and 2 only */
		int64_t cmpv[5] = {-1, 0, -3, 0, 0}, sw[5] = {7, 7, 7, 7, 7}, old[5];
		struct fi_ioc cio = {cmpv, 5}, sio = {sw, 5}, oio = {old, 5};
		m.msg_iov = &sio;
		m.op = FI_CSWAP;
		FX_OK(&fx, fi_compare_atomicmsg(fx.ep, &m, &cio, NULL, 1, &oio, NULL, 1, 0));
		fx_wait(&fx, 1, NULL, TMO);
		FT_CHECK(t[2] == 7 && t[3] == -2 && t[9] == 7 && t[10] == -4 && t[11] == -5,
			 "after cswap: %lld %lld %lld %lld %lld", (long long)t[2], (long long)t[3],
			 (long long)t[9], (long long)t[10], (long long)t[11]);
		FT_CHECK(old[0] == -1 && old[1] == -2 && old[2] == -3 && old[4] == -5,
			 "cswap old values %lld %lld %lld", (long long)old[0], (long long)old[1],
			 (long long)old[2]);
		/* inject: no completion; the buffer is reusable at once; a later read sees it */
		int64_t inc = 1000;
		FX_OK(&fx, fi_inject_atomic(fx.ep, &inc, 1, fx.peers[1], fx_raddr(&w.rk, 0),
					    w.rk.key, FI_INT64, FI_SUM));
		inc = -99999;
		int64_t seen = 0;
		/* FI_ATOMIC_READ with no operand buffer: atomics to one target apply in order */
		FX_OK(&fx, fi_fetch_atomic(fx.ep, NULL, 1, NULL, &seen, NULL, fx.peers[1],
					   fx_raddr(&w.rk, 0), w.rk.key, FI_INT64, FI_ATOMIC_READ,
					   &seen));
		struct fx_comp c;
		fx_wait(&fx, 1, &c, TMO);
		FT_CHECK(c.op_context == &seen, "one completion, of the read (inject reports none)");
		FT_CHECK(seen == 1000 && t[0] == 1000, "read %lld after inject, target %lld",
			 (long long)seen, (long long)t[0]);
		fx_expect_none(&fx, 200);
	}
	fx_pbarrier(ctx, &fx);
	window_close(&w);
	fx_close(&fx);
	return 0;
}

/* ---- concurrent ---- */

#define NCONC 3000

static int t_concurrent(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	struct fx_opts o = aopts();
	fx_open(ctx, &o, &fx);
	struct window w;
	window_open(ctx, &fx, &w);
	/* [0]: the summed counter, [1]: the fetch-add ticket; seen[] after the window */
	_Atomic uint8_t *seen = (_Atomic uint8_t *)(fx_shmem + WIN);
	if (ctx->rank == 0) {
		memset(fx_shmem, 0, 16);
		memset((void *)seen, 0, 2 * NCONC);
	}
	fx_pbarrier(ctx, &fx);
	if (ctx->rank != 1) {
		uint64_t one = 1, *tickets = calloc(NCONC, sizeof(uint64_t));
		FT_CHECK(tickets, "calloc");
		for (int i = 0; i < NCONC; i++) {
			FX_OK(&fx, fi_atomic(fx.ep, &one, 1, NULL, fx.peers[1], fx_raddr(&w.rk, 0),
					     w.rk.key, FI_UINT64, FI_SUM, NULL));
			FX_OK(&fx, fi_fetch_atomic(fx.ep, &one, 1, NULL, &tickets[i], NULL,
						   fx.peers[1], fx_raddr(&w.rk, 8), w.rk.key,
						   FI_UINT64, FI_SUM, NULL));
			if (i % 64 == 63)
				fx_wait(&fx, 128, NULL, TMO);
		}
		fx_wait(&fx, 2 * (NCONC % 64), NULL, TMO);
		for (int i = 0; i < NCONC; i++) {
			FT_CHECK(tickets[i] < 2 * NCONC, "ticket %llu", (unsigned long long)tickets[i]);
			FT_CHECK(atomic_fetch_add(&seen[tickets[i]], 1) == 0,
				 "ticket %llu fetched twice", (unsigned long long)tickets[i]);
		}
		free(tickets);
	}
	fx_pbarrier(ctx, &fx);
	if (ctx->rank == 1) {
		uint64_t *v = (uint64_t *)fx_shmem;
		FT_CHECK(v[0] == 2 * NCONC && v[1] == 2 * NCONC, "sum %llu and ticket %llu, want %d",
			 (unsigned long long)v[0], (unsigned long long)v[1], 2 * NCONC);
		for (int i = 0; i < 2 * NCONC; i++)
			FT_CHECK(seen[i] == 1, "ticket %d fetched %u times", i, (unsigned)seen[i]);
	}
	fx_pbarrier(ctx, &fx);
	window_close(&w);
	fx_close(&fx);
	return 0;
}

/* ---- errors ---- */

static void expect_err(struct fx *fx, int err, const char *what)
{
	struct fi_cq_err_entry e;
	fx_wait_err(fx, &e, TMO);
	FT_CHECK(e.err == err, "%s: completion error %d (%s), want %d (%s)", what, e.err,
		 fi_strerror(e.err), err, fi_strerror(err));
	FT_CHECK(e.flags & FI_ATOMIC, "%s: error flags 0x%llx", what, (unsigned long long)e.flags);
}

static int t_errors(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	struct fx_opts o = aopts();
	fx_open(ctx, &o, &fx);
	struct window w;
	window_open(ctx, &fx, &w);
	if (ctx->rank == 0) {
		uint64_t *t = (uint64_t *)fx_shmem, *ro = (uint64_t *)(fx_shmem + WIN / 2);
		t[0] = 5;
		t[WIN / 16 - 1] = 5;
		ro[0] = 5;
		uint64_t v[4] = {1, 1, 1, 1}, r[4];
		/* a key the target never registered */
		FX_OK(&fx, fi_atomic(fx.ep, v, 1, NULL, fx.peers[1], fx_raddr(&w.rk, 0),
				     w.rk.key ^ 0x7700, FI_UINT64, FI_SUM, NULL));
		expect_err(&fx, FI_EKEYREJECTED, "unknown key");
		/* the last element in bounds, the next three beyond the MR */
		FX_OK(&fx, fi_atomic(fx.ep, v, 4, NULL, fx.peers[1],
				     fx_raddr(&w.rk, WIN / 2 - 8), w.rk.key, FI_UINT64, FI_SUM,
				     NULL));
		expect_err(&fx, FI_EACCES, "out of bounds");
		/* a read-only MR: updates refused, FI_ATOMIC_READ served */
		FX_OK(&fx, fi_fetch_atomic(fx.ep, v, 1, NULL, r, NULL, fx.peers[1],
					   fx_raddr(&w.ro, 0), w.ro.key, FI_UINT64, FI_SUM, NULL));
		expect_err(&fx, FI_EACCES, "sum into a read-only MR");
		FX_OK(&fx, fi_fetch_atomic(fx.ep, v, 1, NULL, r, NULL, fx.peers[1],
					   fx_raddr(&w.ro, 0), w.ro.key, FI_UINT64, FI_ATOMIC_READ,
					   NULL));
		fx_wait(&fx, 1, NULL, TMO);
		FT_CHECK(r[0] == 5, "read from the read-only MR: %llu", (unsigned long long)r[0]);
		FT_CHECK(t[0] == 5 && t[WIN / 16 - 1] == 5 && ro[0] == 5,
			 "refused atomics changed the target: %llu %llu %llu",
			 (unsigned long long)t[0], (unsigned long long)t[WIN / 16 - 1],
			 (unsigned long long)ro[0]);
		/* refused at post time: not offered, oversize, mismatched lists */
		ssize_t ret = fi_atomic(fx.ep, v, 1, NULL, fx.peers[1], 0, w.rk.key, FI_DOUBLE,
					FI_BOR, NULL);
		FT_CHECK(ret == -FI_EOPNOTSUPP, "BOR on double: %zd", ret);
		ret = fi_atomic(fx.ep, v, 1, NULL, fx.peers[1], 0, w.rk.key, FI_UINT64, FI_CSWAP,
				NULL);
		FT_CHECK(ret == -FI_EOPNOTSUPP, "CSWAP through fi_atomic: %zd", ret);
		size_t max = 0;
		FT_CHECK(fi_atomicvalid(fx.ep, FI_UINT8, FI_SUM, &max) == 0, "atomicvalid");
		uint8_t *big = calloc(max + 1, 1);
		ret = fi_atomic(fx.ep, big, max + 1, NULL, fx.peers[1], 0, w.rk.key, FI_UINT8, FI_SUM,
				NULL);
		FT_CHECK(ret == -FI_EINVAL, "%zu elements (max %zu): %zd", max + 1, max, ret);
		FX_OK(&fx, fi_atomic(fx.ep, big, max, NULL, fx.peers[1], fx_raddr(&w.rk, 64),
				     w.rk.key, FI_UINT8, FI_SUM, NULL));
		fx_wait(&fx, 1, NULL, TMO);
		free(big);
		big = NULL;
		size_t isz = fx.info->tx_attr->inject_size;
		big = calloc(isz + 1, 1);
		ret = fi_inject_atomic(fx.ep, big, isz + 1, fx.peers[1], 0, w.rk.key, FI_UINT8,
				       FI_SUM);
		FT_CHECK(ret == -FI_EINVAL, "inject of inject_size + 1 = %zu bytes: %zd", isz + 1,
			 ret);
		ret = fi_fetch_atomicmsg(fx.ep, &(struct fi_msg_atomic){.msg_iov = &(struct fi_ioc){
						 v, 1}, .iov_count = 1, .addr = fx.peers[1],
						 .rma_iov = &(struct fi_rma_ioc){0, 1, w.rk.key},
						 .rma_iov_count = 1, .datatype = FI_UINT64,
						 .op = FI_SUM}, &(struct fi_ioc){r, 2}, NULL, 1, 0);
		FT_CHECK(ret == -FI_EINVAL, "result list of 2 for 1 element: %zd", ret);
		free(big);
		fx_expect_none(&fx, 100);
	}
	fx_pbarrier(ctx, &fx);
	window_close(&w);
	fx_close(&fx);
	return 0;
}

/* ---- rma_event ---- */

static struct fid_cntr *rw_cntr, *rr_cntr;

/* The target's endpoint counters for FI_REMOTE_WRITE and FI_REMOTE_READ (before fi_enable). */
static int bind_remote_cntrs(struct fx *fx)
{
	struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC};
	int ret = fi_cntr_open(fx->domain, &ca, &rw_cntr, NULL);
	if (!ret)
		ret = fi_cntr_open(fx->domain, &ca, &rr_cntr, NULL);
	if (!ret)
		ret = fi_ep_bind(fx->ep, &rw_cntr->fid, FI_REMOTE_WRITE);
	if (!ret)
		ret = fi_ep_bind(fx->ep, &rr_cntr->fid, FI_REMOTE_READ);
	return ret;
}

static void wait_cntr(struct fid_cntr *c, uint64_t want, const char *what)
{
	int ret = fi_cntr_wait(c, want, TMO);
	FT_CHECK(ret == 0 && fi_cntr_read(c) == want, "%s: counter %llu, want %llu (%s)", what,
		 (unsigned long long)fi_cntr_read(c), (unsigned long long)want, fi_strerror(-ret));
}

static int t_rma_event(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	struct fx_opts o = {.caps = FI_RMA | FI_ATOMIC | FI_MSG | FI_RMA_EVENT,
			    .pre_enable = bind_remote_cntrs};
	fx_open(ctx, &o, &fx);
	FT_CHECK(fx.info->caps & FI_RMA_EVENT, "FI_RMA_EVENT not granted");
	/* two MRs with counters of their own: A counts writes and reads, B writes only */
	struct fid_mr *mra = NULL, *mrb = NULL;
	struct fid_cntr *a_w = NULL, *a_r = NULL, *b_w = NULL;
	struct fx_rkey mine[2] = {0}, all[2][2];
	if (ctx->rank == 1) {
		struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC};
		FT_CHECK(fi_cntr_open(fx.domain, &ca, &a_w, NULL) == 0 &&
			 fi_cntr_open(fx.domain, &ca, &a_r, NULL) == 0 &&
			 fi_cntr_open(fx.domain, &ca, &b_w, NULL) == 0, "fi_cntr_open");
		struct iovec iova = {fx_shmem, 4096}, iovb = {fx_shmem + 8192, 4096};
		struct fi_mr_attr attr = {.mr_iov = &iova, .iov_count = 1,
					  .access = FI_REMOTE_READ | FI_REMOTE_WRITE,
					  .requested_key = KEY, .iface = FI_HMEM_SYSTEM};
		int ret = fi_mr_regattr(fx.domain, &attr, FI_RMA_EVENT, &mra);
		FT_CHECK(ret == 0, "fi_mr_regattr(FI_RMA_EVENT): %s", fi_strerror(-ret));
		/* B without the flag, as fabtests' multi_mr registers */
		mrb = fx_mr_reg(&fx, iovb.iov_base, 4096, FI_REMOTE_READ | FI_REMOTE_WRITE, KEY + 1,
				&mine[1]);
		FT_CHECK(fi_mr_bind(mra, &a_w->fid, FI_REMOTE_WRITE) == 0 &&
			 fi_mr_bind(mra, &a_r->fid, FI_REMOTE_READ) == 0 &&
			 fi_mr_bind(mrb, &b_w->fid, FI_REMOTE_WRITE) == 0, "fi_mr_bind");
		FT_CHECK(fi_mr_bind(mrb, &a_w->fid, FI_REMOTE_WRITE) == -FI_EINVAL,
			 "a second FI_REMOTE_WRITE counter on one MR accepted");
		FT_CHECK(fi_mr_enable(mra) == 0, "fi_mr_enable");
		mine[0] = (struct fx_rkey){fi_mr_key(mra),
					   (fx.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
						   ? (uint64_t)(uintptr_t)fx_shmem
						   : 0,
					   4096};
	}
	ft_allgather(ctx, mine, sizeof(mine), all);
	struct fx_rkey ra = all[1][0], rb = all[1][1];
	enum { NW = 7, NR = 5 };
	if (ctx->rank == 0) {
		uint8_t b[4096];
		fx_fill(b, sizeof(b), 77, 0);
		for (int i = 0; i < NW; i++)
			FX_OK(&fx, fi_write(fx.ep, b, 100, NULL, fx.peers[1], fx_raddr(&ra, 100 * i),
					    ra.key, NULL));
		for (int i = 0; i < NR; i++)
			FX_OK(&fx, fi_read(fx.ep, b + 1000, 64, NULL, fx.peers[1],
					   fx_raddr(&ra, 64 * i), ra.key, NULL));
		/* one write of three segments: two in A, one in B */
		struct iovec iov = {b, 300};
		struct fi_rma_iov rio[3] = {{fx_raddr(&ra, 0), 100, ra.key},
					    {fx_raddr(&rb, 0), 100, rb.key},
					    {fx_raddr(&ra, 1000), 100, ra.key}};
		struct fi_msg_rma m = {.msg_iov = &iov, .iov_count = 1, .addr = fx.peers[1],
				       .rma_iov = rio, .rma_iov_count = 3};
		FX_OK(&fx, fi_writemsg(fx.ep, &m, 0));
		/* an atomic into B: the target executes it, so it is counted as a write */
		uint32_t one = 1;
		FX_OK(&fx, fi_atomic(fx.ep, &one, 1, NULL, fx.peers[1], fx_raddr(&rb, 512), rb.key,
				     FI_UINT32, FI_SUM, NULL));
		fx_wait(&fx, NW + NR + 2, NULL, TMO);
	} else {
		/* endpoint: NW writes + the 3-segment write (one operation) + the atomic */
		wait_cntr(rw_cntr, NW + 2, "endpoint FI_REMOTE_WRITE");
		wait_cntr(rr_cntr, NR, "endpoint FI_REMOTE_READ");
		/* MRs: every segment that touched them */
		wait_cntr(a_w, NW + 2, "MR A FI_REMOTE_WRITE");
		wait_cntr(a_r, NR, "MR A FI_REMOTE_READ");
		wait_cntr(b_w, 2, "MR B FI_REMOTE_WRITE");
		FX_CHECK_PATTERN(fx_shmem + 1000, 100, 77, 200, "third segment in A");
	}
	fx_pbarrier(ctx, &fx);
	if (ctx->rank == 1) {
		FT_CHECK(fi_cntr_read(rw_cntr) == NW + 2 && fi_cntr_read(a_w) == NW + 2 &&
			 fi_cntr_read(b_w) == 2, "counters moved after the last operation");
		FT_CHECK(fi_close(&mra->fid) == 0 && fi_close(&mrb->fid) == 0, "closing MRs");
		FT_CHECK(fi_close(&a_w->fid) == 0 && fi_close(&a_r->fid) == 0 &&
			 fi_close(&b_w->fid) == 0, "closing MR counters");
	}
	/* the endpoint first: it holds the counters, which hold the domain */
	FT_CHECK(fi_close(&fx.ep->fid) == 0, "closing ep");
	fx.ep = NULL;
	FT_CHECK(fi_close(&rw_cntr->fid) == 0 && fi_close(&rr_cntr->fid) == 0, "closing counters");
	fx_close(&fx);
	return 0;
}

static const struct fx_test tests[] = {
	{"valid", 1, 30, t_valid, NULL},
	{"ops", 2, 60, t_ops, NULL},
	{"vector", 2, 30, t_vector, NULL},
	{"concurrent", 3, 60, t_concurrent, NULL},
	{"errors", 2, 30, t_errors, NULL},
	{"rma_event", 2, 30, t_rma_event, NULL},
};

int main(int argc, char **argv)
{
	return fx_main(argc, argv, tests, sizeof(tests) / sizeof(tests[0]));
}
