/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Messages: copied (or built, claim/commit) into a bounce buffer behind the wire's header and
 * sent with fi_sendmsg.  The payload always starts at DDTX_OFI_PAYLOAD_OFF; the header goes
 * right before it, or before our blob while the peer has not heard from us (it needs the blob
 * to answer, and to know the sender of a message it got before inserting our address).  What
 * the core refuses with -FI_EAGAIN waits in order in tx_deferred, flushed by progress.
 */
#include <string.h>

#include "common/iov_check.h"
#include "wire/ofi/ofi.h"

struct ddtx_ofi_buf *ddtx_ofi_tx_get(struct ddtx_ofi_ep *ep)
{
	struct ddtx_list_entry *e = ddtx_list_pop_front(&ep->tx_free);
	struct ddtx_ofi_buf *b = e ? ddtx_container_of(e, struct ddtx_ofi_buf, entry) : NULL;

	if (b)
		b->ring = false; /* sent, unless a data message's route says otherwise */
	return b;
}

/* Last freed, first taken: a buffer just sent is still in the cache.  Taken in turn, the 128
 * buffers of 64 KiB (8 MiB) were cold at every message: fi_rdm_tagged_pingpong of 11664 B
 * between the namespace hosts, fastest / median of 15 runs, 12.88 / 16.32 us in turn, 12.49 /
 * 15.36 last-first (2026-11-27, with the host's noise). */
void ddtx_ofi_tx_put(struct ddtx_ofi_ep *ep, struct ddtx_ofi_buf *b)
{
	ddtx_list_push_front(&ep->tx_free, &b->entry);
}

void ddtx_ofi_tx_done(struct ddtx_ofi_ep *ep, struct ddtx_ofi_buf *b)
{
	b->inflight = false;
	ep->peers[b->peer]->tx_inflight--;
	ddtx_ofi_tx_put(ep, b);
}

/* A data message to p may take a buffer: p is alive and within its share of the pool, and
 * holds a credit of its receive ring if it granted one. */
static int tx_admit(const struct ddtx_ofi_peer *p)
{
	if (p->dead)
		return -FI_EIO;
	if (p->tx_inflight >= DDTX_OFI_TX_PER_PEER)
		return -FI_EAGAIN;
	return p->ring_tx ? ddtx_ofi_ring_admit(p) : 0;
}

/* A message to p: as large as its ring's slot once it granted one (ring.c), else the domain's
 * room (tcp;ofi_rxm's eager size).  Across two hosts MPICH's 16 KiB sends went by rendezvous
 * at 23.8 us, eager in the ring 15.9 (docs/benchmark-results.md).  A dead peer's ring is not
 * counted: started afresh (liveness.c) it has none. */
static size_t room(const struct ddtx_ofi_ep *ep, const struct ddtx_ofi_peer *p)
{
	if (!p->ring_tx || p->dead)
		return ep->dom->caps.max_send_size;
	return DDTX_MAX(ep->dom->caps.max_send_size,
			DDTX_MIN((size_t)p->ring_tx->grant.slot_size - DDTX_OFI_HDR_LEN,
				 (size_t)DDTX_OFI_BUF_SIZE - DDTX_OFI_PAYLOAD_OFF));
}

size_t ddtx_ofi_peer_send_size(struct ddtx_wire_ep *wep, ddtx_peer_t peer)
{
	struct ddtx_ofi_ep *ep = ddtx_oep_of(wep);
	struct ddtx_ofi_peer *p = ddtx_ofi_peer_get(ep, peer);

	return p ? room(ep, p) : 0;
}

uint8_t *ddtx_ofi_tx_prepare(struct ddtx_ofi_ep *ep, struct ddtx_ofi_buf *b, ddtx_peer_t peer,
			     uint8_t type)
{
	struct ddtx_ofi_peer *p = ep->peers[peer];
	struct ddtx_ofi_hdr h = { .type = type, .src_uid = ep->uid };

	b->peer = peer;
	if (!p->heard) {
		h.flags = DDTX_OFI_F_ADDR;
		b->start = 0;
		memcpy(b->data + DDTX_OFI_HDR_LEN, ep->blob, DDTX_OFI_BLOB_LEN);
	} else {
		b->start = DDTX_OFI_BLOB_LEN;
	}
	ddtx_ofi_hdr_pack(&h, b->data + b->start);
	return b->data + DDTX_OFI_PAYLOAD_OFF;
}

static int post(struct ddtx_ofi_ep *ep, struct ddtx_ofi_buf *b)
{
	if (b->ring)
		return ddtx_ofi_ring_post(ep, b);
	struct iovec iov = { b->data + b->start, b->len };
	void *desc = ep->slab_desc;
	struct fi_msg msg = {
		.msg_iov = &iov, .desc = &desc, .iov_count = 1,
		.addr = ep->peers[b->peer]->fi_addr, .context = &b->ctx,
	};
	struct fid_ep *tx;
	int ret = ddtx_ofi_conn_get(ep, b->peer, &tx);

	return ret ? ret : (int)fi_sendmsg(tx, &msg, 0);
}

int ddtx_ofi_tx_post(struct ddtx_ofi_ep *ep, struct ddtx_ofi_buf *b, bool defer)
{
	int ret = -FI_EAGAIN;

	(void)defer;
	b->inflight = true;
	b->seq = ++ep->peers[b->peer]->tx_seq;
	if (b->ring)
		b->ring_seq = ep->peers[b->peer]->ring_tx->posted++;
	ep->peers[b->peer]->tx_inflight++;
	if (ddtx_list_empty(&ep->tx_deferred))
		ret = post(ep, b);
	if (ret == -FI_EAGAIN) {
		ddtx_list_push_back(&ep->tx_deferred, &b->entry);
		return 0;
	}
	if (ret) {
		DDTX_WARN(FI_LOG_EP_DATA, "ofi: fi_sendmsg to peer %u: %s\n", b->peer,
			  fi_strerror(-ret));
		ep->peers[b->peer]->dead = true;
		ddtx_ofi_tx_done(ep, b);
	}
	return ret;
}

void ddtx_ofi_tx_flush(struct ddtx_ofi_ep *ep)
{
	struct ddtx_list_entry *e, *tmp;

	ddtx_list_foreach_safe(&ep->tx_deferred, e, tmp)
	{
		struct ddtx_ofi_buf *b = ddtx_container_of(e, struct ddtx_ofi_buf, entry);
		int ret;

		/* A connection being set up (FI_EP_MSG) holds back its own peer's messages (all of
		 * them: their order is kept), not the others'. */
		if (!ep->peers[b->peer]->dead && ddtx_ofi_conn_waiting(ep, b->peer))
			continue;
		/* not to a peer that is gone: the core would hold the buffer */
		ret = ep->peers[b->peer]->dead ? -FI_EIO : post(ep, b);

		if (ret == -FI_EAGAIN)
			return;
		ddtx_list_remove(e);
		if (ret == -FI_EIO && ep->peers[b->peer]->dead) {
			ddtx_ofi_tx_done(ep, b);
		} else if (ret) {
			DDTX_WARN(FI_LOG_EP_DATA, "ofi: deferred send to peer %u: %s\n", b->peer,
				  fi_strerror(-ret));
			ep->peers[b->peer]->dead = true;
			ddtx_ofi_tx_done(ep, b);
		}
	}
}

int ddtx_ofi_send(struct ddtx_wire_ep *wep, ddtx_peer_t peer, const void *hdr, size_t hdr_len,
		  const struct iovec *iov, size_t count)
{
	struct ddtx_ofi_ep *ep = ddtx_oep_of(wep);
	struct ddtx_ofi_peer *p = ddtx_ofi_peer_get(ep, peer);
	struct ddtx_ofi_buf *b;
	size_t total = hdr_len;
	uint8_t *dst;
	int ret;

	if (!p || (hdr_len && !hdr) || ddtx_iov_check(iov, count, ep->dom->caps.max_sge, &total))
		return -FI_EINVAL;
	ret = tx_admit(p);
	if (ret)
		return ret;
	if (total > room(ep, p))
		return -FI_EMSGSIZE;
	b = ddtx_ofi_tx_get(ep);
	if (!b)
		return -FI_EAGAIN;
	dst = ddtx_ofi_tx_prepare(ep, b, peer, DDTX_OFI_MSG_DATA);
	b->ring = p->ring_tx != NULL;
	if (hdr_len)
		memcpy(dst, hdr, hdr_len);
	dst += hdr_len;
	for (size_t i = 0; i < count; i++) {
		if (iov[i].iov_len)
			memcpy(dst, iov[i].iov_base, iov[i].iov_len);
		dst += iov[i].iov_len;
	}
	b->len = DDTX_OFI_PAYLOAD_OFF - b->start + total;
	return ddtx_ofi_tx_post(ep, b, true);
}

int ddtx_ofi_send_claim(struct ddtx_wire_ep *wep, ddtx_peer_t peer, size_t min_len,
			struct ddtx_wire_send_buf *buf)
{
	struct ddtx_ofi_ep *ep = ddtx_oep_of(wep);
	struct ddtx_ofi_peer *p = ddtx_ofi_peer_get(ep, peer);
	struct ddtx_ofi_buf *b;

	if (!p || !buf)
		return -FI_EINVAL;
	int ret = tx_admit(p);
	if (ret)
		return ret;
	if (min_len > room(ep, p))
		return -FI_EMSGSIZE;
	b = ddtx_ofi_tx_get(ep);
	if (!b)
		return -FI_EAGAIN;
	b->peer = peer;
	/* No progress runs between claim and commit (wire.h): the route cannot change. */
	b->ring = p->ring_tx != NULL;
	if (b->ring)
		p->ring_tx->claims++;
	buf->data = b->data + DDTX_OFI_PAYLOAD_OFF;
	/* A ring message may fill its slot (ring.c), within our bounce buffer whatever the grant
	 * says. */
	buf->cap = room(ep, p);
	buf->wire_priv = b;
	buf->wire_pos = peer;
	return 0;
}

void ddtx_ofi_send_commit(struct ddtx_wire_ep *wep, struct ddtx_wire_send_buf *buf, size_t len)
{
	struct ddtx_ofi_ep *ep = ddtx_oep_of(wep);
	struct ddtx_ofi_buf *b = buf->wire_priv;

	/* The header is written now: its blob flag is the peer's state at commit time. */
	ddtx_ofi_tx_prepare(ep, b, (ddtx_peer_t)buf->wire_pos, DDTX_OFI_MSG_DATA);
	if (b->ring)
		ep->peers[b->peer]->ring_tx->claims--;
	b->len = DDTX_OFI_PAYLOAD_OFF - b->start + DDTX_MIN(len, buf->cap);
	(void)ddtx_ofi_tx_post(ep, b, true);
}

uint64_t ddtx_ofi_send_mark(struct ddtx_wire_ep *wep, ddtx_peer_t peer)
{
	struct ddtx_ofi_peer *p = ddtx_ofi_peer_get(ddtx_oep_of(wep), peer);

	return p ? p->tx_seq : 0;
}

bool ddtx_ofi_sent(struct ddtx_wire_ep *wep, ddtx_peer_t peer, uint64_t mark)
{
	struct ddtx_ofi_ep *ep = ddtx_oep_of(wep);
	struct ddtx_ofi_peer *p = ddtx_ofi_peer_get(ep, peer);

	if (!p || !p->tx_inflight || p->dead)
		return true; /* a dead peer's sends are failed by the protocols, not waited for */
	for (size_t i = 0; i < DDTX_OFI_TX_BUFS; i++)
		if (ep->tx[i].inflight && ep->tx[i].peer == peer && ep->tx[i].seq <= mark)
			return false;
	return true;
}
