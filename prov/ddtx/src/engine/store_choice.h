/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Which stores write PACK's chunks into the peer's queue, learned per layout shape (issue 12).
 *
 * On the shm wire a chunk is written by one core and read by the other.  The AMD EPYC KVM host
 * of these benchmarks switches between two regimes (build-tools/core_bounce): in the fast one a
 * line moves between the cores in about 30 ns, in the slow one in about 170, and the receiver's
 * reads of lines the sender just wrote slow down 5x.  Streaming (non-temporal) stores send the
 * chunk to memory instead, where the receiver reads it at memory speed in either regime.
 * nc_bw ping-pong by PACK, one-way us, fast / slow regime (2026-11-27): 256 KiB in 64-byte
 * blocks 26 / 127-139 by cached stores, 44 / 44 by streaming ones; the 65536 x 8 B layout
 * handle 30 / 241 against 71-75 / 80.  Neither wins in both regimes, and a regime lasts
 * seconds to minutes, so the receiver (which times the whole transfer) chooses per shape by
 * what it measured: cached stores first, then streaming ones twice, then the faster, and now
 * and then the other to follow a change of regime.  A kind's figure is the median of its last
 * three samples: a change of regime shows in two.  (A sample faster than the mean taken whole
 * and a slower one folded in by a quarter, as before, let one outlier decide: in nc_bw's
 * stream of 8-byte blocks a transfer timed across the pause between two windows took 1.7 ms
 * where the others took 12-20 us, and a lucky 6.5 us one by streaming stores, whose 19-20 us
 * were slower than cached stores' 11-15, kept streaming stores on for 57% of the bytes.)
 * Pure logic.
 */
#ifndef DDTX_ENGINE_STORE_CHOICE_H
#define DDTX_ENGINE_STORE_CHOICE_H

#include <stddef.h>
#include <stdint.h>

enum ddtx_pack_stores {
	DDTX_STORES_CACHED = 0,    /* ordinary stores: the chunk stays in the writer's cache */
	DDTX_STORES_STREAMING = 1, /* non-temporal stores: the chunk goes to memory */
	DDTX_STORES_COUNT,
};

#define DDTX_STORE_CHOICE_SLOTS 64
#define DDTX_STORE_RECENT 3

struct ddtx_store_slot {
	uint64_t shape;                         /* 0: empty */
	float recent[DDTX_STORES_COUNT][DDTX_STORE_RECENT]; /* ns per byte, last samples */
	uint16_t n[DDTX_STORES_COUNT];          /* transfers timed (saturates) */
	uint16_t since_explore;                 /* choices since the other kind was last tried */
	uint16_t explore_every;                 /* the current period of those tries */
};

struct ddtx_store_choice {
	struct ddtx_store_slot slot[DDTX_STORE_CHOICE_SLOTS];
	uint64_t last_done_ns;                  /* when the last PACK transfer finished */
};

void ddtx_store_choice_init(struct ddtx_store_choice *c);
/* The stores for the next PACK transfer of this shape (non-zero). */
enum ddtx_pack_stores ddtx_store_choose(struct ddtx_store_choice *c, uint64_t shape);
/*
 * A PACK transfer of this shape written with stores s, started at start_ns, moved bytes by
 * now_ns.  Timed by its service time: from its start or the previous PACK transfer's finish,
 * whichever is later.  Timed from its start, a transfer that waited behind others in a stream
 * (nc_bw's bandwidth run: 512 rendezvous in flight) carried their time too, and the kind that
 * had one lucky sample won: 8-byte blocks went by streaming stores at 3.40-3.55 GB/s where
 * cached ones moved 3.68-4.04 (2026-11-28).
 */
void ddtx_store_observe(struct ddtx_store_choice *c, uint64_t shape, enum ddtx_pack_stores s,
			uint64_t start_ns, uint64_t now_ns, size_t bytes);
/* A PACK transfer that is not learnt from finished at now_ns (the next one's service starts). */
void ddtx_store_done(struct ddtx_store_choice *c, uint64_t now_ns);

#endif /* DDTX_ENGINE_STORE_CHOICE_H */
