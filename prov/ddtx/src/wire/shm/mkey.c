/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Multi-entry keys of the software HCA.  A mapped mkey is a key-table entry in the internal key
 * space whose segments are the mapped pieces, exactly what a peer's writer resolves; mapping
 * again replaces the entry, and since the key table never hands out the same key twice the
 * new mapping has a new key (the tag rotation of mlx5 UMR).  An entry that names a
 * registration must lie inside it, as an HCA would check its lkey.
 */
#include <stdlib.h>
#include <string.h>

#include "shm.h"

int ddtx_shm_mkey_create(struct ddtx_wire_domain *wdom, struct ddtx_wire_mkey **out)
{
	struct ddtx_shm_domain *dom = ddtx_shm_domain_of(wdom);
	size_t m = dom->caps.max_mkey_entries;
	if (!m)
		return -FI_ENOSYS;
	struct ddtx_shm_mkey *mk = calloc(1, sizeof(*mk));
	if (!mk || !(mk->entries = calloc(m, sizeof(*mk->entries)))) {
		free(mk);
		return -FI_ENOMEM;
	}
	mk->pub.max_entries = m;
	mk->pub.wire_priv = mk;
	*out = &mk->pub;
	return 0;
}

void ddtx_shm_mkey_invalidate(struct ddtx_wire_domain *wdom, struct ddtx_wire_mkey *mkey)
{
	struct ddtx_shm_mkey *mk = mkey->wire_priv;
	if (mk->mr)
		ddtx_shm_mr_dereg(wdom, mk->mr);
	mk->mr = NULL;
	mkey->key = 0;
	mkey->nentries = 0;
	mkey->len = 0;
}

void ddtx_shm_mkey_destroy(struct ddtx_wire_domain *wdom, struct ddtx_wire_mkey *mkey)
{
	struct ddtx_shm_mkey *mk = mkey->wire_priv;
	ddtx_shm_mkey_invalidate(wdom, mkey);
	free(mk->entries);
	free(mk);
}

static bool inside(const struct ddtx_wire_mkey_entry *e)
{
	if (!e->mr)
		return true;
	uint64_t start = e->mr->iova, end = e->mr->iova + e->mr->len;
	return e->addr >= start && e->len <= end - e->addr && e->addr <= end;
}

int ddtx_shm_mkey_map(struct ddtx_wire_domain *wdom, struct ddtx_wire_mkey *mkey,
		      const struct ddtx_wire_mkey_entry *entries, size_t n, uint32_t access)
{
	struct ddtx_shm_mkey *mk = mkey->wire_priv;
	struct iovec iov[mkey->max_entries];
	size_t len = 0;
	for (size_t i = 0; i < n; i++) {
		if (!inside(&entries[i])) {
			DDTX_WARN(FI_LOG_CORE, "shm: mkey entry %zu lies outside its registration\n",
				  i);
			return -FI_EINVAL;
		}
		iov[i].iov_base = (void *)(uintptr_t)entries[i].addr;
		iov[i].iov_len = entries[i].len;
		len += entries[i].len;
	}
	ddtx_shm_mkey_invalidate(wdom, mkey); /* LOCAL_INV before reuse */
	int ret = ddtx_shm_mr_reg(wdom, iov, n, DDTX_KEY_INTERNAL, NULL, 0, access, &mk->mr);
	if (ret)
		return ret;
	memcpy(mk->entries, entries, n * sizeof(*entries));
	mkey->key = mk->mr->key;
	mkey->nentries = n;
	mkey->len = len;
	return 0;
}
