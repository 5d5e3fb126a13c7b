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
 * and then the other to follow a change of regime; a sample faster than a kind's mean is taken
 * whole (the host got faster: one try suffices to see it), a slower one folded in by a
 * quarter.  Pure logic.
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

struct ddtx_store_slot {
	uint64_t shape;                         /* 0: empty */
	float ns_per_byte[DDTX_STORES_COUNT];   /* recent transfers by each kind */
	uint16_t n[DDTX_STORES_COUNT];          /* transfers timed (saturates) */
	uint16_t since_explore;                 /* choices since the other kind was last tried */
	uint16_t explore_every;                 /* the current period of those tries */
};

struct ddtx_store_choice {
	struct ddtx_store_slot slot[DDTX_STORE_CHOICE_SLOTS];
};

void ddtx_store_choice_init(struct ddtx_store_choice *c);
/* The stores for the next PACK transfer of this shape (non-zero). */
enum ddtx_pack_stores ddtx_store_choose(struct ddtx_store_choice *c, uint64_t shape);
/* A PACK transfer of this shape written with stores s moved bytes in ns. */
void ddtx_store_observe(struct ddtx_store_choice *c, uint64_t shape, enum ddtx_pack_stores s,
			uint64_t ns, size_t bytes);

#endif /* DDTX_ENGINE_STORE_CHOICE_H */
