/* SPDX-License-Identifier: BSD-2-Clause */
#include "engine/store_choice.h"

#include <stdbool.h>
#include <string.h>

/* Transfers of each kind timed before the faster is taken (the first of a shape also pays
 * for its layout's first use): first CACHED_FIRST by cached stores, then SAMPLES_FIRST by
 * streaming ones.  Tried among a shape's first transfers, streaming stores changed how the
 * scheme choice settled in the fast regime (MPICH's sgrs-col-128x1024 went to the pull at 54 us
 * in 3 runs of 3, where cached stores alone left it on PACK at 23): its first 16 are its own. */
#define CACHED_FIRST 16
#define SAMPLES_FIRST 2
/* The other kind is tried after this many choices, doubling while it keeps losing, back to the
 * shortest when it wins: in a steady regime a try costs 1/64 of the transfers up to 2x (with
 * the period reset whenever a try came within 1.5x, MPICH's specfem3d_cm and wrf-x took 8-11%
 * longer in the fast regime).  The kind in use shows a change of regime at once by its own
 * timings; the other is seen at its next try, within 64 choices. */
#define EXPLORE_MIN 8
#define EXPLORE_MAX 64

void ddtx_store_choice_init(struct ddtx_store_choice *c)
{
	memset(c, 0, sizeof(*c));
}

static struct ddtx_store_slot *slot_of(struct ddtx_store_choice *c, uint64_t shape)
{
	struct ddtx_store_slot *s = &c->slot[(shape ^ shape >> 29) % DDTX_STORE_CHOICE_SLOTS];
	if (s->shape != shape) {
		memset(s, 0, sizeof(*s));
		s->shape = shape;
		s->explore_every = EXPLORE_MIN;
	}
	return s;
}

/* A kind's figure: the median of its last samples (their mean while there are two). */
static float figure(const struct ddtx_store_slot *s, enum ddtx_pack_stores k)
{
	const float *r = s->recent[k];
	switch (s->n[k]) {
	case 0:
		return 0;
	case 1:
		return r[0];
	case 2:
		return (r[0] + r[1]) / 2;
	default: {
		float lo = r[0] < r[1] ? r[0] : r[1], hi = r[0] < r[1] ? r[1] : r[0];
		return r[2] < lo ? lo : r[2] > hi ? hi : r[2];
	}
	}
}

static enum ddtx_pack_stores faster(const struct ddtx_store_slot *s)
{
	return figure(s, DDTX_STORES_STREAMING) < figure(s, DDTX_STORES_CACHED)
		       ? DDTX_STORES_STREAMING
		       : DDTX_STORES_CACHED;
}

enum ddtx_pack_stores ddtx_store_choose(struct ddtx_store_choice *c, uint64_t shape)
{
	struct ddtx_store_slot *s = slot_of(c, shape);
	if (s->n[DDTX_STORES_CACHED] < CACHED_FIRST)
		return DDTX_STORES_CACHED;
	if (s->n[DDTX_STORES_STREAMING] < SAMPLES_FIRST)
		return DDTX_STORES_STREAMING;
	enum ddtx_pack_stores best = faster(s);
	if (++s->since_explore < s->explore_every)
		return best;
	s->since_explore = 0;
	return (enum ddtx_pack_stores)(1 - best);
}

void ddtx_store_done(struct ddtx_store_choice *c, uint64_t now_ns)
{
	if (now_ns > c->last_done_ns)
		c->last_done_ns = now_ns;
}

void ddtx_store_observe(struct ddtx_store_choice *c, uint64_t shape, enum ddtx_pack_stores k,
			uint64_t start_ns, uint64_t now_ns, size_t bytes)
{
	uint64_t from = start_ns > c->last_done_ns ? start_ns : c->last_done_ns;
	ddtx_store_done(c, now_ns);
	if (k >= DDTX_STORES_COUNT || !bytes || now_ns <= from)
		return;
	uint64_t ns = now_ns - from;
	struct ddtx_store_slot *s = slot_of(c, shape);
	bool had_both = s->n[DDTX_STORES_CACHED] >= CACHED_FIRST &&
			s->n[DDTX_STORES_STREAMING] >= SAMPLES_FIRST;
	enum ddtx_pack_stores best = faster(s);
	s->recent[k][s->n[k] % DDTX_STORE_RECENT] = (float)ns / (float)bytes;
	if (++s->n[k] == UINT16_MAX)
		s->n[k] -= DDTX_STORE_RECENT; /* saturates, keeping the ring's order */
	if (had_both && k != best) {
		/* A try of the kind that was slower: tried less often while it keeps losing. */
		if (figure(s, k) >= figure(s, best)) {
			if (s->explore_every < EXPLORE_MAX)
				s->explore_every *= 2;
		} else {
			s->explore_every = EXPLORE_MIN;
		}
	}
}
