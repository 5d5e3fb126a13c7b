/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers shared by the functional test programs (on top of ../common/ft_harness.h):
 *  - a test runner (named sub-tests, each one ft_spawn of real processes),
 *  - an endpoint opener with more knobs than ft_open (CQ format, wait object, scheme, ...),
 *  - CQ reads that stash completions so barriers can keep progressing the provider,
 *  - a progress barrier (manual progress: a waiting rank keeps reading its CQ),
 *  - iov layouts with gaps filled with a canary, and byte-exact checks.
 *
 * The parent process never touches libfabric: every rank initialises the provider itself,
 * after fork, so that settings such as FI_DDTX_SCHEME can be chosen per rank.
 */
#ifndef FX_H
#define FX_H

#include <sys/uio.h>
#include <rdma/fi_ddtx.h>

#include "ft_harness.h"

#define FX_MAX_RANKS 64

/* ---- runner ---------------------------------------------------------------------------- */

struct fx_test {
	const char *name;
	int nranks;
	int timeout_s;
	ft_rank_fn fn;
	void *arg;
};

/*
 * Run the tests named on the command line (all when none; a trailing '*' matches a prefix;
 * NAME=VALUE arguments set environment variables, e.g. FI_DDTX_SHM_RING_SLOTS=4).
 * "--list" prints the names.  Returns 0 when all passed, 77 when all were skipped, 1 otherwise.
 */
int fx_main(int argc, char **argv, const struct fx_test *tests, size_t ntests);
/* Arguments of the form NAME=VALUE are put into the environment (before any rank forks) and
 * are not test names; fx_main calls this itself. */
void fx_apply_env_args(int argc, char **argv);

/* Scratch area shared by all ranks of the running test (zeroed before each test). */
struct fx_shared {
	_Atomic unsigned bar_count;
	_Atomic unsigned bar_gen;
	_Atomic long flag[64];
	_Atomic unsigned long long val[64];
};
extern struct fx_shared *fx_sh;
/* FX_SHMEM_SIZE bytes mapped MAP_SHARED before the ranks fork: the same memory in every rank
 * (a target can register it and an initiator can look at it directly). */
#define FX_SHMEM_SIZE ((size_t)64 << 20)
extern uint8_t *fx_shmem;

/* Environment integer with default. */
long fx_env_long(const char *name, long def);
/* The test's name, for messages ("" outside a test). */
extern const char *fx_test_name;

/* ---- endpoint -------------------------------------------------------------------------- */

struct fx;

struct fx_opts {
	uint64_t caps;                 /* 0: FI_MSG | FI_TAGGED | FI_RMA */
	uint64_t mr_mode;              /* hints' mr_mode */
	enum fi_av_type av_type;       /* default FI_AV_TABLE */
	enum fi_threading threading;   /* default unspecified */
	enum fi_cq_format cq_format;   /* default FI_CQ_FORMAT_TAGGED */
	enum fi_wait_obj wait_obj;     /* default FI_WAIT_NONE */
	bool tx_selective;             /* bind the CQ for FI_TRANSMIT with FI_SELECTIVE_COMPLETION */
	bool rx_selective;
	bool cntr;                     /* counter bound for FI_SEND|FI_RECV|FI_READ|FI_WRITE */
	const char *scheme;            /* FI_DDTX_SCHEME for this rank (NULL: leave environment) */
	uint64_t mode;
	uint64_t msg_order;            /* hints' tx/rx msg_order */
	/* Called after binding, before fi_enable (e.g. fi_setopt); non-zero fails the open. */
	int (*pre_enable)(struct fx *fx);
};

struct fx_comp {
	void *op_context;
	uint64_t flags;
	size_t len;
	void *buf;
	uint64_t data;
	uint64_t tag;
	fi_addr_t src;                 /* FI_ADDR_NOTAVAIL unless read with readfrom */
};

struct fx {
	struct ft_ctx *ctx;
	int rank, size;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_cntr *cntr;
	enum fi_cq_format fmt;
	bool readfrom;                 /* FI_SOURCE granted: CQ is read with fi_cq_readfrom */
	fi_addr_t *peers;
	struct fi_ddtx_ops *ops;
	struct fx_comp *stash;         /* completions read while progressing (FIFO) */
	size_t stash_head, stash_count, stash_cap;
};

/* Open everything, exchange names with all ranks and insert them; dies on failure. */
void fx_open(struct ft_ctx *ctx, const struct fx_opts *opts, struct fx *fx);
/* Same but returns the failing fabric errno (negative) instead of dying. */
int fx_try_open(struct ft_ctx *ctx, const struct fx_opts *opts, struct fx *fx);
void fx_close(struct fx *fx);

/* fi_getinfo with the hints fx_open would use (no objects opened).  Caller frees. */
int fx_getinfo(const struct fx_opts *opts, struct fi_info **info);
struct fi_info *fx_hints(const struct fx_opts *opts);

/* Read one completion: 1, -FI_EAGAIN or -FI_EAVAIL (error entry left in the CQ). */
int fx_read(struct fx *fx, struct fx_comp *c);
/* One progress step: reads at most one completion into the stash. */
void fx_progress(struct fx *fx);
/*
 * Wait for one completion or error.  Returns 1 (stored in *c), or -FI_EAVAIL with the error
 * in *err, or -FI_ETIMEDOUT.
 */
int fx_wait_any(struct fx *fx, struct fx_comp *c, struct fi_cq_err_entry *err, int timeout_ms);
/* Wait for n successful completions; an error or a timeout fails the test. */
void fx_wait(struct fx *fx, size_t n, struct fx_comp *out, int timeout_ms);
/* Wait for one error completion; a success or a timeout fails the test. */
void fx_wait_err(struct fx *fx, struct fi_cq_err_entry *err, int timeout_ms);
/* Progress for ms milliseconds; any completion or error fails the test. */
void fx_expect_none(struct fx *fx, int ms);

/* Barrier that keeps progressing (manual progress).  fx may be NULL (plain spinning). */
void fx_pbarrier(struct ft_ctx *ctx, struct fx *fx);

/* Retry a post while -FI_EAGAIN, progressing through the stash. */
#define FX_POST(fx, call)                                                                  \
	({                                                                                 \
		ssize_t fx_ret_;                                                           \
		double fx_t0_ = ft_now();                                                  \
		while ((fx_ret_ = (call)) == -FI_EAGAIN) {                                 \
			fx_progress(fx);                                                   \
			FT_CHECK(ft_now() - fx_t0_ < 60, "post still -FI_EAGAIN after 60 s"); \
		}                                                                          \
		fx_ret_;                                                                   \
	})
/* Post and require success. */
#define FX_OK(fx, call)                                                                    \
	do {                                                                               \
		ssize_t fx_r2_ = FX_POST(fx, call);                                        \
		FT_CHECK(fx_r2_ == 0, "%s returned %zd (%s)", #call, fx_r2_,               \
			 fi_strerror((int)-fx_r2_));                                       \
	} while (0)

/* Provider statistics of the domain (fi_ddtx.h). */
void fx_stats(struct fx *fx, struct fi_ddtx_stats *st);
const char *fx_scheme_name(int scheme);
/* FI_DDTX_SCHEME value -> enum fi_ddtx_scheme (-1 for auto/NULL). */
int fx_scheme_of(const char *setting);
/* The eager limit the provider uses (FI_DDTX_EAGER_SIZE or 16384). */
size_t fx_eager_size(void);
/* The largest contiguous message that may go eagerly under auto: on the shm wire up to the ring
 * slot's room (the cost model draws the boundary below it), elsewhere FI_DDTX_EAGER_SIZE; this
 * bound is the slot size itself, a little over the room. */
size_t fx_contig_eager_max(const struct fx *fx);
/*
 * Check that between two snapshots of the receiver's stats exactly one message of `size` bytes
 * was received, with the eager scheme when size <= eager limit, else with a rendezvous scheme
 * (the forced one when forced >= 0).
 */
void fx_check_scheme(const struct fi_ddtx_stats *before, const struct fi_ddtx_stats *after,
		     size_t size, int forced, const char *what);

/* ---- memory registration ------------------------------------------------------------ */

/* What an initiator needs to reach a registered region. */
struct fx_rkey {
	uint64_t key;
	uint64_t base;     /* address of the region's first byte for RMA (0 without FI_MR_VIRT_ADDR) */
	uint64_t len;
};
/*
 * fi_mr_reg with the domain's key mode: caller key `want_key` unless FI_MR_PROV_KEY.
 * Fills *rk for peers.  Dies on failure.
 */
struct fid_mr *fx_mr_reg(struct fx *fx, void *buf, size_t len, uint64_t access,
			 uint64_t want_key, struct fx_rkey *rk);
/* RMA address of byte `off` of a region. */
static inline uint64_t fx_raddr(const struct fx_rkey *rk, uint64_t off) { return rk->base + off; }

/* ---- bytes ----------------------------------------------------------------------------- */

void fx_fill(void *buf, size_t len, uint64_t seed, size_t off);
/* Index of the first byte that differs from the pattern, or (size_t)-1. */
size_t fx_find_bad(const void *buf, size_t len, uint64_t seed, size_t off);
/* Die unless buf holds the pattern; fmt describes the buffer. */
void fx_check_pattern(const void *buf, size_t len, uint64_t seed, size_t off, const char *fmt,
		      ...) __attribute__((format(printf, 5, 6)));
#define FX_CHECK_PATTERN(buf, len, seed, off, ...) fx_check_pattern(buf, len, seed, off, __VA_ARGS__)
void *fx_alloc(size_t len);      /* page-aligned, dies on failure */

/* A receive buffer of len usable bytes with a 64-byte canary on both sides. */
#define FX_CSEED 0xC0FFEE
struct fx_rbuf {
	uint8_t *mem;
	uint8_t *buf;
	size_t len;
};
void fx_rbuf_init(struct fx_rbuf *r, size_t len);
/* The first nbytes hold the pattern (seed); every other byte still holds the canary. */
void fx_rbuf_check(const struct fx_rbuf *r, uint64_t seed, size_t nbytes, const char *what);
void fx_rbuf_free(struct fx_rbuf *r);

/*
 * An iov list cutting `total` stream bytes into `count` entries placed in one backing buffer
 * with random gaps between them (and before the first / after the last).
 */
struct fx_layout {
	size_t total, count, backing;
	uint8_t *base;
	size_t *off;                   /* entry i lives at base + off[i] */
	size_t *len;
	struct iovec *iov;
	void **desc;                   /* all NULL */
};
/* count is clamped to [1, total] (total 0: one empty entry); max_gap 0 means no gaps. */
void fx_layout_make(struct fx_layout *l, size_t total, size_t count, size_t max_gap,
		    uint64_t *rng);
void fx_layout_free(struct fx_layout *l);
/* Fill every backing byte with the canary pattern (cseed, backing offset). */
void fx_layout_canary(struct fx_layout *l, uint64_t cseed);
/* Put stream bytes (dseed, stream offset) into the entries. */
void fx_layout_data(struct fx_layout *l, uint64_t dseed);
/*
 * Check: the first nbytes stream bytes are in the entries, the remaining entry bytes and all
 * gap bytes still hold the canary.  Dies with a description on the first bad byte.
 */
void fx_layout_check(const struct fx_layout *l, uint64_t dseed, size_t nbytes, uint64_t cseed,
		     const char *what);
/* Random count in [1, max] with a log-uniform distribution. */
size_t fx_rand_count(uint64_t *rng, size_t max);
/* Random size in [lo, hi] with a log-uniform distribution. */
size_t fx_rand_size(uint64_t *rng, size_t lo, size_t hi);

/* ---- shared memory file checks --------------------------------------------------------- */

/* Number of /dev/shm/ddtx-<pid>-* files (and the first name in name if not NULL). */
int fx_shm_files(pid_t pid, char *name, size_t namelen);

#endif /* FX_H */
