/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Per-layout corrections of the cost model's lines (issue 12).  The model fits one line per
 * scheme over every layout a domain moves; after two dozen layouts of other shapes, MPICH's
 * benchmark found its UMR and pull lines off by 2-6x for MILC-32 (64 blocks of 12 KiB: one
 * rank predicted UMR 277 us, the pull 79-89, PACK 66).  So each layout shape keeps, per line,
 * how far that line was off for it: the mean log of observed over predicted time.  Its
 * predictions are the line's times that ratio, and a few explorations of a scheme on a layout
 * correct that layout's choice, where folded into the shared line they moved it a few percent.
 * In MPICH's sequence, vec-4096x32 and x64 went from PACK at 15 and 24 us to zero copy at 9
 * and 15 (docs/benchmark-results.md, "Per-layout corrections").
 *
 * A shape is the layout cache's identity (offsets and lengths relative to the base): a send
 * and a receive of one datatype share it, so a rank's receives also correct what it proposes
 * as a sender.  A small set-associative table, least recently used out.  Pure logic.
 */
#ifndef DDTX_COST_BIAS_H
#define DDTX_COST_BIAS_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/cost.h"

#define DDTX_COST_BIAS_SETS 64
#define DDTX_COST_BIAS_WAYS 4

struct ddtx_cost_bias_slot {
	uint64_t shape;                       /* 0: empty */
	uint64_t used;                        /* when last looked up or corrected */
	float log_ratio[DDTX_COST_LINES];     /* mean log(observed / predicted) */
	float factor[DDTX_COST_LINES];        /* what the line is multiplied by, once n > 0 */
	uint16_t n[DDTX_COST_LINES];          /* timings behind it (saturates) */
};

struct ddtx_cost_bias {
	struct ddtx_cost_bias_slot slot[DDTX_COST_BIAS_SETS][DDTX_COST_BIAS_WAYS];
	uint64_t clock;
};

void ddtx_cost_bias_init(struct ddtx_cost_bias *b);
/* factor[line]: what that line's prediction is multiplied by for this shape (1 where none of
 * its transfers was timed).  False, and all ones, when the shape has no entry. */
bool ddtx_cost_bias_factors(struct ddtx_cost_bias *b, uint64_t shape,
			    double factor[DDTX_COST_LINES]);
/* A transfer of this shape by `line` took observed_ns where the line predicted predicted_ns. */
void ddtx_cost_bias_observe(struct ddtx_cost_bias *b, uint64_t shape, unsigned line,
			    double observed_ns, double predicted_ns);

#endif /* DDTX_COST_BIAS_H */
