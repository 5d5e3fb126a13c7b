/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Application memory registration: a key in the wire domain's key table, in the application key
 * space (DDTX_KEY_APP), with libfabric's access bits translated into the wire's.
 */
#include <stdlib.h>

#include "proto/proto_internal.h"

struct ddtx_proto_mr {
	struct ddtx_wire_mr *wmr;
};

#define FI_MR_ACCESS_BITS                                                                        \
	(FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)

static uint32_t wire_access(uint64_t access)
{
	uint32_t acc = 0;

	if (!(access & FI_MR_ACCESS_BITS))
		access = FI_SEND | FI_RECV | FI_READ | FI_WRITE; /* 0: local use only */
	if (access & (FI_READ | FI_SEND))
		acc |= DDTX_ACC_LOCAL_READ;
	if (access & (FI_WRITE | FI_RECV))
		acc |= DDTX_ACC_LOCAL_WRITE;
	if (access & FI_REMOTE_READ)
		acc |= DDTX_ACC_REMOTE_READ;
	if (access & FI_REMOTE_WRITE)
		acc |= DDTX_ACC_REMOTE_WRITE;
	return acc;
}

int ddtx_proto_mr_reg(struct ddtx_proto_domain *pd, const struct iovec *iov, size_t count,
		      uint64_t access, const uint64_t *requested_key, uint64_t iova,
		      struct ddtx_proto_mr **out, uint64_t *key)
{
	struct ddtx_proto_mr *mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	int ret = ddtx_wire_mr_reg(pd->wire, iov, count, DDTX_KEY_APP, requested_key, iova,
				   wire_access(access), &mr->wmr);
	if (ret) {
		free(mr);
		return ret;
	}
	*key = mr->wmr->key;
	*out = mr;
	return 0;
}

int ddtx_proto_mr_dereg(struct ddtx_proto_domain *pd, struct ddtx_proto_mr *mr)
{
	int ret = ddtx_wire_mr_dereg(pd->wire, mr->wmr);
	if (!ret)
		free(mr);
	return ret;
}
