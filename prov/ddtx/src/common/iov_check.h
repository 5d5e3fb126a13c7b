/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The one validity check of a caller's or a layer's iov list: at most limit entries, a list
 * present when count > 0, no NULL base under a non-empty entry, and a byte total that does not
 * overflow.  Every floor that accepts a list (the API calls, memory registration, the wires'
 * work requests) uses it, so an entry refused in one place is refused in all.
 */
#ifndef DDTX_COMMON_IOV_CHECK_H
#define DDTX_COMMON_IOV_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <rdma/fi_errno.h>

/* A list of other than one entry (iov_check.c). */
int ddtx_iov_check_list(const struct iovec *iov, size_t count, size_t limit, size_t *total);

/*
 * 0, or -FI_EINVAL.  When total is not NULL the list's bytes are added to *total (the addition
 * is part of the overflow check, so a caller can start from a header length).  Most messages
 * are one buffer, checked here in line: the call was 23 instructions of each of the three
 * checks of an 8 B message (callgrind, util/bench-instructions.sh).
 */
static inline int ddtx_iov_check(const struct iovec *iov, size_t count, size_t limit,
				 size_t *total)
{
	if (count != 1 || !iov || limit < 1)
		return ddtx_iov_check_list(iov, count, limit, total);
	size_t len = iov->iov_len, start = total ? *total : 0;
	if ((len && !iov->iov_base) || len > SIZE_MAX - start)
		return -FI_EINVAL;
	if (total)
		*total = start + len;
	return 0;
}

#endif /* DDTX_COMMON_IOV_CHECK_H */
