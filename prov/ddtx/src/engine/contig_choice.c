/* SPDX-License-Identifier: BSD-2-Clause */
#include "engine/contig_choice.h"

#include <math.h>
#include <string.h>

/*
 * A way is tried in a row until TRY_BURST timings of it are learnt, and judged by the least of
 * its last TRY_BURST timings.  Its first transfer after another way's is not its cost
 * (fabtests' tagged pingpong, 2 MiB, slow regime: the whole pull's timings after one split
 * 203.6, 122.8, 119.4, 112.9, 97.4 us, then 88-90 as before), and every way's timings spike
 * now and then (the whole pull forced: 73 us, every sixth or so 113-138).  A median of three
 * taken across such single tries kept the split, 67-94 us steady, at its first tries' 173.
 */
#define TRY_BURST DDTX_CONTIG_RECENT
/* A busy period is learnt from after this many rendezvous even if they keep overlapping (a
 * stream that never pauses); fabtests' bw keeps 64 in flight. */
#define BUSY_MAX 64
/* A try ends after this many choices even if its busy periods were never learnt from. */
#define BURST_CHOICES_MAX 256
/*
 * Another way is tried after this many timings, the period doubling while the tries lose and
 * back to the shortest when one wins: in a steady regime the tries take about 4 of 256
 * transfers (at most 64, tries of the split at 96 KiB, 25-70 us against the whole pull's 6,
 * cost 15% of the mean), and a change of regime is seen within 256 (2-25 ms from 64 KiB to
 * 1 MiB; a regime lasts seconds).  Counted in timings (busy periods), not choices: a window of
 * 64 in flight is one timing.
 */
#define EXPLORE_MIN 8
#define EXPLORE_MAX 256
/*
 * And only once the class's own transfers since the last try took TRY_QUIET times what that
 * try cost over the way in use: a try's transfers are not the way's steady cost but much more
 * (fabtests' tagged pingpong, 96 KiB, slow regime: the whole pull 7.3 us, tries of the split
 * 48.7 us on average and of PACK 53.4, against 10.3 and 9.6 forced; 52 tries of each in 5000
 * transfers, every 256 timings, cost 12% of the receiver's time).  So a lost try's cost over
 * the way in use, times TRY_QUIET, must pass first, and a change of regime is still seen within
 * tens of milliseconds (a regime lasts seconds).  Measured so: 20-28 tries of each in 5000,
 * 7-9% of the time (a try costs more the longer its way was left: PACK's 101-134 us).
 */
#define TRY_QUIET 32

void ddtx_contig_choice_init(struct ddtx_contig_choice *c)
{
	memset(c, 0, sizeof(*c));
	for (int i = 0; i < DDTX_CONTIG_CLASSES; i++)
		c->cls[i].explore_every = EXPLORE_MIN;
}

static unsigned class_index(size_t bytes)
{
	return bytes ? 63u - (unsigned)__builtin_clzll((unsigned long long)bytes) : 0;
}

/* A way's figure: the least of its last timings. */
static float figure(const struct ddtx_contig_class *k, int w)
{
	int n = k->n[w] < DDTX_CONTIG_RECENT ? k->n[w] : DDTX_CONTIG_RECENT;
	float least = n ? k->recent[w][0] : 0;
	for (int i = 1; i < n; i++)
		if (k->recent[w][i] < least)
			least = k->recent[w][i];
	return least;
}

/* Only the ways the last choice of the class could take (the split: FI_DDTX_PULL_SPLIT). */
static bool usable(const struct ddtx_contig_class *k, int w)
{
	return w == DDTX_CONTIG_PULL || (k->ways & (1u << w));
}

/* The first usable way without its first burst of timings, or DDTX_CONTIG_NONE. */
static enum ddtx_contig_way untried(const struct ddtx_contig_class *k)
{
	for (int w = 0; w < DDTX_CONTIG_WAYS; w++)
		if (usable(k, w) && k->n[w] < TRY_BURST)
			return (enum ddtx_contig_way)w;
	return DDTX_CONTIG_NONE;
}

static enum ddtx_contig_way fastest(const struct ddtx_contig_class *k)
{
	enum ddtx_contig_way best = DDTX_CONTIG_PULL;
	for (int w = 1; w < DDTX_CONTIG_WAYS; w++)
		if (usable(k, w) && k->n[w] && (!k->n[best] || figure(k, w) < figure(k, best)))
			best = (enum ddtx_contig_way)w;
	return best;
}

/*
 * A size class's first choice starts from the timings of the nearest smaller class that has
 * some (per byte, as they are kept) instead of trying every way afresh: a way's first
 * transfers at a size cost many times its steady time (fabtests' tagged pingpong, slow regime:
 * 96 KiB split 106, 76, 43 us where the whole pull took 8; 768 KiB PACK 438, 68, 62 where the
 * split took 22).  The tries that follow correct what differs at the larger size.
 */
static void seed(struct ddtx_contig_choice *c, unsigned idx)
{
	struct ddtx_contig_class *k = &c->cls[idx];
	k->seeded = true;
	for (unsigned i = idx; i-- > 0;) {
		const struct ddtx_contig_class *from = &c->cls[i];
		if (!from->n[DDTX_CONTIG_PULL] && !from->n[DDTX_CONTIG_SPLIT] &&
		    !from->n[DDTX_CONTIG_PACK])
			continue;
		memcpy(k->recent, from->recent, sizeof(k->recent));
		for (int w = 0; w < DDTX_CONTIG_WAYS; w++)
			k->n[w] = from->n[w] < DDTX_CONTIG_RECENT ? from->n[w] : DDTX_CONTIG_RECENT;
		return;
	}
}

bool ddtx_contig_streaming(const struct ddtx_contig_choice *c, size_t bytes)
{
	return c->cls[class_index(bytes)].overlapping;
}

double ddtx_contig_timed_ns(const struct ddtx_contig_choice *c, size_t bytes)
{
	const struct ddtx_contig_class *k = &c->cls[class_index(bytes)];
	double least = INFINITY;
	if (k->overlapping)
		return least;
	for (int w = 0; w < DDTX_CONTIG_WAYS; w++)
		if (k->n[w] && usable(k, w))
			least = fmin(least, (double)figure(k, w) * (double)bytes);
	return least;
}

bool ddtx_contig_trying(const struct ddtx_contig_choice *c, size_t bytes)
{
	return untried(&c->cls[class_index(bytes)]) != DDTX_CONTIG_NONE;
}

enum ddtx_contig_way ddtx_contig_choose(struct ddtx_contig_choice *c, size_t bytes,
				       unsigned ways)
{
	unsigned idx = class_index(bytes);
	struct ddtx_contig_class *k = &c->cls[idx];
	if (k->overlapping)
		return DDTX_CONTIG_NONE;
	k->ways = (uint8_t)(ways & DDTX_CONTIG_ALL);
	if (!k->seeded)
		seed(c, idx);
	enum ddtx_contig_way w = untried(k);
	if (w != DDTX_CONTIG_NONE)
		return w;
	if (k->burst_left && usable(k, k->burst_way) && ++k->burst_choices < BURST_CHOICES_MAX)
		return (enum ddtx_contig_way)k->burst_way;
	k->burst_left = 0;
	k->judging = false;
	enum ddtx_contig_way best = fastest(k);
	if (k->since_explore < k->explore_every || k->since_ns < k->quiet_ns)
		return best;
	k->since_explore = 0;
	k->since_ns = 0;
	k->burst_ns = 0;
	/* The tries go round the other usable ways in turn. */
	for (int i = 0; i < DDTX_CONTIG_WAYS; i++) {
		int t = (k->next_try + i) % DDTX_CONTIG_WAYS;
		if (t != (int)best && usable(k, t)) {
			k->next_try = (uint8_t)((t + 1) % DDTX_CONTIG_WAYS);
			k->burst_way = (uint8_t)t;
			k->burst_left = TRY_BURST;
			k->burst_choices = 0;
			k->judging = true;
			return (enum ddtx_contig_way)t;
		}
	}
	return best;
}

/* One way's timing, per byte, in the class of `bytes`. */
static void learn(struct ddtx_contig_choice *c, size_t bytes, int w, float ns_per_byte)
{
	struct ddtx_contig_class *k = &c->cls[class_index(bytes)];
	k->recent[w][k->n[w] % DDTX_CONTIG_RECENT] = ns_per_byte;
	if (++k->n[w] == UINT16_MAX)
		k->n[w] -= DDTX_CONTIG_RECENT; /* saturates, keeping the ring's order */
	float ns = ns_per_byte * (float)bytes;
	if (!k->judging && untried(k) == DDTX_CONTIG_NONE) {
		if (k->since_explore < UINT16_MAX)
			k->since_explore++;
		k->since_ns += ns;
	}
	if (!k->judging || w != k->burst_way || !k->burst_left)
		return;
	k->burst_ns += ns;
	if (--k->burst_left)
		return;
	/* A try judged at its last timing: taken over, or tried less often. */
	k->judging = false;
	enum ddtx_contig_way best = fastest(k);
	if ((int)best == w) {
		k->explore_every = EXPLORE_MIN;
		k->quiet_ns = 0;
		return;
	}
	if (k->explore_every < EXPLORE_MAX)
		k->explore_every *= 2;
	/* The try's transfers: its timings, and the one chosen before the last was learnt. */
	float over = (k->burst_ns / TRY_BURST - figure(k, best) * (float)bytes) * (TRY_BURST + 1);
	k->quiet_ns = over > 0 ? TRY_QUIET * over : 0;
}

static void busy_close(struct ddtx_contig_choice *c)
{
	if (c->busy.n && !c->busy.mixed && c->busy.to_ns > c->busy.from_ns)
		learn(c, (size_t)(c->busy.bytes / c->busy.n), c->busy.way,
		      (float)((double)(c->busy.to_ns - c->busy.from_ns) / c->busy.bytes));
	c->busy.n = 0;
	c->busy.bytes = 0;
	c->busy.mixed = false;
}

void ddtx_contig_observe(struct ddtx_contig_choice *c, size_t bytes, enum ddtx_contig_way w,
			 uint64_t start_ns, uint64_t now_ns, bool timed)
{
	uint64_t prev_done = c->last_done_ns;
	bool overlapped = start_ns < prev_done;
	if (bytes)
		c->cls[class_index(bytes)].overlapping = overlapped;
	if (now_ns > c->last_done_ns)
		c->last_done_ns = now_ns;
	if (!overlapped || c->busy.n >= BUSY_MAX)
		busy_close(c);
	if (w >= DDTX_CONTIG_WAYS || !timed || !bytes || (c->busy.n && w != c->busy.way)) {
		c->busy.mixed = true;
		return;
	}
	if (!c->busy.n) {
		c->busy.way = (uint8_t)w;
		c->busy.from_ns = overlapped ? prev_done : start_ns;
	}
	c->busy.to_ns = now_ns;
	c->busy.bytes += (double)bytes;
	c->busy.n++;
}
