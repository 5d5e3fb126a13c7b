/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Control messages (CTS, DONE, RMA_DATA): sent at once when the peer's receive queue has room,
 * otherwise queued in order and retried by progress.  Messages that affect matching order
 * (EAGER, RTS) never come here: their senders get -FI_EAGAIN instead, also while control
 * messages to that peer wait here (ddtx_ctrl_waiting), so that nothing of ours overtakes them.
 */
#include <stdlib.h>
#include <string.h>

#include "proto/proto_internal.h"

void ddtx_hdr_init(struct ddtx_hdr_base *b, enum ddtx_msg_type type, uint16_t flags)
{
	b->type = (uint8_t)type;
	b->version = DDTX_PROTO_VERSION;
	b->flags = flags;
	b->ack_id = 0;
}

static bool queued_for(struct ddtx_proto_ep *pep, ddtx_peer_t peer)
{
	struct ddtx_list_entry *it, *tmp;
	ddtx_list_foreach_safe(&pep->ctrl, it, tmp)
	{
		if (ddtx_container_of(it, struct ddtx_ctrl, entry)->peer == peer)
			return true;
	}
	return false;
}

/* Control messages up to this size carry an owed ACK (a copy on the stack): CTS with a few
 * descriptors, DONE, ACK, LIST_REQ, RMA_DATA, ATOMIC_RESP without old values. */
#define CARRY_COPY_MAX 256

uint64_t ddtx_ctrl_send(struct ddtx_proto_ep *pep, ddtx_peer_t peer, const void *msg, size_t len)
{
	uint64_t copy[CARRY_COPY_MAX / sizeof(uint64_t)];
	if (pep->nacks && len <= sizeof(copy)) {
		memcpy(copy, msg, len);
		ddtx_ack_carry(pep, peer, (struct ddtx_hdr_base *)copy);
		msg = copy;
	}
	/* Keep per-peer order: nothing overtakes a message already waiting. */
	if (!queued_for(pep, peer)) {
		int ret = ddtx_wire_send(pep->wire, peer, msg, len, NULL, 0);
		if (ret != -FI_EAGAIN) {
			if (ret)
				DDTX_INFO(FI_LOG_EP_DATA, "control message to peer %u lost: %s\n",
					  peer, fi_strerror(-ret));
			return 0;
		}
	}
	struct ddtx_ctrl *c = malloc(sizeof(*c) + len);
	if (!c) {
		DDTX_WARN(FI_LOG_EP_DATA, "out of memory queueing a control message\n");
		return 0;
	}
	c->seq = ++pep->ctrl_seq;
	c->peer = peer;
	c->len = len;
	memcpy(c->msg, msg, len);
	ddtx_list_push_back(&pep->ctrl, &c->entry);
	return c->seq;
}

/* The queue is in seq order (drops only take entries out): seq has left once the oldest entry
 * still queued is younger. */
bool ddtx_ctrl_left(struct ddtx_proto_ep *pep, uint64_t seq)
{
	struct ddtx_list_entry *first = ddtx_list_first(&pep->ctrl);
	return !first || ddtx_container_of(first, struct ddtx_ctrl, entry)->seq > seq;
}

void ddtx_ctrl_flush(struct ddtx_proto_ep *pep)
{
	struct ddtx_list_entry *it, *tmp;
	ddtx_list_foreach_safe(&pep->ctrl, it, tmp)
	{
		struct ddtx_ctrl *c = ddtx_container_of(it, struct ddtx_ctrl, entry);
		int ret = ddtx_wire_send(pep->wire, c->peer, c->msg, c->len, NULL, 0);
		if (ret == -FI_EAGAIN)
			return; /* retry later; later messages wait behind it */
		if (ret)
			DDTX_INFO(FI_LOG_EP_DATA, "control message to peer %u lost: %s\n",
				  c->peer, fi_strerror(-ret));
		ddtx_list_remove(&c->entry);
		free(c);
	}
}

bool ddtx_ctrl_waiting(struct ddtx_proto_ep *pep, ddtx_peer_t peer)
{
	if (ddtx_list_empty(&pep->ctrl))
		return false;
	ddtx_ctrl_flush(pep);
	return queued_for(pep, peer);
}

void ddtx_ctrl_drop_peer(struct ddtx_proto_ep *pep, ddtx_peer_t peer)
{
	struct ddtx_list_entry *it, *tmp;
	ddtx_list_foreach_safe(&pep->ctrl, it, tmp)
	{
		struct ddtx_ctrl *c = ddtx_container_of(it, struct ddtx_ctrl, entry);
		if (c->peer == peer) {
			ddtx_list_remove(&c->entry);
			free(c);
		}
	}
}
