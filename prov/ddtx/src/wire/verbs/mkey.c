/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The wire interface's multi-entry keys (wire.h: ddtx_wire_mkey_*) on mlx5 UMR.
 *
 * The engine keeps its own pool of these and maps each onto a window of registered pieces.
 * An entry names the registration holding it (its lkey; addresses in the registration's iova
 * space), or no registration, in which case the piece must lie in a region the wire knows
 * (the region index).  Mapping invalidates a mapped mkey first (LOCAL_INV) and rotates its
 * tag, so the key a peer cached from an earlier mapping is refused.  The key is the rkey
 * itself, zero-based: peers write at offsets 0..len (no resolution, like internal keys).
 */
#include <stdlib.h>
#include <string.h>

#include "wire/verbs/verbs.h"

struct ddtx_verbs_wmkey {
	struct ddtx_wire_mkey pub;
	struct ddtx_vmkey *mk;
};

int ddtx_vmkey_create(struct ddtx_wire_domain *wdom, struct ddtx_wire_mkey **out)
{
	struct ddtx_verbs_domain *dom = ddtx_vdom_of(wdom);
	struct ddtx_verbs_wmkey *w;

	if (!dom->caps.max_mkey_entries)
		return -FI_ENOSYS;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -FI_ENOMEM;
	pthread_mutex_lock(&dom->lock);
	w->mk = ddtx_vumr_mkey_new(dom);
	pthread_mutex_unlock(&dom->lock);
	if (!w->mk) {
		free(w);
		return -FI_ENOMEM;
	}
	w->pub.max_entries = dom->caps.max_mkey_entries;
	w->pub.wire_priv = w;
	*out = &w->pub;
	return 0;
}

void ddtx_vmkey_invalidate(struct ddtx_wire_domain *wdom, struct ddtx_wire_mkey *mkey)
{
	struct ddtx_verbs_domain *dom = ddtx_vdom_of(wdom);
	struct ddtx_verbs_wmkey *w = mkey->wire_priv;

	pthread_mutex_lock(&dom->lock);
	if (ddtx_vumr_inv(dom, w->mk)) {
		/* Not invalidated: retire this mkey (destroying it revokes it) for a fresh one. */
		ddtx_vumr_unmap(dom, w->mk);
		w->mk = ddtx_vumr_mkey_new(dom);
	}
	pthread_mutex_unlock(&dom->lock);
	mkey->key = 0;
	mkey->nentries = 0;
	mkey->len = 0;
}

void ddtx_vmkey_destroy(struct ddtx_wire_domain *wdom, struct ddtx_wire_mkey *mkey)
{
	struct ddtx_verbs_domain *dom = ddtx_vdom_of(wdom);
	struct ddtx_verbs_wmkey *w = mkey->wire_priv;

	pthread_mutex_lock(&dom->lock);
	if (w->mk)
		ddtx_vumr_unmap(dom, w->mk);      /* invalidates, then back to the pool */
	pthread_mutex_unlock(&dom->lock);
	free(w);
}

/* The (lkey, address) of an entry, checked against its registration as the HCA would. */
static int entry_sge(struct ddtx_verbs_domain *dom, const struct ddtx_wire_mkey_entry *e,
		     uint32_t need, struct ddtx_vsge *out)
{
	const struct ddtx_verbs_mr *m;

	if (!e->len || e->len > DDTX_VSGE_MAX_LEN)
		return -FI_EINVAL;
	if (!e->mr) {
		const struct ddtx_vregion *r = ddtx_vregion_index_find(&dom->regions, e->addr,
								       need);
		if (!r || e->len > r->addr + r->len - e->addr)
			return -FI_EINVAL;
		*out = (struct ddtx_vsge){ e->addr, (uint32_t)e->len, r->lkey };
		return 0;
	}
	m = e->mr->wire_priv;
	if (!m || !m->direct || e->addr < e->mr->iova || e->addr - e->mr->iova > e->mr->len ||
	    e->len > e->mr->len - (e->addr - e->mr->iova))
		return -FI_EINVAL;               /* outside it, or itself an indirect key */
	*out = (struct ddtx_vsge){ e->addr, (uint32_t)e->len, m->direct->mr->lkey };
	return 0;
}

int ddtx_vmkey_map(struct ddtx_wire_domain *wdom, struct ddtx_wire_mkey *mkey,
		   const struct ddtx_wire_mkey_entry *entries, size_t n, uint32_t access)
{
	struct ddtx_verbs_domain *dom = ddtx_vdom_of(wdom);
	struct ddtx_verbs_wmkey *w = mkey->wire_priv;
	int ibv_access = ddtx_vaccess_to_ibv(access);
	uint32_t need = ddtx_vregion_flags(ibv_access);
	struct ddtx_vsge *e;
	uint64_t len = 0;
	int ret = 0;

	if (!n || n > mkey->max_entries)
		return -FI_EINVAL;
	e = calloc(n, sizeof(*e));
	if (!e)
		return -FI_ENOMEM;
	pthread_mutex_lock(&dom->lock);
	for (size_t i = 0; i < n && !ret; i++) {
		ret = entry_sge(dom, &entries[i], need, &e[i]);
		len += entries[i].len;
		if (ret)
			DDTX_WARN(FI_LOG_MR, "verbs: mkey entry %zu lies outside its "
				  "registration\n", i);
	}
	if (!ret && len >= ((uint64_t)1 << 31))
		ret = -FI_EINVAL;
	if (!ret && !w->mk)
		ret = -FI_ENOMEM;
	if (!ret)
		ret = ddtx_vumr_post(dom, w->mk, e, n, ibv_access);
	if (!ret) {
		mkey->key = ddtx_vumr_rkey(w->mk);
		mkey->nentries = n;
		mkey->len = (size_t)len;
	} else {
		mkey->key = 0;
		mkey->nentries = 0;
		mkey->len = 0;
	}
	pthread_mutex_unlock(&dom->lock);
	free(e);
	return ret;
}

/* The local lkey of a mapped mkey (write_mkey's gather side). */
uint32_t ddtx_vmkey_lkey(const struct ddtx_wire_mkey *mkey)
{
	const struct ddtx_verbs_wmkey *w = mkey->wire_priv;
	return w && w->mk ? ddtx_vumr_lkey(w->mk) : 0;
}
