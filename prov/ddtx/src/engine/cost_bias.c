/* SPDX-License-Identifier: BSD-2-Clause */
#include "engine/cost_bias.h"

#include <math.h>
#include <string.h>

/* The ratio is the mean of the first MEMORY timings, then forgets with weight 1/MEMORY: the
 * shared line it corrects keeps moving with the other layouts' timings. */
#define MEMORY 8
/* One timing moves a ratio by at most 4x^(its weight) (a transfer preempted on a 2-core
 * host), and no ratio goes beyond 16x either way. */
#define STEP_MAX 1.3862944 /* log 4 */
#define RATIO_MAX 2.7725887 /* log 16 */

void ddtx_cost_bias_init(struct ddtx_cost_bias *b)
{
	memset(b, 0, sizeof(*b));
}

static uint64_t key_of(uint64_t shape)
{
	return shape ? shape : 1; /* 0 marks an empty slot */
}

static struct ddtx_cost_bias_slot *set_of(struct ddtx_cost_bias *b, uint64_t key)
{
	return b->slot[(key ^ (key >> 29)) % DDTX_COST_BIAS_SETS];
}

static struct ddtx_cost_bias_slot *find(struct ddtx_cost_bias *b, uint64_t key)
{
	struct ddtx_cost_bias_slot *set = set_of(b, key);
	for (int w = 0; w < DDTX_COST_BIAS_WAYS; w++)
		if (set[w].shape == key)
			return &set[w];
	return NULL;
}

bool ddtx_cost_bias_factors(struct ddtx_cost_bias *b, uint64_t shape,
			    double factor[DDTX_COST_LINES])
{
	for (int l = 0; l < DDTX_COST_LINES; l++)
		factor[l] = 1.0;
	struct ddtx_cost_bias_slot *s = find(b, key_of(shape));
	if (!s)
		return false;
	s->used = ++b->clock;
	/* Kept ready by ddtx_cost_bias_observe: a lookup is on every rendezvous's path, three
	 * times (the proposal, its first chunk, the decision). */
	for (int l = 0; l < DDTX_COST_LINES; l++)
		if (s->n[l])
			factor[l] = s->factor[l];
	return true;
}

void ddtx_cost_bias_observe(struct ddtx_cost_bias *b, uint64_t shape, unsigned line,
			    double observed_ns, double predicted_ns)
{
	if (line >= DDTX_COST_LINES || !(observed_ns > 0.0) || !(predicted_ns > 0.0))
		return;
	uint64_t key = key_of(shape);
	struct ddtx_cost_bias_slot *s = find(b, key);
	if (!s) {
		struct ddtx_cost_bias_slot *set = set_of(b, key);
		s = &set[0];
		for (int w = 1; w < DDTX_COST_BIAS_WAYS; w++)
			if (set[w].used < s->used)
				s = &set[w];
		memset(s, 0, sizeof(*s));
		s->shape = key;
	}
	s->used = ++b->clock;
	double r = s->log_ratio[line];
	double step = fmax(fmin(log(observed_ns / predicted_ns) - r, STEP_MAX), -STEP_MAX);
	unsigned n = s->n[line];
	r += step / (double)((n < MEMORY - 1 ? n : MEMORY - 1) + 1);
	s->log_ratio[line] = (float)fmax(fmin(r, RATIO_MAX), -RATIO_MAX);
	if (n < UINT16_MAX)
		s->n[line] = (uint16_t)++n;
	/* One timing makes half the correction (in log terms), two make two thirds...: a single
	 * cold or preempted transfer must not decide a layout's scheme alone. */
	s->factor[line] = (float)exp(s->log_ratio[line] * (double)n / ((double)n + 1.0));
}
