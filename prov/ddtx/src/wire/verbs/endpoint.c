/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The verbs wire's endpoint: one CQ, an SRQ of receive buffers, send buffers, the DC pair
 * (DCT + DCI pool) or RC QPs per peer with a UD QP for their handshake; addressing and the peer
 * table's entry points.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/iov_check.h"
#include "wire/verbs/verbs.h"

static void ep_destroy(struct ddtx_verbs_ep *ep)
{
	struct ddtx_list_entry *e;

	ddtx_vpost_cancel_all(ep);
	ddtx_vpeers_fini(ep);
	for (uint32_t i = 0; i < ep->ndci; i++)
		if (ep->dci[i].qp)
			ibv_destroy_qp(ep->dci[i].qp);
	if (ep->dct)
		ibv_destroy_qp(ep->dct);
	if (ep->ud)
		ibv_destroy_qp(ep->ud);
	if (ep->srq)
		ibv_destroy_srq(ep->srq);
	if (ep->cq)
		ibv_destroy_cq(ep->cq);
	ddtx_vslab_fini(&ep->rx);
	ddtx_vslab_fini(&ep->tx);
	ddtx_vslab_fini(&ep->ud_rx);
	ddtx_vslab_fini(&ep->ud_tx);
	for (size_t b = 0; b < DDTX_VRKEY_BUCKETS; b++) {
		while (ep->rkeys[b]) {
			struct ddtx_vrkey *r = ep->rkeys[b];
			ep->rkeys[b] = r->next;
			free(r);
		}
	}
	while ((e = ddtx_list_pop_front(&ep->ctrl)))
		free(ddtx_container_of(e, struct ddtx_vctrl, entry));
	while ((e = ddtx_list_pop_front(&ep->inval)))
		free(ddtx_container_of(e, struct ddtx_vctrl, entry));
	free(ep->dci);
	free(ep->dci_free);
	free(ep->cq_q);
	free(ep);
}

static int open_dc(struct ddtx_verbs_ep *ep)
{
	ep->self.key = ddtx_verbs_random64();
	if (ddtx_vqp_create_dct(ep))
		return -FI_ENOSYS;
	ep->dci = calloc(DDTX_VERBS_NUM_DCI, sizeof(*ep->dci));
	ep->dci_free = calloc(DDTX_VERBS_NUM_DCI, sizeof(*ep->dci_free));
	if (!ep->dci || !ep->dci_free)
		return -FI_ENOMEM;
	for (uint32_t i = 0; i < DDTX_VERBS_NUM_DCI; i++) {
		if (ddtx_vqp_create_dci(ep, i))
			return -FI_ENOSYS;
		ep->ndci++;
		ep->dci_free[ep->ndci_free++] = (int)(DDTX_VERBS_NUM_DCI - 1 - i);
	}
	ep->self.transport = DDTX_VTRANSPORT_DC;
	ep->self.qpn = ep->dct->qp_num;
	return 0;
}

static int open_rc(struct ddtx_verbs_ep *ep)
{
	int ret;

	ret = ddtx_vqp_create_ud(ep);
	if (ret)
		return ret;
	ret = ddtx_vslab_init(ep->dom, &ep->ud_rx, DDTX_VERBS_UD_BUFS, DDTX_VERBS_UD_BUF_SIZE,
			      DDTX_VWR_UD_RX);
	if (!ret)
		ret = ddtx_vslab_init(ep->dom, &ep->ud_tx, DDTX_VERBS_UD_BUFS,
				      DDTX_VERBS_UD_BUF_SIZE, DDTX_VWR_UD_TX);
	for (uint32_t i = 0; !ret && i < ep->ud_rx.count; i++)
		ret = ddtx_vqp_post_ud_rx(ep, &ep->ud_rx.bufs[i]);
	if (ret)
		return ret;
	ep->self.transport = DDTX_VTRANSPORT_RC;
	ep->self.qpn = ep->ud->qp_num;
	ep->self.key = DDTX_VERBS_QKEY;
	return 0;
}

int ddtx_verbs_ep_open(struct ddtx_wire_domain *wdom, const struct ddtx_wire_handlers *handlers,
			 void *handler_arg, struct ddtx_wire_ep **out)
{
	struct ddtx_verbs_domain *dom = ddtx_vdom_of(wdom);
	struct ibv_device_attr *da;
	struct ddtx_verbs_ep *ep;
	struct ibv_srq_init_attr srq = { .attr = { .max_sge = 1 } };
	uint32_t rx_bufs;
	int ret;

	if (!dom || !handlers || !out)
		return -FI_EINVAL;
	da = &dom->dev.attr.orig_attr;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->dom = dom;
	ep->handlers = *handlers;
	ep->handler_arg = handler_arg;
	ddtx_vpeers_init(ep);
	ddtx_list_init(&ep->ctrl);
	ddtx_list_init(&ep->inval);
	do {
		ep->self.uid = ddtx_verbs_random64();
	} while (!ep->self.uid);
	ep->self.pid = (uint32_t)getpid();
	ddtx_vdev_self_addr(&dom->dev, &ep->self);

	rx_bufs = (uint32_t)DDTX_MIN(DDTX_VERBS_RX_BUFS, DDTX_MAX(da->max_srq_wr - 1, 16));
	ep->cq_size = (uint32_t)DDTX_MIN(DDTX_VERBS_POST_BUDGET + rx_bufs +
					 4 * DDTX_VERBS_UD_BUFS + 64, (uint32_t)da->max_cqe);
	ep->cq = ibv_create_cq(dom->dev.ctx, (int)ep->cq_size, NULL, NULL, 0);
	srq.attr.max_wr = rx_bufs;
	ep->srq = ep->cq ? ibv_create_srq(dom->pd, &srq) : NULL;
	if (!ep->srq) {
		DDTX_WARN(FI_LOG_EP_CTRL, "verbs: no CQ/SRQ for the endpoint: %s\n",
			  strerror(errno));
		ret = -FI_ENOMEM;
		goto err;
	}
	ret = ddtx_vslab_init(dom, &ep->rx, rx_bufs, DDTX_VERBS_BUF_SIZE, DDTX_VWR_RX);
	if (!ret)
		ret = ddtx_vslab_init(dom, &ep->tx, DDTX_VERBS_TX_BUFS, DDTX_VERBS_BUF_SIZE,
				      DDTX_VWR_ITEM);
	if (ret)
		goto err;

	ep->dc = dom->dc && !open_dc(ep);
	if (!ep->dc) {
		if (dom->dc)
			DDTX_INFO(FI_LOG_EP_CTRL, "verbs: DC setup failed: RC transport\n");
		for (uint32_t i = 0; i < ep->ndci; i++)
			ibv_destroy_qp(ep->dci[i].qp);
		ep->ndci = ep->ndci_free = 0;
		if (ep->dct)
			ibv_destroy_qp(ep->dct);
		ep->dct = NULL;
		ret = open_rc(ep);
		if (ret)
			goto err;
	}
	for (uint32_t i = 0; i < ep->rx.count; i++) {
		ret = ddtx_vqp_post_rx(ep, &ep->rx.bufs[i]);
		if (ret)
			goto err;
	}
	ret = ddtx_vaddr_pack(&ep->self, ep->blob, sizeof(ep->blob));
	if (ret)
		goto err;
	pthread_mutex_lock(&dom->lock);
	ddtx_list_push_back(&dom->eps, &ep->dom_entry);
	pthread_mutex_unlock(&dom->lock);
	DDTX_INFO(FI_LOG_EP_CTRL, "verbs: endpoint %s qpn %#x uid %#llx\n",
		  ep->dc ? "DCT" : "UD", ep->self.qpn, (unsigned long long)ep->self.uid);
	ep->base.impl = &ddtx_verbs_wire_impl;
	*out = &ep->base;
	return 0;
err:
	ep_destroy(ep);
	return ret;
}

void ddtx_verbs_ep_close(struct ddtx_wire_ep *wep)
{
	struct ddtx_verbs_ep *ep = ddtx_vep_of(wep);

	if (!ep)
		return;
	pthread_mutex_lock(&ep->dom->lock);
	ddtx_list_remove(&ep->dom_entry);
	pthread_mutex_unlock(&ep->dom->lock);
	if (ep->cq_count || ep->ops_live)
		DDTX_INFO(FI_LOG_EP_DATA, "verbs: closing an endpoint with %zu undelivered "
			  "completions and %zu operations\n", ep->cq_count, ep->ops_live);
	ep_destroy(ep);
}

int ddtx_verbs_ep_getname(struct ddtx_wire_ep *wep, void *addr, size_t *len)
{
	struct ddtx_verbs_ep *ep = ddtx_vep_of(wep);

	if (!ep || !len)
		return -FI_EINVAL;
	if (*len < DDTX_VADDR_LEN || !addr) {
		*len = DDTX_VADDR_LEN;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, ep->blob, DDTX_VADDR_LEN);
	*len = DDTX_VADDR_LEN;
	return 0;
}

int ddtx_verbs_peer_insert(struct ddtx_wire_ep *wep, const void *addr, size_t len,
			     ddtx_peer_t *peer)
{
	struct ddtx_verbs_ep *ep = ddtx_vep_of(wep);
	struct ddtx_vaddr a;

	if (!ep || !peer)
		return -FI_EINVAL;
	if (ddtx_vaddr_unpack(addr, len, &a)) {
		DDTX_WARN(FI_LOG_AV, "verbs: malformed address (%zu bytes)\n", len);
		return -FI_EINVAL;
	}
	return ddtx_vpeer_insert(ep, &a, addr, peer);
}

int ddtx_verbs_peer_addr(struct ddtx_wire_ep *wep, ddtx_peer_t peer, void *addr, size_t *len)
{
	struct ddtx_verbs_ep *ep = ddtx_vep_of(wep);
	struct ddtx_vpeer *p;

	if (!ep || !len || !(p = ddtx_vpeer_get(ep, peer)))
		return -FI_EINVAL;
	if (*len < DDTX_VADDR_LEN || !addr) {
		*len = DDTX_VADDR_LEN;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, p->blob, DDTX_VADDR_LEN);
	*len = DDTX_VADDR_LEN;
	return 0;
}

bool ddtx_verbs_peer_alive(struct ddtx_wire_ep *wep, ddtx_peer_t peer)
{
	struct ddtx_verbs_ep *ep = ddtx_vep_of(wep);
	struct ddtx_vpeer *p = ep ? ddtx_vpeer_get(ep, peer) : NULL;

	return p && p->state != DDTX_VCONN_DEAD;
}
