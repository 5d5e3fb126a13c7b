/*
 * The verbs wire's entry points (wire/wire.h).
 *
 *  domain   : device, protection domain, registrations and key tables, UMR (mlx5), caps
 *  endpoint : one CQ, an SRQ of receive buffers, send buffers, the DC pair (DCT + DCI pool) or
 *             RC QPs per peer with a UD QP for their handshake; the peer table; the queue of
 *             finished operations whose completions ep_progress delivers
 *
 * Messages: a send (or a claimed buffer) is copied into a registered send buffer and posted as
 * SEND with immediate data; the receiver finds the sender by the uid in the header (the first
 * message to a peer carries our whole address blob).  Writes and reads post the caller's
 * gather list directly when its memory is registered (the region index), through a send
 * buffer for small unregistered transfers, or with a registration held for the operation.
 * Handlers run only from ep_progress.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/iov_check.h"
#include "wire/verbs/verbs.h"

static uint64_t random64(void)
{
	uint64_t v = 0;

	while (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = ddtx_time_ns() * 0x9e3779b97f4a7c15ull;
	return v;
}

/* ---- domain ---- */

/* The largest max_send_sge (<= want) a QP of this kind accepts: probed, not assumed. */
static uint32_t probe_sge(struct ddtx_verbs_domain *dom, struct ibv_cq *cq, uint32_t want,
			  bool dci)
{
	for (uint32_t s = want; s >= 1; s = s > 1 ? s - (s + 3) / 4 : 0) {
		struct ibv_qp_init_attr_ex init = {
			.send_cq = cq, .recv_cq = cq,
			.cap = { .max_send_wr = DDTX_VERBS_SQ_DEPTH, .max_recv_wr = dci ? 0 : 1,
				 .max_send_sge = s, .max_recv_sge = 1 },
			.qp_type = IBV_QPT_RC,
			.comp_mask = IBV_QP_INIT_ATTR_PD,
			.pd = dom->pd,
		};
		struct ibv_qp *qp = NULL;

#ifdef DDTX_HAVE_MLX5DV
		if (dci) {
			struct mlx5dv_qp_init_attr dv = {
				.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC,
				.dc_init_attr = { .dc_type = MLX5DV_DCTYPE_DCI },
			};
			init.qp_type = IBV_QPT_DRIVER;
			init.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
			init.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
					      IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ;
			qp = mlx5dv_create_qp(dom->dev.ctx, &init, &dv);
		}
#endif
		if (!dci)
			qp = ibv_create_qp_ex(dom->dev.ctx, &init);
		if (qp) {
			ibv_destroy_qp(qp);
			return s;
		}
		if (dci && s == want && errno == EOPNOTSUPP)
			return 0;
	}
	return 0;
}

static int set_caps(struct ddtx_verbs_domain *dom)
{
	struct ibv_device_attr *a = &dom->dev.attr.orig_attr;
	uint32_t want = (uint32_t)DDTX_MAX(a->max_sge, 1), rc, dci = 0;
	struct ibv_cq *cq;

	if (a->max_sge_rd > 0)
		want = DDTX_MIN(want, (uint32_t)a->max_sge_rd);
	if (dom->params.max_sge)
		want = (uint32_t)DDTX_MIN((size_t)want, dom->params.max_sge);
	cq = ibv_create_cq(dom->dev.ctx, 16, NULL, NULL, 0);
	if (!cq)
		return -FI_ENODEV;
	rc = probe_sge(dom, cq, want, false);
	if (dom->dev.mlx5)
		dci = probe_sge(dom, cq, rc, true);
	ibv_destroy_cq(cq);
	if (!rc)
		return -FI_ENODEV;
	dom->dc = dci > 0;
	dom->caps.name = "verbs";
	dom->caps.max_sge = dom->dc ? dci : rc;
	dom->caps.max_mkey_entries = dom->umr.enabled ? dom->umr.pool_entries : 0;
	dom->caps.max_send_size = DDTX_VERBS_BUF_SIZE - DDTX_VERBS_PAYLOAD_OFF;
	dom->caps.max_rma_size = DDTX_MIN((size_t)dom->dev.port_attr.max_msg_sz,
					  (size_t)1 << 30);
	dom->caps.inline_size = dom->caps.max_send_size;
	dom->caps.addr_len = DDTX_VADDR_LEN;
	dom->caps.strided_mkeys = dom->umr.enabled && dom->umr.interleaved_entries > 0;
	dom->caps.recv_scatter = false;
	return 0;
}

static int verbs_domain_open(const struct ddtx_wire_params *params,
			     struct ddtx_wire_domain **out)
{
	struct ddtx_verbs_domain *dom;
	int ret;

	if (!out)
		return -FI_EINVAL;
	if (!ddtx_verbs_available())
		return -FI_ENODEV;
	dom = calloc(1, sizeof(*dom));
	if (!dom)
		return -FI_ENOMEM;
	if (params)
		dom->params = *params;
	ret = ddtx_vdev_open(dom->params.iface, &dom->dev);
	if (ret)
		goto err_free;
	dom->pd = ibv_alloc_pd(dom->dev.ctx);
	if (!dom->pd) {
		ret = -FI_ENODEV;
		goto err_dev;
	}
	ret = pthread_mutex_init(&dom->lock, NULL);
	if (ret) {
		ret = -ret;
		goto err_pd;
	}
	ddtx_vregion_index_init(&dom->regions);
	ddtx_list_init(&dom->eps);
	dom->key_salt = random64() & 0x3fffffffffffffffull;
	ddtx_vumr_init(dom);
	ret = set_caps(dom);
	if (ret)
		goto err_umr;
	DDTX_INFO(FI_LOG_CORE, "verbs: domain on %s: %s transport, max_sge %zu, "
		  "max_mkey_entries %zu%s, max_send_size %zu\n", dom->dev.name,
		  dom->dc ? "DC" : "RC", dom->caps.max_sge, dom->caps.max_mkey_entries,
		  dom->caps.strided_mkeys ? " (interleaved)" : "", dom->caps.max_send_size);
	dom->base.impl = &ddtx_verbs_wire_impl;
	*out = &dom->base;
	return 0;
err_umr:
	ddtx_vumr_fini(dom);
	ddtx_vregion_index_fini(&dom->regions);
	pthread_mutex_destroy(&dom->lock);
err_pd:
	ibv_dealloc_pd(dom->pd);
err_dev:
	ddtx_vdev_close(&dom->dev);
err_free:
	free(dom);
	return ret;
}

static void verbs_domain_close(struct ddtx_wire_domain *wdom)
{
	struct ddtx_verbs_domain *dom = ddtx_vdom_of(wdom);

	if (!dom)
		return;
	if (dom->keys[0].live || dom->keys[1].live)
		DDTX_WARN(FI_LOG_CORE, "verbs: closing a domain with %llu keys still registered\n",
			  (unsigned long long)(dom->keys[0].live + dom->keys[1].live));
	ddtx_vumr_fini(dom);
	ddtx_vregion_index_fini(&dom->regions);
	if (ibv_dealloc_pd(dom->pd))
		DDTX_WARN(FI_LOG_CORE, "verbs: the protection domain is still in use\n");
	ddtx_vdev_close(&dom->dev);
	pthread_mutex_destroy(&dom->lock);
	free(dom);
}

static const struct ddtx_wire_caps *verbs_domain_caps(struct ddtx_wire_domain *wdom)
{
	struct ddtx_verbs_domain *dom = ddtx_vdom_of(wdom);
	return dom ? &dom->caps : NULL;
}

static int verbs_mr_reg(struct ddtx_wire_domain *wdom, const struct iovec *iov, size_t count,
			enum ddtx_key_space space, const uint64_t *requested_key, uint64_t iova,
			uint32_t access, struct ddtx_wire_mr **out)
{
	return ddtx_vmr_reg(ddtx_vdom_of(wdom), iov, count, space, requested_key, iova, access,
			    out);
}

static int verbs_mr_dereg(struct ddtx_wire_domain *wdom, struct ddtx_wire_mr *mr)
{
	return ddtx_vmr_dereg(ddtx_vdom_of(wdom), mr);
}

/* ---- endpoint ---- */

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
	ep->self.key = random64();
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

static int verbs_ep_open(struct ddtx_wire_domain *wdom, const struct ddtx_wire_handlers *handlers,
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
		ep->self.uid = random64();
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

static void verbs_ep_close(struct ddtx_wire_ep *wep)
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

static int verbs_ep_getname(struct ddtx_wire_ep *wep, void *addr, size_t *len)
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

static int verbs_peer_insert(struct ddtx_wire_ep *wep, const void *addr, size_t len,
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

static int verbs_peer_addr(struct ddtx_wire_ep *wep, ddtx_peer_t peer, void *addr, size_t *len)
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

static bool verbs_peer_alive(struct ddtx_wire_ep *wep, ddtx_peer_t peer)
{
	struct ddtx_verbs_ep *ep = ddtx_vep_of(wep);
	struct ddtx_vpeer *p = ep ? ddtx_vpeer_get(ep, peer) : NULL;

	return p && p->state != DDTX_VCONN_DEAD;
}


static int verbs_send(struct ddtx_wire_ep *wep, ddtx_peer_t peer, const void *hdr,
		      size_t hdr_len, const struct iovec *iov, size_t count)
{
	struct ddtx_verbs_ep *ep = ddtx_vep_of(wep);
	struct ddtx_vpeer *p;
	struct ddtx_vbuf *b;
	size_t total = hdr_len;
	uint8_t *dst;

	if (!ep || !(p = ddtx_vpeer_get(ep, peer)) || (hdr_len && !hdr) ||
	    ddtx_iov_check(iov, count, ep->dom->caps.max_sge, &total))
		return -FI_EINVAL;
	if (total > ep->dom->caps.max_send_size)
		return -FI_EMSGSIZE;
	if (p->state == DDTX_VCONN_DEAD)
		return -FI_EIO;
	b = ddtx_vslab_get(&ep->tx);
	if (!b)
		return -FI_EAGAIN;
	dst = b->data + DDTX_VERBS_PAYLOAD_OFF;
	if (hdr_len)
		memcpy(dst, hdr, hdr_len);
	dst += hdr_len;
	for (size_t i = 0; i < count; i++) {
		if (iov[i].iov_len)
			memcpy(dst, iov[i].iov_base, iov[i].iov_len);
		dst += iov[i].iov_len;
	}
	ddtx_vpost_hdr(ep, p, DDTX_VMSG_DATA, b, total);
	ddtx_vpost_enqueue(ep, peer, &b->item);
	return 0;
}

static int verbs_send_claim(struct ddtx_wire_ep *wep, ddtx_peer_t peer, size_t min_len,
			    struct ddtx_wire_send_buf *buf)
{
	struct ddtx_verbs_ep *ep = ddtx_vep_of(wep);
	struct ddtx_vpeer *p;
	struct ddtx_vbuf *b;

	if (!ep || !buf || !(p = ddtx_vpeer_get(ep, peer)))
		return -FI_EINVAL;
	if (p->state == DDTX_VCONN_DEAD)
		return -FI_EIO;
	if (min_len > ep->dom->caps.max_send_size)
		return -FI_EMSGSIZE;
	b = ddtx_vslab_get(&ep->tx);
	if (!b)
		return -FI_EAGAIN;
	buf->data = b->data + DDTX_VERBS_PAYLOAD_OFF;
	buf->cap = ep->dom->caps.max_send_size;
	buf->wire_priv = b;
	buf->wire_pos = peer;
	return 0;
}

static void verbs_send_commit(struct ddtx_wire_ep *wep, struct ddtx_wire_send_buf *buf,
			      size_t len)
{
	struct ddtx_verbs_ep *ep = ddtx_vep_of(wep);
	struct ddtx_vbuf *b = buf->wire_priv;
	ddtx_peer_t peer = (ddtx_peer_t)buf->wire_pos;

	/* The header is written now, so messages go out with headers in commit order. */
	ddtx_vpost_hdr(ep, ep->peers[peer], DDTX_VMSG_DATA, b, DDTX_MIN(len, buf->cap));
	ddtx_vpost_enqueue(ep, peer, &b->item);
}

static int verbs_rma_check(struct ddtx_wire_ep *wep, ddtx_peer_t peer, enum ddtx_key_space space,
			   uint64_t rkey, uint64_t raddr, size_t len, bool write)
{
	struct ddtx_verbs_ep *ep = ddtx_vep_of(wep);
	struct ddtx_vrkey *r;
	uint64_t hca;

	if (!ep || !ddtx_vpeer_get(ep, peer))
		return -FI_EINVAL;
	if (!verbs_peer_alive(wep, peer))
		return -FI_EIO;
	/* The peer's keys are not visible before the transfer; a resolved key is checked. */
	r = ddtx_vrkey_find(ep, peer, (uint8_t)space, rkey);
	if (!len || !r || r->state != DDTX_VRKEY_READY || r->rep.status)
		return 0;
	return ddtx_vkey_translate(&r->rep, raddr, len,
				   write ? DDTX_ACC_REMOTE_WRITE : DDTX_ACC_REMOTE_READ, &hca);
}

/* Reference the region holding sge's memory (so it outlives the operation). */
static int ref_region(struct ddtx_verbs_domain *dom, struct ddtx_vop *op, uint32_t *cap,
		      const struct ddtx_vsge *sge, uint32_t need)
{
	const struct ddtx_vregion *r = ddtx_vregion_index_find(&dom->regions, sge->addr, need);
	struct ddtx_vreg *reg;

	if (!r)
		return -FI_EINVAL;
	reg = (struct ddtx_vreg *)r->owner;
	for (uint32_t i = op->nrefs; i > 0 && i + 4 > op->nrefs; i--)
		if (op->refs[i - 1] == reg)
			return 0;
	if (op->nrefs == *cap) {
		uint32_t ncap = *cap ? 2 * *cap : 8;
		struct ddtx_vreg **v = realloc(op->refs, ncap * sizeof(*v));
		if (!v)
			return -FI_ENOMEM;
		op->refs = v;
		*cap = ncap;
	}
	reg->refs++;
	op->refs[op->nrefs++] = reg;
	return 0;
}

/*
 * The local side of an operation: gather lists over registered memory, one chunk (work
 * request) per max_sge entries.  Uncovered memory is registered for the operation's lifetime.
 */
static int build_local(struct ddtx_verbs_ep *ep, struct ddtx_vop *op, const struct iovec *local,
		       size_t lcount)
{
	struct ddtx_verbs_domain *dom = ep->dom;
	uint32_t need = op->write ? 0 : DDTX_VREGION_F_LOCAL_WRITE;
	size_t max_sge = dom->caps.max_sge, sge_cap = 0, item_cap = 0;
	uint32_t ref_cap = 0;
	struct ddtx_vsge_cursor c;
	uint64_t roff = 0;
	int ret = 0;

	ddtx_vsge_cursor_init(&c, local, lcount);
	pthread_mutex_lock(&dom->lock);
	while (!ddtx_vsge_cursor_done(&c)) {
		bool uncovered;
		size_t n, got;

		if (op->nsge + max_sge > sge_cap) {
			size_t ncap = DDTX_MAX(2 * sge_cap, op->nsge + max_sge);
			struct ddtx_vsge *v = realloc(op->sge, ncap * sizeof(*v));
			if (!v) {
				ret = -FI_ENOMEM;
				break;
			}
			op->sge = v;
			sge_cap = ncap;
		}
		if (op->nitems == item_cap) {
			size_t ncap = item_cap ? 2 * item_cap : 4;
			struct ddtx_vitem *v = realloc(op->items, ncap * sizeof(*v));
			if (!v) {
				ret = -FI_ENOMEM;
				break;
			}
			op->items = v;
			item_cap = ncap;
		}
		got = ddtx_vsge_take(&c, &dom->regions, need, max_sge, op->len - roff,
				     &op->sge[op->nsge], &n, &uncovered);
		if (got) {
			struct ddtx_vitem *it = &op->items[op->nitems++];
			memset(it, 0, sizeof(*it));
			it->kind = DDTX_VITEM_RMA;
			it->op = op;
			it->first_sge = op->nsge;
			it->nsge = (uint32_t)n;
			it->roff = roff;
			it->bytes = (uint32_t)got;
			for (size_t i = 0; i < n && !ret; i++)
				ret = ref_region(dom, op, &ref_cap, &op->sge[op->nsge + i], need);
			op->nsge += (uint32_t)n;
			roff += got;
		}
		if (ret)
			break;
		if (uncovered) {
			/* Register the rest of this entry for the operation. */
			const struct iovec *v = &c.iov[c.idx];
			struct ddtx_vreg *reg;
			struct ddtx_vsge probe;

			ret = ddtx_vreg_new(dom, (uint8_t *)v->iov_base + c.off, v->iov_len - c.off,
					    ddtx_vsge_cursor_addr(&c),
					    op->write ? 0 : IBV_ACCESS_LOCAL_WRITE, true, &reg);
			if (ret)
				break;
			probe.addr = reg->addr;
			/* The op owns the registration; the index lends it to later chunks. */
			ret = ref_region(dom, op, &ref_cap, &probe, need);
			ddtx_vreg_put(dom, reg);
			if (ret)
				break;
		}
	}
	pthread_mutex_unlock(&dom->lock);
	if (!ret && roff != op->len)
		ret = -FI_EINVAL;
	return ret;
}

/* A small transfer of unregistered memory: through a send buffer (registered). */
static bool try_bounce(struct ddtx_verbs_ep *ep, struct ddtx_vop *op, const struct iovec *local,
		       size_t lcount)
{
	struct ddtx_verbs_domain *dom = ep->dom;
	struct ddtx_vsge_cursor c;
	struct ddtx_vsge tmp[4];
	bool uncovered;
	size_t n;

	if (op->len > DDTX_VERBS_BUF_SIZE || ep->tx.nfree < DDTX_VERBS_TX_BUFS / 4)
		return false;
	/* Registered already (all within the first few entries)?  Then no copy. */
	ddtx_vsge_cursor_init(&c, local, lcount);
	pthread_mutex_lock(&dom->lock);
	ddtx_vsge_take(&c, &dom->regions, op->write ? 0 : DDTX_VREGION_F_LOCAL_WRITE, 4, op->len,
		       tmp, &n, &uncovered);
	pthread_mutex_unlock(&dom->lock);
	if (!uncovered)
		return false;
	op->bounce = ddtx_vslab_get(&ep->tx);
	op->sge = calloc(1, sizeof(*op->sge));
	op->items = calloc(1, sizeof(*op->items));
	op->bounce_iov = op->write ? NULL : calloc(lcount, sizeof(*op->bounce_iov));
	if (!op->bounce || !op->sge || !op->items || (!op->write && !op->bounce_iov)) {
		if (op->bounce)
			ddtx_vslab_put(&ep->tx, op->bounce);
		free(op->sge);
		free(op->items);
		free(op->bounce_iov);
		op->bounce = NULL;
		op->sge = NULL;
		op->items = NULL;
		op->bounce_iov = NULL;
		return false;
	}
	if (op->write) {
		uint8_t *dst = op->bounce->data;
		for (size_t i = 0; i < lcount; i++) {
			if (local[i].iov_len)
				memcpy(dst, local[i].iov_base, local[i].iov_len);
			dst += local[i].iov_len;
		}
	} else {
		memcpy(op->bounce_iov, local, lcount * sizeof(*local));
		op->bounce_iovcnt = lcount;
	}
	op->sge[0] = (struct ddtx_vsge){ (uintptr_t)op->bounce->data, (uint32_t)op->len,
					 ep->tx.mr->lkey };
	op->nsge = 1;
	op->items[0] = (struct ddtx_vitem){ .kind = DDTX_VITEM_RMA, .op = op, .first_sge = 0,
					    .nsge = 1, .roff = 0, .bytes = (uint32_t)op->len };
	op->nitems = 1;
	return true;
}

static int rma(struct ddtx_verbs_ep *ep, ddtx_peer_t peer, const struct iovec *local,
	       size_t lcount, enum ddtx_key_space space, uint64_t rkey, uint64_t raddr, size_t len,
	       void *wr_context, bool write)
{
	struct ddtx_vop *op;
	size_t total = 0;
	int ret;

	if (!ep || !ddtx_vpeer_get(ep, peer) || ddtx_iov_check(local, lcount, ep->dom->caps.max_sge, &total) ||
	    (space != DDTX_KEY_APP && space != DDTX_KEY_INTERNAL) || total != len ||
	    len > ep->dom->caps.max_rma_size) {
		DDTX_WARN(FI_LOG_EP_DATA, "verbs: %s: bad argument (peer %u, %zu local entries, "
			  "%zu of %zu bytes)\n", write ? "write" : "read", peer, lcount, total,
			  len);
		return -FI_EINVAL;
	}
	ret = ddtx_vcq_reserve(ep);
	if (ret)
		return ret;
	if (!len) {
		ddtx_vcq_push(ep, wr_context, 0);        /* like an HCA: nothing to check */
		return 0;
	}
	op = calloc(1, sizeof(*op));
	if (!op)
		return -FI_ENOMEM;
	op->wr_context = wr_context;
	op->write = write;
	op->peer = peer;
	op->space = (uint8_t)space;
	op->rkey_wire = rkey;
	op->raddr = raddr;
	op->len = len;
	if (space == DDTX_KEY_INTERNAL && !(rkey >> 32)) {
		op->resolved = true;                    /* the rkey itself, offset addressing */
		op->rkey = (uint32_t)rkey;
		op->hca_addr = raddr;
	}
	if (!try_bounce(ep, op, local, lcount)) {
		ret = build_local(ep, op, local, lcount);
		if (ret) {
			DDTX_WARN(FI_LOG_EP_DATA, "verbs: %s of %zu bytes: local memory: %s\n",
				  write ? "write" : "read", len, fi_strerror(-ret));
			op->items_left = 0;
			ep->ops_live++;
			op->status = ret;
			ddtx_vop_finish(ep, op);        /* the failure is the completion */
			return 0;
		}
	}
	op->items_left = op->nitems;
	ep->ops_live++;
	for (uint32_t i = 0; i < op->nitems; i++)
		ddtx_vpost_enqueue(ep, peer, &op->items[i]);
	return 0;
}

static int verbs_write(struct ddtx_wire_ep *wep, ddtx_peer_t peer, const struct iovec *local,
		       size_t lcount, enum ddtx_key_space space, uint64_t rkey, uint64_t raddr,
		       size_t len, void *wr_context)
{
	return rma(ddtx_vep_of(wep), peer, local, lcount, space, rkey, raddr, len, wr_context,
		   true);
}

static int verbs_read(struct ddtx_wire_ep *wep, ddtx_peer_t peer, const struct iovec *local,
		      size_t lcount, enum ddtx_key_space space, uint64_t rkey, uint64_t raddr,
		      size_t len, void *wr_context)
{
	return rma(ddtx_vep_of(wep), peer, local, lcount, space, rkey, raddr, len, wr_context,
		   false);
}

/* The UMR scheme's write of one window: the local side is a mapped mkey (zero-based). */
static int verbs_write_mkey(struct ddtx_wire_ep *wep, ddtx_peer_t peer,
			    const struct ddtx_wire_mkey *local, uint64_t loff,
			    enum ddtx_key_space space, uint64_t rkey, uint64_t raddr, size_t len,
			    void *wr_context)
{
	struct ddtx_verbs_ep *ep = ddtx_vep_of(wep);
	struct ddtx_vop *op;
	int ret;

	if (!ep || !ddtx_vpeer_get(ep, peer) || !local->nentries || loff > local->len ||
	    len > local->len - loff || len > ep->dom->caps.max_rma_size ||
	    (space != DDTX_KEY_APP && space != DDTX_KEY_INTERNAL))
		return -FI_EINVAL;
	ret = ddtx_vcq_reserve(ep);
	if (ret)
		return ret;
	if (!len) {
		ddtx_vcq_push(ep, wr_context, 0);
		return 0;
	}
	op = calloc(1, sizeof(*op));
	if (!op || !(op->sge = calloc(1, sizeof(*op->sge))) ||
	    !(op->items = calloc(1, sizeof(*op->items)))) {
		if (op)
			free(op->sge);
		free(op);
		return -FI_ENOMEM;
	}
	op->wr_context = wr_context;
	op->write = true;
	op->peer = peer;
	op->space = (uint8_t)space;
	op->rkey_wire = rkey;
	op->raddr = raddr;
	op->len = len;
	if (space == DDTX_KEY_INTERNAL && !(rkey >> 32)) {
		op->resolved = true;
		op->rkey = (uint32_t)rkey;
		op->hca_addr = raddr;
	}
	op->sge[0] = (struct ddtx_vsge){ loff, (uint32_t)len, ddtx_vmkey_lkey(local) };
	op->nsge = 1;
	op->items[0] = (struct ddtx_vitem){ .kind = DDTX_VITEM_RMA, .op = op, .first_sge = 0,
					    .nsge = 1, .roff = 0, .bytes = (uint32_t)len };
	op->nitems = op->items_left = 1;
	ep->ops_live++;
	ddtx_vpost_enqueue(ep, peer, &op->items[0]);
	return 0;
}

/* ---- progress ---- */

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

static int verbs_ep_progress(struct ddtx_wire_ep *wep)
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

const struct ddtx_wire_impl ddtx_verbs_wire_impl = {
	.name = "verbs",
	.available = ddtx_verbs_available,
	.cleanup_stale = NULL,
	.domain_open = verbs_domain_open,
	.domain_close = verbs_domain_close,
	.domain_caps = verbs_domain_caps,
	.mr_reg = verbs_mr_reg,
	.mr_dereg = verbs_mr_dereg,
	.ep_open = verbs_ep_open,
	.ep_close = verbs_ep_close,
	.ep_getname = verbs_ep_getname,
	.peer_insert = verbs_peer_insert,
	.peer_addr = verbs_peer_addr,
	.peer_alive = verbs_peer_alive,
	.send = verbs_send,
	.send_claim = verbs_send_claim,
	.send_commit = verbs_send_commit,
	.rma_check = verbs_rma_check,
	.write = verbs_write,
	.read = verbs_read,
	.ep_progress = verbs_ep_progress,
	.mkey_create = ddtx_vmkey_create,
	.mkey_destroy = ddtx_vmkey_destroy,
	.mkey_map = ddtx_vmkey_map,
	.mkey_invalidate = ddtx_vmkey_invalidate,
	.write_mkey = verbs_write_mkey,
};
