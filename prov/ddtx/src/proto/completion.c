/* SPDX-License-Identifier: BSD-2-Clause */
/* Completions, counters and statistics of the data path, reported through the owner interface. */
#include "proto/proto_internal.h"

void ddtx_report(struct ddtx_proto_ep *pep, enum ddtx_proto_queue q,
		 const struct ddtx_proto_completion *c)
{
	if (!ddtx_list_empty(&pep->stages)) {
		struct ddtx_proto_completion staged = *c;
		if (ddtx_stage_complete(pep, &staged))
			pep->owner_ops->cq_write(pep->owner, q, &staged);
		return;
	}
	pep->owner_ops->cq_write(pep->owner, q, c);
}

void ddtx_count(struct ddtx_proto_ep *pep, enum ddtx_proto_counter cntr, bool error)
{
	pep->owner_ops->cntr_add(pep->owner, cntr, error);
}

void ddtx_complete_tx(struct ddtx_proto_ep *pep, void *context, uint64_t flags, bool report,
		      enum ddtx_proto_counter cntr)
{
	if (report) {
		const struct ddtx_proto_completion c = {.context = context, .flags = flags,
							.src_addr = FI_ADDR_NOTAVAIL};
		ddtx_report(pep, DDTX_PROTO_TX, &c);
	}
	ddtx_count(pep, cntr, false);
}

/* Errors are reported whatever FI_SELECTIVE_COMPLETION says (fi_cq(3)). */
void ddtx_complete_tx_err(struct ddtx_proto_ep *pep, void *context, uint64_t flags, size_t len,
			  int err, enum ddtx_proto_counter cntr)
{
	const struct ddtx_proto_completion c = {.context = context, .flags = flags, .len = len,
						.err = err, .src_addr = FI_ADDR_NOTAVAIL};
	ddtx_report(pep, DDTX_PROTO_TX, &c);
	ddtx_count(pep, cntr, true);
}

void ddtx_count_scheme(struct ddtx_proto_ep *pep, enum fi_ddtx_scheme scheme, size_t bytes)
{
	struct fi_ddtx_stats *st = &pep->pd->stats;
	st->ops[scheme]++;
	st->bytes[scheme] += bytes;
	st->last_scheme = scheme;
}
