/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The multi wire's peer table: multi handles (dense from 0) to (sub-wire, sub-wire handle), and
 * back per sub-wire, so a message a sub-wire delivers from its own handle reaches the protocol
 * under the same handle as sends to that peer use.
 */
#include <stdlib.h>

#include "common/clock.h"

#include "wire/multi/multi.h"

struct ddtx_multi_peer *ddtx_multi_peer_get(struct ddtx_multi_ep *ep, ddtx_peer_t peer)
{
	return peer < ep->npeers ? &ep->peers[peer] : NULL;
}

ddtx_peer_t ddtx_multi_peer_of_sub(struct ddtx_multi_ep *ep, int sub, ddtx_peer_t sp)
{
	if (sp == DDTX_PEER_INVALID)
		return DDTX_PEER_INVALID;
	if (sp < ep->of_sub_len[sub] && ep->of_sub[sub][sp] != DDTX_PEER_INVALID)
		return ep->of_sub[sub][sp];
	if (sp >= ep->of_sub_len[sub]) {
		size_t n = ep->of_sub_len[sub] ? 2 * ep->of_sub_len[sub] : 16;
		while (n <= sp)
			n *= 2;
		ddtx_peer_t *m = realloc(ep->of_sub[sub], n * sizeof(*m));
		if (!m)
			return DDTX_PEER_INVALID;
		for (size_t i = ep->of_sub_len[sub]; i < n; i++)
			m[i] = DDTX_PEER_INVALID;
		ep->of_sub[sub] = m;
		ep->of_sub_len[sub] = n;
	}
	if (ep->npeers == ep->peers_cap) {
		size_t n = ep->peers_cap ? 2 * ep->peers_cap : 16;
		struct ddtx_multi_peer *p = realloc(ep->peers, n * sizeof(*p));
		if (!p)
			return DDTX_PEER_INVALID;
		ep->peers = p;
		ep->peers_cap = n;
	}
	ddtx_peer_t h = (ddtx_peer_t)ep->npeers++;
	ep->peers[h] = (struct ddtx_multi_peer){.sub = (uint8_t)sub, .sub_peer = sp, .addr = NULL,
						.heard_ns = ddtx_coarse_time_ns()};
	ep->of_sub[sub][sp] = h;
	/* Counted here, not at insert: a peer first heard from (it sent before we inserted it)
	 * gets its handle from its message, and an insert then finds it known. */
	ep->dom->stats.sub[sub].peers++;
	return h;
}

void ddtx_multi_peers_fini(struct ddtx_multi_ep *ep)
{
	for (size_t i = 0; i < ep->npeers; i++)
		free(ep->peers[i].addr);
	free(ep->peers);
	for (int s = 0; s < DDTX_MULTI_NSUB; s++)
		free(ep->of_sub[s]);
	ep->peers = NULL;
	ep->npeers = ep->peers_cap = 0;
}
