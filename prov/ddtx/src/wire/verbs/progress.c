/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Progress: poll the CQ, deliver messages and control messages (handshakes, peer liveness),
 * finish operations and post what was deferred.  Handlers run only from here.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/iov_check.h"
#include "wire/verbs/verbs.h"

static void ctrl_send(struct ddtx_verbs_ep *ep, ddtx_peer_t peer, uint8_t type,
		      const void *payload, size_t len)
{
	struct ddtx_vctrl *c;

	if (!ddtx_vpost_ctrl(ep, peer, type, payload, len))
		return;
	c = calloc(1, sizeof(*c));
	if (!c) {
		DDTX_WARN(FI_LOG_EP_DATA, "verbs: dropping a key message to peer %u\n", peer);
		return;
	}
	c->peer = peer;
	c->type = type;
	c->len = (uint32_t)len;
	memcpy(c->payload, payload, len);
	ddtx_list_push_back(&ep->ctrl, &c->entry);
}

static int handle_msg(struct ddtx_verbs_ep *ep, const uint8_t *data, size_t len,
		      const struct ibv_wc *wc)
{
	struct ddtx_vhdr h;
	struct ddtx_vaddr a;
	ddtx_peer_t peer;
	size_t off = DDTX_VHDR_LEN;
	uint8_t type, flags;

	if (!(wc->wc_flags & IBV_WC_WITH_IMM) || ddtx_vimm_decode(wc->imm_data, &type, &flags) ||
	    ddtx_vhdr_unpack(data, len, &h) || h.type != type || h.flags != flags)
		goto bad;
	if (h.flags & DDTX_VHDR_F_ADDR) {
		if (ddtx_vaddr_unpack(data + off, DDTX_VADDR_LEN, &a) || a.uid != h.src_uid ||
		    ddtx_vpeer_insert(ep, &a, data + off, &peer))
			goto bad;
		off += DDTX_VADDR_LEN;
	} else if (ddtx_vpeer_by_uid(ep, h.src_uid, &peer)) {
		DDTX_WARN(FI_LOG_EP_DATA, "verbs: message from an unknown sender %#llx dropped\n",
			  (unsigned long long)h.src_uid);
		return 0;
	}
	ep->peers[peer]->addr_sent = true;               /* it knows us: it sent to us */
	data += off;
	len -= off;
	switch (h.type) {
	case DDTX_VMSG_DATA:
		if (ep->handlers.on_recv)
			ep->handlers.on_recv(ep->handler_arg, peer, data, len);
		return 1;
	case DDTX_VMSG_KEY_REQ: {
		struct ddtx_vkey_req req;
		struct ddtx_vkey_rep rep;
		uint8_t payload[DDTX_VKEY_REP_LEN];

		if (ddtx_vkey_req_unpack(data, len, &req))
			goto bad;
		ddtx_vkey_lookup(ep->dom, ep, peer, req.space, req.key, &rep);
		ddtx_vkey_rep_pack(&rep, payload);
		ctrl_send(ep, peer, DDTX_VMSG_KEY_REP, payload, sizeof(payload));
		return 0;
	}
	case DDTX_VMSG_KEY_REP: {
		struct ddtx_vkey_rep rep;
		struct ddtx_vrkey *r;

		if (ddtx_vkey_rep_unpack(data, len, &rep))
			goto bad;
		r = ddtx_vrkey_find(ep, peer, rep.space, rep.key);
		if (r && r->state == DDTX_VRKEY_PENDING) {
			r->rep = rep;
			r->state = DDTX_VRKEY_READY;
			ddtx_vpost_rkey_ready(ep, r);
		}
		return 0;
	}
	case DDTX_VMSG_KEY_INVAL: {
		struct ddtx_vkey_req req;

		if (ddtx_vkey_req_unpack(data, len, &req))
			goto bad;
		ddtx_vrkey_drop(ep, peer, req.space, req.key);
		return 0;
	}
	default:
		break;
	}
bad:
	DDTX_WARN(FI_LOG_EP_DATA, "verbs: malformed message (%zu bytes) dropped\n", len);
	return 0;
}

static void handle_ud(struct ddtx_verbs_ep *ep, const uint8_t *data, size_t len,
		      const struct ibv_wc *wc)
{
	struct ddtx_vhdr h;
	struct ddtx_vaddr a;
	struct ddtx_vconn c;
	uint8_t type, flags;

	if (len < DDTX_VERBS_GRH)
		return;
	data += DDTX_VERBS_GRH;
	len -= DDTX_VERBS_GRH;
	if (!(wc->wc_flags & IBV_WC_WITH_IMM) || ddtx_vimm_decode(wc->imm_data, &type, &flags) ||
	    ddtx_vhdr_unpack(data, len, &h) || !(h.flags & DDTX_VHDR_F_ADDR) ||
	    (h.type != DDTX_VMSG_CONN_REQ && h.type != DDTX_VMSG_CONN_REP) ||
	    ddtx_vaddr_unpack(data + DDTX_VHDR_LEN, DDTX_VADDR_LEN, &a) || a.uid != h.src_uid ||
	    ddtx_vconn_unpack(data + DDTX_VERBS_PAYLOAD_OFF, len - DDTX_VERBS_PAYLOAD_OFF, &c)) {
		DDTX_INFO(FI_LOG_EP_CTRL, "verbs: malformed handshake message dropped\n");
		return;
	}
	ddtx_vpeer_on_conn(ep, h.type, &a, data + DDTX_VHDR_LEN, &c);
}

static int poll_cq(struct ddtx_verbs_ep *ep)
{
	struct ibv_wc wc[32];
	int n = 0, got;

	for (int rounds = 0; rounds < 8 && (got = ibv_poll_cq(ep->cq, 32, wc)) > 0; rounds++) {
		for (int i = 0; i < got; i++) {
			uintptr_t id = (uintptr_t)wc[i].wr_id;
			void *ptr = (void *)(id & ~(uintptr_t)DDTX_VWR_MASK);

			switch (id & DDTX_VWR_MASK) {
			case DDTX_VWR_ITEM:
				ddtx_vpost_completed(ep, ptr, wc[i].status);
				break;
			case DDTX_VWR_RX: {
				struct ddtx_vbuf *b = ptr;
				if (wc[i].status == IBV_WC_WR_FLUSH_ERR)
					break;
				if (wc[i].status == IBV_WC_SUCCESS)
					n += handle_msg(ep, b->data, wc[i].byte_len, &wc[i]);
				else
					DDTX_WARN(FI_LOG_EP_DATA, "verbs: receive failed: %s\n",
						  ibv_wc_status_str(wc[i].status));
				if (ddtx_vqp_post_rx(ep, b))
					DDTX_WARN(FI_LOG_EP_DATA, "verbs: reposting a receive "
						  "buffer failed\n");
				break;
			}
			case DDTX_VWR_UD_RX: {
				struct ddtx_vbuf *b = ptr;
				if (wc[i].status == IBV_WC_WR_FLUSH_ERR)
					break;
				if (wc[i].status == IBV_WC_SUCCESS)
					handle_ud(ep, b->data, wc[i].byte_len, &wc[i]);
				(void)ddtx_vqp_post_ud_rx(ep, b);
				break;
			}
			case DDTX_VWR_UD_TX:
				ddtx_vslab_put(&ep->ud_tx, ptr);
				break;
			default:
				DDTX_WARN(FI_LOG_EP_DATA, "verbs: completion with a bad id\n");
				break;
			}
		}
	}
	return n;
}

static void send_deferred(struct ddtx_verbs_ep *ep)
{
	struct ddtx_list_entry *e, *tmp;

	pthread_mutex_lock(&ep->dom->lock);
	while ((e = ddtx_list_pop_front(&ep->inval)))
		ddtx_list_push_back(&ep->ctrl, e);
	pthread_mutex_unlock(&ep->dom->lock);
	ddtx_list_foreach_safe(&ep->ctrl, e, tmp) {
		struct ddtx_vctrl *c = ddtx_container_of(e, struct ddtx_vctrl, entry);
		if (ddtx_vpost_ctrl(ep, c->peer, c->type, c->payload, c->len) == -FI_EAGAIN)
			break;
		ddtx_list_remove(e);
		free(c);
	}
}

int ddtx_verbs_ep_progress(struct ddtx_wire_ep *wep)
{
	struct ddtx_verbs_ep *ep = ddtx_vep_of(wep);
	int n;

	if (!ep || ep->in_progress)
		return 0;
	ep->in_progress = true;
	n = poll_cq(ep);
	send_deferred(ep);
	ddtx_vpeer_tick(ep);
	ddtx_vpost_flush(ep);
	/* Completions of operations finished so far (callbacks may post more). */
	for (size_t k = ep->cq_count; k; k--) {
		struct ddtx_vcompl c = ep->cq_q[ep->cq_head];
		ep->cq_head = (ep->cq_head + 1) % ep->cq_cap;
		ep->cq_count--;
		if (ep->handlers.on_complete)
			ep->handlers.on_complete(ep->handler_arg, c.ctx, c.status);
		n++;
	}
	ep->in_progress = false;
	return n;
}
