/* SPDX-License-Identifier: BSD-2-Clause */
/* fi_mr: application memory regions; the keys and registrations are proto's. */
#ifndef DDTX_CORE_MR_H
#define DDTX_CORE_MR_H

#include "core/cntr.h"
#include "core/domain.h"

struct ddtx_mr {
	struct fid_mr fid;               /* fid.key is what fi_mr_key() returns */
	struct ddtx_domain *domain;
	struct ddtx_proto_mr *pmr;
	uint64_t access;                 /* FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_* */
	uint64_t flags;
	struct ddtx_cntr *remote_write;  /* FI_RMA_EVENT counters bound by fi_mr_bind */
	struct ddtx_cntr *remote_read;
	enum fi_hmem_iface iface;        /* FI_HMEM_SYSTEM or FI_HMEM_CUDA */
};

/*
 * The descriptors of a data call: each one of our CUDA MRs must still name the allocation it
 * was registered on (freed or re-allocated device memory: -FI_EINVAL, instead of a driver copy
 * from memory that is gone).  NULL descriptors and layout handles pass.
 */
int ddtx_mr_descs_check(void **desc, size_t count);

int ddtx_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
		uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
		void *context);
int ddtx_mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
		 uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
		 void *context);
int ddtx_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
		    struct fid_mr **mr);

#endif /* DDTX_CORE_MR_H */
