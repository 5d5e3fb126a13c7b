/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nc_demo: two processes exchange noncontiguous layouts through the ddtx provider.
 *
 * For each layout and each scheme (FI_DDTX_SCHEME=pack, sgl, umr, auto) two fresh processes open
 * a ddtx endpoint, hand the layout to fi_tsendmsg / fi_trecvmsg as iov lists (at most iov_limit
 * entries per message), exchange it a few times in both directions at once, and report what the
 * provider did according to its statistics extension (fi_ddtx(3)): the scheme, the bytes moved
 * and the throughput.  Every byte is then checked: the received blocks hold the peer's data and
 * everything else in the array is untouched.
 */
#include "ft_harness.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <rdma/fi_ddtx.h>

#define DDTX_MIN_(a, b) ((a) < (b) ? (a) : (b))

#ifndef NC_DEFAULT_PROV_PATH
#define NC_DEFAULT_PROV_PATH ""
#endif

struct layout {
	const char *name;
	char desc[160];
	size_t array_bytes;
	size_t nblk;
	size_t *soff, *roff, *len;   /* per block: send offset, receive offset, length */
	size_t bytes;                /* per direction */
	int reps;
};

struct result {
	int status;
	char err[160];
	char used[100];
	uint64_t moved;              /* payload bytes both ranks received, per ddtx's stats */
	uint64_t ops;
	double secs;
	size_t iov_limit, msgs;
	bool verified;
};

struct shared {
	char used1[48];
	uint64_t moved1, ops1;
	struct result res;
};

struct arg {
	const struct layout *lo;
	const char *scheme;
	struct shared *sh;
};

static void fail(struct shared *sh, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct shared *sh, const char *fmt, ...)
{
	if (sh->res.status)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sh->res.err, sizeof(sh->res.err), fmt, ap);
	va_end(ap);
	sh->res.status = 1;
}

static void layout_alloc(struct layout *lo, size_t nblk)
{
	lo->nblk = nblk;
	lo->soff = calloc(nblk, sizeof(size_t));
	lo->roff = calloc(nblk, sizeof(size_t));
	lo->len = calloc(nblk, sizeof(size_t));
	if (!lo->soff || !lo->roff || !lo->len) {
		fprintf(stderr, "nc_demo: out of memory\n");
		exit(1);
	}
}

/* Row-major rows x cols matrix of doubles: send the left half of every row, receive the peer's
 * left half into the right half (the "ghost columns"). */
static void make_matrix(struct layout *lo, size_t rows, size_t cols)
{
	size_t half = cols / 2 * sizeof(double), row = cols * sizeof(double);
	lo->name = "matrix column panel";
	lo->array_bytes = rows * row;
	layout_alloc(lo, rows);
	for (size_t r = 0; r < rows; r++) {
		lo->soff[r] = r * row;
		lo->roff[r] = r * row + half;
		lo->len[r] = half;
	}
	lo->bytes = rows * half;
	snprintf(lo->desc, sizeof(lo->desc),
		 "columns 0-%zu of a %zux%zu row-major matrix of doubles -> ghost columns %zu-%zu: "
		 "%zu blocks of %zu B, stride %zu B",
		 cols / 2 - 1, rows, cols, cols / 2, cols - 1, rows, half, row);
}

/* n^3 grid of doubles, x fastest: send the interior plane x = 1, receive into the ghost plane
 * x = 0 (one double per (y, z): the classic small-block halo face). */
static void make_xface(struct layout *lo, size_t n)
{
	lo->name = "3-D halo, x face";
	lo->array_bytes = n * n * n * sizeof(double);
	layout_alloc(lo, n * n);
	for (size_t z = 0, k = 0; z < n; z++)
		for (size_t y = 0; y < n; y++, k++) {
			size_t cell = (z * n + y) * n;
			lo->soff[k] = (cell + 1) * sizeof(double);
			lo->roff[k] = cell * sizeof(double);
			lo->len[k] = sizeof(double);
		}
	lo->bytes = n * n * sizeof(double);
	snprintf(lo->desc, sizeof(lo->desc),
		 "plane x=1 of a %zu^3 grid of doubles -> ghost plane x=0: %zu blocks of 8 B, "
		 "stride %zu B", n, n * n, n * sizeof(double));
}

/* Same grid, y face: one row of n doubles per z plane. */
static void make_yface(struct layout *lo, size_t n)
{
	size_t row = n * sizeof(double), plane = n * row;
	lo->name = "3-D halo, y face";
	lo->array_bytes = n * plane;
	layout_alloc(lo, n);
	for (size_t z = 0; z < n; z++) {
		lo->soff[z] = z * plane + row;
		lo->roff[z] = z * plane;
		lo->len[z] = row;
	}
	lo->bytes = n * row;
	snprintf(lo->desc, sizeof(lo->desc),
		 "plane y=1 of a %zu^3 grid of doubles -> ghost plane y=0: %zu blocks of %zu B, "
		 "stride %zu B", n, n, row, plane);
}

static int rank_main(struct ft_ctx *ctx, void *varg)
{
	struct arg *a = varg;
	const struct layout *lo = a->lo;
	struct shared *sh = a->sh;
	int me = ctx->rank, peer_rank = 1 - ctx->rank;

	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	setenv("FI_DDTX_SCHEME", a->scheme, 1);   /* read by ddtx when it loads, below */

	struct ft_opts opts = {.prov = "ddtx", .caps = FI_TAGGED};
	struct ft_ep fe;
	int ret = ft_open(ctx, &opts, &fe);
	if (ret) {
		fail(sh, "opening a ddtx endpoint: %s (is FI_PROVIDER_PATH right?)", fi_strerror(-ret));
		return 1;
	}
	struct fi_ddtx_ops *ops = NULL;
	if (fi_open_ops(&fe.domain->fid, FI_DDTX_DOMAIN_OPS_1, 0, (void **)&ops, NULL))
		ops = NULL;

	uint8_t *arr = mmap(NULL, lo->array_bytes, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (arr == MAP_FAILED) {
		fail(sh, "mmap: %s", strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < lo->array_bytes; i++)
		arr[i] = ft_pattern((uint64_t)me + 1, i);

	struct iovec *siov = calloc(lo->nblk, sizeof(*siov)), *riov = calloc(lo->nblk, sizeof(*riov));
	for (size_t b = 0; b < lo->nblk; b++) {
		siov[b] = (struct iovec){arr + lo->soff[b], lo->len[b]};
		riov[b] = (struct iovec){arr + lo->roff[b], lo->len[b]};
	}
	size_t lim = DDTX_MIN_(fe.info->tx_attr->iov_limit, fe.info->rx_attr->iov_limit);
	if (!lim)
		lim = 1;
	size_t nmsg = (lo->nblk + lim - 1) / lim;
	struct fi_context2 *sctx = calloc(nmsg, sizeof(*sctx)), *rctx = calloc(nmsg, sizeof(*rctx));
	fi_addr_t peer = fe.peers[peer_rank];

	struct fi_ddtx_stats st0 = {0}, st1 = {0};
	if (ops)
		ops->stats(fe.domain, &st0);
	ft_barrier(ctx);
	double t0 = ft_now();
	for (int rep = 0; rep < lo->reps; rep++) {
		/* Both ranks receive and send at once: a halo exchange. */
		for (size_t m = 0; m < nmsg; m++) {
			size_t first = m * lim, cnt = DDTX_MIN_(lim, lo->nblk - first);
			struct fi_msg_tagged msg = {.msg_iov = &riov[first], .iov_count = cnt,
						    .addr = peer, .tag = m, .context = &rctx[m]};
			ssize_t r = FT_POST(fe.cq, fi_trecvmsg(fe.ep, &msg, FI_COMPLETION));
			if (r) {
				fail(sh, "fi_trecvmsg: %s", fi_strerror((int)-r));
				return 1;
			}
		}
		for (size_t m = 0; m < nmsg; m++) {
			size_t first = m * lim, cnt = DDTX_MIN_(lim, lo->nblk - first);
			struct fi_msg_tagged msg = {.msg_iov = &siov[first], .iov_count = cnt,
						    .addr = peer, .tag = m, .context = &sctx[m]};
			ssize_t r = FT_POST(fe.cq, fi_tsendmsg(fe.ep, &msg, FI_COMPLETION));
			if (r) {
				fail(sh, "fi_tsendmsg: %s", fi_strerror((int)-r));
				return 1;
			}
		}
		struct fi_cq_err_entry err = {0};
		int n = ft_wait(fe.cq, 2 * nmsg, NULL, &err, 60000);
		if (n < 0) {
			fail(sh, "rank %d: waiting for completions: %s", me,
			     n == -FI_EAVAIL ? fi_strerror(err.err) : fi_strerror(-n));
			return 1;
		}
	}
	double secs = ft_now() - t0;
	if (ops)
		ops->stats(fe.domain, &st1);

	/* Expected array: own pattern everywhere, the peer's sent bytes in the ghost blocks. */
	bool ok = true;
	for (size_t b = 0; b < lo->nblk && ok; b++)
		for (size_t j = 0; j < lo->len[b]; j++)
			if (arr[lo->roff[b] + j] != ft_pattern((uint64_t)peer_rank + 1, lo->soff[b] + j)) {
				fail(sh, "rank %d: ghost byte %zu of block %zu is wrong", me, j, b);
				ok = false;
				break;
			}
	if (ok) {
		uint8_t *mark = calloc(lo->array_bytes, 1);
		for (size_t b = 0; b < lo->nblk; b++)
			memset(mark + lo->roff[b], 1, lo->len[b]);
		for (size_t i = 0; i < lo->array_bytes; i++)
			if (!mark[i] && arr[i] != ft_pattern((uint64_t)me + 1, i)) {
				fail(sh, "rank %d: byte %zu outside the ghost blocks changed", me, i);
				ok = false;
				break;
			}
		free(mark);
	}

	char used[48] = "?";
	uint64_t moved = 0, nops = 0;
	if (ops) {
		used[0] = 0;
		for (int s = 0; s < FI_DDTX_SCHEME_COUNT; s++) {
			uint64_t d = st1.bytes[s] - st0.bytes[s];
			moved += d;
			nops += st1.ops[s] - st0.ops[s];
			if (!d)
				continue;
			size_t l = strlen(used);
			snprintf(used + l, sizeof(used) - l, "%s%s", l ? "+" : "",
				 ops->scheme_name ? ops->scheme_name((enum fi_ddtx_scheme)s) : "?");
		}
		if (!used[0])
			snprintf(used, sizeof(used), "none");
	}
	if (me == 1) {
		snprintf(sh->used1, sizeof(sh->used1), "%s", used);
		sh->moved1 = moved;
		sh->ops1 = nops;
	}
	ft_barrier(ctx);
	if (me == 0) {
		snprintf(sh->res.used, sizeof(sh->res.used), "%s", used);
		if (strcmp(used, sh->used1))
			snprintf(sh->res.used, sizeof(sh->res.used), "%s / %s", used, sh->used1);
		sh->res.moved = moved + sh->moved1;
		sh->res.ops = nops + sh->ops1;
		sh->res.secs = secs;
		sh->res.iov_limit = lim;
		sh->res.msgs = nmsg;
	}
	ft_barrier(ctx);
	if (ok && me == 0)
		sh->res.verified = true;
	ft_close(&fe);
	return ok ? 0 : 2;
}

int main(int argc, char **argv)
{
	const char *schemes[] = {"pack", "sgl", "umr", "auto"};
	int nsch = 4;
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("Usage: %s [scheme...]   (default: pack sgl umr auto)\n", argv[0]);
		return 0;
	}
	if (argc > 1) {
		nsch = argc - 1;
		for (int i = 0; i < nsch && i < 4; i++)
			schemes[i] = argv[i + 1];
		if (nsch > 4)
			nsch = 4;
	}
	if (!getenv("FI_PROVIDER_PATH") && NC_DEFAULT_PROV_PATH[0])
		setenv("FI_PROVIDER_PATH", NC_DEFAULT_PROV_PATH, 1);
	if (!getenv("IPATH_NO_BACKTRACE"))
		setenv("IPATH_NO_BACKTRACE", "1", 1);

	struct layout los[3] = {{0}};
	make_matrix(&los[0], 8192, 1024);   /* 32 MiB each way in 4 KiB blocks */
	los[0].reps = 10;
	make_yface(&los[1], 128);           /* 128 KiB each way in 1 KiB blocks */
	los[1].reps = 200;
	make_xface(&los[2], 128);           /* 128 KiB each way in 8 B blocks */
	los[2].reps = 50;

	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	printf("ddtx demo: 2 processes exchange noncontiguous layouts with fi_tsendmsg/fi_trecvmsg iov\n"
	       "lists through the ddtx provider (FI_PROVIDER_PATH=%s)\n",
	       getenv("FI_PROVIDER_PATH") ? getenv("FI_PROVIDER_PATH") : "(unset)");
	int failures = 0;
	for (int l = 0; l < 3; l++) {
		struct layout *lo = &los[l];
		printf("\nlayout %d, %s: %s\n  %zu bytes each way per exchange, %d exchanges\n", l + 1,
		       lo->name, lo->desc, lo->bytes, lo->reps);
		printf("  %-9s %-13s %9s %12s %10s %9s  %s\n", "FI_DDTX_", "ddtx used", "msgs/dir",
		       "bytes moved", "time ms", "GB/s", "data");
		for (int s = 0; s < nsch; s++) {
			memset(sh, 0, sizeof(*sh));
			struct arg a = {lo, schemes[s], sh};
			int rc = ft_spawn(2, 120, rank_main, &a);
			struct result *r = &sh->res;
			if (rc || r->status) {
				printf("  %-9s FAILED: %s\n", schemes[s],
				       r->err[0] ? r->err : "a process failed (see above)");
				failures++;
				continue;
			}
			/* Bytes: ddtx's own count when it has one, else what was asked. */
			uint64_t moved = r->moved ? r->moved : (uint64_t)lo->bytes * 2 * lo->reps;
			printf("  %-9s %-13s %9zu %12llu %10.2f %9.3f  %s\n", schemes[s], r->used,
			       r->msgs, (unsigned long long)moved, r->secs * 1e3,
			       moved / r->secs / 1e9, r->verified ? "verified" : "NOT verified");
		}
	}
	printf("\nbytes moved: payload of both directions over all exchanges, as counted by ddtx's\n"
	       "statistics (fi_ddtx(3)); \"ddtx used\" lists the schemes those bytes went by.\n");
	printf(failures ? "\n%d run(s) FAILED\n" : "\nall data verified\n", failures);
	for (int l = 0; l < 3; l++) {
		free(los[l].soff);
		free(los[l].roff);
		free(los[l].len);
	}
	munmap(sh, sizeof(*sh));
	return failures ? 1 : 0;
}
