/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nc_layout_cost: what a layout-cache hit costs against a miss, per block, seen from outside
 * (benchmark c of the engine issue; target: a hit costs under 10 ns per block).
 *
 * Rank 0 times fi_tsendmsg alone (the post, not the transfer) for an iov list of `count` blocks
 * of `block` bytes, `stride` apart, alternating between
 *   hit   the same layout at the same base every time (after a warm-up: a cache hit), and
 *   miss  a fresh layout of the same shape: the same list shifted by a new multiple of 64 bytes
 *         inside the same buffer, so the layout cache misses while the memory (pages,
 *         registrations) stays the same: the cost isolated is hashing, lookup and flattening.
 * Rank 1 receives each message into a contiguous buffer.  Every message is a rendezvous
 * (FI_DDTX_EAGER_SIZE is set to --eager, default 128 bytes, so that even 16 blocks of 64 B
 * take the path that consults the layout cache).  The sender's statistics tell how many posts
 * really hit and missed (layout_hits / layout_misses).
 *
 * Printed per count: median post time of hits and misses, per block, and the difference; then a
 * least-squares line over the counts (fixed part + slope per block) for hits and misses.
 */
#include "nc_common.h"

#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_N 16
#define SHIFT 64

struct lc_cfg {
	size_t count, block, stride;
	int iters;                 /* timed posts of each kind */
	const char *scheme;
	bool pin;
};

struct lc_shared {
	int status;
	char err[256];
	double hit_med, miss_med, hit_mean, miss_mean, hit_min, miss_min;
	struct fi_ddtx_stats d;    /* sender, timed loop */
	size_t iov_limit;
	bool skipped;
};

static int rank_main(struct ft_ctx *ctx, void *varg)
{
	const struct lc_cfg *c = ((void **)varg)[0];
	struct lc_shared *sh = ((void **)varg)[1];
	struct nc_fab f;
	if (nc_rank_open(ctx, c->pin, c->scheme, &f, sh->err, sizeof(sh->err))) {
		sh->status = 1;
		return 1;
	}
	int rc = 0;
	if (c->count > f.iov_lim) {
		if (ctx->rank == 0) {
			sh->skipped = true;
			sh->iov_limit = f.iov_lim;
		}
		goto out;
	}
	int warm = 10, total = warm + 2 * c->iters;
	size_t bytes = c->count * c->block;
	size_t span = (c->count - 1) * c->stride + c->block;
	struct nc_ctx op = {0};
	size_t pending = 0;
	if (ctx->rank == 1) {
		uint8_t *rbuf = nc_map_fresh(bytes);
		FT_CHECK(rbuf, "out of memory");
		for (int i = 0; i < total; i++) {
			struct iovec iov = {rbuf, bytes};
			struct fi_msg_tagged msg = {.msg_iov = &iov, .iov_count = 1, .addr = f.peer,
						    .tag = (uint64_t)i, .context = &op.fctx};
			op.pending = &pending;
			pending = 1;
			ssize_t r;
			while ((r = fi_trecvmsg(f.fe.ep, &msg, FI_COMPLETION)) == -FI_EAGAIN)
				nc_fab_progress(&f);
			if (r) {
				nc_fab_err(&f, "fi_trecvmsg: %s", fi_strerror((int)-r));
				goto fail;
			}
			if (nc_fab_wait(&f, &pending))
				goto fail;
		}
		nc_unmap(rbuf, bytes);
	} else {
		/* Room for the hit layout and (warm + iters) shifted copies of it. */
		size_t len = span + (size_t)(total + 1) * SHIFT;
		uint8_t *buf = nc_map_fresh(len);
		FT_CHECK(buf, "out of memory");
		memset(buf, 0x11, len);
		struct iovec *iov = calloc(c->count, sizeof(*iov));
		double *th = calloc((size_t)c->iters, sizeof(double));
		double *tm = calloc((size_t)c->iters, sizeof(double));
		FT_CHECK(iov && th && tm, "out of memory");
		size_t next_shift = 1;
		struct fi_ddtx_stats s0, s1;
		int nh = 0, nm = 0;
		for (int i = 0; i < total; i++) {
			bool timed = i >= warm;
			bool hit = i % 2 == 0;
			uint8_t *base = hit ? buf : buf + SHIFT * next_shift++;
			for (size_t b = 0; b < c->count; b++) {
				iov[b].iov_base = base + b * c->stride;
				iov[b].iov_len = c->block;
			}
			struct fi_msg_tagged msg = {.msg_iov = iov, .iov_count = c->count,
						    .addr = f.peer, .tag = (uint64_t)i,
						    .context = &op.fctx};
			op.pending = &pending;
			pending = 1;
			if (i == warm)
				nc_fab_stats(&f, &s0);
			double t0 = ft_now();
			ssize_t r = fi_tsendmsg(f.fe.ep, &msg, FI_COMPLETION);
			double dt = ft_now() - t0;
			while (r == -FI_EAGAIN) { /* ring full: not a figure, try again untimed */
				nc_fab_progress(&f);
				t0 = ft_now();
				r = fi_tsendmsg(f.fe.ep, &msg, FI_COMPLETION);
				dt = ft_now() - t0;
			}
			if (r) {
				nc_fab_err(&f, "fi_tsendmsg(%zu entries): %s", c->count,
					   fi_strerror((int)-r));
				goto fail;
			}
			if (timed) {
				if (hit)
					th[nh++] = dt;
				else
					tm[nm++] = dt;
			}
			if (nc_fab_wait(&f, &pending))
				goto fail;
		}
		nc_fab_stats(&f, &s1);
		sh->d = s1;
#define NC_SUB(x) sh->d.x = s1.x - s0.x
		NC_SUB(layout_hits); NC_SUB(layout_misses); NC_SUB(reg_hits); NC_SUB(reg_misses);
		NC_SUB(layout_evictions); NC_SUB(regthread_layouts); NC_SUB(tx_ops);
#undef NC_SUB
		double sum = 0;
		for (int i = 0; i < nh; i++)
			sum += th[i];
		sh->hit_mean = sum / nh;
		sum = 0;
		for (int i = 0; i < nm; i++)
			sum += tm[i];
		sh->miss_mean = sum / nm;
		sh->hit_med = nc_median(th, nh);
		sh->miss_med = nc_median(tm, nm);
		sh->hit_min = th[0];
		sh->miss_min = tm[0];
		free(iov);
		free(th);
		free(tm);
		nc_unmap(buf, len);
	}
	goto out;
fail:
	snprintf(sh->err, sizeof(sh->err), "rank %d: %.200s", ctx->rank, f.err);
	sh->status = 1;
	rc = 1;
out:
	ft_barrier(ctx);
	nc_fab_close(&f);
	return rc;
}

/* Least squares y = a + b x. */
static void fit(const double *x, const double *y, int n, double *a, double *b)
{
	double sx = 0, sy = 0, sxx = 0, sxy = 0;
	for (int i = 0; i < n; i++) {
		sx += x[i];
		sy += y[i];
		sxx += x[i] * x[i];
		sxy += x[i] * y[i];
	}
	double den = n * sxx - sx * sx;
	*b = den != 0 ? (n * sxy - sx * sy) / den : 0;
	*a = n ? (sy - *b * sx) / n : 0;
}

static void usage(const char *prog)
{
	printf("Usage: %s [options]\n"
	       "Post time of fi_tsendmsg with a repeated layout (layout-cache hit) against a fresh\n"
	       "layout of the same shape (miss), per block.\n\n"
	       "  -n, --counts LIST     blocks per message (default 16,64,256,1024,4096; counts\n"
	       "                        above the provider's iov_limit are skipped)\n"
	       "  -b, --block BYTES     block length (default 64)\n"
	       "  -S, --stride BYTES    (default 2 x block)\n"
	       "  -i, --iters N         timed posts of each kind per count (default 400)\n"
	       "  -c, --scheme S        FI_DDTX_SCHEME (default auto)\n"
	       "      --eager BYTES     FI_DDTX_EAGER_SIZE for the run (default 128)\n"
	       "      --repeat N        runs per count, median reported (default 3)\n"
	       "      --json FILE       write the figures as JSON\n"
	       "      --no-pin          do not pin the two processes to different CPUs\n"
	       "  -h, --help\n",
	       prog);
}

int main(int argc, char **argv)
{
	size_t counts[MAX_N], block = 64, stride = 0, eager = 128;
	char counts_s[256] = "16,64,256,1024,4096", scheme[32] = "auto";
	int iters = 400, repeat = 3;
	bool ok = true, pin = true;
	const char *json = NULL;
	enum { O_EAGER = 256, O_REP, O_JSON, O_NOPIN };
	static const struct option lopts[] = {
		{"counts", required_argument, NULL, 'n'}, {"block", required_argument, NULL, 'b'},
		{"stride", required_argument, NULL, 'S'}, {"iters", required_argument, NULL, 'i'},
		{"scheme", required_argument, NULL, 'c'}, {"eager", required_argument, NULL, O_EAGER},
		{"repeat", required_argument, NULL, O_REP}, {"json", required_argument, NULL, O_JSON},
		{"no-pin", no_argument, NULL, O_NOPIN},   {"help", no_argument, NULL, 'h'},
		{0}};
	int opt;
	while ((opt = getopt_long(argc, argv, "n:b:S:i:c:h", lopts, NULL)) != -1) {
		switch (opt) {
		case 'n': snprintf(counts_s, sizeof(counts_s), "%s", optarg); break;
		case 'b': block = nc_parse_size(optarg, &ok); break;
		case 'S': stride = nc_parse_size(optarg, &ok); break;
		case 'i': iters = atoi(optarg); ok &= iters > 0; break;
		case 'c': snprintf(scheme, sizeof(scheme), "%s", optarg); break;
		case O_EAGER: eager = nc_parse_size(optarg, &ok); break;
		case O_REP: repeat = atoi(optarg); ok &= repeat > 0 && repeat < 100; break;
		case O_JSON: json = optarg; break;
		case O_NOPIN: pin = false; break;
		case 'h': usage(argv[0]); return 0;
		default: ok = false;
		}
	}
	int nn = nc_parse_sizes(counts_s, counts, MAX_N, &ok);
	if (!stride)
		stride = 2 * block;
	for (int i = 0; i < nn; i++)
		ok &= counts[i] > 0;
	if (!ok || optind < argc || !nn || !block || stride < block) {
		fprintf(stderr, "nc_layout_cost: bad arguments (see --help)\n");
		return 2;
	}
	struct lc_shared *sh = nc_bench_start(sizeof(*sh));
	if (!sh)
		return 1;
	char ev[32];
	snprintf(ev, sizeof(ev), "%zu", eager);
	setenv("FI_DDTX_EAGER_SIZE", ev, 1);
	printf("nc_layout_cost: blocks of %zu B, stride %zu, FI_DDTX_SCHEME=%s, "
	       "FI_DDTX_EAGER_SIZE=%zu, %d posts of each kind, median of %d runs\n",
	       block, stride, scheme, eager, iters, repeat);
	printf("%7s %11s %11s %10s %10s %10s %9s %9s\n", "blocks", "hit_ns", "miss_ns",
	       "hit_ns/blk", "miss/blk", "diff/blk", "hits", "misses");
	double xs[MAX_N], yh[MAX_N], ym[MAX_N];
	int nfit = 0, failed = 0;
	struct {
		size_t count;
		bool skipped, ok;
		double hit, miss;
		unsigned long long hits, misses;
		char err[256];
	} rows[MAX_N];
	memset(rows, 0, sizeof(rows));
	for (int i = 0; i < nn; i++) {
		struct lc_cfg c = {.count = counts[i], .block = block, .stride = stride,
				   .iters = iters, .scheme = scheme, .pin = pin};
		double hs[100], ms[100];
		int nr = 0;
		rows[i].count = counts[i];
		for (int rep = 0; rep < repeat; rep++) {
			memset(sh, 0, sizeof(*sh));
			void *arg[2] = {&c, sh};
			int rc = ft_spawn(2, 600, rank_main, arg);
			if (rc && !sh->status)
				sh->status = rc;
			if (sh->status) {
				snprintf(rows[i].err, sizeof(rows[i].err), "%s",
					 sh->err[0] ? sh->err : "failed (see stderr)");
				break;
			}
			if (sh->skipped)
				break;
			hs[nr] = sh->hit_med;
			ms[nr++] = sh->miss_med;
			rows[i].hits = (unsigned long long)sh->d.layout_hits;
			rows[i].misses = (unsigned long long)sh->d.layout_misses;
		}
		if (sh->status) {
			failed++;
			printf("%7zu ERROR: %s\n", counts[i], rows[i].err);
			continue;
		}
		if (sh->skipped) {
			rows[i].skipped = true;
			printf("%7zu skipped: above the provider's iov_limit (%zu)\n", counts[i],
			       sh->iov_limit);
			continue;
		}
		rows[i].ok = true;
		rows[i].hit = nc_median(hs, nr);
		rows[i].miss = nc_median(ms, nr);
		double n = (double)counts[i];
		printf("%7zu %11.0f %11.0f %10.2f %10.2f %10.2f %9llu %9llu\n", counts[i],
		       rows[i].hit * 1e9, rows[i].miss * 1e9, rows[i].hit * 1e9 / n,
		       rows[i].miss * 1e9 / n, (rows[i].miss - rows[i].hit) * 1e9 / n, rows[i].hits,
		       rows[i].misses);
		xs[nfit] = n;
		yh[nfit] = rows[i].hit * 1e9;
		ym[nfit++] = rows[i].miss * 1e9;
	}
	double ah = 0, bh = 0, am = 0, bm = 0;
	if (nfit >= 2) {
		fit(xs, yh, nfit, &ah, &bh);
		fit(xs, ym, nfit, &am, &bm);
		printf("\nfit over the counts: hit  = %.0f ns + %.2f ns/block\n"
		       "                     miss = %.0f ns + %.2f ns/block\n",
		       ah, bh, am, bm);
		printf("target (a hit costs under 10 ns per block, slope of the hit line): %.2f ns "
		       "%s\n",
		       bh, bh < 10 ? "met" : "MISSED");
		printf("hits/misses: the sender's layout_hits / layout_misses over the timed posts "
		       "(expected %d each)\n",
		       iters);
	}
	if (json) {
		FILE *f = fopen(json, "w");
		if (!f) {
			fprintf(stderr, "nc_layout_cost: cannot write %s: %s\n", json, strerror(errno));
			return 1;
		}
		fprintf(f, "{\n  \"benchmark\": \"nc_layout_cost\",\n  \"block\": %zu,\n"
			   "  \"stride\": %zu,\n  \"scheme\": \"%s\",\n  \"eager\": %zu,\n"
			   "  \"iters\": %d,\n  \"repeat\": %d,\n  \"fit\": {\"hit_fixed_ns\": %.1f, "
			   "\"hit_ns_per_block\": %.3f, \"miss_fixed_ns\": %.1f, "
			   "\"miss_ns_per_block\": %.3f},\n  \"rows\": [\n",
			block, stride, scheme, eager, iters, repeat, ah, bh, am, bm);
		for (int i = 0; i < nn; i++) {
			fprintf(f, "    {\"blocks\": %zu, \"status\": \"%s\"", rows[i].count,
				rows[i].ok ? "ok" : rows[i].skipped ? "skipped" : "error");
			if (rows[i].ok)
				fprintf(f, ", \"hit_ns\": %.1f, \"miss_ns\": %.1f, \"layout_hits\": %llu, "
					   "\"layout_misses\": %llu",
					rows[i].hit * 1e9, rows[i].miss * 1e9, rows[i].hits,
					rows[i].misses);
			fprintf(f, "}%s\n", i + 1 < nn ? "," : "");
		}
		fprintf(f, "  ]\n}\n");
		fclose(f);
		printf("wrote %s\n", json);
	}
	munmap(sh, sizeof(*sh));
	return 0;
}
