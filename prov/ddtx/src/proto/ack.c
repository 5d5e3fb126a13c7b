/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Delivery ACKs (FI_DELIVERY_COMPLETE) carried on reverse traffic.
 *
 * MPICH ch4:ofi asks FI_DELIVERY_COMPLETE on every send, and an ACK of its own per delivered
 * message made every MPI send two messages: over the ofi wire on tcp a 16 KiB ping-pong took
 * 15.9 us where tcp;ofi_rxm takes 11.3 (docs/benchmark-results.md, branch ofictg).  So a
 * receiver owes the ACK instead of sending it, and the next message it sends to that peer (an
 * EAGER, an RTS, a CTS, DATA, any control message) carries it in its common header (ACKED,
 * ack_id).  What nothing carried leaves as an ACK of its own listing every id owed to that
 * peer:
 *
 *  - at the start of the second progress call after it was owed (ACK_CALLS): a ping-pong rank
 *    takes the partner's message from the unexpected queue in fi_trecv, reads that receive's
 *    completion in one fi_cq_read and then sends; flushed at the first call, that ACK never
 *    rode on the send;
 *  - by the domain's ACK timer when the receiver makes no call at all: every
 *    FI_DDTX_ACK_DELAY_US it sends what was owed at its previous round (so at most twice that
 *    late), taking the domain lock only when it is free (a thread inside a call flushes them
 *    itself); it parks after a second with nothing owed;
 *  - when the endpoint closes.
 * Only to a peer reached by a wire whose messages cost more than an unexpected copy
 * (caps.carry_acks: the ofi wire, alone or as wire/multi's fabric wire); on shm a carried ACK
 * made the reply arrive before the sender posted its receive, and MPICH's one-host latencies
 * grew (nas_lu-y 2.8 -> 3.3 us, lammps_full 27.6 -> 31.7).
 * The ACK of a rendezvous leaves at once (with whatever else is owed to that peer): deferred,
 * MPICH's MPI_Alltoall of 256 KiB over the tcp core took 713-852 us where it takes 530
 * (fft2d-256-p2), while eager sizes gained 2-4 us (nas_lu-y, lammps_atomic, 8 KiB).
 * FI_DDTX_ACK_DELAY_US=0 sends every ACK at once, alone, as protocol version 7 did.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/proto_internal.h"

/* Progress calls an owed ACK waits through for a message to ride on (see above). */
#define ACK_CALLS 2
/* Timer rounds with nothing owed before the timer parks. */
#define ACK_QUIET_ROUNDS(delay_us) (1000000u / (delay_us) + 1)

static void owed_remove(struct ddtx_proto_ep *pep, unsigned i)
{
	for (unsigned j = i + 1; j < pep->nacks; j++)
		pep->acks[j - 1] = pep->acks[j];
	pep->nacks--;
}

/* Send the ACKs owed to peer (those owed before this progress call, or timer round, when
 * only_old), as many ACK messages as their number needs. */
static void flush_peer(struct ddtx_proto_ep *pep, ddtx_peer_t peer, bool only_old)
{
	struct {
		struct ddtx_hdr_ack h;
		uint32_t more[DDTX_ACK_LIST_MAX];
	} m;
	unsigned n = 0;
	for (unsigned i = 0; i <= pep->nacks; i++) {
		struct ddtx_ack_owed *a = &pep->acks[i];
		bool last = i == pep->nacks;
		if (!last && a->peer == peer &&
		    (!only_old || pep->progress_calls - a->call >= ACK_CALLS ||
		     a->epoch != pep->ack_epoch)) {
			if (n == 0)
				m.h.tx_id = a->tx_id;
			else
				m.more[n - 1] = a->tx_id;
			n++;
			owed_remove(pep, i--);
		}
		if (n && (last || n == DDTX_ACK_LIST_MAX + 1)) {
			ddtx_hdr_init(&m.h.base, DDTX_MSG_ACK, 0);
			m.h.status = 0;
			ddtx_ctrl_send(pep, peer, &m, sizeof(m.h) + (n - 1) * sizeof(uint32_t));
			pep->pd->stats.acks_alone++;
			n = 0;
		}
	}
}

static void flush(struct ddtx_proto_ep *pep, bool only_old)
{
	/* Each round takes out one peer's ACKs (or leaves the young ones): at most nacks rounds. */
	for (unsigned i = 0; i < pep->nacks;) {
		const struct ddtx_ack_owed *a = &pep->acks[i];
		if (only_old && pep->progress_calls - a->call < ACK_CALLS &&
		    a->epoch == pep->ack_epoch) {
			i++;
			continue;
		}
		unsigned before = pep->nacks;
		flush_peer(pep, a->peer, only_old);
		if (pep->nacks == before)
			i++;
	}
}

void ddtx_ack_flush_all(struct ddtx_proto_ep *pep)
{
	flush(pep, false);
}

void ddtx_ack_progress(struct ddtx_proto_ep *pep)
{
	pep->progress_calls++;
	if (pep->nacks)
		flush(pep, true);
}

static void *ack_timer(void *arg)
{
	struct ddtx_proto_domain *pd = arg;
	const unsigned delay_us = ddtx_settings.ack_delay_us;
	const struct timespec nap = {.tv_sec = delay_us / 1000000,
				     .tv_nsec = (long)(delay_us % 1000000) * 1000};
	unsigned quiet = 0;
	while (!atomic_load(&pd->ack_stop)) {
		nanosleep(&nap, NULL);
		/*
		 * Never wait for the lock: a thread inside a call of this domain flushes what is
		 * owed itself, and a timer blocked on the lock made every unlock of a rank's
		 * polling loop a futex wake (MPI latencies up to 1.5x, fft2d 383 -> 593 us).
		 */
		if (!ddtx_rlock_trylock(pd->lock)) {
			quiet = 0;
			continue;
		}
		bool owed = false;
		struct ddtx_list_entry *it, *tmp;
		ddtx_list_foreach_safe(&pd->eps, it, tmp)
		{
			struct ddtx_proto_ep *pep =
				ddtx_container_of(it, struct ddtx_proto_ep, pd_entry);
			if (pep->nacks && pep->wire) {
				owed = true;
				flush(pep, true);
			}
			pep->ack_epoch++;
		}
		quiet = owed ? 0 : quiet + 1;
		if (quiet >= ACK_QUIET_ROUNDS(delay_us)) {
			/* Park until an ACK is owed.  Timed: a stop signalled without the lock (at
			 * exit) may come between the check and this wait; it is seen within a
			 * second. */
			pd->ack_parked = true;
			while (pd->ack_parked && !atomic_load(&pd->ack_stop))
				ddtx_rlock_wait(pd->lock, &pd->ack_wake, 1000);
			quiet = 0;
		}
		ddtx_rlock_unlock(pd->lock);
	}
	return NULL;
}

/* The timer runs (or wakes) whenever an ACK is owed; called under the domain lock. */
static void timer_kick(struct ddtx_proto_domain *pd)
{
	if (pd->ack_timer_on) {
		if (pd->ack_parked) {
			pd->ack_parked = false;
			ddtx_rlock_wake(&pd->ack_wake);
		}
		return;
	}
	if (pd->ack_timer_failed)
		return;
	if (ddtx_rlock_cond_init(&pd->ack_wake) ||
	    pthread_create(&pd->ack_timer, NULL, ack_timer, pd)) {
		/* Without the timer an ACK is owed only until the receiver's next calls. */
		DDTX_WARN(FI_LOG_EP_DATA, "no ACK timer thread: %s\n", strerror(errno));
		pd->ack_timer_failed = true;
		return;
	}
	pd->ack_timer_on = true;
}

void ddtx_ack_timer_stop(struct ddtx_proto_domain *pd)
{
	if (!pd->ack_timer_on)
		return;
	atomic_store(&pd->ack_stop, true);
	/* At exit another thread may hold the lock: signal without it then (the timed wait). */
	bool locked = ddtx_rlock_trylock(pd->lock);
	ddtx_rlock_wake(&pd->ack_wake);
	if (locked)
		ddtx_rlock_unlock(pd->lock);
	pthread_join(pd->ack_timer, NULL);
	ddtx_rlock_cond_destroy(&pd->ack_wake);
	pd->ack_timer_on = false;
}

void ddtx_ack_drop_peer(struct ddtx_proto_ep *pep, ddtx_peer_t peer)
{
	for (unsigned i = 0; i < pep->nacks;) {
		if (pep->acks[i].peer == peer)
			owed_remove(pep, i);
		else
			i++;
	}
}

/* defer: an eager message's ACK (may wait for a ride); else a rendezvous's (leaves now). */
void ddtx_ack_owe(struct ddtx_proto_ep *pep, ddtx_peer_t peer, uint32_t tx_id, bool defer)
{
	if (pep->nacks == DDTX_ACKS_OWED_MAX)
		flush(pep, false);
	pep->acks[pep->nacks++] = (struct ddtx_ack_owed){
		.peer = peer, .tx_id = tx_id, .call = pep->progress_calls, .epoch = pep->ack_epoch};
	if (defer && ddtx_settings.ack_delay_us &&
	    ddtx_wire_peer_carries_acks(pep->wire, peer, pep->caps->carry_acks))
		timer_kick(pep->pd);
	else
		flush_peer(pep, peer, false);
}

void ddtx_ack_carry(struct ddtx_proto_ep *pep, ddtx_peer_t peer, struct ddtx_hdr_base *b)
{
	for (unsigned i = 0; i < pep->nacks; i++) {
		if (pep->acks[i].peer == peer) {
			b->flags |= DDTX_HDR_ACKED;
			b->ack_id = pep->acks[i].tx_id;
			owed_remove(pep, i);
			pep->pd->stats.acks_carried++;
			return;
		}
	}
}

void ddtx_ack_uncarry(struct ddtx_proto_ep *pep, ddtx_peer_t peer, struct ddtx_hdr_base *b)
{
	if (!(b->flags & DDTX_HDR_ACKED))
		return;
	b->flags &= (uint16_t)~DDTX_HDR_ACKED;
	pep->pd->stats.acks_carried--;
	if (pep->nacks == DDTX_ACKS_OWED_MAX)
		flush(pep, false);
	/* Owed since long enough to leave at the next progress call. */
	pep->acks[pep->nacks++] = (struct ddtx_ack_owed){
		.peer = peer, .tx_id = b->ack_id, .call = pep->progress_calls - ACK_CALLS,
		.epoch = pep->ack_epoch};
	b->ack_id = 0;
}
