/* SPDX-License-Identifier: BSD-2-Clause */
/* The provider's identity and the limits of its API that more than one floor enforces. */
#ifndef DDTX_COMMON_PROVIDER_H
#define DDTX_COMMON_PROVIDER_H

#include <rdma/fabric.h>

#define DDTX_PROV_NAME "ddtx"
#define DDTX_PROV_VERSION FI_VERSION(0, 1)
#define DDTX_FI_VERSION FI_VERSION(1, 17)

/*
 * Entries of one iov list in a data call, and segments of one fi_mr_regv.  Nothing is sized by
 * this limit (lists are walked in linear passes).  At 16384 MPICH's --iov-max build hands
 * SW4lite-3000 to ddtx (155 -> 32 us); a runtime that fills its lists to the limit with 8-16 B
 * blocks sends 128 KiB messages by PACK rendezvous instead of 8 KiB eager ones, which moved at
 * half the rate while each send and receive copied its list; borrowed from the layout cache
 * they move faster than eager (nc_bw, docs/benchmark-results.md).
 */
#define DDTX_IOV_LIMIT 16384
#define DDTX_MR_IOV_LIMIT 1024

#endif /* DDTX_COMMON_PROVIDER_H */
