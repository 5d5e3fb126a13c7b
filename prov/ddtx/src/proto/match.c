/* Software tag matching: posted receives against arrivals, receives against unexpected ones. */
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
