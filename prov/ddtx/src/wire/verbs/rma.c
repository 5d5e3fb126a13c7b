/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Writes and reads: the caller's gather list is posted directly when its memory is registered
 * (the region index), through a send buffer for small unregistered transfers, or with a
 * registration held for the operation; and the UMR scheme's write through a mapped mkey.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/iov_check.h"
#include "wire/verbs/verbs.h"

int ddtx_verbs_rma_check(struct ddtx_wire_ep *wep, ddtx_peer_t peer, enum ddtx_key_space space,
			   uint64_t rkey, uint64_t raddr, size_t len, bool write)
{
	struct ddtx_verbs_ep *ep = ddtx_vep_of(wep);
	struct ddtx_vrkey *r;
	uint64_t hca;

	if (!ep || !ddtx_vpeer_get(ep, peer))
		return -FI_EINVAL;
	if (!ddtx_verbs_peer_alive(wep, peer))
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

int ddtx_verbs_write(struct ddtx_wire_ep *wep, ddtx_peer_t peer, const struct iovec *local,
		       size_t lcount, enum ddtx_key_space space, uint64_t rkey, uint64_t raddr,
		       size_t len, void *wr_context)
{
	return rma(ddtx_vep_of(wep), peer, local, lcount, space, rkey, raddr, len, wr_context,
		   true);
}

int ddtx_verbs_read(struct ddtx_wire_ep *wep, ddtx_peer_t peer, const struct iovec *local,
		      size_t lcount, enum ddtx_key_space space, uint64_t rkey, uint64_t raddr,
		      size_t len, void *wr_context)
{
	return rma(ddtx_vep_of(wep), peer, local, lcount, space, rkey, raddr, len, wr_context,
		   false);
}

/* The UMR scheme's write of one window: the local side is a mapped mkey (zero-based). */
int ddtx_verbs_write_mkey(struct ddtx_wire_ep *wep, ddtx_peer_t peer,
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
