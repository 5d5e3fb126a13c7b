/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Which way a contiguous rendezvous goes, learned per size class (issue 12): the receiver's
 * pull of the whole block, the split pull (the receiver reads the head while the sender writes
 * the tail), or PACK through the ring.
 *
 * Which is fastest depends on the size and on the host's regime (build-tools/core_bounce), and a
 * regime lasts seconds to minutes.  fabtests' tagged pingpong, one-way us, slow regime
 * (2026-11-28, 230-300 ns a line; libfabric shm reads the block whole): 256 KiB whole pull
 * 13.5, split 16.6, PACK 21.1, shm 13.8; 2 MiB 108.4, 79.3, 112.1, shm 89.4; fast regime 768 KiB
 * 34.6, 27.4, 25.4, shm 39.1.  The cost model's lines, fitted over all sizes and both regimes,
 * chose PACK from 96 to 768 KiB in the slow regime: 1.3-1.6x shm.  So each power of two of bytes
 * keeps the last timings of each way and takes the way whose least of its last three is lowest,
 * after a first burst of each (or the timings of the smaller size before it), and now and then
 * tries another for a burst to follow a change of regime, less often while the tries keep losing
 * (as engine/store_choice.h chooses PACK's stores), and never for more than a share of the
 * time (a try costs many times the way in use).  Pure logic.
 */
#ifndef DDTX_ENGINE_CONTIG_CHOICE_H
#define DDTX_ENGINE_CONTIG_CHOICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ddtx_contig_way {
	DDTX_CONTIG_PULL = 0,  /* the receiver reads it all (SGL's write where no pull is offered) */
	DDTX_CONTIG_SPLIT = 1, /* the receiver reads the head, the sender writes the tail */
	DDTX_CONTIG_PACK = 2,  /* two copies through the receiver's ring */
	DDTX_CONTIG_WAYS,
	DDTX_CONTIG_NONE = DDTX_CONTIG_WAYS, /* not a contiguous choice */
};
/* Sets of ways (bit 1 << way); the whole pull is always one of them. */
#define DDTX_CONTIG_ALL ((1u << DDTX_CONTIG_WAYS) - 1)

#define DDTX_CONTIG_CLASSES 64
#define DDTX_CONTIG_RECENT 3

struct ddtx_contig_class {
	float recent[DDTX_CONTIG_WAYS][DDTX_CONTIG_RECENT]; /* ns per byte, last samples */
	uint16_t n[DDTX_CONTIG_WAYS];        /* transfers timed (saturates) */
	uint16_t since_explore;              /* timings since another way was last tried */
	uint16_t explore_every;              /* the current period of those tries */
	float since_ns, quiet_ns;            /* time timed since the last try; the least before
						the next (what the last lost try cost, scaled) */
	float burst_ns;                      /* the try's time so far */
	uint8_t next_try;                    /* the way the next try starts looking from */
	uint8_t burst_way, burst_left;       /* the way being tried, timings of it still to come */
	uint16_t burst_choices;              /* choices made in the current try */
	bool judging;                        /* a try's burst not yet judged */
	bool seeded;                         /* started from a smaller class's timings */
	uint8_t ways;                        /* the ways possible at the last choice */
	bool overlapping;                    /* its last rendezvous overlapped another */
};

struct ddtx_contig_choice {
	struct ddtx_contig_class cls[DDTX_CONTIG_CLASSES];
	uint64_t last_done_ns;               /* when the last rendezvous finished */
	struct {                             /* the open busy period (ddtx_contig_observe) */
		uint64_t from_ns, to_ns;
		double bytes;
		unsigned n;                  /* its timed members; 0: none open */
		uint8_t way;
		bool mixed;                  /* other ways or untimed members: not learnt from */
	} busy;
};

void ddtx_contig_choice_init(struct ddtx_contig_choice *c);
/*
 * The way for the next contiguous rendezvous of `bytes`, among `ways` (a set of
 * DDTX_CONTIG_ALL's bits, the whole pull among them: the split only where it is possible).
 * DDTX_CONTIG_NONE while rendezvous of that size overlap: a stream is the cost model's to
 * choose for (fabtests' tagged bw, 192-768 KiB, slow regime: the lines' PACK moved 1.05-1.66x
 * shm's bandwidth, this choice 0.68-1.21x; its few timings of PACK are of a cold ring).
 */
enum ddtx_contig_way ddtx_contig_choose(struct ddtx_contig_choice *c, size_t bytes,
				       unsigned ways);
/* The last rendezvous of this size overlapped another: its messages come as a stream. */
bool ddtx_contig_streaming(const struct ddtx_contig_choice *c, size_t bytes);
/*
 * What a rendezvous of `bytes` took here by the way measured fastest in its class (ns: its
 * least recent timing per byte, times bytes), or INFINITY where none was timed or the class's
 * rendezvous overlap (a stream's timings are of busy periods, not of one transfer).
 */
double ddtx_contig_timed_ns(const struct ddtx_contig_choice *c, size_t bytes);
/* Still in its first tries at this size (every way is then worth preparing for). */
bool ddtx_contig_trying(const struct ddtx_contig_choice *c, size_t bytes);
/*
 * A rendezvous of `bytes` moved by way w (DDTX_CONTIG_NONE: any other rendezvous) started at
 * start_ns and finished at now_ns; timed: its layouts were warm.  Rendezvous that overlap are
 * timed together, as one busy period of the receiver, from the first one's start to the last
 * one's finish: a window of pulls completes at once (fabtests' tagged bw, 512 KiB: the first
 * of 64 finished 1130-2670 us after its start, the others 3 us apart), so a timing of each
 * made the pull look 170 GB/s.  A period is learnt from when the next one starts, and only if
 * all of it went one way.
 */
void ddtx_contig_observe(struct ddtx_contig_choice *c, size_t bytes, enum ddtx_contig_way w,
			 uint64_t start_ns, uint64_t now_ns, bool timed);

#endif /* DDTX_ENGINE_CONTIG_CHOICE_H */
