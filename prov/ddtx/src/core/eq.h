/* SPDX-License-Identifier: BSD-2-Clause */
/* fi_eq: the event queue (ddtx raises only errors and AV events on it). */
#ifndef DDTX_CORE_EQ_H
#define DDTX_CORE_EQ_H

#include <pthread.h>

#include "common/list.h"
#include "core/fabric.h"

struct ddtx_eq {
	struct fid_eq fid;
	struct ddtx_fabric *fabric;
	pthread_mutex_t lock;
	struct ddtx_list events;
	struct ddtx_list errors;
};

int ddtx_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq,
		 void *context);

#endif /* DDTX_CORE_EQ_H */
