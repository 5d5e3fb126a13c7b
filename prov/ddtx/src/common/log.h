/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Logging through libfabric's FI_LOG_LEVEL machinery.  The fi_provider object it names is defined
 * by core/provider.c; every floor logs through it, so its declaration lives here.
 */
#ifndef DDTX_COMMON_LOG_H
#define DDTX_COMMON_LOG_H

#include <rdma/fabric.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

extern struct fi_provider ddtx_prov;

#define DDTX_WARN(subsys, ...) FI_WARN(&ddtx_prov, subsys, __VA_ARGS__)
#define DDTX_INFO(subsys, ...) FI_INFO(&ddtx_prov, subsys, __VA_ARGS__)
#define DDTX_DBG(subsys, ...) FI_DBG(&ddtx_prov, subsys, __VA_ARGS__)

#endif /* DDTX_COMMON_LOG_H */
