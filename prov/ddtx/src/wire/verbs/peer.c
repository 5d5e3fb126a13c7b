/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Peers of a verbs endpoint.
 *
 * A peer is known by its address blob (verbs_pure.h); its uid is the key of the table, so a
 * message's sender is found from its header.  Each peer gets an address handle (LID or GRH).
 *
 * DC transport: nothing to set up; a DCI is lent to the peer while it has work outstanding
 * (post.c), which keeps its messages in order.
 *
 * RC transport (non-mlx5, or DC refused): a QP per peer, connected on first use by a handshake
 * over the endpoints' UD QPs:
 *
 *    A: CONN_REQ {A's QPN, PSN, epoch a}        ->  B: create/connect its QP to A's, READY
 *    A: connect to B's QP, READY                <-  B: CONN_REP {B's QPN, PSN, epoch b, echo a}
 *
 * Both sides may start at once: a side that receives a REQ while its own REQ is pending
 * connects the QP it already made to the one named in the REQ and answers; the REP that then
 * arrives names the same QP and is ignored.  REQs are retransmitted every 200 ms (UD is
 * unreliable); after DDTX_VERBS_CONN_TRIES the peer is unreachable.  A QP that fails (remote
 * access error, a peer that reconnects) is drained, destroyed and connected again with a new
 * epoch; the work it flushed is posted again in order (post.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wire/verbs/verbs.h"

void ddtx_vpeers_init(struct ddtx_verbs_ep *ep)
{
	ep->peers = NULL;
	ep->npeers = ep->peers_cap = 0;
	ddtx_hindex_init(&ep->uid_index);
	ddtx_list_init(&ep->busy);
}

void ddtx_vpeers_fini(struct ddtx_verbs_ep *ep)
{
	for (uint32_t i = 0; i < ep->npeers; i++) {
		struct ddtx_vpeer *p = ep->peers[i];
		if (p->qp)
			ibv_destroy_qp(p->qp);
		if (p->ah)
			ibv_destroy_ah(p->ah);
		free(p);
	}
	free(ep->peers);
	ddtx_hindex_fini(&ep->uid_index);
	ep->peers = NULL;
	ep->npeers = ep->peers_cap = 0;
}

static bool peer_hash(const void *owner, uint32_t pos, uint64_t *hash)
{
	*hash = ddtx_hash_u64(((const struct ddtx_verbs_ep *)owner)->peers[pos]->addr.uid);
	return true;
}

int ddtx_vpeer_by_uid(struct ddtx_verbs_ep *ep, uint64_t uid, ddtx_peer_t *out)
{
	uint32_t cursor;

	for (uint32_t i = ddtx_hindex_first(&ep->uid_index, ddtx_hash_u64(uid), &cursor);
	     i != DDTX_HINDEX_END; i = ddtx_hindex_next(&ep->uid_index, &cursor)) {
		if (ep->peers[i]->addr.uid == uid) {
			*out = i;
			return 0;
		}
	}
	return -FI_ENOENT;
}

struct ddtx_vpeer *ddtx_vpeer_get(struct ddtx_verbs_ep *ep, ddtx_peer_t peer)
{
	return peer < ep->npeers ? ep->peers[peer] : NULL;
}

int ddtx_vpeer_insert(struct ddtx_verbs_ep *ep, const struct ddtx_vaddr *a,
		      const uint8_t *blob, ddtx_peer_t *out)
{
	struct ddtx_vpeer *p;
	ddtx_peer_t found;

	if (!ddtx_vpeer_by_uid(ep, a->uid, &found)) {
		if (memcmp(ep->peers[found]->blob, blob, DDTX_VADDR_LEN)) {
			DDTX_WARN(FI_LOG_AV, "verbs: two addresses with uid %#llx\n",
				  (unsigned long long)a->uid);
			return -FI_EINVAL;
		}
		*out = found;
		return 0;
	}
	if (a->transport != ep->self.transport) {
		DDTX_WARN(FI_LOG_AV, "verbs: peer uses %s, this endpoint %s: not reachable\n",
			  a->transport == DDTX_VTRANSPORT_DC ? "DC" : "RC",
			  ep->dc ? "DC" : "RC");
		return -FI_EINVAL;
	}
	if (ep->npeers >= DDTX_PEER_INVALID - 1)
		return -FI_ENOSPC;
	if (ep->npeers == ep->peers_cap) {
		uint32_t ncap = ep->peers_cap ? 2 * ep->peers_cap : 16;
		struct ddtx_vpeer **v = realloc(ep->peers, ncap * sizeof(*v));
		if (!v)
			return -FI_ENOMEM;
		ep->peers = v;
		ep->peers_cap = ncap;
	}
	if (ddtx_hindex_reserve(&ep->uid_index, ep->npeers + 1, ep->npeers, peer_hash, ep, false))
		return -FI_ENOMEM;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -FI_ENOMEM;
	p->addr = *a;
	memcpy(p->blob, blob, DDTX_VADDR_LEN);
	p->dci = -1;
	p->index = ep->npeers;
	ddtx_list_init(&p->ctrlq);
	ddtx_list_init(&p->queue);
	ddtx_list_init(&p->inflight);
	ddtx_list_init(&p->requeue);
	p->busy_entry.next = p->busy_entry.prev = &p->busy_entry;
	ep->peers[ep->npeers] = p;
	ddtx_hindex_add(&ep->uid_index, ddtx_hash_u64(a->uid), ep->npeers);
	*out = ep->npeers++;
	return 0;
}

void ddtx_vpeer_mark_dead(struct ddtx_verbs_ep *ep, ddtx_peer_t peer, const char *why)
{
	struct ddtx_vpeer *p = ddtx_vpeer_get(ep, peer);

	if (!p || p->state == DDTX_VCONN_DEAD)
		return;
	DDTX_WARN(FI_LOG_EP_DATA, "verbs: peer %u (uid %#llx) is unreachable: %s\n", peer,
		  (unsigned long long)p->addr.uid, why);
	p->state = DDTX_VCONN_DEAD;
	if (p->qp && p->outstanding) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
		ibv_modify_qp(p->qp, &a, IBV_QP_STATE);   /* flush what is in flight */
	}
	/* What is queued fails at the next flush (never from here: callers may be iterating). */
	if (!p->listed) {
		p->listed = true;
		ddtx_list_push_back(&ep->busy, &p->busy_entry);
	}
}

static uint32_t random_psn(void)
{
	return (uint32_t)(ddtx_time_ns() * 0x9e3779b1u) & 0xffffff;
}

static int send_conn(struct ddtx_verbs_ep *ep, struct ddtx_vpeer *p, uint8_t type,
		     uint32_t echo)
{
	struct ddtx_vconn c = { p->qp->qp_num, p->local_psn, p->epoch, echo };
	uint8_t payload[DDTX_VCONN_LEN];

	ddtx_vconn_pack(&c, payload);
	return ddtx_vpost_ud(ep, p, type, payload, sizeof(payload));
}

static int make_qp(struct ddtx_verbs_ep *ep, struct ddtx_vpeer *p)
{
	p->qp = ddtx_vqp_create_rc(ep);
	if (!p->qp)
		return -FI_ENOMEM;
	p->local_psn = random_psn();
	p->epoch++;
	return 0;
}

int ddtx_vpeer_ready(struct ddtx_verbs_ep *ep, ddtx_peer_t peer)
{
	struct ddtx_vpeer *p = ddtx_vpeer_get(ep, peer);

	if (!p || p->state == DDTX_VCONN_DEAD)
		return -FI_EIO;
	if (!p->ah) {
		struct ibv_ah_attr attr;

		ddtx_vdev_ah_attr(&ep->dom->dev, &p->addr, &attr);
		p->ah = ibv_create_ah(ep->dom->pd, &attr);
		if (!p->ah) {
			ddtx_vpeer_mark_dead(ep, peer, "no address handle");
			return -FI_EIO;
		}
	}
	if (ep->dc) {
		if (p->state == DDTX_VCONN_NONE)
			p->state = DDTX_VCONN_READY;
		return p->state == DDTX_VCONN_READY ? 0 : -FI_EAGAIN;
	}
	switch (p->state) {
	case DDTX_VCONN_READY:
		return 0;
	case DDTX_VCONN_NONE:
		if (make_qp(ep, p)) {
			ddtx_vpeer_mark_dead(ep, peer, "no RC QP");
			return -FI_EIO;
		}
		p->state = DDTX_VCONN_REQ_SENT;
		p->conn_tries = 1;
		p->conn_sent_ns = ddtx_coarse_time_ns();
		(void)send_conn(ep, p, DDTX_VMSG_CONN_REQ, 0);   /* retried by the tick */
		return -FI_EAGAIN;
	default:
		return -FI_EAGAIN;
	}
}

void ddtx_vpeer_tick(struct ddtx_verbs_ep *ep)
{
	uint64_t now;

	if (ep->dc)
		return;
	now = ddtx_coarse_time_ns();
	for (uint32_t i = 0; i < ep->npeers; i++) {
		struct ddtx_vpeer *p = ep->peers[i];

		if (p->state != DDTX_VCONN_REQ_SENT ||
		    now - p->conn_sent_ns < DDTX_VERBS_CONN_RETRY_NS)
			continue;
		if (++p->conn_tries > DDTX_VERBS_CONN_TRIES) {
			ddtx_vpeer_mark_dead(ep, i, "no answer to the connection request");
			continue;
		}
		p->conn_sent_ns = now;
		(void)send_conn(ep, p, DDTX_VMSG_CONN_REQ, 0);
	}
}

static void connect_to(struct ddtx_verbs_ep *ep, ddtx_peer_t peer, struct ddtx_vpeer *p,
		       const struct ddtx_vconn *c)
{
	if (ddtx_vqp_rc_connect(&ep->dom->dev, p->qp, &p->addr, c->rc_qpn, c->psn,
				p->local_psn)) {
		ddtx_vpeer_mark_dead(ep, peer, "RC connection refused by the device");
		return;
	}
	p->remote_qpn = c->rc_qpn;
	p->remote_psn = c->psn;
	p->state = DDTX_VCONN_READY;
}

void ddtx_vpeer_on_conn(struct ddtx_verbs_ep *ep, uint8_t type, const struct ddtx_vaddr *from,
			const uint8_t *blob, const struct ddtx_vconn *c)
{
	struct ddtx_vpeer *p;
	ddtx_peer_t peer;

	if (ep->dc || ddtx_vpeer_insert(ep, from, blob, &peer))
		return;
	p = ep->peers[peer];
	if (p->state == DDTX_VCONN_DEAD || ddtx_vpeer_ready(ep, peer) == -FI_EIO)
		return;
	/* ddtx_vpeer_ready() on a new peer sent our own REQ: fine, the rules below apply. */
	if (type == DDTX_VMSG_CONN_REP) {
		if (p->state == DDTX_VCONN_REQ_SENT && c->echo == p->epoch)
			connect_to(ep, peer, p, c);
		goto out;
	}
	if (c->epoch < p->remote_epoch)
		goto out;                        /* an old attempt, overtaken */
	switch (p->state) {
	case DDTX_VCONN_READY:
		if (c->rc_qpn == p->remote_qpn) {
			(void)send_conn(ep, p, DDTX_VMSG_CONN_REP, c->epoch);   /* lost REP */
			break;
		}
		/* The peer starts over: drain ours (flushes come back as errors), then retry. */
		p->state = DDTX_VCONN_RECOVER;
		if (p->qp) {
			struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
			ibv_modify_qp(p->qp, &a, IBV_QP_STATE);
		}
		if (!p->outstanding)
			ddtx_vpeer_drained(ep, peer);
		break;
	case DDTX_VCONN_REQ_SENT:
		connect_to(ep, peer, p, c);
		if (p->state == DDTX_VCONN_READY)
			(void)send_conn(ep, p, DDTX_VMSG_CONN_REP, c->epoch);
		break;
	default:
		break;                           /* RECOVER: the peer retries */
	}
	p->remote_epoch = c->epoch;
out:
	if (p->state == DDTX_VCONN_READY)
		ddtx_vpost_flush(ep);
}

void ddtx_vpeer_drained(struct ddtx_verbs_ep *ep, ddtx_peer_t peer)
{
	struct ddtx_vpeer *p = ddtx_vpeer_get(ep, peer);
	struct ddtx_list_entry *e;

	if (!p)
		return;
	/* Flushed items go back in front of the queue, in their original order. */
	while ((e = p->requeue.head.prev) != &p->requeue.head) {
		ddtx_list_remove(e);
		ddtx_list_push_front(&p->queue, e);
	}
	if (ep->dc) {
		if (p->dci >= 0) {
			struct ddtx_vdci *d = &ep->dci[p->dci];
			if (d->error && ddtx_vqp_reset_dci(ep, (uint32_t)p->dci))
				DDTX_WARN(FI_LOG_EP_DATA, "verbs: DCI %d could not be reset\n",
					  p->dci);
			else
				ep->dci_free[ep->ndci_free++] = p->dci;
			d->owner = -1;
			p->dci = -1;
		}
	} else if (p->state == DDTX_VCONN_RECOVER) {
		if (p->qp)
			ibv_destroy_qp(p->qp);
		p->qp = NULL;
		p->state = DDTX_VCONN_NONE;
	}
	if ((!ddtx_list_empty(&p->queue) || !ddtx_list_empty(&p->ctrlq)) && !p->listed) {
		p->listed = true;
		ddtx_list_push_back(&ep->busy, &p->busy_entry);
	}
}
