/* SPDX-License-Identifier: BSD-2-Clause */
/* The pieces of gpu_pieces.h. */
#include "engine/gpu_pieces.h"

#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

size_t ddtx_gpu_pieces_count(const struct ddtx_hmem_copy_op *ops, size_t n)
{
	size_t np = 0;

	for (size_t i = 0; i < n; i++)
		np += (ops[i].len + DDTX_GPU_PIECE_MAX_BYTES - 1) / DDTX_GPU_PIECE_MAX_BYTES;
	return np;
}

void ddtx_gpu_pieces_fill(const struct ddtx_hmem_copy_op *ops, size_t n,
			  struct ddtx_gpu_piece *p, uint32_t *group, struct ddtx_gpu_pieces *out)
{
	size_t in_group = 0, group_bytes = 0;

	*out = (struct ddtx_gpu_pieces){ .p = p, .group = group };
	for (size_t i = 0; i < n; i++) {
		for (uint64_t done = 0; done < ops[i].len;) {
			uint64_t len = ops[i].len - done < DDTX_GPU_PIECE_MAX_BYTES
					       ? ops[i].len - done
					       : DDTX_GPU_PIECE_MAX_BYTES;
			if (!in_group || in_group == DDTX_GPU_PIECES_PER_GROUP ||
			    group_bytes + len > DDTX_GPU_PIECE_MAX_BYTES) {
				out->group[out->ngroups++] = (uint32_t)out->npieces;
				in_group = 0;
				group_bytes = 0;
			}
			out->p[out->npieces++] = (struct ddtx_gpu_piece){
				(uintptr_t)ops[i].dst + done, (uintptr_t)ops[i].src + done, len };
			in_group++;
			group_bytes += len;
			out->bytes += len;
			done += len;
		}
	}
	out->group[out->ngroups] = (uint32_t)out->npieces;
}

int ddtx_gpu_pieces_build(const struct ddtx_hmem_copy_op *ops, size_t n,
			  struct ddtx_gpu_pieces *out)
{
	size_t np = ddtx_gpu_pieces_count(ops, n);
	/* At most one group per piece, and the groups' end. */
	struct ddtx_gpu_piece *p = malloc((np ? np : 1) * sizeof(*p));
	uint32_t *group = malloc((np + 1) * sizeof(*group));

	memset(out, 0, sizeof(*out));
	if (!p || !group || np > UINT32_MAX) {
		free(p);
		free(group);
		return -FI_ENOMEM;
	}
	ddtx_gpu_pieces_fill(ops, n, p, group, out);
	return 0;
}

void ddtx_gpu_pieces_free(struct ddtx_gpu_pieces *pc)
{
	free(pc->p);
	free(pc->group);
	memset(pc, 0, sizeof(*pc));
}

/* One piece's words first, first + step, ... (as a kernel thread copies them). */
static size_t piece_words(const struct ddtx_gpu_piece *q, uint64_t first, uint64_t step)
{
	unsigned w = ddtx_gpu_piece_width(q->dst, q->src, q->len);
	size_t copied = 0;

	for (uint64_t k = first; k < q->len / w; k += step) {
		memcpy((uint8_t *)(uintptr_t)q->dst + k * w, (const uint8_t *)(uintptr_t)q->src + k * w,
		       w);
		copied += w;
	}
	return copied;
}

size_t ddtx_gpu_pieces_apply(const struct ddtx_gpu_pieces *pc)
{
	enum { THREADS = 256 }; /* DDTX_GPU_PACK_THREADS: the loops below are a block's */
	size_t copied = 0;

	for (size_t g = 0; g < pc->ngroups; g++) {
		uint32_t first = pc->group[g], end = pc->group[g + 1];
		for (unsigned t = 0; t < THREADS; t++)
			for (uint32_t i = first + t; i < end; i += THREADS)
				if (pc->p[i].len <= DDTX_GPU_PIECE_SHORT)
					copied += piece_words(&pc->p[i], 0, 1);
		for (uint32_t i = first; i < end; i++)
			if (pc->p[i].len > DDTX_GPU_PIECE_SHORT)
				for (unsigned t = 0; t < THREADS; t++)
					copied += piece_words(&pc->p[i], t, THREADS);
	}
	return copied;
}
