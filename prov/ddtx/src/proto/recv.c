/*
 * Receiver side of messaging: posting, matching against unexpected messages, eager delivery,
 * and the rendezvous (decide the scheme, send CTS batches, take DATA/DONE, complete).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/layout.h"
#include "proto/proto_internal.h"

/* CTS batches kept in flight per receive, and descriptors per batch. */
#define RX_BATCHES_IN_FLIGHT 2
#define RX_DESC_PER_BATCH 64

static struct ddtx_rx *rx_new(struct ddtx_proto_ep *pep, const struct iovec *iov, size_t count)
{
	struct ddtx_rx *rx = calloc(1, sizeof(*rx));
	if (!rx)
		return NULL;
	rx->iov = count <= 1 ? rx->iov_inline : malloc(count * sizeof(*iov));
	rx->id = ddtx_optable_add(&pep->rxs, rx);
	if (!rx->iov || !rx->id) {
		if (rx->iov != rx->iov_inline)
			free(rx->iov);
		free(rx);
		return NULL;
	}
	if (count)
		memcpy(rx->iov, iov, count * sizeof(*iov));
	rx->count = count;
	rx->capacity = ddtx_iov_total(iov, count);
	ddtx_list_init(&rx->rbatches);
	return rx;
}

static void rbatch_release(struct ddtx_proto_ep *pep, struct ddtx_rbatch *rb)
{
	for (uint32_t i = 0; i < rb->nmr; i++)
		ddtx_wire_mr_dereg(pep->pd->wire, rb->mr[i]);
	free(rb);
}

void ddtx_rx_free(struct ddtx_proto_ep *pep, struct ddtx_rx *rx)
{
	struct ddtx_layout_cache *lc = pep->pd->layouts;
	struct ddtx_list_entry *it;
	while ((it = ddtx_list_pop_front(&rx->rbatches)))
		rbatch_release(pep, ddtx_container_of(it, struct ddtx_rbatch, entry));
	if (rx->ws)
		ddtx_window_set_put(lc, rx->ws);
	if (rx->cached)
		ddtx_layout_put(lc, rx->cached);
	ddtx_optable_remove(&pep->rxs, rx->id);
	if (rx->iov != rx->iov_inline)
		free(rx->iov);
	free(rx);
}

/* A multi-receive slice finished: the last one out reports FI_MULTI_RECV for the buffer. */
static uint64_t multi_flags(struct ddtx_proto_ep *pep, struct ddtx_rx *parent)
{
	if (!parent->multi_released || parent->multi_children)
		return 0;
	ddtx_rx_free(pep, parent);
	return FI_MULTI_RECV;
}

static void multi_consume(struct ddtx_proto_ep *pep, struct ddtx_rx *parent, size_t len)
{
	parent->multi_used += len;
	if (!parent->multi_released &&
	    parent->capacity - parent->multi_used < pep->attr.min_multi_recv) {
		parent->multi_released = true;
		ddtx_list_remove(&parent->entry);
	}
}

/* Report a received message of `len` bytes offered, `got` delivered into rx. */
static void rx_report(struct ddtx_proto_ep *pep, const struct ddtx_rx *rx, size_t offered,
		      size_t got, uint64_t tag, uint64_t data, uint16_t hflags, fi_addr_t from,
		      void *buf, uint64_t extra_flags)
{
	uint64_t flags = (rx->flags & (FI_MSG | FI_TAGGED)) | FI_RECV | extra_flags;
	if (hflags & DDTX_HDR_CQ_DATA)
		flags |= FI_REMOTE_CQ_DATA;
	if (!(hflags & DDTX_HDR_CQ_DATA))
		data = 0;
	pep->pd->stats.rx_ops++;
	const struct ddtx_proto_completion c = {
		.context = rx->context, .flags = flags, .len = got, .buf = buf, .data = data,
		.tag = tag, .src_addr = from, .olen = offered > got ? offered - got : 0,
		.err = offered > got ? FI_ETRUNC : 0,
	};
	/* Errors, and the release of a multi-receive buffer, are reported even under selective
	 * completion. */
	if (c.err || rx->report || (flags & FI_MULTI_RECV))
		ddtx_report(pep, DDTX_PROTO_RX, &c);
	ddtx_count(pep, DDTX_CNTR_RECV, c.err != 0);
}

void ddtx_rx_fail(struct ddtx_proto_ep *pep, struct ddtx_rx *rx, int err)
{
	DDTX_INFO(FI_LOG_EP_DATA, "receive %u from peer %u failed: %s\n", rx->id, rx->peer,
		  fi_strerror(err));
	uint64_t flags = (rx->flags & (FI_MSG | FI_TAGGED)) | FI_RECV;
	if (rx->parent) {
		rx->parent->multi_children--;
		flags |= multi_flags(pep, rx->parent);
	}
	const struct ddtx_proto_completion c = {.context = rx->context, .flags = flags,
						.tag = rx->msg_tag, .err = err, .src_addr = rx->from};
	ddtx_report(pep, DDTX_PROTO_RX, &c);
	ddtx_count(pep, DDTX_CNTR_RECV, true);
	ddtx_list_remove(&rx->entry);
	ddtx_rx_free(pep, rx);
}

/* ---- eager ---- */

/*
 * Deliver an eager payload into a matched receive.  A plain rx stays owned by the caller; a
 * multi-receive buffer that this message used up is freed here: returns true in that case.
 */
static bool deliver_eager(struct ddtx_proto_ep *pep, struct ddtx_rx *rx, const void *payload,
			  size_t len, uint64_t tag, uint64_t data, uint16_t hflags, fi_addr_t from)
{
	if (rx->flags & FI_MULTI_RECV) {
		size_t avail = rx->capacity - rx->multi_used;
		size_t got = DDTX_MIN(len, avail);
		uint8_t *dst = (uint8_t *)rx->iov[0].iov_base + rx->multi_used;
		memcpy(dst, payload, got);
		multi_consume(pep, rx, got);
		ddtx_count_scheme(pep, FI_DDTX_SCHEME_EAGER, got);
		/* Report through a copy: the buffer may be released (freed) first. */
		struct ddtx_rx slice = *rx;
		slice.flags &= ~FI_MULTI_RECV;
		uint64_t mf = multi_flags(pep, rx);
		rx_report(pep, &slice, len, got, tag, data, hflags, from, dst, mf);
		return mf != 0;
	}
	size_t got = ddtx_iov_scatter(rx->iov, rx->count, 0, payload, DDTX_MIN(len, rx->capacity));
	ddtx_count_scheme(pep, FI_DDTX_SCHEME_EAGER, got);
	rx_report(pep, rx, len, got, tag, data, hflags, from, NULL, 0);
	return false;
}

static struct ddtx_rx *find_posted(struct ddtx_proto_ep *pep, bool tagged, uint64_t tag,
				   fi_addr_t from)
{
	struct ddtx_list *q = tagged ? &pep->posted_tag : &pep->posted_msg;
	struct ddtx_list_entry *it, *tmp;
	ddtx_list_foreach_safe(q, it, tmp)
	{
		struct ddtx_rx *rx = ddtx_container_of(it, struct ddtx_rx, entry);
		if (ddtx_match_rx(rx, tagged, tag, from))
			return rx;
	}
	return NULL;
}

static struct ddtx_unexp *unexp_new(struct ddtx_proto_ep *pep, ddtx_peer_t src, uint8_t type,
				    uint16_t hflags, uint64_t tag, uint64_t data, size_t len,
				    size_t payload_len)
{
	struct ddtx_unexp *u = malloc(sizeof(*u) + payload_len);
	if (!u) {
		DDTX_WARN(FI_LOG_EP_DATA, "out of memory: dropping unexpected message\n");
		return NULL;
	}
	u->peer = src;
	u->type = type;
	u->hdr_flags = hflags;
	u->tag = tag;
	u->data = data;
	u->len = len;
	u->claim_context = NULL;
	ddtx_list_push_back((hflags & DDTX_HDR_TAGGED) ? &pep->unexp_tag : &pep->unexp_msg,
			    &u->entry);
	return u;
}

void ddtx_recv_on_eager(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf, size_t len)
{
	const struct ddtx_hdr_eager *h = buf;
	if (h->len != len - sizeof(*h)) {
		DDTX_WARN(FI_LOG_EP_DATA, "dropping EAGER with inconsistent length from peer %u\n",
			  src);
		return;
	}
	bool tagged = h->base.flags & DDTX_HDR_TAGGED;
	fi_addr_t from = ddtx_addr_of(pep, src);
	struct ddtx_rx *rx = find_posted(pep, tagged, h->tag, from);
	if (!rx) {
		struct ddtx_unexp *u = unexp_new(pep, src, DDTX_MSG_EAGER, h->base.flags, h->tag,
						 h->data, h->len, h->len);
		if (u) {
			memcpy(u->payload, h + 1, h->len);
			u->ack_tx_id = h->tx_id;
		}
		return;
	}
	bool multi = rx->flags & FI_MULTI_RECV;
	if (!multi)
		ddtx_list_remove(&rx->entry);
	deliver_eager(pep, rx, h + 1, h->len, h->tag, h->data, h->base.flags, from);
	if (!multi)
		ddtx_rx_free(pep, rx);
	if (h->base.flags & DDTX_HDR_ACK_REQ)
		ddtx_ctrl_ack(pep, src, h->tx_id, 0);
}

/* ---- rendezvous ---- */

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
	ddtx_ctrl_send(pep, rx->peer, msg, len);
	if (msg != small)
		free(msg);
}

static void send_cts(struct ddtx_proto_ep *pep, struct ddtx_rx *rx, uint64_t offset,
		     const struct ddtx_desc *desc, uint32_t ndesc, uint16_t flags)
{
	send_cts_full(pep, rx, offset, desc, ndesc, flags, rx->chunk, 0);
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
	send_cts(pep, rx, rb->offset, desc, rb->nmr,
		 rx->cur.pos >= rx->accepted ? DDTX_HDR_LAST : 0);
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
			send_cts(pep, rx, 0, NULL, 0, DDTX_HDR_LAST);
			return;
		}
		if (ret) {
			if (!batches_in_flight(rx)) {
				/* Tell the sender to stop, and fail the receive. */
				send_cts(pep, rx, rx->cur.pos, NULL, 0, DDTX_HDR_LAST);
				ddtx_rx_fail(pep, rx, ret == -FI_EAGAIN ? FI_ENOSPC : -ret);
			}
			return;
		}
	}
}

static void rx_finish(struct ddtx_proto_ep *pep, struct ddtx_rx *rx)
{
	void *buf = NULL;
	uint64_t mf = 0;
	/* Every timed rendezvous between warm layouts teaches the cost model what its scheme
	 * costs on this wire. */
	bool warm = (rx->hdr_flags & DDTX_HDR_WARM) && ddtx_choose_warm(rx->cached);
	if (rx->t_start && rx->accepted) {
		/* Service time, not latency: with several rendezvous in flight, one that waited
		 * behind the others is timed from when the previous one finished. */
		uint64_t now = ddtx_time_ns();
		uint64_t from = DDTX_MAX(rx->t_start, pep->last_rndv_done_ns);
		pep->last_rndv_done_ns = now;
		if (warm)
			ddtx_choose_observe(pep, rx->scheme, rx->accepted,
					    rx->sender_blocks + rx->layout.nblocks, now - from);
	}
	if (rx->parent) {
		rx->parent->multi_children--;
		mf = multi_flags(pep, rx->parent);
		buf = rx->iov[0].iov_base;
	}
	ddtx_count_scheme(pep, rx->scheme, rx->accepted);
	/* accepted == 0 was answered by an empty CTS, which completes the sender already. */
	if ((rx->hdr_flags & DDTX_HDR_ACK_REQ) && rx->accepted)
		ddtx_ctrl_ack(pep, rx->peer, rx->tx_id, 0);
	ddtx_list_remove(&rx->entry);
	rx_report(pep, rx, rx->offered, rx->accepted, rx->msg_tag, rx->msg_data, rx->hdr_flags,
		  rx->from, buf, mf);
	ddtx_rx_free(pep, rx);
}

/* A multi-receive buffer matched an RTS: carve a slice receive for this message. */
static struct ddtx_rx *multi_slice(struct ddtx_proto_ep *pep, struct ddtx_rx *parent, size_t len)
{
	size_t got = DDTX_MIN(len, parent->capacity - parent->multi_used);
	struct iovec iov = {(uint8_t *)parent->iov[0].iov_base + parent->multi_used, got};
	struct ddtx_rx *rx = rx_new(pep, &iov, 1);
	if (!rx)
		return NULL;
	rx->context = parent->context;
	rx->flags = (parent->flags & ~FI_MULTI_RECV) | FI_MSG;
	rx->report = parent->report;
	rx->parent = parent;
	parent->multi_children++;
	multi_consume(pep, parent, got);
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

/* rx matched an RTS (rx is off the posted queue): decide the scheme and answer. */
static void start_rndv(struct ddtx_proto_ep *pep, struct ddtx_rx *rx, ddtx_peer_t src,
		       const struct ddtx_hdr_rts *rts)
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

	struct ddtx_layout_stats sender = {.total = rts->total_len, .nblocks = rts->nblocks,
					   .min_block = rts->min_block, .avg_block = rts->avg_block};
	rx->sender_blocks = rts->nblocks;
	rx->t_start = ddtx_time_ns();
	if (!rx->cached && rx->accepted) {
		bool hit;
		rx->cached = ddtx_layout_get(pep->pd->layouts, rx->iov, rx->count,
					     &hit);
	}
	if (rx->cached)
		rx->layout = rx->cached->st;
	else
		ddtx_layout_stats(rx->iov, rx->count, &rx->layout);
	rx->scheme = ddtx_choose_decide(pep, (enum fi_ddtx_scheme)rts->scheme, &sender,
					rx->cached, rx->accepted, &rx->explored);
	if (rx->scheme == FI_DDTX_SCHEME_UMR && rx->accepted && start_umr(pep, rx, rts))
		return;
	if (!rx->accepted) {
		rx->scheme = FI_DDTX_SCHEME_PACK;
		send_cts(pep, rx, 0, NULL, 0, DDTX_HDR_LAST);
		rx_finish(pep, rx);
		return;
	}
	if (rx->scheme == FI_DDTX_SCHEME_PACK) {
		send_cts(pep, rx, 0, NULL, 0, DDTX_HDR_LAST);
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
static void match_rts(struct ddtx_proto_ep *pep, struct ddtx_rx *rx, ddtx_peer_t src,
		      const struct ddtx_hdr_rts *rts)
{
	if (rx->flags & FI_MULTI_RECV) {
		struct ddtx_rx *slice = multi_slice(pep, rx, rts->total_len);
		if (!slice) {
			DDTX_WARN(FI_LOG_EP_DATA, "out of memory for a multi-receive slice\n");
			return;
		}
		rx = slice;
	}
	start_rndv(pep, rx, src, rts);
}

void ddtx_recv_on_rts(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf, size_t len)
{
	const struct ddtx_hdr_rts *rts = buf;
	bool tagged = rts->base.flags & DDTX_HDR_TAGGED;
	if (!rts->tx_id || !rts->total_len) {
		DDTX_WARN(FI_LOG_EP_DATA, "dropping malformed RTS from peer %u\n", src);
		return;
	}
	struct ddtx_rx *rx = find_posted(pep, tagged, rts->tag, ddtx_addr_of(pep, src));
	if (!rx) {
		struct ddtx_unexp *u = unexp_new(pep, src, DDTX_MSG_RTS, rts->base.flags, rts->tag,
						 rts->data, rts->total_len, 0);
		if (u)
			u->rts = *rts;
		return;
	}
	if (!(rx->flags & FI_MULTI_RECV))
		ddtx_list_remove(&rx->entry);
	match_rts(pep, rx, src, rts);
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
	if (!rx || rx->scheme != FI_DDTX_SCHEME_PACK || h->len != len - sizeof(*h) ||
	    h->offset > rx->accepted || h->len > rx->accepted - h->offset ||
	    h->len > rx->accepted - rx->received) {
		DDTX_WARN(FI_LOG_EP_DATA, "dropping malformed or stale DATA from peer %u\n", src);
		return;
	}
	ddtx_iov_scatter(rx->iov, rx->count, h->offset, h + 1, h->len);
	rx->received += h->len;
	if (rx->received == rx->accepted)
		rx_finish(pep, rx);
}

void ddtx_recv_on_done(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf, size_t len)
{
	const struct ddtx_hdr_done *h = buf;
	struct ddtx_rx *rx = rndv_rx(pep, src, h->rx_id);
	struct ddtx_list_entry *first = rx ? ddtx_list_first(&rx->rbatches) : NULL;
	struct ddtx_rbatch *rb = first ? ddtx_container_of(first, struct ddtx_rbatch, entry) : NULL;
	if (!rb || rb->offset != h->offset) {
		DDTX_WARN(FI_LOG_EP_DATA, "dropping stale DONE from peer %u\n", src);
		return;
	}
	ddtx_list_remove(&rb->entry);
	rx->received += rb->len;
	rbatch_release(pep, rb);
	if (h->status) {
		ddtx_rx_fail(pep, rx, h->status < 0 ? -h->status : FI_EIO);
		return;
	}
	if (rx->received == rx->accepted)
		rx_finish(pep, rx);
	else
		rx_fill_batches(pep, rx);
}

/* ---- posting ---- */

/*
 * Take an unexpected message into rx (a plain rx is on no queue and is consumed; a multi-receive
 * buffer stays posted).  Returns true if rx no longer exists afterwards.
 */
static bool take_unexp(struct ddtx_proto_ep *pep, struct ddtx_rx *rx, struct ddtx_unexp *u)
{
	bool multi = rx->flags & FI_MULTI_RECV;
	bool gone = !multi;
	ddtx_list_remove(&u->entry);
	if (u->type == DDTX_MSG_EAGER) {
		bool freed = deliver_eager(pep, rx, u->payload, u->len, u->tag, u->data,
					   u->hdr_flags, ddtx_addr_of(pep, u->peer));
		if (!multi)
			ddtx_rx_free(pep, rx);
		gone = gone || freed;
		if (u->hdr_flags & DDTX_HDR_ACK_REQ)
			ddtx_ctrl_ack(pep, u->peer, u->ack_tx_id, 0);
	} else {
		match_rts(pep, rx, u->peer, &u->rts);
	}
	free(u);
	return gone;
}

ssize_t ddtx_proto_recv(struct ddtx_proto_ep *pep, const struct iovec *iov, void **desc,
			size_t count, fi_addr_t src, uint64_t tag, uint64_t ignore, void *context,
			uint64_t flags, bool tagged)
{
	int ret = ddtx_iov_check(iov, count, pep->attr.rx_iov_limit, NULL);
	if (ret || ((flags & FI_MULTI_RECV) && (tagged || count != 1))) {
		DDTX_WARN(FI_LOG_EP_DATA, "recv: invalid iov list or flags (count %zu)\n", count);
		return -FI_EINVAL;
	}
	struct fi_ddtx_layout *handle = NULL;
	if (!(flags & FI_MULTI_RECV) && (handle = ddtx_handle_of(desc, iov, count)) &&
	    (ret = ddtx_handle_expand(handle, iov, &iov, &count)))
		goto out;
	if (!pep->enabled) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	struct ddtx_rx *rx = rx_new(pep, iov, count);
	if (!rx) {
		ret = -FI_ENOMEM;
		goto out;
	}
	if (handle)
		rx->cached = ddtx_handle_layout(handle);
	rx->context = context;
	rx->flags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG) | (flags & FI_MULTI_RECV);
	rx->report = !pep->attr.rx_selective || (flags & FI_COMPLETION);
	rx->tag = tag;
	rx->ignore = ignore;
	rx->src = pep->attr.directed_recv ? src : FI_ADDR_UNSPEC;
	rx->state = DDTX_RX_POSTED;
	if (count > pep->pd->stats.iov_entries_max)
		pep->pd->stats.iov_entries_max = count;

	if (flags & FI_MULTI_RECV) {
		/* Posted first so that slices can leave it; unexpected messages fill it now. */
		ddtx_list_push_back(&pep->posted_msg, &rx->entry);
		struct ddtx_unexp *u;
		while (!rx->multi_released && (u = ddtx_unexp_find(pep, false, rx->src, 0, 0, NULL)))
			if (take_unexp(pep, rx, u))
				break;
		goto out;
	}
	struct ddtx_unexp *u = ddtx_unexp_find(pep, tagged, rx->src, tag, ignore, NULL);
	if (u)
		take_unexp(pep, rx, u);
	else
		ddtx_list_push_back(tagged ? &pep->posted_tag : &pep->posted_msg, &rx->entry);
out:
	return ret;
}

/* FI_PEEK (optionally with FI_CLAIM or FI_DISCARD), and FI_CLAIM of a peeked message. */
ssize_t ddtx_proto_peek(struct ddtx_proto_ep *pep, fi_addr_t src, uint64_t tag, uint64_t ignore,
			void *context, uint64_t flags, const struct iovec *iov, size_t count)
{
	if ((flags & FI_CLAIM) && !context)
		return -FI_EINVAL;
	ssize_t ret = 0;
	if (!pep->enabled) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	if (!pep->attr.directed_recv)
		src = FI_ADDR_UNSPEC;
	if (flags & FI_PEEK)
		ddtx_proto_progress(pep); /* look at what has arrived by now */
	struct ddtx_unexp *u = ddtx_unexp_find(pep, true, src, tag, ignore,
					       (flags & FI_PEEK) ? NULL : context);
	fi_addr_t from = u ? ddtx_addr_of(pep, u->peer) : FI_ADDR_NOTAVAIL;
	uint64_t cflags = FI_RECV | FI_TAGGED;
	if (!u) {
		const struct ddtx_proto_completion c = {.context = context, .flags = cflags,
							.tag = tag, .err = FI_ENOMSG,
							.src_addr = FI_ADDR_NOTAVAIL};
		ddtx_report(pep, DDTX_PROTO_RX, &c);
		goto out;
	}
	if (u->hdr_flags & DDTX_HDR_CQ_DATA)
		cflags |= FI_REMOTE_CQ_DATA;
	if ((flags & FI_PEEK) && !(flags & FI_DISCARD)) {
		if (flags & FI_CLAIM)
			u->claim_context = context;
		const struct ddtx_proto_completion c = {.context = context, .flags = cflags,
							.len = u->len, .data = u->data,
							.tag = u->tag, .src_addr = from};
		ddtx_report(pep, DDTX_PROTO_RX, &c);
		goto out;
	}
	if (flags & FI_DISCARD) {
		ddtx_list_remove(&u->entry);
		if (u->type == DDTX_MSG_RTS) {
			/* Let the sender complete: accept nothing. */
			struct ddtx_rx tmp = {.tx_id = u->rts.tx_id, .peer = u->peer,
					      .scheme = FI_DDTX_SCHEME_PACK};
			send_cts(pep, &tmp, 0, NULL, 0, DDTX_HDR_LAST);
		} else if (u->hdr_flags & DDTX_HDR_ACK_REQ) {
			ddtx_ctrl_ack(pep, u->peer, u->ack_tx_id, 0);
		}
		const struct ddtx_proto_completion c = {.context = context, .flags = cflags,
							.data = u->data, .tag = u->tag,
							.src_addr = from};
		ddtx_report(pep, DDTX_PROTO_RX, &c);
		free(u);
		goto out;
	}
	/* FI_CLAIM: receive the claimed message into iov. */
	struct ddtx_rx *rx = rx_new(pep, iov, count);
	if (!rx) {
		ret = -FI_ENOMEM;
		goto out;
	}
	rx->context = context;
	rx->flags = FI_RECV | FI_TAGGED;
	rx->report = true;
	rx->src = FI_ADDR_UNSPEC;
	take_unexp(pep, rx, u);
out:
	return ret;
}

bool ddtx_recv_cancel(struct ddtx_proto_ep *pep, void *context)
{
	struct ddtx_list *queues[] = {&pep->posted_tag, &pep->posted_msg};
	for (size_t q = 0; q < 2; q++) {
		struct ddtx_list_entry *it, *tmp;
		ddtx_list_foreach_safe(queues[q], it, tmp)
		{
			struct ddtx_rx *rx = ddtx_container_of(it, struct ddtx_rx, entry);
			if (rx->context != context)
				continue;
			ddtx_list_remove(&rx->entry);
			uint64_t flags = rx->flags & (FI_MSG | FI_TAGGED | FI_RECV | FI_MULTI_RECV);
			const struct ddtx_proto_completion c = {
				.context = context, .flags = flags, .tag = rx->tag,
				.err = FI_ECANCELED, .src_addr = FI_ADDR_NOTAVAIL};
			ddtx_report(pep, DDTX_PROTO_RX, &c);
			if (rx->multi_children) {
				/* Slices in flight still point at it: free it with the last one. */
				rx->multi_released = true;
			} else {
				ddtx_rx_free(pep, rx);
			}
			return true;
		}
	}
	return false;
}
