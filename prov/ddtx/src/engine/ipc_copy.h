/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The copy engine's plan for moving bytes from one list of device segments to another (the
 * sender's blocks, mapped here by CUDA IPC, into the receiver's, or back): no host memory in
 * between.  Both lists are walked together and cut into pieces where either side's segment
 * ends; pieces that continue on both sides merge.  If every piece has one length and each
 * side one stride (a vector into a vector, or into one contiguous buffer), the plan can be one
 * 2-D copy (cuMemcpy2DAsync); any plan can run as one launch of the device copy kernel, or as
 * its pieces queued back to back as one batch (cuMemcpyAsync each) and waited for once.
 */
#ifndef DDTX_IPC_COPY_H
#define DDTX_IPC_COPY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>

#include "engine/hmem_copy.h"
#include "hmem/hmem.h"

struct ddtx_ipc_plan {
	bool two_d;                     /* one 2-D copy (below), else ops */
	struct {
		void *dst;
		const void *src;
		size_t dpitch, spitch, width, height;
	} d2;
	struct ddtx_hmem_copy_op *ops;  /* the pieces (a 2-D plan: NULL until a way needs them) */
	size_t nops;
	size_t bytes;
};

/*
 * Plan the copy of the first len bytes of src's segments into dst's (len at most either
 * total; -FI_EINVAL otherwise).  Segments are described by address only: nothing is read.
 * -FI_ENOMEM.
 */
int ddtx_ipc_plan_build(const struct iovec *dst, size_t ndst, const struct iovec *src,
			size_t nsrc, size_t len, struct ddtx_ipc_plan *p);
/*
 * The same where the source is one vector (count blocks of `block` bytes from src, stride
 * apart): if dst is a vector of the same block too, the 2-D plan without listing the pieces
 * (they are listed if a way needs them); -FI_EAGAIN if not (list the source, build as above).
 */
int ddtx_ipc_plan_from_vector(const struct iovec *dst, size_t ndst, const void *src,
			      size_t stride, size_t block, size_t count, size_t len,
			      struct ddtx_ipc_plan *p);
void ddtx_ipc_plan_free(struct ddtx_ipc_plan *p);

/*
 * Run it in device's context, the way asked (FI_DDTX_HMEM_COPY) where it can: KERNEL the device
 * copy kernel over the pieces (engine/gpu_pieces.h) when there is more than one and the
 * kernels load, 2D the one 2-D copy of a vector plan, else SEGMENTS, the batch; AUTO the 2-D
 * copy for a vector, else the kernel.  Returns the way used; *ret is 0 or -FI_E* as hmem's
 * copies.
 */
enum ddtx_hmem_copy ddtx_ipc_plan_run(int device, struct ddtx_ipc_plan *p,
				      enum ddtx_hmem_copy way, int *ret);

#endif /* DDTX_IPC_COPY_H */
