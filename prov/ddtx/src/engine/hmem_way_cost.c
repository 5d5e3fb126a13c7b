/* SPDX-License-Identifier: BSD-2-Clause */
/* The learned choice of hmem_way_cost.h, on engine/cost.c's model. */
#include "engine/hmem_way_cost.h"

/* The model's slots are schemes; a way takes the slot of its own value (1..3), slot 0 unused. */
_Static_assert((int)DDTX_HMEM_COPY_KERNEL < (int)FI_DDTX_SCHEME_COUNT, "a slot per way");

/*
 * Priors (ns; per 4 KiB; per piece), from the H200 of 2026-11-26 (docs/benchmark-results.md,
 * gpu_share and nc_gpu_bw): a 2-D copy through an IPC mapping 9-10 us for 64 rows and 14 for
 * 8192; the copy kernel 13-14 us for 64-512 pieces and 86 for 8192 of 64 B; a driver copy per
 * piece about 34 us each (64 pieces of 3 KiB: 2.2 ms).  Into host memory the copy engine moves
 * about 25 GB/s.
 */
static const struct ddtx_cost_line into_device[DDTX_COST_LINES] = {
	[DDTX_HMEM_COPY_SEGMENTS] = { 5000, 100, 30000 },
	[DDTX_HMEM_COPY_2D] = { 9000, 10, 0.6 },
	[DDTX_HMEM_COPY_KERNEL] = { 13000, 5, 9 },
};
static const struct ddtx_cost_line into_host[DDTX_COST_LINES] = {
	[DDTX_HMEM_COPY_SEGMENTS] = { 5000, 160, 30000 },
	[DDTX_HMEM_COPY_2D] = { 9000, 160, 1 },
	[DDTX_HMEM_COPY_KERNEL] = { 1e9, 0, 0 }, /* the kernel writes device memory only */
};
/* Host staging, either way: engine/hmem_copy.h's cost line (a driver call per segment, one for
 * a 2-D copy, a launch and a call for the pack kernel) at the copy engine's 25 GB/s. */
static const struct ddtx_cost_line staging[DDTX_COST_LINES] = {
	[DDTX_HMEM_COPY_SEGMENTS] = { 0, 160, DDTX_HMEM_CALL_NS },
	[DDTX_HMEM_COPY_2D] = { DDTX_HMEM_CALL_NS, 160, 1 },
	[DDTX_HMEM_COPY_KERNEL] = { DDTX_HMEM_KERNEL_NS + DDTX_HMEM_CALL_NS, 170, 9 },
};

/* As often as the schemes' model tries another (proto/pdomain.c). */
#define EXPLORE_EVERY 32

void ddtx_hmem_way_cost_init(struct ddtx_hmem_way_cost *c, enum ddtx_hmem_way_kind kind)
{
	const struct ddtx_cost_line *prior = kind == DDTX_HMEM_WAY_IPC_TO_DEVICE ? into_device
					     : kind == DDTX_HMEM_WAY_IPC_TO_HOST ? into_host
										 : staging;
	ddtx_cost_init(&c->m, prior, EXPLORE_EVERY);
}

enum ddtx_hmem_copy ddtx_hmem_way_choose(struct ddtx_hmem_way_cost *c, unsigned possible,
					 size_t bytes, size_t pieces)
{
	bool explored;
	possible &= (1u << DDTX_HMEM_COPY_SEGMENTS) | (1u << DDTX_HMEM_COPY_2D) |
		    (1u << DDTX_HMEM_COPY_KERNEL);
	if (!possible)
		return DDTX_HMEM_COPY_SEGMENTS;
	return (enum ddtx_hmem_copy)ddtx_cost_choose(&c->m, possible, bytes, pieces, &explored);
}

void ddtx_hmem_way_observe(struct ddtx_hmem_way_cost *c, enum ddtx_hmem_copy way, size_t bytes,
			   size_t pieces, uint64_t ns)
{
	if (way >= DDTX_HMEM_COPY_SEGMENTS && way <= DDTX_HMEM_COPY_KERNEL)
		ddtx_cost_observe(&c->m, (enum fi_ddtx_scheme)way, bytes, pieces, ns);
}

double ddtx_hmem_way_predict(const struct ddtx_hmem_way_cost *c, enum ddtx_hmem_copy way,
			     size_t bytes, size_t pieces)
{
	return ddtx_cost_predict(&c->m, (enum fi_ddtx_scheme)way, bytes, pieces);
}
