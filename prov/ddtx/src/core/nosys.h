/* SPDX-License-Identifier: BSD-2-Clause */
/* What core's objects share without holding it: -FI_ENOSYS stubs and one strerror. */
#ifndef DDTX_CORE_NOSYS_H
#define DDTX_CORE_NOSYS_H

#include <rdma/fi_atomic.h>

#include "core/core.h"

/* Stubs for fid operations an object does not support. */
int ddtx_nosys_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int ddtx_nosys_control(struct fid *fid, int command, void *arg);
int ddtx_nosys_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
			void *context);
int ddtx_nosys_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		      struct fid_ep **tx_ep, void *context);
int ddtx_nosys_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		      struct fid_ep **rx_ep, void *context);
int ddtx_nosys_connect(struct fid_ep *ep, const void *addr, const void *param, size_t paramlen);
int ddtx_nosys_listen(struct fid_pep *pep);
int ddtx_nosys_accept(struct fid_ep *ep, const void *param, size_t paramlen);
int ddtx_nosys_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen);
int ddtx_nosys_shutdown(struct fid_ep *ep, uint64_t flags);
int ddtx_nosys_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc,
		    void *context);

/* fi_cq_strerror / fi_eq_strerror: prov_errno is an FI_E* value (either sign). */
const char *ddtx_strerror(int prov_errno, char *buf, size_t len);

#endif /* DDTX_CORE_NOSYS_H */
