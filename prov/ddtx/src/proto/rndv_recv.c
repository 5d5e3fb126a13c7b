/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Receiver side of the rendezvous: decide the scheme, send CTS batches (PACK and SGL accept
 * ranges, UMR window lists), take DATA and DONE, complete.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/layout.h"
#include "engine/pack.h"
#include "proto/proto_internal.h"

/* CTS batches kept in flight per receive, and descriptors per batch. */
#define RX_BATCHES_IN_FLIGHT 2
#define RX_DESC_PER_BATCH 64

/* A CTS for rx: a batch of ndesc descriptors from offset (UMR: the window list, or none). */
static void send_cts_full(struct ddtx_proto_ep *pep, struct ddtx_rx *rx, uint64_t offset,
			  const struct ddtx_desc *desc, uint32_t ndesc, uint16_t flags,
			  uint64_t chunk, uint64_t wset_id)
{
	size_t len = sizeof(struct ddtx_hdr_cts) + ndesc * sizeof(*desc);
	uint8_t small[sizeof(struct ddtx_hdr_cts) + RX_DESC_PER_BATCH * sizeof(struct ddtx_desc)];
	uint8_t *msg = len <= sizeof(small) ? small : malloc(len);
	if (!msg) {
		DDTX_WARN(FI_LOG_EP_DATA, "out of memory for a CTS\n");
		return;
	}
	struct ddtx_hdr_cts *cts = (struct ddtx_hdr_cts *)msg;
	ddtx_hdr_init(&cts->base, DDTX_MSG_CTS, flags);
	cts->tx_id = rx->tx_id;
	cts->rx_id = rx->id;
	cts->accepted = rx->accepted;
	cts->offset = offset;
	cts->scheme = rx->scheme;
	cts->ndesc = ndesc;
	cts->chunk = chunk;
	cts->wset_id = wset_id;
	if (ndesc)
		memcpy(cts + 1, desc, ndesc * sizeof(*desc));
	uint64_t queued = ddtx_ctrl_send(pep, rx->peer, msg, len);
	if (queued)
		rx->cts_queued = queued;
	if (msg != small)
		free(msg);
}

void ddtx_rndv_send_cts(struct ddtx_proto_ep *pep, struct ddtx_rx *rx, uint64_t offset,
			const struct ddtx_desc *desc, uint32_t ndesc, uint16_t flags)
{
	/* A PACK CTS's chunk field asks for the sender's stores (docs/wire-protocol.md). */
	uint64_t chunk = rx->scheme == FI_DDTX_SCHEME_PACK ? rx->pack_stores : rx->chunk;
	send_cts_full(pep, rx, offset, desc, ndesc, flags, chunk, 0);
}

/* Entries one receiver key may hold: a posted SGL (SGL) or an mkey window (UMR). */
static size_t desc_entries(const struct ddtx_proto_ep *pep, const struct ddtx_rx *rx)
{
	size_t m = pep->caps->max_mkey_entries;
	if (rx->scheme == FI_DDTX_SCHEME_UMR)
		return m;
	/* Without multi-entry keys a key is one registered piece (verbs on non-mlx5). */
	return m ? DDTX_MIN(pep->caps->max_sge, m) : 1;
}

/*
 * Describe the next part of the receive buffer: register up to RX_DESC_PER_BATCH keys and send
 * them in one CTS.  UMR descriptors never cross a window boundary (multiples of rx->chunk), so
 * both sides cut the stream at the same offsets.
 */
static int issue_batch(struct ddtx_proto_ep *pep, struct ddtx_rx *rx)
{
	size_t entries = desc_entries(pep, rx);
	struct ddtx_rbatch *rb = calloc(1, sizeof(*rb) + RX_DESC_PER_BATCH * sizeof(rb->mr[0]));
	struct ddtx_desc desc[RX_DESC_PER_BATCH];
	struct iovec pieces[entries];
	if (!rb)
		return -FI_ENOMEM;
	rb->offset = rx->cur.pos;
	int ret = 0;
	while (rb->nmr < RX_DESC_PER_BATCH && rx->cur.pos < rx->accepted) {
		size_t want = DDTX_MIN(rx->accepted - rx->cur.pos, pep->caps->max_rma_size);
		if (rx->scheme == FI_DDTX_SCHEME_UMR)
			want = DDTX_MIN(want, rx->chunk - rx->cur.pos % rx->chunk);
		struct ddtx_iov_cursor save = rx->cur;
		size_t n;
		size_t got = ddtx_iov_cursor_take(&rx->cur, want, entries, pieces, &n);
		struct ddtx_wire_mr *mr;
		ret = ddtx_wire_mr_reg(pep->pd->wire, pieces, n, DDTX_KEY_INTERNAL, NULL, 0,
				       DDTX_ACC_REMOTE_WRITE | DDTX_ACC_LOCAL_WRITE, &mr);
		if (ret) {
			rx->cur = save;
			break;
		}
		desc[rb->nmr].key = mr->key;
		desc[rb->nmr].len = got;
		rb->mr[rb->nmr++] = mr;
		rb->len += got;
	}
	if (!rb->nmr) {
		free(rb);
		/* Out of keys with nothing in flight cannot resolve itself. */
		return ret ? ret : -FI_EAGAIN;
	}
	ddtx_list_push_back(&rx->rbatches, &rb->entry);
	uint16_t flags = rx->cur.pos >= rx->accepted ? DDTX_HDR_LAST : 0;
	if (rx->split && rb->offset == rx->split)
		flags |= DDTX_HDR_SPLIT;
	ddtx_rndv_send_cts(pep, rx, rb->offset, desc, rb->nmr, flags);
	return 0;
}

static size_t batches_in_flight(const struct ddtx_rx *rx)
{
	size_t n = 0;
	for (const struct ddtx_list_entry *e = rx->rbatches.head.next; e != &rx->rbatches.head;
	     e = e->next)
		n++;
	return n;
}

static void rx_fill_batches(struct ddtx_proto_ep *pep, struct ddtx_rx *rx)
{
	while (rx->cur.pos < rx->accepted && batches_in_flight(rx) < RX_BATCHES_IN_FLIGHT) {
		int ret = issue_batch(pep, rx);
		if (ret && !rx->cur.pos && !batches_in_flight(rx)) {
			/* Nothing described yet, the sender still waits for its first CTS:
			 * move this message by packing instead of failing it. */
			DDTX_INFO(FI_LOG_EP_DATA, "receive %u: no keys for zero copy (%s), "
				  "packing\n", rx->id, fi_strerror(-ret));
			rx->scheme = FI_DDTX_SCHEME_PACK;
			rx->chunk = 0;
			ddtx_rndv_send_cts(pep, rx, 0, NULL, 0, DDTX_HDR_LAST);
			return;
		}
		if (ret) {
			if (!batches_in_flight(rx)) {
				/* Tell the sender to stop, and fail the receive. */
				ddtx_rndv_send_cts(pep, rx, rx->cur.pos, NULL, 0, DDTX_HDR_LAST);
				ddtx_rx_fail(pep, rx, ret == -FI_EAGAIN ? FI_ENOSPC : -ret);
			}
			return;
		}
	}
}

/* Report rx's completion and free it. */
static void rx_complete(struct ddtx_proto_ep *pep, struct ddtx_rx *rx)
{
	void *buf = NULL;
	uint64_t mf = 0;
	if (rx->parent) {
		rx->parent->multi_children--;
		mf = ddtx_rx_multi_flags(pep, rx->parent);
		buf = rx->iov[0].iov_base;
	}
	ddtx_list_remove(&rx->entry);
	ddtx_rx_report(pep, rx, rx->offered, rx->accepted, rx->msg_tag, rx->msg_data, rx->hdr_flags,
		  rx->from, buf, mf);
	ddtx_rx_free(pep, rx);
}

/*
 * Every byte is in place.  The receive completes once its CTS has left this process: it may
 * still wait in pep->ctrl (the peer's queue was full) when the bytes came before it (STREAM
 * chunks), and the sender's send finishes only with that CTS.
 * Completed at once, an application that then stopped calling the provider left its peer
 * waiting for ever (nc_bw's ping-pong rank in its barrier, a trial build with STREAM on the
 * shm wire; the ofi wire streams).
 */
static void rx_finish(struct ddtx_proto_ep *pep, struct ddtx_rx *rx)
{
	/* Every timed rendezvous between warm layouts teaches the cost model what its scheme
	 * costs on this wire (PACK: by cached stores, pack_stores.c). */
	bool warm = (rx->hdr_flags & DDTX_HDR_WARM) && ddtx_choose_warm(rx->cached);
	bool pack_sample = ddtx_pack_stores_observe(pep, rx);
	if (rx->t_start && rx->accepted) {
		/* Service time, not latency: with several rendezvous in flight, one that waited
		 * behind the others is timed from when the previous one finished (engine/cost.h).
		 * A contiguous one's way learns it whatever PACK's stores were: left out with the
		 * cost model's samples, a try of PACK by streaming stores was never judged and
		 * lasted its 256 choices (fabtests' tagged pingpong, 32 KiB, slow regime: 1300-1900
		 * of 5000 transfers by PACK, 15 us each, where the pull took 5). */
		ddtx_choose_observe(pep, rx->pulled_windows ? DDTX_COST_PULL : rx->scheme,
				    rx->contig_way, rx->t_start, rx->accepted,
				    rx->sender_blocks + rx->layout.nblocks, warm, rx->cached,
				    pack_sample);
	}
	ddtx_count_scheme(pep, rx->scheme, rx->accepted);
	/* accepted == 0 was answered by an empty CTS, which completes the sender already. */
	if ((rx->hdr_flags & DDTX_HDR_ACK_REQ) && rx->accepted)
		ddtx_ack_owe(pep, rx->peer, rx->tx_id, false);
	if (rx->cts_queued && !ddtx_ctrl_left(pep, rx->cts_queued)) {
		ddtx_ctrl_flush(pep);
		if (!ddtx_ctrl_left(pep, rx->cts_queued)) {
			ddtx_list_remove(&rx->entry);
			ddtx_list_push_back(&pep->rx_held, &rx->entry);
			return;
		}
	}
	rx_complete(pep, rx);
}

void ddtx_rndv_release_held(struct ddtx_proto_ep *pep)
{
	struct ddtx_list_entry *it, *tmp;
	ddtx_list_foreach_safe(&pep->rx_held, it, tmp)
	{
		struct ddtx_rx *rx = ddtx_container_of(it, struct ddtx_rx, entry);
		if (ddtx_ctrl_left(pep, rx->cts_queued))
			rx_complete(pep, rx);
	}
}

/* A multi-receive buffer matched an RTS: carve a slice receive for this message. */
static struct ddtx_rx *multi_slice(struct ddtx_proto_ep *pep, struct ddtx_rx *parent, size_t len)
{
	size_t got = DDTX_MIN(len, parent->capacity - parent->multi_used);
	struct iovec iov = {(uint8_t *)parent->iov[0].iov_base + parent->multi_used, got};
	struct ddtx_rx *rx = ddtx_rx_new(pep, &iov, 1, NULL);
	if (!rx)
		return NULL;
	rx->context = parent->context;
	rx->flags = (parent->flags & ~FI_MULTI_RECV) | FI_MSG;
	rx->report = parent->report;
	rx->parent = parent;
	parent->multi_children++;
	ddtx_rx_multi_consume(pep, parent, got);
	return rx;
}

/* The CTS of a UMR transfer: the window keys, or only the set's id if the peer has them. */
static void send_umr_cts(struct ddtx_proto_ep *pep, struct ddtx_rx *rx, bool with_list)
{
	struct ddtx_window_set *ws = rx->ws;
	uint16_t flags = DDTX_HDR_LAST | (with_list ? 0 : DDTX_HDR_CACHED);
	struct ddtx_desc *desc = NULL;
	if (with_list) {
		desc = malloc(ws->n * sizeof(*desc));
		if (!desc) {
			ddtx_rx_fail(pep, rx, FI_ENOMEM);
			return;
		}
		for (size_t w = 0; w < ws->n; w++) {
			desc[w].key = ws->mkeys[w]->key;
			desc[w].len = ws->mkeys[w]->len;
		}
	}
	send_cts_full(pep, rx, 0, desc, with_list ? (uint32_t)ws->n : 0, flags, ws->chunk, ws->id);
	free(desc);
	if (with_list)
		ddtx_window_set_mark_sent(ws, rx->peer);
}

/*
 * UMR (UMR paper): both sides cut the payload into windows of chunk bytes; the receiver's
 * windows come from its local mkey cache (mapped now on a miss), and the CTS carries their
 * keys only if this peer has not had them yet.  false: UMR is not possible here.
 */
static bool start_umr(struct ddtx_proto_ep *pep, struct ddtx_rx *rx,
		      const struct ddtx_hdr_rts *rts)
{
	size_t m = pep->caps->max_mkey_entries;
	if (!rx->cached || !m)
		return false;
	size_t chunk = ddtx_umr_chunk(m, rts->min_block, rx->cached->st.min_block);
	size_t n = (rx->cached->st.total + chunk - 1) / chunk;
	/* The whole key list must fit one CTS, so a later CTS can name it by id alone. */
	if (sizeof(struct ddtx_hdr_cts) + n * sizeof(struct ddtx_desc) > pep->caps->max_send_size)
		return false;
	rx->ws = ddtx_layout_windows(pep->pd->layouts, rx->cached, chunk);
	if (!rx->ws)
		return false;
	/* One "batch" for the whole payload: the sender's DONE at offset 0 ends it. */
	struct ddtx_rbatch *rb = calloc(1, sizeof(*rb));
	if (!rb) {
		ddtx_rx_fail(pep, rx, FI_ENOMEM);
		return true;
	}
	rb->len = rx->accepted;
	ddtx_list_push_back(&rx->rbatches, &rb->entry);
	send_umr_cts(pep, rx, !ddtx_window_set_sent(rx->ws, rx->peer));
	return true;
}

void ddtx_recv_on_list_req(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf,
			   size_t len)
{
	const struct ddtx_hdr_list_req *h = buf;
	struct ddtx_rx *rx = ddtx_optable_get(&pep->rxs, h->rx_id);
	if (!rx || rx->state != DDTX_RX_RNDV || rx->peer != src || !rx->ws) {
		DDTX_WARN(FI_LOG_EP_DATA, "dropping stale LIST_REQ from peer %u\n", src);
		return;
	}
	send_umr_cts(pep, rx, true);
}

/*
 * Where a pull reads: the sender's one block (key at addr), or its windows (nwin of them, in
 * payload order, offset addressing: ddtx_choose_pull_windows), checked with the RTS.
 */
struct pull_src {
	uint64_t key, addr;
	const void *windows; /* struct ddtx_desc[nwin], as the RTS carried them */
	size_t nwin;
};

/* The key and address of payload offset off, and the bytes readable there with that key. */
static uint64_t pull_at(const struct pull_src *src, uint64_t off, uint64_t *key, uint64_t *raddr)
{
	if (!src->nwin) {
		*key = src->key;
		*raddr = src->addr + off;
		return UINT64_MAX;
	}
	uint64_t start = 0;
	for (size_t i = 0; i < src->nwin; i++) {
		struct ddtx_desc w;
		memcpy(&w, (const struct ddtx_desc *)src->windows + i, sizeof(w));
		if (off < start + w.len) {
			*key = w.key;
			*raddr = off - start;
			return start + w.len - off;
		}
		start += w.len;
	}
	return 0;
}

/*
 * Pull (see ddtx_choose_pull): read [0, bytes) of the sender's payload into the receive buffer,
 * max_sge pieces and max_rma_size bytes a read (and one sender's window).  False if no read
 * could be posted.
 */
static bool start_pull(struct ddtx_proto_ep *pep, struct ddtx_rx *rx,
		       const struct pull_src *src, size_t bytes)
{
	struct ddtx_pull *p = ddtx_spares_get(&pep->spare_pull, sizeof(*p));
	if (!p)
		return false;
	p->kind = DDTX_WR_PULL;
	p->rx = rx;
	p->bytes = bytes;
	struct iovec pieces[pep->caps->max_sge];
	struct ddtx_iov_cursor cur;
	ddtx_iov_cursor_init(&cur, rx->iov, rx->count);
	while (cur.pos < bytes) {
		uint64_t off = cur.pos, key, raddr;
		uint64_t there = pull_at(src, off, &key, &raddr);
		size_t want = DDTX_MIN(DDTX_MIN(bytes - off, pep->caps->max_rma_size), there);
		size_t n;
		size_t got = want ? ddtx_iov_cursor_take(&cur, want, pep->caps->max_sge, pieces, &n)
				  : 0;
		int ret = got ? ddtx_wire_read(pep->wire, rx->peer, pieces, n, DDTX_KEY_INTERNAL,
					       key, raddr, got, p)
			      : -FI_EIO;
		if (ret) {
			p->status = -ret;
			break;
		}
		p->reads_pending++;
	}
	p->posted = true;
	if (!p->reads_pending) {
		ddtx_spares_put(&pep->spare_pull, p);
		return false;
	}
	rx->pull = p;
	pep->pd->stats.pulls++;
	if (src->nwin) {
		pep->pd->stats.pull_windows++;
		rx->pulled_windows = true;
	}
	return true;
}

/* The receiver gives up a transfer whose bytes can no longer all arrive: an empty CTS tells
 * the sender, and the receive fails. */
static void rx_give_up(struct ddtx_proto_ep *pep, struct ddtx_rx *rx, int err)
{
	ddtx_rndv_send_cts(pep, rx, rx->cur.pos, NULL, 0, DDTX_HDR_LAST);
	ddtx_rx_fail(pep, rx, err);
}

/*
 * Pull the RTS's payload: all of it, or (see ddtx_choose_split) the head while the sender writes
 * the tail, asked for first so that both copies run at once.  False: nothing was asked for or
 * read, the sender's writes move the message (as SGL).  True: done, going, or failed.
 */
static bool pull_rndv(struct ddtx_proto_ep *pep, struct ddtx_rx *rx, const struct pull_src *src)
{
	size_t head = ddtx_choose_pull_head(pep, rx->contig_way, rx->accepted,
					    rx->sender_blocks <= 1 && rx->layout.nblocks <= 1);
	if (head < rx->accepted) {
		ddtx_iov_cursor_init(&rx->cur, rx->iov, rx->count);
		ddtx_iov_cursor_seek(&rx->cur, head);
		rx->split = head;
		if (issue_batch(pep, rx)) {
			rx->split = 0; /* no keys for the tail: read it all */
			head = rx->accepted;
		}
	}
	if (start_pull(pep, rx, src, head)) {
		if (rx->split)
			pep->pd->stats.pull_splits++;
		return true;
	}
	if (!rx->split)
		return false;
	rx_give_up(pep, rx, FI_ENOMEM); /* the tail is asked for, the head cannot be read */
	return true;
}

/* The reads are done: the CTS that ends the send, or (a read failed) the writes of SGL. */
void ddtx_rndv_on_pull_complete(struct ddtx_proto_ep *pep, struct ddtx_pull *p, int status)
{
	p->reads_pending--;
	if (status && !p->status)
		p->status = -status;
	if (p->reads_pending || !p->posted)
		return;
	struct ddtx_rx *rx = p->rx;
	int err = p->status;
	size_t bytes = p->bytes;
	ddtx_spares_put(&pep->spare_pull, p);
	if (!rx)
		return; /* the receive ended meanwhile */
	rx->pull = NULL;
	if (!err) {
		/* Split: the sender's DONE for the tail may have come first, or may follow.  Whole:
		 * PULLED also ends a delivery complete send (the bytes are in place), no ACK. */
		rx->received += bytes;
		if (!rx->split)
			rx->hdr_flags &= (uint16_t)~DDTX_HDR_ACK_REQ;
		ddtx_rndv_send_cts(pep, rx, 0, NULL, 0, DDTX_HDR_LAST | DDTX_HDR_PULLED);
		if (rx->received == rx->accepted)
			rx_finish(pep, rx);
		return;
	}
	if (rx->split) {
		/* The tail is the sender's already: the head cannot be asked for in order. */
		DDTX_INFO(FI_LOG_EP_DATA, "receive %u: reading from peer %u failed (%s)\n", rx->id,
			  rx->peer, fi_strerror(err));
		rx_give_up(pep, rx, err);
		return;
	}
	/* A key the sender no longer holds, a read refused: ask for the bytes as SGL does (they
	 * overwrite whatever a read placed). */
	DDTX_INFO(FI_LOG_EP_DATA, "receive %u: reading from peer %u failed (%s), asking for "
		  "writes\n", rx->id, rx->peer, fi_strerror(err));
	rx->pulled_windows = false; /* timed as the writes it now is */
	ddtx_iov_cursor_init(&rx->cur, rx->iov, rx->count);
	rx_fill_batches(pep, rx);
}

/* The RTS's first chunk into place; the receiver's sample of the transfer starts one scatter
 * earlier (ddtx_choose_sample_start). */
static void scatter_early(struct ddtx_proto_ep *pep, struct ddtx_rx *rx, const void *first,
			  size_t early)
{
	uint64_t t0 = ddtx_time_ns();
	ddtx_pack_scatter(pep->pd->layouts, rx->cached, rx->iov, rx->count, 0, first, early);
	rx->t_start = ddtx_choose_sample_start(rx->t_start, ddtx_time_ns() - t0);
}

/*
 * A receive into device memory that the NIC reaches (hmem_direct.c): its rendezvous may go
 * zero copy straight into the caller's segments instead of the stage's bounce buffer, when
 * the sender can move it so (its device memory, its layout registered, or a pull offered).
 * rx then works on the caller's list (the stage's, borrowed) until direct_undo.
 */
static struct ddtx_stage *direct_target(struct ddtx_proto_ep *pep, struct ddtx_rx *rx,
					const struct ddtx_hdr_rts *rts)
{
	struct ddtx_stage *stage = rx->accepted && !rx->parent ? ddtx_stage_of(pep, rx->context)
							       : NULL;
	if (!ddtx_stage_direct(stage) ||
	    (!(rts->base.flags & (DDTX_HDR_DEVICE | DDTX_HDR_PULL)) &&
	     rts->scheme == FI_DDTX_SCHEME_PACK))
		return NULL;
	const struct iovec *iov;
	size_t count;
	if (ddtx_stage_direct_segments(pep, stage, &iov, &count))
		return NULL;
	rx->count = count;
	rx->iov = (struct iovec *)iov;
	rx->iov_borrowed = true;
	rx->vec.n = 0;
	return stage;
}

static void direct_undo(struct ddtx_proto_ep *pep, struct ddtx_rx *rx, struct ddtx_stage *stage)
{
	ddtx_stage_direct_undo(stage);
	rx->iov = rx->iov_inline; /* the bounce buffer the receive was posted with */
	rx->count = 1;
	rx->iov_borrowed = false;
	if (rx->cached)
		ddtx_layout_put(pep->pd->layouts, rx->cached);
	bool hit;
	rx->cached = ddtx_layout_get_vec(pep->pd->layouts, rx->iov, rx->count, &rx->vec, &hit);
	if (rx->cached)
		rx->layout = rx->cached->st;
	else
		ddtx_layout_stats(rx->iov, rx->count, &rx->layout);
}

/* rx matched an RTS (rx is off the posted queue): decide the scheme and answer. */
static void start_rndv(struct ddtx_proto_ep *pep, struct ddtx_rx *rx, ddtx_peer_t src,
		       const struct ddtx_hdr_rts *rts, const void *first, size_t first_len)
{
	rx->state = DDTX_RX_RNDV;
	rx->peer = src;
	rx->from = ddtx_addr_of(pep, src);
	rx->tx_id = rts->tx_id;
	rx->msg_tag = rts->tag;
	rx->msg_data = rts->data;
	rx->hdr_flags = rts->base.flags;
	rx->offered = rts->total_len;
	rx->accepted = DDTX_MIN(rts->total_len, rx->capacity);
	ddtx_list_push_back(&pep->rx_active, &rx->entry);
	/* The id the sender's messages name it by: taken only now, as an eager receive needs
	 * none (adding and removing it were 55 instructions of each 8 B receive). */
	if (!rx->id && !(rx->id = ddtx_optable_add(&pep->rxs, rx))) {
		ddtx_rx_fail(pep, rx, FI_ENOMEM);
		return;
	}
	/* A CUDA IPC offer: copied device to device here (hmem_ipc.c), or declined, and then the
	 * bytes after the RTS were the offer, not payload. */
	if (rts->base.flags & DDTX_HDR_IPC) {
		if (ddtx_ipc_take(pep, rx, first, first_len))
			return;
		first_len = 0;
	}
	/* A pull of several blocks: the bytes after the RTS list the sender's windows. */
	struct pull_src from = {.key = rts->pull_key, .addr = rts->pull_addr};
	if (rts->base.flags & DDTX_HDR_WINDOWS) {
		from.windows = first;
		from.nwin = first_len / sizeof(struct ddtx_desc);
		first_len = 0;
	}

	struct ddtx_layout_stats sender = {.total = rts->total_len, .nblocks = rts->nblocks,
					   .min_block = rts->min_block, .avg_block = rts->avg_block};
	bool sender_device = rts->base.flags & DDTX_HDR_DEVICE;
	struct ddtx_stage *direct = direct_target(pep, rx, rts);
	rx->sender_blocks = rts->nblocks;
	rx->t_start = ddtx_time_ns();
	rx->contig_way = DDTX_CONTIG_NONE;
	if (!rx->cached && rx->accepted) {
		bool hit;
		rx->cached = ddtx_layout_get_vec(pep->pd->layouts, rx->iov, rx->count, &rx->vec,
						 &hit);
	}
	if (rx->cached)
		rx->layout = rx->cached->st;
	else
		ddtx_layout_stats(rx->iov, rx->count, &rx->layout);
	size_t early = DDTX_MIN(first_len, rx->accepted);
	enum fi_ddtx_scheme proposed = (enum fi_ddtx_scheme)rts->scheme;
	bool pull_offered = rts->base.flags & DDTX_HDR_PULL;
	if ((sender_device || direct) && rx->accepted) {
		rx->scheme = ddtx_choose_decide_device(pep, proposed, pull_offered, &sender,
						       rx->cached, rx->accepted, &rx->explored);
		if (rx->scheme == FI_DDTX_SCHEME_PACK && direct) {
			/* Not zero copy into device memory: into the bounce buffer, staged. */
			direct_undo(pep, rx, direct);
			direct = NULL;
			rx->scheme = sender_device
					     ? ddtx_choose_decide_device(pep, proposed, pull_offered,
									 &sender, rx->cached,
									 rx->accepted, &rx->explored)
					     : ddtx_choose_decide(pep, proposed, pull_offered, &sender,
								  rx->cached, rx->accepted,
								  &rx->explored, &rx->contig_way,
								  rx);
		}
		if (rx->scheme == FI_DDTX_SCHEME_PACK && sender_device) {
			DDTX_WARN(FI_LOG_EP_DATA, "receive %u: no zero copy possible from peer %u's "
				  "device memory\n", rx->id, src);
			rx_give_up(pep, rx, FI_EIO);
			return;
		}
		if (direct) {
			/* The writes or reads place every byte: nothing to copy at completion. */
			ddtx_stage_delivered(direct);
			pep->pd->stats.hmem_direct_rx++;
			pep->pd->stats.hmem_direct_bytes += rx->accepted;
			early = 0; /* nor a first chunk to scatter by the CPU (a host sender's) */
		}
	} else {
		rx->scheme = ddtx_choose_decide(pep, proposed, pull_offered, &sender, rx->cached,
						rx->accepted, &rx->explored, &rx->contig_way, rx);
	}
	/*
	 * The RTS brought the first chunk.  Under PACK it is scattered after the CTS has gone
	 * back, while the sender gathers the next chunks: scattered first, the sender waited for
	 * it with nothing to do.  Under a zero-copy scheme (forced, or chosen) it goes into place
	 * before the CTS, so that the writes that cover it again come after it.
	 */
	if (early && rx->scheme != FI_DDTX_SCHEME_PACK)
		scatter_early(pep, rx, first, early);
	if (rx->scheme == FI_DDTX_SCHEME_UMR && rx->accepted && start_umr(pep, rx, rts))
		return;
	if (rx->scheme == FI_DDTX_SCHEME_SGL && (rts->base.flags & DDTX_HDR_PULL) && rx->accepted &&
	    pull_rndv(pep, rx, &from))
		return;
	if (!rx->accepted) {
		rx->scheme = FI_DDTX_SCHEME_PACK;
		ddtx_rndv_send_cts(pep, rx, 0, NULL, 0, DDTX_HDR_LAST);
		rx_finish(pep, rx);
		return;
	}
	if (rx->scheme == FI_DDTX_SCHEME_PACK) {
		/* DATA continues where the RTS's chunk ended. */
		rx->received = early;
		if (early < rx->accepted)
			ddtx_pack_stores_choose(pep, rx);
		ddtx_rndv_send_cts(pep, rx, 0, NULL, 0, DDTX_HDR_LAST);
		if (early)
			scatter_early(pep, rx, first, early);
		if (rx->received == rx->accepted)
			rx_finish(pep, rx);
		return;
	}
	if (rx->scheme == FI_DDTX_SCHEME_UMR) {
		/* No cached window set: when UMR is forced, map windows batch by batch (keys
		 * released at each DONE); otherwise descriptor lists do as well. */
		if (ddtx_scheme_forced(&ddtx_settings, pep->caps) == FI_DDTX_SCHEME_UMR) {
			rx->chunk = ddtx_umr_chunk(pep->caps->max_mkey_entries, rts->min_block,
						   rx->layout.min_block);
		} else {
			pep->pd->umr_fallbacks++;
			rx->scheme = FI_DDTX_SCHEME_SGL;
		}
	}
	ddtx_iov_cursor_init(&rx->cur, rx->iov, rx->count);
	rx_fill_batches(pep, rx);
}

/* Match an RTS against rx (which the caller took off its queue, or a multi-recv parent). */
void ddtx_rndv_match_rts(struct ddtx_proto_ep *pep, struct ddtx_rx *rx, ddtx_peer_t src,
			 const struct ddtx_hdr_rts *rts, const void *first, size_t first_len)
{
	if (rx->flags & FI_MULTI_RECV) {
		struct ddtx_rx *slice = multi_slice(pep, rx, rts->total_len);
		if (!slice) {
			DDTX_WARN(FI_LOG_EP_DATA, "out of memory for a multi-receive slice\n");
			return;
		}
		rx = slice;
	}
	start_rndv(pep, rx, src, rts, first, first_len);
}

void ddtx_recv_on_rts(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf, size_t len)
{
	const struct ddtx_hdr_rts *rts = buf;
	bool tagged = rts->base.flags & DDTX_HDR_TAGGED;
	const char *bad = ddtx_check_rts(rts, len);
	if (bad) {
		DDTX_WARN(FI_LOG_EP_DATA, "dropping an RTS from peer %u: bad %s\n", src, bad);
		return;
	}
	size_t charged = ddtx_credit_charge(&rts->base, len - sizeof(*rts));
	struct ddtx_rx *rx = ddtx_posted_find(pep, tagged, rts->tag, ddtx_addr_of(pep, src));
	if (!rx) {
		size_t first_len = len - sizeof(*rts);
		struct ddtx_unexp *u = ddtx_unexp_new(pep, src, DDTX_MSG_RTS, rts->base.flags, rts->tag,
						 rts->data, rts->total_len, first_len);
		if (u) {
			u->rts = *rts;
			u->inlined = first_len;
			memcpy(u->payload, rts + 1, first_len);
			ddtx_credit_hold(pep, u, charged);
		} else {
			ddtx_credit_release(pep, src, charged);
		}
		return;
	}
	if (!(rx->flags & FI_MULTI_RECV))
		ddtx_list_remove(&rx->entry);
	ddtx_rndv_match_rts(pep, rx, src, rts, rts + 1, len - sizeof(*rts));
	ddtx_credit_release(pep, src, charged);
}

static struct ddtx_rx *rndv_rx(struct ddtx_proto_ep *pep, ddtx_peer_t src, uint32_t rx_id)
{
	struct ddtx_rx *rx = ddtx_optable_get(&pep->rxs, rx_id);
	if (!rx || rx->state != DDTX_RX_RNDV || rx->peer != src)
		return NULL;
	return rx;
}

void ddtx_recv_on_data(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf, size_t len)
{
	const struct ddtx_hdr_data *h = buf;
	struct ddtx_rx *rx = rndv_rx(pep, src, h->rx_id);
	/* Chunks come in order on one queue: each starts where the last one ended. */
	if (!rx || rx->scheme != FI_DDTX_SCHEME_PACK || h->len != len - sizeof(*h) || !h->len ||
	    h->offset != rx->received || h->len > rx->accepted - rx->received) {
		DDTX_WARN(FI_LOG_EP_DATA, "dropping DATA from peer %u for receive %u: %s\n", src,
			  h->rx_id, !rx ? "no such rendezvous with that peer" :
			  rx->scheme != FI_DDTX_SCHEME_PACK ? "not a PACK transfer" :
			  "bad offset or len");
		return;
	}
	ddtx_pack_scatter(pep->pd->layouts, rx->cached, rx->iov, rx->count, h->offset, h + 1,
			  h->len);
	rx->received += h->len;
	if (rx->received == rx->accepted)
		rx_finish(pep, rx);
}

/* The receive that matched send tx_id of peer src, with its rendezvous under way. */
static struct ddtx_rx *stream_rx(struct ddtx_proto_ep *pep, ddtx_peer_t src, uint32_t tx_id)
{
	struct ddtx_list_entry *it, *tmp;
	ddtx_list_foreach_safe(&pep->rx_active, it, tmp)
	{
		struct ddtx_rx *rx = ddtx_container_of(it, struct ddtx_rx, entry);
		if (rx->state == DDTX_RX_RNDV && rx->peer == src && rx->tx_id == tx_id)
			return rx;
	}
	return NULL;
}

/* The unexpected RTS of send tx_id of peer src, still waiting for a receive. */
static struct ddtx_unexp *stream_unexp(struct ddtx_proto_ep *pep, ddtx_peer_t src, uint32_t tx_id)
{
	struct ddtx_list *queues[] = {&pep->unexp_tag, &pep->unexp_msg};
	struct ddtx_list_entry *it, *tmp;
	for (size_t q = 0; q < 2; q++)
		ddtx_list_foreach_safe(queues[q], it, tmp)
		{
			struct ddtx_unexp *u = ddtx_container_of(it, struct ddtx_unexp, entry);
			if (u->type == DDTX_MSG_RTS && u->peer == src && u->rts.tx_id == tx_id)
				return u;
		}
	return NULL;
}

/* Kept with its unexpected RTS, behind the bytes already there; NULL, or why not. */
static const char *stream_keep(struct ddtx_unexp *u, const struct ddtx_hdr_stream *h)
{
	/* Only behind a plain PACK proposal: the bytes after any other RTS are not payload. */
	if (u->rts.scheme != FI_DDTX_SCHEME_PACK ||
	    (u->hdr_flags & (DDTX_HDR_IPC | DDTX_HDR_PULL | DDTX_HDR_WINDOWS | DDTX_HDR_DEVICE)))
		return "not after a PACK proposal";
	if (h->offset != u->inlined || h->len > u->rts.total_len - h->offset)
		return "bad offset or len";
	if (!u->stream) {
		u->stream = malloc(DDTX_MIN(u->rts.total_len, DDTX_STREAM_MAX));
		if (!u->stream)
			return "out of memory";
		memcpy(u->stream, u->payload, u->inlined);
	}
	memcpy(u->stream + h->offset, h + 1, h->len);
	u->inlined += h->len;
	return NULL;
}

/*
 * A STREAM chunk: into the receive that took its RTS under PACK, at the next byte, or kept
 * with the RTS while no receive has matched it.  Found neither, it is a late chunk of a receive
 * that already completed (it accepted fewer bytes than the sender streamed) or went by another
 * scheme (whose transfer moves these bytes again): dropped quietly.
 */
void ddtx_recv_on_stream(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf, size_t len)
{
	const struct ddtx_hdr_stream *h = buf;
	if (h->len != len - sizeof(*h) || !h->len || h->len > DDTX_STREAM_MAX ||
	    h->offset > DDTX_STREAM_MAX - h->len) {
		DDTX_WARN(FI_LOG_EP_DATA, "dropping STREAM from peer %u for send %u: bad len or "
			  "offset\n", src, h->tx_id);
		return;
	}
	const char *bad = NULL;
	struct ddtx_rx *rx = stream_rx(pep, src, h->tx_id);
	struct ddtx_unexp *u = rx ? NULL : stream_unexp(pep, src, h->tx_id);
	if (rx && rx->scheme == FI_DDTX_SCHEME_PACK) {
		if (h->offset != rx->received) {
			bad = "bad offset";
		} else {
			/* The sender did not know how much the receive takes. */
			size_t n = DDTX_MIN(h->len, rx->accepted - rx->received);
			ddtx_pack_scatter(pep->pd->layouts, rx->cached, rx->iov, rx->count,
					  h->offset, h + 1, n);
			rx->received += n;
			if (rx->received == rx->accepted)
				rx_finish(pep, rx);
		}
	} else if (u) {
		bad = stream_keep(u, h);
	}
	/* Its bytes spent the sender's credit: held with the RTS, or given back now. */
	if (u && !bad)
		ddtx_credit_hold(pep, u, h->len);
	else
		ddtx_credit_release(pep, src, h->len);
	if (bad)
		DDTX_WARN(FI_LOG_EP_DATA, "dropping STREAM from peer %u for send %u: %s\n", src,
			  h->tx_id, bad);
}

void ddtx_recv_on_done(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf, size_t len)
{
	const struct ddtx_hdr_done *h = buf;
	struct ddtx_rx *rx = rndv_rx(pep, src, h->rx_id);
	struct ddtx_list_entry *first = rx ? ddtx_list_first(&rx->rbatches) : NULL;
	struct ddtx_rbatch *rb = first ? ddtx_container_of(first, struct ddtx_rbatch, entry) : NULL;
	/* A PACK transfer has no batches: a DONE there is a sender that could not produce the
	 * payload it offered (a declined CUDA IPC offer whose device memory was freed). */
	if (rx && rx->scheme == FI_DDTX_SCHEME_PACK && h->status && h->offset == 0) {
		ddtx_rx_fail(pep, rx, ddtx_hdr_status_err(h->status));
		return;
	}
	if (!rb || rb->offset != h->offset) {
		DDTX_WARN(FI_LOG_EP_DATA, "dropping stale DONE from peer %u\n", src);
		return;
	}
	ddtx_list_remove(&rb->entry);
	rx->received += rb->len;
	ddtx_rbatch_release(pep, rb);
	if (h->status) {
		ddtx_rx_fail(pep, rx, ddtx_hdr_status_err(h->status));
		return;
	}
	if (rx->received == rx->accepted)
		rx_finish(pep, rx);
	else
		rx_fill_batches(pep, rx);
}
