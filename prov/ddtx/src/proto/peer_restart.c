/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A peer the wire took as gone, started afresh when a new send goes to it.
 *
 * An endpoint bound to a service has the same address in its next process (the ofi wire: a
 * uid computed from the service's address), so a server restarted on its service is, to a
 * client that kept its endpoint and its AV entry, the same fi_addr and the same wire peer.
 * The sends that met the old process's end get error completions (-FI_EIO), as they must; the
 * sends after them used to fail too, for ever, the wire still holding the old process's ring,
 * connection and keys.  Now a send that finds the peer gone starts it afresh, once nothing of
 * ours waits on the old process: every operation with it has ended (completed or failed, by
 * the send error or by the peer check), so none can take an answer of the new process for one
 * of the old.  What only the old process could use goes: control messages and delivery ACKs
 * still owed to it, and unexpected rendezvous offers from it (reading them would name its
 * keys, which the new process may have given to other memory).  Its unexpected eager messages
 * stay: their bytes are here.
 */
#include <stdlib.h>

#include "proto/proto_internal.h"

static bool list_names(const struct ddtx_list *l, size_t peer_off, size_t entry_off,
		       ddtx_peer_t peer)
{
	for (const struct ddtx_list_entry *e = l->head.next; e != &l->head; e = e->next) {
		const uint8_t *op = (const uint8_t *)e - entry_off;
		if (*(const ddtx_peer_t *)(op + peer_off) == peer)
			return true;
	}
	return false;
}

#define NAMES(list, type, peer) \
	list_names(list, offsetof(type, peer), offsetof(type, entry), peer)

/* Does an operation of ours still wait on peer (a send, a receive, an RMA op, an atomic)? */
static bool busy_with(const struct ddtx_proto_ep *pep, ddtx_peer_t peer)
{
	return NAMES(&pep->tx_active, struct ddtx_tx, peer) ||
	       NAMES(&pep->tx_failed, struct ddtx_tx, peer) ||
	       NAMES(&pep->rx_active, struct ddtx_rx, peer) ||
	       NAMES(&pep->rx_held, struct ddtx_rx, peer) ||
	       NAMES(&pep->rma_active, struct ddtx_rma, peer) ||
	       NAMES(&pep->atomic_active, struct ddtx_atomic_op, peer);
}

static void drop_unexpected_offers(struct ddtx_proto_ep *pep, ddtx_peer_t peer)
{
	struct ddtx_list *q[] = {&pep->unexp_msg, &pep->unexp_tag};
	for (size_t i = 0; i < 2; i++) {
		struct ddtx_list_entry *it, *tmp;
		ddtx_list_foreach_safe(q[i], it, tmp)
		{
			struct ddtx_unexp *u = ddtx_container_of(it, struct ddtx_unexp, entry);
			if (u->peer != peer || u->type != DDTX_MSG_RTS)
				continue;
			DDTX_WARN(FI_LOG_EP_DATA, "dropping an unexpected %zu-byte message from peer "
				  "%u: its process is gone\n", u->len, peer);
			ddtx_list_remove(it);
			ddtx_unexp_free(u);
		}
	}
}

bool ddtx_peer_restart(struct ddtx_proto_ep *pep, ddtx_peer_t peer)
{
	if (ddtx_wire_peer_alive(pep->wire, peer) || busy_with(pep, peer))
		return false;
	int ret = ddtx_wire_peer_revive(pep->wire, peer);
	if (ret) {
		if (ret != -FI_ENOSYS)
			DDTX_INFO(FI_LOG_EP_DATA, "peer %u is gone and cannot start afresh yet: "
				  "%s\n", peer, fi_strerror(-ret));
		return false;
	}
	ddtx_ctrl_drop_peer(pep, peer);
	ddtx_ack_drop_peer(pep, peer);
	ddtx_credit_drop_peer(pep, peer);
	drop_unexpected_offers(pep, peer);
	pep->pd->stats.peer_restarts++;
	DDTX_INFO(FI_LOG_EP_DATA, "peer %u was gone: started afresh for a new send\n", peer);
	return true;
}
