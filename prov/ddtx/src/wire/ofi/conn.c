/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connections over a core with FI_EP_MSG only (FI_DDTX_OFI_EP_TYPE=msg; tcp, verbs): what
 * ofi_rxm does for an RDM stack, done by the wire so that no rxm protocol sits between ddtx and
 * the core.
 *
 *  - each wire endpoint listens on a passive endpoint; its address is the blob's core address;
 *  - a peer's connection is asked for on the first send or write to it (fi_connect, the
 *    connection data = our blob, so the acceptor knows the requester before any message) and
 *    accepted from the EQ during progress; until it is up, that peer's messages wait in
 *    tx_deferred and its RMA ops are parked, other peers' are not held;
 *  - both sides asking at once: the request of the larger uid wins on both sides
 *    (ddtx_ofi_connreq_decide); the loser is refused and closed when its answer comes.  A refusal
 *    from a peer of a larger uid means its request is on its way: we ask again (bounded,
 *    ddtx_ofi_refusal_retry) rather than give it up;
 *  - one CQ and one shared receive context serve every connection, so the receive buffers are
 *    posted once (endpoint.c) and delivered in posting order as on an RDM endpoint;
 *  - a connection shut down or failed (the peer closed or died: tcp reports it at once, its
 *    queued operations flushed as error completions) makes the peer dead, as a failed send does.
 *    A vanished host (no FIN, no RST) is left to liveness.c, as on RDM.
 */
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_eq.h>

#include "wire/ofi/ofi.h"

static const char *state_name(enum ddtx_ofi_conn_state s)
{
	switch (s) {
	case DDTX_OFI_CONN_CONNECTING: return "requested";
	case DDTX_OFI_CONN_ACCEPTING: return "accepted";
	case DDTX_OFI_CONN_UP: return "up";
	default: return "closed";
	}
}

static struct ddtx_ofi_conn *conn_new(struct ddtx_ofi_ep *ep, ddtx_peer_t peer)
{
	struct ddtx_ofi_conn *c = calloc(1, sizeof(*c));

	if (c) {
		c->peer = peer;
		ddtx_list_push_back(&ep->conns, &c->entry);
	}
	return c;
}

static void conn_free(struct ddtx_ofi_conn *c)
{
	ddtx_list_remove(&c->entry);
	if (c->ep)
		fi_close(&c->ep->fid);
	free(c);
}

/* Every connection shares the endpoint's EQ, CQ and receive context. */
static int conn_bind(struct ddtx_ofi_ep *ep, struct ddtx_ofi_conn *c)
{
	int ret = fi_ep_bind(c->ep, &ep->eq->fid, 0);

	if (!ret)
		ret = fi_ep_bind(c->ep, &ep->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_ep_bind(c->ep, &ep->ep->fid, 0);
	if (!ret)
		ret = fi_enable(c->ep);
	return ret;
}

int ddtx_ofi_conn_open(struct ddtx_ofi_ep *ep, const void *src, size_t srclen, bool by_service)
{
	struct ddtx_ofi_domain *dom = ep->dom;
	struct fi_info *info = dom->core;
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_NONE };
	struct fi_rx_attr rx_attr = *dom->core->rx_attr;
	uint8_t name[256];
	size_t len = sizeof(name);
	int ret;

	if (src) {
		info = ddtx_ofi_info_addrs(dom, src, srclen, NULL, 0);
		if (!info)
			return -FI_ENOMEM;
	}
	rx_attr.size = DDTX_OFI_RX_BUFS;
	ret = fi_eq_open(dom->fabric, &eq_attr, &ep->eq, NULL);
	if (!ret)
		ret = fi_passive_ep(dom->fabric, info, &ep->pep, NULL);
	if (info != dom->core)
		fi_freeinfo(info);
	if (!ret)
		ret = fi_pep_bind(ep->pep, &ep->eq->fid, 0);
	if (!ret)
		ret = fi_listen(ep->pep);
	if (!ret)
		ret = fi_getname(&ep->pep->fid, name, &len);
	if (!ret)
		ret = fi_srx_context(dom->domain, &rx_attr, &ep->ep, NULL);
	if (!ret)
		ret = ddtx_ofi_cq_open(ep);
	if (ret) {
		DDTX_WARN(FI_LOG_EP_CTRL, "ofi: listening endpoint (%s, FI_EP_MSG): %s\n",
			  dom->core->fabric_attr->prov_name, fi_strerror(-ret));
		return ret;
	}
	return ddtx_ofi_ep_set_addr(ep, name, len, src && by_service);
}

void ddtx_ofi_conn_close(struct ddtx_ofi_ep *ep)
{
	while (!ddtx_list_empty(&ep->conns))
		conn_free(ddtx_container_of(ddtx_list_first(&ep->conns), struct ddtx_ofi_conn,
					    entry));
	for (size_t i = 0; i < ep->npeers; i++)
		ep->peers[i]->conn = NULL;
	if (ep->pep)
		fi_close(&ep->pep->fid);
	if (ep->eq)
		fi_close(&ep->eq->fid);
	ep->pep = NULL;
	ep->eq = NULL;
}

/* Ask the peer for a connection; -FI_EIO (the peer made dead) if it cannot even be asked. */
static int conn_request(struct ddtx_ofi_ep *ep, ddtx_peer_t peer)
{
	struct ddtx_ofi_peer *p = ep->peers[peer];
	struct ddtx_ofi_blob b;
	struct ddtx_ofi_conn *c = NULL;
	struct fi_info *info = NULL;
	int ret = ddtx_ofi_blob_unpack(p->blob, DDTX_OFI_BLOB_LEN, ep->dom->core_id, &b);

	if (!ret) {
		/* no src_addr: the kernel picks the interface that reaches the peer */
		info = ddtx_ofi_info_addrs(ep->dom, NULL, 0, b.core_addr, b.core_len);
		c = conn_new(ep, peer);
		ret = info && c ? 0 : -FI_ENOMEM;
	}
	if (!ret)
		ret = fi_endpoint(ep->dom->domain, info, &c->ep, c);
	if (!ret)
		ret = conn_bind(ep, c);
	if (!ret)
		ret = fi_connect(c->ep, b.core_addr, ep->blob, DDTX_OFI_BLOB_LEN);
	fi_freeinfo(info);
	if (ret) {
		DDTX_WARN(FI_LOG_EP_CTRL, "ofi: cannot ask peer %u for a connection: %s\n", peer,
			  fi_strerror(-ret));
		if (c)
			conn_free(c);
		ddtx_ofi_peer_gone(ep, peer);
		return -FI_EIO;
	}
	c->state = DDTX_OFI_CONN_CONNECTING;
	p->conn = c;
	DDTX_DBG(FI_LOG_EP_CTRL, "ofi: connection to peer %u requested\n", peer);
	return 0;
}

int ddtx_ofi_conn_get(struct ddtx_ofi_ep *ep, ddtx_peer_t peer, struct fid_ep **out)
{
	struct ddtx_ofi_peer *p;

	if (!ep->dom->ep_msg) {
		*out = ep->ep;
		return 0;
	}
	p = ep->peers[peer];
	if (p->dead)
		return -FI_EIO;
	if (!p->conn) {
		int ret = conn_request(ep, peer);
		return ret ? ret : -FI_EAGAIN;
	}
	if (p->conn->state != DDTX_OFI_CONN_UP)
		return -FI_EAGAIN;
	*out = p->conn->ep;
	return 0;
}

bool ddtx_ofi_conn_waiting(struct ddtx_ofi_ep *ep, ddtx_peer_t peer)
{
	const struct ddtx_ofi_conn *c = ep->dom->ep_msg ? ep->peers[peer]->conn : NULL;

	return c && c->state != DDTX_OFI_CONN_UP;
}

void ddtx_ofi_conn_forget(struct ddtx_ofi_ep *ep, struct ddtx_ofi_peer *p)
{
	if (ep->dom->ep_msg && p->conn) {
		conn_free(p->conn);
		p->conn = NULL;
	}
	p->refusals = 0;
}

static void refuse(struct ddtx_ofi_ep *ep, struct fi_eq_cm_entry *req)
{
	int ret = fi_reject(ep->pep, req->info->handle, NULL, 0);

	if (ret)
		DDTX_INFO(FI_LOG_EP_CTRL, "ofi: fi_reject: %s\n", fi_strerror(-ret));
}

/* A peer asks for a connection; its blob is the request's data. */
static void on_request(struct ddtx_ofi_ep *ep, struct fi_eq_cm_entry *req, size_t datalen)
{
	struct ddtx_ofi_blob b;
	struct ddtx_ofi_peer *p;
	struct ddtx_ofi_conn *c;
	enum ddtx_ofi_connreq_verdict v;
	ddtx_peer_t peer;
	int ret;

	if (ddtx_ofi_connreq_parse(req->data, datalen, ep->dom->core_id, &b) ||
	    ddtx_ofi_peer_insert(&ep->base, req->data, DDTX_OFI_BLOB_LEN, &peer)) {
		DDTX_WARN(FI_LOG_EP_CTRL, "ofi: a connection request without a valid address of "
			  "this core (%zu bytes) refused\n", datalen);
		refuse(ep, req);
		return;
	}
	p = ep->peers[peer];
	v = ddtx_ofi_connreq_decide(ep->uid, b.uid, p->conn ? p->conn->state : DDTX_OFI_CONN_NONE,
				    p->dead);
	if (p->conn && p->conn->state == DDTX_OFI_CONN_CONNECTING && b.uid != ep->uid)
		DDTX_INFO(FI_LOG_EP_CTRL, "ofi: simultaneous connect with peer %u: %s request "
			  "wins (larger uid)\n", peer, v == DDTX_OFI_CONNREQ_REJECT ? "our" : "its");
	if (v == DDTX_OFI_CONNREQ_REJECT) {
		DDTX_INFO(FI_LOG_EP_CTRL, "ofi: connection request from peer %u refused (%s)\n",
			  peer, p->dead ? "gone" : p->conn ? state_name(p->conn->state) : "?");
		refuse(ep, req);
		return;
	}
	c = conn_new(ep, peer);
	ret = c ? fi_endpoint(ep->dom->domain, req->info, &c->ep, c) : -FI_ENOMEM;
	if (ret)
		refuse(ep, req);    /* the request's handle is still ours */
	if (!ret)
		ret = conn_bind(ep, c);
	if (!ret)
		ret = fi_accept(c->ep, NULL, 0);
	if (ret) {
		DDTX_WARN(FI_LOG_EP_CTRL, "ofi: cannot accept peer %u's connection: %s\n", peer,
			  fi_strerror(-ret));
		if (c)
			conn_free(c);
		if (v != DDTX_OFI_CONNREQ_ACCEPT_EXTRA)
			ddtx_ofi_peer_gone(ep, peer);
		return;
	}
	c->state = DDTX_OFI_CONN_ACCEPTING;
	if (v == DDTX_OFI_CONNREQ_ACCEPT_EXTRA)
		return;             /* to ourselves: our own request's connection sends */
	if (v == DDTX_OFI_CONNREQ_ACCEPT_REPLACE)
		p->conn->state = DDTX_OFI_CONN_LOSER;   /* its refusal closes it */
	p->conn = c;
}

static void on_connected(struct ddtx_ofi_ep *ep, struct ddtx_ofi_conn *c)
{
	if (c->state == DDTX_OFI_CONN_LOSER) {
		/* The peer took our losing request after all (it cannot, deciding as we do):
		 * we send on the other one; this one stays unused until the endpoint closes
		 * (what the peer sends on it still arrives: receives are shared). */
		DDTX_WARN(FI_LOG_EP_CTRL, "ofi: peer %u accepted a connection it should have "
			  "refused; left unused\n", c->peer);
		c->state = DDTX_OFI_CONN_DOWN;
		return;
	}
	DDTX_INFO(FI_LOG_EP_CTRL, "ofi: connection with peer %u up (%s by us)\n", c->peer,
		  c->state == DDTX_OFI_CONN_CONNECTING ? "requested" : "accepted");
	c->state = DDTX_OFI_CONN_UP;
	ep->peers[c->peer]->refusals = 0;
}

/* A connection shut down, refused or failed (status). */
static void on_down(struct ddtx_ofi_ep *ep, struct ddtx_ofi_conn *c, int status)
{
	struct ddtx_ofi_peer *p = ep->peers[c->peer];
	enum ddtx_ofi_conn_state was = c->state;

	if (was == DDTX_OFI_CONN_DOWN)
		return;
	c->state = DDTX_OFI_CONN_DOWN;
	if (was == DDTX_OFI_CONN_LOSER) {
		conn_free(c);       /* nothing was ever posted to it */
		return;
	}
	if (p->conn != c)
		return;             /* our connection to ourselves' accepted end */
	if (was == DDTX_OFI_CONN_CONNECTING && status == -FI_ECONNREFUSED &&
	    ddtx_ofi_refusal_retry(ep->uid, p->uid, ++p->refusals)) {
		DDTX_INFO(FI_LOG_EP_CTRL, "ofi: peer %u refused our connection (its own request "
			  "wins): asking again until it comes\n", c->peer);
		p->conn = NULL;     /* the next post asks again */
		conn_free(c);
		return;
	}
	DDTX_WARN(FI_LOG_EP_CTRL, "ofi: connection with peer %u %s: %s; the peer is gone\n",
		  c->peer, was == DDTX_OFI_CONN_UP ? "shut down" : "not made",
		  fi_strerror(-status));
	ddtx_ofi_peer_gone(ep, c->peer);
}

int ddtx_ofi_conn_progress(struct ddtx_ofi_ep *ep)
{
	union {
		struct fi_eq_cm_entry cm;
		uint8_t raw[sizeof(struct fi_eq_cm_entry) + 256];
	} ev;
	int n = 0;

	if (!ep->dom->ep_msg || !ep->eq)
		return 0;
	/* Reading the EQ polls the core's connection sockets (a system call per read on tcp).
	 * Every time while a message or an op may wait on a connection; else one call in
	 * DDTX_OFI_EQ_EVERY: a request from a new peer is accepted a few polls later.  Shutdowns
	 * are found by the CQ's progress, not the EQ's. */
	if (ddtx_list_empty(&ep->tx_deferred) && ddtx_list_empty(&ep->waiting) &&
	    ++ep->eq_polls % DDTX_OFI_EQ_EVERY)
		return 0;
	for (;;) {
		uint32_t event;
		ssize_t got = fi_eq_read(ep->eq, &event, &ev, sizeof(ev), 0);

		if (got == -FI_EAVAIL) {
			struct fi_eq_err_entry err = { 0 };

			if (fi_eq_readerr(ep->eq, &err, 0) <= 0)
				break;
			n++;
			if (!err.fid || err.fid == &ep->pep->fid)
				DDTX_WARN(FI_LOG_EP_CTRL, "ofi: listening endpoint: %s\n",
					  fi_strerror(err.err));
			else
				on_down(ep, err.fid->context, -(err.err ? err.err : FI_EIO));
			continue;
		}
		if (got < 0) {
			if (got != -FI_EAGAIN)
				DDTX_WARN(FI_LOG_EP_CTRL, "ofi: fi_eq_read: %s\n",
					  fi_strerror((int)-got));
			break;
		}
		n++;
		if ((size_t)got < sizeof(ev.cm)) {
			DDTX_WARN(FI_LOG_EP_CTRL, "ofi: a short connection event (%zd bytes)\n", got);
			continue;
		}
		switch (event) {
		case FI_CONNREQ:
			on_request(ep, &ev.cm, (size_t)got - sizeof(ev.cm));
			fi_freeinfo(ev.cm.info);
			break;
		case FI_CONNECTED:
			on_connected(ep, ev.cm.fid->context);
			break;
		case FI_SHUTDOWN:
			on_down(ep, ev.cm.fid->context, -FI_ECONNRESET);
			break;
		default:
			DDTX_INFO(FI_LOG_EP_CTRL, "ofi: connection event %u ignored\n", event);
			break;
		}
	}
	return n;
}
