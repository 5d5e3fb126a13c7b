/* SPDX-License-Identifier: BSD-2-Clause */
/* Receiving: posting a receive, matching it against unexpected messages, and eager delivery. */
#include <stdlib.h>
#include <string.h>

#include "engine/dataloop.h"
#include "engine/layout.h"
#include "engine/pack.h"
#include "proto/proto_internal.h"

/*
 * Deliver an eager payload into a matched receive.  A plain rx stays owned by the caller; a
 * multi-receive buffer that this message used up is freed here: returns true in that case.
 */
static bool deliver_eager(struct ddtx_proto_ep *pep, struct ddtx_rx *rx, const void *payload,
			  size_t len, uint64_t tag, uint64_t data, uint16_t hflags, fi_addr_t from)
{
	if (rx->flags & FI_MULTI_RECV) {
		size_t avail = rx->capacity - rx->multi_used;
		size_t got = DDTX_MIN(len, avail);
		uint8_t *dst = (uint8_t *)rx->iov[0].iov_base + rx->multi_used;
		memcpy(dst, payload, got);
		ddtx_rx_multi_consume(pep, rx, got);
		ddtx_count_scheme(pep, FI_DDTX_SCHEME_EAGER, got);
		/* Report through a copy: the buffer may be released (freed) first. */
		struct ddtx_rx slice = *rx;
		slice.flags &= ~FI_MULTI_RECV;
		uint64_t mf = ddtx_rx_multi_flags(pep, rx);
		ddtx_rx_report(pep, &slice, len, got, tag, data, hflags, from, dst, mf);
		return mf != 0;
	}
	/* A sample of deliveries is timed: the copy out, half of the eager line of the cost
	 * model, which draws the eager/rendezvous boundary (choose.c). */
	bool timed = ddtx_choose_time_eager_out(pep, len);
	uint64_t t0 = timed ? ddtx_time_ns() : 0;
	size_t want = DDTX_MIN(len, rx->capacity);
	size_t got = rx->cached ? ddtx_pack_scatter(pep->pd->layouts, rx->cached, rx->iov, rx->count,
						    0, payload, want)
		     : rx->vec.n ? ddtx_vec_scatter(&rx->vec, 0, payload, want)
				 : ddtx_iov_scatter(rx->iov, rx->count, 0, payload, want);
	if (timed)
		ddtx_choose_observe_eager_out(pep, got, ddtx_time_ns() - t0);
	ddtx_count_scheme(pep, FI_DDTX_SCHEME_EAGER, got);
	ddtx_rx_report(pep, rx, len, got, tag, data, hflags, from, NULL, 0);
	return false;
}

void ddtx_recv_on_eager(struct ddtx_proto_ep *pep, ddtx_peer_t src, const void *buf, size_t len)
{
	const struct ddtx_hdr_eager *h = buf;
	if (h->len != len - sizeof(*h)) {
		DDTX_WARN(FI_LOG_EP_DATA, "dropping EAGER with inconsistent length from peer %u\n",
			  src);
		return;
	}
	bool tagged = h->base.flags & DDTX_HDR_TAGGED;
	fi_addr_t from = ddtx_addr_of(pep, src);
	struct ddtx_rx *rx = ddtx_posted_find(pep, tagged, h->tag, from);
	if (!rx) {
		struct ddtx_unexp *u = ddtx_unexp_new(pep, src, DDTX_MSG_EAGER, h->base.flags, h->tag,
						 h->data, h->len, h->len);
		if (u) {
			memcpy(u->payload, h + 1, h->len);
			u->ack_tx_id = h->tx_id;
			ddtx_credit_hold(pep, u, h->len);
		} else {
			ddtx_credit_release(pep, src, h->len);
		}
		return;
	}
	bool multi = rx->flags & FI_MULTI_RECV;
	if (!multi)
		ddtx_list_remove(&rx->entry);
	deliver_eager(pep, rx, h + 1, h->len, h->tag, h->data, h->base.flags, from);
	ddtx_credit_release(pep, src, h->len);
	if (!multi)
		ddtx_rx_free(pep, rx);
	if (h->base.flags & DDTX_HDR_ACK_REQ)
		ddtx_ack_owe(pep, src, h->tx_id, true);
}


/*
 * Take an unexpected message into rx (a plain rx is on no queue and is consumed; a multi-receive
 * buffer stays posted).  Returns true if rx no longer exists afterwards.
 */
bool ddtx_recv_take_unexp(struct ddtx_proto_ep *pep, struct ddtx_rx *rx, struct ddtx_unexp *u)
{
	bool multi = rx->flags & FI_MULTI_RECV;
	bool gone = !multi;
	ddtx_list_remove(&u->entry);
	if (u->type == DDTX_MSG_EAGER) {
		bool freed = deliver_eager(pep, rx, u->payload, u->len, u->tag, u->data,
					   u->hdr_flags, ddtx_addr_of(pep, u->peer));
		if (!multi)
			ddtx_rx_free(pep, rx);
		gone = gone || freed;
		if (u->hdr_flags & DDTX_HDR_ACK_REQ)
			ddtx_ack_owe(pep, u->peer, u->ack_tx_id, true);
	} else {
		ddtx_rndv_match_rts(pep, rx, u->peer, &u->rts, u->stream ? u->stream : u->payload,
				    u->inlined);
	}
	ddtx_credit_unhold(pep, u);
	ddtx_unexp_free(u);
	return gone;
}

ssize_t ddtx_proto_recv(struct ddtx_proto_ep *pep, const struct iovec *iov, void **desc,
			size_t count, fi_addr_t src, uint64_t tag, uint64_t ignore, void *context,
			uint64_t flags, bool tagged)
{
	struct ddtx_stage *stage = NULL;
	ddtx_proto_domain_progress(pep->pd); /* keys of unmapped MRs revoked before anything moves */
	if (count >= DDTX_POST_PROGRESS_ENTRIES)
		ddtx_proto_progress(pep); /* before reading a long list (proto_internal.h) */
	/* One pass checks the list, sums it and sees whether it is one vector (see send.c). */
	const struct iovec *checked = iov;
	size_t total = 0;
	struct ddtx_iov_vec vec;
	int ret = ddtx_iov_scan(iov, count, pep->attr.rx_iov_limit, &total, &vec);
	if (ret || ((flags & FI_MULTI_RECV) && (tagged || count != 1))) {
		DDTX_WARN(FI_LOG_EP_DATA, "recv: invalid iov list or flags (count %zu)\n", count);
		return -FI_EINVAL;
	}
	struct fi_ddtx_layout *handle = NULL;
	struct ddtx_layout *hl = NULL;
	if (!(flags & FI_MULTI_RECV) && (handle = ddtx_handle_of(desc, iov, count)) &&
	    (ret = ddtx_handle_use(handle, iov, &hl, &iov, &count)))
		goto out;
	/* Device memory: received into a host buffer, copied in at completion (hmem_stage.c). */
	ret = ddtx_stage_begin(pep, true, &iov, &count, iov == checked && vec.n ? &vec : NULL,
			       &context, &flags,
			       !pep->attr.rx_selective || (flags & FI_COMPLETION), &stage);
	if (ret)
		goto out;
	if (stage) {
		handle = NULL; /* the host copy is not the handle's layout */
		if (hl)
			ddtx_layout_put(pep->pd->layouts, hl);
		hl = NULL;
	}
	if (!pep->enabled) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	/* A layout lends its list: a handle's, or for a long vector one the cache holds already
	 * (a rendezvous into the buffer entered it), so that nothing is copied per receive. */
	bool as_checked = iov == checked && !stage && !hl;
	if (as_checked && !(flags & FI_MULTI_RECV) && vec.n == count &&
	    count >= DDTX_LEND_MIN_ENTRIES) {
		hl = ddtx_layout_find_vec(pep->pd->layouts, &vec);
		if (hl && hl->count != count) {
			ddtx_layout_put(pep->pd->layouts, hl);
			hl = NULL;
		}
	}
	struct ddtx_rx *rx = hl ? ddtx_rx_new_layout(pep, hl)
				: ddtx_rx_new(pep, iov, count, as_checked ? &total : NULL);
	if (!rx) {
		ret = -FI_ENOMEM;
		goto out;
	}
	if (as_checked && !(flags & FI_MULTI_RECV))
		rx->vec = vec;
	hl = NULL; /* the receive holds it now */
	rx->context = context;
	rx->flags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG) | (flags & FI_MULTI_RECV);
	rx->report = !pep->attr.rx_selective || (flags & FI_COMPLETION);
	rx->tag = tag;
	rx->ignore = ignore;
	rx->src = pep->attr.directed_recv ? src : FI_ADDR_UNSPEC;
	rx->state = DDTX_RX_POSTED;
	if (count > pep->pd->stats.iov_entries_max)
		pep->pd->stats.iov_entries_max = count;

	if (flags & FI_MULTI_RECV) {
		/* Posted first so that slices can leave it; unexpected messages fill it now. */
		ddtx_list_push_back(&pep->posted_msg, &rx->entry);
		struct ddtx_unexp *u;
		while (!rx->multi_released && (u = ddtx_unexp_find(pep, false, rx->src, 0, 0, NULL)))
			if (ddtx_recv_take_unexp(pep, rx, u))
				break;
		goto out;
	}
	struct ddtx_unexp *u = ddtx_unexp_find(pep, tagged, rx->src, tag, ignore, NULL);
	if (u)
		ddtx_recv_take_unexp(pep, rx, u);
	else
		ddtx_list_push_back(tagged ? &pep->posted_tag : &pep->posted_msg, &rx->entry);
out:
	if (hl)
		ddtx_layout_put(pep->pd->layouts, hl);
	if (ret)
		ddtx_stage_abort(pep, stage); /* not posted: nothing will complete it */
	return ret;
}
