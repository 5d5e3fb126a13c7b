/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Progress: read the core's CQ (which also drives a core with manual progress), deliver
 * messages to on_recv and answer key requests, finish sends and RMA work requests, and turn the
 * core's error completions into the status of that one operation.  Handlers run only here.
 */
#include <stdlib.h>
#include <string.h>

#include "wire/ofi/ofi.h"

void ddtx_ofi_ctrl_send(struct ddtx_ofi_ep *ep, ddtx_peer_t peer, uint8_t type,
			const void *payload, size_t len)
{
	struct ddtx_ofi_buf *b = ddtx_list_empty(&ep->ctrl) ? ddtx_ofi_tx_get(ep) : NULL;
	struct ddtx_ofi_ctrl *c;

	if (b) {
		if (len)
			memcpy(ddtx_ofi_tx_prepare(ep, b, peer, type), payload, len);
		else
			ddtx_ofi_tx_prepare(ep, b, peer, type);
		b->len = DDTX_OFI_PAYLOAD_OFF - b->start + len;
		(void)ddtx_ofi_tx_post(ep, b, true);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		DDTX_WARN(FI_LOG_EP_DATA, "ofi: dropping a control message to peer %u\n", peer);
		return;
	}
	c->peer = peer;
	c->type = type;
	c->len = len;
	if (len)
		memcpy(c->payload, payload, len);
	ddtx_list_push_back(&ep->ctrl, &c->entry);
}

void ddtx_ofi_ctrl_forget(struct ddtx_ofi_ep *ep, ddtx_peer_t peer)
{
	struct ddtx_list_entry *it, *tmp;

	ddtx_list_foreach_safe(&ep->ctrl, it, tmp)
	{
		struct ddtx_ofi_ctrl *c = ddtx_container_of(it, struct ddtx_ofi_ctrl, entry);

		if (c->peer == peer) {
			ddtx_list_remove(it);
			free(c);
		}
	}
}

static void ctrl_flush(struct ddtx_ofi_ep *ep)
{
	while (!ddtx_list_empty(&ep->ctrl)) {
		struct ddtx_ofi_buf *b = ddtx_ofi_tx_get(ep);
		struct ddtx_ofi_ctrl *c;

		if (!b)
			return;
		c = ddtx_container_of(ddtx_list_pop_front(&ep->ctrl), struct ddtx_ofi_ctrl, entry);
		memcpy(ddtx_ofi_tx_prepare(ep, b, c->peer, c->type), c->payload, c->len);
		b->len = DDTX_OFI_PAYLOAD_OFF - b->start + c->len;
		(void)ddtx_ofi_tx_post(ep, b, true);
		free(c);
	}
}

int ddtx_ofi_deliver(struct ddtx_ofi_ep *ep, ddtx_peer_t peer, const uint8_t *data, size_t len)
{
	if (ep->handlers.on_recv)
		ep->handlers.on_recv(ep->handler_arg, peer, data, len);
	return 1;
}

/* One received message; 1 if it was delivered to on_recv. */
static int handle_msg(struct ddtx_ofi_ep *ep, const uint8_t *data, size_t len)
{
	struct ddtx_ofi_hdr h;
	ddtx_peer_t peer;
	size_t off = DDTX_OFI_HDR_LEN;

	if (ddtx_ofi_hdr_unpack(data, len, &h))
		goto bad;
	if (h.flags & DDTX_OFI_F_ADDR) {
		struct ddtx_ofi_blob b;

		if (ddtx_ofi_blob_unpack(data + off, DDTX_OFI_BLOB_LEN, ep->dom->core_id, &b) ||
		    b.uid != h.src_uid ||
		    ddtx_ofi_peer_insert(&ep->base, data + off, DDTX_OFI_BLOB_LEN, &peer))
			goto bad;
		off = DDTX_OFI_PAYLOAD_OFF;
	} else if (ddtx_ofi_peer_by_uid(ep, h.src_uid, &peer)) {
		DDTX_WARN(FI_LOG_EP_DATA, "ofi: message from an unknown sender %#llx dropped\n",
			  (unsigned long long)h.src_uid);
		return 0;
	}
	ep->peers[peer]->heard = true;
	ddtx_ofi_live_heard(ep, ep->peers[peer]);
	data += off;
	len -= off;
	switch (h.type) {
	case DDTX_OFI_MSG_DATA:
		if (!ep->peers[peer]->ring_offered)
			ddtx_ofi_ring_offer(ep, peer);
		return ddtx_ofi_deliver(ep, peer, data, len);
	case DDTX_OFI_MSG_RING_GRANT:
	case DDTX_OFI_MSG_RING_START:
	case DDTX_OFI_MSG_RING_CREDIT: {
		int n = ddtx_ofi_ring_ctrl_in(ep, peer, h.type, data, len);

		if (n < 0)
			goto bad;
		return n;
	}
	case DDTX_OFI_MSG_KEY_REQ: {
		struct ddtx_ofi_key_rep rep;
		uint8_t out[DDTX_OFI_KEY_REP_LEN];
		uint64_t key = 0;

		if (len != DDTX_OFI_KEY_REQ_LEN)
			goto bad;
		for (int i = 7; i >= 0; i--)
			key = (key << 8) | data[i];
		ddtx_ofi_key_lookup(ep->dom, key, &rep);
		ddtx_ofi_key_rep_pack(&rep, out);
		ddtx_ofi_ctrl_send(ep, peer, DDTX_OFI_MSG_KEY_REP, out, sizeof(out));
		return 0;
	}
	case DDTX_OFI_MSG_PROBE:
		if (len)
			goto bad;
		ddtx_ofi_ctrl_send(ep, peer, DDTX_OFI_MSG_ANSWER, NULL, 0);
		return 0;
	case DDTX_OFI_MSG_ANSWER:
		if (len)
			goto bad;
		return 0;
	case DDTX_OFI_MSG_KEY_REP: {
		struct ddtx_ofi_key_rep rep;

		if (ddtx_ofi_key_rep_unpack(data, len, &rep))
			goto bad;
		ddtx_ofi_key_rep_in(ep, peer, &rep);
		return 0;
	}
	default:
		break;
	}
bad:
	DDTX_WARN(FI_LOG_EP_DATA, "ofi: malformed message (%zu bytes) dropped\n", len);
	return 0;
}

static void repost(struct ddtx_ofi_ep *ep, struct ddtx_ofi_buf *b)
{
	if (!ddtx_list_empty(&ep->rx_repost) || ddtx_ofi_post_recv(ep, b))
		ddtx_list_push_back(&ep->rx_repost, &b->entry);
}

static void repost_flush(struct ddtx_ofi_ep *ep)
{
	while (!ddtx_list_empty(&ep->rx_repost)) {
		struct ddtx_list_entry *e = ddtx_list_first(&ep->rx_repost);

		if (ddtx_ofi_post_recv(ep, ddtx_container_of(e, struct ddtx_ofi_buf, entry)))
			return;
		ddtx_list_remove(e);
	}
}

/* A completion (status 0) or an error completion of the object at ctx. */
static int complete(struct ddtx_ofi_ep *ep, void *ctx, size_t len, int status)
{
	enum ddtx_ofi_ctx_kind kind;
	int n = 0;

	if (!ctx) {
		/* an error of no operation of ours (the core lost a connection) */
		DDTX_INFO(FI_LOG_EP_DATA, "ofi: core error without a context: %s\n",
			  fi_strerror(-status));
		return 0;
	}
	kind = ((struct ddtx_ofi_buf *)ctx)->kind;
	/* kind sits after the fi_context2 in both structures */
	_Static_assert(offsetof(struct ddtx_ofi_buf, kind) == offsetof(struct ddtx_ofi_wr, kind),
		       "kind at the same offset");
	switch (kind) {
	case DDTX_OFI_BUF_RX: {
		struct ddtx_ofi_buf *b = ctx;

		b->done = true;
		b->status = status;
		b->len = len;
		/* Deliver in posting (= matching) order. */
		while (ep->rx_count && ep->rx_ring[ep->rx_head]->done) {
			b = ep->rx_ring[ep->rx_head];
			ep->rx_head = (ep->rx_head + 1) % DDTX_OFI_RX_BUFS;
			ep->rx_count--;
			if (!b->status)
				n += handle_msg(ep, b->data, b->len);
			else if (b->status != -FI_ECANCELED)
				DDTX_WARN(FI_LOG_EP_DATA, "ofi: receive failed: %s\n",
					  fi_strerror(-b->status));
			/* canceled: at close on RDM; on FI_EP_MSG also a connection's message cut
			 * short when it went down, and the shared buffer serves the others */
			if (b->status != -FI_ECANCELED || ep->dom->ep_msg)
				repost(ep, b);
		}
		break;
	}
	case DDTX_OFI_BUF_TX: {
		struct ddtx_ofi_buf *b = ctx;

		if (status) {
			DDTX_WARN(FI_LOG_EP_DATA, "ofi: send to peer %u failed: %s\n", b->peer,
				  fi_strerror(-status));
			ep->peers[b->peer]->dead = true;
		}
		ddtx_ofi_tx_done(ep, b);
		break;
	}
	case DDTX_OFI_WR:
		ddtx_ofi_wr_done(ep, ctx, status);
		n = 1;
		break;
	default:
		DDTX_WARN(FI_LOG_EP_DATA, "ofi: a completion of an unknown context\n");
		break;
	}
	return n;
}

int ddtx_ofi_ep_progress(struct ddtx_wire_ep *wep)
{
	struct ddtx_ofi_ep *ep = ddtx_oep_of(wep);
	struct fi_cq_data_entry cqe[DDTX_OFI_CQ_BATCH];
	int n = 0;

	if (!ep)
		return 0;
	n += ddtx_ofi_conn_progress(ep);
	n += ddtx_ofi_rma_report(ep);
	for (;;) {
		ssize_t got = fi_cq_read(ep->cq, cqe, DDTX_OFI_CQ_BATCH);

		if (got > 0) {
			for (ssize_t i = 0; i < got; i++) {
				/* a peer's write into our ring: no context of ours (NULL on
				 * tcp;ofi_rxm, the peer's message id on shm: not looked at) */
				if ((cqe[i].flags & (FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA)) ==
				    (FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA))
					n += ddtx_ofi_ring_write_in(ep, cqe[i].data);
				else
					n += complete(ep, cqe[i].op_context, cqe[i].len, 0);
			}
			/* Fewer than asked: the CQ is drained for now.  Reading it again would poll
			 * the core's sockets once more (a system call on tcp) for what the next
			 * progress call finds anyway. */
			if (got < DDTX_OFI_CQ_BATCH)
				break;
			continue;
		}
		if (got == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			if (fi_cq_readerr(ep->cq, &err, 0) != 1)
				break;
			if (err.flags & FI_REMOTE_WRITE) {
				/* a peer's failed write into our ring: its context is not ours */
				DDTX_WARN(FI_LOG_EP_DATA, "ofi: a ring write failed here: %s\n",
					  fi_strerror(err.err ? err.err : FI_EIO));
				continue;
			}
			n += complete(ep, err.op_context, err.len, -(int)(err.err ? err.err : FI_EIO));
			continue;
		}
		if (got != -FI_EAGAIN)
			DDTX_WARN(FI_LOG_EP_DATA, "ofi: fi_cq_read: %s\n", fi_strerror((int)-got));
		break;
	}
	repost_flush(ep);
	ddtx_ofi_tx_flush(ep);
	ctrl_flush(ep);
	ddtx_ofi_rma_resume(ep);
	n += ddtx_ofi_rma_report(ep);
	return n;
}
