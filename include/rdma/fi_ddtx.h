/*
 * ddtx provider extensions, reached through fi_open_ops() on a ddtx domain:
 *
 *   struct fi_ddtx_ops *ops;
 *   fi_open_ops(&domain->fid, FI_DDTX_DOMAIN_OPS_1, 0, (void **)&ops, NULL);
 *   struct fi_ddtx_stats st;
 *   ops->stats(domain, &st);
 *
 * See fi_ddtx(3).
 */
#ifndef FI_DDTX_H
#define FI_DDTX_H

#include <stdint.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FI_DDTX_DOMAIN_OPS_1 "ddtx_domain_ops_1"

/* How a message's or RMA operation's bytes were moved. */
enum fi_ddtx_scheme {
	FI_DDTX_SCHEME_EAGER = 0,  /* copied through the receiver's ring with the header */
	FI_DDTX_SCHEME_PACK,       /* gathered into bounce buffers, scattered at the receiver */
	FI_DDTX_SCHEME_SGL,        /* zero copy: matched scatter-gather descriptor pairs */
	FI_DDTX_SCHEME_UMR,        /* zero copy: one write per multi-entry key window pair */
	FI_DDTX_SCHEME_RMA,        /* fi_write/fi_read: application keys, zero copy */
	FI_DDTX_SCHEME_COUNT,
};

struct fi_ddtx_stats {
	/* Operations and payload bytes per scheme, counted at the side that chose the scheme
	 * (the receiver for messages, the initiator for RMA), plus sender-side totals. */
	uint64_t ops[FI_DDTX_SCHEME_COUNT];
	uint64_t bytes[FI_DDTX_SCHEME_COUNT];
	uint64_t tx_ops;           /* messages sent */
	uint64_t rx_ops;           /* messages received */
	uint64_t iov_entries_max;  /* largest iov count seen on a send or receive */
	enum fi_ddtx_scheme last_scheme; /* scheme of the most recently completed message */
};

struct fi_ddtx_ops {
	size_t size;               /* sizeof(struct fi_ddtx_ops) of the provider */
	/* Copy the domain's counters into *stats. */
	int (*stats)(struct fid_domain *domain, struct fi_ddtx_stats *stats);
	/* Name of a scheme ("eager", "pack", "sgl", "umr", "rma"). */
	const char *(*scheme_name)(enum fi_ddtx_scheme scheme);
};

#ifdef __cplusplus
}
#endif

#endif /* FI_DDTX_H */
