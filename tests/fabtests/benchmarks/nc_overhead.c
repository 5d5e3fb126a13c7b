/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nc_overhead: the software cost of one small message, without a second core.
 *
 * One endpoint sends tagged messages to itself: post a receive, send, read both completions.
 * What that takes per message is the provider's own path (calls, checks, queues, the ring
 * copy), with no cache line crossing cores and no waiting on another process.  A ping-pong's
 * one-way latency is about this plus the cross-core transfer of the message.  On a shared
 * 2-core host both move with the host's load (shm's row by up to 1.6x between invocations on
 * 2026-11-27): compare providers within one invocation, builds by the fastest of several.
 *
 * Each provider runs in a child process of its own (FI_PROVIDER set there).  Rows: contiguous
 * messages of the given sizes, then lists of --blocks blocks of 64 B (iov entries of 64 B
 * at a stride of 128 B, received contiguously).  The column ddtx-handle is ddtx sending those
 * blocks as one layout handle (fi_ddtx(3), the strided constructor), as MPICH's --ddtx-layouts
 * build does; its contiguous rows are ddtx's.  The last message of every row is checked byte
 * for byte; a wrong byte fails the program, a figure never does.
 *
 *   nc_overhead [-p ddtx,shm,ddtx-handle] [-s 8,64,1K,4K] [-b 4,32] [-n ITERATIONS] [-r RUNS]
 */
#include "nc_common.h"

#include <getopt.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_tagged.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ROWS 32
#define MAX_PROVS 4
#define MAX_BLOCKS 64
#define LIST_BLOCK 64

struct row {
	size_t bytes;   /* contiguous message size, or 0 */
	size_t blocks;  /* iov entries of LIST_BLOCK bytes, or 0 */
};

struct loop {
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	fi_addr_t self;
	struct fid_mr *smr, *rmr;
	uint8_t *sbuf, *rbuf;
	size_t cap;
	struct fi_ddtx_ops *dops;       /* ddtx-handle: the layout constructors */
};

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

#define TRY(call)                                                                             \
	do {                                                                                  \
		int _r = (int)(call);                                                         \
		if (_r) {                                                                     \
			fprintf(stderr, "%s: %s\n", #call, fi_strerror(-_r));                 \
			return -1;                                                            \
		}                                                                             \
	} while (0)

static int loop_open(struct loop *lp, const char *prov, size_t cap)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	if (!hints)
		return -1;
	hints->caps = FI_TAGGED;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup(prov);
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	int ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (ret) {
		fprintf(stderr, "%s: fi_getinfo: %s\n", prov, fi_strerror(-ret));
		return -1;
	}
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED, .size = 64};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	TRY(fi_fabric(info->fabric_attr, &lp->fab, NULL));
	TRY(fi_domain(lp->fab, info, &lp->dom, NULL));
	TRY(fi_cq_open(lp->dom, &cq_attr, &lp->cq, NULL));
	TRY(fi_av_open(lp->dom, &av_attr, &lp->av, NULL));
	TRY(fi_endpoint(lp->dom, info, &lp->ep, NULL));
	fi_freeinfo(info);
	TRY(fi_ep_bind(lp->ep, &lp->av->fid, 0));
	TRY(fi_ep_bind(lp->ep, &lp->cq->fid, FI_TRANSMIT | FI_RECV));
	TRY(fi_enable(lp->ep));
	char name[256];
	size_t len = sizeof(name);
	TRY(fi_getname(&lp->ep->fid, name, &len));
	if (fi_av_insert(lp->av, name, 1, &lp->self, 0, NULL) != 1) {
		fprintf(stderr, "%s: fi_av_insert of its own name failed\n", prov);
		return -1;
	}
	lp->cap = cap;
	lp->sbuf = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	lp->rbuf = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (lp->sbuf == MAP_FAILED || lp->rbuf == MAP_FAILED)
		return -1;
	TRY(fi_mr_reg(lp->dom, lp->sbuf, cap, FI_SEND, 0, 1, 0, &lp->smr, NULL));
	TRY(fi_mr_reg(lp->dom, lp->rbuf, cap, FI_RECV, 0, 2, 0, &lp->rmr, NULL));
	return 0;
}

/* Read completions until `want` arrived; negative on an error completion. */
static int loop_reap(struct loop *lp, int want)
{
	struct fi_cq_tagged_entry e[4];
	while (want > 0) {
		ssize_t n = fi_cq_read(lp->cq, e, 4);
		if (n > 0) {
			want -= (int)n;
		} else if (n != -FI_EAGAIN) {
			struct fi_cq_err_entry err = {0};
			fi_cq_readerr(lp->cq, &err, 0);
			fprintf(stderr, "completion error: %s\n", fi_strerror(err.err));
			return -1;
		}
	}
	return 0;
}

/* One message to itself: the receive first (expected), then the send, then both completions. */
static int loop_one(struct loop *lp, const struct iovec *siov, void **sdesc, size_t scount,
		    size_t bytes, uint64_t tag)
{
	void *rdesc = fi_mr_desc(lp->rmr);
	ssize_t r;
	while ((r = fi_trecv(lp->ep, lp->rbuf, bytes, rdesc, lp->self, tag, 0, NULL)) == -FI_EAGAIN)
		fi_cq_read(lp->cq, NULL, 0);
	if (r)
		return -1;
	struct fi_msg_tagged msg = {.msg_iov = siov, .desc = sdesc, .iov_count = scount,
				    .addr = lp->self, .tag = tag};
	while ((r = fi_tsendmsg(lp->ep, &msg, 0)) == -FI_EAGAIN)
		fi_cq_read(lp->cq, NULL, 0);
	if (r)
		return -1;
	return loop_reap(lp, 2);
}

/* ns per message of a row (best of runs), or a negative value on failure. */
static double loop_row(struct loop *lp, const struct row *rw, long iters, int runs)
{
	struct iovec iov[MAX_BLOCKS];
	void *desc[MAX_BLOCKS];
	size_t count = 1, bytes = rw->bytes;
	if (rw->blocks) {
		count = rw->blocks;
		bytes = count * LIST_BLOCK;
		for (size_t i = 0; i < count; i++)
			iov[i] = (struct iovec){lp->sbuf + 2 * LIST_BLOCK * i, LIST_BLOCK};
	} else {
		iov[0] = (struct iovec){lp->sbuf, bytes};
	}
	for (size_t i = 0; i < count; i++)
		desc[i] = fi_mr_desc(lp->smr);
	/* The same blocks as one layout handle: one entry spanning them, the handle its desc. */
	struct fi_ddtx_layout *handle = NULL;
	const struct iovec *siov = iov;
	struct iovec span;
	size_t scount = count;
	if (lp->dops && rw->blocks) {
		int ret = lp->dops->layout_create_strided(lp->dom, LIST_BLOCK, 2 * LIST_BLOCK,
							  count, &handle);
		if (ret) {
			fprintf(stderr, "layout_create_strided: %s\n", fi_strerror(-ret));
			return -1;
		}
		span = (struct iovec){lp->sbuf, lp->dops->layout_size(handle)};
		siov = &span;
		scount = 1;
		desc[0] = handle;
	}
	for (size_t i = 0; i < lp->cap; i++)
		lp->sbuf[i] = (uint8_t)(i * 7 + 3);
	double best = -1;
	for (int r = 0; r < runs; r++) {
		for (long i = 0; i < iters / 10; i++) /* warm-up: caches, the cost model's samples */
			if (loop_one(lp, siov, desc, scount, bytes, 5))
				goto fail;
		memset(lp->rbuf, 0, bytes);
		double t0 = now_ns();
		for (long i = 0; i < iters; i++)
			if (loop_one(lp, siov, desc, scount, bytes, 5))
				goto fail;
		double ns = (now_ns() - t0) / (double)iters;
		if (best < 0 || ns < best)
			best = ns;
		for (size_t i = 0, off = 0; i < count; off += iov[i].iov_len, i++)
			if (memcmp(lp->rbuf + off, iov[i].iov_base, iov[i].iov_len)) {
				fprintf(stderr, "row of %zu B x %zu: wrong bytes received\n",
					iov[0].iov_len, count);
				best = -2;
				goto out;
			}
	}
out:
	if (handle)
		lp->dops->layout_free(handle);
	return best;
fail:
	best = -1;
	goto out;
}

/* Child: every row over one provider; figures go back through out[]. */
static int run_prov(const char *prov, const struct row *rows, int nrows, long iters, int runs,
		    double *out)
{
	bool handle = !strcmp(prov, "ddtx-handle");
	if (handle)
		prov = "ddtx";
	setenv("FI_PROVIDER", prov, 1);
	struct loop lp = {0};
	size_t cap = 2 * LIST_BLOCK * MAX_BLOCKS;
	for (int i = 0; i < nrows; i++)
		if (rows[i].bytes > cap)
			cap = rows[i].bytes;
	if (loop_open(&lp, prov, cap))
		return 1;
	if (handle && (fi_open_ops(&lp.dom->fid, FI_DDTX_DOMAIN_OPS_1, 0, (void **)&lp.dops, NULL) ||
		       !lp.dops->layout_create_strided)) {
		fprintf(stderr, "ddtx-handle: no layout handles in this provider\n");
		return 1;
	}
	for (int i = 0; i < nrows; i++) {
		out[i] = loop_row(&lp, &rows[i], iters, runs);
		if (out[i] == -2)
			return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	char provs_arg[128] = "ddtx,shm";
	const char *sizes_arg = "8,64,1K,4K", *blocks_arg = "4,32";
	long iters = 200000;
	int runs = 3, opt;
	while ((opt = getopt(argc, argv, "p:s:b:n:r:h")) != -1) {
		switch (opt) {
		case 'p': snprintf(provs_arg, sizeof(provs_arg), "%s", optarg); break;
		case 's': sizes_arg = optarg; break;
		case 'b': blocks_arg = optarg; break;
		case 'n': iters = atol(optarg); break;
		case 'r': runs = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: nc_overhead [-p ddtx,shm,ddtx-handle] [-s 8,64,1K,4K] "
				"[-b 4,32] [-n ITERATIONS] [-r RUNS]\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	struct row rows[MAX_ROWS];
	int nrows = 0;
	bool ok = true;
	size_t v[MAX_ROWS];
	int n = *sizes_arg ? nc_parse_sizes(sizes_arg, v, MAX_ROWS, &ok) : 0;
	for (int i = 0; i < n && nrows < MAX_ROWS; i++)
		rows[nrows++] = (struct row){.bytes = v[i]};
	n = ok && *blocks_arg ? nc_parse_sizes(blocks_arg, v, MAX_ROWS, &ok) : 0;
	for (int i = 0; i < n && nrows < MAX_ROWS; i++)
		if (v[i] >= 1 && v[i] <= MAX_BLOCKS)
			rows[nrows++] = (struct row){.blocks = v[i]};
		else
			ok = false;
	const char *provs[MAX_PROVS];
	int nprov = 0;
	for (char *save, *p = strtok_r(provs_arg, ",", &save); p && nprov < MAX_PROVS;
	     p = strtok_r(NULL, ",", &save))
		provs[nprov++] = p;
	if (!ok || !nrows || !nprov || iters < 1 || runs < 1) {
		fprintf(stderr, "nc_overhead: bad option (blocks: 1 to %d)\n", MAX_BLOCKS);
		return 2;
	}
	double *fig = nc_bench_start(sizeof(double) * MAX_PROVS * MAX_ROWS);
	if (!fig)
		return 1;
	int failed = 0;
	for (int p = 0; p < nprov; p++) {
		pid_t pid = fork();
		if (pid == 0)
			_exit(run_prov(provs[p], rows, nrows, iters, runs, fig + p * MAX_ROWS));
		int st = 0;
		waitpid(pid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "nc_overhead: %s failed\n", provs[p]);
			for (int i = 0; i < nrows; i++)
				fig[p * MAX_ROWS + i] = -1;
			failed |= WIFEXITED(st) && WEXITSTATUS(st) == 2;
		}
	}
	printf("# one endpoint sending to itself: ns per message (receive posted, send, both "
	       "completions), best of %d runs of %ld\n", runs, iters);
	printf("%-14s", "message");
	for (int p = 0; p < nprov; p++)
		printf("%12s", provs[p]);
	for (int p = 1; p < nprov; p++)
		printf("%8s/%-5s", provs[0], provs[p]);
	printf("\n");
	for (int i = 0; i < nrows; i++) {
		char name[32];
		if (rows[i].blocks)
			snprintf(name, sizeof(name), "%zux%d B", rows[i].blocks, LIST_BLOCK);
		else
			nc_fmt_bytes(name, sizeof(name), rows[i].bytes);
		printf("%-14s", name);
		for (int p = 0; p < nprov; p++)
			if (fig[p * MAX_ROWS + i] >= 0)
				printf("%12.1f", fig[p * MAX_ROWS + i]);
			else
				printf("%12s", "-");
		for (int p = 1; p < nprov; p++) {
			double a = fig[i], b = fig[p * MAX_ROWS + i];
			if (a > 0 && b > 0)
				printf("%13.2fx", a / b);
			else
				printf("%14s", "-");
		}
		printf("\n");
	}
	return failed ? 1 : 0;
}
