/* SPDX-License-Identifier: BSD-2-Clause */
/* Endpoint data-path state: creation, message dispatch, progress, peer liveness, cancel. */
#include <stdlib.h>
#include <string.h>

#include "proto/proto_internal.h"

/* Incoming message from the wire: validate the header, then hand it to its handler. */
static void on_recv(void *arg, ddtx_peer_t src, const void *buf, size_t len)
{
	struct ddtx_proto_ep *pep = arg;
	const struct ddtx_hdr_base *b = buf;
	if (len < sizeof(*b) || b->version != DDTX_PROTO_VERSION || !b->type ||
	    b->type >= DDTX_MSG_TYPE_MAX || len < ddtx_hdr_min_len(b->type)) {
		DDTX_WARN(FI_LOG_EP_DATA, "dropping malformed message (%zu bytes) from peer %u\n",
			  len, src);
		return;
	}
	const char *bad = ddtx_check_carried_ack(b);
	if (bad) {
		DDTX_WARN(FI_LOG_EP_DATA, "dropping message type %u from peer %u: bad %s\n",
			  b->type, src, bad);
		return;
	}
	/* The ACK it carries was owed before the message was sent. */
	if (b->flags & DDTX_HDR_ACKED)
		ddtx_send_on_carried_ack(pep, src, b->ack_id);
	switch (b->type) {
	case DDTX_MSG_EAGER:
		ddtx_recv_on_eager(pep, src, buf, len);
		break;
	case DDTX_MSG_RTS:
		ddtx_recv_on_rts(pep, src, buf, len);
		break;
	case DDTX_MSG_CTS:
		ddtx_send_on_cts(pep, src, buf, len);
		break;
	case DDTX_MSG_DATA:
		ddtx_recv_on_data(pep, src, buf, len);
		break;
	case DDTX_MSG_STREAM:
		ddtx_recv_on_stream(pep, src, buf, len);
		break;
	case DDTX_MSG_DONE:
		ddtx_recv_on_done(pep, src, buf, len);
		break;
	case DDTX_MSG_RMA_DATA:
		ddtx_rma_on_remote_data(pep, src, buf, len);
		break;
	case DDTX_MSG_ACK:
		ddtx_send_on_ack(pep, src, buf, len);
		break;
	case DDTX_MSG_LIST_REQ:
		ddtx_recv_on_list_req(pep, src, buf, len);
		break;
	case DDTX_MSG_ATOMIC:
		ddtx_atomic_on_req(pep, src, buf, len);
		break;
	case DDTX_MSG_ATOMIC_RESP:
		ddtx_atomic_on_resp(pep, src, buf, len);
		break;
	case DDTX_MSG_CREDIT:
		ddtx_recv_on_credit(pep, src, buf, len);
		break;
	}
}

/* A write/read finished: status is 0 or a negative FI_E* code from the wire. */
static void on_complete(void *arg, void *wr_context, int status)
{
	struct ddtx_proto_ep *pep = arg;
	enum ddtx_wr_kind kind = *(enum ddtx_wr_kind *)wr_context;
	if (kind == DDTX_WR_BATCH) {
		struct ddtx_batch *b = wr_context;
		b->writes_pending--;
		ddtx_batch_complete(pep, b, -status);
	} else if (kind == DDTX_WR_PULL) {
		ddtx_rndv_on_pull_complete(pep, wr_context, status);
	} else {
		ddtx_rma_on_complete(pep, wr_context, status);
	}
}

static const struct ddtx_wire_handlers handlers = {
	.on_recv = on_recv,
	.on_complete = on_complete,
};

int ddtx_proto_ep_open(struct ddtx_proto_domain *pd, const struct ddtx_proto_owner_ops *ops,
		       void *owner, struct ddtx_proto_ep **out)
{
	struct ddtx_proto_ep *pep = calloc(1, sizeof(*pep));
	if (!pep)
		return -FI_ENOMEM;
	pep->pd = pd;
	pep->owner_ops = ops;
	pep->owner = owner;
	pep->caps = ddtx_wire_domain_caps(pd->wire);
	ddtx_list_init(&pep->posted_msg);
	ddtx_list_init(&pep->posted_tag);
	ddtx_list_init(&pep->unexp_msg);
	ddtx_list_init(&pep->unexp_tag);
	ddtx_list_init(&pep->tx_active);
	ddtx_list_init(&pep->tx_failed);
	ddtx_list_init(&pep->tx_work);
	ddtx_list_init(&pep->rx_active);
	ddtx_list_init(&pep->rx_held);
	ddtx_list_init(&pep->rma_active);
	ddtx_list_init(&pep->atomic_active);
	ddtx_list_init(&pep->ctrl);
	ddtx_list_init(&pep->stages);
	ddtx_optable_init(&pep->txs);
	ddtx_optable_init(&pep->rxs);
	ddtx_optable_init(&pep->atomics);
	ddtx_rmkey_init(&pep->rmkeys, 256);
	int ret = ddtx_wire_ep_open(pd->wire, &handlers, pep, &pep->wire);
	if (ret) {
		ddtx_rmkey_fini(&pep->rmkeys);
		ddtx_optable_fini(&pep->atomics);
		ddtx_optable_fini(&pep->txs);
		ddtx_optable_fini(&pep->rxs);
		free(pep);
		return ret;
	}
	ddtx_list_push_back(&pd->eps, &pep->pd_entry);
	*out = pep;
	return 0;
}

void ddtx_proto_ep_enable(struct ddtx_proto_ep *pep, const struct ddtx_proto_ep_attr *attr)
{
	pep->attr = *attr;
	pep->enabled = true;
}

void ddtx_proto_ep_set_min_multi_recv(struct ddtx_proto_ep *pep, size_t min)
{
	pep->attr.min_multi_recv = min;
}

int ddtx_proto_ep_getname(struct ddtx_proto_ep *pep, void *addr, size_t *len)
{
	return ddtx_wire_ep_getname(pep->wire, addr, len);
}

static void free_list(struct ddtx_list *l, size_t offset)
{
	struct ddtx_list_entry *it;
	while ((it = ddtx_list_pop_front(l)))
		free((char *)it - offset);
}

void ddtx_proto_ep_close(struct ddtx_proto_ep *pep)
{
	struct ddtx_list_entry *it;
	if (!pep)
		return;
	pep->enabled = false;
	ddtx_ack_flush_all(pep); /* the senders wait for them */
	ddtx_choose_learn(pep);
	/* Close the wire first: no callback may reach the state freed below. */
	ddtx_wire_ep_close(pep->wire);
	pep->wire = NULL;
	struct ddtx_list *txq[] = {&pep->tx_active, &pep->tx_failed};
	for (size_t i = 0; i < 2; i++)
		while ((it = ddtx_list_pop_front(txq[i])))
			ddtx_tx_free(pep, ddtx_container_of(it, struct ddtx_tx, entry));
	struct ddtx_list *rxq[] = {&pep->rx_active, &pep->rx_held, &pep->posted_msg,
				   &pep->posted_tag};
	for (size_t i = 0; i < 4; i++)
		while ((it = ddtx_list_pop_front(rxq[i])))
			ddtx_rx_free(pep, ddtx_container_of(it, struct ddtx_rx, entry));
	while ((it = ddtx_list_pop_front(&pep->rma_active))) {
		struct ddtx_rma *op = ddtx_container_of(it, struct ddtx_rma, entry);
		free(op->inject_buf);
		free(op->segs);
		free(op);
	}
	ddtx_atomic_free_all(pep);
	ddtx_stage_free_all(pep);
	ddtx_iov_spares_free(pep);
	ddtx_spares_free(&pep->spare_rx);
	ddtx_spares_free(&pep->spare_tx);
	ddtx_spares_free(&pep->spare_pull);
	ddtx_ipc_drop(pep, true, 0); /* peers' allocations this endpoint mapped */
	struct ddtx_list *unexp[] = {&pep->unexp_msg, &pep->unexp_tag};
	for (size_t i = 0; i < 2; i++)
		while ((it = ddtx_list_pop_front(unexp[i]))) {
			struct ddtx_unexp *u = ddtx_container_of(it, struct ddtx_unexp, entry);
			pep->pd->unexp_held -= u->charged;
			ddtx_unexp_free(u);
		}
	free_list(&pep->ctrl, offsetof(struct ddtx_ctrl, entry));
	free(pep->credits);
	ddtx_optable_fini(&pep->txs);
	ddtx_optable_fini(&pep->rxs);
	ddtx_optable_fini(&pep->atomics);
	/* Keep the domain's remote-cache counts when the endpoint goes. */
	pep->pd->rmkey_hits += pep->rmkeys.hits;
	pep->pd->rmkey_misses += pep->rmkeys.misses;
	ddtx_list_remove(&pep->pd_entry);
	ddtx_rmkey_fini(&pep->rmkeys);
	ddtx_addr_cache_fini(pep);
	free(pep);
}

/* Fail every operation that waits on a peer whose process is gone. */
static void check_peers(struct ddtx_proto_ep *pep)
{
	if (ddtx_list_empty(&pep->tx_active) && ddtx_list_empty(&pep->rx_active) &&
	    ddtx_list_empty(&pep->atomic_active) && ddtx_list_empty(&pep->rx_held))
		return;
	uint64_t now = ddtx_coarse_time_ns();
	if (now < pep->next_peer_check_ns)
		return;
	pep->next_peer_check_ns = now + (uint64_t)ddtx_settings.peer_timeout_ms * 1000000;
	struct ddtx_list_entry *it, *tmp;
	bool gone = false;
	ddtx_list_foreach_safe(&pep->tx_active, it, tmp)
	{
		struct ddtx_tx *tx = ddtx_container_of(it, struct ddtx_tx, entry);
		gone = gone || !ddtx_wire_peer_alive(pep->wire, tx->peer);
	}
	struct ddtx_list *rxq[] = {&pep->rx_active, &pep->rx_held};
	for (size_t i = 0; i < 2; i++)
		ddtx_list_foreach_safe(rxq[i], it, tmp)
		{
			struct ddtx_rx *rx = ddtx_container_of(it, struct ddtx_rx, entry);
			gone = gone || !ddtx_wire_peer_alive(pep->wire, rx->peer);
		}
	ddtx_list_foreach_safe(&pep->atomic_active, it, tmp)
	{
		struct ddtx_atomic_op *op = ddtx_container_of(it, struct ddtx_atomic_op, entry);
		gone = gone || !ddtx_wire_peer_alive(pep->wire, op->peer);
	}
	if (!gone)
		return;
	/*
	 * A peer that closed may have sent its last messages (the acknowledgement of a delivery
	 * complete send, the end of a transfer) after our ring was drained and before it closed:
	 * they are in the ring now (its ring writes precede its closing).  Take them first, then
	 * fail what still waits on it.
	 */
	ddtx_wire_ep_progress(pep->wire);
	ddtx_list_foreach_safe(&pep->tx_active, it, tmp)
	{
		struct ddtx_tx *tx = ddtx_container_of(it, struct ddtx_tx, entry);
		if (ddtx_list_empty(&tx->batches) && !ddtx_wire_peer_alive(pep->wire, tx->peer)) {
			ddtx_ctrl_drop_peer(pep, tx->peer);
			ddtx_ipc_drop(pep, false, tx->peer); /* its allocations' mappings */
			ddtx_tx_fail(pep, tx, FI_EIO);
		}
	}
	ddtx_list_foreach_safe(&pep->rx_active, it, tmp)
	{
		struct ddtx_rx *rx = ddtx_container_of(it, struct ddtx_rx, entry);
		if (!ddtx_wire_peer_alive(pep->wire, rx->peer)) {
			ddtx_ctrl_drop_peer(pep, rx->peer);
			ddtx_ipc_drop(pep, false, rx->peer);
			ddtx_rx_fail(pep, rx, FI_EIO);
		}
	}
	/* A held receive has all its bytes: its CTS, which no one will read, is dropped and the
	 * receive completes (ddtx_rndv_release_held). */
	ddtx_list_foreach_safe(&pep->rx_held, it, tmp)
	{
		struct ddtx_rx *rx = ddtx_container_of(it, struct ddtx_rx, entry);
		if (!ddtx_wire_peer_alive(pep->wire, rx->peer))
			ddtx_ctrl_drop_peer(pep, rx->peer);
	}
	/* An atomic's answer may be the message the peer sent last: failed only if still missing.
	 * Failing one peer's atomics may remove several entries, so the walk restarts after each. */
	for (bool again = true; again;) {
		again = false;
		ddtx_list_foreach_safe(&pep->atomic_active, it, tmp)
		{
			struct ddtx_atomic_op *op =
				ddtx_container_of(it, struct ddtx_atomic_op, entry);
			if (!ddtx_wire_peer_alive(pep->wire, op->peer)) {
				ddtx_ctrl_drop_peer(pep, op->peer);
				ddtx_ipc_drop(pep, false, op->peer);
				ddtx_atomic_fail_peer(pep, op->peer, FI_EIO);
				again = true;
				break;
			}
		}
	}
}

void ddtx_proto_progress(struct ddtx_proto_ep *pep)
{
	if (!pep || !pep->wire)
		return;
	ddtx_ack_progress(pep);
	ddtx_choose_learn(pep);
	ddtx_wire_ep_progress(pep->wire);
	/* An idle poll (the ping-pong's wait) costs only the wire's peek and these tests. */
	if (!ddtx_list_empty(&pep->ctrl))
		ddtx_ctrl_flush(pep);
	if (!ddtx_list_empty(&pep->rx_held))
		ddtx_rndv_release_held(pep);
	if (!ddtx_list_empty(&pep->tx_work))
		ddtx_send_progress(pep);
	check_peers(pep);
}

ssize_t ddtx_proto_cancel(struct ddtx_proto_ep *pep, void *context)
{
	return pep && ddtx_recv_cancel(pep, ddtx_stage_find(pep, context)) ? 0 : -FI_ENOENT;
}
