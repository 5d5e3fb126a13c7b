/* SPDX-License-Identifier: BSD-2-Clause */
/* fi_fabric: the root object; it counts the domains and EQs opened on it. */
#ifndef DDTX_CORE_FABRIC_H
#define DDTX_CORE_FABRIC_H

#include "core/core.h"

struct ddtx_fabric {
	struct fid_fabric fid;
	atomic_int ref;
	struct fi_fabric_attr attr;
};

int ddtx_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);

#endif /* DDTX_CORE_FABRIC_H */
