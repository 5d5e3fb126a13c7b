/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Which scheme moves a rendezvous (LAH paper, with measured costs instead of a fixed
 * threshold).  The sender proposes in the RTS: zero copy only when its layout is registered.
 * The receiver decides in the CTS: zero copy only when both sides are ready, and among the
 * possible schemes the one the cost model predicts fastest for these bytes and blocks.
 * FI_DDTX_SCHEME forces a scheme (registering on the spot if needed); FI_DDTX_THRESHOLD
 * replaces the learned crossover by a fixed block length.
 */
#include <math.h>

#include "engine/cost_bias.h"
#include "engine/layout.h"
#include "proto/proto_internal.h"

static enum fi_ddtx_scheme forced_scheme(const struct ddtx_wire_caps *caps)
{
	return ddtx_scheme_forced(&ddtx_settings, caps);
}

/* A read is one process_vm_readv on the shm wire; a forced scheme keeps its messages. */
static bool pull_wire(const struct ddtx_proto_ep *pep)
{
	return forced_scheme(pep->caps) == FI_DDTX_SCHEME_COUNT && pep->caps->kind == DDTX_WIRE_KIND_SHM;
}

/*
 * The pull of one block (ddtx_choose_pull) on the ofi wire too: a read through the core
 * provider is what tcp;ofi_rxm's own rendezvous does, and it spares the write's CTS and DONE
 * (between the two namespace hosts, fi_rdm_tagged_pingpong: see docs/benchmark-results.md,
 * "The pull over the ofi wire").  Splitting it and reading through windows stay the shm
 * wire's: one socket carries both directions, and the ofi wire has no multi-entry keys.
 */
static bool pull_one_wire(const struct ddtx_proto_ep *pep)
{
	return pull_wire(pep) || (forced_scheme(pep->caps) == FI_DDTX_SCHEME_COUNT &&
				  pep->caps->kind == DDTX_WIRE_KIND_OFI);
}

static unsigned zcopy_mask(const struct ddtx_wire_caps *caps)
{
	return (1u << FI_DDTX_SCHEME_SGL) | (caps->max_mkey_entries ? 1u << FI_DDTX_SCHEME_UMR : 0);
}

/* The zero-copy lines of the cost model a layout may end up on here: the schemes', and where
 * the receiver reads, the pull of several blocks (engine/cost.h). */
static unsigned zcopy_lines(const struct ddtx_proto_ep *pep)
{
	return zcopy_mask(pep->caps) | (pull_wire(pep) ? 1u << DDTX_COST_PULL : 0);
}

/*
 * The corrections learnt for layout l's shape (engine/cost_bias.h), or NULL.  None for one
 * block: contiguous messages take the lines as they are (they never explore, and their
 * lengths are their shapes).
 */
static const double *shape_factors(struct ddtx_proto_ep *pep, const struct ddtx_layout *l,
				   double f[DDTX_COST_LINES])
{
	if (!l || l->st.nblocks <= 1)
		return NULL;
	return ddtx_cost_bias_factors(&pep->pd->cost_bias, l->hash, f) ? f : NULL;
}

/* Line s's prediction, corrected by f (NULL: not). */
static double predict(const struct ddtx_cost_model *m, enum fi_ddtx_scheme s, size_t bytes,
		      size_t blocks, const double *f)
{
	return ddtx_cost_predict(m, s, bytes, blocks) * (f ? f[s] : 1.0);
}

/* The scheme that moves what the model chose: a pull of several blocks is SGL. */
static enum fi_ddtx_scheme line_scheme(enum fi_ddtx_scheme line)
{
	return line == DDTX_COST_PULL ? FI_DDTX_SCHEME_SGL : line;
}

/*
 * One block is what zero copy moves in one copy (one process_vm_readv on the shm wire, one
 * RDMA read or write on a NIC) where packing copies twice, through the ring on two cores.
 * Which is faster depends on the host, the size and the host's regime (a host's
 * cache-to-cache latency changes every few seconds to minutes: build-tools/core_bounce).
 *
 * Below CONTIG_CHOICE_MAX a contiguous message takes the way measured fastest at its size
 * (engine/contig_choice.h): the cost model's lines, least squares over every size, are
 * accurate where the large transfers weigh and not in between, and chose PACK from 96 to
 * 768 KiB in the slow regime at 1.3-1.6x a whole pull's time (fabtests' tagged pingpong -S all,
 * 2026-11-28).  From it, the lines choose as before, after the tries below: there a try of
 * another way costs milliseconds (the first transfer by a way at a size touches its pages
 * anew: 2 MiB by PACK 1002, 239, 205 us, by the whole pull 1036, 279, 151, then 80-100),
 * fabtests moves 110 messages of each size, and the per-size choice took 1.5-8 MiB from
 * 0.55-0.99x shm's latency to 0.76-1.29x (two runs, slow regime).  Nor while messages of the
 * size overlap (a stream: engine/contig_choice.h says why): the lines choose then.
 *
 * The tries: in each size class (the bytes' power of two) a contiguous rendezvous first takes
 * SGL until it has CONTIG_TRIES timings there, then PACK until it has CONTIG_PACK_TRIES (tries
 * in flight counted: try_start), and then the least predicted (an optimistic start per size:
 * the lines are fitted where they are used; while SGL and PACK were only their priors, PACK's
 * kept every contiguous message on the pull on a host where PACK was 1.4x faster).  PACK's
 * first timings are its ring's first pass, cold in the caches, hence more tries.
 */
#define CONTIG_CHOICE_MAX ((size_t)1 << 20)
#define CONTIG_TRIES 4
#define CONTIG_PACK_TRIES 8

static unsigned size_class(size_t bytes)
{
	return bytes ? 63u - (unsigned)__builtin_clzll((unsigned long long)bytes) : 0;
}

/* SGL or PACK while that scheme's tries in the size class of `bytes` are not done, else
 * FI_DDTX_SCHEME_COUNT. */
static enum fi_ddtx_scheme contig_try(const struct ddtx_proto_domain *pd, size_t bytes)
{
	unsigned c = size_class(bytes);
	if (pd->contig_timed[0][c] < CONTIG_TRIES)
		return FI_DDTX_SCHEME_SGL;
	if (pd->contig_timed[1][c] < CONTIG_PACK_TRIES)
		return FI_DDTX_SCHEME_PACK;
	return FI_DDTX_SCHEME_COUNT;
}

/*
 * The ways a contiguous rendezvous may take, pull offered or not.  No PACK where the pull is
 * the ofi wire's: answered to an offered pull, PACK waits for its CTS to cross back and then
 * copies twice on top of what the core moves, where the pull's read follows the same one-way
 * RTS.  Between the namespace hosts over tcp (fabtests' tagged pingpong at 256 KiB, medians of
 * 10 rounds, 2026-11-30) PACK alone took 121.2 us against the pull's 86.9, and the choice's
 * tries and mistaken picks of it moved 17-53% of the transfers in three runs.
 */
static unsigned contig_ways(struct ddtx_proto_ep *pep, bool pull, size_t bytes)
{
	unsigned ways = 1u << DDTX_CONTIG_PULL;
	if (pull && ddtx_choose_split(pep, bytes) < bytes)
		ways |= 1u << DDTX_CONTIG_SPLIT;
	if (!pull || pep->caps->kind != DDTX_WIRE_KIND_OFI)
		ways |= 1u << DDTX_CONTIG_PACK;
	return ways;
}

/*
 * A try starts only while its scheme's tries timed and in flight are fewer than it needs.  In a
 * stream every RTS of a window is decided before the first try finishes: PACK's tries took a
 * whole window of 64 (fabtests' tagged bw at 96 KiB, each by the ring's cold first pass), and
 * its 2010 messages moved at 0.87x shm's bandwidth against 0.94x without those tries (medians
 * of 4 rounds' ratios in `-S all`, 2026-11-30); counted in flight, 8 go PACK: 0.86x -> 0.91x
 * at 96 KiB, 0.87x -> 0.93x at 128 KiB (6 rounds).
 */
static bool try_start(struct ddtx_proto_domain *pd, enum fi_ddtx_scheme s, size_t bytes,
		      struct ddtx_rx *rx)
{
	unsigned c = size_class(bytes);
	unsigned i = s == FI_DDTX_SCHEME_PACK;
	unsigned need = i ? CONTIG_PACK_TRIES : CONTIG_TRIES;
	if (pd->contig_timed[i][c] + pd->contig_trying[i][c] >= need)
		return false;
	pd->contig_trying[i][c]++;
	rx->contig_try = (uint8_t)(1 + i);
	rx->contig_try_class = (uint8_t)c;
	return true;
}

void ddtx_choose_try_end(struct ddtx_proto_ep *pep, struct ddtx_rx *rx)
{
	if (!rx->contig_try)
		return;
	pep->pd->contig_trying[rx->contig_try - 1][rx->contig_try_class]--;
	rx->contig_try = 0;
}

/* A timed contiguous rendezvous (one block on each side) counts towards its scheme's tries. */
static void contig_timed(struct ddtx_proto_domain *pd, enum fi_ddtx_scheme s, size_t bytes,
			 size_t blocks, bool warm)
{
	if (!warm || blocks != 2 || (s != FI_DDTX_SCHEME_SGL && s != FI_DDTX_SCHEME_PACK))
		return;
	uint8_t *n = &pd->contig_timed[s == FI_DDTX_SCHEME_PACK][size_class(bytes)];
	if (*n < UINT8_MAX)
		(*n)++;
}

static bool sgl_untried(struct ddtx_proto_ep *pep, const struct ddtx_layout_stats *st)
{
	if (st->nblocks > 1)
		return false;
	return contig_try(pep->pd, st->total) == FI_DDTX_SCHEME_SGL ||
	       (st->total < CONTIG_CHOICE_MAX && ddtx_contig_trying(&pep->pd->contig, st->total));
}

/*
 * Zero copy never timed, for a layout of several blocks.  A layout is registered only when zero
 * copy is predicted cheaper, and only a registered layout can be explored: so while SGL and UMR
 * were only their priors, a PACK line fitted from real timings beat them for good and no
 * noncontiguous layout was ever registered (issue 12: MPICH's vec-4096x32 and MILC-16, 32
 * blocks of 3-4 KiB, moved by PACK at 19.2 and 16.8 us where UMR takes 11.2 and 10.9;
 * FI_DDTX_STATS: registration thread layouts 0, explorations 0).  So until one of them has
 * ZCOPY_TRIES timings, a reused layout is registered and, once it is, takes the zero-copy
 * scheme predicted cheaper (ddtx_choose_decide): an optimistic start, as for one block.
 * nc_bw, 32 blocks of 4 KiB: streaming 11.0 -> 8.8 us (UMR); the ping-pong settles on UMR too
 * since zero copy is weighed by its cheaper scheme (zcopy_predict) and PACK's samples include
 * its first chunk (ddtx_choose_sample_start).
 */
#define ZCOPY_TRIES 8
#define ZCOPY_PLAUSIBLE 2.0
/*
 * Tries on messages up to this size only: one try of 8192 blocks of 4 KiB (32 MiB) took 12 ms
 * by zero copy where PACK takes 6.5 (both cores copy in PACK's pipeline), and in streaming the
 * tries lasted up to 64 such transfers (nc_bw -b 4K: auto 11.8 / 10.0 ms against PACK 6.5 / 4.8).
 */
#define ZCOPY_TRY_MAX ((size_t)1 << 20)

/*
 * The lines of `lines` a layout of several blocks is weighed on: above ZCOPY_TRY_MAX on the shm
 * wire, only the zero-copy lines already timed (PACK always).  Their priors come from 4 KiB
 * blocks of an idle host and are optimistic at tens of MiB, where a process_vm_*v pins every
 * page (32 MiB read warm in 4.4-7.6 ms where memcpy takes 2.1) and the first read of a page
 * from another process costs ~60 ms per 32 MiB on the test host (a virtual machine); PACK's
 * pipeline through the ring pins nothing.  nc_bw -b 64K -s 32M (0.3-0.5 s per case): a fresh
 * process went by the priors to the pull and UMR, whose first transfers took 33-49 ms each
 * against PACK's 2.4-2.8, and moved at 0.94-1.38x shm's application pack where PACK alone
 * moves at 3-4x.  Once timed (on layouts up to ZCOPY_TRY_MAX, or forced) a line is weighed as
 * fitted.
 */
static unsigned weighable(const struct ddtx_proto_ep *pep, unsigned lines,
			  const struct ddtx_layout_stats *st)
{
	if (st->nblocks <= 1 || st->total <= ZCOPY_TRY_MAX ||
	    pep->caps->kind != DDTX_WIRE_KIND_SHM)
		return lines;
	for (int s = FI_DDTX_SCHEME_SGL; s < DDTX_COST_LINES; s++)
		if ((lines & (1u << s)) && !ddtx_cost_samples(&pep->pd->cost, (enum fi_ddtx_scheme)s))
			lines &= ~(1u << s);
	return lines;
}

/*
 * The zero-copy scheme predicted cheaper on this wire (UMR only where keys hold several
 * entries) and its predicted time for st: what registering a layout is weighed by.  SGL alone
 * was weighed: on the shm wire SGL is never timed on several blocks once UMR is (UMR predicted
 * cheaper moves them), so its prior stood in for zero copy, and a ping-pong of 32 blocks of
 * 4 KiB went back to PACK after UMR's tries although UMR was predicted 10.2 us and PACK 12.7
 * (issue 12: PACK 20 us one-way, UMR forced 10).
 */
static double zcopy_predict(const struct ddtx_proto_ep *pep, const struct ddtx_layout_stats *st,
			    const double *f)
{
	const struct ddtx_cost_model *m = &pep->pd->cost;
	unsigned lines = weighable(pep, zcopy_lines(pep), st);
	if (!lines)
		return INFINITY;
	enum fi_ddtx_scheme z = ddtx_cost_best_scaled(m, lines, st->total, st->nblocks, f);
	return predict(m, z, st->total, st->nblocks, f);
}

static bool zcopy_untried(struct ddtx_proto_ep *pep, const struct ddtx_layout_stats *st)
{
	struct ddtx_cost_model *m = &pep->pd->cost;
	if (st->nblocks <= 1 || st->total > ZCOPY_TRY_MAX ||
	    ddtx_cost_samples(m, FI_DDTX_SCHEME_SGL) >= ZCOPY_TRIES ||
	    ddtx_cost_samples(m, FI_DDTX_SCHEME_UMR) >= ZCOPY_TRIES ||
	    ddtx_cost_samples(m, DDTX_COST_PULL) >= ZCOPY_TRIES)
		return false;
	/*
	 * Only where the priors make it plausible: zero copy of 64 B blocks tried 8 times over a
	 * 32 MiB message would cost seconds for nothing.  Prior against prior: PACK's fitted line
	 * against zero copy's prior compared a timing with a guess, and once PACK was timed on
	 * this host (faster than its prior) no later layout was plausible (issue 12: MPICH's
	 * benchmark runs vec-1024x32 first, in the same process, and vec-2048x32, vec-4096x32 and
	 * MILC-16 then never tried UMR: 15.3, 21.0 and 17.7 us by PACK, UMR forced 10.7, 14.2, 14.6).
	 */
	unsigned z = zcopy_mask(pep->caps);
	double zcopy = INFINITY;
	for (int s = FI_DDTX_SCHEME_SGL; s < FI_DDTX_SCHEME_COUNT; s++)
		if (z & (1u << s))
			zcopy = fmin(zcopy, ddtx_cost_predict_prior(m, (enum fi_ddtx_scheme)s,
								   st->total, st->nblocks));
	return zcopy < ZCOPY_PLAUSIBLE *
			       ddtx_cost_predict_prior(m, FI_DDTX_SCHEME_PACK, st->total, st->nblocks);
}

/*
 * The pull through a sender's windows, tried as many times as the optimistic start above tries
 * UMR.  That start times UMR alone; the pull was then weighed by its prior against UMR's
 * fitted line, and where its first two reads through a layout's windows came slow (85-110 us
 * against 42-46 later, MILC-32 in MPICH's benchmark) it lost to UMR for the rest of the run:
 * in 4 runs of 7 batches, 3 moved by UMR at 72-80 us.  Only where plausible, as above.
 */
static bool pull_untried(struct ddtx_proto_ep *pep, size_t bytes, size_t blocks)
{
	struct ddtx_cost_model *m = &pep->pd->cost;
	return bytes <= ZCOPY_TRY_MAX && ddtx_cost_samples(m, DDTX_COST_PULL) < ZCOPY_TRIES &&
	       ddtx_cost_predict_prior(m, DDTX_COST_PULL, bytes, blocks) <
		       ZCOPY_PLAUSIBLE * ddtx_cost_predict_prior(m, FI_DDTX_SCHEME_PACK, bytes, blocks);
}

/* Is zero copy worth registering this layout for?  (The registration thread does the work.)
 * f: the layout's corrections (shape_factors), or NULL. */
static bool worth_zcopy(struct ddtx_proto_ep *pep, const struct ddtx_layout_stats *st,
			const double *f)
{
	if (ddtx_settings.threshold)
		return st->avg_block >= ddtx_settings.threshold;
	if (sgl_untried(pep, st) || zcopy_untried(pep, st))
		return true;
	return zcopy_predict(pep, st, f) <
	       predict(&pep->pd->cost, FI_DDTX_SCHEME_PACK, st->total, st->nblocks, f);
}

/*
 * Ask the registration thread for a layout only once it has been used twice: a layout seen
 * once (fresh buffers every time) would cost a registration it never pays back, and on a
 * small host that thread takes CPU from the transfers.  Layout handles count two uses at
 * their first send (the runtime said it will reuse them).
 */
static void request_if_reused(struct ddtx_proto_ep *pep, struct ddtx_layout *l)
{
	if (l->uses >= 2)
		ddtx_layout_request(pep->pd->layouts, l);
}

/* Registered, or registered now when a zero-copy scheme is forced. */
static bool ready_for(struct ddtx_proto_ep *pep, struct ddtx_layout *l, bool forced)
{
	if (!l)
		return false;
	if (ddtx_layout_ready(l))
		return true;
	if (forced)
		return ddtx_layout_register_now(pep->pd->layouts, l) == 0;
	return false;
}

/*
 * A pull needs no registered layout on either side: the sender offers a key made for this one
 * send (send.c) and the receiver reads into its buffer as it is.  Waiting for the registration
 * thread moved the first messages of every new buffer by PACK (issue 12: fabtests'
 * tagged_bw at 1 MiB posts a window of 64 sends, and 64 of its 210 went by PACK: 0.78-0.86x
 * shm's bandwidth), and the thread took one of the host's two cores meanwhile.
 */
static bool pull_possible(const struct ddtx_proto_ep *pep, const struct ddtx_layout_stats *st,
			  bool can_pull)
{
	return can_pull && st->nblocks == 1 && pull_one_wire(pep);
}

enum fi_ddtx_scheme ddtx_choose_propose(struct ddtx_proto_ep *pep, struct ddtx_layout *l,
					bool can_pull)
{
	const struct ddtx_wire_caps *caps = pep->caps;
	enum fi_ddtx_scheme f = forced_scheme(caps);
	if (f != FI_DDTX_SCHEME_COUNT) {
		if (f != FI_DDTX_SCHEME_PACK)
			ready_for(pep, l, true);
		return f;
	}
	double fbuf[DDTX_COST_LINES];
	const double *fl = shape_factors(pep, l, fbuf);
	if (!l || !worth_zcopy(pep, &l->st, fl))
		return FI_DDTX_SCHEME_PACK;
	if (!ddtx_layout_ready(l)) {
		if (pull_possible(pep, &l->st, can_pull))
			return FI_DDTX_SCHEME_SGL;
		request_if_reused(pep, l);
		return FI_DDTX_SCHEME_PACK;
	}
	bool explored;
	struct ddtx_cost_model m = pep->pd->cost; /* a copy: proposing must not count */
	return ddtx_cost_choose_scaled(&m, zcopy_mask(caps), l->st.total, l->st.nblocks, fl,
				       &explored);
}

/*
 * Device memory the NIC reads (hmem_direct.c): zero copy only, the layout registered now (a
 * device send has no PACK to fall back on while the registration thread works).  The layout
 * is ready (send.c registered it); the scheme proposed is the zero-copy one predicted cheaper.
 */
enum fi_ddtx_scheme ddtx_choose_propose_device(struct ddtx_proto_ep *pep, struct ddtx_layout *l)
{
	const struct ddtx_wire_caps *caps = pep->caps;
	enum fi_ddtx_scheme f = forced_scheme(caps);
	if (f == FI_DDTX_SCHEME_SGL || f == FI_DDTX_SCHEME_UMR)
		return f;
	double fbuf[DDTX_COST_LINES];
	bool explored;
	struct ddtx_cost_model m = pep->pd->cost; /* a copy: proposing must not count */
	return ddtx_cost_choose_scaled(&m, zcopy_mask(caps), l->st.total, l->st.nblocks,
				       shape_factors(pep, l, fbuf), &explored);
}

enum fi_ddtx_scheme ddtx_choose_decide_device(struct ddtx_proto_ep *pep,
					      enum fi_ddtx_scheme proposed, bool pull_offered,
					      const struct ddtx_layout_stats *sender,
					      struct ddtx_layout *receiver, size_t bytes,
					      bool *explored)
{
	struct ddtx_proto_domain *pd = pep->pd;
	*explored = false;
	if (!receiver)
		return FI_DDTX_SCHEME_PACK;
	bool sender_ready = proposed == FI_DDTX_SCHEME_SGL || proposed == FI_DDTX_SCHEME_UMR;
	bool pull = pull_offered && (sender->nblocks > 1 ? pull_wire(pep)
							 : receiver->st.nblocks <= 1 &&
								   pull_one_wire(pep));
	if ((!sender_ready && !pull) || !ready_for(pep, receiver, true))
		return FI_DDTX_SCHEME_PACK; /* no zero copy possible: the caller decides */
	enum fi_ddtx_scheme f = forced_scheme(pep->caps);
	if (f == FI_DDTX_SCHEME_SGL || f == FI_DDTX_SCHEME_UMR)
		return f;
	if (pull && sender->nblocks <= 1)
		return FI_DDTX_SCHEME_SGL; /* read at once (pull_rndv) */
	unsigned possible = zcopy_mask(pep->caps);
	if (pull)
		possible = (possible & ~(1u << FI_DDTX_SCHEME_SGL)) | (1u << DDTX_COST_PULL);
	if (!sender_ready)
		possible &= 1u << DDTX_COST_PULL;
	size_t blocks = sender->nblocks + receiver->st.nblocks;
	double fbuf[DDTX_COST_LINES];
	return line_scheme(ddtx_cost_choose_scaled(&pd->cost, possible, bytes, blocks,
						   shape_factors(pep, receiver, fbuf), explored));
}

/*
 * The eager/rendezvous boundary, from measured costs (issue 12): eager costs two copies
 * through the ring (the EAGER line), a rendezvous its scheme's whole line (handshake
 * included).  A message goes eager when that is predicted no slower; below EAGER_ALWAYS no
 * clock is read and nothing is predicted: a rendezvous there costs several eager messages on
 * every wire (shm wire, nc_overhead's one endpoint sending to itself, where a handshake costs
 * least: 2-7 KiB 580-1100 ns by rendezvous against 200-380 eager), and from 1 KiB, where it
 * began before, the prediction cost 194 instructions a message, 12-15 ns of a 1-4 KiB
 * message's 180-280 (util/bench-instructions.sh).
 *
 * The sender decides, so the sender times: its own copy into the ring, plus the copy out as
 * the receiver side of this endpoint last timed it (per byte), or the copy in again if it
 * never did.  The copy in is the one that changes: fabtests' tagged pingpong at 32 KiB,
 * eager forced, the copy in took 0.9 us and the copy out 0.8 in the fast regime, 11-13 us and
 * 2 us in the slow one (where the one-way time is 15-16 us, the pull's 5-7).  Timed by the
 * receiver alone, eager looked 4 us there, and an endpoint whose sends went eager while its
 * peer's went by rendezvous never timed an eager delivery again: half the messages eager,
 * 8.9-16 us one-way against shm's 4.6-6.
 */
#define EAGER_ALWAYS 8192
#define EAGER_OUT_WEIGHT 0.125f /* of a new copy-out timing in its running mean */
#define EAGER_SAMPLE 16   /* one send (delivery) in EAGER_SAMPLE is timed: two clock reads */
/*
 * Sends in a stream (each weighed within STREAM_GAP_NS of the one before) are not timed: their
 * copies into the ring run beside the receiver's copies out and wait on its lines (fabtests'
 * tagged bw, 24 KiB, fast regime: 4.2-10.3 us each where eager moved one every 1.1-2.2 us);
 * timed, they sent part of the stream by rendezvous, and 64 KiB moved at 0.99x shm's
 * bandwidth where eager moves 1.98x.
 */
/*
 * A size class whose messages go by rendezvous still sends a burst of EAGER_TRY_BURST eagerly
 * now and then, the last EAGER_TRY_TIMED of them timed: its eager line is learnt only from
 * eager sends, and a change of regime (seconds) would otherwise leave it as it was.  A burst
 * as long as the shm wire's ring (64 slots), timed at its end: each eager message takes the
 * ring's next slot, so after a run of rendezvous every copy of a burst goes into lines long
 * out of cache until the ring has gone round once (fabtests' tagged pingpong -S all, 48 KiB,
 * fast regime: a burst of 4, all timed, copied in 2.5-6.3 us where eager sends in a row copy
 * in 1.2-1.4 from their 64th on; 48 KiB never went back to eager).  The period doubles while
 * the tries lose, from EAGER_TRY_MIN to EAGER_TRY_MAX rendezvous: a lost burst at 48 KiB
 * costs about 150 us, 13% of the first period and under 0.5% of the last.  A stream tries
 * nothing: its sends are not timed.
 */
#define EAGER_TRY_BURST 64
#define EAGER_TRY_TIMED 4
#define EAGER_TRY_MIN 256
#define EAGER_TRY_MAX 8192

/*
 * A pull not yet timed, predicted from the eager timings once there are a few (issue 12): it
 * copies the bytes once where eager copies them twice, and adds a handshake, the RTS before
 * the read and the CTS after it.  SGL's prior (a strided write after a CTS, 8.6 us at
 * 16 KiB) kept 12-16 KiB eager in fabtests' increasing sizes, which come before any
 * rendezvous timed SGL: eager 1.30x and 1.51x shm, where a pull took 1.15x at 16 KiB.
 * PULL_HANDSHAKE_NS is that handshake measured at 64 KiB (send path to the RTS 0.36 us, the
 * CTS 0.42 us, the read's completion 0.09 us, the model 0.12 us).
 */
#define PULL_HANDSHAKE_NS 1000.0

static double untimed_pull(const struct ddtx_cost_model *m, double eager)
{
	if (ddtx_cost_samples(m, FI_DDTX_SCHEME_EAGER) < CONTIG_TRIES ||
	    ddtx_cost_samples(m, FI_DDTX_SCHEME_SGL) >= CONTIG_TRIES)
		return INFINITY; /* eager is only its prior, or SGL's own line is fitted */
	return eager / 2 + PULL_HANDSHAKE_NS;
}

/*
 * Lists of blocks at most this long on average may go eagerly up to the wire's message room
 * (unless FI_DDTX_EAGER_SIZE is set or a scheme forced): their rendezvous would pack them anyway,
 * through the same ring, after a handshake.  On the shm wire, 8 MiB as messages of 4096 8-byte
 * blocks (32 KiB) moved in 6874 us eagerly against 12171 by PACK rendezvous (ping-pong; 4534 /
 * 8277 streaming), and messages of 1024 32-byte blocks 1.8x faster.
 *
 * Contiguous messages too where the pull is the rendezvous (ddtx_choose_eager weighs the two,
 * an untimed pull from the eager timings): a fixed 16 KiB limit sent 24-48 KiB by pull on a
 * host whose process_vm_readv costs about 3 us, at 1.13-1.19x shm's latency, where eager took
 * 0.24-0.29x (fi_rdm_tagged_pingpong, docs/benchmark-results.md "Contiguous 16 KiB-8 MiB").
 * Host memory only: device memory staged eagerly costs two driver copies where its rendezvous
 * may go by CUDA IPC, not measured at these sizes.
 */
#define EAGER_SMALL_BLOCK 512
/*
 * Not beyond 64 KiB, whatever the wire's room: with the shm wire's 128 KiB slots, nc_bw's 8-byte
 * blocks (-b 8 -s 32M, lists of 16384 entries, 128 KiB messages) went eagerly at 0.09x shm's
 * ping-pong and 0.28x its bandwidth, where PACK moves them at 2.3x and 1.8x: each of the
 * receives posted for a transfer copies its 256 KiB list into pages the heap had just given
 * back (eager delivery enters no layout to lend), where a rendezvous lends the cached one.
 */
#define EAGER_LIST_MAX 65536
/*
 * Over 64 KiB a contiguous message goes eagerly only in a stream: a send posted within
 * STREAM_GAP_NS of the last such send.  There the sender's copy into the ring overlaps the
 * receiver's copy out of it, and 96-128 KiB moved at 1.4-1.5x shm's bandwidth where the pull
 * moved 0.9-1.0x (fabtests' tagged_bw); alone, the two copies are serial, and a ping-pong at
 * 96-128 KiB took 1.3-1.4x shm's latency eagerly where the pull takes 1.1x.  Back-to-back
 * posts are under a microsecond apart; a ping-pong's sends are a round trip apart (16 us and
 * more at these sizes).
 */
#define EAGER_ALONE_MAX 65536
#define STREAM_GAP_NS 2000

static size_t contig_eager_room(struct ddtx_proto_ep *pep, size_t room, size_t bytes,
				uint64_t now)
{
	if (bytes <= EAGER_ALONE_MAX)
		return room;
	uint64_t last = pep->last_big_send_ns;
	pep->last_big_send_ns = now;
	if (now - last >= STREAM_GAP_NS)
		return DDTX_MIN(room, (size_t)EAGER_ALONE_MAX);
	pep->eager_streaming = true;
	return room;
}

size_t ddtx_choose_eager_limit(struct ddtx_proto_ep *pep, size_t room, size_t bytes,
			       size_t blocks, bool host)
{
	bool learned = !ddtx_settings.eager_size_set &&
		       forced_scheme(pep->caps) == FI_DDTX_SCHEME_COUNT;
	/*
	 * A send within STREAM_GAP_NS of the end of the eager copy before (ddtx_choose_eager_sent)
	 * streams (ddtx_choose_eager).  One that follows a receive (a ping-pong's) is taken as
	 * alone without reading the clock: 22 ns a read here, 3% of a 4 KiB message's one-way
	 * time.
	 */
	uint64_t rx_ops = pep->pd->stats.rx_ops;
	bool answered = rx_ops != pep->rx_ops_at_send;
	pep->rx_ops_at_send = rx_ops;
	uint64_t now = bytes > EAGER_ALONE_MAX || (bytes >= EAGER_ALWAYS && !answered)
			       ? ddtx_time_ns() : 0;
	pep->eager_streaming = now && now - pep->last_eager_choice_ns < STREAM_GAP_NS;
	pep->last_eager_choice_ns = now;
	if (learned && blocks > 1 && bytes / blocks <= EAGER_SMALL_BLOCK)
		return DDTX_MIN(room, (size_t)EAGER_LIST_MAX);
	if (learned && host && blocks <= 1 && pull_wire(pep))
		return contig_eager_room(pep, room, bytes, now);
	return DDTX_MIN(ddtx_settings.eager_size, room);
}

static unsigned eager_class(size_t bytes)
{
	unsigned c = size_class(bytes) - size_class(EAGER_ALWAYS);
	return DDTX_MIN(c, (unsigned)DDTX_EAGER_TRY_CLASSES - 1);
}

static struct ddtx_eager_try *eager_try_of(struct ddtx_proto_ep *pep, size_t bytes)
{
	return &pep->eager_tries[eager_class(bytes)];
}

static const struct ddtx_eager_try *eager_try_of_c(const struct ddtx_proto_ep *pep,
						   size_t bytes)
{
	return &pep->eager_tries[eager_class(bytes)];
}

/* Rendezvous predicted: eager if this class's try has come or goes on (timed). */
static bool eager_try(struct ddtx_proto_ep *pep, size_t bytes)
{
	struct ddtx_eager_try *t = eager_try_of(pep, bytes);
	if (t->burst_left) {
		t->burst_left--;
		t->tried = !t->burst_left;
		pep->eager_time_next = t->burst_left < EAGER_TRY_TIMED ? 1 : -1;
		return true;
	}
	if (!t->every)
		t->every = EAGER_TRY_MIN;
	t->tried = false;
	if (++t->skipped < t->every)
		return false;
	t->skipped = 0;
	t->every = (uint16_t)DDTX_MIN(2u * t->every, (unsigned)EAGER_TRY_MAX);
	t->burst_left = EAGER_TRY_BURST - 1;
	pep->eager_time_next = -1;
	return true;
}

/*
 * What this sender's own rendezvous of the size class took, from its RTS to its completion
 * (the least of the last three, per byte, times bytes; from two on), or INFINITY.  An
 * endpoint whose peer sends eagerly times no rendezvous of that size as a receiver: there
 * the pull predicted from the eager line (untimed_pull) stayed chosen, 64 KiB one-way
 * 5.5-6.2 us where eager took 3.7-4.0 (its pulls took 7 us from the RTS's match to the
 * read's end; fabtests' tagged pingpong -S all, fast regime).  Only where the receiver's
 * timings are missing: the completion often comes with the peer's next message (a carried
 * ACK, proto/ack.c), so in a ping-pong this is nearer a round trip than a transfer (64 KiB,
 * slow regime: 27.8 us against eager's 23.9, and eager stayed at 24.9 us one-way where
 * the pull took 11.3).
 */
static double sent_rndv(const struct ddtx_proto_ep *pep, size_t bytes)
{
	const struct ddtx_eager_try *t = eager_try_of_c(pep, bytes);
	if (t->rndv_n < 2) /* the least of two at least: one may have met a cold receiver */
		return INFINITY;
	float least = t->rndv[0];
	for (unsigned i = 1; i < t->rndv_n; i++)
		least = fminf(least, t->rndv[i]);
	return (double)least * (double)bytes;
}

void ddtx_choose_rndv_done(struct ddtx_proto_ep *pep, size_t bytes, uint64_t ns)
{
	if (bytes < EAGER_ALWAYS)
		return;
	struct ddtx_eager_try *t = eager_try_of(pep, bytes);
	t->rndv[t->rndv_next] = (float)ns / (float)bytes;
	t->rndv_next = (uint8_t)((t->rndv_next + 1) % 3);
	if (t->rndv_n < 3)
		t->rndv_n++;
}

bool ddtx_choose_eager(struct ddtx_proto_ep *pep, size_t bytes, size_t blocks)
{
	if (bytes < EAGER_ALWAYS || forced_scheme(pep->caps) != FI_DDTX_SCHEME_COUNT)
		return true;
	const struct ddtx_cost_model *m = &pep->pd->cost;
	blocks = DDTX_MAX(blocks, (size_t)1);
	double eager = ddtx_cost_predict(m, FI_DDTX_SCHEME_EAGER, bytes, blocks);
	double rndv = ddtx_cost_predict(m, FI_DDTX_SCHEME_PACK, bytes, 2 * blocks);
	/* A contiguous one: what its rendezvous took where timed (the lines are fitted over
	 * every size and layout): by this endpoint as a receiver, plus the handshake that timing
	 * leaves out (it starts at the RTS's match), or else by this sender (sent_rndv). */
	double timed = blocks == 1
			       ? ddtx_contig_timed_ns(&pep->pd->contig, bytes) + PULL_HANDSHAKE_NS
			       : INFINITY;
	if (blocks == 1 && timed == INFINITY)
		timed = sent_rndv(pep, bytes);
	if (timed < INFINITY) {
		rndv = timed;
	} else if (blocks == 1) {
		rndv = DDTX_MIN(rndv, ddtx_cost_predict(m, FI_DDTX_SCHEME_SGL, bytes, 2));
		if (pull_wire(pep))
			rndv = DDTX_MIN(rndv, untimed_pull(m, eager));
	}
	/* In a stream (ddtx_choose_eager_limit) the sender's copy in overlaps the receiver's copy
	 * out of the message before: the EAGER line (the two copies of one alone) counts them
	 * once. */
	if (pep->eager_streaming)
		eager /= 2;
	if (eager > rndv)
		return !pep->eager_streaming && eager_try(pep, bytes); /* untimed there: no tries */
	struct ddtx_eager_try *t = eager_try_of(pep, bytes);
	if (t->tried || t->burst_left) { /* the try won: the next ones come soon again */
		t->skipped = t->every = 0;
		t->burst_left = 0;
		t->tried = false;
	}
	return true;
}

/*
 * An eager copy in can take ten times its usual time: stores into ring lines the receiver's
 * core last read, each line's ownership asked of that core.  fabtests' tagged pingpong at 32
 * KiB (2026-12-01): in about one run in eight the sender's timed copies in took 11-13 us
 * against the receiver's copies out's 2 (fast: 0.9 and 0.8) from the first to the last, so the
 * pull was chosen, 6.9-7.9 us one-way against shm's 5-7 and eager's 2.0-2.9 in the other runs.
 * Streaming stores ask for no line: eager by them took 3.1-5.4 us in every run, but 1.5-2x
 * cached stores' time where those are fast (the receiver then reads memory, not the other
 * core's cache).
 *
 * So a timed copy in by cached stores is weighed against this sender's own timed copies in by
 * streaming stores (per byte): over EAGER_STREAM_RATIO times theirs, the sends turn to
 * streaming stores; every EAGER_STORES_TRY-th send after goes by cached stores again, timed,
 * to see whether they are back.  Until a copy by streaming stores is timed, the copy out (as
 * this endpoint's deliveries time it) stands in, at EAGER_RFO_RATIO.  A copy in by cached
 * stores kept has the next send go by streaming stores, timed, to compare: while fewer than
 * three of those are timed (a sender that receives nothing eagerly had no copy out to weigh
 * against: fabtests' tagged bw at 32 KiB, 2.2 GB/s by cached copies of 0.4 ns/B), or when it
 * is over EAGER_PROBE_RATIO times the copy out (or else streaming's copy in: theirs may be
 * old, or one preempted, 1.1 ns/B).
 *
 * The copy out alone misjudged (32 KiB ping-pong, 14 runs, 2026-12-01): where the peer
 * streams, it reads memory and slows to 0.07-0.11 ns/B, so slow cached copies in of 0.15-0.2
 * ns/B stayed under 3x it: 2 runs sent by cached stores half the time, turning on and off 40
 * times (8.0 us, 1.20x shm), 1 went by pull (8.1 us, 1.16x).  Streaming stores' own copies in
 * took 0.03-0.05 ns/B in every run, cached ones 0.03 where fast.  Wires whose sends are not
 * memory another core reads keep cached stores.
 */
#define EAGER_STREAM_RATIO 3.0f
#define EAGER_RFO_RATIO 3.0f
#define EAGER_PROBE_RATIO 1.5f
#define EAGER_STORES_TRY 64

bool ddtx_choose_eager_stores(struct ddtx_proto_ep *pep, size_t bytes)
{
	if (bytes < EAGER_ALWAYS)
		return false;
	if (pep->eager_stores_probe) {
		pep->eager_stores_probe = false;
		pep->eager_time_next = 1;
		return true;
	}
	if (!pep->eager_streaming_stores)
		return false;
	if (++pep->eager_stores_since_try < EAGER_STORES_TRY)
		return true;
	pep->eager_stores_since_try = 0;
	pep->eager_time_next = 1;
	return false;
}

/* The least of the last timed copies in by streaming stores, ns a byte (0: none timed): one
 * copy preempted must not make them look slow for ever, as no more of them would be timed. */
static float stream_in(const struct ddtx_proto_ep *pep)
{
	float least = 0;
	for (unsigned i = 0; i < pep->eager_stream_in_n; i++)
		if (!i || pep->eager_stream_in[i] < least)
			least = pep->eager_stream_in[i];
	return least;
}

static void eager_stores_judge(struct ddtx_proto_ep *pep, size_t bytes, bool streaming,
			       uint64_t copy_ns)
{
	if (!pep->caps->pack_stores || bytes < EAGER_ALWAYS)
		return;
	float per_byte = (float)copy_ns / (float)bytes;
	if (!(per_byte > 0))
		return; /* 0 stands for none timed */
	if (streaming) {
		pep->eager_stream_in[pep->eager_stream_in_next] = per_byte;
		pep->eager_stream_in_next = (uint8_t)((pep->eager_stream_in_next + 1) % 3);
		if (pep->eager_stream_in_n < 3)
			pep->eager_stream_in_n++;
		/* A probe is weighed with the cached copy that called it at once: in a stream
		 * only tries are timed, and the next one came 900 sends later (tagged bw). */
		if (!pep->eager_streaming_stores && pep->eager_cached_in > 0 &&
		    pep->eager_cached_in > EAGER_STREAM_RATIO * stream_in(pep)) {
			pep->eager_streaming_stores = true;
			pep->eager_stores_since_try = 0;
		}
		return;
	}
	pep->eager_cached_in = per_byte;
	float out = pep->eager_out_ns_per_byte, in = stream_in(pep);
	bool slow = in > 0 ? per_byte > EAGER_STREAM_RATIO * in
			   : out > 0 && per_byte > EAGER_RFO_RATIO * out;
	pep->eager_stores_probe = !slow && (pep->eager_stream_in_n < 3 ||
					    per_byte > EAGER_PROBE_RATIO * (out > 0 ? out : in));
	pep->eager_streaming_stores = slow;
	pep->eager_stores_since_try = 0;
}

void ddtx_choose_eager_sent(struct ddtx_proto_ep *pep, size_t bytes, size_t blocks,
			    bool streaming, const uint64_t *copy_ns)
{
	/* A copy by cached stores judged slow is not what the next sends will take (they stream):
	 * kept out of the eager line, whose 11-16 us at 32 KiB drew the boundary below the size
	 * while streaming stores took 1-2 us (ping-pong, slow regime: most sends by pull). */
	if (copy_ns) {
		eager_stores_judge(pep, bytes, streaming, *copy_ns);
		if (!pep->eager_timed_stores_only && (streaming || !pep->eager_streaming_stores))
			ddtx_choose_observe_eager(pep, bytes, blocks, *copy_ns);
	}
	pep->eager_timed_stores_only = false;
	/* A stream's gap runs from the end of this copy: the copy itself (1-10 us at 24-32 KiB
	 * in fabtests' tagged bw) took half of a stream's sends past STREAM_GAP_NS, which then
	 * went by pull at 0.5x the bandwidth. */
	if (pep->last_eager_choice_ns)
		pep->last_eager_choice_ns = ddtx_time_ns();
}

void ddtx_choose_observe_eager(struct ddtx_proto_ep *pep, size_t bytes, size_t blocks,
			       uint64_t ns)
{
	double out = pep->eager_out_ns_per_byte > 0 ? pep->eager_out_ns_per_byte * (double)bytes
						    : (double)ns;
	ddtx_cost_observe(&pep->pd->cost, FI_DDTX_SCHEME_EAGER, bytes, blocks,
			  (uint64_t)((double)ns + out));
}

bool ddtx_choose_time_eager(struct ddtx_proto_ep *pep, size_t bytes)
{
	if (bytes < EAGER_ALWAYS)
		return false;
	int8_t next = pep->eager_time_next;
	bool sampled = !next && ++pep->eager_sends % EAGER_SAMPLE == 0;
	/* In a stream a sample times the copy for its stores alone (eager_stores_judge): there
	 * the copy in meets the receiver reading the ring (fabtests' tagged bw at 64 KiB, 2.3-4.2
	 * GB/s where shm moved 7.8-8.7), but it is not the eager line's (the copies overlap). */
	pep->eager_timed_stores_only = sampled && pep->eager_streaming;
	bool now = next > 0 || (sampled && (!pep->eager_streaming || pep->caps->pack_stores));
	pep->eager_time_next = 0;
	return now;
}

bool ddtx_choose_time_eager_out(struct ddtx_proto_ep *pep, size_t bytes)
{
	return bytes >= EAGER_ALWAYS && ++pep->eager_deliveries % EAGER_SAMPLE == 0;
}

void ddtx_choose_observe_eager_out(struct ddtx_proto_ep *pep, size_t bytes, uint64_t ns)
{
	float per_byte = (float)ns / (float)bytes;
	float *mean = &pep->eager_out_ns_per_byte;
	*mean = *mean > 0 ? *mean + EAGER_OUT_WEIGHT * (per_byte - *mean) : per_byte;
}

/*
 * The first chunk of a packed rendezvous travels in the RTS (issue 12: a message of many small
 * blocks started moving only after the full RTS/CTS round trip).  Only when packing is what
 * the receiver will choose: proposed PACK and not worth zero copy (a chunk sent ahead of a
 * zero-copy transfer is copied twice), and noncontiguous (a contiguous message is moved by
 * one copy, never packed ahead).  Its size is what the pipeline moves in the time the cost
 * model measured for PACK's fixed cost (the handshake): the receiver scatters it while the
 * CTS comes back, and the sender's next chunk follows at once.
 */
#define FIRST_CHUNK_MIN 1024

size_t ddtx_choose_first_chunk(struct ddtx_proto_ep *pep, enum fi_ddtx_scheme proposed,
			       const struct ddtx_layout *l, const struct ddtx_layout_stats *st,
			       size_t room)
{
	enum fi_ddtx_scheme f = forced_scheme(pep->caps);
	if (proposed != FI_DDTX_SCHEME_PACK || st->nblocks <= 1 ||
	    (f != FI_DDTX_SCHEME_COUNT && f != FI_DDTX_SCHEME_PACK))
		return 0;
	double fbuf[DDTX_COST_LINES];
	if (f == FI_DDTX_SCHEME_COUNT && worth_zcopy(pep, st, shape_factors(pep, l, fbuf)))
		return 0;
	/* Blocks on both sides: the gather and the scatter (the receiver's unknown here). */
	double lead = ddtx_cost_lead_bytes(&pep->pd->cost, FI_DDTX_SCHEME_PACK, st->total,
					   2 * st->nblocks);
	size_t n = lead < (double)room ? (size_t)lead : room;
	n = DDTX_MAX(n, (size_t)FIRST_CHUNK_MIN);
	return DDTX_MIN(DDTX_MIN(n, room), st->total);
}

enum fi_ddtx_scheme ddtx_choose_decide(struct ddtx_proto_ep *pep, enum fi_ddtx_scheme proposed,
				       bool pull_offered, const struct ddtx_layout_stats *sender,
				       struct ddtx_layout *receiver, size_t bytes, bool *explored,
				       enum ddtx_contig_way *way, struct ddtx_rx *rx)
{
	struct ddtx_proto_domain *pd = pep->pd;
	const struct ddtx_wire_caps *caps = pep->caps;
	*explored = false;
	*way = DDTX_CONTIG_NONE;
	enum fi_ddtx_scheme f = forced_scheme(caps);
	if (f != FI_DDTX_SCHEME_COUNT) {
		if (f != FI_DDTX_SCHEME_PACK && !ready_for(pep, receiver, true))
			return FI_DDTX_SCHEME_PACK; /* could not register at all */
		return f;
	}
	/* Blocks on both sides cost: the gather and the scatter. */
	size_t blocks = sender->nblocks + (receiver ? receiver->st.nblocks : sender->nblocks);
	double fbuf[DDTX_COST_LINES];
	const double *fr = shape_factors(pep, receiver, fbuf);
	/* An offered pull reads without registering (see pull_possible): the sender's one block
	 * into one block, or its windows into any layout (ddtx_choose_pull_windows). */
	bool pull = pull_offered && receiver &&
		    (sender->nblocks > 1 ? pull_wire(pep)
					 : receiver->st.nblocks <= 1 && pull_possible(pep, sender, true));
	bool sender_ready = proposed == FI_DDTX_SCHEME_SGL || proposed == FI_DDTX_SCHEME_UMR;
	/* A receive of several blocks is registered even when it can pull: UMR needs it. */
	bool receiver_ready = receiver && ddtx_layout_ready(receiver);
	bool registers = (!pull || receiver->st.nblocks > 1) && !receiver_ready;
	bool packs = !sender_ready || !(pull || ready_for(pep, receiver, false));
	/* Weighed only where it decides something: a contiguous pull, most rendezvous, spent 223
	 * instructions of its 7451 on it (callgrind, nc_overhead -s 96K, 2026-11-30). */
	bool want = receiver && (registers || packs) && worth_zcopy(pep, &receiver->st, fr);
	if (want && registers)
		request_if_reused(pep, receiver);
	if (packs) {
		if (want)
			pd->zcopy_not_ready++;
		return FI_DDTX_SCHEME_PACK;
	}
	if (ddtx_settings.threshold) {
		/* Zero copy: by a pull where one is offered (no handshake before the copy). */
		size_t avg = DDTX_MIN(sender->avg_block, receiver->st.avg_block);
		if (avg < ddtx_settings.threshold)
			return FI_DDTX_SCHEME_PACK;
		return pull ? FI_DDTX_SCHEME_SGL : proposed;
	}
	unsigned possible = (1u << FI_DDTX_SCHEME_PACK) | zcopy_mask(caps);
	if (!receiver_ready)
		possible &= ~(1u << FI_DDTX_SCHEME_UMR); /* pulling: UMR needs the receiver's keys */
	/* An offered pull of several blocks is what SGL would do: weighed by its own line. */
	bool windows = pull && sender->nblocks > 1;
	if (windows)
		possible = (possible & ~(1u << FI_DDTX_SCHEME_SGL)) | (1u << DDTX_COST_PULL);
	/*
	 * Contiguous on both sides: no exploring.  An exploration moves a message by a scheme
	 * predicted slower, which a contiguous message (most MPI traffic, and every upstream
	 * fabtests message) pays as a latency spike; the fit still learns from every transfer
	 * timed, and from the noncontiguous ones that explore.  Nor UMR: a multi-entry key
	 * gathers many blocks, and one block is one SGL entry (without a window set to map).
	 */
	if (sender->nblocks <= 1 && receiver->st.nblocks <= 1) {
		if (bytes < CONTIG_CHOICE_MAX && (possible & (1u << FI_DDTX_SCHEME_SGL))) {
			*way = ddtx_contig_choose(&pd->contig, bytes, contig_ways(pep, pull, bytes));
			if (*way != DDTX_CONTIG_NONE)
				return *way == DDTX_CONTIG_PACK ? FI_DDTX_SCHEME_PACK
								: FI_DDTX_SCHEME_SGL;
		}
		enum fi_ddtx_scheme t = contig_try(pd, bytes);
		if (t != FI_DDTX_SCHEME_COUNT && try_start(pd, t, bytes, rx))
			return t;
		return ddtx_cost_best(&pd->cost, possible & ~(1u << FI_DDTX_SCHEME_UMR), bytes,
				      blocks);
	}
	/*
	 * The optimistic start of zero copy for several blocks (zcopy_untried): timed it first,
	 * by the schemes' priors: UMR where possible (an offered pull before it drew the tries
	 * onto layouts where zero copy loses, 32 blocks of 1 KiB, and none was tried where it
	 * wins), a pull where UMR is not (a receive of one block).  A receive of several blocks
	 * packs until it is registered.  The pull's own line is then weighed with the others.
	 */
	if (zcopy_untried(pep, &receiver->st) && zcopy_untried(pep, sender)) {
		if (receiver->st.nblocks > 1 && !receiver_ready)
			return FI_DDTX_SCHEME_PACK;
		unsigned z = possible & ~(1u << FI_DDTX_SCHEME_PACK);
		if (z & (1u << FI_DDTX_SCHEME_UMR))
			z &= ~(1u << DDTX_COST_PULL);
		return line_scheme(ddtx_cost_best_scaled(&pd->cost, z, bytes, blocks, fr));
	}
	if (windows && pull_untried(pep, bytes, blocks))
		return FI_DDTX_SCHEME_SGL;
	possible = weighable(pep, possible, &receiver->st) & weighable(pep, possible, sender);
	return line_scheme(ddtx_cost_choose_scaled(&pd->cost, possible, bytes, blocks, fr,
						   explored));
}

/*
 * Pull (issue 12): SGL costs the RTS, a CTS with the receiver's keys, the write and a DONE,
 * three messages in a row before the receiver completes; libfabric's shm provider sends one
 * and lets the receiver read (fabtests' tagged pingpong at 64 KiB, one-way: SGL 5.4 us, shm
 * 3.9).  So a contiguous send that proposes SGL offers its block's key in the RTS, and a
 * receiver that decides SGL reads it at once: one message and one copy, then the CTS that
 * completes the send travels off the receiver's critical path.  Only where a read is one
 * process_vm_readv (the shm wire) or the core's RMA read (the ofi wire, pull_one_wire; verbs
 * keeps the write until measured), only in auto mode (a forced scheme keeps its exact
 * message sequence), and only one block on the sender's side (the key covers exactly the
 * payload).
 */
bool ddtx_choose_pull(struct ddtx_proto_ep *pep, enum fi_ddtx_scheme proposed,
		      const struct ddtx_layout_stats *st)
{
	return proposed == FI_DDTX_SCHEME_SGL && st->nblocks == 1 && pull_one_wire(pep);
}

/*
 * A pull of several blocks (issue 12): packing 256 blocks of 4 KiB (1 MiB) takes two copies at
 * the rate one core gathers from memory the other core last touched (nc_bw ping-pong: PACK
 * 108-123 us, SGL 140 with the sender's core alone copying), where two cores each moving half
 * by CMA take 60 (cma-2core).  So a sender whose layout is registered, and whose windows (the
 * registration maps them) are few enough to list, offers them in the RTS, and a receiver that
 * decides SGL reads through them: all of it, or its head while the sender writes the tail
 * (ddtx_choose_split).  The cost model weighs it by a line of its own (engine/cost.h).  Only
 * blocks of a page or more: a read or write of process_vm_*v pins the pages of each remote
 * block, and two cores moving 1 MiB of 1 KiB blocks so took 168 us where packing took 145
 * (nc_bw cma-2core against ddtx pack); offered for smaller blocks, the pull's line, fitted
 * on large ones, drew 1-2 KiB layouts to it and the MPI benchmark's choices wandered.
 */
#define PULL_MIN_BLOCK 4096

bool ddtx_choose_pull_windows(struct ddtx_proto_ep *pep, enum fi_ddtx_scheme proposed,
			      const struct ddtx_layout_stats *st)
{
	return proposed != FI_DDTX_SCHEME_PACK && st->nblocks > 1 &&
	       st->min_block >= PULL_MIN_BLOCK && pull_wire(pep);
}

/*
 * A split pull (issue 12): a pull copies on the receiver's core alone while the sender's
 * polls, and libfabric's shm does the same, so ddtx's bandwidth could only equal shm's.  From
 * FI_DDTX_PULL_SPLIT bytes on (96 KiB: fabtests' tagged pingpong split took 4.36 us at
 * 64 KiB against 3.86 whole, 4.72 against 4.89 at 96 KiB, 30.0 against 52.5 at 1 MiB), the
 * receiver first asks the sender to write the tail of the message (an SGL CTS for it) and
 * reads the head meanwhile: two cores copy.  The receiver's share is half plus SPLIT_LEAD,
 * what it reads while its CTS travels and the sender looks the key up (about 0.5 us at the
 * ~20 GB/s one core copies here), in whole pages.
 */
#define SPLIT_LEAD 8192
#define SPLIT_ALIGN 4096

size_t ddtx_choose_split(struct ddtx_proto_ep *pep, size_t bytes)
{
	size_t min = ddtx_settings.pull_split;
	if (!min || bytes < min || !pull_wire(pep))
		return bytes;
	size_t head = (bytes / 2 + SPLIT_LEAD) & ~(size_t)(SPLIT_ALIGN - 1);
	return head && head < bytes ? head : bytes;
}

/*
 * How much of a pull the receiver reads itself.  A contiguous stream's (messages of its size
 * overlap, as in fabtests' tagged bw) is split only from twice FI_DDTX_PULL_SPLIT: the split's
 * two more messages cost more than the sender's copy saves there.  Slow regime, MB/s against
 * shm's (2026-11-29, `util/bench-fabtests.sh -r 3 -m -f mbps ... fi_rdm_tagged_bw -S all`):
 * split 0.62x at 96 KiB and 0.87x at 128 KiB, whole 0.89-0.91x and 0.94-0.98x; at 192 KiB and
 * beyond the two within their spread or the split ahead (1.2-1.6x from 384 KiB).
 */
size_t ddtx_choose_pull_head(struct ddtx_proto_ep *pep, enum ddtx_contig_way way, size_t bytes,
			     bool contiguous)
{
	if (way == DDTX_CONTIG_PULL)
		return bytes;
	if (way == DDTX_CONTIG_NONE && contiguous && bytes / 2 < ddtx_settings.pull_split &&
	    ddtx_contig_streaming(&pep->pd->contig, bytes))
		return bytes;
	return ddtx_choose_split(pep, bytes);
}

/*
 * The first transfers from or into a buffer are not the scheme's cost: they touch fresh
 * pages, and the registration thread competes for the CPU meanwhile (on a small host, several
 * times the steady cost).  Timed, they made a scheme look so slow that it was seldom tried
 * again; so a transfer is timed only when both layouts are warm: used WARM_USES times and not
 * being registered.
 */
#define WARM_USES 4

bool ddtx_choose_warm(const struct ddtx_layout *l)
{
	if (!l)
		return true;
	int state = atomic_load_explicit(&((struct ddtx_layout *)l)->state, memory_order_acquire);
	return l->uses >= WARM_USES && state != DDTX_LAYOUT_QUEUED &&
	       state != DDTX_LAYOUT_REGISTERING;
}

/*
 * Every scheme is timed by the receiver, from its RTS to its completion, and what the sender did
 * before the RTS left is not in it.  For zero copy that is nothing, but a packed RTS brings the
 * first chunk, gathered before it was sent (ddtx_choose_first_chunk), and that chunk grows with
 * PACK's fitted handshake: PACK's samples left out ever more of the copy.  nc_bw ping-pong, 32
 * blocks of 4 KiB: PACK's samples 13.5 us for 20.7 one-way, UMR's 8.3 for 10.0, and in auto
 * mode PACK's fell from 30 to 12 us as its first chunk grew.  Gathering a chunk costs what
 * scattering it does, so the sample starts one scatter earlier.
 */
uint64_t ddtx_choose_sample_start(uint64_t rts_ns, uint64_t scatter_ns)
{
	/* 0 would mean "not timed" (rx_finish). */
	return rts_ns > scatter_ns ? rts_ns - scatter_ns : 1;
}

/*
 * A rendezvous's timing is learnt at the start of the next progress call, not when it
 * finishes: the refit (a 3x3 solve) and the timer took 80 ns of the receiver's path between
 * its read and its completion (stage clocks at 12 KiB, whose pull is 2.2-2.4 us one-way),
 * and in a ping-pong the next call is the wait for the reply.  The timings are learnt in the
 * order they were taken, with the clock read at the finish.
 */
void ddtx_choose_observe(struct ddtx_proto_ep *pep, enum fi_ddtx_scheme s,
			 enum ddtx_contig_way way, uint64_t start_ns, size_t bytes, size_t blocks,
			 bool warm, const struct ddtx_layout *receiver, bool model)
{
	ddtx_choose_learn(pep);
	bool shaped = receiver && blocks > 2; /* several blocks on one side at least */
	pep->rndv_sample = (struct ddtx_rndv_sample){.scheme = s, .way = way,
						     .start_ns = start_ns,
						     .done_ns = ddtx_time_ns(), .bytes = bytes,
						     .blocks = blocks, .warm = warm,
						     .shape = shaped ? receiver->hash : 0,
						     .shaped = shaped, .pending = true,
						     .model = model};
}

void ddtx_choose_learn(struct ddtx_proto_ep *pep)
{
	struct ddtx_rndv_sample *t = &pep->rndv_sample;
	if (!t->pending)
		return;
	t->pending = false;
	ddtx_contig_observe(&pep->pd->contig, t->bytes, t->way, t->start_ns, t->done_ns, t->warm);
	if (!t->model)
		return;
	contig_timed(pep->pd, t->scheme, t->bytes, t->blocks, t->warm);
	ddtx_cost_timer_finish(&pep->pd->cost, &pep->rndv_timer, t->scheme, t->start_ns,
			       t->done_ns, t->bytes, t->blocks, t->warm, &pep->pd->cost_bias,
			       t->shaped ? &t->shape : NULL);
}
