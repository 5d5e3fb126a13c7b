/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Pieces shared by the DDT engine benchmarks (nc_crossover, nc_mix, nc_layout_cost):
 *
 *  - buffers that are always mapped at a new address (so the provider's layout and registration
 *    caches see a genuinely new buffer), and freed with munmap (so its memory monitor sees it go),
 *  - strided and listed layouts placed at a base, sent as messages of at most iov_limit entries
 *    or, when the provider offers it, as one message through a layout handle (fi_ddtx.h),
 *  - a two-process "transfer + acknowledgement" loop: rank 0 posts a transfer (one or more
 *    layouts), rank 1 has its receives posted in advance, re-posts for the next transfer and then
 *    acknowledges with 8 bytes; rank 0 times post -> acknowledgement,
 *  - statistics deltas, argument parsing and JSON helpers.
 *
 * Figures are never a reason to fail: the programs fail only on bad options or wrong data.
 */
#ifndef NC_COMMON_H
#define NC_COMMON_H

#include "ft_harness.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/uio.h>

#include <rdma/fi_ddtx.h>

#ifndef NC_DEFAULT_PROV_PATH
#define NC_DEFAULT_PROV_PATH ""
#endif

#define NC_TAG_ACK ((uint64_t)1 << 50)
#define NC_GAP 0xA5

/* ---- options and output ---------------------------------------------------------------- */

/* "64", "4K", "1M", "2G" (an optional trailing B or iB). */
size_t nc_parse_size(const char *s, bool *ok);
/* A comma-separated list of sizes; returns the count (at most max). */
int nc_parse_sizes(const char *s, size_t *out, int max, bool *ok);
void nc_fmt_bytes(char *buf, size_t n, size_t v);
void nc_json_str(FILE *f, const char *s);
/* FI_PROVIDER_PATH defaults to the build tree's provider. */
void nc_default_env(void);
/* A benchmark's start after its arguments: nc_default_env, stdout line-buffered, and a zeroed
 * area of len bytes shared with the ranks it forks (NULL, with a message, if mmap fails). */
void *nc_bench_start(size_t len);
/* Pin rank r to the r-th CPU of its affinity mask (nothing with fewer than 2 CPUs). */
void nc_pin(int rank);
/* Median of n doubles (sorts them). */
double nc_median(double *v, int n);

/* ---- memory ---------------------------------------------------------------------------- */

/* len bytes of fresh anonymous memory at an address never handed out before by this process. */
void *nc_map_fresh(size_t len);
void nc_unmap(void *p, size_t len);

/* ---- layouts --------------------------------------------------------------------------- */

struct nc_layout {
	size_t n;                    /* blocks */
	size_t *off, *len;           /* block i: [base + off[i], + len[i]) */
	size_t bytes;                /* sum of len */
	size_t span;                 /* end of the last byte + 1 */
	size_t min_block;
	uint8_t *base;               /* current placement (NULL: none) */
	struct iovec *iov;           /* absolute, for the current placement */
	struct fi_ddtx_layout *handle; /* non-NULL: sent/received through the handle */
};

void nc_layout_strided(struct nc_layout *l, size_t block, size_t count, size_t stride);
/* A general layout from n (offset, length) pairs. */
void nc_layout_list(struct nc_layout *l, size_t n, const size_t *off, const size_t *len);
void nc_layout_place(struct nc_layout *l, uint8_t *base);
void nc_layout_free(struct nc_layout *l);
/* Sender: blocks get the pattern (seed, stream offset); gaps are left alone. */
void nc_layout_fill(const struct nc_layout *l, uint64_t seed);
/* Receiver: the whole span gets NC_GAP. */
void nc_layout_clear(const struct nc_layout *l);
/* Blocks hold the pattern and every gap byte still NC_GAP; false with a description. */
bool nc_layout_check(const struct nc_layout *l, uint64_t seed, char *err, size_t errlen);

/* ---- fabric ---------------------------------------------------------------------------- */

struct nc_ctx {
	struct fi_context2 fctx;     /* first: the CQ hands back &ctx->fctx */
	size_t *pending;
};

struct nc_fab {
	struct ft_ep fe;
	fi_addr_t peer;
	size_t iov_lim;
	struct fi_ddtx_ops *dops;    /* NULL when not ddtx or the extension is missing */
	bool can_handle;             /* dops->layout_create* present */
	char err[256];
	uint64_t tag;                /* next message tag (both ranks advance it identically) */
	struct nc_ctx ack_ctx;
	size_t ack_pending;
	uint64_t ack_buf, ack_sbuf;
	double timeout_s;
};

/* Open a ddtx endpoint with FI_DDTX_SCHEME=scheme (NULL: leave the environment). */
int nc_fab_open(struct ft_ctx *ctx, const char *scheme, struct nc_fab *f);
void nc_fab_close(struct nc_fab *f);
/* A benchmark rank's start: pin it to its core if asked, let its peer attach (ptrace scope,
 * for process_vm_writev) and open the endpoint; on failure err says why and it returns 1. */
int nc_rank_open(struct ft_ctx *ctx, bool pin, const char *scheme, struct nc_fab *f, char *err,
		 size_t errlen);
/* Messages a layout needs. */
size_t nc_fab_nmsg(const struct nc_fab *f, const struct nc_layout *l);
/* Post the messages of a layout (tags from f->tag on), contexts from ctxs[nc_fab_nmsg]. */
int nc_fab_send(struct nc_fab *f, const struct nc_layout *l, struct nc_ctx *ctxs, size_t *pending);
int nc_fab_recv(struct nc_fab *f, const struct nc_layout *l, struct nc_ctx *ctxs, size_t *pending);
/* Read completions until *pending is 0 (0) or an error/timeout (-1, f->err set). */
int nc_fab_wait(struct nc_fab *f, size_t *pending);
int nc_fab_progress(struct nc_fab *f);
/* Acknowledgement: rank 0 posts nc_fab_ack_recv before its transfer, rank 1 sends. */
int nc_fab_ack_recv(struct nc_fab *f);
int nc_fab_ack_send(struct nc_fab *f);
int nc_fab_ack_wait(struct nc_fab *f);
void nc_fab_stats(const struct nc_fab *f, struct fi_ddtx_stats *st);
/* Create l->handle through the extension (0), or a negative error (-FI_ENOSYS: none). */
int nc_fab_handle(struct nc_fab *f, struct nc_layout *l);
/* "pack", "umr", or "pack:40% umr:60%": which schemes moved the bytes between two snapshots. */
void nc_used(const struct fi_ddtx_ops *dops, const struct fi_ddtx_stats *a,
	     const struct fi_ddtx_stats *b, char *out, size_t outlen);
/* Printf into f->err (first error wins). */
void nc_fab_err(struct nc_fab *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- the transfer loop ----------------------------------------------------------------- */

/*
 * Rank 0 sends, rank 1 receives.  A transfer moves every component layout once (each as
 * nc_fab_nmsg messages) and ends with rank 1's 8-byte acknowledgement; rank 0 times post ->
 * acknowledgement.  Transfers come in groups of `reuse`: each group maps fresh buffers at new
 * addresses on both sides (outside the timing) and frees the previous ones, so every group
 * starts with a new layout at a new address (caches miss once per group).  Rank 1 checks every
 * byte (gaps included) at the end of every group, outside the timing.
 *
 * When a group would take longer than max_group_s, rank 0 times its first `head` transfers and
 * a sample of `sample` more, then stops the group and counts the rest at the sample's mean
 * (res->extrapolated).
 */
struct nc_loop_cfg {
	int reuse;                /* transfers per group (>= 1) */
	double min_s;             /* keep adding groups until this much was timed ... */
	int min_groups, max_groups; /* ... within these bounds */
	double max_group_s;       /* 0: never extrapolate */
	int head, sample;
	int warmup_groups;        /* untimed groups first, of min(reuse, warmup_len) transfers */
	int warmup_len;
	uint64_t seed;
};

/* In MAP_SHARED memory, zeroed before the ranks fork. */
struct nc_loop_shared {
	_Atomic int group_len;
	int status;               /* 0 ok, 1 error, 2 wrong data */
	char err[256];
	struct fi_ddtx_stats delta[2];   /* each rank's statistics over the timed groups */
	char used[64];            /* receiver: schemes that moved the timed bytes */
	double t_xfer;            /* seconds per transfer (rank 0) */
	double t_first, t_rest;   /* mean time of a group's first transfer, of the others */
	long groups, transfers;   /* timed, as measured */
	bool extrapolated;
};

/* comps[k]: this rank's side of each component (rank 0 send, rank 1 receive layouts). */
int nc_loop(struct ft_ctx *ctx, struct nc_fab *f, struct nc_layout *comps, int k,
	    const struct nc_loop_cfg *cfg, struct nc_loop_shared *sh);

/* Delta of a counter between two snapshots. */
#define NC_D(a, b, field) ((unsigned long long)((b)->field - (a)->field))

#endif /* NC_COMMON_H */
