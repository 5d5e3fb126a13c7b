/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The segments of a CUDA IPC offer as runs (hdr.h, struct ddtx_ipc_run): the sender encodes its
 * segments, the receiver checks what a peer sent and lists the segments in its own mappings.
 */
#ifndef DDTX_IPC_RUNS_H
#define DDTX_IPC_RUNS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "proto/hdr.h"

/*
 * Encode the non-empty segments of iov (payload order; n entries) as runs into out: three or
 * more of one allocation and length at one forward stride as a vector, the others gathered
 * into lists of one allocation and length.  Segment i lies in allocation alloc_of[i] (alloc_of
 * NULL: all in allocation 0), whose base is base[alloc].  Returns the bytes written (*nrun the
 * runs), or 0 if more than room would be needed or there are more than DDTX_IPC_MAX_SEGS.
 */
size_t ddtx_ipc_runs_encode(const struct iovec *iov, size_t n, const uint8_t *alloc_of,
			    const uint64_t *base, void *out, size_t room, uint32_t *nrun);

/*
 * The same for n segments known to be one vector (len bytes each, the first at offset in
 * allocation alloc, one stride >= len apart): the bytes ddtx_ipc_runs_encode writes for such
 * a list, without reading it; 0 where it writes none.
 */
size_t ddtx_ipc_runs_encode_vector(uint32_t alloc, uint64_t offset, uint64_t len, size_t n,
				   uint64_t stride, void *out, size_t room, uint32_t *nrun);

/*
 * Walk nrun runs taking exactly len bytes at runs, against the offer's nalloc allocations:
 * each run names one, is non-empty, and every segment lies inside its allocation; at most
 * DDTX_IPC_MAX_SEGS segments in all.  NULL, with *nseg segments of *bytes bytes in all, or the
 * name of what is wrong (a peer's message: every field checked).  With out (room for *nseg
 * entries, from a walk before), the segments are also listed there, each at local[alloc] +
 * offset.
 */
const char *ddtx_ipc_runs_walk(const void *runs, size_t len, uint32_t nrun,
			       const struct ddtx_ipc_alloc *alloc, uint32_t nalloc,
			       void *const *local, struct iovec *out, size_t *nseg,
			       uint64_t *bytes);

#endif /* DDTX_IPC_RUNS_H */
