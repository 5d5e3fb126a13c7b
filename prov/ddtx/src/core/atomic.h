/* SPDX-License-Identifier: BSD-2-Clause */
/* fi_atomic(3): the endpoint's fi_ops_atomic and the domain's fi_query_atomic, over proto. */
#ifndef DDTX_CORE_ATOMIC_H
#define DDTX_CORE_ATOMIC_H

#include <rdma/fi_atomic.h>

#include "core/domain.h"

extern struct fi_ops_atomic ddtx_atomic_ops;

int ddtx_query_atomic(struct fid_domain *domain, enum fi_datatype datatype, enum fi_op op,
		      struct fi_atomic_attr *attr, uint64_t flags);

#endif /* DDTX_CORE_ATOMIC_H */
