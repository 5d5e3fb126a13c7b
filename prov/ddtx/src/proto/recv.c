/* SPDX-License-Identifier: BSD-2-Clause */
/* Receiving: posting a receive, matching it against unexpected messages, and eager delivery. */
#include <stdlib.h>
#include <string.h>

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
	size_t got = ddtx_iov_scatter(rx->iov, rx->count, 0, payload, DDTX_MIN(len, rx->capacity));
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
		}
		return;
	}
	bool multi = rx->flags & FI_MULTI_RECV;
	if (!multi)
		ddtx_list_remove(&rx->entry);
	deliver_eager(pep, rx, h + 1, h->len, h->tag, h->data, h->base.flags, from);
	if (!multi)
		ddtx_rx_free(pep, rx);
	if (h->base.flags & DDTX_HDR_ACK_REQ)
		ddtx_ctrl_ack(pep, src, h->tx_id, 0);
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
			ddtx_ctrl_ack(pep, u->peer, u->ack_tx_id, 0);
	} else {
		ddtx_rndv_match_rts(pep, rx, u->peer, &u->rts);
	}
	free(u);
	return gone;
}

ssize_t ddtx_proto_recv(struct ddtx_proto_ep *pep, const struct iovec *iov, void **desc,
			size_t count, fi_addr_t src, uint64_t tag, uint64_t ignore, void *context,
			uint64_t flags, bool tagged)
{
	struct ddtx_stage *stage = NULL;
	ddtx_proto_domain_progress(pep->pd); /* keys of unmapped MRs revoked before anything moves */
	int ret = ddtx_iov_check(iov, count, pep->attr.rx_iov_limit, NULL);
	if (ret || ((flags & FI_MULTI_RECV) && (tagged || count != 1))) {
		DDTX_WARN(FI_LOG_EP_DATA, "recv: invalid iov list or flags (count %zu)\n", count);
		return -FI_EINVAL;
	}
	struct fi_ddtx_layout *handle = NULL;
	if (!(flags & FI_MULTI_RECV) && (handle = ddtx_handle_of(desc, iov, count)) &&
	    (ret = ddtx_handle_expand(handle, iov, &iov, &count)))
		goto out;
	/* Device memory: received into a host buffer, copied in at completion (hmem_stage.c). */
	ret = ddtx_stage_begin(pep, true, &iov, &count, &context, &flags,
			       !pep->attr.rx_selective || (flags & FI_COMPLETION), &stage);
	if (ret)
		goto out;
	if (stage)
		handle = NULL;
	if (!pep->enabled) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	struct ddtx_rx *rx = ddtx_rx_new(pep, iov, count);
	if (!rx) {
		ret = -FI_ENOMEM;
		goto out;
	}
	if (handle)
		rx->cached = ddtx_handle_layout(handle);
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
	if (ret)
		ddtx_stage_abort(pep, stage); /* not posted: nothing will complete it */
	return ret;
}
