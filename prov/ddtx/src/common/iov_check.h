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
#include <sys/uio.h>

/*
 * 0, or -FI_EINVAL.  When total is not NULL the list's bytes are added to *total (the addition
 * is part of the overflow check, so a caller can start from a header length).
 */
int ddtx_iov_check(const struct iovec *iov, size_t count, size_t limit, size_t *total);

#endif /* DDTX_COMMON_IOV_CHECK_H */
