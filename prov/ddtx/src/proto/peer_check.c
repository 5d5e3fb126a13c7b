/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a peer sends, checked against the state it names before anything acts on it: the
 * rendezvous messages whose fields steer memory writes, divisions and the cost model.  Each check
 * returns NULL for a consistent message, else the name of the first offending field (for the
 * warning that names the peer and the field).  The header checks (type, version, length) are in
 * proto_ep.c's dispatch, the id lookups in each handler, status codes in hdr.h.
 */
#include "engine/atomic_exec.h"
#include "proto/ipc_runs.h"
#include "proto/proto_internal.h"

/*
 * A pull of several blocks (WINDOWS): the sender's windows, in payload order, each non-empty,
 * together exactly total_len bytes, at most DDTX_PULL_WINDOWS_MAX; the keys themselves are
 * checked by the wire at each read (the sender's own key table: access and bounds).
 */
static const char *check_pull_windows(const struct ddtx_hdr_rts *rts, const void *list,
				      size_t len)
{
	if (!(rts->base.flags & DDTX_HDR_PULL) || (rts->base.flags & DDTX_HDR_IPC) ||
	    rts->pull_key || rts->pull_addr)
		return "windows";
	size_t n = len / sizeof(struct ddtx_desc);
	if (!n || n > DDTX_PULL_WINDOWS_MAX || len % sizeof(struct ddtx_desc))
		return "window count";
	const struct ddtx_desc *w = list;
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		if (!w[i].len || w[i].len > rts->total_len - sum)
			return "window length";
		sum += w[i].len;
	}
	return sum == rts->total_len ? NULL : "window length";
}

/*
 * The sender's layout summary feeds the scheme choice, the UMR window length and the cost model,
 * so it must describe a possible layout of total_len bytes: 1 <= nblocks, 1 <= min_block <=
 * avg_block, nblocks x min_block <= total_len.  The proposed scheme is one a sender proposes.
 */
const char *ddtx_check_rts(const struct ddtx_hdr_rts *rts, size_t len)
{
	/* Payload bytes may follow (the first PACK chunk): never more than offered, and only
	 * when packing is proposed, the one scheme that reads them.  Or a CUDA IPC offer. */
	size_t first = len - sizeof(*rts);
	if (rts->base.flags & DDTX_HDR_IPC) {
		const char *bad = ddtx_check_ipc_offer(rts, rts + 1, first);
		if (bad)
			return bad;
	} else if (rts->base.flags & DDTX_HDR_WINDOWS) {
		const char *bad = check_pull_windows(rts, rts + 1, first);
		if (bad)
			return bad;
	} else if (first && (first > rts->total_len || rts->scheme != FI_DDTX_SCHEME_PACK)) {
		return "first chunk length";
	}
	if (!rts->tx_id)
		return "tx_id";
	if (!rts->total_len)
		return "total_len";
	if (rts->scheme != FI_DDTX_SCHEME_PACK && rts->scheme != FI_DDTX_SCHEME_SGL &&
	    rts->scheme != FI_DDTX_SCHEME_UMR)
		return "scheme";
	if (!rts->nblocks || rts->nblocks > rts->total_len)
		return "nblocks";
	if (!rts->min_block || rts->min_block > rts->total_len / rts->nblocks)
		return "min_block";
	if (rts->avg_block < rts->min_block || rts->avg_block > rts->total_len)
		return "avg_block";
	/* A pull offers one block (proposing SGL), or several through windows (proposing SGL
	 * or UMR), read as SGL would have written them; the key itself is checked by the wire
	 * when read (the sender's own memory, within the key's bounds).  A sender never offers
	 * a pull and a CUDA IPC offer together. */
	bool windows = rts->base.flags & DDTX_HDR_WINDOWS;
	if ((rts->base.flags & DDTX_HDR_PULL) &&
	    ((rts->scheme != FI_DDTX_SCHEME_SGL &&
	      !(windows && rts->scheme == FI_DDTX_SCHEME_UMR)) ||
	     (rts->nblocks != 1 && !windows) ||
	     (rts->base.flags & DDTX_HDR_IPC) || rts->pull_addr + rts->total_len < rts->pull_addr))
		return "pull";
	/* Device memory the sender's NIC reads: offered zero copy, never by IPC as well. */
	if ((rts->base.flags & DDTX_HDR_DEVICE) &&
	    (rts->scheme == FI_DDTX_SCHEME_PACK || (rts->base.flags & DDTX_HDR_IPC)))
		return "device";
	return NULL;
}

/*
 * A CUDA IPC offer (hdr.h) steers where the receiver's copy engine reads: 1..DDTX_IPC_MAX_ALLOCS
 * allocations, each non-empty without wrapping, then runs taking exactly the rest of its length
 * (proto/ipc_runs.c: every segment non-empty and inside its allocation, at most
 * DDTX_IPC_MAX_SEGS), together total_len bytes.  (A handle the driver refuses is declined
 * later, not here: only the driver can tell.)
 */
const char *ddtx_check_ipc_offer(const struct ddtx_hdr_rts *rts, const void *offer, size_t len)
{
	const struct ddtx_ipc_offer *o = offer;
	if (len < sizeof(*o))
		return "ipc offer length";
	if (!o->nalloc || o->nalloc > DDTX_IPC_MAX_ALLOCS)
		return "ipc nalloc";
	size_t rest = len - sizeof(*o);
	if (rest < o->nalloc * sizeof(struct ddtx_ipc_alloc))
		return "ipc nalloc";
	rest -= o->nalloc * sizeof(struct ddtx_ipc_alloc);
	const struct ddtx_ipc_alloc *a = (const void *)(o + 1);
	for (uint32_t k = 0; k < o->nalloc; k++)
		if (!a[k].size || a[k].base + a[k].size < a[k].base)
			return "ipc allocation";
	size_t nseg;
	uint64_t bytes;
	const char *bad = ddtx_ipc_runs_walk(a + o->nalloc, rest, o->nrun, a, o->nalloc, NULL, NULL,
					     &nseg, &bytes);
	if (bad)
		return bad;
	if (bytes != rts->total_len)
		return "ipc segment lengths";
	return NULL;
}

/* Did the RTS offer a pull: the key of one block, or windows over several? */
static bool pull_offered(const struct ddtx_tx *tx)
{
	return tx->pull_reg || tx->pull_ws;
}

/*
 * Is this CTS consistent with the transfer it names?  Every field is checked against tx, on every
 * CTS: the first one fixes scheme, accepted length and (UMR) window length, later ones must
 * repeat them and describe the next bytes in order.  A NULL return is a valid CTS; otherwise the
 * name of the offending field.
 */
const char *ddtx_check_cts(const struct ddtx_tx *tx, const struct ddtx_hdr_cts *cts, size_t len)
{
	if (len < sizeof(*cts) || cts->ndesc > (len - sizeof(*cts)) / sizeof(struct ddtx_desc))
		return "ndesc";
	/* PULLED ends a pull this send offered, as its first and only CTS, or after the SPLIT
	 * CTS of a split one (once: split_pending), with the same accepted length. */
	bool split_read = tx->split_pending && tx->state == DDTX_TX_ZCOPY;
	if ((cts->base.flags & DDTX_HDR_PULLED) &&
	    ((tx->state != DDTX_TX_WAIT_CTS && !split_read) || !pull_offered(tx) ||
	     cts->scheme != FI_DDTX_SCHEME_SGL || cts->ndesc || !cts->accepted ||
	     cts->accepted > tx->total || (split_read && cts->accepted != tx->accepted)))
		return "pulled";
	/* SPLIT opens a split pull: the first CTS, to a pull offered, a batch from offset, the
	 * receiver reading what is before. */
	if ((cts->base.flags & DDTX_HDR_SPLIT) &&
	    (tx->state != DDTX_TX_WAIT_CTS || !pull_offered(tx) || cts->scheme != FI_DDTX_SCHEME_SGL ||
	     (cts->base.flags & DDTX_HDR_PULLED) || !cts->ndesc || !cts->offset ||
	     cts->offset >= cts->accepted))
		return "split";
	if (tx->state == DDTX_TX_WAIT_CTS) {
		if (cts->accepted > tx->total)
			return "accepted";
		if (cts->scheme <= FI_DDTX_SCHEME_EAGER || cts->scheme >= FI_DDTX_SCHEME_RMA)
			return "scheme";
		if (cts->scheme == FI_DDTX_SCHEME_UMR && cts->accepted && !cts->chunk)
			return "chunk";
		/* PACK: the stores asked for (enum ddtx_pack_stores). */
		if (cts->scheme == FI_DDTX_SCHEME_PACK && cts->chunk >= DDTX_STORES_COUNT)
			return "chunk (stores)";
		/* The CPU cannot pack device memory (hmem_direct.c): the RTS said so. */
		if (tx->device && cts->scheme == FI_DDTX_SCHEME_PACK && cts->accepted)
			return "scheme (device memory)";
		if (cts->scheme != FI_DDTX_SCHEME_PACK && cts->accepted && cts->offset &&
		    !(cts->base.flags & DDTX_HDR_SPLIT))
			return "offset";
		return NULL;
	}
	if (tx->state != DDTX_TX_ZCOPY)
		return "state";
	if (cts->scheme != (uint32_t)tx->scheme)
		return "scheme";
	if (cts->accepted != tx->accepted)
		return "accepted";
	/* Later CTS: a batch, the UMR list asked for, or the receiver giving up (empty, LAST). */
	if (!cts->ndesc && !cts->wset_id && !(cts->base.flags & DDTX_HDR_LAST))
		return "ndesc";
	if (tx->scheme == FI_DDTX_SCHEME_UMR && cts->wset_id && cts->chunk != tx->chunk)
		return "chunk";
	return NULL;
}

/* A batch's descriptors: each at least one byte, together the next bytes not yet described. */
const char *ddtx_check_cts_batch(const struct ddtx_tx *tx, const struct ddtx_hdr_cts *cts)
{
	const struct ddtx_desc *desc = (const void *)(cts + 1);
	if (cts->offset != tx->described)
		return "offset";
	uint64_t room = tx->accepted - tx->described;
	for (uint32_t i = 0; i < cts->ndesc; i++) {
		if (!desc[i].len || desc[i].len > room)
			return "desc.len";
		room -= desc[i].len;
	}
	return NULL;
}

/*
 * An atomic request must name an operation this side executes, and its length must be exactly
 * its segments and operands: the element counts sum to count, each segment holds at least one
 * element and no segment's byte range wraps.  Keys, bounds and access are the wire's key check,
 * done by the handler per segment.
 */
const char *ddtx_check_atomic(const struct ddtx_hdr_atomic *h, size_t len)
{
	if (!h->tx_id)
		return "tx_id";
	if (h->kind >= DDTX_ATOMIC_KIND_MAX ||
	    !ddtx_atomic_valid((enum ddtx_atomic_kind)h->kind, h->datatype, h->op))
		return "op";
	size_t size = ddtx_atomic_type_size(h->datatype);
	if (!h->count || h->count > DDTX_ATOMIC_MAX_BYTES / size)
		return "count";
	if (!h->nseg || h->nseg > h->count)
		return "nseg";
	size_t bytes = h->count * size;
	size_t want = sizeof(*h) + h->nseg * sizeof(struct ddtx_atomic_seg) +
		      (ddtx_atomic_has_operand(h->op) ? bytes : 0) +
		      (ddtx_atomic_has_compare(h->op) ? bytes : 0);
	if (len != want)
		return "length";
	const struct ddtx_atomic_seg *seg = (const void *)(h + 1);
	uint64_t sum = 0;
	for (uint32_t i = 0; i < h->nseg; i++) {
		if (!seg[i].count || seg[i].count > h->count - sum)
			return "seg.count";
		if (seg[i].addr + seg[i].count * size < seg[i].addr)
			return "seg.addr";
		sum += seg[i].count;
	}
	if (sum != h->count)
		return "seg.count";
	return NULL;
}

/*
 * RMA_DATA reports remote CQ data (first segment of a write), an RMA event (any segment of a
 * write or read), or both; a read carries no CQ data and a further segment (MORE) none either.
 */
const char *ddtx_check_rma_data(const struct ddtx_hdr_rma_data *h)
{
	uint16_t f = h->base.flags;
	if (!(f & (DDTX_HDR_CQ_DATA | DDTX_HDR_RMA_EVENT)))
		return "flags";
	if ((f & DDTX_HDR_READ) && (!(f & DDTX_HDR_RMA_EVENT) || (f & DDTX_HDR_CQ_DATA)))
		return "flags";
	if ((f & DDTX_HDR_MORE) && (f & DDTX_HDR_CQ_DATA))
		return "flags";
	if (h->seg_len > h->len)
		return "seg_len";
	return NULL;
}

/* An ACK: its list (what follows the header) whole ids, at most DDTX_ACK_LIST_MAX, none 0, and
 * only behind a plain ACK (an error status or an IPC answer names one send). */
const char *ddtx_check_ack(const struct ddtx_hdr_ack *h, size_t len)
{
	size_t extra = len - sizeof(*h);
	if (extra % sizeof(uint32_t) || extra / sizeof(uint32_t) > DDTX_ACK_LIST_MAX)
		return "list length";
	if (extra && (h->status || (h->base.flags & DDTX_HDR_IPC)))
		return "list behind a status or IPC";
	const uint32_t *more = (const uint32_t *)(h + 1);
	for (size_t i = 0; i < extra / sizeof(uint32_t); i++)
		if (!more[i])
			return "list id";
	return NULL;
}

/* Any message: ack_id set exactly when ACKED is. */
const char *ddtx_check_carried_ack(const struct ddtx_hdr_base *b)
{
	if (!(b->flags & DDTX_HDR_ACKED) != !b->ack_id)
		return "ack_id";
	return NULL;
}
