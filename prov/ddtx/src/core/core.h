/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The ddtx provider as libfabric sees it: what it offers (capabilities, flags, sizes), fi_getinfo
 * and its template, and the FI_DDTX_* settings.  Each libfabric object has its own header
 * (fabric.h, domain.h, av.h, cq.h, cntr.h, mr.h, eq.h, ep.h); the data path behind them is
 * proto's (proto/proto.h, the one header that crosses).
 */
#ifndef DDTX_CORE_H
#define DDTX_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <rdma/fi_ddtx.h>

#include <rdma/fi_errno.h>
#include "common/clock.h"
#include "common/log.h"
#include "common/minmax.h"
#include "common/provider.h"
#include "common/settings.h"

/* The capabilities ddtx offers (fi_getinfo answers a subset of these). */
#define DDTX_CAPS                                                                                \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE |   \
	 FI_SEND | FI_RECV | FI_DIRECTED_RECV | FI_SOURCE | FI_LOCAL_COMM | FI_REMOTE_COMM |      \
	 FI_MULTI_RECV | FI_ATOMIC | FI_RMA_EVENT)
/* DDTX_CAPS, plus FI_HMEM where CUDA device memory is offered (a driver and a device). */
uint64_t ddtx_caps(void);
#define DDTX_TX_OP_FLAGS                                                                         \
	(FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE |                  \
	 FI_DELIVERY_COMPLETE | FI_REMOTE_CQ_DATA)
#define DDTX_RX_OP_FLAGS (FI_COMPLETION | FI_MULTI_RECV)

#define DDTX_INJECT_SIZE 4096
#define DDTX_CQ_DATA_SIZE 8
#define DDTX_MAX_MSG_SIZE ((size_t)1 << 40)

int ddtx_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		 const struct fi_info *hints, struct fi_info **info);

/* The fi_info template ddtx answers from (getinfo.c). */
struct fi_info *ddtx_info_template(void);
/* The iov limit advertised and enforced: DDTX_IOV_LIMIT capped by FI_DDTX_IOV_LIMIT. */
size_t ddtx_iov_limit(void);
/*
 * The core provider of a layered name ("tcp;ofi_rxm;ddtx" -> "tcp;ofi_rxm"), malloc'd; NULL when
 * name is not "<core>;ddtx" (the native entries, wire chosen by FI_DDTX_WIRE).
 */
char *ddtx_layered_core(const char *prov_name);

/* Declare and read the FI_DDTX_* variables (provider.c; called from fi_prov_ini). */
void ddtx_settings_load(void);

#endif /* DDTX_CORE_H */
