/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Liveness of the ofi wire's peers, for a core that reports nothing when a host vanishes
 * (tcp;ofi_rxm: a link taken down leaves the connection to TCP's retransmission timeout, many
 * minutes).  With FI_DDTX_FABRIC_TIMEOUT_MS = T, while the protocols wait on a peer that has
 * sent nothing for T/2 the wire sends it a PROBE; when nothing at all comes from it within T
 * after that, the peer is dead: its writes and reads in flight fail with -FI_EIO, later sends
 * fail at once, and the protocols fail what waits on it.  Every message from the peer counts as
 * a sign of life; a PROBE is answered from progress.  Other peers are not affected (a dead
 * peer's unfinished sends hold at most DDTX_OFI_TX_PER_PEER bounce buffers).
 *
 * A dead peer is started afresh when the protocols ask (ddtx_wire_peer_revive: they hold nothing
 * of it any more and send to it again).  An endpoint bound to a service has the same address
 * in its next process, so a server restarted on its service is the same peer to a client that
 * kept its endpoint: without this, every later send to it failed, its ring grant, connection
 * and keys being the old process's.  Its rings, connection, application keys and queued
 * control messages are dropped; the core (rxm, or our own connection request) reaches the new
 * process, which grants a ring again.
 */
#include "common/clock.h"
#include "wire/ofi/ofi.h"

void ddtx_ofi_live_heard(struct ddtx_ofi_ep *ep, struct ddtx_ofi_peer *p)
{
	(void)ep;
	p->heard_ns = ddtx_coarse_time_ns();
	p->probe_ns = 0;
}

bool ddtx_ofi_peer_alive(struct ddtx_wire_ep *wep, ddtx_peer_t peer)
{
	struct ddtx_ofi_ep *ep = ddtx_oep_of(wep);
	struct ddtx_ofi_peer *p = ddtx_ofi_peer_get(ep, peer);
	uint64_t now, timeout;

	if (!p || p->dead)
		return false;
	timeout = (uint64_t)ep->dom->params.fabric_timeout_ms * 1000000;
	if (!timeout)
		return true;
	now = ddtx_coarse_time_ns();
	if (p->probe_ns && now - p->probe_ns > timeout) {
		DDTX_WARN(FI_LOG_EP_DATA, "ofi: peer %u has been silent for %llu ms and did not "
			  "answer a probe: taken as gone\n", peer,
			  (unsigned long long)((now - p->heard_ns) / 1000000));
		ddtx_ofi_peer_gone(ep, peer);
		return false;
	}
	if (!p->probe_ns && now - p->heard_ns > timeout / 2) {
		ddtx_ofi_ctrl_send(ep, peer, DDTX_OFI_MSG_PROBE, NULL, 0);
		p->probe_ns = now;
	}
	return true;
}

int ddtx_ofi_peer_revive(struct ddtx_wire_ep *wep, ddtx_peer_t peer)
{
	struct ddtx_ofi_ep *ep = ddtx_oep_of(wep);
	struct ddtx_ofi_peer *p = ddtx_ofi_peer_get(ep, peer);

	if (!p)
		return -FI_EINVAL;
	if (!p->dead)
		return 0;
	/* The old process's sends and RMA must all be back from the core first: their
	 * completions name this peer, and a ring credit or a write counted now would be the new
	 * one's. */
	if (p->tx_inflight || p->reads || p->writes || p->nparked || !ddtx_ofi_rma_idle(ep, peer))
		return -FI_EBUSY;
	ddtx_ofi_ring_forget(ep, p);
	ddtx_ofi_conn_forget(ep, p);
	ddtx_ofi_rkeys_forget(ep, peer);
	ddtx_ofi_ctrl_forget(ep, peer);
	p->heard = false;
	p->probe_ns = 0;
	p->heard_ns = ddtx_coarse_time_ns();
	p->dead = false;
	DDTX_INFO(FI_LOG_EP_DATA, "ofi: peer %u started afresh after it was gone\n", peer);
	return 0;
}

void ddtx_ofi_peer_gone(struct ddtx_ofi_ep *ep, ddtx_peer_t peer)
{
	struct ddtx_ofi_peer *p = ep->peers[peer];

	if (p->dead)
		return;
	p->dead = true;
	ddtx_ofi_rma_fail_peer(ep, peer, -FI_EIO);
}
