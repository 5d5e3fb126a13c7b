/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * UMR (mlx5): indirect memory keys mapped onto lists of registered regions.
 *
 *  - A pool of indirect mkeys is made at domain open (creation costs ~200 us each); the pool
 *    grows on demand and is a FIFO, so a recycled mkey is the one idle longest.
 *  - Mappings are posted on a dedicated RC QP connected to itself (UMR cannot be posted on a
 *    DCI); the resulting keys are usable from every QP of the protection domain.  The work
 *    request is inline (IBV_SEND_INLINE) and its entry count is bounded by the QP's inline
 *    size: probed at start-up, not assumed.
 *  - A strided entry list is mapped with mlx5dv_wr_mr_interleaved (one entry per block of the
 *    pattern plus a repeat count, see interleave.c), anything else with mlx5dv_wr_mr_list.
 *  - Deregistration posts IBV_WR_LOCAL_INV at once (a late remote write must not reach memory
 *    the caller got back), then returns the mkey to the pool.
 *  - Tag rotation: mkeys are created with MLX5DV_MKEY_INIT_ATTR_FLAGS_UPDATE_TAG and every
 *    mapping sets a new 8-bit tag (the low byte of the key), so a peer's stale cached rkey
 *    stops matching once the mkey is recycled.  Where the kernel refuses tag updates, a
 *    released mkey is destroyed instead of recycled (the next creation gets a fresh key).
 *
 * Everything here runs under the domain lock and waits for its own completion.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/verbs/verbs.h"

#ifdef DDTX_HAVE_MLX5DV

_Static_assert(sizeof(struct ddtx_vinterleave) == sizeof(struct mlx5dv_mr_interleaved),
	       "ddtx_vinterleave is an mlx5dv_mr_interleaved");
_Static_assert(offsetof(struct ddtx_vinterleave, lkey) ==
	       offsetof(struct mlx5dv_mr_interleaved, lkey), "mlx5dv_mr_interleaved");

#define UMR_WAIT_NS (2ull * 1000 * 1000 * 1000)

static void umr_off(struct ddtx_vumr *u, const char *why)
{
	u->enabled = false;
	snprintf(u->why_off, sizeof(u->why_off), "%s", why);
}

static struct ddtx_vmkey *mkey_new(struct ddtx_verbs_domain *dom, uint32_t entries)
{
	struct ddtx_vumr *u = &dom->umr;
	struct ddtx_vmkey *mk = calloc(1, sizeof(*mk));
	struct mlx5dv_mkey_init_attr attr = {
		.pd = dom->pd,
		.create_flags = MLX5DV_MKEY_INIT_ATTR_FLAGS_INDIRECT |
				(u->tag_update ? MLX5DV_MKEY_INIT_ATTR_FLAGS_UPDATE_TAG : 0),
		.max_entries = (uint16_t)entries,
	};

	if (!mk)
		return NULL;
	mk->mkey = mlx5dv_create_mkey(&attr);
	if (!mk->mkey && u->tag_update) {
		DDTX_INFO(FI_LOG_MR, "verbs: mkeys without tag updates (%s): released mkeys are "
			  "destroyed, not recycled\n", strerror(errno));
		u->tag_update = false;
		attr.create_flags = MLX5DV_MKEY_INIT_ATTR_FLAGS_INDIRECT;
		mk->mkey = mlx5dv_create_mkey(&attr);
	}
	if (!mk->mkey) {
		free(mk);
		return NULL;
	}
	mk->max_entries = attr.max_entries;
	return mk;
}

static void mkey_destroy(struct ddtx_vmkey *mk)
{
	if (mk->mkey && mlx5dv_destroy_mkey(mk->mkey))
		DDTX_WARN(FI_LOG_MR, "verbs: mlx5dv_destroy_mkey failed\n");
	free(mk);
}

static void pool_push(struct ddtx_vumr *u, struct ddtx_vmkey *mk)
{
	mk->next_free = NULL;
	if (u->free_tail)
		u->free_tail->next_free = mk;
	else
		u->free_head = mk;
	u->free_tail = mk;
	u->pool_free++;
}

static struct ddtx_vmkey *pool_pop(struct ddtx_vumr *u)
{
	struct ddtx_vmkey *mk = u->free_head;

	if (!mk)
		return NULL;
	u->free_head = mk->next_free;
	if (!u->free_head)
		u->free_tail = NULL;
	u->pool_free--;
	return mk;
}

/* The UMR QP talks to itself. */
static int self_connect(struct ddtx_verbs_domain *dom)
{
	struct ddtx_vaddr self = { 0 };
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = dom->dev.port,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE,
	};

	if (ibv_modify_qp(dom->umr.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		return -FI_EIO;
	ddtx_vdev_self_addr(&dom->dev, &self);
	return ddtx_vqp_rc_connect(&dom->dev, dom->umr.qp, &self, dom->umr.qp->qp_num, 0, 0);
}

static int umr_recover(struct ddtx_verbs_domain *dom)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	struct ibv_wc wc;

	while (ibv_poll_cq(dom->umr.cq, 1, &wc) > 0)
		;
	if (ibv_modify_qp(dom->umr.qp, &a, IBV_QP_STATE) || self_connect(dom)) {
		dom->umr.broken = true;
		umr_off(&dom->umr, "the UMR QP could not be recovered");
		DDTX_WARN(FI_LOG_MR, "verbs: UMR disabled: %s\n", dom->umr.why_off);
		return -FI_EIO;
	}
	return 0;
}

/* Wait for the one signaled UMR/LOCAL_INV completion. */
static int umr_wait(struct ddtx_verbs_domain *dom, const char *what)
{
	uint64_t start = ddtx_coarse_time_ns();
	struct ibv_wc wc;
	int n;

	while (!(n = ibv_poll_cq(dom->umr.cq, 1, &wc))) {
		if (ddtx_coarse_time_ns() - start > UMR_WAIT_NS) {
			DDTX_WARN(FI_LOG_MR, "verbs: %s: no completion\n", what);
			umr_recover(dom);
			return -FI_ETIMEDOUT;
		}
	}
	if (n < 0 || wc.status != IBV_WC_SUCCESS) {
		DDTX_WARN(FI_LOG_MR, "verbs: %s failed: %s\n", what,
			  n < 0 ? "poll error" : ibv_wc_status_str(wc.status));
		umr_recover(dom);
		return -FI_EIO;
	}
	return 0;
}

static int post_map(struct ddtx_verbs_domain *dom, struct ddtx_vmkey *mk,
		    const struct ddtx_vsge *e, size_t n, const struct ddtx_vinterleave *il,
		    size_t p, uint32_t repeat, int access)
{
	struct ddtx_vumr *u = &dom->umr;
	int ret;

	if (u->tag_update) {
		uint32_t tag = (mk->mkey->lkey + 1) & 0xff;
		mk->mkey->lkey = (mk->mkey->lkey & ~0xffu) | tag;
		mk->mkey->rkey = (mk->mkey->rkey & ~0xffu) | tag;
	}
	ibv_wr_start(u->qpx);
	u->qpx->wr_id = (uintptr_t)mk;
	u->qpx->wr_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	if (p)
		mlx5dv_wr_mr_interleaved(u->mqpx, mk->mkey, (uint32_t)access, repeat, (uint16_t)p,
					 (struct mlx5dv_mr_interleaved *)il);
	else
		mlx5dv_wr_mr_list(u->mqpx, mk->mkey, (uint32_t)access, (uint16_t)n,
				  (struct ibv_sge *)e);
	ret = ibv_wr_complete(u->qpx);
	if (ret) {
		DDTX_INFO(FI_LOG_MR, "verbs: posting a UMR of %zu entries failed: %s\n",
			  p ? p : n, strerror(ret));
		return -FI_EINVAL;
	}
	ret = umr_wait(dom, "UMR");
	if (!ret)
		mk->mapped = true;
	return ret;
}

static int post_inv(struct ddtx_verbs_domain *dom, struct ddtx_vmkey *mk)
{
	struct ddtx_vumr *u = &dom->umr;
	int ret;

	ibv_wr_start(u->qpx);
	u->qpx->wr_id = (uintptr_t)mk;
	u->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_local_inv(u->qpx, mk->mkey->lkey);
	ret = ibv_wr_complete(u->qpx);
	if (ret)
		return -FI_EIO;
	ret = umr_wait(dom, "LOCAL_INV");
	if (!ret)
		mk->mapped = false;
	return ret;
}

/* Largest entry count a list (or pattern) mapping accepts, halving from max down to 1. */
static uint32_t probe_entries(struct ddtx_verbs_domain *dom, struct ddtx_vmkey *mk,
			      struct ibv_mr *scratch, uint32_t max, bool interleaved)
{
	for (uint32_t n = max; n >= 1; n /= 2) {
		struct ddtx_vsge e[n];
		struct ddtx_vinterleave il[n];
		int ret;

		for (uint32_t i = 0; i < n; i++) {
			e[i] = (struct ddtx_vsge){ (uintptr_t)scratch->addr + 64 * i, 32,
						   scratch->lkey };
			il[i] = (struct ddtx_vinterleave){ (uintptr_t)scratch->addr + 64 * i, 32,
							   32 * n, scratch->lkey };
		}
		ret = interleaved ? post_map(dom, mk, NULL, 0, il, n, 4, IBV_ACCESS_LOCAL_WRITE)
				  : post_map(dom, mk, e, n, NULL, 0, 0, IBV_ACCESS_LOCAL_WRITE);
		if (!ret && !post_inv(dom, mk))
			return n;
		if (dom->umr.broken)
			return 0;
	}
	return 0;
}


static int create_qp(struct ddtx_verbs_domain *dom, bool interleaved)
{
	struct ddtx_vumr *u = &dom->umr;
	struct ibv_qp_init_attr_ex init = {
		.send_cq = u->cq,
		.recv_cq = u->cq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = DDTX_VERBS_UMR_INLINE },
		.qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = dom->pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_LOCAL_INV,
	};
	struct mlx5dv_qp_init_attr dv = {
		.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS |
			     MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS,
		.create_flags = MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE,
		.send_ops_flags = MLX5DV_QP_EX_WITH_MR_LIST |
				  (interleaved ? MLX5DV_QP_EX_WITH_MR_INTERLEAVED : 0),
	};

	u->qp = mlx5dv_create_qp(dom->dev.ctx, &init, &dv);
	if (!u->qp)
		return -FI_ENOSYS;
	u->qpx = ibv_qp_to_qp_ex(u->qp);
	u->mqpx = u->qpx ? mlx5dv_qp_ex_from_ibv_qp_ex(u->qpx) : NULL;
	if (!u->mqpx || self_connect(dom)) {
		ibv_destroy_qp(u->qp);
		u->qp = NULL;
		return -FI_EIO;
	}
	/* Entries one inline work request holds (16 bytes each, see VERBS.md). */
	u->list_entries = (init.cap.max_inline_data + 4) / 16;
	u->interleaved_entries = interleaved && u->list_entries > 1 ? u->list_entries - 1 : 0;
	return 0;
}

int ddtx_vumr_init(struct ddtx_verbs_domain *dom)
{
	struct ddtx_vumr *u = &dom->umr;
	size_t want = dom->params.max_mkey_entries ? dom->params.max_mkey_entries
						   : DDTX_VERBS_DEF_MKEY_ENTRIES;
	struct ibv_mr *scratch = NULL;
	void *mem = NULL;
	struct ddtx_vmkey *probe = NULL;
	bool interleaved = true;

	memset(u, 0, sizeof(*u));
	u->tag_update = true;
	if (!dom->dev.devx) {
		umr_off(u, dom->dev.mlx5 ? "no DEVX context" : "not an mlx5 device");
		return 0;
	}
	u->cq = ibv_create_cq(dom->dev.ctx, 32, NULL, NULL, 0);
	if (!u->cq) {
		umr_off(u, "no CQ for the UMR QP");
		return 0;
	}
	if (create_qp(dom, true)) {
		interleaved = false;
		if (create_qp(dom, false)) {
			umr_off(u, "the device refused a UMR QP");
			goto fail;
		}
	}
	want = DDTX_MIN(want, (size_t)u->list_entries);
	if (want > 0xffff)
		want = 0xffff;
	if (posix_memalign(&mem, 4096, 65536) ||
	    !(scratch = ibv_reg_mr(dom->pd, mem, 65536, IBV_ACCESS_LOCAL_WRITE))) {
		umr_off(u, "no scratch memory for the probe");
		goto fail;
	}
	probe = mkey_new(dom, (uint32_t)want + 1);
	if (!probe) {
		umr_off(u, "mlx5dv_create_mkey failed");
		goto fail;
	}
	u->list_entries = probe_entries(dom, probe, scratch, (uint32_t)want, false);
	if (!u->list_entries) {
		umr_off(u, "no UMR list mapping succeeded");
		goto fail;
	}
	if (interleaved && u->interleaved_entries)
		u->interleaved_entries = probe_entries(dom, probe, scratch,
						       DDTX_MIN(u->interleaved_entries,
								u->list_entries),
						       true);
	u->pool_entries = u->list_entries;
	mkey_destroy(probe);
	probe = NULL;
	ibv_dereg_mr(scratch);
	free(mem);
	for (size_t i = 0; i < DDTX_VERBS_MKEY_POOL; i++) {
		struct ddtx_vmkey *mk = mkey_new(dom, u->pool_entries + 1);
		if (!mk)
			break;
		pool_push(u, mk);
		u->pool_size++;
	}
	if (!u->pool_size) {
		umr_off(u, "the mkey pool could not be filled");
		goto fail_pool;
	}
	u->enabled = true;
	DDTX_INFO(FI_LOG_MR, "verbs: UMR: %u list entries, %u interleaved entries, pool of %zu "
		  "mkeys, tag rotation %s\n", u->list_entries, u->interleaved_entries,
		  u->pool_size, u->tag_update ? "on" : "off (mkeys destroyed on release)");
	return 0;
fail:
	if (probe)
		mkey_destroy(probe);
	if (scratch)
		ibv_dereg_mr(scratch);
	free(mem);
fail_pool:
	DDTX_INFO(FI_LOG_MR, "verbs: UMR off: %s; keys of several segments are refused and the "
		  "engine uses SGL or PACK\n", u->why_off);
	ddtx_vumr_fini(dom);
	return 0;
}

void ddtx_vumr_fini(struct ddtx_verbs_domain *dom)
{
	struct ddtx_vumr *u = &dom->umr;
	struct ddtx_vmkey *mk;

	while ((mk = pool_pop(u)))
		mkey_destroy(mk);
	if (u->qp)
		ibv_destroy_qp(u->qp);
	if (u->cq)
		ibv_destroy_cq(u->cq);
	u->qp = NULL;
	u->cq = NULL;
	u->pool_size = 0;
	u->enabled = false;
}

/* Map e[0..n) onto mk: interleaved when strided, a list otherwise. */
int ddtx_vumr_post(struct ddtx_verbs_domain *dom, struct ddtx_vmkey *mk,
		   const struct ddtx_vsge *e, size_t n, int ibv_access)
{
	struct ddtx_vumr *u = &dom->umr;
	struct ddtx_vinterleave il[u->interleaved_entries ? u->interleaved_entries : 1];
	uint32_t repeat = 0;
	size_t p = 0;
	int access = ibv_access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ);
	int ret;

	if (!u->enabled || !n)
		return -FI_EOPNOTSUPP;
	if (u->interleaved_entries)
		p = ddtx_vinterleave_detect(e, n, DDTX_MIN(u->interleaved_entries,
							   mk->max_entries - 1), il, &repeat);
	if (!p && (n > u->list_entries || n > mk->max_entries)) {
		DDTX_INFO(FI_LOG_MR, "verbs: %zu entries exceed one UMR (%u)\n", n,
			  DDTX_MIN(u->list_entries, mk->max_entries));
		return -FI_EINVAL;
	}
	if (mk->mapped && (ret = post_inv(dom, mk)))
		return ret;                      /* LOCAL_INV before reuse */
	ret = post_map(dom, mk, e, n, p ? il : NULL, p, repeat, access);
	if (ret) {
		u->fallbacks++;
		return ret;
	}
	u->maps++;
	if (p)
		u->interleaved_maps++;
	return 0;
}

int ddtx_vumr_inv(struct ddtx_verbs_domain *dom, struct ddtx_vmkey *mk)
{
	return mk->mapped ? post_inv(dom, mk) : 0;
}

struct ddtx_vmkey *ddtx_vumr_mkey_new(struct ddtx_verbs_domain *dom)
{
	struct ddtx_vmkey *mk;

	if (!dom->umr.enabled)
		return NULL;
	mk = pool_pop(&dom->umr);
	if (!mk && (mk = mkey_new(dom, dom->umr.pool_entries + 1)))
		dom->umr.pool_size++;
	return mk;
}

int ddtx_vumr_map(struct ddtx_verbs_domain *dom, const struct ddtx_vsge *e, size_t n,
		  int ibv_access, bool dedicated, struct ddtx_vmkey **out, uint32_t *rkey)
{
	struct ddtx_vumr *u = &dom->umr;
	struct ddtx_vmkey *mk = NULL;
	int ret;

	if (!u->enabled || !n)
		return -FI_EOPNOTSUPP;
	if (n <= u->pool_entries) {
		mk = ddtx_vumr_mkey_new(dom);
	} else if (dedicated && n <= u->list_entries) {
		mk = mkey_new(dom, (uint32_t)n + 1);
		if (mk)
			mk->dedicated = true;
	} else if (dedicated) {
		/* Too many for one list; a pattern may still fit. */
		mk = mkey_new(dom, u->interleaved_entries + 1);
		if (mk)
			mk->dedicated = true;
	}
	if (!mk)
		return n > u->pool_entries && !dedicated ? -FI_EINVAL : -FI_ENOMEM;
	ret = ddtx_vumr_post(dom, mk, e, n, ibv_access);
	if (ret) {
		ddtx_vumr_unmap(dom, mk);
		return ret;
	}
	*out = mk;
	*rkey = mk->mkey->rkey;
	return 0;
}

void ddtx_vumr_unmap(struct ddtx_verbs_domain *dom, struct ddtx_vmkey *mk)
{
	struct ddtx_vumr *u = &dom->umr;

	if (!mk)
		return;
	if (mk->mapped && post_inv(dom, mk)) {
		/* Not invalidated: never reuse it; destroying it revokes it. */
		mk->dedicated = true;
	}
	if (mk->dedicated || !u->tag_update || !u->enabled) {
		if (!mk->dedicated)
			u->pool_size--;
		mkey_destroy(mk);
		return;
	}
	pool_push(u, mk);
}

uint32_t ddtx_vumr_rkey(const struct ddtx_vmkey *mk)
{
	return mk->mkey->rkey;
}

uint32_t ddtx_vumr_lkey(const struct ddtx_vmkey *mk)
{
	return mk->mkey->lkey;
}

#else /* !DDTX_HAVE_MLX5DV */

int ddtx_vumr_init(struct ddtx_verbs_domain *dom)
{
	memset(&dom->umr, 0, sizeof(dom->umr));
	snprintf(dom->umr.why_off, sizeof(dom->umr.why_off), "built without mlx5dv");
	return 0;
}

void ddtx_vumr_fini(struct ddtx_verbs_domain *dom)
{
}

int ddtx_vumr_map(struct ddtx_verbs_domain *dom, const struct ddtx_vsge *e, size_t n,
		  int ibv_access, bool dedicated, struct ddtx_vmkey **out, uint32_t *rkey)
{
	return -FI_EOPNOTSUPP;
}

void ddtx_vumr_unmap(struct ddtx_verbs_domain *dom, struct ddtx_vmkey *mk)
{
}

int ddtx_vumr_post(struct ddtx_verbs_domain *dom, struct ddtx_vmkey *mk,
		   const struct ddtx_vsge *e, size_t n, int ibv_access)
{
	return -FI_EOPNOTSUPP;
}

int ddtx_vumr_inv(struct ddtx_verbs_domain *dom, struct ddtx_vmkey *mk)
{
	return 0;
}

struct ddtx_vmkey *ddtx_vumr_mkey_new(struct ddtx_verbs_domain *dom)
{
	return NULL;
}

uint32_t ddtx_vumr_rkey(const struct ddtx_vmkey *mk)
{
	return 0;
}

uint32_t ddtx_vumr_lkey(const struct ddtx_vmkey *mk)
{
	return 0;
}

#endif
