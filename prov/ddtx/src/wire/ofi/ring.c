/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The receive ring: a sender writes its messages into slots the receiver registered for it
 * (fi_writemsg with FI_REMOTE_CQ_DATA) instead of sending them.  Why: over tcp;ofi_rxm every
 * sent message is copied by rxm into its own send buffer and, at the receiver, out of its
 * receive buffer into ours; rxm hands a write straight to the tcp endpoint, which sends from
 * our buffer and receives into the ring.  Those two copies were a quarter of a PACK transfer
 * between two hosts (docs/benchmark-results.md).
 *
 * - The receiver grants a ring to a peer the first time the peer sends to it (RING_GRANT: the
 *   ring's internal key, its number here, slots and slot size), when the core has remote CQ
 *   data (domain_attr->cq_data_size >= 8).
 * - The sender answers with RING_START, its last message sent the ordinary way, and from then
 *   on writes every data message into slot (n mod slots) of the ring, its CQ data naming the
 *   ring, n mod 2^16 and the length (a remote write's completion carries no source address).
 *   Its own control messages (KEY_REQ/REP, PROBE/ANSWER, credits) are still sent.
 * - The receiver delivers ring messages in their order, and only after RING_START, which it
 *   gets in order with the peer's sent messages: so messages stay in order per pair however
 *   the core orders a write's completion and a receive's.
 * - Credits: a sender has at most `slots` ring messages undelivered; the receiver returns
 *   the count delivered so far in byte 7 of each of its own ring messages to the sender
 *   (ddtx_ofi_ring_hdr_credit), and as RING_CREDIT where half the ring went uncredited so.
 * A write's completion is checked before its slot is read: a ring of that peer, a sequence
 * number within the slots it may hold, a length within the slot, a DATA header with the
 * peer's uid; anything else is dropped with a warning (a peer can only spoil its own ring).
 */
#include <stdlib.h>
#include <string.h>

#include "wire/ofi/ofi.h"

/* ---- the sender's side ---- */

int ddtx_ofi_ring_admit(const struct ddtx_ofi_peer *p)
{
	const struct ddtx_ofi_ring_tx *r = p->ring_tx;

	return r->posted + r->claims - r->acked < r->grant.slots ? 0 : -FI_EAGAIN;
}

int ddtx_ofi_ring_post(struct ddtx_ofi_ep *ep, struct ddtx_ofi_buf *b)
{
	struct ddtx_ofi_peer *p = ep->peers[b->peer];
	struct ddtx_ofi_ring_tx *r = p->ring_tx;
	uint64_t slot = b->ring_seq & (r->grant.slots - 1);
	struct iovec iov = { b->data + b->start, b->len };
	void *desc = ep->slab_desc;
	struct fi_rma_iov rma = { .len = b->len, .key = r->grant.key };
	struct fi_msg_rma msg = {
		.msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = p->fi_addr,
		.rma_iov = &rma, .rma_iov_count = 1, .context = &b->ctx,
		.data = ddtx_ofi_ring_data(r->grant.ring_id, b->ring_seq, b->len),
	};
	struct fid_ep *tx;
	int ret = ddtx_ofi_ikey_core_addr(r->grant.key, slot * r->grant.slot_size,
					  ep->dom->mr_virt, &rma.addr);

	if (!ret)
		ret = ddtx_ofi_conn_get(ep, b->peer, &tx);
	if (ret)
		return ret;
	ddtx_ofi_ring_hdr_seal(b->data + b->start, b->ring_seq, b->len);
	/* the count of the peer's ring messages delivered here rides along (a credit message
	 * saved: drain() sends one only when half our ring went uncredited) */
	struct ddtx_ofi_ring_rx *back = p->ring_rx;
	if (back && back->slots <= DDTX_OFI_CREDIT8_SLOTS) {
		ddtx_ofi_ring_hdr_credit(b->data + b->start, back->next);
		back->credited = back->next;
	}
	ret = (int)fi_writemsg(tx, &msg, FI_REMOTE_CQ_DATA | FI_COMPLETION);
	if (!ret) {
		__atomic_fetch_add(&ep->dom->ring_msgs, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&ep->dom->ring_bytes, b->len, __ATOMIC_RELAXED);
	}
	return ret;
}

static int grant_in(struct ddtx_ofi_ep *ep, ddtx_peer_t peer, const uint8_t *in, size_t len)
{
	struct ddtx_ofi_peer *p = ep->peers[peer];
	struct ddtx_ofi_ring_grant g;

	/* One grant per peer: a second would move the ring under messages in flight. */
	if (p->ring_tx || ddtx_ofi_ring_grant_unpack(in, len, &g) ||
	    g.slot_size < DDTX_OFI_HDR_LEN + ep->dom->caps.max_send_size)
		return -FI_EINVAL;
	p->ring_tx = calloc(1, sizeof(*p->ring_tx));
	if (!p->ring_tx)
		return 0; /* messages keep going the ordinary way */
	p->ring_tx->grant = g;
	/* In order behind every message sent so far; all later data messages are writes. */
	ddtx_ofi_ctrl_send(ep, peer, DDTX_OFI_MSG_RING_START, NULL, 0);
	return 0;
}

static int credit_in(struct ddtx_ofi_ep *ep, ddtx_peer_t peer, const uint8_t *in, size_t len)
{
	struct ddtx_ofi_ring_tx *r = ep->peers[peer]->ring_tx;
	uint64_t delivered;

	if (!r || ddtx_ofi_ring_credit_unpack(in, len, &delivered))
		return -FI_EINVAL;
	if (delivered <= r->acked)
		return 0; /* a credit carried by a ring message overtook it */
	if (!ddtx_ofi_ring_credit_ok(r->acked, r->posted, delivered))
		return -FI_EINVAL;
	r->acked = delivered;
	return 0;
}

/* A credit a ring message from the peer carries, for the ring we write into. */
static void credit_carried(struct ddtx_ofi_peer *p, const uint8_t *hdr)
{
	struct ddtx_ofi_ring_tx *t = p->ring_tx;
	uint64_t delivered;
	uint8_t c8;

	if (t && ddtx_ofi_ring_hdr_credit_get(hdr, &c8) &&
	    ddtx_ofi_ring_credit8(t->acked, t->posted, t->grant.slots, c8, &delivered))
		t->acked = delivered;
}

/* ---- the receiver's side ---- */

void ddtx_ofi_ring_offer(struct ddtx_ofi_ep *ep, ddtx_peer_t peer)
{
	struct ddtx_ofi_peer *p = ep->peers[peer];
	/* Messages up to a whole bounce buffer: 64 KiB PACK chunks where rxm's eager size allows
	 * 16 KiB.  Measured across two hosts: PACK bandwidth at 4 KiB blocks 2.6 GB/s with 16 KiB
	 * ring messages, 3.6-4.0 with 64 KiB (docs/benchmark-results.md). */
	uint32_t slot_size = DDTX_OFI_RING_SLOT_MAX;
	struct ddtx_ofi_ring_rx *r;
	struct ddtx_ofi_ring_grant g;
	uint8_t out[DDTX_OFI_RING_GRANT_LEN];

	if (!ep->dom->ring || p->ring_offered || peer >= DDTX_OFI_RING_ID_MAX)
		return;
	p->ring_offered = true;
	r = calloc(1, sizeof(*r));
	if (!r)
		return;
	r->slots = DDTX_OFI_RING_SLOTS;
	while (r->slots > 4 && (size_t)r->slots * slot_size > DDTX_OFI_RING_BYTES)
		r->slots /= 2;
	r->slot_size = slot_size;
	r->held = calloc(r->slots, sizeof(*r->held));
	if (!r->held || posix_memalign((void **)&r->mem, 4096, (size_t)r->slots * slot_size))
		goto fail;
	memset(r->mem, 0, (size_t)r->slots * slot_size); /* no slot holds a header yet */
	struct iovec iov = { r->mem, (size_t)r->slots * slot_size };
	if (ddtx_ofi_mr_reg(&ep->dom->base, &iov, 1, DDTX_KEY_INTERNAL, NULL, 0,
			    DDTX_ACC_REMOTE_WRITE, &r->mr))
		goto fail;
	p->ring_rx = r;
	g = (struct ddtx_ofi_ring_grant){ .key = r->mr->key, .ring_id = peer, .slots = r->slots,
					  .slot_size = slot_size };
	ddtx_ofi_ring_grant_pack(&g, out);
	ddtx_ofi_ctrl_send(ep, peer, DDTX_OFI_MSG_RING_GRANT, out, sizeof(out));
	return;
fail:
	/* no ring: this peer's messages keep coming the ordinary way */
	free(r->mem);
	free(r->held);
	free(r);
}

/* Deliver the peer's ring messages that are next in order, once its RING_START came. */
static int drain(struct ddtx_ofi_ep *ep, ddtx_peer_t peer)
{
	struct ddtx_ofi_peer *p = ep->peers[peer];
	struct ddtx_ofi_ring_rx *r = p->ring_rx;
	int n = 0;

	if (!r->started || r->draining)
		return 0; /* a drain already running (on_recv progressed) delivers them */
	r->draining = true;
	for (;;) {
		uint32_t slot = (uint32_t)(r->next & (r->slots - 1));
		uint8_t *data = r->mem + (size_t)slot * r->slot_size;
		size_t len = 0;

		if (!r->held[slot])
			break;
		switch (ddtx_ofi_ring_hdr_check(data, r->slot_size, r->next, p->uid, &len)) {
		case DDTX_OFI_RING_NOT_YET:
			/* CQ data another peer forged, or a write still landing: the owner's own
			 * completion will name this slot again */
			DDTX_WARN(FI_LOG_EP_DATA, "ofi: ring completion for peer %u's message %llu "
				  "does not match its slot: ignored\n", peer,
				  (unsigned long long)r->next);
			r->held[slot] = 0;
			r->draining = false;
			return n;
		case DDTX_OFI_RING_BAD:
			DDTX_WARN(FI_LOG_EP_DATA, "ofi: malformed ring message %llu from peer %u "
				  "dropped\n", (unsigned long long)r->next, peer);
			break;
		case DDTX_OFI_RING_DELIVER:
			credit_carried(p, data);
			n += ddtx_ofi_deliver(ep, peer, data + DDTX_OFI_HDR_LEN,
					      len - DDTX_OFI_HDR_LEN);
			break;
		}
		/* on_recv has returned: the slot is free, and its header cleared so that what is
		 * left there never passes for a later message */
		memset(data, 0, DDTX_OFI_HDR_LEN);
		r->held[slot] = 0;
		r->next++;
		if (r->next - r->credited >= r->slots / 2) {
			uint8_t out[DDTX_OFI_RING_CREDIT_LEN];

			r->credited = r->next;
			ddtx_ofi_ring_credit_pack(r->next, out);
			ddtx_ofi_ctrl_send(ep, peer, DDTX_OFI_MSG_RING_CREDIT, out, sizeof(out));
		}
	}
	r->draining = false;
	return n;
}

int ddtx_ofi_ring_write_in(struct ddtx_ofi_ep *ep, uint64_t data)
{
	struct ddtx_ofi_ring_rx *r = NULL;
	uint32_t id;
	uint16_t seq16;
	size_t len;
	uint64_t seq;

	ddtx_ofi_ring_data_split(data, &id, &seq16, &len);
	if (id < ep->npeers)
		r = ep->peers[id]->ring_rx;
	if (!r || ddtx_ofi_ring_accept(r->next, r->slots, r->slot_size, seq16, len, &seq) ||
	    r->held[seq & (r->slots - 1)]) {
		DDTX_WARN(FI_LOG_EP_DATA, "ofi: a ring write with bad CQ data %#llx dropped\n",
			  (unsigned long long)data);
		return 0;
	}
	r->held[seq & (r->slots - 1)] = (uint32_t)len;
	ddtx_ofi_live_heard(ep, ep->peers[id]);
	return drain(ep, id);
}

int ddtx_ofi_ring_ctrl_in(struct ddtx_ofi_ep *ep, ddtx_peer_t peer, uint8_t type,
			  const uint8_t *payload, size_t len)
{
	struct ddtx_ofi_ring_rx *r = ep->peers[peer]->ring_rx;

	switch (type) {
	case DDTX_OFI_MSG_RING_GRANT:
		return grant_in(ep, peer, payload, len);
	case DDTX_OFI_MSG_RING_CREDIT:
		return credit_in(ep, peer, payload, len);
	case DDTX_OFI_MSG_RING_START:
		if (len || !r || r->started)
			return -FI_EINVAL;
		r->started = true;
		return drain(ep, peer);
	default:
		return -FI_EINVAL;
	}
}

void ddtx_ofi_ring_forget(struct ddtx_ofi_ep *ep, struct ddtx_ofi_peer *p)
{
	free(p->ring_tx);
	p->ring_tx = NULL;
	if (p->ring_rx) {
		ddtx_ofi_mr_dereg(&ep->dom->base, p->ring_rx->mr);
		free(p->ring_rx->mem);
		free(p->ring_rx->held);
		free(p->ring_rx);
		p->ring_rx = NULL;
	}
	p->ring_offered = false;
}

void ddtx_ofi_ring_fini(struct ddtx_ofi_ep *ep)
{
	for (size_t i = 0; i < ep->npeers; i++)
		ddtx_ofi_ring_forget(ep, ep->peers[i]);
}
