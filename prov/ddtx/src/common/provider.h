/* SPDX-License-Identifier: BSD-2-Clause */
/* The provider's identity and the limits of its API that more than one floor enforces. */
#ifndef DDTX_COMMON_PROVIDER_H
#define DDTX_COMMON_PROVIDER_H

#include <rdma/fabric.h>

#define DDTX_PROV_NAME "ddtx"
#define DDTX_PROV_VERSION FI_VERSION(0, 1)
#define DDTX_FI_VERSION FI_VERSION(1, 17)

/*
 * Entries of one iov list in a data call, and segments of one fi_mr_regv.  MPICH hands a
 * datatype to the provider as an iov list only up to the smaller of its own cap and this
 * limit, and packs it itself above: at 1024, SPECFEM3D (3225 and 7600 pieces) and SW4lite
 * (3000) never reached ddtx's engine.  Nothing is sized by this limit: every list is copied
 * to the heap and walked in linear passes.
 */
#define DDTX_IOV_LIMIT 16384
#define DDTX_MR_IOV_LIMIT 1024

#endif /* DDTX_COMMON_PROVIDER_H */
