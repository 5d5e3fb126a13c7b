/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fid_nic of ddtx's fi_info entries: what `fi_info -v` shows of the device side of the
 * provider, chiefly whether FI_HMEM (CUDA) is offered and whether the build carries the device
 * pack kernels (device_attr->firmware).  libfabric duplicates it with fi_control(FI_DUP) and
 * frees it with fi_close, so it carries its own fi_ops.
 */
#ifndef DDTX_CORE_NIC_H
#define DDTX_CORE_NIC_H

#include <rdma/fabric.h>

/* A new nic describing this provider (NULL when memory is short: the entry then has none). */
struct fid_nic *ddtx_nic_new(void);

#endif /* DDTX_CORE_NIC_H */
