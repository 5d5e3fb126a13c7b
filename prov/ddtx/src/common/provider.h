/* SPDX-License-Identifier: BSD-2-Clause */
/* The provider's identity and the limits of its API that more than one floor enforces. */
#ifndef DDTX_COMMON_PROVIDER_H
#define DDTX_COMMON_PROVIDER_H

#include <rdma/fabric.h>

#define DDTX_PROV_NAME "ddtx"
#define DDTX_PROV_VERSION FI_VERSION(0, 1)
#define DDTX_FI_VERSION FI_VERSION(1, 17)

/* Entries of one iov list in a data call, and segments of one fi_mr_regv. */
#define DDTX_IOV_LIMIT 1024
#define DDTX_MR_IOV_LIMIT 1024

#endif /* DDTX_COMMON_PROVIDER_H */
