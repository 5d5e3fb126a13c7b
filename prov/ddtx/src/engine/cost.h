/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The cost model behind "auto": for each scheme, the time of a transfer is modelled as
 *     t = a + b * (bytes / 4 KiB) + c * blocks        (nanoseconds)
 * and (a, b, c) are fitted online from the transfers the receiver times on the running wire,
 * by ridge regression on relative errors towards a prior, with exponential forgetting.  The choice is the
 * scheme of least predicted time among those possible; now and then another scheme predicted
 * close is tried so that its estimate stays current, and more rarely one predicted far in case
 * its estimate is wrong (exploration).  Pure logic: no I/O, no locks.
 */
#ifndef DDTX_COST_H
#define DDTX_COST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fi_ddtx.h>

/*
 * The model's lines: one per scheme (enum fi_ddtx_scheme), and one for a pull of several blocks,
 * which moves as SGL but by both cores (the receiver reads through the sender's windows while
 * the sender writes): 256 blocks of 4 KiB in 69 us where the sender's writes take 143, so one
 * line for both fitted neither.  A `scheme` argument below may be DDTX_COST_PULL.
 */
#define DDTX_COST_PULL ((enum fi_ddtx_scheme)FI_DDTX_SCHEME_COUNT)
#define DDTX_COST_LINES (FI_DDTX_SCHEME_COUNT + 1)

struct ddtx_cost_line {
	double a, b, c;                  /* ns, ns per 4 KiB, ns per block */
};

struct ddtx_cost_fit {
	double ata[3][3], atb[3];        /* forgetting sums of x x^T and x y */
	struct ddtx_cost_line prior;
	struct ddtx_cost_line est;
	uint64_t samples;
	unsigned surprises;              /* outliers in a row, ignored so far */
};

struct ddtx_cost_model {
	struct ddtx_cost_fit fit[DDTX_COST_LINES];
	uint64_t decisions;
	unsigned explore_every;          /* 0: never explore */
	uint64_t explorations;
	uint64_t last_tried[DDTX_COST_LINES];        /* decision count when last chosen */
};

/* Priors for a wire: per-byte and per-block costs of packing and of one-copy zero copy. */
void ddtx_cost_init(struct ddtx_cost_model *m, const struct ddtx_cost_line prior[DDTX_COST_LINES],
		    unsigned explore_every);
void ddtx_cost_observe(struct ddtx_cost_model *m, enum fi_ddtx_scheme s, size_t bytes,
		       size_t blocks, uint64_t ns);
double ddtx_cost_predict(const struct ddtx_cost_model *m, enum fi_ddtx_scheme s, size_t bytes,
			 size_t blocks);
/* The same from scheme s's prior alone, as if nothing had been timed. */
double ddtx_cost_predict_prior(const struct ddtx_cost_model *m, enum fi_ddtx_scheme s,
			       size_t bytes, size_t blocks);
/* Least predicted time among the schemes whose bit (1 << scheme) is in `possible`. */
enum fi_ddtx_scheme ddtx_cost_choose(struct ddtx_cost_model *m, unsigned possible, size_t bytes,
				     size_t blocks, bool *explored);
/* The same choice without exploring and without counting a decision. */
enum fi_ddtx_scheme ddtx_cost_best(const struct ddtx_cost_model *m, unsigned possible,
				   size_t bytes, size_t blocks);
/* The same two with each line's prediction multiplied by factor[line] (a layout's correction,
 * engine/cost_bias.h); factor NULL: by 1. */
enum fi_ddtx_scheme ddtx_cost_choose_scaled(struct ddtx_cost_model *m, unsigned possible,
					    size_t bytes, size_t blocks,
					    const double factor[DDTX_COST_LINES], bool *explored);
enum fi_ddtx_scheme ddtx_cost_best_scaled(const struct ddtx_cost_model *m, unsigned possible,
					  size_t bytes, size_t blocks,
					  const double factor[DDTX_COST_LINES]);
/* Transfers of scheme s timed so far (0: its estimate is only its prior). */
uint64_t ddtx_cost_samples(const struct ddtx_cost_model *m, enum fi_ddtx_scheme s);
/*
 * Bytes of a (bytes, blocks) transfer that scheme s moves in the time of its fixed cost `a`
 * (for PACK, mostly the RTS/CTS handshake), at its fitted cost per byte and per block.
 */
double ddtx_cost_lead_bytes(const struct ddtx_cost_model *m, enum fi_ddtx_scheme s, size_t bytes,
			    size_t blocks);
/* Block length (bytes) from which SGL beats PACK per block, 0 if it never does. */
size_t ddtx_cost_threshold(const struct ddtx_cost_model *m);

/*
 * Service times of rendezvous that finish one after another.  Each is timed from its start or
 * the previous finish, whichever is later; those that overlap are timed as one group, whose
 * mean is observed when it ends: two SGL transfers served at once over tcp finished 9 ms and
 * 0.3 ms apart, and the outlier filter kept only the 0.3 ms, so auto chose SGL where it is
 * 2.5x slower.
 *
 * The whole burst, up to DDTX_COST_GROUP: each side of nc_bw -b 1K --iov-limit 64 posts 64
 * receives at once, and 64 UMR transfers finished 2.4 ms after they started and then 3 us
 * apart; groups of 8 observed 300 us (dropped as an outlier) and seven times 3-5 us where the
 * burst took 40 us a transfer, and auto chose UMR at 4x PACK's time.  A group ending where
 * another scheme's transfer came, or one not to be learnt from (a cold layout's), timed a PACK
 * try that finished first in such a burst alone, with the whole wait (2.4 ms), and the first
 * bursts in groups of 1-4 at 240-450 us a transfer, which set the layout's correction of PACK
 * to 4x.  So a group takes in the others among it and is learnt as the scheme of
 * DDTX_COST_MAJORITY of its members (a few others' time counted as theirs); a group with none
 * such teaches nothing.  A group ends at DDTX_COST_GROUP members all the same, so
 * that a stream that never pauses keeps learning.
 */
#define DDTX_COST_GROUP 256
#define DDTX_COST_MAJORITY 0.75
struct ddtx_cost_bias;
struct ddtx_cost_timer {
	uint64_t last_done_ns;
	uint64_t from_ns, to_ns;
	double bytes, blocks;
	unsigned n;                      /* members of the open group; 0: none */
	unsigned by[DDTX_COST_LINES + 1]; /* its members by scheme; [DDTX_COST_LINES]: untimed */
	uint64_t shape;                  /* its members' layout shape, if they share one */
	bool shaped;
};
/*
 * A rendezvous by s, started at start_ns, finished now_ns; timed false: not to be learnt from.
 * shape: the receiver's layout shape (NULL: none); a group whose members all had one shape also
 * corrects that shape's line in bias (engine/cost_bias.h; NULL: no corrections).  By the
 * group's mean, as the line: in a stream of two in flight the transfers of 32 blocks of 4 KiB
 * by UMR finished 2.4 and 16-20 us after the one before, in turns, and their mean of logs made
 * UMR look 0.5x its line where the group's mean was right (nc_bw -m bw chose UMR at 9.5 us
 * over the pull's 7.0).
 */
void ddtx_cost_timer_finish(struct ddtx_cost_model *m, struct ddtx_cost_timer *t,
			    enum fi_ddtx_scheme s, uint64_t start_ns, uint64_t now_ns, size_t bytes,
			    size_t blocks, bool timed, struct ddtx_cost_bias *bias,
			    const uint64_t *shape);

#endif /* DDTX_COST_H */
