/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Queue pairs and buffer slabs.
 *
 *  RC  : one per peer (fallback transport), receives from the endpoint's SRQ;
 *        RESET -> INIT at creation, -> RTR -> RTS once the peer's QPN and PSN are known
 *  UD  : one per endpoint (RC transport only) for the connection handshake
 *  DCT : one per endpoint (DC transport), receives from the SRQ; its number exists after RTR
 *  DCI : a pool per endpoint (DC transport), send only; each WR names its target DCT
 *
 * On mlx5, data QPs are created with scatter-to-CQE disabled (indirect mkeys do not support it).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wire/verbs/verbs.h"

/* ---- slabs: registered arrays of fixed-size buffers ---- */

int ddtx_vslab_init(struct ddtx_verbs_domain *dom, struct ddtx_vslab *s, uint32_t count,
		    uint32_t buf_size, uint8_t kind)
{
	memset(s, 0, sizeof(*s));
	ddtx_list_init(&s->free);
	s->size = (size_t)count * buf_size;
	if (posix_memalign((void **)&s->mem, 4096, s->size))
		return -FI_ENOMEM;
	s->bufs = calloc(count, sizeof(*s->bufs));
	if (!s->bufs)
		goto err;
	s->mr = ibv_reg_mr(dom->pd, s->mem, s->size, IBV_ACCESS_LOCAL_WRITE);
	if (!s->mr) {
		DDTX_WARN(FI_LOG_CORE, "verbs: registering %zu bytes of buffers failed: %s\n",
			  s->size, strerror(errno));
		goto err;
	}
	s->count = count;
	s->buf_size = buf_size;
	for (uint32_t i = 0; i < count; i++) {
		s->bufs[i].data = s->mem + (size_t)i * buf_size;
		s->bufs[i].kind = kind;
		s->bufs[i].item.kind = DDTX_VITEM_SEND;
		s->bufs[i].item.buf = &s->bufs[i];
		ddtx_list_push_back(&s->free, &s->bufs[i].entry);
	}
	s->nfree = count;
	return 0;
err:
	free(s->bufs);
	free(s->mem);
	memset(s, 0, sizeof(*s));
	return -FI_ENOMEM;
}

void ddtx_vslab_fini(struct ddtx_vslab *s)
{
	if (s->mr)
		ibv_dereg_mr(s->mr);
	free(s->bufs);
	free(s->mem);
	memset(s, 0, sizeof(*s));
}

struct ddtx_vbuf *ddtx_vslab_get(struct ddtx_vslab *s)
{
	struct ddtx_list_entry *e = ddtx_list_pop_front(&s->free);
	struct ddtx_vbuf *b;

	if (!e)
		return NULL;
	b = ddtx_container_of(e, struct ddtx_vbuf, entry);
	b->in_use = true;
	s->nfree--;
	return b;
}

void ddtx_vslab_put(struct ddtx_vslab *s, struct ddtx_vbuf *b)
{
	if (!b->in_use)
		return;
	b->in_use = false;
	ddtx_list_push_back(&s->free, &b->entry);
	s->nfree++;
}

/* ---- receive posting ---- */

int ddtx_vqp_post_rx(struct ddtx_verbs_ep *ep, struct ddtx_vbuf *b)
{
	struct ibv_sge sge = { (uintptr_t)b->data, ep->rx.buf_size, ep->rx.mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = (uintptr_t)b | DDTX_VWR_RX, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_srq_recv(ep->srq, &wr, &bad) ? -FI_EIO : 0;
}

int ddtx_vqp_post_ud_rx(struct ddtx_verbs_ep *ep, struct ddtx_vbuf *b)
{
	struct ibv_sge sge = { (uintptr_t)b->data, ep->ud_rx.buf_size, ep->ud_rx.mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = (uintptr_t)b | DDTX_VWR_UD_RX, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_recv(ep->ud, &wr, &bad) ? -FI_EIO : 0;
}

/* ---- RC ---- */

static int modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, const char *what)
{
	int ret = ibv_modify_qp(qp, a, mask);

	if (ret) {
		DDTX_WARN(FI_LOG_EP_CTRL, "verbs: QP %u to %s failed: %s\n", qp->qp_num, what,
			  strerror(ret));
		return -FI_EIO;
	}
	return 0;
}

struct ibv_qp *ddtx_vqp_create_rc(struct ddtx_verbs_ep *ep)
{
	struct ddtx_verbs_domain *dom = ep->dom;
	struct ibv_qp_init_attr_ex init = {
		.send_cq = ep->cq,
		.recv_cq = ep->cq,
		.srq = ep->srq,
		.cap = { .max_send_wr = DDTX_VERBS_SQ_DEPTH,
			 .max_send_sge = (uint32_t)dom->caps.max_sge },
		.qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = dom->pd,
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = dom->dev.port,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ,
	};
	struct ibv_qp *qp = NULL;

#ifdef DDTX_HAVE_MLX5DV
	if (dom->dev.mlx5) {
		struct mlx5dv_qp_init_attr dv = {
			.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS,
			.create_flags = MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE,
		};
		qp = mlx5dv_create_qp(dom->dev.ctx, &init, &dv);
	}
#endif
	if (!qp)
		qp = ibv_create_qp_ex(dom->dev.ctx, &init);
	if (!qp) {
		DDTX_WARN(FI_LOG_EP_CTRL, "verbs: creating an RC QP failed: %s\n", strerror(errno));
		return NULL;
	}
	if (modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
		   "INIT")) {
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

int ddtx_vqp_rc_connect(const struct ddtx_vdev *dev, struct ibv_qp *qp,
			const struct ddtx_vaddr *peer, uint32_t remote_qpn, uint32_t remote_psn,
			uint32_t local_psn)
{
	uint8_t rd_atom = (uint8_t)DDTX_MAX(1, DDTX_MIN(16, dev->attr.orig_attr.max_qp_rd_atom));
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = (enum ibv_mtu)DDTX_MIN((int)dev->port_attr.active_mtu, (int)peer->mtu),
		.dest_qp_num = remote_qpn,
		.rq_psn = remote_psn,
		.max_dest_rd_atomic = rd_atom,
		.min_rnr_timer = DDTX_VERBS_RNR_TIMER,
	};
	int ret;

	ddtx_vdev_ah_attr(dev, peer, &a.ah_attr);
	ret = modify(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, "RTR");
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = DDTX_VERBS_TIMEOUT;
	a.retry_cnt = 7;
	a.rnr_retry = 7;                 /* infinite: a full SRQ is back-pressure, not an error */
	a.sq_psn = local_psn;
	a.max_rd_atomic = rd_atom;
	return modify(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC, "RTS");
}

/* ---- UD (handshake) ---- */

int ddtx_vqp_create_ud(struct ddtx_verbs_ep *ep)
{
	struct ddtx_verbs_domain *dom = ep->dom;
	struct ibv_qp_init_attr init = {
		.send_cq = ep->cq,
		.recv_cq = ep->cq,
		.cap = { .max_send_wr = DDTX_VERBS_UD_BUFS, .max_recv_wr = DDTX_VERBS_UD_BUFS,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_UD,
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = dom->dev.port,
		.qkey = DDTX_VERBS_QKEY,
	};

	ep->ud = ibv_create_qp(dom->pd, &init);
	if (!ep->ud) {
		DDTX_WARN(FI_LOG_EP_CTRL, "verbs: creating the UD QP failed: %s\n",
			  strerror(errno));
		return -FI_ENODEV;
	}
	if (modify(ep->ud, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
		   "INIT"))
		goto err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (modify(ep->ud, &a, IBV_QP_STATE, "RTR"))
		goto err;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (modify(ep->ud, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, "RTS"))
		goto err;
	return 0;
err:
	ibv_destroy_qp(ep->ud);
	ep->ud = NULL;
	return -FI_ENODEV;
}

/* ---- DC (mlx5dv) ---- */

#ifdef DDTX_HAVE_MLX5DV
int ddtx_vqp_create_dct(struct ddtx_verbs_ep *ep)
{
	struct ddtx_verbs_domain *dom = ep->dom;
	struct ibv_qp_init_attr_ex init = {
		.send_cq = ep->cq,
		.recv_cq = ep->cq,
		.srq = ep->srq,
		.qp_type = IBV_QPT_DRIVER,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = dom->pd,
	};
	struct mlx5dv_qp_init_attr dv = {
		.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC,
		.dc_init_attr = { .dc_type = MLX5DV_DCTYPE_DCT,
				  .dct_access_key = ep->self.key },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = dom->dev.port,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ,
	};

	ep->dct = mlx5dv_create_qp(dom->dev.ctx, &init, &dv);
	if (!ep->dct) {
		DDTX_INFO(FI_LOG_EP_CTRL, "verbs: no DCT (%s): RC transport\n", strerror(errno));
		return -FI_ENOSYS;
	}
	if (modify(ep->dct, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		   IBV_QP_ACCESS_FLAGS, "INIT"))
		goto err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = dom->dev.port_attr.active_mtu;
	a.min_rnr_timer = DDTX_VERBS_RNR_TIMER;
	a.ah_attr.port_num = dom->dev.port;
	if (dom->dev.grh) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.sgid_index = (uint8_t)dom->dev.gid_index;
		a.ah_attr.grh.hop_limit = 64;
	}
	if (modify(ep->dct, &a, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER | IBV_QP_AV |
		   IBV_QP_PATH_MTU, "RTR"))
		goto err;
	return 0;
err:
	ibv_destroy_qp(ep->dct);
	ep->dct = NULL;
	return -FI_ENOSYS;
}

static int dci_to_rts(struct ddtx_verbs_ep *ep, struct ibv_qp *qp)
{
	struct ddtx_vdev *dev = &ep->dom->dev;
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = dev->port,
	};

	if (modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT, "INIT"))
		return -FI_EIO;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = dev->port_attr.active_mtu;
	a.ah_attr.port_num = dev->port;
	if (dev->grh) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.sgid_index = (uint8_t)dev->gid_index;
		a.ah_attr.grh.hop_limit = 64;
	}
	if (modify(qp, &a, IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_AV, "RTR"))
		return -FI_EIO;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = DDTX_VERBS_TIMEOUT;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = (uint8_t)DDTX_MAX(1, DDTX_MIN(16, dev->attr.orig_attr.max_qp_rd_atom));
	return modify(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC, "RTS");
}

int ddtx_vqp_create_dci(struct ddtx_verbs_ep *ep, uint32_t i)
{
	struct ddtx_verbs_domain *dom = ep->dom;
	struct ddtx_vdci *d = &ep->dci[i];
	struct ibv_qp_init_attr_ex init = {
		.send_cq = ep->cq,
		.recv_cq = ep->cq,
		.cap = { .max_send_wr = DDTX_VERBS_SQ_DEPTH,
			 .max_send_sge = (uint32_t)dom->caps.max_sge },
		.qp_type = IBV_QPT_DRIVER,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = dom->pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
				  IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ,
	};
	struct mlx5dv_qp_init_attr dv = {
		.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC | MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS,
		.create_flags = MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE,
		.dc_init_attr = { .dc_type = MLX5DV_DCTYPE_DCI },
	};

	d->owner = -1;
	d->qp = mlx5dv_create_qp(dom->dev.ctx, &init, &dv);
	if (!d->qp) {
		DDTX_INFO(FI_LOG_EP_CTRL, "verbs: no DCI (%s): RC transport\n", strerror(errno));
		return -FI_ENOSYS;
	}
	d->qpx = ibv_qp_to_qp_ex(d->qp);
	d->mqpx = d->qpx ? mlx5dv_qp_ex_from_ibv_qp_ex(d->qpx) : NULL;
	if (!d->mqpx || dci_to_rts(ep, d->qp)) {
		ibv_destroy_qp(d->qp);
		d->qp = NULL;
		return -FI_ENOSYS;
	}
	return 0;
}

int ddtx_vqp_reset_dci(struct ddtx_verbs_ep *ep, uint32_t i)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	if (modify(ep->dci[i].qp, &a, IBV_QP_STATE, "RESET"))
		return -FI_EIO;
	ep->dci[i].error = false;
	return dci_to_rts(ep, ep->dci[i].qp);
}
#else
int ddtx_vqp_create_dct(struct ddtx_verbs_ep *ep)
{
	return -FI_ENOSYS;
}

int ddtx_vqp_create_dci(struct ddtx_verbs_ep *ep, uint32_t i)
{
	return -FI_ENOSYS;
}

int ddtx_vqp_reset_dci(struct ddtx_verbs_ep *ep, uint32_t i)
{
	return -FI_ENOSYS;
}
#endif
