/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory registration for the verbs wire.
 *
 * Regions: every ibv_mr the wire makes is a refcounted struct ddtx_vreg.  Regions registered
 * at their own virtual address with local write access go into dom->regions, the index that
 * gives local lkeys to the gather lists of writes/reads (ddtx_vsge_take).
 *
 * Keys (struct ddtx_verbs_mr):
 *  - one segment: an ibv_mr registered at the requested iova (ibv_reg_mr_iova2), or an
 *    ibv_reg_dmabuf_mr for CUDA device memory (hmem/);
 *  - several segments: an indirect mkey (UMR, umr.c) whose entries point into regions: the
 *    indexed ones already covering the segments, else one region over the segments' span when
 *    it is dense, else one region per segment.  Without UMR, multi-segment keys are refused
 *    (-FI_EOPNOTSUPP): the engine must then describe one key per segment.
 *
 * Key numbers.  RDMA names memory by a 32-bit rkey chosen by the device, but application keys
 * (fi_mr_reg without FI_MR_PROV_KEY) are chosen by the caller, and a multi-segment key is
 * zero-based where the caller's addresses are not.  So every key is kept in a table per space,
 * key -> {rkey, iova, HCA base, length, access}, which peers query with a KEY_REQ message and
 * cache (post.c).  Internal keys the wire numbers itself (no requested key, offset addressing)
 * are the rkey itself and need no query (DDTX_VKEY_RESOLVE clear).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hmem/hmem.h"
#include "wire/verbs/verbs.h"

#define SPAN_SLACK ((uint64_t)1 << 20)   /* a span may hold this much more than its segments */

int ddtx_vaccess_to_ibv(uint32_t access)
{
	int a = 0;

	if (access & (DDTX_ACC_LOCAL_WRITE | DDTX_ACC_REMOTE_WRITE))
		a |= IBV_ACCESS_LOCAL_WRITE;
	if (access & DDTX_ACC_REMOTE_WRITE)
		a |= IBV_ACCESS_REMOTE_WRITE;
	if (access & DDTX_ACC_REMOTE_READ)
		a |= IBV_ACCESS_REMOTE_READ;
	return a;
}

uint32_t ddtx_vregion_flags(int ibv_access)
{
	return ((ibv_access & IBV_ACCESS_LOCAL_WRITE) ? DDTX_VREGION_F_LOCAL_WRITE : 0) |
	       ((ibv_access & IBV_ACCESS_REMOTE_WRITE) ? DDTX_VREGION_F_REMOTE_WRITE : 0) |
	       ((ibv_access & IBV_ACCESS_REMOTE_READ) ? DDTX_VREGION_F_REMOTE_READ : 0);
}

static struct ibv_mr *reg_host(struct ddtx_verbs_domain *dom, void *addr, size_t len,
			       uint64_t iova, int access)
{
	return ibv_reg_mr_iova2(dom->pd, addr, len, iova, (unsigned int)access);
}

int ddtx_vreg_new(struct ddtx_verbs_domain *dom, void *addr, size_t len, uint64_t iova,
		  int ibv_access, bool index, struct ddtx_vreg **out)
{
	struct ddtx_hmem_attr hm;
	struct ddtx_vreg *reg = calloc(1, sizeof(*reg));

	if (!reg)
		return -FI_ENOMEM;
	reg->dmabuf_fd = -1;
	ddtx_hmem_detect(addr, &hm);
	if (hm.iface == DDTX_HMEM_CUDA) {
		uint64_t off;
		int ret = ddtx_hmem_dmabuf_fd(addr, len, &reg->dmabuf_fd, &off);

		if (ret) {
			DDTX_WARN(FI_LOG_MR, "verbs: CUDA memory %p (%zu bytes) cannot be "
				  "registered: %s\n", addr, len, fi_strerror(-ret));
			free(reg);
			return ret;
		}
		reg->mr = ibv_reg_dmabuf_mr(dom->pd, off, len, iova, reg->dmabuf_fd, ibv_access);
		if (reg->mr)
			(void)ddtx_hmem_sync_memops(addr);
	} else {
		reg->mr = reg_host(dom, addr, len, iova, ibv_access);
	}
	if (!reg->mr) {
		int err = errno;

		DDTX_INFO(FI_LOG_MR, "verbs: ibv_reg_mr(%p, %zu, access %#x) failed: %s\n", addr,
			  len, ibv_access, strerror(err));
		if (reg->dmabuf_fd >= 0)
			close(reg->dmabuf_fd);
		free(reg);
		return err == ENOMEM ? -FI_ENOMEM : err == EFAULT || err == EACCES || err == EPERM
			? -FI_EACCES : -FI_EINVAL;
	}
	reg->addr = (uint64_t)(uintptr_t)addr;
	reg->len = len;
	reg->refs = 1;
	/* cuMemFree is invisible to the memory monitor, so a later allocation at the same
	 * address could find this region's lkey (the freed buffer's pages).  Device memory is
	 * indexed only where the protocols move it zero copy (caps.device_keys): they check an
	 * allocation's buffer id before every use and drop the registrations of one that
	 * changed (proto/hmem_direct.c).  Otherwise every key over device memory registers its
	 * own regions. */
	if (index && iova == reg->addr && (hm.iface != DDTX_HMEM_CUDA || dom->caps.device_keys)) {
		struct ddtx_vregion r = {
			.addr = reg->addr, .len = len, .lkey = reg->mr->lkey, .owner = reg,
			.flags = ddtx_vregion_flags(ibv_access),
		};
		reg->indexed = !ddtx_vregion_index_insert(&dom->regions, &r);
	}
	*out = reg;
	return 0;
}

void ddtx_vreg_put(struct ddtx_verbs_domain *dom, struct ddtx_vreg *reg)
{
	if (!reg || --reg->refs)
		return;
	if (reg->indexed)
		ddtx_vregion_index_remove(&dom->regions, reg);
	if (ibv_dereg_mr(reg->mr))
		DDTX_WARN(FI_LOG_MR, "verbs: ibv_dereg_mr failed\n");
	if (reg->dmabuf_fd >= 0)
		close(reg->dmabuf_fd);
	free(reg);
}

/* ---- key tables ---- */

static size_t bucket_of(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return (size_t)(key & (DDTX_VKEY_BUCKETS - 1));
}

static struct ddtx_verbs_mr *table_find(struct ddtx_vkey_table *t, uint64_t key)
{
	for (struct ddtx_verbs_mr *m = t->bucket[bucket_of(key)]; m; m = m->next)
		if (m->pub.key == key)
			return m;
	return NULL;
}

static void table_insert(struct ddtx_vkey_table *t, struct ddtx_verbs_mr *m)
{
	size_t b = bucket_of(m->pub.key);

	m->next = t->bucket[b];
	t->bucket[b] = m;
	m->in_table = true;
	t->live++;
}

static void table_remove(struct ddtx_vkey_table *t, struct ddtx_verbs_mr *m)
{
	for (struct ddtx_verbs_mr **pp = &t->bucket[bucket_of(m->pub.key)]; *pp;
	     pp = &(*pp)->next) {
		if (*pp == m) {
			*pp = m->next;
			m->in_table = false;
			t->live--;
			return;
		}
	}
}

/* ---- multi-segment keys ---- */

static int add_ref(struct ddtx_verbs_mr *m, struct ddtx_vreg *reg, size_t cap)
{
	for (size_t i = 0; i < m->nrefs; i++)
		if (m->refs[i] == reg)
			return 0;
	if (m->nrefs == cap)
		return -FI_EINVAL;
	reg->refs++;
	m->refs[m->nrefs++] = reg;
	return 0;
}

/* Entries from regions already registered (and indexed); false if any byte is uncovered. */
static bool entries_from_index(struct ddtx_verbs_domain *dom, struct ddtx_verbs_mr *m,
			       const struct iovec *iov, size_t count, uint32_t need,
			       struct ddtx_vsge *e, size_t cap, size_t *n)
{
	struct ddtx_vsge_cursor c;
	bool uncovered;

	ddtx_vsge_cursor_init(&c, iov, count);
	ddtx_vsge_take(&c, &dom->regions, need, cap, SIZE_MAX, e, n, &uncovered);
	if (uncovered || !ddtx_vsge_cursor_done(&c))
		return false;
	for (size_t i = 0; i < *n; i++) {
		const struct ddtx_vregion *r = ddtx_vregion_index_find(&dom->regions, e[i].addr,
								       need);
		if (!r || add_ref(m, (struct ddtx_vreg *)r->owner, cap))
			return false;
	}
	return true;
}

static void drop_refs(struct ddtx_verbs_domain *dom, struct ddtx_verbs_mr *m)
{
	for (size_t i = 0; i < m->nrefs; i++)
		ddtx_vreg_put(dom, m->refs[i]);
	m->nrefs = 0;
}

static int map_multi(struct ddtx_verbs_domain *dom, struct ddtx_verbs_mr *m,
		     const struct iovec *iov, size_t count, enum ddtx_key_space space,
		     int ibv_access)
{
	/* Entries may only point into regions with at least the key's rights. */
	uint32_t need = ddtx_vregion_flags(ibv_access);
	struct ddtx_vsge *e = calloc(count, sizeof(*e));
	uint64_t lo = UINT64_MAX, hi = 0, total = 0;
	size_t n = 0;
	int ret;

	m->refs = calloc(count, sizeof(*m->refs));
	if (!e || !m->refs) {
		ret = -FI_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < count; i++) {
		uint64_t a = (uint64_t)(uintptr_t)iov[i].iov_base;
		if (!iov[i].iov_len)
			continue;
		lo = DDTX_MIN(lo, a);
		hi = DDTX_MAX(hi, a + iov[i].iov_len);
		total += iov[i].iov_len;
	}
	if (!entries_from_index(dom, m, iov, count, need, e, count, &n)) {
		struct ddtx_vreg *span = NULL;

		drop_refs(dom, m);
		n = 0;
		/* One region over a dense span (gaps included), else one per segment. */
		if (hi - lo <= total + DDTX_MAX(total, SPAN_SLACK) &&
		    !ddtx_vreg_new(dom, (void *)(uintptr_t)lo, hi - lo, lo, ibv_access, true,
				   &span))
			m->refs[m->nrefs++] = span;
		for (size_t i = 0; i < count; i++) {
			struct ddtx_vreg *reg = span;
			if (!iov[i].iov_len)
				continue;
			if (!reg) {
				ret = ddtx_vreg_new(dom, iov[i].iov_base, iov[i].iov_len,
						    (uint64_t)(uintptr_t)iov[i].iov_base,
						    ibv_access, true, &reg);
				if (ret)
					goto out;
				m->refs[m->nrefs++] = reg;
			}
			e[n].addr = (uint64_t)(uintptr_t)iov[i].iov_base;
			e[n].length = (uint32_t)iov[i].iov_len;
			e[n].lkey = reg->mr->lkey;
			n++;
		}
	}
	ret = ddtx_vumr_map(dom, e, n, ibv_access, space == DDTX_KEY_APP, &m->mkey, &m->rkey);
	if (ret)
		DDTX_INFO(FI_LOG_MR, "verbs: mapping %zu entries failed: %s\n", n,
			  fi_strerror(-ret));
out:
	if (ret)
		drop_refs(dom, m);
	free(e);
	return ret;
}

int ddtx_vmr_reg(struct ddtx_verbs_domain *dom, const struct iovec *iov, size_t count,
		 enum ddtx_key_space space, const uint64_t *requested_key, uint64_t iova,
		 uint32_t access, struct ddtx_wire_mr **out)
{
	const uint32_t all = DDTX_ACC_LOCAL_READ | DDTX_ACC_LOCAL_WRITE | DDTX_ACC_REMOTE_READ |
			     DDTX_ACC_REMOTE_WRITE;
	struct ddtx_verbs_mr *m;
	uint64_t len = 0;
	size_t nonempty = 0, first = 0;
	int ibv_access = ddtx_vaccess_to_ibv(access), ret = 0;

	if (!dom || !out || (count && !iov) || (space != DDTX_KEY_APP && space != DDTX_KEY_INTERNAL)
	    || (access & ~all) || count > DDTX_MR_IOV_LIMIT) {
		DDTX_WARN(FI_LOG_MR, "verbs: mr_reg: bad argument (space %d, %zu entries, access "
			  "%#x)\n", (int)space, count, access);
		return -FI_EINVAL;
	}
	for (size_t i = 0; i < count; i++) {
		uint64_t a = (uint64_t)(uintptr_t)iov[i].iov_base, l = iov[i].iov_len;
		if ((l && !a) || l > UINT64_MAX - a || l > UINT64_MAX - len) {
			DDTX_WARN(FI_LOG_MR, "verbs: mr_reg: entry %zu (%p, %zu) is invalid\n", i,
				  iov[i].iov_base, iov[i].iov_len);
			return -FI_EINVAL;
		}
		if (l && !nonempty++)
			first = i;
		len += l;
	}
	if (len > UINT64_MAX - iova)
		return -FI_EINVAL;
	if (nonempty > 1 && space == DDTX_KEY_INTERNAL && nonempty > dom->caps.max_mkey_entries) {
		DDTX_WARN(FI_LOG_MR, "verbs: mr_reg: %zu entries exceed max_mkey_entries %zu\n",
			  nonempty, dom->caps.max_mkey_entries);
		return -FI_EINVAL;
	}
	if (nonempty > 1 && len >= ((uint64_t)1 << 31)) {
		DDTX_WARN(FI_LOG_MR, "verbs: mr_reg: a multi-segment key covers less than 2 GiB "
			  "(%llu bytes)\n", (unsigned long long)len);
		return -FI_EINVAL;
	}
	if (nonempty > 1 && !dom->umr.enabled) {
		DDTX_INFO(FI_LOG_MR, "verbs: mr_reg: a key of %zu segments needs UMR (%s)\n",
			  nonempty, dom->umr.why_off);
		return -FI_EOPNOTSUPP;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -FI_ENOMEM;

	pthread_mutex_lock(&dom->lock);
	if (requested_key && table_find(&dom->keys[space], *requested_key)) {
		ret = -FI_ENOKEY;
		goto err;
	}
	if (nonempty == 1) {
		/* Indexed when registered at its own address (the engine's registration cache
		 * does so): its lkey then serves the local side of writes and reads. */
		ret = ddtx_vreg_new(dom, iov[first].iov_base, iov[first].iov_len, iova, ibv_access,
				    true, &m->direct);
		if (ret)
			goto err;
		m->rkey = m->direct->mr->rkey;
		m->hca_base = iova;              /* the MR is addressed from iova */
	} else if (nonempty > 1) {
		ret = map_multi(dom, m, iov, count, space, ibv_access);
		if (ret)
			goto err;
		m->hca_base = 0;                 /* indirect mkeys are zero-based */
	}
	if (requested_key) {
		m->pub.key = *requested_key;
	} else if (space == DDTX_KEY_INTERNAL && m->hca_base == iova && nonempty) {
		m->pub.key = m->rkey;            /* direct: no resolution needed */
	} else {
		do {
			m->pub.key = DDTX_VKEY_RESOLVE | (dom->key_salt + dom->next_key++);
		} while (table_find(&dom->keys[space], m->pub.key));
	}
	if (table_find(&dom->keys[space], m->pub.key)) {
		ret = -FI_ENOKEY;                /* an rkey reused while its old key lives on */
		goto err_unmap;
	}
	m->pub.space = space;
	m->pub.iova = iova;
	m->pub.len = (size_t)len;
	m->pub.access = access;
	m->pub.wire_priv = m;
	table_insert(&dom->keys[space], m);
	pthread_mutex_unlock(&dom->lock);
	*out = &m->pub;
	return 0;
err_unmap:
	if (m->mkey)
		ddtx_vumr_unmap(dom, m->mkey);
	drop_refs(dom, m);
	ddtx_vreg_put(dom, m->direct);
err:
	pthread_mutex_unlock(&dom->lock);
	free(m->refs);
	free(m);
	return ret;
}

/* Tell the peers that resolved this key to forget it (sent by each endpoint's progress). */
static void queue_invalidations(struct ddtx_verbs_domain *dom, struct ddtx_verbs_mr *m)
{
	for (size_t i = 0; i < m->nresolvers; i++) {
		struct ddtx_vresolver *r = &m->resolvers[i];
		struct ddtx_list_entry *it, *tmp;
		struct ddtx_vkey_req req = { (uint8_t)m->pub.space, m->pub.key };

		ddtx_list_foreach_safe(&dom->eps, it, tmp) {
			struct ddtx_verbs_ep *ep = ddtx_container_of(it, struct ddtx_verbs_ep,
								     dom_entry);
			struct ddtx_vctrl *c;

			if (ep != r->ep)
				continue;
			c = calloc(1, sizeof(*c));
			if (!c)
				break;
			c->peer = r->peer;
			c->type = DDTX_VMSG_KEY_INVAL;
			c->len = DDTX_VKEY_REQ_LEN;
			ddtx_vkey_req_pack(&req, c->payload);
			ddtx_list_push_back(&ep->inval, &c->entry);
		}
	}
}

int ddtx_vmr_dereg(struct ddtx_verbs_domain *dom, struct ddtx_wire_mr *pub)
{
	struct ddtx_verbs_mr *m;

	if (!dom || !pub || !pub->wire_priv)
		return -FI_EINVAL;
	m = pub->wire_priv;
	if (&m->pub != pub || (pub->space != DDTX_KEY_APP && pub->space != DDTX_KEY_INTERNAL))
		return -FI_EINVAL;
	pthread_mutex_lock(&dom->lock);
	if (!m->in_table) {
		pthread_mutex_unlock(&dom->lock);
		return -FI_EINVAL;
	}
	table_remove(&dom->keys[pub->space], m);
	queue_invalidations(dom, m);
	if (m->mkey)
		ddtx_vumr_unmap(dom, m->mkey);
	drop_refs(dom, m);
	ddtx_vreg_put(dom, m->direct);
	pthread_mutex_unlock(&dom->lock);
	m->pub.wire_priv = NULL;
	free(m->refs);
	free(m->resolvers);
	free(m);
	return 0;
}

int ddtx_vkey_check(struct ddtx_verbs_domain *dom, uint8_t space, uint64_t key, uint64_t addr,
		    uint64_t len, uint32_t access)
{
	if (space != DDTX_KEY_APP && space != DDTX_KEY_INTERNAL)
		return -FI_EKEYREJECTED;
	pthread_mutex_lock(&dom->lock);
	const struct ddtx_verbs_mr *m = table_find(&dom->keys[space], key);
	int ret = 0;
	if (!m)
		ret = -FI_EKEYREJECTED;
	else if ((m->pub.access & access) != access || addr < m->pub.iova ||
		 addr - m->pub.iova > m->pub.len || len > m->pub.len - (addr - m->pub.iova))
		ret = -FI_EACCES;
	pthread_mutex_unlock(&dom->lock);
	return ret;
}

void ddtx_vkey_lookup(struct ddtx_verbs_domain *dom, struct ddtx_verbs_ep *ep, uint32_t peer,
		      uint8_t space, uint64_t key, struct ddtx_vkey_rep *rep)
{
	struct ddtx_verbs_mr *m;

	memset(rep, 0, sizeof(*rep));
	rep->space = space;
	rep->key = key;
	if (space != DDTX_KEY_APP && space != DDTX_KEY_INTERNAL) {
		rep->status = -FI_EKEYREJECTED;
		return;
	}
	pthread_mutex_lock(&dom->lock);
	m = table_find(&dom->keys[space], key);
	if (!m) {
		rep->status = -FI_EKEYREJECTED;
	} else {
		bool known = false;

		rep->rkey = m->rkey;
		rep->access = m->pub.access;
		rep->iova = m->pub.iova;
		rep->hca_base = m->hca_base;
		rep->len = m->pub.len;
		for (size_t i = 0; i < m->nresolvers; i++)
			known |= m->resolvers[i].ep == ep && m->resolvers[i].peer == peer;
		if (!known && m->nresolvers == m->resolvers_cap) {
			size_t ncap = m->resolvers_cap ? 2 * m->resolvers_cap : 4;
			struct ddtx_vresolver *v = realloc(m->resolvers, ncap * sizeof(*v));
			if (v) {
				m->resolvers = v;
				m->resolvers_cap = ncap;
			}
		}
		if (!known && m->nresolvers < m->resolvers_cap)
			m->resolvers[m->nresolvers++] = (struct ddtx_vresolver){ ep, peer };
	}
	pthread_mutex_unlock(&dom->lock);
}
