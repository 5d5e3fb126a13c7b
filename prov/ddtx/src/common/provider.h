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
 * this limit (every list is copied to the heap and walked in linear passes), and 16384 was
 * tried: MPICH's --iov-max build then handed SW4lite-3000 to ddtx (155 -> 32 us), but a
 * runtime that fills its lists to the limit with 8-16 B blocks got 2x slower (nc_bw 32 MiB of
 * 8 B blocks: 128 KiB messages by PACK rendezvous instead of 8 KiB eager ones;
 * docs/benchmark-results.md).  1024 until long lists of small blocks move as fast by PACK.
 */
#define DDTX_IOV_LIMIT 1024
#define DDTX_MR_IOV_LIMIT 1024

#endif /* DDTX_COMMON_PROVIDER_H */
