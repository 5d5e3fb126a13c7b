/* SPDX-License-Identifier: BSD-2-Clause */
/* The receive object: allocation and release, multi-receive slices, and reporting a receive. */
#include <stdlib.h>
#include <string.h>

#include "engine/layout.h"
#include "proto/proto_internal.h"

static struct ddtx_rx *rx_alloc(struct ddtx_proto_ep *pep)
{
	return ddtx_spares_get(&pep->spare_rx, sizeof(struct ddtx_rx));
}

static void rx_release(struct ddtx_proto_ep *pep, struct ddtx_rx *rx)
{
	ddtx_spares_put(&pep->spare_rx, rx);
}

struct ddtx_rx *ddtx_rx_new(struct ddtx_proto_ep *pep, const struct iovec *iov, size_t count,
			    const size_t *total)
{
	struct ddtx_rx *rx = rx_alloc(pep);
	if (!rx)
		return NULL;
	rx->iov = count <= 1 ? rx->iov_inline : ddtx_iov_take(pep, count, &rx->iov_cap);
	if (!rx->iov) {
		rx_release(pep, rx);
		return NULL;
	}
	if (count)
		memcpy(rx->iov, iov, count * sizeof(*iov));
	rx->count = count;
	rx->capacity = total ? *total : ddtx_iov_total(iov, count);
	ddtx_list_init(&rx->rbatches);
	return rx;
}

struct ddtx_rx *ddtx_rx_new_layout(struct ddtx_proto_ep *pep, struct ddtx_layout *l)
{
	struct ddtx_rx *rx = rx_alloc(pep);
	if (!rx)
		return NULL;
	rx->iov = l->iov;
	rx->iov_borrowed = true;
	rx->count = l->count;
	rx->capacity = l->st.total;
	rx->cached = l;
	ddtx_list_init(&rx->rbatches);
	return rx;
}

void ddtx_rbatch_release(struct ddtx_proto_ep *pep, struct ddtx_rbatch *rb)
{
	for (uint32_t i = 0; i < rb->nmr; i++)
		ddtx_wire_mr_dereg(pep->pd->wire, rb->mr[i]);
	free(rb);
}

void ddtx_rx_free(struct ddtx_proto_ep *pep, struct ddtx_rx *rx)
{
	struct ddtx_layout_cache *lc = pep->pd->layouts;
	struct ddtx_list_entry *it;
	ddtx_choose_try_end(pep, rx);
	if (rx->pull)
		rx->pull->rx = NULL; /* its reads still hold it: the last completion frees it */
	while ((it = ddtx_list_pop_front(&rx->rbatches)))
		ddtx_rbatch_release(pep, ddtx_container_of(it, struct ddtx_rbatch, entry));
	if (rx->ws)
		ddtx_window_set_put(lc, rx->ws);
	if (rx->cached)
		ddtx_layout_put(lc, rx->cached);
	if (rx->id)
		ddtx_optable_remove(&pep->rxs, rx->id);
	if (rx->iov != rx->iov_inline && !rx->iov_borrowed)
		ddtx_iov_give(pep, rx->iov, rx->iov_cap);
	rx_release(pep, rx);
}

/* A multi-receive slice finished: the last one out reports FI_MULTI_RECV for the buffer. */
uint64_t ddtx_rx_multi_flags(struct ddtx_proto_ep *pep, struct ddtx_rx *parent)
{
	if (!parent->multi_released || parent->multi_children)
		return 0;
	ddtx_rx_free(pep, parent);
	return FI_MULTI_RECV;
}

void ddtx_rx_multi_consume(struct ddtx_proto_ep *pep, struct ddtx_rx *parent, size_t len)
{
	parent->multi_used += len;
	if (!parent->multi_released &&
	    parent->capacity - parent->multi_used < pep->attr.min_multi_recv) {
		parent->multi_released = true;
		ddtx_list_remove(&parent->entry);
	}
}

/* Report a received message of `len` bytes offered, `got` delivered into rx. */
void ddtx_rx_report(struct ddtx_proto_ep *pep, const struct ddtx_rx *rx, size_t offered,
		    size_t got, uint64_t tag, uint64_t data, uint16_t hflags, fi_addr_t from,
		    void *buf, uint64_t extra_flags)
{
	uint64_t flags = (rx->flags & (FI_MSG | FI_TAGGED)) | FI_RECV | extra_flags;
	if (hflags & DDTX_HDR_CQ_DATA)
		flags |= FI_REMOTE_CQ_DATA;
	if (!(hflags & DDTX_HDR_CQ_DATA))
		data = 0;
	pep->pd->stats.rx_ops++;
	const struct ddtx_proto_completion c = {
		.context = rx->context, .flags = flags, .len = got, .buf = buf, .data = data,
		.tag = tag, .src_addr = from, .olen = offered > got ? offered - got : 0,
		.err = offered > got ? FI_ETRUNC : 0,
	};
	/* Errors, and the release of a multi-receive buffer, are reported even under selective
	 * completion. */
	if (c.err || rx->report || (flags & FI_MULTI_RECV))
		ddtx_report(pep, DDTX_PROTO_RX, &c);
	ddtx_count(pep, DDTX_CNTR_RECV, c.err != 0);
}

void ddtx_rx_fail(struct ddtx_proto_ep *pep, struct ddtx_rx *rx, int err)
{
	DDTX_INFO(FI_LOG_EP_DATA, "receive %u from peer %u failed: %s\n", rx->id, rx->peer,
		  fi_strerror(err));
	uint64_t flags = (rx->flags & (FI_MSG | FI_TAGGED)) | FI_RECV;
	if (rx->parent) {
		rx->parent->multi_children--;
		flags |= ddtx_rx_multi_flags(pep, rx->parent);
	}
	const struct ddtx_proto_completion c = {.context = rx->context, .flags = flags,
						.tag = rx->msg_tag, .err = err, .src_addr = rx->from};
	ddtx_report(pep, DDTX_PROTO_RX, &c);
	ddtx_count(pep, DDTX_CNTR_RECV, true);
	ddtx_list_remove(&rx->entry);
	ddtx_rx_free(pep, rx);
}
