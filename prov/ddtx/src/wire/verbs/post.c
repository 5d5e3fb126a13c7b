/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Posting work requests.
 *
 * Everything sent to a peer - messages from send buffers, the chunks of writes and reads, the
 * key-resolution messages - is an item on the peer's FIFO queue.  Items are posted in order as
 * the channel allows (RC: connected and send queue room; DC: a DCI lent to the peer and room on
 * it).  A write/read naming an application key waits at the head of the queue until the key is
 * resolved (KEY_REQ/KEY_REP), so nothing overtakes it.
 *
 * Completions arrive in post order per channel.  A failed work request puts its channel in
 * error: the requests behind it complete as flushed and are kept (peer->requeue); once the
 * channel has drained it is recovered (DCI reset, or RC reconnect) and they are posted again,
 * first.  A peer that cannot be reached (retries exhausted) is dead: its work fails with
 * -FI_EIO.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wire/verbs/verbs.h"

/* ---- completion queue of the wire (for on_complete) ---- */

int ddtx_vcq_reserve(struct ddtx_verbs_ep *ep)
{
	struct ddtx_vcompl *v;
	size_t need = ep->cq_count + 1 + ep->ops_live, ncap;

	if (need <= ep->cq_cap)
		return 0;
	ncap = ep->cq_cap ? 2 * ep->cq_cap : 64;
	while (ncap < need)
		ncap *= 2;
	v = malloc(ncap * sizeof(*v));
	if (!v)
		return -FI_ENOMEM;
	for (size_t i = 0; i < ep->cq_count; i++)
		v[i] = ep->cq_q[(ep->cq_head + i) % ep->cq_cap];
	free(ep->cq_q);
	ep->cq_q = v;
	ep->cq_cap = ncap;
	ep->cq_head = 0;
	return 0;
}

void ddtx_vcq_push(struct ddtx_verbs_ep *ep, void *ctx, int status)
{
	ep->cq_q[(ep->cq_head + ep->cq_count) % ep->cq_cap] = (struct ddtx_vcompl){ ctx, status };
	ep->cq_count++;
}

/* ---- operations ---- */

void ddtx_vop_finish(struct ddtx_verbs_ep *ep, struct ddtx_vop *op)
{
	if (!op->status && op->bounce && !op->write) {
		const uint8_t *src = op->bounce->data;
		for (size_t i = 0; i < op->bounce_iovcnt; i++) {
			memcpy(op->bounce_iov[i].iov_base, src, op->bounce_iov[i].iov_len);
			src += op->bounce_iov[i].iov_len;
		}
	}
	if (op->bounce)
		ddtx_vslab_put(&ep->tx, op->bounce);
	if (op->nrefs) {
		pthread_mutex_lock(&ep->dom->lock);
		for (uint32_t i = 0; i < op->nrefs; i++)
			ddtx_vreg_put(ep->dom, op->refs[i]);
		pthread_mutex_unlock(&ep->dom->lock);
	}
	ddtx_vcq_push(ep, op->wr_context, op->status);
	ep->ops_live--;
	free(op->refs);
	free(op->sge);
	free(op->items);
	free(op->bounce_iov);
	free(op);
}

/* One chunk of an operation is done (posted and completed, or dropped). */
static void item_done(struct ddtx_verbs_ep *ep, struct ddtx_vitem *it, int status)
{
	struct ddtx_vop *op = it->op;

	if (status && !op->status)
		op->status = status;
	if (!--op->items_left)
		ddtx_vop_finish(ep, op);
}

static void send_done(struct ddtx_verbs_ep *ep, struct ddtx_vitem *it)
{
	ddtx_vslab_put(&ep->tx, it->buf);
}

/* ---- resolved keys ---- */

static size_t rkey_bucket(uint32_t peer, uint8_t space, uint64_t key)
{
	uint64_t h = key * 0x9e3779b97f4a7c15ull ^ ((uint64_t)peer << 1 | space);
	return (size_t)(h >> 56) & (DDTX_VRKEY_BUCKETS - 1);
}

struct ddtx_vrkey *ddtx_vrkey_find(struct ddtx_verbs_ep *ep, uint32_t peer, uint8_t space,
				   uint64_t key)
{
	for (struct ddtx_vrkey *r = ep->rkeys[rkey_bucket(peer, space, key)]; r; r = r->next)
		if (r->peer == peer && r->space == space && r->key == key)
			return r;
	return NULL;
}

void ddtx_vrkey_drop(struct ddtx_verbs_ep *ep, uint32_t peer, uint8_t space, uint64_t key)
{
	for (struct ddtx_vrkey **pp = &ep->rkeys[rkey_bucket(peer, space, key)]; *pp;
	     pp = &(*pp)->next) {
		struct ddtx_vrkey *r = *pp;
		if (r->peer == peer && r->space == space && r->key == key) {
			if (r->state == DDTX_VRKEY_PENDING)
				return;          /* an answer is on its way: keep waiting for it */
			*pp = r->next;
			free(r);
			return;
		}
	}
}

static struct ddtx_vrkey *rkey_get(struct ddtx_verbs_ep *ep, uint32_t peer, uint8_t space,
				   uint64_t key)
{
	struct ddtx_vrkey *r = ddtx_vrkey_find(ep, peer, space, key);
	size_t b = rkey_bucket(peer, space, key);

	if (r)
		return r;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->peer = peer;
	r->space = space;
	r->key = key;
	r->next = ep->rkeys[b];
	ep->rkeys[b] = r;
	return r;
}

/*
 * Can the operation at the head of the queue go?  1 yes, 0 wait (key being resolved), and on
 * a refused key the operation fails (op->status set, returns 1: its items are dropped).
 */
static int op_resolve(struct ddtx_verbs_ep *ep, struct ddtx_vop *op)
{
	struct ddtx_vrkey *r;
	int ret;

	if (op->resolved || op->status)
		return 1;
	r = rkey_get(ep, op->peer, op->space, op->rkey_wire);
	if (!r) {
		op->status = -FI_ENOMEM;
		return 1;
	}
	if (r->state == DDTX_VRKEY_READY) {
		ret = ddtx_vkey_translate(&r->rep, op->raddr, op->len,
					  op->write ? DDTX_ACC_REMOTE_WRITE : DDTX_ACC_REMOTE_READ,
					  &op->hca_addr);
		if (ret) {
			DDTX_INFO(FI_LOG_EP_DATA, "verbs: %s of %zu bytes at %#llx with key %#llx "
				  "refused: %s\n", op->write ? "write" : "read", op->len,
				  (unsigned long long)op->raddr,
				  (unsigned long long)op->rkey_wire, fi_strerror(-ret));
			op->status = ret;
			if (r->rep.status)               /* no negative caching */
				ddtx_vrkey_drop(ep, op->peer, op->space, op->rkey_wire);
			return 1;
		}
		op->rkey = r->rep.rkey;
		op->resolved = true;
		return 1;
	}
	if (r->state != DDTX_VRKEY_PENDING) {
		struct ddtx_vkey_req req = { op->space, op->rkey_wire };
		uint8_t payload[DDTX_VKEY_REQ_LEN];

		ddtx_vkey_req_pack(&req, payload);
		if (ddtx_vpost_ctrl(ep, op->peer, DDTX_VMSG_KEY_REQ, payload, sizeof(payload)))
			return 0;                /* no buffer: ask again at the next flush */
		r->state = DDTX_VRKEY_PENDING;
		r->asked_ns = ddtx_coarse_time_ns();
	}
	return 0;
}

void ddtx_vpost_rkey_ready(struct ddtx_verbs_ep *ep, struct ddtx_vrkey *rk)
{
	struct ddtx_vpeer *p = ddtx_vpeer_get(ep, rk->peer);

	if (p && (!ddtx_list_empty(&p->queue) || !ddtx_list_empty(&p->ctrlq)) && !p->listed) {
		p->listed = true;
		ddtx_list_push_back(&ep->busy, &p->busy_entry);
	}
	ddtx_vpost_flush(ep);
}

/* ---- channels ---- */

/* 0 with a channel that can take one more work request, -FI_EAGAIN, or -FI_EIO (dead). */
static int channel_get(struct ddtx_verbs_ep *ep, ddtx_peer_t peer, struct ddtx_vpeer *p)
{
	int ret = ddtx_vpeer_ready(ep, peer);

	if (ret)
		return ret;
	if (!ddtx_list_empty(&p->requeue) || ep->posted >= DDTX_VERBS_POST_BUDGET)
		return -FI_EAGAIN;               /* drain and recover first; or CQ room */
	if (!ep->dc)
		return p->outstanding < DDTX_VERBS_SQ_DEPTH ? 0 : -FI_EAGAIN;
	if (p->dci < 0) {
		if (!ep->ndci_free)
			return -FI_EAGAIN;
		p->dci = ep->dci_free[--ep->ndci_free];
		ep->dci[p->dci].owner = (int)peer;
	}
	if (ep->dci[p->dci].error || ep->dci[p->dci].outstanding >= DDTX_VERBS_SQ_DEPTH)
		return -FI_EAGAIN;
	return 0;
}

static int post_dc(struct ddtx_verbs_ep *ep, struct ddtx_vpeer *p, struct ddtx_vitem *it)
{
#ifdef DDTX_HAVE_MLX5DV
	struct ddtx_vdci *d = &ep->dci[p->dci];
	struct ibv_qp_ex *qpx = d->qpx;

	ibv_wr_start(qpx);
	qpx->wr_id = (uintptr_t)it | DDTX_VWR_ITEM;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	if (it->kind == DDTX_VITEM_SEND) {
		const uint8_t *msg = it->buf->data + it->buf->off;
		ibv_wr_send_imm(qpx, ddtx_vimm_encode(msg[0], msg[1]));
		mlx5dv_wr_set_dc_addr(d->mqpx, p->ah, p->addr.qpn, p->addr.key);
		ibv_wr_set_sge(qpx, ep->tx.mr->lkey, (uintptr_t)msg, it->buf->len);
	} else {
		struct ddtx_vop *op = it->op;
		if (op->write)
			ibv_wr_rdma_write(qpx, op->rkey, op->hca_addr + it->roff);
		else
			ibv_wr_rdma_read(qpx, op->rkey, op->hca_addr + it->roff);
		mlx5dv_wr_set_dc_addr(d->mqpx, p->ah, p->addr.qpn, p->addr.key);
		ibv_wr_set_sge_list(qpx, it->nsge, (struct ibv_sge *)&op->sge[it->first_sge]);
	}
	return ibv_wr_complete(qpx);
#else
	return ENOSYS;
#endif
}

static int post_rc(struct ddtx_verbs_ep *ep, struct ddtx_vpeer *p, struct ddtx_vitem *it)
{
	struct ibv_send_wr wr = { .wr_id = (uintptr_t)it | DDTX_VWR_ITEM,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_sge sge;

	if (it->kind == DDTX_VITEM_SEND) {
		const uint8_t *msg = it->buf->data + it->buf->off;
		sge = (struct ibv_sge){ (uintptr_t)msg, it->buf->len, ep->tx.mr->lkey };
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		wr.imm_data = ddtx_vimm_encode(msg[0], msg[1]);
		wr.sg_list = &sge;
		wr.num_sge = 1;
	} else {
		struct ddtx_vop *op = it->op;
		wr.opcode = op->write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = op->hca_addr + it->roff;
		wr.wr.rdma.rkey = op->rkey;
		wr.sg_list = (struct ibv_sge *)&op->sge[it->first_sge];
		wr.num_sge = (int)it->nsge;
	}
	return ibv_post_send(p->qp, &wr, &bad);
}

/* Fail what a dead peer still has queued. */
static void fail_queued(struct ddtx_verbs_ep *ep, struct ddtx_vpeer *p)
{
	struct ddtx_list_entry *e;

	while ((e = ddtx_list_pop_front(&p->requeue)) || (e = ddtx_list_pop_front(&p->ctrlq)) ||
	       (e = ddtx_list_pop_front(&p->queue))) {
		struct ddtx_vitem *it = ddtx_container_of(e, struct ddtx_vitem, entry);
		if (it->kind == DDTX_VITEM_SEND)
			send_done(ep, it);
		else
			item_done(ep, it, -FI_EIO);
	}
}

/* Post one item on the peer's channel: 0, -FI_EAGAIN (no room), -FI_EIO (peer dead). */
static int post_item(struct ddtx_verbs_ep *ep, ddtx_peer_t peer, struct ddtx_vpeer *p,
		     struct ddtx_vitem *it)
{
	int ret = channel_get(ep, peer, p);

	if (ret)
		return ret;
	ret = ep->dc ? post_dc(ep, p, it) : post_rc(ep, p, it);
	if (ret == ENOMEM)
		return -FI_EAGAIN;               /* the send queue is full after all */
	if (ret) {
		DDTX_WARN(FI_LOG_EP_DATA, "verbs: posting to peer %u failed: %s\n", peer,
			  strerror(ret));
		ddtx_vpeer_mark_dead(ep, peer, "posting failed");
		return -FI_EIO;
	}
	ddtx_list_remove(&it->entry);
	ddtx_list_push_back(&p->inflight, &it->entry);
	p->outstanding++;
	ep->posted++;
	if (ep->dc)
		ep->dci[p->dci].outstanding++;
	return 0;
}

/* Post the peer's control messages, then its queue, as far as possible; true if both emptied. */
static bool flush_peer(struct ddtx_verbs_ep *ep, ddtx_peer_t peer, struct ddtx_vpeer *p)
{
	struct ddtx_list_entry *e;
	int ret;

	if (p->state == DDTX_VCONN_DEAD) {
		if (!p->outstanding)
			fail_queued(ep, p);
		return !p->outstanding;
	}
	while ((e = ddtx_list_first(&p->ctrlq))) {
		ret = post_item(ep, peer, p, ddtx_container_of(e, struct ddtx_vitem, entry));
		if (ret == -FI_EIO)
			return flush_peer(ep, peer, p);
		if (ret)
			return false;
	}
	while ((e = ddtx_list_first(&p->queue))) {
		struct ddtx_vitem *it = ddtx_container_of(e, struct ddtx_vitem, entry);

		if (it->kind == DDTX_VITEM_RMA) {
			if (!op_resolve(ep, it->op)) {
				/* A KEY_REQ may have been queued: it goes first. */
				if (!ddtx_list_empty(&p->ctrlq))
					return flush_peer(ep, peer, p);
				return false;
			}
			if (it->op->status) {            /* refused: drop its chunks */
				ddtx_list_remove(e);
				item_done(ep, it, 0);
				continue;
			}
		}
		ret = post_item(ep, peer, p, it);
		if (ret == -FI_EIO)
			return flush_peer(ep, peer, p);
		if (ret)
			return false;
	}
	return true;
}

void ddtx_vpost_flush(struct ddtx_verbs_ep *ep)
{
	struct ddtx_list_entry *e, *tmp;

	ddtx_list_foreach_safe(&ep->busy, e, tmp) {
		struct ddtx_vpeer *p = ddtx_container_of(e, struct ddtx_vpeer, busy_entry);

		if (flush_peer(ep, p->index, p)) {
			ddtx_list_remove(e);
			p->listed = false;
		}
	}
}

static void enqueue(struct ddtx_verbs_ep *ep, ddtx_peer_t peer, struct ddtx_vitem *it, bool ctrl)
{
	struct ddtx_vpeer *p = ep->peers[peer];

	it->peer = peer;
	ddtx_list_push_back(ctrl ? &p->ctrlq : &p->queue, &it->entry);
	if (!ctrl && flush_peer(ep, peer, p))
		return;
	if (!p->listed) {
		p->listed = true;
		ddtx_list_push_back(&ep->busy, &p->busy_entry);
	}
}

void ddtx_vpost_enqueue(struct ddtx_verbs_ep *ep, ddtx_peer_t peer, struct ddtx_vitem *it)
{
	enqueue(ep, peer, it, false);
}

static int wc_errno(enum ibv_wc_status st)
{
	switch (st) {
	case IBV_WC_REM_ACCESS_ERR:
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_MW_BIND_ERR:
		return -FI_EACCES;
	default:
		return -FI_EIO;
	}
}

static bool peer_gone(enum ibv_wc_status st)
{
	return st == IBV_WC_RETRY_EXC_ERR || st == IBV_WC_RNR_RETRY_EXC_ERR ||
	       st == IBV_WC_REM_ABORT_ERR || st == IBV_WC_RESP_TIMEOUT_ERR ||
	       st == IBV_WC_FATAL_ERR;
}

void ddtx_vpost_completed(struct ddtx_verbs_ep *ep, struct ddtx_vitem *it,
			  enum ibv_wc_status st)
{
	ddtx_peer_t peer = it->peer;
	struct ddtx_vpeer *p = ddtx_vpeer_get(ep, peer);
	bool dead, channel_error;

	if (!p)
		return;
	ddtx_list_remove(&it->entry);
	p->outstanding--;
	ep->posted--;
	if (ep->dc && p->dci >= 0)
		ep->dci[p->dci].outstanding--;
	dead = p->state == DDTX_VCONN_DEAD;

	if (st == IBV_WC_SUCCESS) {
		if (it->kind == DDTX_VITEM_SEND)
			send_done(ep, it);
		else
			item_done(ep, it, 0);
	} else if (st == IBV_WC_WR_FLUSH_ERR && !dead) {
		ddtx_list_push_back(&p->requeue, &it->entry);    /* posted again later */
	} else {
		if (!dead && st != IBV_WC_WR_FLUSH_ERR)
			DDTX_INFO(FI_LOG_EP_DATA, "verbs: %s to peer %u failed: %s\n",
				  it->kind == DDTX_VITEM_SEND ? "send" :
				  it->op->write ? "write" : "read", peer, ibv_wc_status_str(st));
		if (peer_gone(st) || (it->kind == DDTX_VITEM_SEND && !dead))
			ddtx_vpeer_mark_dead(ep, peer, ibv_wc_status_str(st));
		if (it->kind == DDTX_VITEM_SEND) {
			send_done(ep, it);
		} else {
			if (st == IBV_WC_REM_ACCESS_ERR)   /* maybe a stale resolution */
				ddtx_vrkey_drop(ep, peer, it->op->space, it->op->rkey_wire);
			item_done(ep, it, p->state == DDTX_VCONN_DEAD ? -FI_EIO : wc_errno(st));
		}
	}
	if (st != IBV_WC_SUCCESS) {
		if (ep->dc && p->dci >= 0)
			ep->dci[p->dci].error = true;            /* reset before reuse */
		else if (!ep->dc && p->state != DDTX_VCONN_DEAD)
			p->state = DDTX_VCONN_RECOVER;
	}
	channel_error = (ep->dc && p->dci >= 0 && ep->dci[p->dci].error) ||
			(!ep->dc && p->state == DDTX_VCONN_RECOVER);
	if (!p->outstanding && (ep->dc || channel_error))
		ddtx_vpeer_drained(ep, peer);
	if (p->state == DDTX_VCONN_DEAD && !p->outstanding)
		fail_queued(ep, p);
	else if (!ddtx_list_empty(&p->queue) || !ddtx_list_empty(&p->ctrlq))
		flush_peer(ep, peer, p);
}

/* ---- messages outside the item path ---- */

int ddtx_vpost_ud(struct ddtx_verbs_ep *ep, struct ddtx_vpeer *p, uint8_t type,
		  const void *payload, size_t len)
{
	struct ddtx_vbuf *b = ddtx_vslab_get(&ep->ud_tx);
	struct ddtx_vhdr h = { .type = type, .flags = DDTX_VHDR_F_ADDR, .src_uid = ep->self.uid };
	struct ibv_sge sge;
	struct ibv_send_wr wr = { 0 }, *bad;

	if (!b)
		return -FI_EAGAIN;
	ddtx_vhdr_pack(&h, b->data);
	memcpy(b->data + DDTX_VHDR_LEN, ep->blob, DDTX_VADDR_LEN);
	memcpy(b->data + DDTX_VHDR_LEN + DDTX_VADDR_LEN, payload, len);
	b->len = (uint32_t)(DDTX_VHDR_LEN + DDTX_VADDR_LEN + len);
	sge = (struct ibv_sge){ (uintptr_t)b->data, b->len, ep->ud_tx.mr->lkey };
	wr.wr_id = (uintptr_t)b | DDTX_VWR_UD_TX;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = ddtx_vimm_encode(type, DDTX_VHDR_F_ADDR);
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = p->ah;
	wr.wr.ud.remote_qpn = p->addr.qpn;
	wr.wr.ud.remote_qkey = (uint32_t)p->addr.key;
	if (ibv_post_send(ep->ud, &wr, &bad)) {
		ddtx_vslab_put(&ep->ud_tx, b);
		return -FI_EAGAIN;
	}
	return 0;
}

void ddtx_vpost_hdr(struct ddtx_verbs_ep *ep, struct ddtx_vpeer *p, uint8_t type,
		    struct ddtx_vbuf *b, size_t payload_len)
{
	struct ddtx_vhdr h = { .type = type, .seq = p->tx_seq++, .src_uid = ep->self.uid };

	if (!p->addr_sent) {
		/* Until the peer has sent us something it may not know us: say who we are. */
		h.flags |= DDTX_VHDR_F_ADDR;
		memcpy(b->data + DDTX_VHDR_LEN, ep->blob, DDTX_VADDR_LEN);
		b->off = 0;
	} else {
		b->off = DDTX_VERBS_PAYLOAD_OFF - DDTX_VHDR_LEN;
	}
	ddtx_vhdr_pack(&h, b->data + b->off);
	b->len = (uint32_t)(DDTX_VERBS_PAYLOAD_OFF - b->off + payload_len);
}

int ddtx_vpost_ctrl(struct ddtx_verbs_ep *ep, ddtx_peer_t peer, uint8_t type,
		    const void *payload, size_t len)
{
	struct ddtx_vpeer *p = ddtx_vpeer_get(ep, peer);
	struct ddtx_vbuf *b;

	if (!p)
		return -FI_EINVAL;
	b = ddtx_vslab_get(&ep->tx);
	if (!b)
		return -FI_EAGAIN;
	memcpy(b->data + DDTX_VERBS_PAYLOAD_OFF, payload, len);
	ddtx_vpost_hdr(ep, p, type, b, len);
	enqueue(ep, peer, &b->item, true);       /* posted by the next flush */
	return 0;
}

void ddtx_vpost_cancel_all(struct ddtx_verbs_ep *ep)
{
	for (uint32_t i = 0; i < ep->npeers; i++) {
		struct ddtx_vpeer *p = ep->peers[i];
		struct ddtx_list *lists[] = { &p->inflight, &p->requeue, &p->ctrlq, &p->queue };

		for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++) {
			struct ddtx_list_entry *e;
			while ((e = ddtx_list_pop_front(lists[l]))) {
				struct ddtx_vitem *it = ddtx_container_of(e, struct ddtx_vitem,
									  entry);
				if (it->kind == DDTX_VITEM_SEND)
					send_done(ep, it);
				else
					item_done(ep, it, -FI_ECANCELED);
			}
		}
		p->outstanding = 0;
	}
	ep->posted = 0;
}
