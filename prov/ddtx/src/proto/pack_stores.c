/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The stores a PACK transfer's chunks are written with (engine/store_choice.h): chosen by the
 * receiver, which times the whole transfer, and asked of the sender in the PACK CTS.
 */
#include "engine/layout.h"
#include "proto/proto_internal.h"

/* Smaller PACK transfers keep cached stores: most of their bytes ride in the RTS (written
 * before any CTS) or in one or two chunks, and a transfer is too short to time the choice. */
#define STORES_MIN 32768

/* The shape a choice is learned for: the receive's layout, the bytes, the sender's blocks. */
static uint64_t stores_shape(const struct ddtx_rx *rx)
{
	uint64_t h = rx->cached ? rx->cached->hash : 0;
	h ^= (uint64_t)rx->accepted * 0x9e3779b97f4a7c15ull;
	h ^= (uint64_t)rx->sender_blocks * 0xc2b2ae3d27d4eb4full;
	h ^= h >> 31;
	return h | 1;
}

void ddtx_pack_stores_choose(struct ddtx_proto_ep *pep, struct ddtx_rx *rx)
{
	rx->pack_stores = DDTX_STORES_CACHED;
	rx->stores_learned = false;
	if (!pep->caps->pack_stores)
		return;
	switch (ddtx_settings.pack_stores) {
	case DDTX_PACK_STORES_SETTING_CACHED:
		return;
	case DDTX_PACK_STORES_SETTING_STREAMING:
		rx->pack_stores = DDTX_STORES_STREAMING;
		return;
	case DDTX_PACK_STORES_SETTING_AUTO:
		break;
	}
	if (rx->accepted < STORES_MIN)
		return;
	rx->pack_stores = ddtx_store_choose(&pep->pd->stores, stores_shape(rx));
	rx->stores_learned = true;
}

bool ddtx_pack_stores_observe(struct ddtx_proto_ep *pep, const struct ddtx_rx *rx)
{
	if (rx->scheme != FI_DDTX_SCHEME_PACK)
		return true;
	if (rx->stores_learned && rx->t_start && rx->received == rx->accepted)
		ddtx_store_observe(&pep->pd->stores, stores_shape(rx),
				   (enum ddtx_pack_stores)rx->pack_stores, rx->t_start,
				   ddtx_time_ns(), rx->accepted);
	else if (pep->caps->pack_stores)
		ddtx_store_done(&pep->pd->stores, ddtx_time_ns());
	/*
	 * The cost model weighs PACK by cached stores only, as before streaming ones existed:
	 * streaming stores make PACK faster where it was chosen, and do not draw other layouts
	 * to it.  Fed to the model, their timings (in the slow regime, from layouts of many small
	 * blocks) lowered the PACK line the others share, and MPICH's vec-4096x16 (16 blocks of
	 * 4 KiB) left the pull at 14 us for PACK at 20; with tries of them in the fast regime
	 * fed to it, MILC-32 went by the pull in 3 runs of 3 (53 us, PACK 35).  Stores set by
	 * FI_DDTX_PACK_STORES are PACK's cost whatever they are.
	 */
	return rx->pack_stores == DDTX_STORES_CACHED || !rx->stores_learned;
}
