/* SPDX-License-Identifier: BSD-2-Clause */
#include "common/iov_check.h"

#include <stdint.h>
#include <rdma/fi_errno.h>

int ddtx_iov_check(const struct iovec *iov, size_t count, size_t limit, size_t *total)
{
	size_t t = total ? *total : 0;

	if (count > limit || (count && !iov))
		return -FI_EINVAL;
	for (size_t i = 0; i < count; i++) {
		if (iov[i].iov_len && !iov[i].iov_base)
			return -FI_EINVAL;
		if (iov[i].iov_len > SIZE_MAX - t)
			return -FI_EINVAL;
		t += iov[i].iov_len;
	}
	if (total)
		*total = t;
	return 0;
}
