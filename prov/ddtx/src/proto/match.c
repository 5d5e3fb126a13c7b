/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Software tag matching: the posted and unexpected queues, arrivals against posted receives,
 * receives against unexpected messages, FI_PEEK / FI_CLAIM / FI_DISCARD, and cancel.
 */
#include <stdlib.h>

#include "engine/layout.h"
#include "proto/proto_internal.h"

bool ddtx_match_rx(const struct ddtx_rx *rx, bool tagged, uint64_t tag, fi_addr_t from)
{
	if (rx->src != FI_ADDR_UNSPEC && rx->src != from)
		return false;
	return !tagged || ((tag ^ rx->tag) & ~rx->ignore) == 0;
}

struct ddtx_unexp *ddtx_unexp_find(struct ddtx_proto_ep *pep, bool tagged, fi_addr_t src,
				   uint64_t tag, uint64_t ignore, void *claim_context)
{
	struct ddtx_list *q = tagged ? &pep->unexp_tag : &pep->unexp_msg;
	struct ddtx_list_entry *it, *tmp;
	ddtx_list_foreach_safe(q, it, tmp)
	{
		struct ddtx_unexp *u = ddtx_container_of(it, struct ddtx_unexp, entry);
		if (claim_context) {
			if (u->claim_context == claim_context)
				return u;
			continue;
		}
		if (u->claim_context)
			continue; /* reserved by FI_CLAIM for a later receive */
		if (src != FI_ADDR_UNSPEC && ddtx_addr_of(pep, u->peer) != src)
			continue;
		if (tagged && ((u->tag ^ tag) & ~ignore))
			continue;
		return u;
	}
	return NULL;
}

struct ddtx_rx *ddtx_posted_find(struct ddtx_proto_ep *pep, bool tagged, uint64_t tag,
				 fi_addr_t from)
{
	struct ddtx_list *q = tagged ? &pep->posted_tag : &pep->posted_msg;
	struct ddtx_list_entry *it, *tmp;
	ddtx_list_foreach_safe(q, it, tmp)
	{
		struct ddtx_rx *rx = ddtx_container_of(it, struct ddtx_rx, entry);
		if (ddtx_match_rx(rx, tagged, tag, from))
			return rx;
	}
	return NULL;
}


struct ddtx_unexp *ddtx_unexp_new(struct ddtx_proto_ep *pep, ddtx_peer_t src, uint8_t type,
				  uint16_t hflags, uint64_t tag, uint64_t data, size_t len,
				  size_t payload_len)
{
	struct ddtx_unexp *u = malloc(sizeof(*u) + payload_len);
	if (!u) {
		DDTX_WARN(FI_LOG_EP_DATA, "out of memory: dropping unexpected message\n");
		return NULL;
	}
	u->peer = src;
	u->type = type;
	u->hdr_flags = hflags;
	u->tag = tag;
	u->data = data;
	u->len = len;
	u->claim_context = NULL;
	u->inlined = 0;
	u->stream = NULL;
	u->charged = 0;
	ddtx_list_push_back((hflags & DDTX_HDR_TAGGED) ? &pep->unexp_tag : &pep->unexp_msg,
			    &u->entry);
	return u;
}

void ddtx_unexp_free(struct ddtx_unexp *u)
{
	free(u->stream);
	free(u);
}

/* FI_PEEK (optionally with FI_CLAIM or FI_DISCARD), and FI_CLAIM of a peeked message. */
ssize_t ddtx_proto_peek(struct ddtx_proto_ep *pep, fi_addr_t src, uint64_t tag, uint64_t ignore,
			void *context, uint64_t flags, const struct iovec *iov, void **desc,
			size_t count)
{
	if ((flags & FI_CLAIM) && !context)
		return -FI_EINVAL;
	ddtx_proto_domain_progress(pep->pd); /* keys of unmapped MRs revoked before anything moves */
	ssize_t ret = 0;
	if (!pep->enabled) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	if (!pep->attr.directed_recv)
		src = FI_ADDR_UNSPEC;
	if (flags & FI_PEEK)
		ddtx_proto_progress(pep); /* look at what has arrived by now */
	struct ddtx_unexp *u = ddtx_unexp_find(pep, true, src, tag, ignore,
					       (flags & FI_PEEK) ? NULL : context);
	fi_addr_t from = u ? ddtx_addr_of(pep, u->peer) : FI_ADDR_NOTAVAIL;
	uint64_t cflags = FI_RECV | FI_TAGGED;
	if (!u) {
		const struct ddtx_proto_completion c = {.context = context, .flags = cflags,
							.tag = tag, .err = FI_ENOMSG,
							.src_addr = FI_ADDR_NOTAVAIL};
		ddtx_report(pep, DDTX_PROTO_RX, &c);
		goto out;
	}
	if (u->hdr_flags & DDTX_HDR_CQ_DATA)
		cflags |= FI_REMOTE_CQ_DATA;
	if ((flags & FI_PEEK) && !(flags & FI_DISCARD)) {
		if (flags & FI_CLAIM)
			u->claim_context = context;
		const struct ddtx_proto_completion c = {.context = context, .flags = cflags,
							.len = u->len, .data = u->data,
							.tag = u->tag, .src_addr = from};
		ddtx_report(pep, DDTX_PROTO_RX, &c);
		goto out;
	}
	if (flags & FI_DISCARD) {
		ddtx_list_remove(&u->entry);
		if (u->type == DDTX_MSG_RTS) {
			/* Let the sender complete: accept nothing. */
			struct ddtx_rx tmp = {.tx_id = u->rts.tx_id, .peer = u->peer,
					      .scheme = FI_DDTX_SCHEME_PACK};
			ddtx_rndv_send_cts(pep, &tmp, 0, NULL, 0, DDTX_HDR_LAST);
		} else if (u->hdr_flags & DDTX_HDR_ACK_REQ) {
			ddtx_ack_owe(pep, u->peer, u->ack_tx_id, true);
		}
		const struct ddtx_proto_completion c = {.context = context, .flags = cflags,
							.data = u->data, .tag = u->tag,
							.src_addr = from};
		ddtx_report(pep, DDTX_PROTO_RX, &c);
		ddtx_credit_unhold(pep, u);
		ddtx_unexp_free(u);
		goto out;
	}
	/* FI_CLAIM: receive the claimed message into iov, checked as any receive's, or into the
	 * blocks of a layout handle passed as desc[0] (MPICH's MPI_Mrecv of a datatype it hands
	 * ddtx as a handle: without this the bytes landed contiguously from the base). */
	size_t total = 0;
	struct ddtx_iov_vec vec;
	if ((ret = ddtx_iov_scan(iov, count, pep->attr.rx_iov_limit, &total, &vec))) {
		DDTX_WARN(FI_LOG_EP_DATA, "claim: invalid iov list (count %zu)\n", count);
		goto out;
	}
	struct fi_ddtx_layout *handle = ddtx_handle_of(desc, iov, count);
	struct ddtx_layout *hl = NULL;
	if (handle && (ret = ddtx_handle_use(handle, iov, &hl, &iov, &count)))
		goto out;
	struct ddtx_rx *rx = hl ? ddtx_rx_new_layout(pep, hl) : ddtx_rx_new(pep, iov, count, NULL);
	if (!rx) {
		if (hl)
			ddtx_layout_put(pep->pd->layouts, hl);
		ret = -FI_ENOMEM;
		goto out;
	}
	rx->context = context;
	rx->flags = FI_RECV | FI_TAGGED;
	rx->report = true;
	rx->src = FI_ADDR_UNSPEC;
	ddtx_recv_take_unexp(pep, rx, u);
out:
	return ret;
}

bool ddtx_recv_cancel(struct ddtx_proto_ep *pep, void *context)
{
	struct ddtx_list *queues[] = {&pep->posted_tag, &pep->posted_msg};
	for (size_t q = 0; q < 2; q++) {
		struct ddtx_list_entry *it, *tmp;
		ddtx_list_foreach_safe(queues[q], it, tmp)
		{
			struct ddtx_rx *rx = ddtx_container_of(it, struct ddtx_rx, entry);
			if (rx->context != context)
				continue;
			ddtx_list_remove(&rx->entry);
			uint64_t flags = rx->flags & (FI_MSG | FI_TAGGED | FI_RECV | FI_MULTI_RECV);
			const struct ddtx_proto_completion c = {
				.context = context, .flags = flags, .tag = rx->tag,
				.err = FI_ECANCELED, .src_addr = FI_ADDR_NOTAVAIL};
			ddtx_report(pep, DDTX_PROTO_RX, &c);
			if (rx->multi_children) {
				/* Slices in flight still point at it: free it with the last one. */
				rx->multi_released = true;
			} else {
				ddtx_rx_free(pep, rx);
			}
			return true;
		}
	}
	return false;
}
