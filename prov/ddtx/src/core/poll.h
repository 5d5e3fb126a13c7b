/* SPDX-License-Identifier: BSD-2-Clause */
/* fi_poll: a set of CQs and counters checked together (fi_poll(3)). */
#ifndef DDTX_CORE_POLL_H
#define DDTX_CORE_POLL_H

#include <rdma/fi_domain.h>

int ddtx_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		   struct fid_poll **pollset);

#endif /* DDTX_CORE_POLL_H */
