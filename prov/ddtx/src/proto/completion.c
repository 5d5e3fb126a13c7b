/* Completions, counters and statistics of the data path. */
#include "proto/proto_internal.h"

void ddtx_complete_tx(struct ddtx_ep *ep, void *context, uint64_t flags, bool report,
		      size_t len, enum ddtx_ep_cntr cntr)
{
	if (report && ep->tx_cq)
		ddtx_cq_write(ep->tx_cq, context, flags, 0, NULL, 0, 0, FI_ADDR_NOTAVAIL);
	if (ep->cntrs[cntr])
		ddtx_cntr_inc(ep->cntrs[cntr]);
	(void)len;
}

/* Errors are reported whatever FI_SELECTIVE_COMPLETION says (fi_cq(3)). */
void ddtx_complete_tx_err(struct ddtx_ep *ep, void *context, uint64_t flags, size_t len, int err,
			  enum ddtx_ep_cntr cntr)
{
	if (ep->tx_cq)
		ddtx_cq_write_err(ep->tx_cq, context, flags, len, NULL, 0, 0, 0, err,
				  FI_ADDR_NOTAVAIL);
	if (ep->cntrs[cntr])
		ddtx_cntr_err_inc(ep->cntrs[cntr]);
}

void ddtx_count_scheme(struct ddtx_ep *ep, enum fi_ddtx_scheme scheme, size_t bytes)
{
	struct fi_ddtx_stats *st = &ep->domain->stats;
	st->ops[scheme]++;
	st->bytes[scheme] += bytes;
	st->last_scheme = scheme;
}
