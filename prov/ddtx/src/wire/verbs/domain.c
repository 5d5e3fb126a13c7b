/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The verbs wire's domain: device caps (probed SGE limits), protection domain, key tables and
 * the registration entry points.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/iov_check.h"
#include "hmem/hmem.h"
#include "wire/verbs/verbs.h"

uint64_t ddtx_verbs_random64(void)
{
	uint64_t v = 0;

	while (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = ddtx_time_ns() * 0x9e3779b97f4a7c15ull;
	return v;
}

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
	dom->caps.kind = DDTX_WIRE_KIND_VERBS;
	dom->caps.max_sge = dom->dc ? dci : rc;
	dom->caps.max_mkey_entries = dom->umr.enabled ? dom->umr.pool_entries : 0;
	dom->caps.max_send_size = DDTX_VERBS_BUF_SIZE - DDTX_VERBS_PAYLOAD_OFF;
	dom->caps.max_rma_size = DDTX_MIN((size_t)dom->dev.port_attr.max_msg_sz,
					  (size_t)1 << 30);
	dom->caps.inline_size = dom->caps.max_send_size;
	dom->caps.addr_len = DDTX_VADDR_LEN;
	dom->caps.strided_mkeys = dom->umr.enabled && dom->umr.interleaved_entries > 0;
	dom->caps.recv_scatter = false;
	/* GPUDirect RDMA: device memory registered through dma-buf (mr.c). */
	dom->caps.device_keys = ddtx_hmem_dmabuf_available();
	return 0;
}

int ddtx_verbs_domain_open(const struct ddtx_wire_params *params,
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
	dom->key_salt = ddtx_verbs_random64() & 0x3fffffffffffffffull;
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

void ddtx_verbs_domain_close(struct ddtx_wire_domain *wdom)
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

const struct ddtx_wire_caps *ddtx_verbs_domain_caps(struct ddtx_wire_domain *wdom)
{
	struct ddtx_verbs_domain *dom = ddtx_vdom_of(wdom);
	return dom ? &dom->caps : NULL;
}

/* The blob's format (blob.c validates every field while unpacking); no device is asked. */
int ddtx_verbs_addr_check(struct ddtx_wire_domain *wdom, const void *addr, size_t len)
{
	struct ddtx_vaddr a;

	(void)wdom;
	if (ddtx_vaddr_unpack(addr, len, &a)) {
		DDTX_WARN(FI_LOG_AV, "verbs: malformed address (%zu bytes, %d expected)\n", len,
			  (int)DDTX_VADDR_LEN);
		return -FI_EINVAL;
	}
	return 0;
}

int ddtx_verbs_mr_reg(struct ddtx_wire_domain *wdom, const struct iovec *iov, size_t count,
			enum ddtx_key_space space, const uint64_t *requested_key, uint64_t iova,
			uint32_t access, struct ddtx_wire_mr **out)
{
	return ddtx_vmr_reg(ddtx_vdom_of(wdom), iov, count, space, requested_key, iova, access,
			    out);
}

int ddtx_verbs_mr_dereg(struct ddtx_wire_domain *wdom, struct ddtx_wire_mr *mr)
{
	return ddtx_vmr_dereg(ddtx_vdom_of(wdom), mr);
}

int ddtx_verbs_key_check(struct ddtx_wire_domain *wdom, enum ddtx_key_space space, uint64_t key,
			 uint64_t addr, uint64_t len, uint32_t access)
{
	return ddtx_vkey_check(ddtx_vdom_of(wdom), (uint8_t)space, key, addr, len, access);
}
