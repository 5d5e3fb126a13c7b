/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Sender side of messaging: eager sends, RTS, and the transfer that follows the receiver's CTS
 * (PACK: streamed DATA chunks; SGL/UMR: one batch of writes per CTS, then DONE).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/dataloop.h"
#include "engine/layout.h"
#include "engine/pack.h"
#include "engine/regcache.h"
#include "proto/proto_internal.h"

/* The wire may have more room for this peer than for any (the ofi wire's receive ring). */
static size_t eager_limit(struct ddtx_proto_ep *pep, ddtx_peer_t peer, size_t total,
			  size_t blocks, bool host)
{
	size_t room = ddtx_wire_peer_send_size(pep->wire, peer, pep->caps->max_send_size) -
		      sizeof(struct ddtx_hdr_eager);
	return ddtx_choose_eager_limit(pep, room, total, blocks, host);
}

/*
 * The wire to peer for a message of a send, once no control message to that peer waits in
 * pep->ctrl: per-peer order.  A send that overtook a queued CTS completed while the CTS stayed
 * behind, and a receiver whose application then stopped calling the provider left its peer's
 * send waiting for that CTS for ever (nc_bw's 8-byte blocks in a trial build with STREAM on the
 * shm wire: its last message, an acknowledgement, went out past the CTSs; 2026-11-28).
 * A peer the wire took as gone is started afresh once, if nothing of ours waits on it
 * (peer_restart.c: a server restarted on its service).
 */
static int wire_send(struct ddtx_proto_ep *pep, ddtx_peer_t peer, const void *hdr, size_t hdr_len,
		     const struct iovec *iov, size_t count)
{
	if (ddtx_ctrl_waiting(pep, peer))
		return -FI_EAGAIN;
	int ret = ddtx_wire_send(pep->wire, peer, hdr, hdr_len, iov, count);
	if (ret == -FI_EIO && ddtx_peer_restart(pep, peer))
		ret = ddtx_wire_send(pep->wire, peer, hdr, hdr_len, iov, count);
	return ret;
}

static int wire_claim(struct ddtx_proto_ep *pep, ddtx_peer_t peer, size_t min_len,
		      struct ddtx_wire_send_buf *buf)
{
	if (ddtx_ctrl_waiting(pep, peer))
		return -FI_EAGAIN;
	int ret = ddtx_wire_send_claim(pep->wire, peer, min_len, buf);
	if (ret == -FI_EIO && ddtx_peer_restart(pep, peer))
		ret = ddtx_wire_send_claim(pep->wire, peer, min_len, buf);
	return ret;
}

/* Send a whole message now; -FI_EAGAIN after one round of progress if the queue stays full.
 * ns (if not NULL): how long the last attempt took, the progress between attempts left out. */
static int send_now(struct ddtx_proto_ep *pep, ddtx_peer_t peer, const void *hdr, size_t hdr_len,
		    const struct iovec *iov, size_t count, uint64_t *ns)
{
	for (int attempt = 0;; attempt++) {
		uint64_t t0 = ns ? ddtx_time_ns() : 0;
		int ret = wire_send(pep, peer, hdr, hdr_len, iov, count);
		if (ns)
			*ns = ddtx_time_ns() - t0;
		if (ret != -FI_EAGAIN || attempt == 1)
			return ret;
		ddtx_proto_progress(pep);
	}
}

/*
 * l: the message's cached layout (a handle's) when known: its compiled kernels gather.
 * copy_ns (if not NULL): how long the copy into the wire took, from the claim of room that
 * succeeded (a wait for room is the receiver's pace, not the copy's cost: timed with it, 32 KiB
 * messages streaming took 5-13 us where the stream moved one every 1.8).
 */
static int send_eager_now(struct ddtx_proto_ep *pep, ddtx_peer_t peer, const struct iovec *iov,
			  size_t count, size_t total, uint64_t tag, uint64_t data, uint16_t hflags,
			  uint32_t tx_id, struct ddtx_layout *l, const struct ddtx_iov_vec *vec,
			  bool streaming, uint64_t *copy_ns)
{
	struct ddtx_hdr_eager h;
	ddtx_hdr_init(&h.base, DDTX_MSG_EAGER, hflags);
	h.tag = tag;
	h.data = data;
	h.len = total;
	h.tx_id = tx_id;
	h.reserved2 = 0;
	if (count <= pep->caps->max_sge && !streaming) {
		ddtx_ack_carry(pep, peer, &h.base);
		int ret = send_now(pep, peer, &h, sizeof(h), iov, count, copy_ns);
		if (ret)
			ddtx_ack_uncarry(pep, peer, &h.base);
		return ret;
	}
	/* More entries than one work request gathers, or a copy by streaming stores: packed in
	 * place behind the header. */
	struct ddtx_wire_send_buf buf;
	int ret = wire_claim(pep, peer, sizeof(h) + total, &buf);
	if (ret == -FI_EAGAIN) {
		ddtx_proto_progress(pep);
		ret = wire_claim(pep, peer, sizeof(h) + total, &buf);
	}
	if (ret)
		return ret;
	uint64_t t0 = copy_ns ? ddtx_time_ns() : 0;
	ddtx_ack_carry(pep, peer, &h.base);
	memcpy(buf.data, &h, sizeof(h));
	uint8_t *payload = (uint8_t *)buf.data + sizeof(h);
	if (streaming && count == 1)
		ddtx_copy_streaming(payload, iov[0].iov_base, total);
	else if (streaming)
		ddtx_pack_gather_streaming(pep->pd->layouts, l, iov, count, 0, payload, total);
	else if (vec->n)
		ddtx_vec_gather(vec, 0, payload, total);
	else
		ddtx_pack_gather(pep->pd->layouts, l, iov, count, 0, payload, total);
	ddtx_wire_send_commit(pep->wire, &buf, sizeof(h) + total);
	if (copy_ns)
		*copy_ns = ddtx_time_ns() - t0;
	return 0;
}

/* A sample of the sends (and the tries) timed: the sender's half of the eager line of the cost
 * model, which draws the eager/rendezvous boundary (choose.c). */
static int send_eager(struct ddtx_proto_ep *pep, ddtx_peer_t peer, const struct iovec *iov,
		      size_t count, size_t total, uint64_t tag, uint64_t data, uint16_t hflags,
		      uint32_t tx_id, struct ddtx_layout *l, const struct ddtx_iov_vec *vec)
{
	uint64_t ns = 0;
	bool streaming = ddtx_choose_eager_stores(pep, total);
	bool timed = ddtx_choose_time_eager(pep, total);
	int ret = send_eager_now(pep, peer, iov, count, total, tag, data, hflags, tx_id, l, vec,
				 streaming, timed ? &ns : NULL);
	if (!ret)
		ddtx_choose_eager_sent(pep, total, l ? l->st.nblocks : count, streaming,
				       timed ? &ns : NULL);
	return ret;
}

/*
 * An RTS carrying the message's first `first` bytes packed behind it, so that they move (and
 * are scattered at the receiver) while the handshake goes on.  Returns the bytes it carried,
 * or a negative FI_E* (-FI_EAGAIN: no room in the peer's queue, even after progress).
 */
static ssize_t send_rts_first(struct ddtx_proto_ep *pep, struct ddtx_tx *tx,
			      struct ddtx_hdr_rts *rts, size_t first)
{
	struct ddtx_wire_send_buf buf;
	int ret = wire_claim(pep, tx->peer, sizeof(*rts) + 1, &buf);
	if (ret == -FI_EAGAIN) {
		ddtx_proto_progress(pep);
		ret = wire_claim(pep, tx->peer, sizeof(*rts) + 1, &buf);
	}
	if (ret)
		return ret;
	size_t len = DDTX_MIN(first, buf.cap - sizeof(*rts));
	ddtx_ack_carry(pep, tx->peer, &rts->base);
	memcpy(buf.data, rts, sizeof(*rts));
	ddtx_pack_gather(pep->pd->layouts, tx->layout, tx->iov, tx->count, 0,
			 (uint8_t *)buf.data + sizeof(*rts), len);
	ddtx_wire_send_commit(pep->wire, &buf, sizeof(*rts) + len);
	return (ssize_t)len;
}

static int stream_more(struct ddtx_proto_ep *pep, struct ddtx_tx *tx);

/* Does a PACK proposal stream its first chunks (FI_DDTX_PACK_STREAM, else the wire's word)? */
static bool pack_stream(const struct ddtx_proto_ep *pep)
{
	switch (ddtx_settings.pack_stream) {
	case DDTX_PACK_STREAM_SETTING_ON: return true;
	case DDTX_PACK_STREAM_SETTING_OFF: return false;
	default: return pep->caps->pack_stream;
	}
}
static int tx_progress(struct ddtx_proto_ep *pep, struct ddtx_tx *tx);

/* A send to track; with borrow, iov is the list of the layout that tx->layout holds. */
static struct ddtx_tx *tx_new(struct ddtx_proto_ep *pep, const struct iovec *iov, size_t count,
			      bool borrow)
{
	struct ddtx_tx *tx = ddtx_spares_get(&pep->spare_tx, sizeof(*tx));
	if (!tx)
		return NULL;
	tx->iov_borrowed = borrow;
	tx->iov = borrow ? (struct iovec *)iov : ddtx_iov_take(pep, count, &tx->iov_cap);
	tx->id = ddtx_optable_add(&pep->txs, tx);
	if (!tx->iov || !tx->id) {
		if (!borrow)
			ddtx_iov_give(pep, tx->iov, tx->iov_cap);
		if (tx->id)
			ddtx_optable_remove(&pep->txs, tx->id);
		ddtx_spares_put(&pep->spare_tx, tx);
		return NULL;
	}
	if (!borrow)
		memcpy(tx->iov, iov, count * sizeof(*iov));
	tx->count = count;
	ddtx_list_init(&tx->batches);
	ddtx_list_entry_init(&tx->work);
	return tx;
}

void ddtx_tx_free(struct ddtx_proto_ep *pep, struct ddtx_tx *tx)
{
	struct ddtx_layout_cache *lc = pep->pd->layouts;
	struct ddtx_list_entry *it;
	ddtx_list_remove(&tx->work);
	while ((it = ddtx_list_pop_front(&tx->batches)))
		free(ddtx_container_of(it, struct ddtx_batch, entry));
	if (tx->ws)
		ddtx_window_set_put(lc, tx->ws);
	if (tx->pull_reg)
		ddtx_regcache_put(pep->pd->regcache, tx->pull_reg);
	if (tx->pull_ws)
		ddtx_window_set_put(lc, tx->pull_ws);
	if (tx->layout)
		ddtx_layout_put(lc, tx->layout);
	if (tx->id)
		ddtx_optable_remove(&pep->txs, tx->id);
	if (!tx->iov_borrowed)
		ddtx_iov_give(pep, tx->iov, tx->iov_cap);
	ddtx_spares_put(&pep->spare_tx, tx);
}

static void tx_finish(struct ddtx_proto_ep *pep, struct ddtx_tx *tx)
{
	if (tx->t_rts)
		ddtx_choose_rndv_done(pep, tx->total, ddtx_time_ns() - tx->t_rts);
	pep->pd->stats.tx_ops++;
	ddtx_complete_tx(pep, tx->context, tx->cq_flags, tx->report, DDTX_CNTR_SEND);
	ddtx_list_remove(&tx->entry);
	ddtx_tx_free(pep, tx);
}

#define NO_MARK UINT64_MAX

/*
 * tx has chunks to write or waits for the wire to take its last message: ddtx_send_progress
 * visits it.  Only those: with all the active sends walked, 512 sends of 16384 blocks of 8 B
 * waiting for their CTS (nc_bw's window) made each CTS and each progress call touch all of
 * them, 14% of the sender's samples at 4096 blocks a send.
 */
static void tx_work(struct ddtx_proto_ep *pep, struct ddtx_tx *tx)
{
	if (!ddtx_list_linked(&tx->work))
		ddtx_list_push_back(&pep->tx_work, &tx->work);
}

/* Has all that tx sent left this process?  Control messages (a DONE) still queued in pep->ctrl
 * are not in the wire yet: the mark is taken once that queue is empty. */
static bool tx_left(struct ddtx_proto_ep *pep, struct ddtx_tx *tx)
{
	if (!ddtx_list_empty(&pep->ctrl)) {
		tx->wire_mark = NO_MARK;
		return false;
	}
	if (tx->wire_mark == NO_MARK)
		tx->wire_mark = ddtx_wire_send_mark(pep->wire, tx->peer);
	return ddtx_wire_sent(pep->wire, tx->peer, tx->wire_mark);
}

/*
 * Everything is sent: done once it has left this process, or wait for the receiver's ACK
 * (FI_DELIVERY_COMPLETE).  Over tcp;ofi_rxm the last chunks may still wait in the core for our
 * progress; completed then, a ping-pong's rank stopped polling in its barrier and its peer
 * waited for ever on the last chunks (1 run in 20).
 */
static void tx_sent(struct ddtx_proto_ep *pep, struct ddtx_tx *tx)
{
	if (tx->want_ack) {
		tx->state = DDTX_TX_WAIT_ACK;
		return;
	}
	tx->wire_mark = NO_MARK;
	if (tx_left(pep, tx)) {
		tx_finish(pep, tx);
	} else {
		tx->state = DDTX_TX_WAIT_WIRE;
		tx_work(pep, tx);
	}
}

/*
 * The receiver's word on our send tx_id.  Only a send of ours to that very peer that waits for
 * it: a stale, repeated or forged id (another peer's send, one still in its rendezvous, one
 * already acknowledged) is dropped with a warning and changes nothing.
 */
static void ack_one(struct ddtx_proto_ep *pep, ddtx_peer_t src, uint32_t tx_id, int32_t status,
		    bool ipc)
{
	struct ddtx_tx *tx = ddtx_optable_get(&pep->txs, tx_id);
	/* With DDTX_HDR_IPC: the receiver took the CUDA IPC offer of a send waiting for its CTS. */
	if (!tx || tx->peer != src ||
	    (ipc ? !tx->ipc || tx->state != DDTX_TX_WAIT_CTS : tx->state != DDTX_TX_WAIT_ACK)) {
		DDTX_WARN(FI_LOG_EP_DATA, "dropping stale ACK of send %#x from peer %u\n", tx_id,
			  src);
		return;
	}
	if (ipc && !status)
		pep->pd->stats.hmem_ipc_tx++;
	if (status)
		ddtx_tx_fail(pep, tx, ddtx_hdr_status_err(status));
	else
		tx_finish(pep, tx);
}

void ddtx_send_on_ack(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf, size_t len)
{
	const struct ddtx_hdr_ack *h = buf;
	const char *bad = ddtx_check_ack(h, len);
	if (bad) {
		DDTX_WARN(FI_LOG_EP_DATA, "dropping ACK from peer %u: bad %s\n", src, bad);
		return;
	}
	ack_one(pep, src, h->tx_id, h->status, h->base.flags & DDTX_HDR_IPC);
	const uint32_t *more = (const uint32_t *)(h + 1);
	for (size_t i = 0; i < (len - sizeof(*h)) / sizeof(uint32_t); i++)
		ack_one(pep, src, more[i], 0, false);
}

void ddtx_send_on_carried_ack(struct ddtx_proto_ep *pep, ddtx_peer_t src, uint32_t tx_id)
{
	ack_one(pep, src, tx_id, 0, false);
}

/* Free the batches of tx whose writes are all finished; true if none is left. */
static bool tx_drop_idle_batches(struct ddtx_tx *tx)
{
	struct ddtx_list_entry *it, *tmp;
	ddtx_list_foreach_safe(&tx->batches, it, tmp)
	{
		struct ddtx_batch *b = ddtx_container_of(it, struct ddtx_batch, entry);
		if (!b->writes_pending) {
			ddtx_list_remove(&b->entry);
			free(b);
		}
	}
	return ddtx_list_empty(&tx->batches);
}

/*
 * Offer the payload to be read through the windows the registration mapped for the send's
 * layout (see ddtx_choose_pull_windows), listed in out; the set is held until the send ends.
 * The number listed, 0 when not offered (more windows than an RTS lists, none mapped).
 */
static size_t offer_windows(struct ddtx_proto_ep *pep, struct ddtx_tx *tx,
			    struct ddtx_hdr_rts *rts, struct ddtx_desc *out)
{
	struct ddtx_layout *l = tx->layout;
	size_t m = pep->caps->max_mkey_entries;
	if (!l || m < 2 || !ddtx_layout_ready(l) || l->st.total != tx->total)
		return 0;
	size_t chunk = (m - 1) * l->st.min_block; /* the set register_layout maps */
	size_t n = (l->st.total + chunk - 1) / chunk;
	if (n > DDTX_PULL_WINDOWS_MAX ||
	    sizeof(*rts) + n * sizeof(*out) > pep->caps->max_send_size)
		return 0;
	struct ddtx_window_set *ws = ddtx_layout_windows(pep->pd->layouts, l, chunk);
	if (!ws)
		return 0;
	if (ws->n != n) {
		ddtx_window_set_put(pep->pd->layouts, ws);
		return 0;
	}
	for (size_t w = 0; w < n; w++)
		out[w] = (struct ddtx_desc){ ws->mkeys[w]->key, ws->mkeys[w]->len };
	tx->pull_ws = ws;
	rts->base.flags |= DDTX_HDR_PULL | DDTX_HDR_WINDOWS;
	return n;
}

/*
 * Report tx as failed and take it off every queue and out of the id table, so nothing a peer
 * sends can reach it again.  Writes already posted still name its batches in the wire's
 * completion queue: then tx stays allocated (DDTX_TX_FAILED) and the last of those completions
 * frees it (ddtx_batch_complete), never before.
 */
void ddtx_tx_fail(struct ddtx_proto_ep *pep, struct ddtx_tx *tx, int err)
{
	DDTX_INFO(FI_LOG_EP_DATA, "send %u to peer %u failed: %s\n", tx->id, tx->peer,
		  fi_strerror(err));
	ddtx_complete_tx_err(pep, tx->context, tx->cq_flags, 0, err, DDTX_CNTR_SEND);
	ddtx_list_remove(&tx->entry);
	ddtx_list_remove(&tx->work);
	ddtx_optable_remove(&pep->txs, tx->id);
	tx->id = 0;
	if (tx_drop_idle_batches(tx)) {
		ddtx_tx_free(pep, tx);
		return;
	}
	tx->state = DDTX_TX_FAILED;
	ddtx_list_push_back(&pep->tx_failed, &tx->entry);
}

/*
 * Is the wire to dest full, even after a round of progress?  Then a send is refused before its
 * list is read: every send takes a message to its peer (eager, RTS, offer), and the caller
 * retries the same list.  Scanned on every try, a list of 16384 entries (nc_bw's 8-byte blocks,
 * 512 rendezvous in flight to a ring of 64 slots: 40% of the sends refused) made the sender's
 * scan 42% of its time, twice the receiver's.  Anything else (no such peer, not enabled) is for
 * the send's own checks to report.  *peer: dest's wire peer, DDTX_PEER_INVALID when it was not
 * looked up or not found (a second lookup was 30 instructions of an 8 B send).
 */
static bool send_blocked(struct ddtx_proto_ep *pep, fi_addr_t dest, ddtx_peer_t *peer)
{
	*peer = DDTX_PEER_INVALID;
	if (!pep->enabled || ddtx_peer_of(pep, dest, peer))
		return false;   /* ddtx_peer_of writes *peer only when it finds it */
	for (int attempt = 0;; attempt++) {
		if (!ddtx_ctrl_waiting(pep, *peer) && ddtx_wire_send_room(pep->wire, *peer))
			return false;
		if (attempt == 1)
			return true;
		ddtx_proto_progress(pep);
	}
}

ssize_t ddtx_proto_send(struct ddtx_proto_ep *pep, const struct iovec *iov, void **desc,
			size_t count, fi_addr_t dest, uint64_t tag, uint64_t data, void *context,
			uint64_t flags, bool tagged)
{
	struct ddtx_stage *stage = NULL;
	bool ipc = false;            /* offered by CUDA IPC */
	void *offer = NULL;
	size_t offer_len = 0;
	ddtx_proto_domain_progress(pep->pd); /* keys of unmapped MRs revoked before anything moves */
	if (count >= DDTX_POST_PROGRESS_ENTRIES)
		ddtx_proto_progress(pep); /* before reading a long list (proto_internal.h) */
	ddtx_peer_t peer;
	if (send_blocked(pep, dest, &peer))
		return -FI_EAGAIN;
	/* The check sums the list too, and sees whether it is one vector: one pass over a long
	 * list instead of three (a perf profile of 64 B blocks over the ofi wire spent 9% of its
	 * samples in such passes; of 8 B blocks over shm, eager, 34% in the check and the walk). */
	const struct iovec *checked = iov;
	size_t checked_count = count, checked_total = 0;
	struct ddtx_iov_vec vec;
	int ret = ddtx_iov_scan(iov, count, pep->attr.tx_iov_limit, &checked_total, &vec);
	if (ret) {
		DDTX_WARN(FI_LOG_EP_DATA, "send: invalid iov list (count %zu)\n", count);
		return ret;
	}
	struct fi_ddtx_layout *handle = ddtx_handle_of(desc, iov, count);
	struct ddtx_layout *hl = NULL; /* the handle's cached layout: our reference */
	if (handle && (ret = ddtx_handle_use(handle, iov, &hl, &iov, &count)))
		goto out;
	/* Device memory: sent from a host copy (hmem_stage.c); the handle's layout is not it. */
	ret = ddtx_stage_begin(pep, false, &iov, &count,
			       iov == checked && count == checked_count && vec.n ? &vec : NULL,
			       &context, &flags,
			       !(flags & DDTX_PROTO_NO_COMPLETION) &&
				       (!pep->attr.tx_selective || (flags & FI_COMPLETION)),
			       &stage);
	if (ret)
		goto out;
	if (stage && hl) {
		handle = NULL;
		ddtx_layout_put(pep->pd->layouts, hl);
		hl = NULL;
	} else if (stage) {
		handle = NULL;
	}
	bool as_checked = iov == checked && count == checked_count;
	if (!as_checked || hl || stage)
		vec.n = 0; /* a handle's list or a host copy: not the list scanned */
	size_t total = hl ? hl->st.total : as_checked ? checked_total : ddtx_iov_total(iov, count);
	if ((flags & FI_INJECT) && total > pep->attr.inject_size) {
		ret = -FI_EINVAL;
		goto out;
	}
	if (!pep->enabled) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	if (peer == DDTX_PEER_INVALID && (ret = ddtx_peer_of(pep, dest, &peer)))
		goto out;

	uint64_t cq_flags = FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
	bool report = !(flags & DDTX_PROTO_NO_COMPLETION) &&
		      (!pep->attr.tx_selective || (flags & FI_COMPLETION));
	uint16_t hflags = (uint16_t)((tagged ? DDTX_HDR_TAGGED : 0) |
				     ((flags & FI_REMOTE_CQ_DATA) ? DDTX_HDR_CQ_DATA : 0));
	struct fi_ddtx_stats *st = &pep->pd->stats;
	if (count > st->iov_entries_max)
		st->iov_entries_max = count;

	/* Delivery completion needs the receiver's word; fi_inject has no completion to delay. */
	bool want_ack = (flags & FI_DELIVERY_COMPLETE) && !(flags & DDTX_PROTO_NO_COMPLETION);
	if (want_ack)
		hflags |= DDTX_HDR_ACK_REQ;
	/*
	 * Eager below the boundary the cost model draws (never above FI_DDTX_EAGER_SIZE, nor
	 * the wire's message room).  FI_INJECT is eager whatever its size: the caller may reuse
	 * its buffer (and its iov list) as soon as the call returns, and inject_size is within
	 * one message's room (getinfo).
	 */
	size_t nblocks = hl ? hl->st.nblocks : count;
	bool eager, weighed = false; /* weighed: the boundary chose between eager and not */
	if (flags & FI_INJECT) {
		eager = total <= pep->caps->max_send_size - sizeof(struct ddtx_hdr_eager);
	} else if (total <= eager_limit(pep, peer, total, nblocks, !stage)) {
		weighed = true;
		eager = ddtx_choose_eager(pep, total, nblocks);
	} else {
		eager = false;
	}
	if ((flags & FI_INJECT) && !eager) {
		ret = -FI_EMSGSIZE; /* beyond one message (a ring slot set smaller than inject_size) */
		goto out;
	}
	/* Payload the peer may hold unmatched is bounded (credit.c): beyond it a rendezvous,
	 * which brings none.  Not an FI_INJECT, which goes eagerly whatever it finds (credit.c
	 * says why). */
	if (eager && !(flags & FI_INJECT) && total > ddtx_credit_left(pep, peer)) {
		st->credit_waits++;
		eager = false;
	}
	/* Device memory that may go by CUDA IPC (hmem_ipc.c): a rendezvous offers it, anything
	 * else (eager, or segments that cannot be offered) stages it now.  Many small device
	 * blocks are offered even when small: staged, they would take a kernel on each side. */
	if (ddtx_stage_prefers_ipc(stage))
		eager = false;
	/* Device memory the NIC reads (hmem_direct.c): a rendezvous from the caller's segments,
	 * whatever its size (staged, a small message costs a driver copy on each side). */
	bool direct = ddtx_stage_direct(stage) && total && !(flags & FI_INJECT);
	const struct iovec *staged_iov = iov;
	size_t staged_count = count;
	if (direct) {
		eager = false;
		vec.n = 0;
		if ((ret = ddtx_stage_direct_segments(pep, stage, &iov, &count)))
			goto out;
	} else if (ddtx_stage_deferred(stage)) {
		ipc = !eager && !ddtx_stage_direct(stage) &&
		      !ddtx_stage_ipc_offer(pep, stage, &offer, &offer_len,
					    pep->caps->max_send_size - sizeof(struct ddtx_hdr_rts));
		if (!ipc && (ret = ddtx_stage_fill(pep, stage)))
			goto out;
	}

	if (eager && !want_ack) {
		ret = send_eager(pep, peer, iov, count, total, tag, data, hflags, 0, hl, &vec);
		if (ret == -FI_EAGAIN)
			goto out;
		if (!ret)
			ddtx_credit_spend(pep, peer, total);
		if (ret) {
			ddtx_complete_tx_err(pep, context, cq_flags, 0, -ret, DDTX_CNTR_SEND);
			ret = 0;
			goto out;
		}
		st->tx_ops++;
		ddtx_complete_tx(pep, context, cq_flags, report, DDTX_CNTR_SEND);
		goto out;
	}

	/*
	 * A rendezvous's shape, from the layout cache (or learnt now): its summary, its
	 * readiness, and its list, which the send borrows instead of copying when it is the same
	 * list (a handle's, or the cached copy of these entries).  Copying lists of 16384 8-byte
	 * blocks took 12% of a PACK stream's samples and faulting the copies in 5% more.
	 */
	struct ddtx_layout_cache *lc = pep->pd->layouts;
	struct ddtx_layout *lay = NULL; /* our reference, then the tx's */
	if (!eager) {
		bool hit;
		lay = handle ? hl : ddtx_layout_get_vec(lc, iov, count, &vec, &hit);
		hl = NULL;
		if (direct && !(lay && (ddtx_layout_ready(lay) || !ddtx_layout_register_now(lc, lay)))) {
			/* The NIC refused the device memory: staged after all. */
			DDTX_INFO(FI_LOG_EP_DATA, "send: device memory not registered, staged\n");
			if (lay)
				ddtx_layout_put(lc, lay);
			direct = false;
			iov = staged_iov;
			count = staged_count;
			if ((ret = ddtx_stage_fill(pep, stage)))
				goto out;
			lay = ddtx_layout_get_vec(lc, iov, count, &vec, &hit);
		}
	}
	bool borrow = lay && lay->count == count;
	/* An operation to track: a rendezvous, or an eager send waiting for its ACK. */
	struct ddtx_tx *tx = tx_new(pep, borrow ? lay->iov : iov, eager ? 0 : count, borrow);
	if (!tx) {
		if (lay)
			ddtx_layout_put(lc, lay);
		ret = -FI_ENOMEM;
		goto out;
	}
	tx->layout = lay;
	tx->peer = peer;
	tx->context = context;
	tx->cq_flags = cq_flags;
	tx->report = report;
	tx->want_ack = want_ack;
	tx->tag = tag;
	tx->total = total;
	if (eager) {
		ret = send_eager(pep, peer, iov, count, total, tag, data, hflags, tx->id, hl,
				 &vec);
		if (ret == -FI_EAGAIN) {
			ddtx_tx_free(pep, tx);
			goto out;
		}
		if (!ret)
			ddtx_credit_spend(pep, peer, total);
		tx->state = DDTX_TX_WAIT_ACK;
		ddtx_list_push_back(&pep->tx_active, &tx->entry);
		if (ret) {
			ddtx_tx_fail(pep, tx, -ret);
			ret = 0;
		}
		goto out;
	}
	tx->state = DDTX_TX_WAIT_CTS;

	struct ddtx_layout_stats ls;
	if (tx->layout)
		ls = tx->layout->st;
	else
		ddtx_layout_stats(iov, count, &ls);
	struct ddtx_hdr_rts rts;
	ddtx_hdr_init(&rts.base, DDTX_MSG_RTS, hflags);
	rts.tag = tag;
	rts.data = data;
	rts.total_len = total;
	rts.tx_id = tx->id;
	/* Offering the block to be read (see ddtx_choose_pull): not from device memory (a stage
	 * or an IPC offer).  With FI_DELIVERY_COMPLETE too: a whole pull's PULLED comes after the
	 * receiver read the bytes into its buffer, which is what the ACK would say.  MPICH asks
	 * for delivery completion on every send (its RMA needs it as the endpoint's default), so
	 * its contiguous blocks never went by pull. */
	bool can_pull = !ipc && tx->count == 1 && (!stage || direct);
	if (direct) {
		rts.scheme = ddtx_choose_propose_device(pep, tx->layout);
		rts.base.flags |= DDTX_HDR_DEVICE;
		tx->device = true;
		pep->pd->stats.hmem_direct_tx++;
		pep->pd->stats.hmem_direct_bytes += total;
	} else {
		rts.scheme = ddtx_choose_propose(pep, tx->layout, can_pull);
	}
	if (ddtx_choose_warm(tx->layout))
		rts.base.flags |= DDTX_HDR_WARM;
	/* A contiguous host message the boundary sent by rendezvous: the sender times it, what
	 * the next such choice weighs eager against (choose.c); from a warm layout only (a first
	 * use took 72-290 us at 64 KiB, and kept the class eager in the slow regime). */
	if (weighed && nblocks == 1 && !stage && (rts.base.flags & DDTX_HDR_WARM))
		tx->t_rts = ddtx_time_ns();
	rts.nblocks = ls.nblocks;
	rts.min_block = ls.min_block;
	rts.avg_block = ls.avg_block;
	rts.pull_key = 0;
	rts.pull_addr = 0;
	/* The key comes from the registration cache: a buffer sent from again offers the same key,
	 * and neither side writes or misses on key table lines per message (a fresh key per send
	 * was an insert, a cross-core lookup and a removal). */
	if (can_pull && ddtx_choose_pull(pep, rts.scheme, &ls)) {
		if (!ddtx_regcache_get(pep->pd->regcache, tx->iov[0].iov_base, tx->iov[0].iov_len,
				       DDTX_ACC_REMOTE_READ | DDTX_ACC_LOCAL_READ, &tx->pull_reg)) {
			rts.pull_key = tx->pull_reg->mr->key;
			rts.pull_addr = (uint64_t)(uintptr_t)tx->iov[0].iov_base;
			rts.base.flags |= DDTX_HDR_PULL;
		} else if (!tx->layout || !ddtx_layout_ready(tx->layout)) {
			rts.scheme = FI_DDTX_SCHEME_PACK; /* SGL was proposed for the pull only */
		}
	}
	struct ddtx_desc windows[DDTX_PULL_WINDOWS_MAX];
	size_t nwin = 0;
	if (!ipc && (!stage || direct) && tx->count > 1 &&
	    ddtx_choose_pull_windows(pep, rts.scheme, &ls))
		nwin = offer_windows(pep, tx, &rts, windows);
	/* No first chunk from device memory: the CPU cannot read it. */
	size_t first = ipc || nwin || direct
			       ? 0
			       : ddtx_choose_first_chunk(pep, rts.scheme, tx->layout, &ls,
							 pep->caps->max_send_size - sizeof(rts));
	first = DDTX_MIN(first, ddtx_credit_left(pep, peer));
	if (ipc || nwin) {
		/* The offer, or the windows, in place of a first chunk; the scheme proposed is
		 * for a decline. */
		struct iovec o = { offer, offer_len };
		if (ipc) {
			rts.base.flags |= DDTX_HDR_IPC;
			tx->ipc = true;
		} else {
			o = (struct iovec){ windows, nwin * sizeof(windows[0]) };
		}
		ddtx_ack_carry(pep, peer, &rts.base);
		ret = send_now(pep, peer, &rts, sizeof(rts), &o, 1, NULL);
	} else if (first) {
		ssize_t n = send_rts_first(pep, tx, &rts, first);
		tx->inlined = tx->streamed = n > 0 ? (size_t)n : 0;
		ddtx_credit_spend(pep, peer, tx->inlined);
		ret = n < 0 ? (int)n : 0;
	} else {
		ddtx_ack_carry(pep, peer, &rts.base);
		ret = send_now(pep, peer, &rts, sizeof(rts), NULL, 0, NULL);
	}
	if (ret)
		ddtx_ack_uncarry(pep, peer, &rts.base);
	if (ret == -FI_EAGAIN) {
		ddtx_tx_free(pep, tx);
		goto out;
	}
	ddtx_list_push_back(&pep->tx_active, &tx->entry);
	if (!ret && pack_stream(pep) && rts.scheme == FI_DDTX_SCHEME_PACK &&
	    !(rts.base.flags & (DDTX_HDR_IPC | DDTX_HDR_PULL | DDTX_HDR_WINDOWS | DDTX_HDR_DEVICE))) {
		tx->streaming = true;
		tx_work(pep, tx);
		ret = stream_more(pep, tx);
	}
	if (ret) {
		ddtx_tx_fail(pep, tx, -ret);
		ret = 0;
	}
out:
	free(offer);
	if (hl)
		ddtx_layout_put(pep->pd->layouts, hl);
	if (ret)
		ddtx_stage_abort(pep, stage); /* not posted: nothing will complete it */
	return ret;
}

/* Post the writes of one CTS batch: each descriptor gets local pieces of at most max_sge. */
static void batch_post(struct ddtx_proto_ep *pep, struct ddtx_batch *b)
{
	struct ddtx_tx *tx = b->tx;
	const struct ddtx_wire_caps *caps = pep->caps;
	struct ddtx_iov_cursor cur;
	struct iovec pieces[caps->max_sge];

	ddtx_iov_cursor_init(&cur, tx->iov, tx->count);
	ddtx_iov_cursor_seek(&cur, b->offset);
	/* UMR with local windows: one write per window pair, gathered by the local mkey. */
	for (uint32_t i = 0; b->local_ws && i < b->ndesc && !b->status; i++) {
		int ret = ddtx_wire_write_mkey(pep->wire, tx->peer,
					       b->local_ws->mkeys[b->first_window + i], 0,
					       DDTX_KEY_INTERNAL, b->desc[i].key, 0, b->desc[i].len, b);
		if (ret)
			b->status = -ret;
		else
			b->writes_pending++;
	}
	for (uint32_t i = 0; !b->local_ws && i < b->ndesc && !b->status; i++) {
		uint64_t roff = 0;
		while (roff < b->desc[i].len) {
			size_t want = DDTX_MIN(b->desc[i].len - roff, caps->max_rma_size);
			size_t n;
			size_t got = ddtx_iov_cursor_take(&cur, want, caps->max_sge, pieces, &n);
			if (!got) {
				b->status = FI_EIO; /* the receiver described more than we offered */
				break;
			}
			int ret = ddtx_wire_write(pep->wire, tx->peer, pieces, n,
						  DDTX_KEY_INTERNAL, b->desc[i].key, roff, got, b);
			if (ret) {
				b->status = -ret;
				break;
			}
			b->writes_pending++;
			roff += got;
		}
	}
	b->posted = true;
	if (!b->writes_pending)
		ddtx_batch_complete(pep, b, 0);
}

void ddtx_batch_complete(struct ddtx_proto_ep *pep, struct ddtx_batch *b, int status)
{
	if (status && !b->status)
		b->status = status;
	if (b->writes_pending || !b->posted)
		return;
	struct ddtx_tx *tx = b->tx;
	if (tx->state == DDTX_TX_FAILED) {
		/* Already reported: this was one of the writes it waited for. */
		ddtx_list_remove(&b->entry);
		free(b);
		if (tx_drop_idle_batches(tx)) {
			ddtx_list_remove(&tx->entry);
			ddtx_tx_free(pep, tx);
		}
		return;
	}
	uint64_t bytes = 0;
	for (uint32_t i = 0; i < b->ndesc; i++)
		bytes += b->desc[i].len;

	struct ddtx_hdr_done done;
	ddtx_hdr_init(&done.base, DDTX_MSG_DONE, 0);
	done.rx_id = tx->rx_id;
	done.status = b->status ? -b->status : 0;
	done.offset = b->offset;
	ddtx_ctrl_send(pep, tx->peer, &done, sizeof(done));

	int err = b->status;
	ddtx_list_remove(&b->entry);
	free(b);
	if (err) {
		ddtx_tx_fail(pep, tx, err);
		return;
	}
	tx->sent += bytes;
	if (!ddtx_list_empty(&tx->batches))
		return;
	if (tx->sent >= tx->accepted) {
		if (!tx->split_pending)
			tx_sent(pep, tx); /* else the receiver's PULLED ends it */
	} else if (tx->abandoned) {
		ddtx_tx_fail(pep, tx, FI_EIO);
	}
}

/*
 * A declined IPC offer whose device data cannot be staged either (freed memory): tell the
 * receiver (DONE with the error, at the offset its CTS started) and fail the send.
 */
static void ipc_fill_failed(struct ddtx_proto_ep *pep, struct ddtx_tx *tx,
			    const struct ddtx_hdr_cts *cts, int err)
{
	struct ddtx_hdr_done d;
	ddtx_hdr_init(&d.base, DDTX_MSG_DONE, 0);
	d.rx_id = cts->rx_id;
	d.status = -err;
	d.offset = cts->offset;
	if (cts->accepted)
		ddtx_ctrl_send(pep, tx->peer, &d, sizeof(d));
	pep->pd->stats.hmem_copy_errors++;
	ddtx_tx_fail(pep, tx, err);
}

static void cts_refused(struct ddtx_proto_ep *pep, ddtx_peer_t src, struct ddtx_tx *tx,
			const char *field)
{
	DDTX_WARN(FI_LOG_EP_DATA, "CTS from peer %u for send %u: bad %s, failing the send\n", src,
		  tx->id, field);
	ddtx_tx_fail(pep, tx, FI_EIO);
}

/*
 * UMR: the receiver's window keys arrive in the CTS, or are the list this endpoint cached from
 * an earlier CTS of the same window set (remote mkey cache).  One batch writes every window.
 */
static void umr_start(struct ddtx_proto_ep *pep, struct ddtx_tx *tx, const struct ddtx_hdr_cts *cts)
{
	const struct ddtx_desc *desc = (const void *)(cts + 1);
	size_t chunk = cts->chunk, nwin = tx->accepted / chunk + (tx->accepted % chunk != 0);
	const uint64_t *keys;
	uint64_t *list = NULL;
	if (cts->base.flags & DDTX_HDR_CACHED) {
		const struct ddtx_rmkey_entry *e = ddtx_rmkey_find(&pep->rmkeys, tx->peer,
								   cts->wset_id);
		if (!e || e->chunk != chunk || e->n < nwin) {
			/* Not (or no longer) cached here: ask for the list. */
			struct ddtx_hdr_list_req req;
			ddtx_hdr_init(&req.base, DDTX_MSG_LIST_REQ, 0);
			req.rx_id = tx->rx_id;
			req.reserved2 = 0;
			ddtx_ctrl_send(pep, tx->peer, &req, sizeof(req));
			return;
		}
		keys = e->keys;
	} else {
		if (cts->ndesc < nwin) {
			ddtx_tx_fail(pep, tx, FI_EIO);
			return;
		}
		list = malloc(cts->ndesc * sizeof(*list));
		if (!list) {
			ddtx_tx_fail(pep, tx, FI_ENOMEM);
			return;
		}
		for (uint32_t i = 0; i < cts->ndesc; i++)
			list[i] = desc[i].key;
		ddtx_rmkey_insert(&pep->rmkeys, tx->peer, cts->wset_id, chunk, list, cts->ndesc);
		keys = list;
	}
	struct ddtx_batch *b = calloc(1, sizeof(*b) + nwin * sizeof(b->desc[0]));
	if (!b) {
		free(list);
		ddtx_tx_fail(pep, tx, FI_ENOMEM);
		return;
	}
	b->kind = DDTX_WR_BATCH;
	b->tx = tx;
	b->ndesc = (uint32_t)nwin;
	for (size_t w = 0; w < nwin; w++) {
		b->desc[w].key = keys[w];
		b->desc[w].len = DDTX_MIN(chunk, tx->accepted - w * chunk);
	}
	free(list);
	/* Our own windows of the same chunk, if our layout is registered and keys are at hand. */
	if (tx->layout && ddtx_layout_ready(tx->layout))
		tx->ws = ddtx_layout_windows(pep->pd->layouts, tx->layout, chunk);
	b->local_ws = tx->ws;
	tx->umr_started = true;
	ddtx_list_push_back(&tx->batches, &b->entry);
	batch_post(pep, b);
}

void ddtx_send_on_cts(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf, size_t len)
{
	const struct ddtx_hdr_cts *cts = buf;
	struct ddtx_tx *tx = ddtx_optable_get(&pep->txs, cts->tx_id);
	if (!tx || tx->peer != src) {
		DDTX_WARN(FI_LOG_EP_DATA, "dropping a CTS from peer %u for send %u: no such send "
			  "to that peer\n", src, cts->tx_id);
		return;
	}
	const char *bad = ddtx_check_cts(tx, cts, len);
	if (bad) {
		cts_refused(pep, src, tx, bad);
		return;
	}
	if (cts->base.flags & DDTX_HDR_PULLED) {
		/* The receiver read the payload (checked: a pull this send offered), or its part of
		 * a split one: then the send is done once its own writes are. */
		if (tx->split_pending) {
			tx->split_pending = false;
			if (ddtx_list_empty(&tx->batches) && tx->sent >= tx->accepted)
				tx_sent(pep, tx);
			return;
		}
		tx->scheme = FI_DDTX_SCHEME_SGL;
		tx->accepted = cts->accepted;
		tx_finish(pep, tx);
		return;
	}
	if (tx->state == DDTX_TX_WAIT_CTS && tx->ipc) {
		/* The receiver declined the CUDA IPC offer: the device data goes staged after all. */
		tx->ipc = false;
		pep->pd->stats.hmem_ipc_tx_staged++;
		int ret = cts->accepted ? ddtx_stage_fill(pep, ddtx_stage_of(pep, tx->context)) : 0;
		if (ret) {
			ipc_fill_failed(pep, tx, cts, -ret);
			return;
		}
	}
	if (tx->state == DDTX_TX_WAIT_CTS) {
		tx->streaming = false;
		tx->scheme = (enum fi_ddtx_scheme)cts->scheme;
		tx->accepted = cts->accepted;
		tx->rx_id = cts->rx_id;
		tx->chunk = cts->chunk;
		/* Only on a wire whose chunks cross cores through memory: elsewhere the NIC or
		 * the kernel reads them from this core's cache. */
		tx->streaming_stores = tx->scheme == FI_DDTX_SCHEME_PACK && pep->caps->pack_stores &&
				       cts->chunk == DDTX_STORES_STREAMING;
		if (!tx->accepted) {
			tx_finish(pep, tx);
			return;
		}
		tx->state = tx->scheme == FI_DDTX_SCHEME_PACK ? DDTX_TX_PACK : DDTX_TX_ZCOPY;
		if (cts->base.flags & DDTX_HDR_SPLIT) {
			/* A split pull: the receiver reads [0, offset) itself (checked). */
			tx->split_pending = true;
			tx->described = tx->sent = cts->offset;
		}
		if (tx->state == DDTX_TX_PACK) {
			/* The RTS carried the first bytes, STREAM chunks may have followed: the
			 * receiver counts them as received. */
			tx->sent = DDTX_MIN(tx->streamed, tx->accepted);
			tx_work(pep, tx);
			tx_progress(pep, tx);
			return;
		}
	}
	/* UMR with a cached window set: one CTS names it; otherwise batches as for SGL. */
	if (tx->scheme == FI_DDTX_SCHEME_UMR && cts->wset_id) {
		if (!tx->umr_started)
			umr_start(pep, tx, cts);
		return;
	}
	if (!cts->ndesc) {
		DDTX_INFO(FI_LOG_EP_DATA, "receiver of send %u gave up\n", tx->id);
		tx->abandoned = true;
		if (ddtx_list_empty(&tx->batches))
			ddtx_tx_fail(pep, tx, FI_EIO);
		return;
	}
	if (tx->umr_started || (bad = ddtx_check_cts_batch(tx, cts))) {
		cts_refused(pep, src, tx, bad ? bad : "wset_id");
		return;
	}
	const struct ddtx_desc *desc = (const void *)(cts + 1);
	struct ddtx_batch *b = calloc(1, sizeof(*b) + cts->ndesc * sizeof(*desc));
	if (!b) {
		ddtx_tx_fail(pep, tx, FI_ENOMEM);
		return;
	}
	b->kind = DDTX_WR_BATCH;
	b->tx = tx;
	b->offset = cts->offset;
	b->ndesc = cts->ndesc;
	memcpy(b->desc, desc, cts->ndesc * sizeof(*desc));
	for (uint32_t i = 0; i < b->ndesc; i++)
		tx->described += b->desc[i].len;
	ddtx_list_push_back(&tx->batches, &b->entry);
	batch_post(pep, b);
}

/*
 * PACK chunks: a message is cut into at least PACK_PARTS chunks (none under PACK_MIN_CHUNK) so
 * that the receiver scatters chunk i while the sender gathers chunk i + 1; one slot-sized chunk
 * per 64 KiB would leave a 128 KiB message with almost no overlap.  Up to a few MiB, chunks of
 * at most PACK_MID_CHUNK, or a PACK_FINE-th of the message if that is more: 1 MiB as 16 KiB
 * chunks instead of 64 KiB took 14% less one-way in 1 KiB and 256 B blocks, 8% in 64 B, 4% in
 * 4 KiB (nc_bw -c pack ping-pong; 256 KiB: 4-7% less than as 32 KiB chunks), while 32 MiB in
 * 16 KiB chunks took up to 13% more than in 64 KiB ones (a message and a progress round per
 * chunk): the lines a chunk brings into the other core's cache are fewer, and the receiver
 * starts sooner.
 */
#define PACK_PARTS 8
#define PACK_MIN_CHUNK 8192
#define PACK_MID_CHUNK 16384
#define PACK_FINE 64
/* Chunks stay within 64 KiB where the shm wire's slot holds 128 KiB (for eager messages,
 * wire/shm/shm.h): 64 ring slots of 128 KiB chunks would cycle through twice the lines. */
#define PACK_MAX_CHUNK 65536

static size_t pack_part(size_t accepted)
{
	size_t part = DDTX_MAX(accepted / PACK_PARTS, (size_t)PACK_MIN_CHUNK);
	return DDTX_MIN(part, DDTX_MAX(accepted / PACK_FINE, (size_t)PACK_MID_CHUNK));
}

/*
 * Gather the next bytes of tx's payload, from offset and before end, straight into the peer's
 * queue behind a DATA header (id: the receive's) or a STREAM one (id: our send's; the two
 * headers are alike).  Returns the bytes it moved, or a negative FI_E* (-FI_EAGAIN: no room).
 */
static ssize_t chunk_one(struct ddtx_proto_ep *pep, struct ddtx_tx *tx, uint8_t type, uint32_t id,
			 size_t offset, size_t end)
{
	struct ddtx_wire_send_buf buf;
	int ret = wire_claim(pep, tx->peer, sizeof(struct ddtx_hdr_data) + 1, &buf);
	if (ret)
		return ret;
	struct ddtx_hdr_data *h = buf.data;
	size_t room = buf.cap - sizeof(*h);
	/* A wire whose message costs more than the overlap of smaller chunks buys (caps.pack_fill:
	 * the ofi wire), or holds under two minimum chunks: fill each message. */
	size_t part = pep->caps->pack_fill || room < 2 * PACK_MIN_CHUNK
			      ? room
			      : DDTX_MIN(pack_part(end), (size_t)PACK_MAX_CHUNK);
	size_t len = DDTX_MIN(DDTX_MIN(end - offset, room), part);
	ddtx_hdr_init(&h->base, type, 0);
	ddtx_ack_carry(pep, tx->peer, &h->base);
	h->rx_id = id;
	h->reserved2 = 0;
	h->offset = offset;
	h->len = len;
	if (tx->streaming_stores) {
		ddtx_pack_gather_streaming(pep->pd->layouts, tx->layout, tx->iov, tx->count, offset,
					   h + 1, len);
		pep->pd->stats.pack_streaming_bytes += len;
	} else {
		ddtx_pack_gather(pep->pd->layouts, tx->layout, tx->iov, tx->count, offset, h + 1,
				 len);
	}
	ddtx_wire_send_commit(pep->wire, &buf, sizeof(*h) + len);
	return (ssize_t)len;
}

_Static_assert(sizeof(struct ddtx_hdr_stream) == sizeof(struct ddtx_hdr_data), "STREAM as DATA");
_Static_assert(offsetof(struct ddtx_hdr_stream, tx_id) == offsetof(struct ddtx_hdr_data, rx_id),
	       "STREAM's id where DATA's is");
_Static_assert(offsetof(struct ddtx_hdr_stream, offset) == offsetof(struct ddtx_hdr_data, offset),
	       "STREAM's offset where DATA's is");

/* PACK: the next chunk after the CTS. */
static int pack_one(struct ddtx_proto_ep *pep, struct ddtx_tx *tx)
{
	ssize_t n = chunk_one(pep, tx, DDTX_MSG_DATA, tx->rx_id, tx->sent, tx->accepted);
	if (n < 0)
		return (int)n;
	tx->sent += (size_t)n;
	return 0;
}

/*
 * STREAM: chunks of a PACK proposal before its CTS, while the peer's queue has room, up to
 * DDTX_STREAM_MAX bytes of the message.  A receiver decides PACK for a PACK proposal, and on a
 * wire with a long round trip (caps.pack_stream) waiting for its CTS left the wire idle: over
 * tcp between the two namespace hosts a 192 KiB PACK message took 77 us where a pull took 59.
 */
static int stream_more(struct ddtx_proto_ep *pep, struct ddtx_tx *tx)
{
	size_t end = DDTX_MIN(tx->total, DDTX_STREAM_MAX);
	while (tx->streaming && tx->streamed < end) {
		/* Chunks ahead of the CTS spend credit (credit.c); without it, DATA after. */
		uint64_t left = ddtx_credit_left(pep, tx->peer);
		if (!left)
			return 0;
		size_t stop = (size_t)DDTX_MIN((uint64_t)end, tx->streamed + left);
		ssize_t n = chunk_one(pep, tx, DDTX_MSG_STREAM, tx->id, tx->streamed, stop);
		if (n == -FI_EAGAIN)
			return 0;
		if (n < 0)
			return (int)n;
		ddtx_credit_spend(pep, tx->peer, (uint64_t)n);
		tx->streamed += (size_t)n;
		pep->pd->stats.stream_bytes += (size_t)n;
	}
	return 0;
}

/*
 * One send of pep->tx_work, which leaves the list once it has nothing for the walk to do.
 * Returns -FI_EAGAIN when the wire to its peer had no room for its next chunk.
 */
static int tx_progress(struct ddtx_proto_ep *pep, struct ddtx_tx *tx)
{
	int ret = 0;
	if (tx->state == DDTX_TX_WAIT_WIRE) {
		if (tx_left(pep, tx))
			tx_finish(pep, tx);
		return 0;
	}
	if (tx->state == DDTX_TX_WAIT_CTS && tx->streaming) {
		if ((ret = stream_more(pep, tx))) {
			ddtx_tx_fail(pep, tx, -ret);
			return 0;
		}
		if (tx->streamed < DDTX_MIN(tx->total, DDTX_STREAM_MAX))
			return -FI_EAGAIN;
		ddtx_list_remove(&tx->work); /* its CTS brings it back */
		return 0;
	}
	if (tx->state != DDTX_TX_PACK) {
		ddtx_list_remove(&tx->work);
		return 0;
	}
	while (tx->sent < tx->accepted && !(ret = pack_one(pep, tx)))
		;
	if (ret == -FI_EAGAIN)
		return ret;
	ddtx_list_remove(&tx->work);
	if (ret)
		ddtx_tx_fail(pep, tx, -ret);
	else
		tx_sent(pep, tx);
	return 0;
}

void ddtx_send_progress(struct ddtx_proto_ep *pep)
{
	struct ddtx_list_entry *it, *tmp;
	bool full = false;
	ddtx_peer_t full_peer = 0;
	ddtx_list_foreach_safe(&pep->tx_work, it, tmp)
	{
		struct ddtx_tx *tx = ddtx_container_of(it, struct ddtx_tx, work);
		ddtx_peer_t peer = tx->peer;
		/* The wire that had no room for one send's chunk has none for the next send's:
		 * it waits for the next walk. */
		if (full && peer == full_peer && tx->state != DDTX_TX_WAIT_WIRE)
			continue;
		if (tx_progress(pep, tx) == -FI_EAGAIN) {
			full = true;
			full_peer = peer;
		}
	}
}
