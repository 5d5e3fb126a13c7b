/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Window sets: a layout cut into windows of `chunk` bytes, each an mkey mapped over its pieces
 * (the local mkey cache of the UMR scheme).
 */
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include "common/log.h"
#include "common/clock.h"
#include "common/minmax.h"
#include "engine/mkey_pool.h"
#include "engine/regcache.h"
#include "engine/layout_cache.h"

size_t ddtx_window_pieces(const struct iovec *iov, size_t count, size_t chunk, size_t w,
			  struct iovec *out, size_t max_out)
{
	struct ddtx_iov_cursor c;
	ddtx_iov_cursor_init(&c, iov, count);
	ddtx_iov_cursor_seek(&c, w * chunk);
	if (ddtx_iov_cursor_done(&c))
		return 0;
	size_t n;
	ddtx_iov_cursor_take(&c, chunk, max_out, out, &n);
	/* Still inside this window after max_out pieces: it needs more entries than allowed. */
	if (!ddtx_iov_cursor_done(&c) && c.pos % chunk != 0)
		return max_out + 1;
	return n;
}

static const struct ddtx_wire_mr *reg_covering(const struct ddtx_layout *l, const struct iovec *p)
{
	uintptr_t a = (uintptr_t)p->iov_base;
	for (size_t i = 0; i < l->nregs; i++) {
		const struct ddtx_reg *r = l->regs[i];
		if (a >= r->addr && a + p->iov_len <= r->addr + r->len)
			return r->mr;
	}
	return NULL;
}

void ddtx_wset_free(struct ddtx_layout_cache *lc, struct ddtx_window_set *ws)
{
	for (size_t i = 0; i < ws->n; i++)
		if (ws->mkeys[i])
			ddtx_mkey_pool_put(lc->pool, ws->mkeys[i]);
	free(ws->mkeys);
	free(ws->sent_to);
	free(ws);
}

/* Unlink and return the least recently used idle window set of any layout (lock held). */
static struct ddtx_window_set *wset_victim(struct ddtx_layout_cache *lc)
{
	struct ddtx_list_entry *it;
	for (it = lc->lru.head.prev; it != &lc->lru.head; it = it->prev) {
		struct ddtx_layout *l = ddtx_container_of(it, struct ddtx_layout, lru);
		struct ddtx_list_entry *w;
		for (w = l->wsets.head.prev; w != &l->wsets.head; w = w->prev) {
			struct ddtx_window_set *ws = ddtx_container_of(w, struct ddtx_window_set, entry);
			if (!ws->refs) {
				ddtx_list_remove(&ws->entry);
				lc->wset_count--;
				lc->wset_keys -= ws->n;
				lc->st.wset_evictions++;
				return ws;
			}
		}
	}
	return NULL;
}

/* Map a new window set outside the lock; NULL if keys run short or a map fails. */
static struct ddtx_window_set *wset_map(struct ddtx_layout_cache *lc, struct ddtx_layout *l,
					size_t chunk)
{
	size_t m = lc->caps->max_mkey_entries;
	size_t n = (l->st.total + chunk - 1) / chunk;
	if (!m || !n)
		return NULL;
	struct ddtx_window_set *ws = calloc(1, sizeof(*ws));
	if (!ws)
		return NULL;
	ws->layout = l;
	ws->chunk = chunk;
	ws->n = n;
	ws->mkeys = calloc(n, sizeof(*ws->mkeys));
	struct iovec pieces[m + 1];
	struct ddtx_wire_mkey_entry entries[m];
	if (!ws->mkeys)
		goto fail;
	for (size_t w = 0; w < n; w++) {
		size_t np = ddtx_window_pieces(l->iov, l->count, chunk, w, pieces, m);
		if (!np || np > m)
			goto fail;
		for (size_t i = 0; i < np; i++) {
			entries[i].mr = reg_covering(l, &pieces[i]);
			entries[i].addr = (uintptr_t)pieces[i].iov_base;
			entries[i].len = pieces[i].iov_len;
		}
		ws->mkeys[w] = ddtx_mkey_pool_get(lc->pool);
		if (!ws->mkeys[w])
			goto fail;
		if (ddtx_wire_mkey_map(lc->wire, ws->mkeys[w], entries, np,
				       DDTX_ACC_LOCAL_READ | DDTX_ACC_LOCAL_WRITE |
					       DDTX_ACC_REMOTE_READ | DDTX_ACC_REMOTE_WRITE))
			goto fail;
	}
	return ws;
fail:
	ddtx_wset_free(lc, ws);
	return NULL;
}

struct ddtx_window_set *ddtx_layout_windows(struct ddtx_layout_cache *lc, struct ddtx_layout *l,
					    size_t chunk)
{
	if (!ddtx_layout_ready(l) || !chunk)
		return NULL;
	ddtx_rlock_lock(&lc->lock);
	struct ddtx_list_entry *it, *tmp;
	ddtx_list_foreach_safe(&l->wsets, it, tmp)
	{
		struct ddtx_window_set *ws = ddtx_container_of(it, struct ddtx_window_set, entry);
		if (ws->chunk == chunk) {
			ws->refs++;
			ddtx_list_remove(&ws->entry);
			ddtx_list_push_front(&l->wsets, &ws->entry);
			lc->st.wset_hits++;
			ddtx_rlock_unlock(&lc->lock);
			return ws;
		}
	}
	lc->st.wset_misses++;
	/*
	 * Make room: idle window sets give their keys back before a new set takes some.  The
	 * pool refills itself, so its level alone never bounded the mapped keys: with 3-entry
	 * keys, sets of thousands of windows filled the shm wire's key table (16384) and a
	 * layout's registration then failed (prop_tiny_sge, seed 0xa4f007730cbaee33).
	 */
	size_t need = (l->st.total + chunk - 1) / chunk;
	struct ddtx_list freed;
	ddtx_list_init(&freed);
	while (lc->wset_count && (lc->wset_count >= lc->params.max_wsets ||
				  lc->wset_keys + need > lc->params.max_wset_keys ||
				  ddtx_mkey_pool_level(lc->pool) < need)) {
		struct ddtx_window_set *v = wset_victim(lc);
		if (!v)
			break;
		ddtx_list_push_back(&freed, &v->entry);
	}
	l->refs++; /* keep l while unlocked */
	ddtx_rlock_unlock(&lc->lock);
	while ((it = ddtx_list_pop_front(&freed)))
		ddtx_wset_free(lc, ddtx_container_of(it, struct ddtx_window_set, entry));

	struct ddtx_window_set *ws = wset_map(lc, l, chunk);

	ddtx_rlock_lock(&lc->lock);
	if (ws) {
		ws->id = ++lc->next_wset_id;
		ws->refs = 1;
		ddtx_list_push_front(&l->wsets, &ws->entry);
		lc->wset_count++;
		lc->wset_keys += ws->n;
	}
	ddtx_rlock_unlock(&lc->lock);
	ddtx_layout_put(lc, l);
	return ws;
}

void ddtx_window_set_put(struct ddtx_layout_cache *lc, struct ddtx_window_set *ws)
{
	ddtx_rlock_lock(&lc->lock);
	ws->refs--;
	ddtx_rlock_unlock(&lc->lock);
}

bool ddtx_window_set_sent(const struct ddtx_window_set *ws, ddtx_peer_t peer)
{
	size_t w = peer / 64;
	return w < ws->sent_words && (ws->sent_to[w] >> (peer % 64)) & 1;
}

void ddtx_window_set_mark_sent(struct ddtx_window_set *ws, ddtx_peer_t peer)
{
	size_t w = peer / 64;
	if (w >= ws->sent_words) {
		size_t nw = DDTX_MAX(w + 1, ws->sent_words * 2);
		uint64_t *v = realloc(ws->sent_to, nw * sizeof(*v));
		if (!v)
			return; /* only costs a resend of the list */
		memset(v + ws->sent_words, 0, (nw - ws->sent_words) * sizeof(*v));
		ws->sent_to = v;
		ws->sent_words = nw;
	}
	ws->sent_to[w] |= 1ull << (peer % 64);
}
