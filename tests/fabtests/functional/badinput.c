/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bad input gets a clear error and changes nothing:
 *  - NULL buffers / iovs / messages where forbidden, iov counts of 1025 -> -FI_EINVAL and no
 *    completion, the endpoint still works afterwards;
 *  - zero-length iov entries (accepted with the right bytes, or refused with -FI_EINVAL);
 *  - inject above inject_size, unknown fi_addr, mismatched local/remote RMA lengths;
 *  - RMA outside a registered region, with a wrong or stale key, without FI_REMOTE_WRITE /
 *    FI_REMOTE_READ -> an error (error completion, or an error return) and target and local
 *    memory untouched;
 *  - operations on an endpoint that is not enabled; closing with operations pending;
 *  - a peer SIGKILLed in the middle of a 256 MiB rendezvous -> an error completion within
 *    seconds, no hang, clean close;
 *  - stale /dev/shm/ddtx-<pid>-* files of a SIGKILLed process removed by the next domain
 *    open, live processes' files kept, own files removed on close, file modes 0600;
 *  - malformed address blobs refused by fi_av_insert; well-formed dead ones -> an error on
 *    use, no crash;
 *  - an MR whose memory is unmapped and replaced while it stays open: its key is revoked, RMA
 *    with it fails and nothing lands in the new mapping.
 * Checks that only compare a return code are collected so one run lists every mismatch.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fx.h"
#include "common/provider.h"

#define TMO 20000
#define DDTX_TEST_MIN(a, b) ((a) < (b) ? (a) : (b))

/* ---- soft checks ----------------------------------------------------------------------- */

static int soft_failures;
static void soft(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void soft(bool ok, const char *fmt, ...)
{
	if (ok)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "FAIL: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	soft_failures++;
}
#define EXPECT_EINVAL(call)                                                                \
	do {                                                                               \
		ssize_t r_ = (call);                                                       \
		soft(r_ == -FI_EINVAL, "%s returned %zd (%s), want -FI_EINVAL", #call, r_, \
		     r_ < 0 ? fi_strerror((int)-r_) : "success");                          \
	} while (0)
#define EXPECT_ERR(call)                                                                   \
	do {                                                                               \
		ssize_t r_ = (call);                                                       \
		soft(r_ < 0, "%s returned %zd, want an error", #call, r_);                 \
	} while (0)

/* One message rank 0 -> rank 1 proves both endpoints still work. */
static void still_works(struct ft_ctx *ctx, struct fx *fx, size_t size)
{
	if (ctx->rank == 0) {
		uint8_t *b = fx_alloc(size);
		fx_fill(b, size, 0x5EED, 0);
		FX_OK(fx, fi_tsend(fx->ep, b, size, NULL, fx->peers[1], 0x5EED, b));
		fx_wait(fx, 1, NULL, TMO);
		free(b);
	} else if (ctx->rank == 1) {
		struct fx_rbuf r;
		fx_rbuf_init(&r, size);
		FX_OK(fx, fi_trecv(fx->ep, r.buf, size, NULL, FI_ADDR_UNSPEC, 0x5EED, 0, &r));
		struct fx_comp c;
		fx_wait(fx, 1, &c, TMO);
		FT_CHECK(c.op_context == &r, "a refused operation produced a completion at the peer");
		fx_rbuf_check(&r, 0x5EED, size, "message after bad input");
		fx_rbuf_free(&r);
	}
	fx_pbarrier(ctx, fx);
	fx_expect_none(fx, 100);
}

static int finish(struct ft_ctx *ctx, struct fx *fx)
{
	fx_close(fx);
	return soft_failures ? 1 : 0;
}

/* ---- NULL arguments ------------------------------------------------------------------------ */

static int t_null_args(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	struct fx_opts o = {.caps = FI_MSG | FI_TAGGED | FI_RMA | FI_READ | FI_WRITE |
				    FI_REMOTE_READ | FI_REMOTE_WRITE};
	fx_open(ctx, &o, &fx);
	if (ctx->rank == 0) {
		fi_addr_t p = fx.peers[1];
		struct iovec iov2[2] = {{NULL, 10}, {NULL, 10}};
		uint8_t b[64];
		struct iovec ok_iov = {b, 64};
		struct fi_rma_iov riov = {0, 64, 0x1234};
		EXPECT_EINVAL(fi_send(fx.ep, NULL, 100, NULL, p, NULL));
		EXPECT_EINVAL(fi_recv(fx.ep, NULL, 100, NULL, FI_ADDR_UNSPEC, NULL));
		EXPECT_EINVAL(fi_tsend(fx.ep, NULL, 100, NULL, p, 1, NULL));
		EXPECT_EINVAL(fi_trecv(fx.ep, NULL, 100, NULL, FI_ADDR_UNSPEC, 1, 0, NULL));
		EXPECT_EINVAL(fi_sendv(fx.ep, NULL, NULL, 2, p, NULL));
		EXPECT_EINVAL(fi_recvv(fx.ep, NULL, NULL, 2, FI_ADDR_UNSPEC, NULL));
		EXPECT_EINVAL(fi_sendv(fx.ep, iov2, NULL, 2, p, NULL));
		EXPECT_EINVAL(fi_recvv(fx.ep, iov2, NULL, 2, FI_ADDR_UNSPEC, NULL));
		EXPECT_EINVAL(fi_tsendv(fx.ep, iov2, NULL, 2, p, 1, NULL));
		EXPECT_EINVAL(fi_sendmsg(fx.ep, NULL, 0));
		EXPECT_EINVAL(fi_recvmsg(fx.ep, NULL, 0));
		EXPECT_EINVAL(fi_tsendmsg(fx.ep, NULL, 0));
		EXPECT_EINVAL(fi_trecvmsg(fx.ep, NULL, 0));
		EXPECT_EINVAL(fi_writemsg(fx.ep, NULL, 0));
		EXPECT_EINVAL(fi_readmsg(fx.ep, NULL, 0));
		EXPECT_EINVAL(fi_inject(fx.ep, NULL, 10, p));
		EXPECT_EINVAL(fi_tinject(fx.ep, NULL, 10, p, 1));
		EXPECT_EINVAL(fi_senddata(fx.ep, NULL, 10, NULL, 7, p, NULL));
		EXPECT_EINVAL(fi_write(fx.ep, NULL, 100, NULL, p, 0, 0x1234, NULL));
		EXPECT_EINVAL(fi_read(fx.ep, NULL, 100, NULL, p, 0, 0x1234, NULL));
		EXPECT_EINVAL(fi_inject_write(fx.ep, NULL, 10, p, 0, 0x1234));
		{
			struct fi_msg m = {.msg_iov = iov2, .iov_count = 2, .addr = p};
			EXPECT_EINVAL(fi_sendmsg(fx.ep, &m, 0));
			struct fi_msg_rma rm = {.msg_iov = &ok_iov, .iov_count = 1, .addr = p,
						.rma_iov = NULL, .rma_iov_count = 1};
			EXPECT_EINVAL(fi_writemsg(fx.ep, &rm, 0));
			EXPECT_EINVAL(fi_readmsg(fx.ep, &rm, 0));
			rm.rma_iov = &riov;
			rm.msg_iov = NULL;
			EXPECT_EINVAL(fi_writemsg(fx.ep, &rm, 0));
		}
		{
			/* FI_CLAIM needs a struct fi_context as context */
			struct fi_msg_tagged tm = {.msg_iov = &ok_iov, .iov_count = 1,
						   .addr = FI_ADDR_UNSPEC, .tag = 1, .context = NULL};
			EXPECT_EINVAL(fi_trecvmsg(fx.ep, &tm, FI_CLAIM));
			EXPECT_EINVAL(fi_trecvmsg(fx.ep, &tm, FI_PEEK | FI_CLAIM));
		}
		EXPECT_EINVAL(fi_cq_read(fx.cq, NULL, 1));
		EXPECT_EINVAL(fi_cq_readerr(fx.cq, NULL, 0));
		{
			fi_addr_t fa = 0;
			int r = fi_av_insert(fx.av, NULL, 1, &fa, 0, NULL);
			soft(r == -FI_EINVAL, "fi_av_insert(NULL addr) returned %d, want -FI_EINVAL", r);
			size_t len = 0;
			r = fi_av_lookup(fx.av, fx.peers[1], b, NULL);
			soft(r == -FI_EINVAL, "fi_av_lookup(NULL addrlen) returned %d", r);
			r = fi_av_remove(fx.av, NULL, 1, 0);
			soft(r == -FI_EINVAL, "fi_av_remove(NULL) returned %d", r);
			(void)len;
		}
		{
			struct fid_mr *mr = NULL;
			int r = fi_mr_reg(fx.domain, NULL, 4096, FI_REMOTE_WRITE, 0, 77, 0, &mr, NULL);
			soft(r == -FI_EINVAL, "fi_mr_reg(NULL, 4096) returned %d", r);
			if (!r)
				fi_close(&mr->fid);
			r = fi_mr_regv(fx.domain, NULL, 2, FI_REMOTE_WRITE, 0, 78, 0, &mr, NULL);
			soft(r == -FI_EINVAL, "fi_mr_regv(NULL, 2) returned %d", r);
			if (!r)
				fi_close(&mr->fid);
			r = fi_mr_regattr(fx.domain, NULL, 0, &mr);
			soft(r == -FI_EINVAL, "fi_mr_regattr(NULL) returned %d", r);
			if (!r)
				fi_close(&mr->fid);
		}
		{
			int r = (int)fi_cancel(&fx.ep->fid, (void *)&o); /* nothing posted with it */
			soft(r <= 0, "fi_cancel of an unknown context returned %d", r);
		}
		fx_expect_none(&fx, 100); /* none of these produced a completion */
	}
	fx_pbarrier(ctx, &fx);
	still_works(ctx, &fx, 20000);
	return finish(ctx, &fx);
}

/* ---- iov counts at and above the limit ---------------------------------------------------- */

/*
 * The advertised limit (DDTX_IOV_LIMIT, or FI_DDTX_IOV_LIMIT when the run sets a smaller one)
 * is what every data call accepts: L entries move every byte (send, tagged send into a reversed
 * receive list, RMA write and read of L local entries to L remote segments), L + 1 entries on
 * either side of any call return -FI_EINVAL and post nothing.
 */
static int t_iov_limit(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	struct fx_opts o = {.caps = FI_MSG | FI_TAGGED | FI_RMA | FI_READ | FI_WRITE |
				    FI_REMOTE_READ | FI_REMOTE_WRITE};
	fx_open(ctx, &o, &fx);
	const char *cap_env = getenv("FI_DDTX_IOV_LIMIT");
	size_t cap = cap_env ? strtoul(cap_env, NULL, 0) : 0;
	const size_t L = cap && cap < DDTX_IOV_LIMIT ? cap : DDTX_IOV_LIMIT, N = L + 1, B = 4;
	FT_CHECK(fx.info->tx_attr->iov_limit == L && fx.info->rx_attr->iov_limit == L &&
			 fx.info->tx_attr->rma_iov_limit == L,
		 "limits %zu/%zu/%zu, expected %zu", fx.info->tx_attr->iov_limit,
		 fx.info->rx_attr->iov_limit, fx.info->tx_attr->rma_iov_limit, L);
	uint8_t *mem = fx_alloc(N * B);
	fx_fill(mem, N * B, 3, 0);
	struct iovec *iov = malloc(N * sizeof(*iov));
	void **desc = calloc(N, sizeof(void *));
	struct fi_rma_iov *riov = malloc(N * sizeof(*riov));
	struct fx_rkey mine = {0}, all[2];
	uint8_t *tmem = NULL;
	struct fid_mr *mr = NULL;
	FT_CHECK(mem && iov && desc && riov, "out of memory");
	if (ctx->rank == 1) {
		tmem = fx_alloc(N * B);
		fx_fill(tmem, N * B, 4, 0);
		mr = fx_mr_reg(&fx, tmem, N * B, FI_REMOTE_READ | FI_REMOTE_WRITE, 0x99, &mine);
	}
	ft_allgather(ctx, &mine, sizeof(mine), all);
	for (size_t i = 0; i < N; i++) {
		iov[i] = (struct iovec){mem + B * i, B};
		riov[i] = (struct fi_rma_iov){all[1].base + B * (uint64_t)i, B, all[1].key};
	}
	if (ctx->rank == 0) {
		fi_addr_t p = fx.peers[1];
		EXPECT_EINVAL(fi_sendv(fx.ep, iov, desc, N, p, NULL));
		EXPECT_EINVAL(fi_recvv(fx.ep, iov, desc, N, FI_ADDR_UNSPEC, NULL));
		EXPECT_EINVAL(fi_tsendv(fx.ep, iov, desc, N, p, 1, NULL));
		EXPECT_EINVAL(fi_trecvv(fx.ep, iov, desc, N, FI_ADDR_UNSPEC, 1, 0, NULL));
		EXPECT_EINVAL(fi_writev(fx.ep, iov, desc, N, p, riov[0].addr, all[1].key, NULL));
		EXPECT_EINVAL(fi_readv(fx.ep, iov, desc, N, p, riov[0].addr, all[1].key, NULL));
		struct fi_msg m = {.msg_iov = iov, .desc = desc, .iov_count = N, .addr = p};
		EXPECT_EINVAL(fi_sendmsg(fx.ep, &m, FI_COMPLETION));
		m.addr = FI_ADDR_UNSPEC;
		EXPECT_EINVAL(fi_recvmsg(fx.ep, &m, FI_COMPLETION));
		struct fi_msg_tagged tm = {.msg_iov = iov, .desc = desc, .iov_count = N, .addr = p,
					   .tag = 1};
		EXPECT_EINVAL(fi_tsendmsg(fx.ep, &tm, FI_COMPLETION));
		tm.addr = FI_ADDR_UNSPEC;
		EXPECT_EINVAL(fi_trecvmsg(fx.ep, &tm, FI_COMPLETION));
		struct fi_msg_rma rm = {.msg_iov = iov, .desc = desc, .iov_count = N, .addr = p,
					.rma_iov = riov, .rma_iov_count = L};
		EXPECT_EINVAL(fi_writemsg(fx.ep, &rm, FI_COMPLETION)); /* L + 1 local */
		EXPECT_EINVAL(fi_readmsg(fx.ep, &rm, FI_COMPLETION));
		rm.iov_count = L;
		rm.rma_iov_count = N; /* L + 1 remote */
		EXPECT_EINVAL(fi_writemsg(fx.ep, &rm, FI_COMPLETION));
		EXPECT_EINVAL(fi_readmsg(fx.ep, &rm, FI_COMPLETION));
		fx_expect_none(&fx, 100);
		/* exactly L works: a write of L x B bytes at L remote places, then a read of them
		 * back in reverse order (the target's pattern, checked here) */
		rm.rma_iov_count = L;
		FX_OK(&fx, fi_writemsg(fx.ep, &rm, FI_COMPLETION));
		fx_wait(&fx, 1, NULL, TMO);
		fx_pbarrier(ctx, &fx); /* the write is in */
		fx_pbarrier(ctx, &fx); /* the target checked it and refilled its region */
		uint8_t *back = fx_alloc(N * B);
		memset(back, 0, N * B);
		for (size_t i = 0; i < L; i++)
			iov[i] = (struct iovec){back + B * (L - 1 - i), B};
		rm.msg_iov = iov;
		FX_OK(&fx, fi_readmsg(fx.ep, &rm, FI_COMPLETION));
		fx_wait(&fx, 1, NULL, TMO);
		for (size_t i = 0; i < L; i++)
			FX_CHECK_PATTERN(back + B * (L - 1 - i), B, 5, B * i,
					 "%zu-entry read, entry %zu", L, i);
		FT_CHECK(!back[B * L], "byte after the %zu-entry read written", L);
		for (size_t i = 0; i < N; i++)
			iov[i] = (struct iovec){mem + B * i, B};
		/* and an L-entry message, untagged and tagged */
		struct fi_msg m2 = {.msg_iov = iov, .desc = desc, .iov_count = L, .addr = p,
				    .context = iov};
		FX_OK(&fx, fi_sendmsg(fx.ep, &m2, FI_COMPLETION));
		fx_wait(&fx, 1, NULL, TMO);
		struct fi_msg_tagged tm2 = {.msg_iov = iov, .desc = desc, .iov_count = L,
					    .addr = p, .tag = 2, .context = iov};
		FX_OK(&fx, fi_tsendmsg(fx.ep, &tm2, FI_COMPLETION));
		fx_wait(&fx, 1, NULL, TMO);
		fx_pbarrier(ctx, &fx);
		free(back);
	} else {
		fx_pbarrier(ctx, &fx); /* the write is in */
		FX_CHECK_PATTERN(tmem, L * B, 3, 0, "%zu-entry write", L);
		FX_CHECK_PATTERN(tmem + L * B, B, 4, L * B, "bytes after the %zu-entry write", L);
		fx_fill(tmem, N * B, 5, 0);
		fx_pbarrier(ctx, &fx);
		uint8_t *r = fx_alloc(N * B);
		struct iovec *rl = malloc(L * sizeof(*rl));
		FT_CHECK(rl, "out of memory");
		for (size_t k = 0; k < 2; k++) {
			memset(r, 0, N * B);
			for (size_t i = 0; i < L; i++)
				rl[i] = (struct iovec){r + B * (L - 1 - i), B}; /* reversed */
			if (k == 0) {
				struct fi_msg m = {.msg_iov = rl, .desc = desc, .iov_count = L,
						   .addr = FI_ADDR_UNSPEC, .context = r};
				FX_OK(&fx, fi_recvmsg(fx.ep, &m, FI_COMPLETION));
			} else {
				struct fi_msg_tagged tm = {.msg_iov = rl, .desc = desc,
							   .iov_count = L,
							   .addr = FI_ADDR_UNSPEC, .tag = 2,
							   .context = r};
				FX_OK(&fx, fi_trecvmsg(fx.ep, &tm, FI_COMPLETION));
			}
			fx_wait(&fx, 1, NULL, TMO);
			for (size_t i = 0; i < L; i++)
				FX_CHECK_PATTERN(r + B * (L - 1 - i), B, 3, B * i,
						 "%zu-entry %s message, entry %zu", L,
						 k ? "tagged" : "untagged", i);
			FT_CHECK(!r[B * L], "byte after the %zu-entry message written", L);
		}
		fx_pbarrier(ctx, &fx);
		fi_close(&mr->fid);
		free(rl);
		free(tmem);
		free(r);
	}
	fx_pbarrier(ctx, &fx);
	still_works(ctx, &fx, 100);
	free(mem);
	free(iov);
	free(desc);
	free(riov);
	return finish(ctx, &fx);
}

/* ---- zero-length entries ----------------------------------------------------------------- */

static int t_zero_len(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	struct fx_opts o = {.caps = FI_MSG | FI_TAGGED};
	fx_open(ctx, &o, &fx);
	/* sizes: eager and rendezvous; zero-length entries (one with a NULL base) inside both lists */
	static const size_t sizes[] = {60, 60000};
	for (int k = 0; k < 2; k++) {
		size_t a = sizes[k] / 6, b = sizes[k] / 3, c = sizes[k] - a - b;
		int accepted = 1;
		if (ctx->rank == 0) {
			uint8_t *buf = fx_alloc(sizes[k]);
			fx_fill(buf, sizes[k], 90 + (uint64_t)k, 0);
			struct iovec iov[5] = {{buf, a}, {buf + a, 0}, {buf + a, b}, {NULL, 0},
					       {buf + a + b, c}};
			fx_pbarrier(ctx, &fx);
			ssize_t r = FX_POST(&fx, fi_tsendv(fx.ep, iov, NULL, 5, fx.peers[1], 50 + k, buf));
			if (r == 0) {
				fx_wait(&fx, 1, NULL, TMO);
			} else {
				soft(r == -FI_EINVAL, "zero-length send entries: %zd", r);
				accepted = 0;
				/* send it plainly so the receiver can go on */
				FX_OK(&fx, fi_tsend(fx.ep, buf, sizes[k], NULL, fx.peers[1], 50 + k, buf));
				fx_wait(&fx, 1, NULL, TMO);
			}
			printf("  zero-length iov entries in a %zu-byte send: %s\n", sizes[k],
			       accepted ? "accepted" : "refused with -FI_EINVAL");
			free(buf);
		} else {
			struct fx_rbuf rb;
			fx_rbuf_init(&rb, sizes[k]);
			size_t x = sizes[k] / 2;
			struct iovec iov[4] = {{NULL, 0}, {rb.buf, x}, {rb.buf + x, 0},
					       {rb.buf + x, sizes[k] - x}};
			ssize_t r = fi_trecvv(fx.ep, iov, NULL, 4, FI_ADDR_UNSPEC, 50 + k, 0, &rb);
			if (r) {
				soft(r == -FI_EINVAL, "zero-length receive entries: %zd", r);
				printf("  zero-length iov entries in a receive: refused\n");
				FX_OK(&fx, fi_trecv(fx.ep, rb.buf, sizes[k], NULL, FI_ADDR_UNSPEC,
						    50 + k, 0, &rb));
			}
			fx_pbarrier(ctx, &fx);
			struct fx_comp cc;
			fx_wait(&fx, 1, &cc, TMO);
			FT_CHECK(cc.len == sizes[k], "len %zu", cc.len);
			fx_rbuf_check(&rb, 90 + (uint64_t)k, sizes[k], "message with zero-length entries");
			fx_rbuf_free(&rb);
		}
		fx_pbarrier(ctx, &fx);
	}
	/* a message of zero bytes as an empty iov list */
	if (ctx->rank == 0) {
		ssize_t r = FX_POST(&fx, fi_tsendv(fx.ep, NULL, NULL, 0, fx.peers[1], 60, NULL));
		if (r == 0)
			fx_wait(&fx, 1, NULL, TMO);
		else
			soft(r == -FI_EINVAL, "empty iov list send: %zd", r);
		printf("  empty iov list send: %s\n", r == 0 ? "accepted" : "refused");
		if (r) {
			static uint8_t one;
			FX_OK(&fx, fi_tsend(fx.ep, &one, 0, NULL, fx.peers[1], 60, NULL));
			fx_wait(&fx, 1, NULL, TMO);
		}
	} else {
		uint8_t dummy[8];
		FX_OK(&fx, fi_trecv(fx.ep, dummy, 8, NULL, FI_ADDR_UNSPEC, 60, 0, dummy));
		struct fx_comp cc;
		fx_wait(&fx, 1, &cc, TMO);
		FT_CHECK(cc.len == 0, "empty message len %zu", cc.len);
	}
	fx_pbarrier(ctx, &fx);
	still_works(ctx, &fx, 1000);
	return finish(ctx, &fx);
}

/* ---- inject above inject_size, unknown fi_addr ---------------------------------------------- */

/* A posted operation that must fail: an error return, or an error completion. */
static void expect_op_error(struct fx *fx, ssize_t posted, void *ctx, const char *what)
{
	if (posted < 0) {
		soft(posted != -FI_EAGAIN, "%s: -FI_EAGAIN", what);
		printf("  %s: refused at post (%s)\n", what, fi_strerror((int)-posted));
		return;
	}
	struct fx_comp c;
	struct fi_cq_err_entry e;
	int r = fx_wait_any(fx, &c, &e, 10000);
	soft(r == -FI_EAVAIL, "%s: %s", what,
	     r == 1 ? "completed successfully" : "no error completion within 10 s");
	if (r == -FI_EAVAIL) {
		soft(e.err != 0, "%s: error completion with err 0", what);
		soft(e.op_context == ctx, "%s: error completion context %p want %p", what,
		     e.op_context, ctx);
		printf("  %s: error completion %d (%s)\n", what, e.err, fi_strerror(e.err));
	}
}

static int t_inject_and_addr(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	struct fx_opts o = {.caps = FI_MSG | FI_TAGGED | FI_RMA | FI_READ | FI_WRITE |
				    FI_REMOTE_READ | FI_REMOTE_WRITE};
	fx_open(ctx, &o, &fx);
	if (ctx->rank == 0) {
		size_t big = fx.info->tx_attr->inject_size + 1;
		uint8_t *b = fx_alloc(big + 200000);
		fx_fill(b, big + 200000, 1, 0);
		fi_addr_t p = fx.peers[1];
		EXPECT_EINVAL(fi_inject(fx.ep, b, big, p));
		EXPECT_EINVAL(fi_tinject(fx.ep, b, big, p, 1));
		EXPECT_EINVAL(fi_injectdata(fx.ep, b, big, 5, p));
		EXPECT_EINVAL(fi_tinjectdata(fx.ep, b, big, 5, p, 1));
		EXPECT_EINVAL(fi_inject_write(fx.ep, b, big, p, 0, 0));
		struct iovec iov = {b, big};
		struct fi_msg m = {.msg_iov = &iov, .iov_count = 1, .addr = p};
		EXPECT_EINVAL(fi_sendmsg(fx.ep, &m, FI_INJECT));
		fx_expect_none(&fx, 50);
		/* unknown fi_addr values */
		static const fi_addr_t bad[] = {777, FI_ADDR_UNSPEC, FI_ADDR_NOTAVAIL};
		for (int i = 0; i < 3; i++) {
			char what[64];
			snprintf(what, sizeof(what), "fi_tsend to fi_addr 0x%llx",
				 (unsigned long long)bad[i]);
			expect_op_error(&fx, fi_tsend(fx.ep, b, 100, NULL, bad[i], 1, b), b, what);
			snprintf(what, sizeof(what), "100 KB fi_tsend to fi_addr 0x%llx",
				 (unsigned long long)bad[i]);
			expect_op_error(&fx, fi_tsend(fx.ep, b, 200000, NULL, bad[i], 1, b), b, what);
			snprintf(what, sizeof(what), "fi_write to fi_addr 0x%llx",
				 (unsigned long long)bad[i]);
			expect_op_error(&fx, fi_write(fx.ep, b, 100, NULL, bad[i], 0, 0, b), b, what);
			snprintf(what, sizeof(what), "fi_inject to fi_addr 0x%llx",
				 (unsigned long long)bad[i]);
			ssize_t r = fi_inject(fx.ep, b, 10, bad[i]);
			if (r == 0) {
				/* an inject cannot report it later; at most an error entry */
				struct fx_comp c;
				struct fi_cq_err_entry e;
				int w = fx_wait_any(&fx, &c, &e, 200);
				soft(w != 1, "%s: a successful completion", what);
			}
		}
		free(b);
	}
	fx_pbarrier(ctx, &fx);
	still_works(ctx, &fx, 30000);
	return finish(ctx, &fx);
}

/* ---- RMA outside regions, wrong keys, missing access ------------------------------------- */

#define TSEED 0x7A6E7
#define BLEN (192 * 1024)

struct keys {
	struct fx_rkey rw, wo, ro, closed;
};

static int t_rma_bad(struct ft_ctx *ctx, void *arg)
{
	uint64_t mode = (uint64_t)(uintptr_t)arg;
	struct fx fx;
	struct fx_opts o = {.caps = FI_MSG | FI_TAGGED | FI_RMA | FI_READ | FI_WRITE |
				    FI_REMOTE_READ | FI_REMOTE_WRITE,
			    .mr_mode = mode};
	fx_open(ctx, &o, &fx);
	struct keys mine = {0}, all[2];
	uint8_t *B = NULL;
	struct fid_mr *mrs[3] = {NULL};
	if (ctx->rank == 1) {
		B = fx_alloc(BLEN);
		fx_fill(B, BLEN, TSEED, 0);
		mrs[0] = fx_mr_reg(&fx, B + 65536, 65536, FI_REMOTE_READ | FI_REMOTE_WRITE,
				   0x8000000000000011ull, &mine.rw);
		mrs[1] = fx_mr_reg(&fx, B, 16384, FI_REMOTE_WRITE, 0x8000000000000012ull, &mine.wo);
		mrs[2] = fx_mr_reg(&fx, B + 16384, 16384, FI_REMOTE_READ, 0x8000000000000013ull,
				   &mine.ro);
		struct fid_mr *c = fx_mr_reg(&fx, B + 32768, 16384, FI_REMOTE_READ | FI_REMOTE_WRITE,
					     0x8000000000000014ull, &mine.closed);
		FT_CHECK(fi_close(&c->fid) == 0, "closing an MR");
	}
	ft_allgather(ctx, &mine, sizeof(mine), all);
	struct keys k = all[1];
	uint8_t *L = fx_alloc(65536 + 128); /* local buffer, canary-filled */
	fx_fill(L, 65536 + 128, 0x10CA1, 0);
	uint8_t *D = fx_alloc(65536);       /* data to write */
	fx_fill(D, 65536, 0xDA7A, 0);
	const uint64_t badkey = 0x00DEAD0000BEEF00ull;
	int ncase = 0;
	for (int cs = 0;; cs++) {
		char what[128] = "";
		bool done = false;
		if (ctx->rank == 0) {
			fi_addr_t p = fx.peers[1];
			ssize_t r = 0;
			void *cx = &what;
			struct fi_rma_iov riov[5];
			struct iovec liov = {D, 0};
			struct fi_msg_rma m = {.msg_iov = &liov, .iov_count = 1, .addr = p,
					       .rma_iov = riov, .context = cx};
			switch (cs) {
			case 0:
				snprintf(what, sizeof(what), "write crossing the end of the region");
				r = fi_write(fx.ep, D, 200, NULL, p, fx_raddr(&k.rw, 65536 - 100), k.rw.key, cx);
				break;
			case 1:
				snprintf(what, sizeof(what), "write starting before the region");
				r = fi_write(fx.ep, D, 200, NULL, p, fx_raddr(&k.rw, 0) - 100, k.rw.key, cx);
				break;
			case 2:
				snprintf(what, sizeof(what), "write whose address + length wraps");
				r = fi_write(fx.ep, D, 100, NULL, p, UINT64_MAX - 50, k.rw.key, cx);
				break;
			case 3:
				snprintf(what, sizeof(what), "write entirely past the region");
				r = fi_write(fx.ep, D, 100, NULL, p, fx_raddr(&k.rw, 65536 + 4096), k.rw.key, cx);
				break;
			case 4:
				snprintf(what, sizeof(what), "write with a wrong key");
				r = fi_write(fx.ep, D, 100, NULL, p, fx_raddr(&k.rw, 0), badkey, cx);
				break;
			case 5:
				snprintf(what, sizeof(what), "write with the key of a closed MR");
				r = fi_write(fx.ep, D, 100, NULL, p, fx_raddr(&k.closed, 0), k.closed.key, cx);
				break;
			case 6:
				snprintf(what, sizeof(what), "write to an MR without FI_REMOTE_WRITE");
				r = fi_write(fx.ep, D, 100, NULL, p, fx_raddr(&k.ro, 0), k.ro.key, cx);
				break;
			case 7:
				snprintf(what, sizeof(what), "read from an MR without FI_REMOTE_READ");
				r = fi_read(fx.ep, L + 64, 100, NULL, p, fx_raddr(&k.wo, 0), k.wo.key, cx);
				break;
			case 8:
				snprintf(what, sizeof(what), "read crossing the end of the region");
				r = fi_read(fx.ep, L + 64, 200, NULL, p, fx_raddr(&k.rw, 65536 - 100), k.rw.key, cx);
				break;
			case 9:
				snprintf(what, sizeof(what), "read with a wrong key");
				r = fi_read(fx.ep, L + 64, 100, NULL, p, fx_raddr(&k.rw, 0), badkey, cx);
				break;
			case 10:
				snprintf(what, sizeof(what),
					 "writemsg of 5 rma_iov, the 3rd outside the region");
				for (int i = 0; i < 5; i++)
					riov[i] = (struct fi_rma_iov){fx_raddr(&k.rw, 1000 * (uint64_t)i), 100, k.rw.key};
				riov[2].addr = fx_raddr(&k.rw, 65536 - 50);
				liov.iov_len = 500;
				m.rma_iov_count = 5;
				r = fi_writemsg(fx.ep, &m, FI_COMPLETION);
				break;
			case 11:
				snprintf(what, sizeof(what), "writemsg of 5 rma_iov, the 5th with a wrong key");
				for (int i = 0; i < 5; i++)
					riov[i] = (struct fi_rma_iov){fx_raddr(&k.rw, 1000 * (uint64_t)i), 100, k.rw.key};
				riov[4].key = badkey;
				liov.iov_len = 500;
				m.rma_iov_count = 5;
				r = fi_writemsg(fx.ep, &m, FI_COMPLETION);
				break;
			case 12:
				snprintf(what, sizeof(what), "writemsg of 5 rma_iov, the 2nd in a read-only MR");
				for (int i = 0; i < 5; i++)
					riov[i] = (struct fi_rma_iov){fx_raddr(&k.rw, 1000 * (uint64_t)i), 100, k.rw.key};
				riov[1] = (struct fi_rma_iov){fx_raddr(&k.ro, 0), 100, k.ro.key};
				liov.iov_len = 500;
				m.rma_iov_count = 5;
				r = fi_writemsg(fx.ep, &m, FI_COMPLETION);
				break;
			case 13:
				snprintf(what, sizeof(what), "readmsg of 5 rma_iov, the 4th outside the region");
				for (int i = 0; i < 5; i++)
					riov[i] = (struct fi_rma_iov){fx_raddr(&k.rw, 1000 * (uint64_t)i), 100, k.rw.key};
				riov[3].addr = fx_raddr(&k.rw, 70000);
				liov.iov_base = L + 64;
				liov.iov_len = 500;
				m.rma_iov_count = 5;
				r = fi_readmsg(fx.ep, &m, FI_COMPLETION);
				break;
			case 14:
				snprintf(what, sizeof(what),
					 "writemsg with 100 local bytes for 50 remote bytes");
				riov[0] = (struct fi_rma_iov){fx_raddr(&k.rw, 0), 50, k.rw.key};
				liov.iov_len = 100;
				m.rma_iov_count = 1;
				r = fi_writemsg(fx.ep, &m, FI_COMPLETION);
				break;
			case 15:
				snprintf(what, sizeof(what), "writedata crossing the end of the region");
				r = fi_writedata(fx.ep, D, 200, NULL, 42, p, fx_raddr(&k.rw, 65500), k.rw.key, cx);
				break;
			case 16:
				snprintf(what, sizeof(what), "64 KiB write at offset 1 of a 64 KiB region");
				r = fi_write(fx.ep, D, 65536, NULL, p, fx_raddr(&k.rw, 1), k.rw.key, cx);
				break;
			case 17: {
				snprintf(what, sizeof(what), "inject_write with a wrong key");
				r = fi_inject_write(fx.ep, D, 64, p, fx_raddr(&k.rw, 0), badkey);
				if (r == 0) {
					struct fx_comp c;
					struct fi_cq_err_entry e;
					int w = fx_wait_any(&fx, &c, &e, 300);
					soft(w != 1, "%s: a successful completion", what);
				}
				r = 1; /* no completion to expect */
				break;
			}
			default:
				done = true;
				break;
			}
			if (!done && r != 1) {
				expect_op_error(&fx, r, cx, what);
				/* local memory untouched by failed reads */
				size_t bad = fx_find_bad(L, 65536 + 128, 0x10CA1, 0);
				soft(bad == (size_t)-1, "%s: local byte %zu changed", what, bad);
				if (bad != (size_t)-1)
					fx_fill(L, 65536 + 128, 0x10CA1, 0);
			}
			fx_sh->flag[0] = done;
		}
		fx_pbarrier(ctx, &fx);
		done = fx_sh->flag[0];
		if (ctx->rank == 1 && !done) {
			size_t bad = fx_find_bad(B, BLEN, TSEED, 0);
			soft(bad == (size_t)-1, "case %d: target byte %zu changed (region offset %ld)", cs,
			     bad, (long)bad - 65536);
			if (bad != (size_t)-1)
				fx_fill(B, BLEN, TSEED, 0);
			/* no remote completion for a failed writedata */
			struct fx_comp c;
			struct fi_cq_err_entry e;
			int w = fx_wait_any(&fx, &c, &e, 30);
			soft(w == -FI_ETIMEDOUT, "case %d: the target got a %s completion", cs,
			     w == 1 ? "successful" : "error");
		}
		fx_pbarrier(ctx, &fx);
		if (done)
			break;
		ncase++;
	}
	/* valid RMA still works, in every region with the right access */
	if (ctx->rank == 0) {
		FX_OK(&fx, fi_write(fx.ep, D, 65536, NULL, fx.peers[1], fx_raddr(&k.rw, 0), k.rw.key, D));
		fx_wait(&fx, 1, NULL, TMO);
		FX_OK(&fx, fi_write(fx.ep, D, 16384, NULL, fx.peers[1], fx_raddr(&k.wo, 0), k.wo.key, D));
		fx_wait(&fx, 1, NULL, TMO);
		FX_OK(&fx, fi_read(fx.ep, L + 64, 16384, NULL, fx.peers[1], fx_raddr(&k.ro, 0), k.ro.key, L));
		fx_wait(&fx, 1, NULL, TMO);
		FX_CHECK_PATTERN(L + 64, 16384, TSEED, 16384, "read of the read-only region");
	}
	fx_pbarrier(ctx, &fx);
	if (ctx->rank == 1) {
		FX_CHECK_PATTERN(B + 65536, 65536, 0xDA7A, 0, "valid write after the errors");
		FX_CHECK_PATTERN(B, 16384, 0xDA7A, 0, "valid write to the write-only region");
		FX_CHECK_PATTERN(B + 16384, 65536 - 16384, TSEED, 16384, "untouched regions");
		for (int i = 0; i < 3; i++)
			fi_close(&mrs[i]->fid);
		free(B);
	}
	printf("  rank %d: %d bad RMA cases\n", ctx->rank, ncase);
	free(L);
	free(D);
	fx_pbarrier(ctx, &fx);
	return finish(ctx, &fx);
}


/* ---- RMA into registered pages the target made read-only / inaccessible --------------------- */

static int t_rma_protected(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	fx_open(ctx, &(struct fx_opts){.caps = FI_MSG | FI_TAGGED | FI_RMA | FI_READ | FI_WRITE |
						FI_REMOTE_READ | FI_REMOTE_WRITE,
				    .mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR},
		&fx);
	long pg = sysconf(_SC_PAGESIZE);
	struct fx_rkey mine = {0}, all[2];
	uint8_t *t = NULL;
	struct fid_mr *mr = NULL;
	int refused = 0;
	if (ctx->rank == 1) {
		t = mmap(NULL, (size_t)pg * 3, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		FT_CHECK(t != MAP_FAILED, "mmap");
		fx_fill(t, (size_t)pg * 3, 6, 0);
		mr = fx_mr_reg(&fx, t, (size_t)pg * 3, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, &mine);
		/* page 1 read-only, page 2 inaccessible, after registration */
		FT_CHECK(mprotect(t + pg, (size_t)pg, PROT_READ) == 0, "mprotect");
		FT_CHECK(mprotect(t + 2 * pg, (size_t)pg, PROT_NONE) == 0, "mprotect");
	}
	ft_allgather(ctx, &mine, sizeof(mine), all);
	(void)refused;
	if (ctx->rank == 0) {
		uint8_t *b = fx_alloc((size_t)pg * 3);
		fx_fill(b, (size_t)pg * 3, 7, 0);
		expect_op_error(&fx, FX_POST(&fx, fi_write(fx.ep, b, (size_t)pg, NULL, fx.peers[1],
							   all[1].base + (uint64_t)pg, all[1].key, b)),
				b, "write into a registered page made read-only");
		expect_op_error(&fx, FX_POST(&fx, fi_write(fx.ep, b, 100, NULL, fx.peers[1],
							   all[1].base + 2 * (uint64_t)pg, all[1].key, b)),
				b, "write into a registered page made PROT_NONE");
		expect_op_error(&fx, FX_POST(&fx, fi_read(fx.ep, b, 100, NULL, fx.peers[1],
							  all[1].base + 2 * (uint64_t)pg, all[1].key, b)),
				b, "read from a registered page made PROT_NONE");
		/* page 0 is still fine */
		FX_OK(&fx, fi_write(fx.ep, b, 100, NULL, fx.peers[1], all[1].base, all[1].key, b));
		fx_wait(&fx, 1, NULL, TMO);
		free(b);
	}
	fx_pbarrier(ctx, &fx);
	if (ctx->rank == 1) {
		FX_CHECK_PATTERN(t, 100, 7, 0, "write to the writable page");
		FX_CHECK_PATTERN(t + 100, (size_t)pg - 100, 6, 100, "rest of the writable page");
		FX_CHECK_PATTERN(t + pg, (size_t)pg, 6, (size_t)pg, "read-only page");
		fi_close(&mr->fid);
		munmap(t, (size_t)pg * 3);
	}
	fx_pbarrier(ctx, &fx);
	still_works(ctx, &fx, 100);
	return finish(ctx, &fx);
}


/* ---- a zero-copy receive into memory the receiver cannot write (an application bug):
 * both sides get an error completion, nobody hangs, the endpoints keep working -------------- */

static int t_recv_readonly(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	fx_open(ctx, &(struct fx_opts){.caps = FI_MSG | FI_TAGGED, .scheme = arg}, &fx);
	const size_t n = 1 << 20;
	if (ctx->rank == 0) {
		uint8_t *b = fx_alloc(n);
		fx_fill(b, n, 8, 0);
		fx_pbarrier(ctx, &fx);
		FX_OK(&fx, fi_tsend(fx.ep, b, n, NULL, fx.peers[1], 3, b));
		struct fx_comp c;
		struct fi_cq_err_entry e;
		int w = fx_wait_any(&fx, &c, &e, 15000);
		soft(w != -FI_ETIMEDOUT, "sender: no completion within 15 s");
		printf("  sender: %s\n", w == 1 ? "success" : w == -FI_EAVAIL ? fi_strerror(e.err) : "none");
		free(b);
	} else {
		uint8_t *r = mmap(NULL, n, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		FT_CHECK(r != MAP_FAILED, "mmap");
		FX_OK(&fx, fi_trecv(fx.ep, r, n, NULL, FI_ADDR_UNSPEC, 3, 0, r));
		fx_pbarrier(ctx, &fx);
		struct fx_comp c;
		struct fi_cq_err_entry e;
		int w = fx_wait_any(&fx, &c, &e, 15000);
		soft(w == -FI_EAVAIL, "receive into read-only memory: %s",
		     w == 1 ? "reported success" : "no completion within 15 s");
		if (w == -FI_EAVAIL)
			printf("  receiver: error completion %d (%s)\n", e.err, fi_strerror(e.err));
		munmap(r, n);
	}
	fx_pbarrier(ctx, &fx);
	still_works(ctx, &fx, 100000);
	return finish(ctx, &fx);
}

/* ---- MR registration errors ----------------------------------------------------------------- */

static int t_mr_bad(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	fx_open(ctx, &(struct fx_opts){.mr_mode = 0}, &fx);
	uint8_t *a = fx_alloc(8192), *b = fx_alloc(8192);
	struct fid_mr *m1 = NULL, *m2 = NULL, *m3 = NULL;
	int r = fi_mr_reg(fx.domain, a, 8192, FI_REMOTE_WRITE, 0, 5, 0, &m1, NULL);
	FT_CHECK(r == 0, "fi_mr_reg key 5: %s", fi_strerror(-r));
	r = fi_mr_reg(fx.domain, b, 8192, FI_REMOTE_WRITE, 0, 5, 0, &m2, NULL);
	soft(r == -FI_ENOKEY, "a second MR with key 5: %d (%s), want -FI_ENOKEY", r, fi_strerror(-r));
	if (!r)
		fi_close(&m2->fid);
	/* MPICH's dynamic windows try [base, UINTPTR_MAX): must fail cleanly */
	r = fi_mr_reg(fx.domain, a, UINTPTR_MAX - (uintptr_t)a, FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 6,
		      0, &m3, NULL);
	soft(r < 0, "registering [base, UINTPTR_MAX) succeeded");
	if (!r)
		fi_close(&m3->fid);
	r = fi_mr_reg(fx.domain, NULL, SIZE_MAX, FI_REMOTE_WRITE, 0, 7, 0, &m3, NULL);
	soft(r < 0, "registering [0, SIZE_MAX) succeeded");
	if (!r)
		fi_close(&m3->fid);
	/* an unmapped range */
	void *hole = mmap(NULL, 1 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(hole, 1 << 20);
	r = fi_mr_reg(fx.domain, hole, 1 << 20, FI_REMOTE_WRITE, 0, 8, 0, &m3, NULL);
	printf("  registering an unmapped range: %s\n", r ? fi_strerror(-r) : "accepted");
	if (!r)
		fi_close(&m3->fid);
	FT_CHECK(fi_close(&m1->fid) == 0, "close");
	r = fi_mr_reg(fx.domain, b, 8192, FI_REMOTE_WRITE, 0, 5, 0, &m2, NULL);
	soft(r == 0, "key 5 reusable after close: %d", r);
	if (!r)
		fi_close(&m2->fid);
	free(a);
	free(b);
	return finish(ctx, &fx);
}

/* ---- operations on an endpoint that is not enabled --------------------------------------------- */

static int t_not_enabled(struct ft_ctx *ctx, void *arg)
{
	struct fi_info *info = NULL;
	struct fx_opts o = {.caps = FI_MSG | FI_TAGGED | FI_RMA};
	FT_CHECK(fx_getinfo(&o, &info) == 0, "fi_getinfo");
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_cq *cq, *cq2;
	struct fid_ep *ep, *ep2;
	FT_CHECK(fi_fabric(info->fabric_attr, &fab, NULL) == 0 && fi_domain(fab, info, &dom, NULL) == 0,
		 "fabric/domain");
	struct fi_av_attr aa = {.type = FI_AV_TABLE};
	struct fi_cq_attr qa = {.format = FI_CQ_FORMAT_TAGGED};
	FT_CHECK(fi_av_open(dom, &aa, &av, NULL) == 0 && fi_cq_open(dom, &qa, &cq, NULL) == 0 &&
			 fi_cq_open(dom, &qa, &cq2, NULL) == 0,
		 "av/cq");
	/* ep2: a working endpoint in the same domain, the destination */
	FT_CHECK(fi_endpoint(dom, info, &ep2, NULL) == 0 && fi_ep_bind(ep2, &av->fid, 0) == 0 &&
			 fi_ep_bind(ep2, &cq2->fid, FI_TRANSMIT | FI_RECV) == 0 && fi_enable(ep2) == 0,
		 "ep2");
	uint8_t name[256];
	size_t nl = sizeof(name);
	FT_CHECK(fi_getname(&ep2->fid, name, &nl) == 0, "getname");
	fi_addr_t dst;
	FT_CHECK(fi_av_insert(av, name, 1, &dst, 0, NULL) == 1, "insert");
	FT_CHECK(fi_endpoint(dom, info, &ep, NULL) == 0 && fi_ep_bind(ep, &av->fid, 0) == 0 &&
			 fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV) == 0,
		 "ep");
	uint8_t b[100];
	memset(b, 1, sizeof(b));
	EXPECT_ERR(fi_send(ep, b, 100, NULL, dst, NULL));
	EXPECT_ERR(fi_recv(ep, b, 100, NULL, FI_ADDR_UNSPEC, NULL));
	EXPECT_ERR(fi_tsend(ep, b, 100, NULL, dst, 1, NULL));
	EXPECT_ERR(fi_trecv(ep, b, 100, NULL, FI_ADDR_UNSPEC, 1, 0, NULL));
	EXPECT_ERR(fi_inject(ep, b, 10, dst));
	EXPECT_ERR(fi_write(ep, b, 10, NULL, dst, 0, 0, NULL));
	EXPECT_ERR(fi_read(ep, b, 10, NULL, dst, 0, 0, NULL));
	struct fi_cq_tagged_entry e;
	soft(fi_cq_read(cq, &e, 1) == -FI_EAGAIN, "completion from a refused operation");
	/* once enabled it works, to another endpoint of the same process */
	FT_CHECK(fi_enable(ep) == 0, "fi_enable");
	uint8_t rb[100] = {0};
	FT_CHECK(fi_trecv(ep2, rb, 100, NULL, FI_ADDR_UNSPEC, 3, 0, rb) == 0, "trecv");
	FT_CHECK(fi_tsend(ep, b, 100, NULL, dst, 3, b) == 0, "tsend after enable");
	int got = 0;
	double t0 = ft_now();
	while (got < 2 && ft_now() - t0 < 10) {
		if (fi_cq_read(cq, &e, 1) == 1)
			got++;
		if (fi_cq_read(cq2, &e, 1) == 1)
			got++;
	}
	soft(got == 2 && rb[0] == 1 && rb[99] == 1,
	     "message between two endpoints of one domain: %d completions", got);
	FT_CHECK(fi_close(&ep->fid) == 0 && fi_close(&ep2->fid) == 0 && fi_close(&cq->fid) == 0 &&
			 fi_close(&cq2->fid) == 0 && fi_close(&av->fid) == 0 &&
			 fi_close(&dom->fid) == 0 && fi_close(&fab->fid) == 0,
		 "closing");
	fi_freeinfo(info);
	return soft_failures ? 1 : 0;
}

/* ---- closing with operations pending ---------------------------------------------------------- */

static int t_close_pending(struct ft_ctx *ctx, void *arg)
{
	struct fx fx;
	fx_open(ctx, &(struct fx_opts){.caps = FI_MSG | FI_TAGGED}, &fx);
	const size_t big = 1 << 20;
	if (ctx->rank == 0) {
		uint8_t *b = fx_alloc(big), *r = fx_alloc(3000);
		fx_fill(b, big, 77, 0);
		for (int i = 0; i < 3; i++)
			FX_OK(&fx, fi_trecv(fx.ep, r + 1000 * i, 1000, NULL, FI_ADDR_UNSPEC, 99, 0, NULL));
		FX_OK(&fx, fi_tsend(fx.ep, b, big, NULL, fx.peers[1], 1, b));
		FX_OK(&fx, fi_tsend(fx.ep, b, 100, NULL, fx.peers[1], 2, b));
		double t0 = ft_now();
		fx_close(&fx); /* every close must return 0 */
		double dt = ft_now() - t0;
		soft(dt < 5, "closing with pending operations took %.1f s", dt);
		free(b);
		free(r);
		fx_pbarrier(ctx, NULL);
		fx_pbarrier(ctx, NULL);
		return soft_failures ? 1 : 0;
	}
	fx_pbarrier(ctx, &fx); /* the peer closed */
	struct fx_rbuf r1, r2;
	fx_rbuf_init(&r1, big);
	fx_rbuf_init(&r2, 100);
	FX_OK(&fx, fi_trecv(fx.ep, r1.buf, big, NULL, FI_ADDR_UNSPEC, 1, 0, &r1));
	FX_OK(&fx, fi_trecv(fx.ep, r2.buf, 100, NULL, FI_ADDR_UNSPEC, 2, 0, &r2));
	/* whatever arrives is either right or an error; nothing hangs, nothing crashes */
	for (int i = 0; i < 2; i++) {
		struct fx_comp c;
		struct fi_cq_err_entry e;
		int w = fx_wait_any(&fx, &c, &e, 3000);
		if (w == 1) {
			struct fx_rbuf *rb = c.op_context;
			fx_rbuf_check(rb, 77, rb->len, "message from a closed peer");
			printf("  message of %zu bytes from the closed peer delivered\n", rb->len);
		} else if (w == -FI_EAVAIL) {
			printf("  receive from the closed peer: error %d (%s)\n", e.err, fi_strerror(e.err));
		} else {
			printf("  receive from the closed peer: nothing (dropped)\n");
			break;
		}
	}
	fx_close(&fx);
	fx_rbuf_free(&r1);
	fx_rbuf_free(&r2);
	fx_pbarrier(ctx, NULL);
	return soft_failures ? 1 : 0;
}

/* ---- a peer killed in the middle of a 256 MiB rendezvous -------------------------------------- */

enum { PK_RECV_VICTIM, PK_SEND_VICTIM, PK_IDLE_VICTIM };
struct pk {
	int role;
	const char *scheme;
};
/* fx_sh->flag: */
enum { F_POSTED = 1, F_KILL = 2, F_KILLED = 3, F_VDONE = 4, F_RESULT = 5, F_DELAY_US = 6 };
/* F_RESULT: 1 error completion in time, 2 inconclusive (transfer finished first) */
#define PK_SIZE ((size_t)256 << 20)

static int pk_victim(struct ft_ctx *ctx, const struct pk *pk)
{
	struct fx fx;
	struct fx_opts o = {.caps = FI_MSG | FI_TAGGED, .scheme = pk->scheme};
	fx_open(ctx, &o, &fx);
	/* iov lists (1000 entries with gaps) so that zero-copy schemes need many copy calls
	 * and a kill can land between them */
	uint64_t rng = 1;
	struct fx_layout l;
	fx_layout_make(&l, PK_SIZE, 1000, 4096, &rng);
	if (pk->role == PK_SEND_VICTIM)
		fx_layout_data(&l, 0xBEEF);
	fx_pbarrier(ctx, &fx); /* the survivor posted */
	struct fi_msg_tagged m = {.msg_iov = l.iov, .desc = l.desc, .iov_count = l.count,
				  .addr = pk->role == PK_SEND_VICTIM ? fx.peers[0] : FI_ADDR_UNSPEC,
				  .tag = 1, .context = &l};
	if (pk->role == PK_RECV_VICTIM)
		FX_OK(&fx, fi_trecvmsg(fx.ep, &m, FI_COMPLETION));
	else if (pk->role == PK_SEND_VICTIM)
		FX_OK(&fx, fi_tsendmsg(fx.ep, &m, FI_COMPLETION));
	/* progress a little before saying "posted" so the transfer is under way */
	for (int i = 0; pk->role != PK_IDLE_VICTIM && i < 20; i++)
		fx_progress(&fx);
	atomic_store(&fx_sh->flag[F_POSTED], 1);
	for (;;) {
		if (pk->role == PK_IDLE_VICTIM) {
			usleep(10000);
			continue;
		}
		/* throttled progress: the transfer takes long enough to be interrupted */
		struct fx_comp c;
		struct fi_cq_err_entry e;
		int w = fx_wait_any(&fx, &c, &e, 1);
		if (w != -FI_ETIMEDOUT) {
			atomic_store(&fx_sh->flag[F_VDONE], 1);
			for (;;)
				pause(); /* wait for the kill anyway */
		}
		usleep(300);
	}
}

static int pk_survivor(struct ft_ctx *ctx, const struct pk *pk)
{
	struct fx fx;
	struct fx_opts o = {.caps = FI_MSG | FI_TAGGED, .scheme = pk->scheme};
	fx_open(ctx, &o, &fx);
	uint64_t rng = 2;
	struct fx_layout l;
	fx_layout_make(&l, PK_SIZE, 1024, 4096, &rng);
	void *buf = &l;
	struct fi_msg_tagged m = {.msg_iov = l.iov, .desc = l.desc, .iov_count = l.count,
				  .addr = pk->role != PK_SEND_VICTIM ? fx.peers[1] : FI_ADDR_UNSPEC,
				  .tag = 1, .context = &l};
	if (pk->role != PK_SEND_VICTIM) {
		fx_layout_data(&l, 0xF00D);
		FX_OK(&fx, fi_tsendmsg(fx.ep, &m, FI_COMPLETION));
	} else {
		fx_layout_canary(&l, 0);
		FX_OK(&fx, fi_trecvmsg(fx.ep, &m, FI_COMPLETION));
	}
	fx_pbarrier(ctx, &fx);
	/* no progress here: the transfer must run after the kill was requested, so that the
	 * kill (after 0 to 20 ms) lands while this process moves the data */
	while (!atomic_load(&fx_sh->flag[F_POSTED]))
		usleep(100);
	atomic_store(&fx_sh->flag[F_KILL], 1);
	struct fx_comp c;
	struct fi_cq_err_entry e;
	int w = fx_wait_any(&fx, &c, &e, 30000);
	double now = ft_now();
	while (!atomic_load(&fx_sh->flag[F_KILLED]))
		usleep(1000);
	double killed_at;
	unsigned long long bits = fx_sh->val[0];
	memcpy(&killed_at, &bits, sizeof(killed_at));
	const char *what = pk->role == PK_RECV_VICTIM ? "sender whose receiver was killed"
			   : pk->role == PK_SEND_VICTIM ? "receiver whose sender was killed"
							: "sender whose receiver was killed before any progress";
	FT_CHECK(w != -FI_ETIMEDOUT, "%s: no completion 30 s after the kill (hang)", what);
	if (w == 1) {
		bool vdone = atomic_load(&fx_sh->flag[F_VDONE]);
		if (pk->role == PK_SEND_VICTIM)
			fx_layout_check(&l, 0xBEEF, PK_SIZE, 0,
					"receive completed successfully, so all bytes must be there");
		printf("  %s: transfer completed successfully before the kill (victim done: %d)\n",
		       what, vdone);
		atomic_store(&fx_sh->flag[F_RESULT], 2);
	} else {
		double dt = now - killed_at;
		printf("  %s: error completion %d (%s) %.2f s after the kill\n", what, e.err,
		       fi_strerror(e.err), dt);
		FT_CHECK(e.err != 0 && e.op_context == buf, "error completion err %d ctx %p", e.err,
			 e.op_context);
		FT_CHECK(dt < 10, "%s: the error came %.1f s after the kill", what, dt);
		atomic_store(&fx_sh->flag[F_RESULT], 1);
	}
	/* an eager message to the dead peer fails too, and closing does not hang */
	if (pk->role != PK_SEND_VICTIM) {
		uint8_t small[64] = {0};
		ssize_t r = FX_POST(&fx, fi_tsend(fx.ep, small, 64, NULL, fx.peers[1], 2, small));
		if (r == 0) {
			int w2 = fx_wait_any(&fx, &c, &e, 15000);
			FT_CHECK(w2 != -FI_ETIMEDOUT, "send to a dead peer: no completion in 15 s");
			printf("  eager send to the dead peer: %s\n",
			       w2 == 1 ? "completed (buffered in its ring)" : fi_strerror(e.err));
		} else {
			printf("  eager send to the dead peer refused: %s\n", fi_strerror((int)-r));
		}
	}
	double t0 = ft_now();
	fx_close(&fx);
	FT_CHECK(ft_now() - t0 < 5, "closing after the peer died took %.1f s", ft_now() - t0);
	fx_layout_free(&l);
	return 0;
}

static int pk_rank(struct ft_ctx *ctx, void *arg)
{
	const struct pk *pk = arg;
	if (ctx->rank == 0)
		return pk_survivor(ctx, pk);
	/* rank 1 is a proxy: the victim is its child (so the harness does not see the SIGKILL) */
	fflush(stdout);
	fflush(stderr);
	pid_t v = fork();
	FT_CHECK(v >= 0, "fork");
	if (v == 0)
		_exit(pk_victim(ctx, pk));
	for (;;) {
		int st;
		if (waitpid(v, &st, WNOHANG) == v) {
			fprintf(stderr, "victim exited by itself (status 0x%x)\n", st);
			return 1;
		}
		if (atomic_load(&fx_sh->flag[F_KILL])) {
			usleep((useconds_t)atomic_load(&fx_sh->flag[F_DELAY_US]));
			kill(v, SIGKILL);
			double t = ft_now();
			unsigned long long bits;
			memcpy(&bits, &t, sizeof(bits));
			fx_sh->val[0] = bits;
			waitpid(v, &st, 0);
			atomic_store(&fx_sh->flag[F_KILLED], 1);
			return 0;
		}
		usleep(200);
	}
}

static int t_peer_killed(struct ft_ctx *ctx, void *arg)
{
	static const long delays_us[] = {20000, 3000, 0};
	for (int attempt = 0; attempt < 3; attempt++) {
		memset(fx_sh->flag, 0, sizeof(fx_sh->flag));
		atomic_store(&fx_sh->bar_count, 0);
		fx_sh->flag[F_DELAY_US] = ((const struct pk *)arg)->role == PK_IDLE_VICTIM
						  ? 100000
						  : delays_us[attempt];
		int rc = ft_spawn(2, 90, pk_rank, arg);
		if (rc)
			return rc;
		if (fx_sh->flag[F_RESULT] == 1)
			return 0;
		printf("  attempt %d inconclusive (the transfer finished before the kill)\n",
		       attempt + 1);
	}
	printf("  could not interrupt the transfer in 3 attempts\n");
	return FT_SKIP;
}

/* ---- stale shared memory files, modes, cleanup on close --------------------------------------- */

static void open_min(struct fid_fabric **fab, struct fid_domain **dom, struct fid_av **av,
		     struct fid_cq **cq, struct fid_ep **ep)
{
	struct fi_info *info = NULL;
	FT_CHECK(fx_getinfo(&(struct fx_opts){0}, &info) == 0, "fi_getinfo");
	struct fi_av_attr aa = {.type = FI_AV_TABLE};
	struct fi_cq_attr qa = {.format = FI_CQ_FORMAT_TAGGED};
	FT_CHECK(fi_fabric(info->fabric_attr, fab, NULL) == 0, "fabric");
	FT_CHECK(fi_domain(*fab, info, dom, NULL) == 0, "domain");
	if (ep) {
		FT_CHECK(fi_av_open(*dom, &aa, av, NULL) == 0 && fi_cq_open(*dom, &qa, cq, NULL) == 0 &&
				 fi_endpoint(*dom, info, ep, NULL) == 0 &&
				 fi_ep_bind(*ep, &(*av)->fid, 0) == 0 &&
				 fi_ep_bind(*ep, &(*cq)->fid, FI_TRANSMIT | FI_RECV) == 0 &&
				 fi_enable(*ep) == 0,
			 "endpoint");
	}
	fi_freeinfo(info);
}

static void close_min(struct fid_fabric *fab, struct fid_domain *dom, struct fid_av *av,
		      struct fid_cq *cq, struct fid_ep *ep)
{
	if (ep)
		FT_CHECK(fi_close(&ep->fid) == 0 && fi_close(&cq->fid) == 0 && fi_close(&av->fid) == 0,
			 "close ep");
	FT_CHECK(fi_close(&dom->fid) == 0 && fi_close(&fab->fid) == 0, "close domain");
}

static void check_files(pid_t pid, const char *who)
{
	DIR *d = opendir("/dev/shm");
	FT_CHECK(d, "opendir /dev/shm");
	char prefix[64];
	snprintf(prefix, sizeof(prefix), "ddtx-%d-", (int)pid);
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, prefix, strlen(prefix)))
			continue;
		n++;
		char path[512];
		snprintf(path, sizeof(path), "/dev/shm/%s", de->d_name);
		struct stat st;
		FT_CHECK(stat(path, &st) == 0, "stat %s", path);
		soft((st.st_mode & 0777) == 0600, "%s: %s has mode %03o, want 0600", who, path,
		     st.st_mode & 0777);
		soft(st.st_uid == getuid(), "%s: %s owned by uid %d", who, path, (int)st.st_uid);
		/* an unguessable name: at least 32 hex digits after the pid */
		const char *suffix = de->d_name + strlen(prefix);
		size_t hex = strspn(suffix, "0123456789abcdefABCDEF");
		soft(hex >= 32, "%s: %s: name has only %zu random hex digits", who, path, hex);
	}
	closedir(d);
	soft(n > 0, "%s: no /dev/shm/ddtx-%d-* file while its endpoint is open", who, (int)pid);
}

static int t_stale_shm(struct ft_ctx *ctx, void *arg)
{
	/* flag 10: victim ready, 11: live ready, 12: live may exit */
	memset(fx_sh->flag, 0, sizeof(fx_sh->flag));
	fflush(stdout);
	fflush(stderr);
	pid_t v = fork();
	if (v == 0) {
		struct fid_fabric *f;
		struct fid_domain *d;
		struct fid_av *a;
		struct fid_cq *q;
		struct fid_ep *e;
		open_min(&f, &d, &a, &q, &e);
		atomic_store(&fx_sh->flag[10], 1);
		for (;;)
			pause();
	}
	pid_t l = fork();
	if (l == 0) {
		struct fid_fabric *f;
		struct fid_domain *d;
		struct fid_av *a;
		struct fid_cq *q;
		struct fid_ep *e;
		open_min(&f, &d, &a, &q, &e);
		atomic_store(&fx_sh->flag[11], 1);
		while (!atomic_load(&fx_sh->flag[12]))
			usleep(1000);
		close_min(f, d, a, q, e);
		_exit(0);
	}
	double t0 = ft_now();
	while (!atomic_load(&fx_sh->flag[10]) || !atomic_load(&fx_sh->flag[11])) {
		usleep(1000);
		if (ft_now() - t0 > 20) {
			kill(v, SIGKILL);
			kill(l, SIGKILL);
			FT_CHECK(0, "children did not open their endpoints");
		}
	}
	check_files(v, "victim");
	check_files(l, "live process");
	int nv = fx_shm_files(v, NULL, 0), nl = fx_shm_files(l, NULL, 0);
	kill(v, SIGKILL);
	waitpid(v, NULL, 0);
	int after_kill = fx_shm_files(v, NULL, 0);
	printf("  victim had %d files, %d left after SIGKILL; live process has %d\n", nv,
	       after_kill, nl);
	soft(after_kill > 0, "no stale file left by the SIGKILLed process: nothing to clean up "
			     "(files unlinked early?)");
	/* a new domain in this process cleans up the dead pid's files, not the live one's */
	struct fid_fabric *f;
	struct fid_domain *d;
	struct fid_av *a;
	struct fid_cq *q;
	struct fid_ep *e;
	open_min(&f, &d, NULL, NULL, NULL);
	int left = fx_shm_files(v, NULL, 0);
	soft(left == 0, "%d stale /dev/shm/ddtx-%d-* files still there after a new domain opened",
	     left, (int)v);
	soft(fx_shm_files(l, NULL, 0) == nl, "the live process lost files when a domain opened");
	close_min(f, d, NULL, NULL, NULL);
	/* this process's own files: 0600 while open, gone after close */
	open_min(&f, &d, &a, &q, &e);
	check_files(getpid(), "this process");
	close_min(f, d, a, q, e);
	soft(fx_shm_files(getpid(), NULL, 0) == 0, "own /dev/shm files left after closing");
	atomic_store(&fx_sh->flag[12], 1);
	int st;
	waitpid(l, &st, 0);
	soft(WIFEXITED(st) && WEXITSTATUS(st) == 0, "live child failed");
	soft(fx_shm_files(l, NULL, 0) == 0, "the live child's files left after it closed");
	return soft_failures ? 1 : 0;
}

/* ---- malformed and dead addresses in the AV ------------------------------------------------ */

static int t_bad_addr(struct ft_ctx *ctx, void *arg)
{
	/* arg NULL: after each bad address, a message to the real peer; else the real peer is
	 * contacted only at the end, so the bad addresses (some claiming its identity) are the
	 * first ones the wire sees */
	bool first_contact = arg != NULL;
	struct fx fx;
	fx_open(ctx, &(struct fx_opts){.caps = FI_MSG | FI_TAGGED | FI_RMA}, &fx);
	size_t alen = 0;
	uint8_t real[256];
	const int nvar = 7;
	/* flag 20: rank 0 done; flag 21: messages rank 0 sent to rank 1 successfully */
	if (ctx->rank == 0) {
		alen = sizeof(real);
		FT_CHECK(fi_av_lookup(fx.av, fx.peers[1], real, &alen) == 0, "lookup");
		/* the address of an endpoint whose process has exited */
		uint8_t *dead = (uint8_t *)fx_shmem;
		fflush(stdout);
		pid_t c = fork();
		if (c == 0) {
			struct fid_fabric *f;
			struct fid_domain *d;
			struct fid_av *a;
			struct fid_cq *q;
			struct fid_ep *e;
			open_min(&f, &d, &a, &q, &e);
			size_t n = 256;
			fi_getname(&e->fid, dead, &n);
			_exit(0); /* no close: like a crash, but files may stay */
		}
		waitpid(c, NULL, 0);
		uint64_t rng = 0xBAD;
		uint8_t blob[256];
		for (int v = 0; v < nvar; v++) {
			const char *name;
			memcpy(blob, real, alen);
			/* offsets follow the shm wire's address blob: magic@0, pid@8, start time@16,
			 * uid@24, random region name@32..47 */
			switch (v) {
			case 0:
				name = "random bytes";
				for (size_t i = 0; i < alen; i++)
					blob[i] = (uint8_t)ft_rand(&rng);
				break;
			case 1:
				name = "all zeros";
				memset(blob, 0, alen);
				break;
			case 2:
				name = "magic flipped";
				blob[0] ^= 0xff;
				break;
			case 3:
				name = "pid of a process that does not exist";
				memcpy(blob + 8, &(uint32_t){(uint32_t)c}, 4);
				break;
			case 4:
				name = "region name (random part) changed";
				blob[alen - 1] ^= 0x5a;
				blob[alen - 8] ^= 0xa5;
				break;
			case 5:
				name = "start time changed (pid reuse guard)";
				blob[16] ^= 0x01;
				break;
			default:
				name = "a real endpoint whose process exited";
				memcpy(blob, dead, alen);
				break;
			}
			fi_addr_t fa = FI_ADDR_NOTAVAIL;
			int serr = 1;
			int r = fi_av_insert(fx.av, blob, 1, &fa, FI_SYNC_ERR, &serr);
			/* A malformed blob (variants 0-2) is refused at insert; a well-formed one
			 * naming no live endpoint (3-6) can only fail when it is used. */
			if (v <= 2)
				soft(r == 0 && fa == FI_ADDR_NOTAVAIL && serr == -FI_EINVAL,
				     "address with %s: fi_av_insert returned %d, fi_addr %llu, error "
				     "%d (want 0, FI_ADDR_NOTAVAIL, -FI_EINVAL)", name, r,
				     (unsigned long long)fa, serr);
			else
				soft(r == 1 && serr == 0, "address with %s: well formed, yet "
				     "fi_av_insert returned %d (error %d)", name, r, serr);
			if (r != 1) {
				printf("  address with %s: refused by fi_av_insert (%d)\n", name, r);
			} else {
				uint8_t *b = fx_alloc(200000);
				char what[128];
				snprintf(what, sizeof(what), "eager send to an address with %s", name);
				ssize_t pr = FX_POST(&fx, fi_tsend(fx.ep, b, 100, NULL, fa, 1, b));
				if (v == 6 && pr == 0) {
					/* a dead process's ring may still exist: buffered delivery
					 * can complete; report what happened */
					struct fx_comp cc;
					struct fi_cq_err_entry e;
					int w = fx_wait_any(&fx, &cc, &e, 10000);
					soft(w != -FI_ETIMEDOUT, "%s: no completion in 10 s", what);
					printf("  %s: %s (note)\n", what,
					       w == 1 ? "completed successfully (written to the dead "
							"process's ring)"
						      : fi_strerror(e.err));
				} else {
					expect_op_error(&fx, pr, b, what);
				}
				snprintf(what, sizeof(what), "rendezvous send to an address with %s",
					 name);
				expect_op_error(&fx,
						FX_POST(&fx, fi_tsend(fx.ep, b, 200000, NULL, fa, 1, b)),
						b, what);
				snprintf(what, sizeof(what), "write to an address with %s", name);
				expect_op_error(&fx, FX_POST(&fx, fi_write(fx.ep, b, 100, NULL, fa, 0, 1, b)),
						b, what);
				free(b);
			}
			/* the real peer must still be reachable under its own fi_addr */
			if (first_contact && v < nvar - 1)
				continue;
			uint8_t ok[3000];
			fx_fill(ok, sizeof(ok), 0x5E00 + (uint64_t)v, 0);
			ssize_t pr = FX_POST(&fx, fi_tsend(fx.ep, ok, sizeof(ok), NULL, fx.peers[1],
							   0x5E00 + (uint64_t)v, ok));
			soft(pr == 0,
			     "after inserting an address with %s, sending to the real peer returns %zd "
			     "(%s)",
			     name, pr, fi_strerror((int)-pr));
			if (pr == 0) {
				struct fx_comp cc;
				struct fi_cq_err_entry e;
				int w = fx_wait_any(&fx, &cc, &e, 10000);
				soft(w == 1,
				     "after inserting an address with %s, a send to the real peer failed: "
				     "%s",
				     name, w == -FI_EAVAIL ? fi_strerror(e.err) : "no completion");
				if (w == 1)
					atomic_fetch_add(&fx_sh->flag[21], 1);
			}
		}
		int left = fx_shm_files(c, NULL, 0);
		if (left)
			printf("  note: the exited child left %d /dev/shm files (no close)\n", left);
		atomic_store(&fx_sh->flag[20], 1);
	} else {
		/* receive whatever the real sends were, until rank 0 is done */
		int got = 0;
		struct fx_rbuf r;
		fx_rbuf_init(&r, 3000);
		FX_OK(&fx, fi_trecv(fx.ep, r.buf, 3000, NULL, FI_ADDR_UNSPEC, 0x5E00, 0xff, &r));
		for (;;) {
			struct fx_comp cc;
			struct fi_cq_err_entry e;
			int w = fx_wait_any(&fx, &cc, &e, 10);
			if (w == 1) {
				fx_rbuf_check(&r, cc.tag, 3000, "message to the real peer");
				got++;
				fx_fill(r.mem, r.len + 128, FX_CSEED, 0);
				FX_OK(&fx, fi_trecv(fx.ep, r.buf, 3000, NULL, FI_ADDR_UNSPEC, 0x5E00, 0xff,
						    &r));
				continue;
			}
			FT_CHECK(w != -FI_EAVAIL, "error completion at the real peer: %d", e.err);
			if (atomic_load(&fx_sh->flag[20]) && got >= atomic_load(&fx_sh->flag[21]))
				break;
		}
		FT_CHECK(got == atomic_load(&fx_sh->flag[21]), "real peer got %d messages, %ld sent",
			 got, (long)atomic_load(&fx_sh->flag[21]));
		FT_CHECK(fi_cancel(&fx.ep->fid, &r) == 0, "cancel");
		struct fi_cq_err_entry e;
		fx_wait_err(&fx, &e, TMO);
		fx_rbuf_free(&r);
	}
	fx_pbarrier(ctx, &fx);
	return finish(ctx, &fx);
}

/* ---- an MR whose memory is unmapped and replaced while it stays open ---------------------- */

/*
 * Whether ddtx's memory monitor can run here: the same conditions its start checks
 * (engine/memmon.c): a userfaultfd with unmap/remove/remap events that accepts a write-protect
 * registration of anonymous memory.  Without it MR keys are not revoked (documented).
 */
static bool uffd_monitor_possible(void)
{
	const uint64_t need = UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE |
			      UFFD_FEATURE_EVENT_REMAP;
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | 1 /* USER_MODE_ONLY */);
	if (fd < 0 && errno == EINVAL)
		fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	struct uffdio_api api = {.api = UFFD_API, .features = need};
	bool ok = ioctl(fd, UFFDIO_API, &api) == 0 && (api.features & need) == need;
	long page = sysconf(_SC_PAGESIZE);
	void *probe = ok ? mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
	if (probe != MAP_FAILED) {
		struct uffdio_register reg = {.range = {(uintptr_t)probe, (uint64_t)page},
					      .mode = UFFDIO_REGISTER_MODE_WP};
		ok = ioctl(fd, UFFDIO_REGISTER, &reg) == 0;
		/* unregistered first: an unmap event would wait for a reader that is not there */
		if (ok)
			ioctl(fd, UFFDIO_UNREGISTER, &reg.range);
		munmap(probe, (size_t)page);
	} else {
		ok = false;
	}
	close(fd);
	return ok;
}

#define UM_LEN ((size_t)64 << 10)
#define UM_OLD 0x01D0u     /* the registered mapping's bytes */
#define UM_NEW 0x7E70u     /* the mapping that replaced it */
#define UM_DATA 0xDA7Au    /* what the initiator writes */

struct um_keys {
	struct fx_rkey gone, other;
	uint64_t gone_addr;
};

/*
 * The target registers a 64 KiB mapping for remote read and write (and a second buffer that
 * stays), the initiator writes it once (accepted), then the target munmaps it, maps new memory
 * at the same address (MAP_FIXED) filled with a pattern and calls fi_cq_read once, which
 * drains the memory monitor.  Then every RMA with the old key must end in an error completion
 * at the initiator, and the new mapping must still hold its pattern, all 64 KiB: fi_write,
 * fi_writev of 4 pieces, fi_writemsg of 4 remote segments, fi_writemsg whose other segment is
 * a valid key (refused as a whole: nothing lands in the valid MR either), fi_inject_write,
 * fi_writedata (no remote CQ data at the target), fi_read (nothing of the new mapping leaks).
 * The other MR keeps working; the revoked MR's desc still serves a local send; fi_close works.
 */
static int t_mr_unmapped(struct ft_ctx *ctx, void *arg)
{
	uint64_t mode = (uint64_t)(uintptr_t)arg;
	const char *mon = getenv("FI_DDTX_MR_MONITOR");
	if (mon && (!strcmp(mon, "0") || !strcasecmp(mon, "false") || !strcasecmp(mon, "no") ||
		    !strcasecmp(mon, "off"))) {
		printf("SKIP: FI_DDTX_MR_MONITOR=%s: MR keys are not revoked (fi_ddtx(7))\n", mon);
		return FT_SKIP;
	}
	if (!uffd_monitor_possible()) {
		printf("SKIP: no userfaultfd write-protect monitor here: MR keys are not revoked\n");
		return FT_SKIP;
	}
	struct fx fx;
	struct fx_opts o = {.caps = FI_MSG | FI_TAGGED | FI_RMA | FI_READ | FI_WRITE |
				    FI_REMOTE_READ | FI_REMOTE_WRITE,
			    .mr_mode = mode};
	fx_open(ctx, &o, &fx);
	struct um_keys mine = {0}, all[2];
	uint8_t *G = NULL, *C = NULL;
	struct fid_mr *mr_gone = NULL, *mr_other = NULL;
	if (ctx->rank == 1) {
		G = mmap(NULL, UM_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		FT_CHECK(G != MAP_FAILED, "mmap");
		fx_fill(G, UM_LEN, UM_OLD, 0);
		C = fx_alloc(UM_LEN);
		fx_fill(C, UM_LEN, UM_OLD, 0);
		mr_gone = fx_mr_reg(&fx, G, UM_LEN, FI_REMOTE_READ | FI_REMOTE_WRITE,
				    0x8000000000000021ull, &mine.gone);
		mr_other = fx_mr_reg(&fx, C, UM_LEN, FI_REMOTE_READ | FI_REMOTE_WRITE,
				     0x8000000000000022ull, &mine.other);
		mine.gone_addr = (uintptr_t)G;
	}
	ft_allgather(ctx, &mine, sizeof(mine), all);
	struct um_keys k = all[1];
	uint8_t *D = fx_alloc(UM_LEN), *L = fx_alloc(UM_LEN);
	fx_fill(D, UM_LEN, UM_DATA, 0);

	/* 1. the key works while its memory is there */
	if (ctx->rank == 0) {
		FX_OK(&fx, fi_write(fx.ep, D, UM_LEN, NULL, fx.peers[1], fx_raddr(&k.gone, 0),
				    k.gone.key, D));
		fx_wait(&fx, 1, NULL, TMO);
	}
	fx_pbarrier(ctx, &fx);

	/* 2. the target replaces the memory under the open MR */
	if (ctx->rank == 1) {
		FX_CHECK_PATTERN(G, UM_LEN, UM_DATA, 0, "registered mapping after a write");
		FT_CHECK(munmap(G, UM_LEN) == 0, "munmap");
		uint8_t *n = mmap(G, UM_LEN, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		FT_CHECK(n == G, "mmap(MAP_FIXED) at the old address");
		fx_fill(G, UM_LEN, UM_NEW, 0);
		struct fi_cq_tagged_entry ce;
		ssize_t r = fi_cq_read(fx.cq, &ce, 1); /* the owner's next libfabric call */
		FT_CHECK(r == -FI_EAGAIN, "fi_cq_read after the remap: %zd", r);
	}
	fx_pbarrier(ctx, &fx);

	/* 3. every RMA with the old key fails at the initiator */
	if (ctx->rank == 0) {
		fi_addr_t p = fx.peers[1];
		for (int cs = 0; cs < 7; cs++) {
			char what[96];
			void *cx = what;
			struct iovec liov[4];
			struct fi_rma_iov riov[4];
			struct fi_msg_rma m = {.msg_iov = liov, .addr = p, .rma_iov = riov,
					       .context = cx};
			ssize_t r;
			switch (cs) {
			case 0:
				snprintf(what, sizeof(what), "fi_write of 64 KiB");
				r = FX_POST(&fx, fi_write(fx.ep, D, UM_LEN, NULL, p,
							  fx_raddr(&k.gone, 0), k.gone.key, cx));
				break;
			case 1:
				snprintf(what, sizeof(what), "fi_writev of 4 pieces");
				for (int i = 0; i < 4; i++)
					liov[i] = (struct iovec){D + i * (UM_LEN / 4), UM_LEN / 4};
				r = FX_POST(&fx, fi_writev(fx.ep, liov, NULL, 4, p,
							   fx_raddr(&k.gone, 0), k.gone.key, cx));
				break;
			case 2:
				snprintf(what, sizeof(what), "fi_writemsg of 4 remote segments");
				liov[0] = (struct iovec){D, UM_LEN};
				for (int i = 0; i < 4; i++)
					riov[i] = (struct fi_rma_iov){
						fx_raddr(&k.gone, (uint64_t)i * (UM_LEN / 4)),
						UM_LEN / 4, k.gone.key};
				m.iov_count = 1;
				m.rma_iov_count = 4;
				r = FX_POST(&fx, fi_writemsg(fx.ep, &m, FI_COMPLETION));
				break;
			case 3:
				snprintf(what, sizeof(what),
					 "fi_writemsg to a valid MR and the revoked one");
				liov[0] = (struct iovec){D, 8192};
				riov[0] = (struct fi_rma_iov){fx_raddr(&k.other, 0), 4096,
							      k.other.key};
				riov[1] = (struct fi_rma_iov){fx_raddr(&k.gone, 0), 4096,
							      k.gone.key};
				m.iov_count = 1;
				m.rma_iov_count = 2;
				r = FX_POST(&fx, fi_writemsg(fx.ep, &m, FI_COMPLETION));
				break;
			case 4: {
				size_t n = DDTX_TEST_MIN(fx.info->tx_attr->inject_size, (size_t)64);
				snprintf(what, sizeof(what), "fi_inject_write of %zu bytes", n);
				cx = NULL; /* an inject's error completion carries no context */
				r = FX_POST(&fx, fi_inject_write(fx.ep, D, n, p,
								 fx_raddr(&k.gone, 0), k.gone.key));
				break;
			}
			case 5:
				snprintf(what, sizeof(what), "fi_writedata of 64 KiB");
				r = FX_POST(&fx, fi_writedata(fx.ep, D, UM_LEN, NULL, 0xDA7A, p,
							      fx_raddr(&k.gone, 0), k.gone.key, cx));
				break;
			default:
				snprintf(what, sizeof(what), "fi_read of 64 KiB");
				fx_fill(L, UM_LEN, 0x1111, 0);
				r = FX_POST(&fx, fi_read(fx.ep, L, UM_LEN, NULL, p,
							 fx_raddr(&k.gone, 0), k.gone.key, cx));
				break;
			}
			if (r < 0) {
				printf("  %s: refused at post (%s)\n", what, fi_strerror((int)-r));
				continue;
			}
			struct fx_comp c;
			struct fi_cq_err_entry e;
			int w = fx_wait_any(&fx, &c, &e, 10000);
			soft(w == -FI_EAVAIL, "%s with the key of unmapped memory: %s", what,
			     w == 1 ? "completed successfully" : "no error completion in 10 s");
			if (w == -FI_EAVAIL) {
				soft(e.err == FI_EACCES || e.err == FI_EKEYREJECTED,
				     "%s: error %d (%s), want FI_EACCES or FI_EKEYREJECTED", what,
				     e.err, fi_strerror(e.err));
				soft(e.op_context == cx, "%s: error completion context %p want %p",
				     what, e.op_context, cx);
				printf("  %s: error completion %d (%s)\n", what, e.err,
				       fi_strerror(e.err));
			}
			if (cs == 6 && w == -FI_EAVAIL)
				soft(fx_find_bad(L, UM_LEN, 0x1111, 0) == (size_t)-1,
				     "fi_read that failed changed the local buffer");
		}
		/* the other MR still works (its second half; the first must stay as it was) */
		FX_OK(&fx, fi_write(fx.ep, D + UM_LEN / 2, UM_LEN / 2, NULL, p,
				    fx_raddr(&k.other, UM_LEN / 2), k.other.key, D));
		fx_wait(&fx, 1, NULL, TMO);
	}
	fx_pbarrier(ctx, &fx);

	/* 4. at the target: the new mapping untouched, no remote CQ data, the MR still closes */
	if (ctx->rank == 1) {
		size_t bad = fx_find_bad(G, UM_LEN, UM_NEW, 0);
		soft(bad == (size_t)-1, "a write with the old key landed in the new mapping "
		     "(byte %zu of %zu changed)", bad, UM_LEN);
		bad = fx_find_bad(C, UM_LEN / 2, UM_OLD, 0);
		soft(bad == (size_t)-1, "the writemsg refused for its revoked segment wrote byte "
		     "%zu of the valid MR", bad);
		FX_CHECK_PATTERN(C + UM_LEN / 2, UM_LEN / 2, UM_DATA, UM_LEN / 2,
				 "the other MR after a write to its second half");
		/* the revoked MR's desc on a local send: no crash, the data is the new mapping's */
		FX_OK(&fx, fi_tsend(fx.ep, G, 4096, fi_mr_desc(mr_gone), fx.peers[0], 0x77, G));
		fx_wait(&fx, 1, NULL, TMO);
		fx_expect_none(&fx, 100); /* no FI_REMOTE_CQ_DATA from the failed writedata */
		FT_CHECK(fi_close(&mr_gone->fid) == 0, "fi_close of the revoked MR");
		FT_CHECK(fi_close(&mr_other->fid) == 0, "fi_close of the other MR");
		munmap(G, UM_LEN);
		free(C);
	} else {
		struct fx_rbuf r;
		fx_rbuf_init(&r, 4096);
		FX_OK(&fx, fi_trecv(fx.ep, r.buf, 4096, NULL, FI_ADDR_UNSPEC, 0x77, 0, &r));
		fx_wait(&fx, 1, NULL, TMO);
		fx_rbuf_check(&r, UM_NEW, 4096, "send from the revoked MR's memory");
		fx_rbuf_free(&r);
	}
	fx_pbarrier(ctx, &fx);
	free(D);
	free(L);
	return finish(ctx, &fx);
}

static const struct pk pk_recv_pack = {PK_RECV_VICTIM, "pack"};
static const struct pk pk_recv_sgl = {PK_RECV_VICTIM, "sgl"};
static const struct pk pk_send_pack = {PK_SEND_VICTIM, "pack"};
static const struct pk pk_send_sgl = {PK_SEND_VICTIM, "sgl"};
static const struct pk pk_idle = {PK_IDLE_VICTIM, NULL};

static const struct fx_test tests[] = {
	{"null_args", 2, 30, t_null_args, NULL},
	{"iov_limit", 2, 30, t_iov_limit, NULL},
	{"zero_length_iov", 2, 30, t_zero_len, NULL},
	{"inject_size_and_bad_fi_addr", 2, 90, t_inject_and_addr, NULL},
	{"rma_bad_caller_key", 2, 120, t_rma_bad, (void *)(uintptr_t)0},
	{"rma_bad_prov_key", 2, 120, t_rma_bad, (void *)(uintptr_t)(FI_MR_PROV_KEY | FI_MR_VIRT_ADDR)},
	{"rma_protected_pages", 2, 60, t_rma_protected, NULL},
	{"recv_readonly_sgl", 2, 60, t_recv_readonly, "sgl"},
	{"recv_readonly_umr", 2, 60, t_recv_readonly, "umr"},
	{"mr_bad", 1, 30, t_mr_bad, NULL},
	{"not_enabled", 1, 30, t_not_enabled, NULL},
	{"close_pending", 2, 60, t_close_pending, NULL},
	{"peer_killed_receiver_pack", 1, 300, t_peer_killed, (void *)&pk_recv_pack},
	{"peer_killed_receiver_sgl", 1, 300, t_peer_killed, (void *)&pk_recv_sgl},
	{"peer_killed_sender_pack", 1, 300, t_peer_killed, (void *)&pk_send_pack},
	{"peer_killed_sender_sgl", 1, 300, t_peer_killed, (void *)&pk_send_sgl},
	{"peer_killed_before_cts", 1, 120, t_peer_killed, (void *)&pk_idle},
	{"stale_shm", 1, 60, t_stale_shm, NULL},
	{"bad_address", 2, 120, t_bad_addr, NULL},
	{"bad_address_first_contact", 2, 120, t_bad_addr, (void *)1},
	{"mr_unmapped_caller_key", 2, 60, t_mr_unmapped, (void *)(uintptr_t)0},
	{"mr_unmapped_prov_key", 2, 60, t_mr_unmapped,
	 (void *)(uintptr_t)(FI_MR_PROV_KEY | FI_MR_VIRT_ADDR)},
};

int main(int argc, char **argv)
{
	return fx_main(argc, argv, tests, sizeof(tests) / sizeof(tests[0]));
}
