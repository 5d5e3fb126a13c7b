/* SPDX-License-Identifier: BSD-2-Clause */
/* fi_cntr: completion and error counts of the operations bound to it. */
#ifndef DDTX_CORE_CNTR_H
#define DDTX_CORE_CNTR_H

#include "core/domain.h"

struct ddtx_cntr {
	struct fid_cntr fid;
	struct ddtx_domain *domain;
	atomic_int ref;
	atomic_uint_fast64_t value;
	atomic_uint_fast64_t err;
	enum fi_wait_obj wait_obj;
};

void ddtx_cntr_inc(struct ddtx_cntr *cntr);
void ddtx_cntr_err_inc(struct ddtx_cntr *cntr);

int ddtx_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		   struct fid_cntr **cntr, void *context);
/* The ddtx counter behind a fid, or NULL if the fid is not one. */
struct ddtx_cntr *ddtx_cntr_from_fid(struct fid *fid);

#endif /* DDTX_CORE_CNTR_H */
