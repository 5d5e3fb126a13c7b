/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The ofi wire's key table: every key is one registration in the core's domain.
 *
 * Internal keys (the engine's receive windows) describe themselves (ofi_pure.h,
 * ddtx_ofi_ikey): the initiator computes the core key and address from the key alone, so a
 * rendezvous costs no extra round trip.  Application keys are the caller's numbers (or ours,
 * FI_MR_PROV_KEY at the ddtx level), so their core key and address are learnt by a peer once
 * with KEY_REQ (rma.c) and cached; each registration gets a fresh core key, so a cached
 * translation of a closed key reaches no memory (the core refuses its key).
 */
#include <stdlib.h>
#include <string.h>

#include "wire/ofi/ofi.h"

static size_t bucket_of(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return (size_t)(key & (DDTX_OFI_KEY_BUCKETS - 1));
}

static struct ddtx_ofi_mr *find(struct ddtx_ofi_domain *dom, int space, uint64_t key)
{
	for (struct ddtx_ofi_mr *m = dom->keys[space][bucket_of(key)]; m; m = m->next)
		if (m->pub.key == key)
			return m;
	return NULL;
}

static uint64_t core_access(uint32_t access)
{
	uint64_t a = FI_SEND | FI_RECV | FI_READ | FI_WRITE;

	if (access & DDTX_ACC_REMOTE_READ)
		a |= FI_REMOTE_READ;
	if (access & DDTX_ACC_REMOTE_WRITE)
		a |= FI_REMOTE_WRITE;
	return a;
}

static int core_reg(struct ddtx_ofi_domain *dom, const struct iovec *iov, uint64_t access,
		    uint64_t key, struct fid_mr **out)
{
	struct fi_mr_attr attr = {
		.mr_iov = iov,
		.iov_count = 1,
		.access = access,
		.requested_key = key,
		.iface = FI_HMEM_SYSTEM,
	};

	return fi_mr_regattr(dom->domain, &attr, 0, out);
}

int ddtx_ofi_local_reg_access(struct ddtx_ofi_domain *dom, void *addr, size_t len,
			      uint64_t access, struct fid_mr **out)
{
	struct iovec iov = { addr, len };
	int ret;

	/* A key the core never sees remotely: bit 62 and 63 clear, from the app counter. */
	for (int tries = 0; tries < 8; tries++) {
		pthread_mutex_lock(&dom->lock);
		uint64_t key = dom->next_core_key++ & ((1ull << 62) - 1);
		pthread_mutex_unlock(&dom->lock);
		ret = core_reg(dom, &iov, access, key, out);
		if (ret != -FI_ENOKEY)
			break;
	}
	return ret;
}

int ddtx_ofi_local_reg(struct ddtx_ofi_domain *dom, void *addr, size_t len, bool write,
		       struct fid_mr **out)
{
	return ddtx_ofi_local_reg_access(dom, addr, len, write ? FI_RECV | FI_READ :
							   FI_SEND | FI_WRITE, out);
}

int ddtx_ofi_mr_reg(struct ddtx_wire_domain *wdom, const struct iovec *iov, size_t count,
		    enum ddtx_key_space space, const uint64_t *requested_key, uint64_t iova,
		    uint32_t access, struct ddtx_wire_mr **out)
{
	struct ddtx_ofi_domain *dom = ddtx_odom_of(wdom);
	struct ddtx_ofi_mr *m;
	uint64_t va = 0;
	size_t len = 0;
	int ret = 0;

	if (!dom || !out || (space != DDTX_KEY_APP && space != DDTX_KEY_INTERNAL) ||
	    (count && !iov))
		return -FI_EINVAL;
	if (count > 1) {
		DDTX_INFO(FI_LOG_MR, "ofi: a key of %zu segments needs multi-entry keys, which a "
			  "core provider does not have\n", count);
		return -FI_EOPNOTSUPP;
	}
	if (count == 1) {
		va = (uint64_t)(uintptr_t)iov[0].iov_base;
		len = iov[0].iov_len;
		if (!len || !iov[0].iov_base)
			return -FI_EINVAL;
	} else if (space == DDTX_KEY_INTERNAL) {
		return -FI_EINVAL;
	}
	if (space == DDTX_KEY_INTERNAL && (requested_key || (iova && iova != va) ||
					   (va & ~DDTX_OFI_IKEY_ADDR_MASK)))
		return -FI_EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -FI_ENOMEM;
	m->pub.space = space;
	m->pub.iova = iova;
	m->pub.len = len;
	m->pub.access = access;
	m->pub.wire_priv = m;
	m->core_base = dom->mr_virt ? va : 0;
	for (int tries = 0; tries < 64; tries++) {
		pthread_mutex_lock(&dom->lock);
		if (space == DDTX_KEY_INTERNAL) {
			m->pub.key = m->core_key = ddtx_ofi_ikey(va, iova == va && va, dom->next_tag++);
		} else {
			if (requested_key) {
				m->pub.key = *requested_key;
				if (find(dom, space, m->pub.key))
					ret = -FI_ENOKEY;
			} else {
				while (find(dom, space, dom->next_app_key))
					dom->next_app_key++;
				m->pub.key = dom->next_app_key++;
			}
			m->core_key = dom->next_core_key++ & ((1ull << 62) - 1);
		}
		pthread_mutex_unlock(&dom->lock);
		if (ret)
			break;
		if (count)
			ret = core_reg(dom, iov, core_access(access), m->core_key, &m->mr);
		if (ret != -FI_ENOKEY || requested_key)
			break;
	}
	if (ret) {
		DDTX_INFO(FI_LOG_MR, "ofi: registration of %zu bytes failed: %s\n", len,
			  fi_strerror(-ret));
		free(m);
		return ret == -FI_ENOKEY && !requested_key ? -FI_EAGAIN : ret;
	}
	pthread_mutex_lock(&dom->lock);
	if (space == DDTX_KEY_APP && find(dom, space, m->pub.key)) {
		/* another thread took the caller's key meanwhile */
		pthread_mutex_unlock(&dom->lock);
		if (m->mr)
			fi_close(&m->mr->fid);
		free(m);
		return -FI_ENOKEY;
	}
	m->next = dom->keys[space][bucket_of(m->pub.key)];
	dom->keys[space][bucket_of(m->pub.key)] = m;
	dom->live++;
	pthread_mutex_unlock(&dom->lock);
	*out = &m->pub;
	return 0;
}

int ddtx_ofi_mr_dereg(struct ddtx_wire_domain *wdom, struct ddtx_wire_mr *pub)
{
	struct ddtx_ofi_domain *dom = ddtx_odom_of(wdom);
	struct ddtx_ofi_mr *m = pub ? pub->wire_priv : NULL;
	int ret = 0;

	if (!dom || !m)
		return -FI_EINVAL;
	if (m->mr) {
		ret = fi_close(&m->mr->fid);
		if (ret)
			return ret;
	}
	pthread_mutex_lock(&dom->lock);
	for (struct ddtx_ofi_mr **pp = &dom->keys[pub->space][bucket_of(pub->key)]; *pp;
	     pp = &(*pp)->next) {
		if (*pp == m) {
			*pp = m->next;
			dom->live--;
			break;
		}
	}
	pthread_mutex_unlock(&dom->lock);
	free(m);
	return 0;
}

static int check(const struct ddtx_ofi_mr *m, uint64_t addr, uint64_t len, uint32_t access)
{
	if (!m)
		return -FI_EKEYREJECTED;
	if ((m->pub.access & access) != access || addr < m->pub.iova || addr + len < addr ||
	    addr + len > m->pub.iova + m->pub.len)
		return -FI_EACCES;
	return 0;
}

int ddtx_ofi_key_check(struct ddtx_wire_domain *wdom, enum ddtx_key_space space, uint64_t key,
		       uint64_t addr, uint64_t len, uint32_t access)
{
	struct ddtx_ofi_domain *dom = ddtx_odom_of(wdom);
	int ret;

	if (!dom || (space != DDTX_KEY_APP && space != DDTX_KEY_INTERNAL))
		return -FI_EINVAL;
	pthread_mutex_lock(&dom->lock);
	ret = check(find(dom, space, key), addr, len, access);
	pthread_mutex_unlock(&dom->lock);
	return ret;
}

void ddtx_ofi_key_lookup(struct ddtx_ofi_domain *dom, uint64_t key, struct ddtx_ofi_key_rep *rep)
{
	struct ddtx_ofi_mr *m;

	memset(rep, 0, sizeof(*rep));
	rep->key = key;
	pthread_mutex_lock(&dom->lock);
	m = find(dom, DDTX_KEY_APP, key);
	if (!m) {
		rep->status = -FI_EKEYREJECTED;
	} else {
		rep->access = m->pub.access & (DDTX_ACC_REMOTE_READ | DDTX_ACC_REMOTE_WRITE);
		rep->core_key = m->core_key;
		rep->iova = m->pub.iova;
		rep->len = m->mr ? m->pub.len : 0;
		rep->core_base = m->core_base;
	}
	pthread_mutex_unlock(&dom->lock);
}
