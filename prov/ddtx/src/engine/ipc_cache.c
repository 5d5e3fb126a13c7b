/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The caches of ipc_cache.h: two short lists, most recently used first.  A transfer touches
 * one or a few allocations per side, so a linear walk of a short list costs less than the
 * hashing would; the bound keeps it short.
 */
#include "engine/ipc_cache.h"

#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include "common/list.h"
#include "common/log.h"

struct import {
	struct ddtx_list_entry entry;
	const void *owner;
	uint64_t peer;
	struct ddtx_hmem_ipc r;         /* as the peer described it */
	void *local;
};

struct export {
	struct ddtx_list_entry entry;
	struct ddtx_hmem_ipc h;
};

struct ddtx_ipc_cache {
	struct ddtx_ipc_ops ops;
	int device;
	size_t max;
	struct ddtx_list imports, exports;   /* most recent first */
	size_t nimports, nexports;
	struct ddtx_ipc_cache_stats st;
};

static int hmem_open(void *arg, int device, const uint8_t handle[DDTX_HMEM_IPC_HANDLE_BYTES],
		     void **base, size_t *size)
{
	(void)arg;
	return ddtx_hmem_ipc_open(device, handle, base, size);
}

static int hmem_close(void *arg, int device, void *base)
{
	(void)arg;
	return ddtx_hmem_ipc_close(device, base);
}

static int hmem_export(void *arg, const void *addr, struct ddtx_hmem_ipc *out)
{
	(void)arg;
	return ddtx_hmem_ipc_export(addr, out);
}

const struct ddtx_ipc_ops ddtx_ipc_hmem_ops = { hmem_open, hmem_close, hmem_export, NULL };

int ddtx_ipc_cache_open(const struct ddtx_ipc_ops *ops, int device, size_t max,
			struct ddtx_ipc_cache **out)
{
	struct ddtx_ipc_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return -FI_ENOMEM;
	c->ops = *ops;
	c->device = device;
	c->max = max ? max : 1;
	ddtx_list_init(&c->imports);
	ddtx_list_init(&c->exports);
	*out = c;
	return 0;
}

static void import_close(struct ddtx_ipc_cache *c, struct import *m)
{
	int ret = c->ops.close(c->ops.arg, c->device, m->local);

	if (ret)
		DDTX_WARN(FI_LOG_EP_DATA, "ipc: closing a peer's mapping at %p: %s\n", m->local,
			  fi_strerror(-ret));
	ddtx_list_remove(&m->entry);
	c->nimports--;
	free(m);
}

void ddtx_ipc_cache_close(struct ddtx_ipc_cache *c)
{
	struct ddtx_list_entry *it;

	if (!c)
		return;
	while (!ddtx_list_empty(&c->imports))
		import_close(c, ddtx_container_of(ddtx_list_first(&c->imports), struct import,
						  entry));
	while ((it = ddtx_list_pop_front(&c->exports)))
		free(ddtx_container_of(it, struct export, entry));
	free(c);
}

static bool overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

int ddtx_ipc_cache_map(struct ddtx_ipc_cache *c, const void *owner, uint64_t peer,
		       const struct ddtx_hmem_ipc *r, void **local)
{
	struct ddtx_list_entry *it, *tmp;

	if (!r->size || r->base + r->size < r->base)
		return -FI_EINVAL;
	ddtx_list_foreach_safe(&c->imports, it, tmp)
	{
		struct import *m = ddtx_container_of(it, struct import, entry);
		if (m->owner != owner || m->peer != peer ||
		    !overlaps(m->r.base, m->r.size, r->base, r->size))
			continue;
		if (m->r.buffer_id == r->buffer_id && m->r.base == r->base &&
		    m->r.size == r->size && !memcmp(m->r.handle, r->handle, sizeof(r->handle))) {
			ddtx_list_remove(&m->entry);
			ddtx_list_push_front(&c->imports, &m->entry);
			c->st.hits++;
			*local = m->local;
			return 0;
		}
		/* The peer's range now holds another allocation: the old mapping is stale. */
		c->st.stale++;
		import_close(c, m);
	}
	struct import *m = calloc(1, sizeof(*m));
	if (!m)
		return -FI_ENOMEM;
	size_t mapped = 0;
	int ret = c->ops.open(c->ops.arg, c->device, r->handle, &m->local, &mapped);
	if (!ret && r->size > mapped) {
		DDTX_WARN(FI_LOG_EP_DATA, "ipc: peer %llu claims %llu bytes of an allocation of %zu\n",
			  (unsigned long long)peer, (unsigned long long)r->size, mapped);
		(void)c->ops.close(c->ops.arg, c->device, m->local);
		ret = -FI_EINVAL;
	}
	if (ret) {
		c->st.open_failures++;
		free(m);
		return ret;
	}
	c->st.opens++;
	m->owner = owner;
	m->peer = peer;
	m->r = *r;
	if (c->nimports == c->max) {
		c->st.evictions++;
		import_close(c, ddtx_container_of(c->imports.head.prev, struct import, entry));
	}
	ddtx_list_push_front(&c->imports, &m->entry);
	c->nimports++;
	*local = m->local;
	return 0;
}

static void drop(struct ddtx_ipc_cache *c, const void *owner, bool any_peer, uint64_t peer)
{
	struct ddtx_list_entry *it, *tmp;

	ddtx_list_foreach_safe(&c->imports, it, tmp)
	{
		struct import *m = ddtx_container_of(it, struct import, entry);
		if (m->owner == owner && (any_peer || m->peer == peer))
			import_close(c, m);
	}
}

void ddtx_ipc_cache_drop_peer(struct ddtx_ipc_cache *c, const void *owner, uint64_t peer)
{
	drop(c, owner, false, peer);
}

void ddtx_ipc_cache_drop_owner(struct ddtx_ipc_cache *c, const void *owner)
{
	drop(c, owner, true, 0);
}

int ddtx_ipc_cache_export(struct ddtx_ipc_cache *c, const void *addr, uint64_t buffer_id,
			  struct ddtx_hmem_ipc *out)
{
	struct ddtx_list_entry *it, *tmp;
	uint64_t a = (uintptr_t)addr;

	ddtx_list_foreach_safe(&c->exports, it, tmp)
	{
		struct export *e = ddtx_container_of(it, struct export, entry);
		if (a < e->h.base || a - e->h.base >= e->h.size)
			continue;
		if (e->h.buffer_id == buffer_id) {
			ddtx_list_remove(&e->entry);
			ddtx_list_push_front(&c->exports, &e->entry);
			c->st.export_hits++;
			*out = e->h;
			return 0;
		}
		ddtx_list_remove(&e->entry); /* freed and allocated again since */
		c->nexports--;
		free(e);
	}
	struct export *e = calloc(1, sizeof(*e));
	if (!e)
		return -FI_ENOMEM;
	int ret = c->ops.export_handle(c->ops.arg, addr, &e->h);
	if (ret || e->h.buffer_id != buffer_id) {
		free(e);
		return ret ? ret : -FI_EAGAIN; /* the allocation changed under the caller */
	}
	c->st.exports++;
	if (c->nexports == c->max) {
		struct ddtx_list_entry *last = c->exports.head.prev;
		ddtx_list_remove(last);
		free(ddtx_container_of(last, struct export, entry));
		c->nexports--;
	}
	ddtx_list_push_front(&c->exports, &e->entry);
	c->nexports++;
	*out = e->h;
	return 0;
}

void ddtx_ipc_cache_stats(const struct ddtx_ipc_cache *c, struct ddtx_ipc_cache_stats *st)
{
	*st = c->st;
	st->mapped = c->nimports;
}
