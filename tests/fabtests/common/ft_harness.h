/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Test and benchmark harness: runs N real processes (fork before libfabric is touched), gives
 * them a barrier and an all-gather over shared memory for out-of-band address exchange, and
 * opens a ready RDM endpoint on a chosen provider.
 */
#ifndef FT_HARNESS_H
#define FT_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#define FT_SKIP 77

struct ft_ctx {
	int rank;
	int size;
	struct ft_shared *shared;   /* barrier and exchange area */
};

/* Per-rank body: return 0 on success, FT_SKIP to skip, anything else is a failure. */
typedef int (*ft_rank_fn)(struct ft_ctx *ctx, void *arg);

/*
 * Fork nranks processes running fn and wait for them.  If one fails, dies or the timeout
 * (seconds) passes, the others are killed.  Returns 0 if all passed, FT_SKIP if any skipped and
 * none failed, 1 otherwise.
 */
int ft_spawn(int nranks, int timeout_s, ft_rank_fn fn, void *arg);

void ft_barrier(struct ft_ctx *ctx);
/*
 * Hosts (ft_hosts.c): with DDTX_HOSTS set (util/hosts.sh run), ft_spawn puts rank r of n on host
 * r * nhosts / n before it runs; ft_host_of says which (-1: no hosts, one machine as it is).
 */
int ft_host_of(int rank, int nranks);
void ft_host_enter(int rank, int nranks);
/* Every rank contributes len (<= FT_XCHG_MAX) bytes; all receives size * len bytes in rank order. */
#define FT_XCHG_MAX 256
void ft_allgather(struct ft_ctx *ctx, const void *mine, size_t len, void *all);

/* An opened RDM endpoint with its objects. */
struct ft_ep {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_cq *cq;          /* one CQ for transmit and receive, FI_CQ_FORMAT_TAGGED */
	struct fid_cntr *cntr;      /* optional: bound for FI_READ|FI_WRITE when opts.cntr */
	fi_addr_t *peers;           /* fi_addr of every rank, indexed by rank */
	int size;
};

struct ft_opts {
	const char *prov;           /* "ddtx", "shm", "tcp" (NULL: ddtx) */
	uint64_t caps;              /* 0: FI_MSG | FI_TAGGED | FI_RMA */
	uint64_t mr_mode;           /* hints' mr_mode (default 0) */
	enum fi_av_type av_type;    /* default FI_AV_TABLE */
	enum fi_threading threading;
	bool cntr;
	bool selective;
	size_t iov_limit;           /* minimum required tx/rx iov_limit, 0 = any */
	const char *node;           /* source node for fi_getinfo (tcp: "127.0.0.1"), NULL = none */
	uint64_t mode;              /* hints' mode bits (contexts must then be struct fi_context2) */
};

/* Open fabric/domain/av/cq/ep, exchange addresses with all ranks and insert them. */
int ft_open(struct ft_ctx *ctx, const struct ft_opts *opts, struct ft_ep *out);
void ft_close(struct ft_ep *fe);

/*
 * Drive progress until `count` completions were read from cq (stored in comps if non-NULL) or
 * an error completion arrives (stored in *err if non-NULL; returns -FI_EAVAIL), or timeout_ms
 * passes (-FI_ETIMEDOUT).  Returns the number of completions read.
 */
int ft_wait(struct fid_cq *cq, size_t count, struct fi_cq_tagged_entry *comps,
	    struct fi_cq_err_entry *err, int timeout_ms);

/* Repeat a post while it returns -FI_EAGAIN, progressing cq in between. */
#define FT_POST(cq, call)                                                                  \
	({                                                                                 \
		ssize_t ft_ret_;                                                           \
		while ((ft_ret_ = (call)) == -FI_EAGAIN) {                                 \
			struct fi_cq_tagged_entry ft_e_;                                   \
			(void)fi_cq_read((cq), &ft_e_, 0);                                 \
		}                                                                          \
		ft_ret_;                                                                   \
	})

#define FT_CHECK(cond, ...)                                                                \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);    \
			fprintf(stderr, __VA_ARGS__);                                      \
			fprintf(stderr, "\n");                                             \
			exit(1);                                                           \
		}                                                                          \
	} while (0)

/* Deterministic per-byte pattern so receivers can check every byte. */
static inline uint8_t ft_pattern(uint64_t seed, size_t i)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
	x ^= x >> 29;
	return (uint8_t)(x ^ (x >> 17));
}

/* xorshift64* random numbers for property tests. */
static inline uint64_t ft_rand(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1Dull;
}

double ft_now(void); /* seconds, monotonic */

#endif /* FT_HARNESS_H */
