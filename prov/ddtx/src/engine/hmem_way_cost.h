/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Which way copies device memory fastest (hmem_copy.h: a driver copy per piece, one 2-D copy,
 * the device copy kernel), learned from the copies timed, as engine/cost.h learns the schemes:
 * per way, t = a + b * (bytes / 4 KiB) + c * pieces, fitted online from priors measured on an
 * H200; the least predicted way is chosen and the others tried now and then.  One model per
 * kind of copy (an IPC receive into device or host memory, host staging out or in): their
 * costs differ, and the IPC copy kernel writes device memory only.  Pure logic: no I/O, no
 * locks.
 */
#ifndef DDTX_HMEM_WAY_COST_H
#define DDTX_HMEM_WAY_COST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/cost.h"
#include "engine/hmem_copy.h"

struct ddtx_hmem_way_cost {
	struct ddtx_cost_model m;        /* a way's slot: its enum value (1..3) */
};

/* The copies a model is for: each costs differently (the direction, the copy engine's path). */
enum ddtx_hmem_way_kind {
	DDTX_HMEM_WAY_IPC_TO_HOST,      /* the receiver of a CUDA IPC offer, into host memory */
	DDTX_HMEM_WAY_IPC_TO_DEVICE,    /* the same into device memory */
	DDTX_HMEM_WAY_STAGE_OUT,        /* host staging: a send's device segments to its bounce */
	DDTX_HMEM_WAY_STAGE_IN,         /* a receive's bounce buffer to its device segments */
	DDTX_HMEM_WAY_KINDS,
};

void ddtx_hmem_way_cost_init(struct ddtx_hmem_way_cost *c, enum ddtx_hmem_way_kind kind);
/* Least predicted among the ways whose bit (1 << way) is in possible, or another to try. */
enum ddtx_hmem_copy ddtx_hmem_way_choose(struct ddtx_hmem_way_cost *c, unsigned possible,
					 size_t bytes, size_t pieces);
void ddtx_hmem_way_observe(struct ddtx_hmem_way_cost *c, enum ddtx_hmem_copy way, size_t bytes,
			   size_t pieces, uint64_t ns);
double ddtx_hmem_way_predict(const struct ddtx_hmem_way_cost *c, enum ddtx_hmem_copy way,
			     size_t bytes, size_t pieces);

#endif /* DDTX_HMEM_WAY_COST_H */
